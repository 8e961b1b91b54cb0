//! Builds the machine presets `sim/presets/machines/*.json` (embedded by `sim::presets`) from the
//! shared bare-metal NCCL measurements and published interconnect and NIC figures (two-box
//! presets: one-box presets joined by a modelled network, `machine_presets/multinode.rs`). Every figure used is
//! cited in the preset's `provenance.source`, every modelling assumption in `provenance.notes`.
//!
//! Usage: `cargo run -p sim --example build_machine_presets [-- NCCL_JSON [OUT_DIR]]`
//! (defaults: `data/observations/nccl-rtx-pro-6000-baremetal.json`, `sim/presets/machines`).
//! Exit 2 on bad input.

#[path = "machine_presets/consumer.rs"]
mod consumer;
#[path = "machine_presets/maxq.rs"]
mod maxq;
#[path = "machine_presets/multinode.rs"]
mod multinode;
#[path = "machine_presets/nvlink.rs"]
mod nvlink;
#[path = "machine_presets/pcie.rs"]
mod pcie;
#[path = "machine_presets/pcie_switch.rs"]
mod pcie_switch;
#[path = "machine_presets/pcie_tuned.rs"]
mod pcie_tuned;

use anyhow::Context;
use models::MachineProfile;
use models::profile::{
    CollectiveCurve, CollectiveOp, CollectivePoint, CollectiveStatus, DeviceInfo, LinkClass,
    PairLink, Provenance, Stat,
};
use std::path::PathBuf;

/// Message sizes of every preset curve: nccl-tests' `-b 512 -e 512M -f 2` (the shared file's sizes).
pub fn sizes_bytes() -> Vec<u64> {
    (9..=29).map(|p| 1u64 << p).collect()
}

/// A collective point from a time, with algbw and busbw by the nccl-tests formulas.
pub fn point(op: CollectiveOp, n: u32, bytes: u64, time_us: f64) -> CollectivePoint {
    let algbw = bytes as f64 / (time_us * 1e-6) / 1e9;
    CollectivePoint {
        bytes,
        time_us: Stat::exact(time_us),
        algbw_gb_per_s: algbw,
        busbw_gb_per_s: algbw * op.busbw_factor(n),
        status: CollectiveStatus::Ok,
    }
}

/// A curve over `devices` with times from `time_us(bytes)`.
pub fn curve(
    op: CollectiveOp,
    devices: Vec<u32>,
    link_class: LinkClass,
    time_us: impl Fn(u64) -> f64,
) -> CollectiveCurve {
    let n = devices.len() as u32;
    CollectiveCurve {
        op,
        devices,
        link_class: Some(link_class),
        nccl_env: Default::default(),
        points: sizes_bytes()
            .into_iter()
            .map(|b| point(op, n, b, round3(time_us(b))))
            .collect(),
    }
}

/// Rounds to 3 decimals (µs: nanosecond resolution), keeping the JSON readable.
pub fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// `count` GPUs of one model, the first half on NUMA node 0 and the rest on node 1.
pub fn devices(
    count: u32,
    name: &str,
    memory_mib: u64,
    pcie: Option<(u32, u32)>,
    cc: [u32; 2],
) -> Vec<DeviceInfo> {
    (0..count)
        .map(|i| DeviceInfo {
            index: i,
            name: name.to_string(),
            numa_node: Some(if i < count / 2 { 0 } else { 1 }),
            pcie_gen_current: pcie.map(|p| p.0),
            pcie_gen_max: pcie.map(|p| p.0),
            pcie_width_current: pcie.map(|p| p.1),
            pcie_width_max: pcie.map(|p| p.1),
            memory_bytes: memory_mib * 1024 * 1024,
            compute_capability: Some(cc),
            ..Default::default()
        })
        .collect()
}

/// Every ordered pair of `count` GPUs, built by `link(src, dst)`.
pub fn all_pairs(count: u32, link: impl Fn(u32, u32) -> PairLink) -> Vec<PairLink> {
    let mut v = Vec::new();
    for s in 0..count {
        for d in 0..count {
            if s != d {
                v.push(link(s, d));
            }
        }
    }
    v
}

/// A preset profile skeleton.
pub fn profile(gpu_preset: &str, source: &[&str], notes: &[String]) -> MachineProfile {
    MachineProfile {
        gpu_preset: Some(gpu_preset.into()),
        ..MachineProfile::empty(Provenance {
            tool: "preset".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            created_utc: "2026-11-29T00:00:00Z".into(),
            source: Some(source.join(" | ")),
            notes: notes.to_vec(),
            ..Default::default()
        })
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

fn run() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let nccl = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../data/observations/nccl-rtx-pro-6000-baremetal.json"
        ))
    });
    let out = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/machines")));
    let measured = pcie::read_baremetal(&nccl)
        .with_context(|| format!("reading bare-metal NCCL measurements {}", nccl.display()))?;
    let baremetal = pcie::baremetal(&measured);
    let h200 = nvlink::preset(&nvlink::H200);
    let mut presets = vec![
        (
            "rtx-pro-6000-x8x2-400gbe".to_string(),
            multinode::two_boxes(&baremetal, &multinode::ROCE_400GBE_X1),
        ),
        (
            "h200-x8x2-ib-ndr".to_string(),
            multinode::two_boxes(&h200, &multinode::IB_NDR_X8),
        ),
        ("rtx-pro-6000-maxq-x8".to_string(), maxq::preset(&baremetal)),
        ("rtx-pro-6000-x8-baremetal".to_string(), baremetal),
        (
            "rtx-pro-6000-x8-baremetal-nccl-tuned".to_string(),
            pcie_tuned::preset(&measured, pcie_tuned::Protocols::NcclChoice),
        ),
        (
            "rtx-pro-6000-x8-baremetal-nccl-ll128".to_string(),
            pcie_tuned::preset(&measured, pcie_tuned::Protocols::Ll128),
        ),
        (
            "rtx-pro-6000-x8-baremetal-nccl-simple".to_string(),
            pcie_tuned::preset(&measured, pcie_tuned::Protocols::Simple),
        ),
        (
            "rtx-pro-6000-x8-vm-hostbounce".to_string(),
            pcie::vm_hostbounce(&measured),
        ),
        (
            "rtx-pro-6000-x16-pcie-switch".to_string(),
            pcie_switch::x16_switches(&measured)?,
        ),
        ("h100-x8".to_string(), nvlink::preset(&nvlink::H100)),
        ("h200-x8".to_string(), h200),
        ("h20-x8".to_string(), nvlink::preset(&nvlink::H20)),
        ("b200-x8".to_string(), nvlink::preset(&nvlink::B200)),
    ];
    for card in &consumer::CARDS {
        for (suffix, p2p) in [("", false), ("-p2p", true)] {
            presets.push((
                format!("{}-x8-pcie{suffix}", card.key),
                consumer::preset(card, p2p),
            ));
        }
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    for (name, p) in presets {
        let path = out.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&p)? + "\n";
        models::io::write_atomic(&path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        println!(
            "wrote {} ({} collective curves)",
            path.display(),
            p.collectives.len()
        );
    }
    Ok(())
}
