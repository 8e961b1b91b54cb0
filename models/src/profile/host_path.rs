//! The two figures of a GPU's path through the host that decide what P2P off or routed costs
//! (issue 34): a small transfer's latency and the bandwidth at size. `probe`'s summary prints
//! them (`host path:` lines) and `sim` costs NCCL's SHM ring and the routed peer path from them,
//! both through these functions, so the line a `probe run --quick` prints is the figure the
//! simulation reads.
//!
//! - SHM (P2P `off`): NCCL's kernels load and store mapped pinned host memory. Latency: the
//!   smallest host→device mapped-kernel load less the GPU's own graph-node floor (one read round
//!   trip); bandwidth: the smaller of the two directions' mapped-kernel bandwidths at the largest
//!   size timed.
//! - Peer copy (P2P `routed`, or `real`): a pair's copy-engine peer copy. Latency: its timed
//!   small-copy latency (`latency_us["copy-engine"]`, else its smallest size's time); bandwidth:
//!   its best one-way point.

use super::{
    Direction, HostDirection, HostStagePath, LaunchKernel, LaunchKind, MachineProfile, PairLink,
    TransferMode,
};

/// A host path's latency and bandwidth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostPathFigures {
    /// A small transfer's latency (SHM: a one-shot 4 KiB mapped-kernel load less an empty graph
    /// node, which holds the kernel's own start and finish besides the host round trip), µs.
    pub latency_us: f64,
    /// Bandwidth at size, one direction, GB/s (1e9 B/s).
    pub gb_per_s: f64,
}

impl HostPathFigures {
    fn valid(self) -> Option<Self> {
        (self.latency_us.is_finite()
            && self.latency_us > 0.0
            && self.gb_per_s.is_finite()
            && self.gb_per_s > 0.0)
            .then_some(self)
    }
}

/// The GPU's per-node floor of a graph of empty kernels, µs (0 where not measured): what a
/// mapped-kernel load's time contains besides the host round trip.
pub fn graph_node_floor_us(p: &MachineProfile) -> f64 {
    p.launch
        .iter()
        .filter(|l| l.kind == LaunchKind::GraphNode && l.kernel == LaunchKernel::Empty)
        .map(|l| l.per_kernel_us.median)
        .fold(0.0, f64::max)
}

/// NCCL's SHM path over `devices` (empty: every GPU): the slowest GPU's one-shot latency and the
/// smallest staged bandwidth. `None` without a mapped-kernel measurement in both directions.
pub fn shm_path(p: &MachineProfile, devices: &[u32]) -> Option<HostPathFigures> {
    let mapped = |dir: HostDirection| {
        p.host_staging
            .iter()
            .filter(move |c| c.path == HostStagePath::MappedKernel && c.direction == dir)
            .filter(|c| devices.is_empty() || devices.contains(&c.device))
    };
    let small_us = mapped(HostDirection::HostToDevice)
        .filter_map(|c| c.points.iter().min_by_key(|p| p.bytes))
        .map(|p| p.time_us.median)
        .fold(f64::NAN, f64::max);
    let peak = |dir| {
        mapped(dir)
            .filter_map(|c| c.points.iter().max_by_key(|p| p.bytes))
            .map(|p| p.gb_per_s.median)
            .fold(f64::INFINITY, f64::min)
    };
    HostPathFigures {
        latency_us: small_us - graph_node_floor_us(p),
        gb_per_s: peak(HostDirection::HostToDevice).min(peak(HostDirection::DeviceToHost)),
    }
    .valid()
}

/// One pair's copy-engine peer copy, `None` where none was timed.
pub fn peer_copy(link: &PairLink) -> Option<HostPathFigures> {
    let peer = link
        .curves
        .iter()
        .find(|c| c.mode == TransferMode::CopyEngine && c.direction == Direction::Unidirectional)
        .or_else(|| {
            link.curves
                .iter()
                .find(|c| c.mode == TransferMode::CopyEngine)
        })?;
    let latency_us = link
        .latency_us
        .get("copy-engine")
        .map(|s| s.median)
        .or_else(|| {
            peer.points
                .iter()
                .min_by_key(|p| p.bytes)
                .map(|p| p.time_us.median)
        })?;
    let gb_per_s = peer
        .points
        .iter()
        .map(|p| p.gb_per_s.median)
        .fold(0.0, f64::max);
    HostPathFigures {
        latency_us,
        gb_per_s,
    }
    .valid()
}

/// The slowest peer path among the pairs `pick` keeps: the largest latency and the smallest
/// bandwidth of any of them (a ring or a one-shot kernel waits for its slowest pair).
pub fn slowest_peer_copy(
    p: &MachineProfile,
    pick: &dyn Fn(&PairLink) -> bool,
) -> Option<HostPathFigures> {
    p.links
        .iter()
        .filter(|l| l.src != l.dst && pick(l))
        .filter_map(peer_copy)
        .reduce(|a, b| HostPathFigures {
            latency_us: a.latency_us.max(b.latency_us),
            gb_per_s: a.gb_per_s.min(b.gb_per_s),
        })
}
