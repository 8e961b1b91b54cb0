//! Which machine preset a record's hardware block describes: the GPU family, how many of them on
//! one host, virtualization and P2P, and the NCCL tuning its environment states.

use super::nccl::NcclTuning;
use super::unexpressible::{Unexpressible, UnexpressibleKind, stated};
use super::{Hardware, Record, lower};

/// The machine preset of a record's hardware block, with what was assumed.
pub(super) fn machine_preset(
    r: &Record,
    assumptions: &mut Vec<String>,
) -> Result<String, Unexpressible> {
    let hw = &r.hardware;
    if let Some(m) = &hw.machine {
        return Ok(m.clone());
    }
    let ic = lower(&hw.interconnect);
    if ic.contains("multi-node") || ic.contains("nodes over") {
        return Err(Unexpressible::new(
            UnexpressibleKind::MultiNode,
            format!(
                "servers over several nodes ({})",
                hw.interconnect.as_deref().unwrap_or("")
            ),
        ));
    }
    let family = gpu_family(hw)?;
    if family == MAXQ_X8 && (lower(&hw.p2p) == "disabled" || NcclTuning::p2p_disabled(r)) {
        return Err(Unexpressible::new(
            UnexpressibleKind::UnknownMachine,
            format!(
                "{} with P2P off: the Max-Q preset has P2P on; set hardware.machine to a probe profile of that box",
                hw.gpu.as_deref().unwrap_or("?")
            ),
        ));
    }
    let count = stated(&r.id, "hardware.count", &hw.count)?;
    let on_bare_metal_with_p2p = hw.virtualized != Some(true)
        && lower(&hw.p2p) != "disabled"
        && !NcclTuning::p2p_disabled(r);
    if family == "rtx-pro-6000-x8" && on_bare_metal_with_p2p {
        if count.is_some_and(|n| (9..=16).contains(&n)) {
            return Ok(sixteen_gpu_box(r, count.unwrap_or(16), assumptions));
        }
        // a server on part of a 16-GPU host, counted by its own GPUs: the host is the 16-GPU
        // box, not the dual-socket 8-GPU one the count alone would pick
        if count.is_some_and(|n| n <= 8) && names_a_sixteen_gpu_host(hw) {
            assumptions.push(format!(
                "{}× of a 16-GPU host (the record's words: {}): the server on the host's first GPUs",
                count.unwrap_or(8),
                hw.interconnect.as_deref().unwrap_or("")
            ));
            return Ok(sixteen_gpu_box(r, 16, assumptions));
        }
    }
    match count {
        Some(8) => {}
        Some(n @ 1..8) => assumptions.push(format!(
            "{n}× {}: the first {n} GPUs of the 8-GPU preset (where the server starts on such a box; one socket's for 4 on the rtx6kpro wiki's dual-socket host)",
            hw.gpu.as_deref().unwrap_or("?")
        )),
        n => {
            return Err(Unexpressible::new(
                UnexpressibleKind::UnknownMachine,
                format!(
                    "{}× {}: the machine presets have 8 GPUs (16 for RTX PRO 6000 on bare metal; a box of fewer runs on part of one); set hardware.machine to a probe profile of that box",
                    n.map_or("?".into(), |n| n.to_string()),
                    hw.gpu.as_deref().unwrap_or("?")
                ),
            ));
        }
    }
    if GEFORCE_X8.contains(&family) {
        return Ok(geforce_box(r, family, assumptions));
    }
    if family != "rtx-pro-6000-x8" {
        return Ok(family.to_string());
    }
    Ok(rtx_box(r, assumptions))
}

/// The rtx6kpro box in the state the record states: P2P off (bare metal or a VM), a VM with P2P
/// passed through, or bare metal with NCCL as the record tuned it.
fn rtx_box(r: &Record, assumptions: &mut Vec<String>) -> String {
    let hw = &r.hardware;
    let p2p = lower(&hw.p2p);
    if p2p == "disabled" || NcclTuning::p2p_disabled(r) {
        let (preset, how) = if hw.virtualized == Some(true) {
            (
                "rtx-pro-6000-x8-vm-hostbounce",
                "P2P off in a VM: the VM preset (host-staged collectives)",
            )
        } else {
            (
                "rtx-pro-6000-x8-baremetal-p2p-off",
                "P2P off: NCCL's SHM ring over the host path",
            )
        };
        assumptions.push(format!(
            "{how}, `{preset}` (record: p2p {}{})",
            hw.p2p.as_deref().unwrap_or("not stated"),
            if NcclTuning::p2p_disabled(r) {
                ", NCCL_P2P_DISABLE set"
            } else {
                ""
            }
        ));
        return preset.into();
    }
    match hw.virtualized {
        Some(true) if p2p == "enabled" => {
            assumptions.push(
                "a VM with P2P enabled (the hypervisor passes peer access through): P2P real, costed as bare metal (`rtx-pro-6000-x8-baremetal`)".into(),
            );
            "rtx-pro-6000-x8-baremetal".into()
        }
        Some(true) => "rtx-pro-6000-x8-vm-hostbounce".into(),
        virt => {
            if virt.is_none() || p2p != "enabled" {
                assumptions.push(format!(
                    "bare metal with P2P assumed (record: p2p {}, virtualized {})",
                    hw.p2p.as_deref().unwrap_or("not stated"),
                    virt.map_or("unknown".to_string(), |v| v.to_string())
                ));
            }
            let (preset, why) = match NcclTuning::of(r) {
                NcclTuning::Default => return "rtx-pro-6000-x8-baremetal".into(),
                NcclTuning::Tuned(why) => ("rtx-pro-6000-x8-baremetal-nccl-tuned", why),
                NcclTuning::Ll128(why) => ("rtx-pro-6000-x8-baremetal-nccl-ll128", why),
                NcclTuning::Simple(why) => ("rtx-pro-6000-x8-baremetal-nccl-simple", why),
            };
            assumptions.push(format!(
                "{why}: NCCL tuned as on the rtx6kpro wiki's dual-Turin box (its published \
                 all-reduce curves, `{preset}`)"
            ));
            preset.into()
        }
    }
}

/// Whether a record's interconnect or host words name a host of 16 GPUs ("a 16-GPU RTX PRO 6000
/// host", "the wiki's 'local 16x RTX PRO 6000 Blackwell host'", "GPUs 0-7 and 8-15"), not a
/// range of box sizes ("8-16x RTX PRO 6000": a `16x` after a dash or a digit is the top of a
/// range).
fn names_a_sixteen_gpu_host(hw: &Hardware) -> bool {
    let text = format!("{} {}", lower(&hw.interconnect), lower(&hw.host));
    let sixteen_of = |word: &str| {
        text.match_indices(word).any(|(i, _)| {
            !text[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c == '-' || c.is_ascii_digit())
        })
    };
    ["16-gpu", "16 gpus", "16x rtx", "16× rtx", "16 x rtx"]
        .iter()
        .any(|w| sixteen_of(w))
        || text.contains("gpus 8-15")
        || text.contains("and 8-15")
}

/// The GeForce boxes (eight cards on one socket's PCIe root ports), named by their stock-driver
/// preset (no peer access); `…-p2p` is the same box with the P2P-patched open kernel module.
const GEFORCE_X8: [&str; 3] = ["rtx-3090-x8-pcie", "rtx-4090-x8-pcie", "rtx-5090-x8-pcie"];

/// A GeForce box in the P2P state the record states: peer access only where the record says P2P
/// is enabled (the stock driver gives GeForce cards none over PCIe; the patched open kernel
/// module does), never where NCCL's P2P is turned off.
fn geforce_box(r: &Record, family: &str, assumptions: &mut Vec<String>) -> String {
    let hw = &r.hardware;
    let p2p = lower(&hw.p2p);
    if p2p == "enabled" && !NcclTuning::p2p_disabled(r) {
        assumptions.push(format!(
            "P2P enabled as the record states (the P2P-patched open kernel module): `{family}-p2p`"
        ));
        return format!("{family}-p2p");
    }
    if p2p != "disabled" {
        assumptions.push(format!(
            "P2P {}: the stock driver gives GeForce cards no peer access over PCIe, NCCL's SHM \
             ring through host memory (`{family}`; a record of the patched driver says p2p enabled)",
            hw.p2p.as_deref().unwrap_or("not stated")
        ));
    }
    family.into()
}

/// The 8-GPU box of 300 W RTX PRO 6000 Max-Q cards, bare metal with P2P.
const MAXQ_X8: &str = "rtx-pro-6000-maxq-x8";

/// The 8-GPU preset family of the record's GPU: the Max-Q edition by its word whichever way the
/// name is spelled ("RTX 6000 Pro Max-Q", "RTX PRO 6000 Blackwell Max-Q Workstation Edition").
fn gpu_family(hw: &Hardware) -> Result<&'static str, Unexpressible> {
    let gpu = lower(&hw.gpu);
    let rtx_6000 = gpu.contains("rtx") && gpu.contains("6000") && gpu.contains("pro");
    Ok(
        if rtx_6000 && (gpu.contains("max-q") || gpu.contains("max q")) {
            MAXQ_X8
        } else if gpu.contains("rtx pro 6000") {
            "rtx-pro-6000-x8"
        } else if let Some(family) = geforce_family(&gpu) {
            family
        } else if gpu.contains("b200") {
            "b200-x8"
        } else if gpu.contains("h200") {
            "h200-x8"
        } else if gpu.contains("h100") {
            "h100-x8"
        } else if gpu
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "h20")
        {
            // by word: "h20" is a prefix of "h200", matched above
            "h20-x8"
        } else {
            return Err(Unexpressible::new(
                UnexpressibleKind::UnknownMachine,
                format!(
                    "no machine preset for GPU `{}`; set hardware.machine to a probe profile",
                    hw.gpu.as_deref().unwrap_or("?")
                ),
            ));
        },
    )
}

/// The GeForce box of a card named by its number as a word ("NVIDIA GeForce RTX 4090", "8x
/// 3090"), not its Ti, D or laptop variants (other memory, clocks or bandwidth).
fn geforce_family(gpu: &str) -> Option<&'static str> {
    let words: Vec<&str> = gpu
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words
        .iter()
        .any(|w| matches!(*w, "ti" | "d" | "laptop" | "mobile"))
    {
        return None;
    }
    GEFORCE_X8
        .iter()
        .zip(["3090", "4090", "5090"])
        .find(|(_, n)| {
            words
                .iter()
                .any(|w| w == n || *w == format!("{n}x") || w.ends_with(&format!("x{n}")))
        })
        .map(|(f, _)| *f)
}

/// The 16-GPU RTX PRO 6000 box the community published (four PCIe switches of four GPUs,
/// `rtx-pro-6000-x16-pcie-switch`) for a record of 9–16 such GPUs on one host, bare metal; a
/// server of fewer than 16 runs on its first GPUs, as on the 8-GPU box.
fn sixteen_gpu_box(r: &Record, n: u32, assumptions: &mut Vec<String>) -> String {
    let gpu = r.hardware.gpu.as_deref().unwrap_or("?");
    let stated = lower(&r.hardware.p2p) == "enabled" && r.hardware.virtualized == Some(false);
    assumptions.push(format!(
        "{n}× {gpu} on one host: the rtx6kpro wiki's published 16-GPU box (four PCIe Gen5 switches of four GPUs, `rtx-pro-6000-x16-pcie-switch`{}); bare metal with P2P {} (record: p2p {}, virtualized {})",
        if n < 16 { ", its first GPUs" } else { "" },
        if stated { "real" } else { "assumed" },
        r.hardware.p2p.as_deref().unwrap_or("not stated"),
        r.hardware
            .virtualized
            .map_or("unknown".to_string(), |v| v.to_string())
    ));
    match NcclTuning::graph_file(r) {
        Some(file) => {
            assumptions.push(format!(
                "NCCL_GRAPH_FILE={file}: the rtx6kpro 8-rank graph (2 rings at 24 GB/s, \
                 PHB/PIX) on GPUs 0-7, the rings NCCL's own search finds on this one-socket box: \
                 its curves as measured without a file on two of the same switches (`{}`)",
                crate::presets::NCCL_GRAPH_VARIANT
            ));
            crate::presets::NCCL_GRAPH_VARIANT.into()
        }
        None => "rtx-pro-6000-x16-pcie-switch".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hardware(interconnect: &str, host: &str) -> Hardware {
        Hardware {
            interconnect: Some(interconnect.into()),
            host: Some(host.into()),
            ..Hardware::default()
        }
    }

    /// A 16-GPU host is read from the words the rtx6kpro pages use for it; a range of box sizes
    /// and an 8-GPU host are not one.
    #[test]
    fn a_sixteen_gpu_host_is_read_from_its_words_not_from_a_range() {
        for (ic, host) in [
            (
                "PCIe, no NVLink; a 16-GPU RTX PRO 6000 host run as two isolated 8-GPU instances (GPUs 0-7 and 8-15)",
                "",
            ),
            (
                "PCIe, no NVLink: GPUs 0-7 of the wiki's 'local 16x RTX PRO 6000 Blackwell host'",
                "",
            ),
            ("PCIe", "the local 16 GPUs box"),
        ] {
            assert!(
                names_a_sixteen_gpu_host(&hardware(ic, host)),
                "{ic} | {host}"
            );
        }
        for (ic, host) in [
            (
                "single-socket AMD Turin with c-payne PCIe Gen5 switches",
                "'Grimulkan' (page 'Tested systems': AMD Turin single, PCIe switches, 8-16x RTX PRO 6000)",
            ),
            (
                "PCIe, no NVLink: the wiki's 'local 8-GPU RTX PRO 6000 Blackwell PCIe' host",
                "",
            ),
            ("PCIe Gen5 x16 per GPU, no NVLink", "budgetserver"),
        ] {
            assert!(
                !names_a_sixteen_gpu_host(&hardware(ic, host)),
                "{ic} | {host}"
            );
        }
    }

    fn geforce_record(gpu: &str, count: u32, p2p: &str, env: &str) -> Record {
        serde_json::from_value(serde_json::json!({
            "id": "geforce",
            "hardware": {"gpu": gpu, "count": count, "interconnect": "PCIe Gen4", "p2p": p2p},
            "engine": {"name": "vllm", "flags": format!("{env} vllm serve m --tensor-parallel-size {count}")},
        }))
        .expect("a record")
    }

    /// A GeForce card's record runs on its 8-GPU box in the P2P state it states: peer access
    /// only where it says P2P is enabled (the patched driver) and NCCL's P2P is not turned off;
    /// not stated, the stock driver's none, said in the assumptions. Ti and D cards are other
    /// cards: no preset.
    #[test]
    fn a_geforce_record_runs_on_its_box_in_the_p2p_state_it_states() {
        let preset = |gpu: &str, p2p: &str, env: &str| {
            let mut why = Vec::new();
            machine_preset(&geforce_record(gpu, 4, p2p, env), &mut why).map(|m| (m, why))
        };
        let (m, why) = preset("NVIDIA GeForce RTX 3090", "unknown", "").expect("a 3090 box");
        assert_eq!(m, "rtx-3090-x8-pcie");
        assert!(why.iter().any(|w| w.contains("stock driver")), "{why:?}");
        let (m, _) = preset("NVIDIA GeForce RTX 4090", "enabled", "").expect("a 4090 box");
        assert_eq!(m, "rtx-4090-x8-pcie-p2p");
        let (m, _) = preset("8x RTX 5090", "enabled", "NCCL_P2P_DISABLE=1").expect("a 5090 box");
        assert_eq!(m, "rtx-5090-x8-pcie");
        let (m, _) = preset("RTX4090", "disabled", "").expect("a 4090 box");
        assert_eq!(m, "rtx-4090-x8-pcie");
        for other in ["NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 D"] {
            assert!(preset(other, "enabled", "").is_err(), "{other}");
        }
    }
}
