//! Collectives over GPU groups that span nodes, from the profile's inter-node (`NET`) curves.
//!
//! Order of preference for `op` on a group spread over k nodes with at most g GPUs on one node:
//! 1. a curve measured on exactly those GPUs;
//! 2. a curve measured on a group of the same shape (k nodes, the same GPUs per node);
//! 3. hierarchical, as NCCL runs it across boxes: the op inside each node pipelined with the op
//!    across nodes between GPUs of the same local rank ("rails"), each rail carrying 1/g of the
//!    data. All-reduce: an intra-node all-reduce of the buffer (what NCCL's tree and NVLS-tree do
//!    inside a box) with an all-reduce of S/g across nodes; all-gather / reduce-scatter likewise;
//!    all-to-all: the local share (S/k per rank) inside the node at the same time as the
//!    (k−1)/k of every buffer that leaves it. The g rails share the node's NICs: with r NICs each
//!    carries g/min(g, r) rails' bytes. The phases overlap chunk by chunk, so
//!    `t = max(t_intra, t_net) + min(latency_intra, latency_net)`: the sum of both latencies for
//!    small messages, the slower phase for large ones. With one GPU per node the rail curve is
//!    the answer.
//!
//! A rail curve (one GPU per node) comes from the one-GPU-per-node curves like an intra-node one
//! ([`Interconnect::resolve`]: same op on another node count rescaled by the ring model, or
//! another op), else from the node-pair send/recv by the ring model over k nodes, else from the
//! NICs' link speed (assumed, and said so).

use super::curve::CommCurve;
use super::interconnect::{Interconnect, curve_points, devices_label, op_name};
use super::nccl_model::ring_steps;
use super::nodes::Topology;
use models::profile::{CollectiveCurve, CollectiveOp, LinkClass, MachineProfile};
use std::collections::BTreeMap;

/// Message sizes a hierarchical curve is sampled at: 64 B to 16 GiB.
const SAMPLE_EXPONENTS: std::ops::RangeInclusive<u32> = 6..=34;

/// What NCCL achieves of a NIC's line rate when nothing was measured: ~94% over InfiniBand or
/// RoCE (46–48 GB/s per 400 Gb/s NDR NIC, NVIDIA/nccl-tests#290), assumed 50% over sockets.
fn nic_efficiency(transport: &str) -> f64 {
    if transport.eq_ignore_ascii_case("socket") {
        0.5
    } else {
        0.94
    }
}

/// Latency of one step across nodes when nothing was measured: ~10 µs over InfiniBand (a 2-node
/// all-reduce of 8 B takes ~19–20 µs, two steps: NVIDIA/nccl-tests#150), assumed 12 µs over RoCE
/// and 30 µs over sockets.
fn step_latency_s(transport: &str) -> f64 {
    match transport.to_ascii_lowercase().as_str() {
        "ib" | "infiniband" => 10e-6,
        "socket" => 30e-6,
        _ => 12e-6,
    }
}

/// The NICs NCCL uses on each node, and the link-speed fallback.
#[derive(Debug, Clone)]
pub struct Nics {
    /// NICs per node (≥ 1), by node rank.
    rails: BTreeMap<u32, u32>,
    /// One NIC's achievable bandwidth when no inter-node curve was measured, bytes/s.
    fallback_bytes_per_s: f64,
    fallback_latency_s: f64,
    /// How the fallback was set (for the curve's source).
    fallback_source: String,
}

impl Nics {
    /// From `nodes[].nics`: the NICs NCCL used (`used_by_nccl`, loopback included: a test run
    /// on one host goes through it), else every non-loopback NIC, else one.
    pub fn from_profile(p: &MachineProfile, notes: &mut Vec<String>) -> Nics {
        let mut rails = BTreeMap::new();
        let mut speeds: Vec<f64> = Vec::new();
        let mut transport = String::from("IB");
        for node in &p.nodes {
            let used: Vec<_> = node.nics.iter().filter(|n| n.used_by_nccl).collect();
            let chosen: Vec<_> = if used.is_empty() {
                node.nics
                    .iter()
                    .filter(|n| n.kind.as_deref() != Some("loopback") && n.name != "lo")
                    .collect()
            } else {
                used
            };
            if chosen.is_empty() {
                notes.push(format!(
                    "node {} lists no NIC: one NIC assumed for its inter-node traffic",
                    node.rank
                ));
            }
            rails.insert(node.rank, (chosen.len() as u32).max(1));
            speeds.extend(chosen.iter().filter_map(|n| n.speed_gbit_per_s));
            if let Some(t) = &node.net_transport {
                transport = t.clone();
            }
        }
        let (gbit, how) = match speeds.iter().copied().filter(|s| *s > 0.0).reduce(f64::min) {
            Some(s) => (s, "the NIC speed the profile reports"),
            None => (
                100.0,
                "an assumed 100 Gb/s NIC (the profile reports no speed)",
            ),
        };
        let eff = nic_efficiency(&transport);
        Nics {
            rails,
            fallback_bytes_per_s: gbit / 8.0 * 1e9 * eff,
            fallback_latency_s: step_latency_s(&transport),
            fallback_source: format!(
                "assumed: nothing measured across nodes; {gbit:.0} Gb/s ({how}) × {eff:.2} over {transport}, {:.0} us per step",
                step_latency_s(&transport) * 1e6
            ),
        }
    }

    /// NICs NCCL can spread the traffic of `nodes` over (the fewest of any of them).
    fn rails(&self, nodes: impl Iterator<Item = u32>) -> u32 {
        nodes
            .map(|n| self.rails.get(&n).copied().unwrap_or(1))
            .min()
            .unwrap_or(1)
    }

    /// NICs of the fewest-NIC node among `nodes`.
    pub fn rails_between(&self, a: u32, b: u32) -> u32 {
        self.rails([a, b].into_iter())
    }
}

/// Resolves curves for groups that span nodes.
pub struct Network<'a> {
    pub topology: &'a Topology,
    /// Curves measured on groups that span nodes.
    pub spanning: &'a [CollectiveCurve],
    /// The spanning curves with one GPU per node (rails).
    pub rails: &'a [CollectiveCurve],
    /// Resolves curves inside one node.
    pub intra: &'a Interconnect<'a>,
    pub nics: &'a Nics,
}

impl Network<'_> {
    /// The curve of `op` over `devices`, which span at least two nodes.
    pub fn curve(&self, op: CollectiveOp, devices: &[u32]) -> CommCurve {
        let parts = self.topology.split_by_node(devices);
        if let Some(c) = self.measured(op, devices, &parts) {
            return c;
        }
        let g = parts.iter().map(|(_, p)| p.len()).max().unwrap_or(1);
        let heads: Vec<u32> = parts.iter().map(|(_, p)| p[0]).collect();
        if op == CollectiveOp::SendRecv || g == 1 {
            return self.rail(op, &heads);
        }
        let (_, big) = parts
            .iter()
            .max_by_key(|(n, p)| (p.len(), u32::MAX - n))
            .expect("a spanning group has parts");
        let k = parts.len() as f64;
        let r = self.nics.rails(parts.iter().map(|(n, _)| *n)).min(g as u32) as f64;
        let share = g as f64 / r;
        // (intra bytes, rail bytes) per byte of the op's message (nccl-tests' size convention).
        let (intra_f, rail_f) = match op {
            CollectiveOp::AllToAll => (1.0 / k, share),
            _ => (1.0, share / g as f64),
        };
        let intra = self.intra.curve(op, big);
        let rail = self.rail(op, &heads);
        let lat = |c: &CommCurve, t: f64| c.alpha_s().min(t);
        let points: Vec<(f64, f64)> = SAMPLE_EXPONENTS
            .map(|e| {
                let s = (1u64 << e) as f64;
                let (a, b) = (intra.time_s(s * intra_f), rail.time_s(s * rail_f));
                (s, a.max(b) + lat(&intra, a).min(lat(&rail, b)))
            })
            .collect();
        let source = format!(
            "hierarchical {} over {} GPUs on {} nodes (no curve measured on this group): {} inside a node [{}] pipelined with {} across nodes [{}], {g} GPUs per node over {} NIC{}",
            op_name(op),
            devices.len(),
            parts.len(),
            op_name(op),
            intra.source,
            op_name(op),
            rail.source,
            r as u32,
            if r as u32 == 1 { "" } else { "s" }
        );
        CommCurve::from_points(&points, source).unwrap_or_else(|| rail.clone())
    }

    /// Steps 1–2: measured on these GPUs, or on a group of the same shape.
    fn measured(
        &self,
        op: CollectiveOp,
        devices: &[u32],
        parts: &[(u32, Vec<u32>)],
    ) -> Option<CommCurve> {
        let mut want = devices.to_vec();
        want.sort_unstable();
        let shape = |ps: &[(u32, Vec<u32>)]| {
            let mut v: Vec<usize> = ps.iter().map(|(_, p)| p.len()).collect();
            v.sort_unstable();
            v
        };
        let want_shape = shape(parts);
        let best = self
            .spanning
            .iter()
            .filter(|c| c.op == op && c.devices.len() == devices.len())
            .filter(|c| !curve_points(c).is_empty())
            .filter(|c| shape(&self.topology.split_by_node(&c.devices)) == want_shape)
            .min_by_key(|c| {
                let mut have = c.devices.clone();
                have.sort_unstable();
                (have != want, !c.nccl_env.is_empty())
            })?;
        let mut have = best.devices.clone();
        have.sort_unstable();
        let how = if have == want {
            format!(
                "measured {} on GPUs {} ({} nodes, NET)",
                op_name(op),
                devices_label(&best.devices),
                parts.len()
            )
        } else {
            format!(
                "measured {} on GPUs {} standing in for GPUs {} (same shape: {} nodes × {} GPUs, NET)",
                op_name(op),
                devices_label(&best.devices),
                devices_label(devices),
                parts.len(),
                want_shape.last().copied().unwrap_or(1)
            )
        };
        CommCurve::from_points(&curve_points(best), how)
    }

    /// One GPU per node: the one-GPU-per-node curves, else the node-pair send/recv by the ring
    /// model, else the NICs' link speed.
    fn rail(&self, op: CollectiveOp, heads: &[u32]) -> CommCurve {
        let class_of = |a: u32, b: u32| {
            if a == b { LinkClass::X } else { LinkClass::NET }
        };
        let rails = Interconnect {
            collectives: self.rails,
            links: &[],
            gpu: self.intra.gpu,
            class_of: &class_of,
            staging: None,
        };
        if let Some(c) = rails.resolve(op, heads) {
            return c;
        }
        let k = heads.len() as u32;
        let bw = match op {
            CollectiveOp::SendRecv => 1.0,
            _ => op.busbw_factor(k),
        };
        let lat = ring_steps(op, k);
        if op != CollectiveOp::SendRecv
            && let Some(sr) = rails.resolve(CollectiveOp::SendRecv, &heads[..2])
        {
            return sr.rescaled(
                lat,
                bw,
                format!(
                    "derived: {} over {k} nodes by the ring model from {}",
                    op_name(op),
                    sr.source
                ),
            );
        }
        CommCurve::alpha_beta(
            self.nics.fallback_latency_s * lat,
            self.nics.fallback_bytes_per_s / bw.max(1e-9),
            format!("{} ({})", self.nics.fallback_source, op_name(op)),
        )
    }
}
