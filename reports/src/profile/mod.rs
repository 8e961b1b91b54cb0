//! Charts of a machine profile (`models::profile::MachineProfile`): GPU-pair heat maps and NCCL
//! bus-bandwidth curves, plus the headline numbers a summary table shows.
//!
//! This lives in `reports` (which depends on `models` for the profile schema) so that both `probe`
//! (charts of the run it just measured) and `sim` (the machine part of `sim report`) draw profiles
//! the same way without either depending on the other: data still flows probe → profile → sim,
//! and both hand plain profiles to `reports`. Profiles are machine data, not LLM knowledge, so the
//! chart vocabulary stays model-agnostic.

pub mod collectives;
pub mod pairs;
pub mod set;

pub use collectives::collective_charts;
pub use pairs::pair_charts;
pub use set::{
    ChartSet, NamedChart, RenderedChart, SkippedChart, add_figures, file_stem, write_dir,
};

use models::profile::{
    CollectiveOp, CollectiveStatus, Direction, HostDirection, HostMemory, LaunchKernel, LaunchKind,
    MachineProfile, TransferMode,
};

use crate::html::Page;

/// The charts of one profile: pair heat maps, then one bus-bandwidth chart per collective.
pub fn profile_charts(label: &str, profile: &MachineProfile) -> ChartSet {
    let mut set = ChartSet::default();
    pair_charts(label, profile, &mut set);
    collective_charts(&[(label, profile)], &mut set);
    set
}

/// A headline figure of a profile, e.g. ("all_reduce busbw, 8 GPUs, 1 GiB", "38.2 GB/s").
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// What was measured.
    pub what: String,
    /// The figure with its unit.
    pub value: String,
    /// Kind of figure, for ordering rows across profiles: pair copies by mode (0–2), host copy
    /// (3), collectives (4–5), launch floors (6–7).
    pub order: u8,
}

/// The numbers a reader checks first: median pair bandwidth per transfer mode (unidirectional,
/// largest size), pinned host→device bandwidth of one GPU, and each collective's bus bandwidth
/// over the largest group at its largest successful size, and the first GPU's empty-kernel
/// launch floors (CUDA-graph node, eager launch). Missing measurements are left out.
pub fn headlines(profile: &MachineProfile) -> Vec<Headline> {
    let mut out = Vec::new();
    for (order, mode) in [
        TransferMode::CopyEngine,
        TransferMode::SmKernel,
        TransferMode::HostStaged,
    ]
    .into_iter()
    .enumerate()
    {
        let v: Vec<f64> = profile
            .links
            .iter()
            .filter(|l| l.src != l.dst)
            .flat_map(|l| &l.curves)
            .filter(|c| c.mode == mode && c.direction == Direction::Unidirectional)
            .filter_map(|c| c.points.iter().max_by_key(|p| p.bytes))
            .map(|p| p.gb_per_s.median)
            .collect();
        let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if let Some(m) = models::stats::median(&finite) {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let value = if hi - lo < 0.05 * m.abs() {
                format!("{m:.1} GB/s")
            } else {
                format!("{lo:.1}–{hi:.1} GB/s (median {m:.1})")
            };
            out.push(Headline {
                what: format!("GPU↔GPU copy, {}, all pairs", pairs::mode_name(mode)),
                value,
                order: order as u8,
            });
        }
    }
    let h2d = profile.host_device.iter().find(|h| {
        h.devices.len() == 1
            && h.memory == HostMemory::Pinned
            && h.direction == HostDirection::HostToDevice
    });
    if let Some(h) = h2d {
        out.push(Headline {
            what: format!("host→GPU{} copy, pinned memory", h.devices[0]),
            value: format!("{:.1} GB/s", h.gb_per_s.median),
            order: 3,
        });
    }
    for (order, op) in [(4, CollectiveOp::AllReduce), (5, CollectiveOp::AllToAll)] {
        let best = profile
            .collectives
            .iter()
            .filter(|c| c.op == op && c.devices.len() >= 2 && c.nccl_env.is_empty())
            .max_by_key(|c| c.devices.len());
        let Some(c) = best else { continue };
        let Some(p) = c
            .points
            .iter()
            .filter(|p| p.status == CollectiveStatus::Ok)
            .max_by_key(|p| p.bytes)
        else {
            continue;
        };
        out.push(Headline {
            what: format!(
                "{} busbw, {} GPUs, {}",
                collectives::op_name(op),
                c.devices.len(),
                crate::axis::binary_size_label(p.bytes)
            ),
            value: format!("{:.1} GB/s", p.busbw_gb_per_s),
            order,
        });
    }
    let first_gpu = profile.launch.first().map(|m| m.device);
    for (order, kind, what) in [
        (6, LaunchKind::GraphNode, "CUDA-graph node"),
        (7, LaunchKind::EagerLaunch, "eager launch, host time"),
    ] {
        let Some(m) = profile.launch.iter().find(|m| {
            Some(m.device) == first_gpu && m.kind == kind && m.kernel == LaunchKernel::Empty
        }) else {
            continue;
        };
        out.push(Headline {
            what: format!("empty kernel, {what}, GPU{}", m.device),
            value: format!("{:.2} µs", m.per_kernel_us.median),
            order,
        });
    }
    out
}

/// A one-line description of the profile's machine: GPU count and name, host, hypervisor.
pub fn machine_line(profile: &MachineProfile) -> String {
    let gpu = profile
        .devices
        .first()
        .map_or("no GPU", |d| d.name.as_str());
    let host = profile
        .provenance
        .hostname
        .as_deref()
        .map_or(String::new(), |h| format!(" on host {h}"));
    let virt = profile
        .provenance
        .hypervisor
        .as_deref()
        .map_or(" (bare metal or unknown)".to_owned(), |h| {
            format!(" (VM, hypervisor {h})")
        });
    format!(
        "{}× {gpu}{host}{virt}; measured by {} {}",
        profile.devices.len(),
        profile.provenance.tool,
        profile.provenance.created_utc
    )
}

/// The page `probe charts` writes: machine line, headline table, then the charts.
pub fn profile_page(
    label: &str,
    profile: &MachineProfile,
    rendered: &[RenderedChart],
    skipped: &[SkippedChart],
) -> Page {
    let rows: Vec<Vec<String>> = headlines(profile)
        .into_iter()
        .map(|h| vec![h.what, h.value])
        .collect();
    let mut page = Page::new(format!("Machine profile {label}")).paragraph(machine_line(profile));
    if !rows.is_empty() {
        page = page.table(
            "Headline measurements",
            vec!["measurement".to_owned(), "value".to_owned()],
            rows,
        );
    }
    add_figures(page, rendered, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::profile::{DeviceInfo, Provenance};

    fn bare_profile(gpus: u32) -> MachineProfile {
        MachineProfile {
            devices: (0..gpus)
                .map(|i| DeviceInfo {
                    index: i,
                    name: "GPU".into(),
                    memory_bytes: 1 << 30,
                    ..DeviceInfo::default()
                })
                .collect(),
            ..MachineProfile::empty(Provenance {
                tool: "test".into(),
                ..Provenance::default()
            })
        }
    }

    #[test]
    fn missing_data_is_skipped_with_a_reason() {
        let set = profile_charts("one", &bare_profile(1));
        assert!(set.charts.is_empty());
        // Pairs (one GPU) and all five collectives are skipped, each with why.
        assert_eq!(set.skipped.len(), 6, "{:?}", set.skipped);
        assert!(set.skipped[0].reason.contains("1 GPU"));
        let set = profile_charts("eight", &bare_profile(8));
        assert!(set.skipped[0].reason.contains("no GPU-pair measurements"));
        assert!(headlines(&bare_profile(8)).is_empty());
    }

    #[test]
    fn launch_floors_headline_the_first_gpus_empty_kernel() {
        use models::profile::{LaunchMeasurement, Stat};
        let mut p = bare_profile(1);
        for (kernel, kind, us) in [
            (LaunchKernel::TinyGemm, LaunchKind::GraphNode, 2.37),
            (LaunchKernel::Empty, LaunchKind::GraphNode, 0.52),
            (LaunchKernel::Empty, LaunchKind::EagerLaunch, 3.65),
        ] {
            p.launch.push(LaunchMeasurement {
                device: 0,
                kind,
                kernel,
                shape: None,
                chain_length: 512,
                per_kernel_us: Stat::exact(us),
                gpu_per_kernel_us: None,
            });
        }
        let h = headlines(&p);
        let values: Vec<(&str, u8)> = h.iter().map(|h| (h.value.as_str(), h.order)).collect();
        assert_eq!(values, vec![("0.52 µs", 6), ("3.65 µs", 7)]);
        assert!(h[0].what.contains("CUDA-graph node"), "{:?}", h[0]);
    }
}
