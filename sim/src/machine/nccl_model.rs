//! NCCL's own cost model of a ring collective inside one PCIe node, used where no curve was
//! measured on a group of that size (a 16-GPU group when 2, 4 and 8 GPUs were measured).
//!
//! Source: NVIDIA/nccl `src/graph/tuning.cc` @ 5067397c2676d5aed50042fc39e5c8ee96eb0027
//! (`ncclTopoTuneModel`, `ncclTopoGetAlgoTime`). For a ring on one node NCCL estimates
//!
//! - latency `baseLat[ring][p] + nsteps · hwLat[PCI][ring][p]`, `nsteps = 2(n−1)` for all-reduce,
//!   `n−1` for all-gather / reduce-scatter: every step waits for the slowest ring edge, so the
//!   latency grows with the step count, not with the bytes;
//! - bus bandwidth `nChannels · bwIntra` (Simple), `min(llMaxBw, ·0.5)` (LL: half of each 8-byte
//!   store is the flag), `·0.92` (LL128, off by default on PCIe: `typeIntra <= PATH_NVB`);
//!   algorithm bandwidth `busBw · n / nsteps`;
//! - and picks, per size, the protocol with the smallest `lat + bytes / algBw`. The tree
//!   algorithm inside one node is a chain with the same `2(n−1)` hops and less bandwidth
//!   (`busBw · 0.92 · 0.5` vs the ring's `n/nsteps ≈ 0.5`), so the ring is NCCL's choice here.
//!
//! NCCL's constants describe NVIDIA's reference machines, not this box. The physical inputs are
//! pinned on measured curves instead: the per-step latency and the fixed part of NCCL's latency
//! form are fitted on the two smallest measured group sizes (2 and 4 GPUs), and the larger group
//! is priced from the largest measured curve by the ratio of the fitted latencies and NCCL's bus
//! bandwidth factor (a ring keeps each GPU's link busy at the same bus bandwidth). Bandwidth: a
//! ring NCCL builds on a switched box keeps each switch's GPUs contiguous, so it leaves and enters
//! each switch once per direction per channel; the switch's x16 uplink carries one ring edge, the
//! same rate as a GPU's own x16 link, and does not bound the ring (the x16 box's hardware page:
//! two pairs through one uplink 56.4 GB/s, one pair 56.3 GB/s).

use models::profile::CollectiveOp;

/// Lowest physical per-step latency, seconds: one PCIe posted write to a peer and the flag poll
/// that sees it (CUDA P2P write latency 0.45–0.53 µs on the switched RTX PRO 6000 boxes, the
/// presets' link figures). A fit below it is not a ring of this hardware.
pub const MIN_HOP_S: f64 = 0.45e-6;
/// Highest per-step latency accepted from a fit, seconds: a host-staged hop is ~14 µs; above
/// that the curves are not an NCCL ring over P2P.
const MAX_HOP_S: f64 = 15e-6;
/// Highest fixed latency accepted, seconds (NCCL's own largest ring base latency is 14 µs; a
/// kernel launch adds a few).
const MAX_BASE_S: f64 = 20e-6;

/// Ring steps of `op` over `n` ranks: NCCL's `nsteps` (`ncclTopoTuneModel`) for the ring ops,
/// 2(n−1) for all-reduce and n−1 for all-gather / reduce-scatter (all-to-all too); one for a
/// send/recv. Every ring latency the machine prices is this many steps.
pub fn ring_steps(op: CollectiveOp, n: u32) -> f64 {
    let n = n.max(1) as f64;
    match op {
        CollectiveOp::AllReduce => 2.0 * (n - 1.0),
        CollectiveOp::SendRecv => 1.0,
        _ => n - 1.0,
    }
}

/// NCCL's latency form `base + nsteps · hop` with both inputs fitted on measured curves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RingLatency {
    /// Fixed part (launch, first and last chunk), seconds.
    pub base_s: f64,
    /// One ring step (the slowest edge's write + flag poll), seconds.
    pub hop_s: f64,
    /// The two group sizes it was fitted on.
    pub fitted_on: (u32, u32),
}

impl RingLatency {
    /// Fits `base + steps · hop` through the small-message times of two group sizes
    /// (`(n, seconds)`, the curve's smallest measured size, where bytes cost nothing). `None` when
    /// the fit leaves the physical bounds ([`MIN_HOP_S`] … 15 µs a step, 0 … 20 µs fixed).
    pub fn fit(op: CollectiveOp, a: (u32, f64), b: (u32, f64)) -> Option<Self> {
        let (sa, sb) = (ring_steps(op, a.0), ring_steps(op, b.0));
        if (sb - sa).abs() < 0.5 {
            return None;
        }
        let hop_s = (b.1 - a.1) / (sb - sa);
        let base_s = a.1 - sa * hop_s;
        let physical =
            (MIN_HOP_S..=MAX_HOP_S).contains(&hop_s) && (0.0..=MAX_BASE_S).contains(&base_s);
        physical.then_some(RingLatency {
            base_s,
            hop_s,
            fitted_on: (a.0.min(b.0), a.0.max(b.0)),
        })
    }

    /// Latency of `op` over `n` ranks, seconds.
    pub fn time_s(&self, op: CollectiveOp, n: u32) -> f64 {
        self.base_s + ring_steps(op, n) * self.hop_s
    }

    /// How the fit reads, for notes.
    pub fn describe(&self) -> String {
        format!(
            "NCCL's ring latency form (tuning.cc: base + nsteps × hop) fitted on {} and {} GPUs: {:.1} µs + {:.2} µs a step",
            self.fitted_on.0,
            self.fitted_on.1,
            self.base_s * 1e6,
            self.hop_s * 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL's ring base latency per protocol (LL, LL128, Simple), µs (`baseLatencies`, ring row).
    const NCCL_RING_BASE_US: [f64; 3] = [6.6, 14.0, 8.4];
    /// NCCL's PCI per-hop ring latency per protocol (LL, LL128, Simple), µs (`hwLatencies[PCI]`).
    const NCCL_PCI_RING_HOP_US: [f64; 3] = [1.0, 2.5, 5.7];

    /// The protocol NCCL's own estimate picks for a ring all-reduce of `bytes` over `n` GPUs on PCIe
    /// with `channels` rings of `per_channel_gb_per_s` (its graph search's `bwIntra`), LL128 off as
    /// NCCL keeps it on PCIe: index 0 LL, 2 Simple (`ncclTopoGetAlgoTime`: `lat + bytes / algBw`).
    fn nccl_ring_protocol(n: u32, bytes: f64, per_channel_gb_per_s: f64, channels: u32) -> usize {
        let steps = ring_steps(CollectiveOp::AllReduce, n);
        let bus_simple = channels as f64 * per_channel_gb_per_s;
        // Blackwell single-node llMaxBw (tuning.cc `llMaxBws`): far above a PCIe ring's half rate
        let bus_ll = (bus_simple * 0.5).min(2.0 * 141.0);
        let estimate = |p: usize, bus_gb_per_s: f64| {
            let lat_us = NCCL_RING_BASE_US[p] + steps * NCCL_PCI_RING_HOP_US[p];
            let alg_bytes_per_us = bus_gb_per_s * 1e3 * n as f64 / steps;
            lat_us + bytes / alg_bytes_per_us
        };
        if estimate(0, bus_ll) <= estimate(2, bus_simple) {
            0
        } else {
            2
        }
    }

    #[test]
    fn the_fit_recovers_base_and_hop_and_refuses_unphysical_points() {
        let ar = CollectiveOp::AllReduce;
        let truth = |n: u32| 3e-6 + ring_steps(ar, n) * 1.5e-6;
        let f = RingLatency::fit(ar, (2, truth(2)), (4, truth(4))).unwrap();
        assert!((f.hop_s - 1.5e-6).abs() < 1e-12 && (f.base_s - 3e-6).abs() < 1e-12);
        assert!((f.time_s(ar, 16) - truth(16)).abs() < 1e-12);
        // a bigger group measured faster than a smaller one is not a ring
        assert!(RingLatency::fit(ar, (2, 10e-6), (4, 9e-6)).is_none());
        // a negative fixed part (the Simple-only 4-GPU curve against an LL 2-GPU one)
        assert!(RingLatency::fit(ar, (2, 6.3e-6), (4, 31e-6)).is_none());
    }

    #[test]
    fn nccl_keeps_decode_sized_all_reduces_on_ll_at_8_and_16_gpus() {
        // the 8-rank graph file's rings, 2 channels at 24 GB/s (the wiki's debug: duplicated to
        // 4); on the one-socket switch box NCCL's own search ends on the same 2 × 24 (Gen5 x16 =
        // 48 GB/s, `search.cc`), 8 or 16 ranks: LL to 1.77 MiB at 8, 3.49 MiB at 16 (7168 × 2 bytes
        // × 129 and 255 tokens), Simple above
        for channels in [2, 4] {
            for n in [8, 16] {
                assert_eq!(nccl_ring_protocol(n, 14.0 * 1024.0, 24.0, channels), 0);
                assert_eq!(nccl_ring_protocol(n, 1024.0 * 1024.0, 24.0, channels), 0);
                assert_eq!(
                    nccl_ring_protocol(n, 64.0 * 1024.0 * 1024.0, 24.0, channels),
                    2
                );
            }
        }
        // the crossover at 2 × 24 GB/s: LL at 1.7 MiB, Simple at 2 MiB on 8 ranks; 16 ranks
        // keep LL to about twice that (30 steps of latency to amortise instead of 14)
        assert_eq!(nccl_ring_protocol(8, 1.7 * 1048576.0, 24.0, 2), 0);
        assert_eq!(nccl_ring_protocol(8, 2.0 * 1048576.0, 24.0, 2), 2);
        assert_eq!(nccl_ring_protocol(16, 3.4 * 1048576.0, 24.0, 2), 0);
        assert_eq!(nccl_ring_protocol(16, 4.0 * 1048576.0, 24.0, 2), 2);
    }
}
