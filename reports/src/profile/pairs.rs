//! GPU-pair heat maps of a machine profile: P2P bandwidth per transfer mode (GB/s), small-copy
//! latency per mode (µs), the pair classification (p2p / host-bounce / broken) and the
//! `nvidia-smi topo -m` link class. Rows are sources, columns destinations; the diagonal is empty.

use std::collections::BTreeSet;

use models::profile::{Direction, LinkClass, MachineProfile, PairClass, PairLink, TransferMode};

use crate::axis::binary_size_label;
use crate::chart::AnyChart;
use crate::heat_map::{Category, HeatCells, HeatMap};
use crate::profile::set::ChartSet;
use crate::style::Rgb;

/// Adds the pair heat maps of `profile` (named `label` in titles) to `set`, or says why not.
pub fn pair_charts(label: &str, profile: &MachineProfile, set: &mut ChartSet) {
    let gpus: Vec<u32> = profile.devices.iter().map(|d| d.index).collect();
    let pairs: Vec<&PairLink> = profile.links.iter().filter(|l| l.src != l.dst).collect();
    if gpus.len() < 2 || pairs.is_empty() {
        let why = if gpus.len() < 2 {
            format!(
                "the profile has {} GPU(s); pairs need at least 2",
                gpus.len()
            )
        } else {
            "the profile has no GPU-pair measurements".to_owned()
        };
        set.skip(format!("GPU-pair heat maps ({label})"), why);
        return;
    }
    bandwidth_maps(label, &gpus, &pairs, set);
    latency_maps(label, &gpus, &pairs, set);
    classification_map(label, &gpus, &pairs, set);
    topology_map(label, &gpus, &pairs, set);
}

/// A `gpus × gpus` matrix with `value(link)` in each measured cell.
fn matrix<T: Clone>(
    gpus: &[u32],
    pairs: &[&PairLink],
    mut value: impl FnMut(&PairLink) -> Option<T>,
) -> Vec<Vec<Option<T>>> {
    let pos = |g: u32| gpus.iter().position(|&x| x == g);
    let mut m = vec![vec![None; gpus.len()]; gpus.len()];
    for l in pairs {
        if let (Some(r), Some(c)) = (pos(l.src), pos(l.dst)) {
            m[r][c] = value(l);
        }
    }
    m
}

fn gpu_labels(gpus: &[u32]) -> Vec<String> {
    gpus.iter().map(|g| format!("GPU{g}")).collect()
}

fn heat_map(label: &str, title: String, gpus: &[u32], cells: HeatCells) -> AnyChart {
    AnyChart::HeatMap(HeatMap {
        title: format!("{title} — {label}"),
        x_axis_title: "destination GPU".to_owned(),
        y_axis_title: "source GPU".to_owned(),
        row_labels: gpu_labels(gpus),
        column_labels: gpu_labels(gpus),
        cells,
    })
}

/// Reader-facing name of a transfer mode.
pub fn mode_name(mode: TransferMode) -> &'static str {
    match mode {
        TransferMode::CopyEngine => "copy engine, peer access on",
        TransferMode::SmKernel => "SM kernel, peer access on",
        TransferMode::HostStaged => "staged through host memory, peer access off",
    }
}

fn mode_key(mode: TransferMode) -> &'static str {
    match mode {
        TransferMode::CopyEngine => "copy-engine",
        TransferMode::SmKernel => "sm-kernel",
        TransferMode::HostStaged => "host-staged",
    }
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Unidirectional => "unidirectional",
        Direction::Bidirectional => "bidirectional (sum of both ways)",
    }
}

/// One heat map per (mode, direction) measured: each pair's bandwidth at its largest size.
fn bandwidth_maps(label: &str, gpus: &[u32], pairs: &[&PairLink], set: &mut ChartSet) {
    let mut kinds: Vec<(TransferMode, Direction)> = Vec::new();
    for c in pairs.iter().flat_map(|l| &l.curves) {
        if !c.points.is_empty() && !kinds.contains(&(c.mode, c.direction)) {
            kinds.push((c.mode, c.direction));
        }
    }
    if kinds.is_empty() {
        set.skip(
            format!("P2P bandwidth heat map ({label})"),
            "the profile has no pair bandwidth curves",
        );
        return;
    }
    if !kinds.iter().any(|(m, _)| *m != TransferMode::HostStaged) {
        set.skip(
            format!("P2P bandwidth with peer access on ({label})"),
            "no pair was measured with peer access on (cuDeviceCanAccessPeer false or P2P \
             disabled), so every pair's copies are staged through host memory",
        );
    }
    for (mode, dir) in kinds {
        let mut sizes = BTreeSet::new();
        let values = matrix(gpus, pairs, |p| {
            let c = p
                .curves
                .iter()
                .find(|c| c.mode == mode && c.direction == dir)?;
            let pt = c.points.iter().max_by_key(|pt| pt.bytes)?;
            sizes.insert(pt.bytes);
            Some(pt.gb_per_s.median).filter(|v| v.is_finite())
        });
        let size = match (sizes.first(), sizes.last()) {
            (Some(a), Some(b)) if a == b => format!("at {}", binary_size_label(*a)),
            _ => "at each pair's largest size".to_owned(),
        };
        let title = format!(
            "P2P bandwidth, {}, {} {size}",
            mode_name(mode),
            direction_name(dir)
        );
        let caption = format!(
            "Median copy bandwidth of each GPU pair ({}; GB = 1e9 bytes), {label}.",
            mode_name(mode)
        );
        let stem = format!("{label}-p2p-bandwidth-{}-{}", mode_key(mode), dir_key(dir));
        let chart = heat_map(
            label,
            title,
            gpus,
            HeatCells::Numeric {
                unit: "GB/s".to_owned(),
                values,
            },
        );
        set.push(&stem, caption, chart);
    }
}

fn dir_key(d: Direction) -> &'static str {
    match d {
        Direction::Unidirectional => "uni",
        Direction::Bidirectional => "bidi",
    }
}

/// One heat map per latency mode: median small-copy latency in µs.
fn latency_maps(label: &str, gpus: &[u32], pairs: &[&PairLink], set: &mut ChartSet) {
    let modes: BTreeSet<&str> = pairs
        .iter()
        .flat_map(|l| l.latency_us.keys())
        .map(String::as_str)
        .collect();
    if modes.is_empty() {
        set.skip(
            format!("P2P latency heat map ({label})"),
            "the profile has no per-pair latency (presets and imports often lack it)",
        );
        return;
    }
    for mode in modes {
        let values = matrix(gpus, pairs, |p| {
            p.latency_us
                .get(mode)
                .map(|s| s.median)
                .filter(|v| v.is_finite())
        });
        let chart = heat_map(
            label,
            format!("P2P small-copy latency, {mode}"),
            gpus,
            HeatCells::Numeric {
                unit: "µs".to_owned(),
                values,
            },
        );
        set.push(
            &format!("{label}-p2p-latency-{mode}"),
            format!("Median latency of a small copy between each GPU pair ({mode}), {label}."),
            chart,
        );
    }
}

/// Fills: green for working P2P, amber for host bounce, red for broken.
const CLASS_COLOURS: [(PairClass, &str, Rgb); 3] = [
    (PairClass::P2p, "p2p", Rgb(0x2c, 0xa0, 0x2c)),
    (PairClass::HostBounce, "host-bounce", Rgb(0xff, 0xbb, 0x33)),
    (PairClass::Broken, "broken", Rgb(0xd6, 0x27, 0x28)),
];

fn classification_map(label: &str, gpus: &[u32], pairs: &[&PairLink], set: &mut ChartSet) {
    if pairs.iter().all(|l| l.classification.is_none()) {
        set.skip(
            format!("Pair classification ({label})"),
            "no pair in the profile is classified",
        );
        return;
    }
    let categories = CLASS_COLOURS
        .iter()
        .map(|(_, name, colour)| Category {
            name: (*name).to_owned(),
            colour: Some(*colour),
        })
        .collect();
    let values = matrix(gpus, pairs, |p| {
        let c = p.classification?;
        CLASS_COLOURS.iter().position(|(k, _, _)| *k == c)
    });
    let chart = heat_map(
        label,
        "GPU pair classification".to_owned(),
        gpus,
        HeatCells::Categorical { categories, values },
    );
    set.push(
        &format!("{label}-pair-classification"),
        format!(
            "p2p: direct peer copies work and data arrives intact; host-bounce: copies go through \
             host memory; broken: copies report success but data does not arrive. {label}."
        ),
        chart,
    );
}

/// `nvidia-smi topo -m` name of a link class.
pub fn link_class_name(c: LinkClass) -> String {
    match c {
        LinkClass::NV(n) => format!("NV{n}"),
        LinkClass::Unknown => "unknown".to_owned(),
        other => format!("{other:?}"),
    }
}

fn topology_map(label: &str, gpus: &[u32], pairs: &[&PairLink], set: &mut ChartSet) {
    let classes: Vec<LinkClass> = pairs
        .iter()
        .map(|l| l.topology)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let categories = classes
        .iter()
        .map(|c| Category {
            name: link_class_name(*c),
            colour: None,
        })
        .collect();
    let values = matrix(gpus, pairs, |p| {
        classes.iter().position(|c| *c == p.topology)
    });
    let chart = heat_map(
        label,
        "PCIe / NVLink path between GPUs (nvidia-smi topo -m)".to_owned(),
        gpus,
        HeatCells::Categorical { categories, values },
    );
    set.push(
        &format!("{label}-topology"),
        format!(
            "Link class of each pair: PIX/PXB through PCIe switches, PHB/NODE through a host bridge \
             in one socket, SYS across sockets, NVn over NVLink. {label}."
        ),
        chart,
    );
}
