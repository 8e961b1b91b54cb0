//! NCCL's SHM transport as NCCL runs it: the collective cost of GPUs without P2P, from the
//! host-staged path's round trip and bandwidth.
//!
//! What NCCL does without P2P (NVIDIA/nccl, read at 2.27–2.30):
//! - `src/transport/shm.cc`: GPUs of one host without P2P connect `via SHM/direct/direct`. The
//!   buffers sit in pinned host memory on the receiver's side (`NCCL_SHM_LOCALITY` default 2); the
//!   sender's kernel stores into it over PCIe, the receiver's kernel polls it and loads from it.
//!   No proxy thread takes part per step (`shmTransport` registers no `proxyProgress` unless
//!   `NCCL_SHM_USE_CUDA_MEMCPY=1`, a copy-engine path removed in 2.30), so a CUDA graph replays
//!   the whole collective: graphs remove its launch, not its host-memory round trips.
//! - `src/graph/tuning.cc`: without P2P the ring's path is PHB/SYS, so LL128 is disabled (`typeIntra
//!   <= PATH_NVB`); the tuner picks LL or Simple from its own model: latency `baseLat + nsteps ×
//!   hwLat[PCI]` (LL 6.6 + 1.0/step, Simple 8.4 + 5.7/step µs) and bandwidth `nChannels × bwIntra`
//!   (LL: half of it), algbw = busbw × nRanks / nsteps.
//! - `src/graph/search.cc`: the ring search tries the speeds of `sm100SpeedArrayIntra` (≥ 18 GB/s
//!   for compute capability ≥ 10.0) down to its smallest; a ring across two AMD sockets must cross
//!   the inter-CPU link NCCL rates at `AMD_BW` = 16 GB/s (`topo.h`), so no speed fits and NCCL
//!   "falls back to simple order": one ring at `bwIntra` 0.1 GB/s, which `connect.cc` duplicates
//!   into 2 channels. The tuner then sees 0.1 GB/s and picks Simple above ~4 KB.
//! - Protocols over host memory (`src/device/prims_ll.h`, `device.h`): LL moves 8 data bytes per
//!   16-byte line and each of its 512 threads (`NCCL_LL_MAX_NTHREADS`) spins on one line at a time,
//!   so one channel has 4 KiB of data in flight per host-read round trip. Simple writes a slice,
//!   fences to system scope and posts the tail the peer polls: two round trips per 512 KiB step
//!   (`NCCL_BUFFSIZE` 4 MiB / `NCCL_STEPS` 8), then the bytes at the staged bandwidth shared by the
//!   channels.
//!
//! - SGLang without P2P: its custom all-reduce (`custom_all_reduce.py`, from vLLM's) checks P2P
//!   between the ranks and disables itself ("Custom allreduce is disabled because your platform
//!   lacks GPU P2P capability or P2P test failed"), so NCCL runs every all-reduce; `cost::comm`
//!   does the same through `Machine::p2p_ok`.
//!
//! Each ring step is one hop through host memory: the sender's store seen by the receiver's poll
//! (LL's data travels in the polled lines themselves), for Simple then the data's first dependent
//! load, plus the chunk at the protocol's rate; 2(n−1) steps for all-reduce, n−1 for all-gather
//! and reduce-scatter. All-to-all and send/recv are one exchange of every peer's share at once. The
//! hop, the round trip, the bandwidths and the channel count are inputs ([`ShmFigures`]): measured
//! (a probe profile's mapped-kernel host staging and NCCL's own channel lines) or stated. On the
//! lent H200 guest a store→poll hop through host memory takes 2.24 µs and a dependent 8-byte load
//! 1.20–1.27 µs, warm or over 256 MiB (`scripts/measure-host-read-latency.py`,
//! `data/observations/host-read-latency-h200.csv`): one NCCL step is about these, not the 3.18 µs a
//! one-shot 4 KiB load kernel adds to an empty one there, which `probe` records as the host path's
//! latency ([`HOP_PER_ONE_SHOT`], [`RTT_PER_ONE_SHOT`]).

use super::curve::CommCurve;
use models::profile::CollectiveOp;

/// NCCL's base latency of a ring collective, µs (`tuning.cc` baseLat, Ring: LL 6.6, Simple 8.4):
/// the kernel's start and end, paid once.
const BASE_LL_US: f64 = 6.6;
const BASE_SIMPLE_US: f64 = 8.4;
/// The tuner's per-step latency on PCI, µs (`tuning.cc` hwLat[NCCL_HW_PCI], Ring: LL 1.0, Simple 5.7).
const TUNER_HOP_LL_US: f64 = 1.0;
const TUNER_HOP_SIMPLE_US: f64 = 5.7;
/// LL: threads per channel (`NCCL_LL_MAX_NTHREADS`) × data bytes per 16-byte line in flight.
const LL_BYTES_IN_FLIGHT: f64 = 512.0 * 8.0;
/// Simple: bytes per step and channel (`NCCL_BUFFSIZE` 4 MiB / `NCCL_STEPS` 8).
const SIMPLE_STEP_BYTES: f64 = (4u64 << 20) as f64 / 8.0;
/// NCCL's rating of a PCIe link (`topo.h` PCI_BW), GB/s: a ring rated at or below it runs Simple
/// with 256 threads a channel, else 512 (`tuning.cc` `simpleDefaultThreads`).
const PCI_BW_GB_PER_S: f64 = 12.0;
/// Bytes one thread keeps in flight a Simple iteration: a 16-byte pack × the collective unroll.
const SIMPLE_PACK_BYTES: f64 = 16.0;
/// The ring speed NCCL rates a fallback ("simple order") graph at, GB/s (`search.cc`).
pub const FALLBACK_RING_GB_PER_S: f64 = 0.1;

/// The NCCL protocol a collective runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Ll,
    Simple,
}

/// A store into pinned host memory seen by another kernel polling it, over the one-shot latency
/// `probe` records for the host path (a 4 KiB mapped-kernel load less an empty graph node), both
/// measured on the lent H200 guest: 2.239 µs (`pingpong_hop,host`,
/// `data/observations/host-read-latency-h200.csv`) over 3.18 µs (`probe/profiles/h200-x1.vm-fields.json`).
/// Physical meaning: the part of a one-shot kernel's host-path time that one NCCL SHM step pays
/// (the rest is the one-shot kernel's own start and finish). Not fitted: both are measurements on
/// one machine; a profile's own latency scales both ratios, an assumption where the host path is
/// slower (a VM's IOMMU, another socket). Bounds (0, 1].
pub const HOP_PER_ONE_SHOT: f64 = 2.239 / 3.18;
/// A dependent 8-byte load from pinned host memory over the same one-shot latency: 1.24 µs (the
/// median of the three `chase,host` patterns, 1.199–1.272) over 3.18 µs. Bounds (0, 1].
pub const RTT_PER_ONE_SHOT: f64 = 1.24 / 3.18;

/// What the SHM path costs on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct ShmFigures {
    /// A store into mapped pinned host memory seen by a kernel polling it, seconds: one ring
    /// step's latency under LL, whose data travels in the polled lines.
    pub hop_s: f64,
    /// A kernel's dependent load from mapped pinned host memory, round trip, seconds: LL's lines
    /// in flight arrive once per round trip, and Simple reads its slice after seeing the tail.
    pub read_rtt_s: f64,
    /// Bytes per second one GPU stores into mapped host memory while it loads as much
    /// (the smaller of its device→host and host→device mapped-kernel bandwidths).
    pub staged_bytes_per_s: f64,
    /// Channels the collective runs on (NCCL's `Channel NN` lines; 2 after a fallback ring).
    pub channels: u32,
    /// The ring speed NCCL's tuner believes, GB/s per channel of the searched graph
    /// ([`FALLBACK_RING_GB_PER_S`] when the search fell back), with its graph's channel count.
    pub tuner_ring_gb_per_s: f64,
    pub tuner_graph_channels: u32,
    /// The GPUs' compute capability (major): NCCL's collective unroll depends on it.
    pub cc_major: u32,
}

/// Ring steps of `op` on `n` ranks (`tuning.cc` nsteps); exchanges count as one step.
fn steps(op: CollectiveOp, n: u32) -> f64 {
    let n = n.max(2) as f64;
    match op {
        CollectiveOp::AllReduce => 2.0 * (n - 1.0),
        CollectiveOp::AllGather | CollectiveOp::ReduceScatter => n - 1.0,
        CollectiveOp::AllToAll | CollectiveOp::SendRecv => 1.0,
    }
}

/// Bytes one rank moves per step, in nccl-tests' size convention for `bytes`.
fn bytes_per_step(op: CollectiveOp, n: u32, bytes: f64) -> f64 {
    let n = n.max(2) as f64;
    match op {
        CollectiveOp::AllReduce | CollectiveOp::AllGather | CollectiveOp::ReduceScatter => {
            bytes / n
        }
        CollectiveOp::AllToAll => bytes * (n - 1.0) / n,
        CollectiveOp::SendRecv => bytes,
    }
}

impl ShmFigures {
    /// The protocol NCCL's tuner picks for `bytes` (its model, not the physics below).
    pub fn tuner_protocol(&self, op: CollectiveOp, n: u32, bytes: f64) -> Protocol {
        let nsteps = steps(op, n);
        let bus_simple = self.tuner_graph_channels.max(1) as f64 * self.tuner_ring_gb_per_s;
        let ratio = n.max(2) as f64 / nsteps;
        let us = |base: f64, hop: f64, bus_gb: f64| {
            base + nsteps * hop + bytes / 1e3 / (bus_gb * ratio).max(1e-9)
        };
        let ll = us(BASE_LL_US, TUNER_HOP_LL_US, 0.5 * bus_simple);
        let simple = us(BASE_SIMPLE_US, TUNER_HOP_SIMPLE_US, bus_simple);
        if ll <= simple {
            Protocol::Ll
        } else {
            Protocol::Simple
        }
    }

    /// Bytes a channel's Simple threads keep in flight: `simpleDefaultThreads` (256 on a ring
    /// NCCL rates at PCI_BW or less, as the fallback ring; else 512) × 16-byte packs × the
    /// collective unroll (`ncclCollUnroll`, `include/device.h`: 6 on compute capability 12.x, 8
    /// from 8.0, else 4). Loads from host memory return once a round trip, so a channel moves at
    /// most this much per round trip, as LL's lines do.
    fn simple_bytes_in_flight(&self) -> f64 {
        let ring = self.tuner_ring_gb_per_s * f64::from(self.tuner_graph_channels.max(1));
        let threads = if ring <= PCI_BW_GB_PER_S {
            256.0
        } else {
            512.0
        };
        let unroll = match self.cc_major {
            12 => 6.0,
            c if c >= 8 => 8.0,
            _ => 4.0,
        };
        threads * SIMPLE_PACK_BYTES * unroll
    }

    /// Seconds of one ring step moving `chunk` bytes per rank with `proto`.
    fn step_s(&self, proto: Protocol, chunk: f64) -> f64 {
        let ch = self.channels.max(1) as f64;
        let per_channel = chunk / ch;
        let share = self.staged_bytes_per_s / ch;
        match proto {
            Protocol::Ll => {
                // LL's lines are half flags: the link carries twice the data
                let rate = (LL_BYTES_IN_FLIGHT / self.read_rtt_s).min(0.5 * share);
                self.hop_s + per_channel / rate
            }
            Protocol::Simple => {
                // each slice: the tail's store seen by the poll, then the slice's first load
                let slices = (per_channel / SIMPLE_STEP_BYTES).ceil().max(1.0);
                let rate = (self.simple_bytes_in_flight() / self.read_rtt_s).min(share);
                (self.hop_s + self.read_rtt_s) * slices + per_channel / rate
            }
        }
    }

    /// Seconds of `op` over `n` GPUs for a message of `bytes`, and the protocol it ran with.
    pub fn time_s(&self, op: CollectiveOp, n: u32, bytes: f64) -> (f64, Protocol) {
        let proto = self.tuner_protocol(op, n, bytes);
        let base_us = match proto {
            Protocol::Ll => BASE_LL_US,
            Protocol::Simple => BASE_SIMPLE_US,
        };
        let t = base_us * 1e-6 + steps(op, n) * self.step_s(proto, bytes_per_step(op, n, bytes));
        (t, proto)
    }

    /// The curve of `op` over `n` GPUs, sampled from 8 B to 1 GiB.
    pub fn curve(&self, op: CollectiveOp, n: u32, source: impl Into<String>) -> CommCurve {
        let pts: Vec<(f64, f64)> = (3..=30)
            .map(|e| {
                let b = (1u64 << e) as f64;
                (b, self.time_s(op, n, b).0)
            })
            .collect();
        CommCurve::from_points(&pts, source).unwrap_or_else(CommCurve::free)
    }

    /// One line on how the curve was costed.
    pub fn describe(&self) -> String {
        format!(
            "NCCL SHM ring: {:.1} µs a store-to-poll hop, {:.1} µs host-read round trip, {:.1} GB/s staged per GPU, {} channels, tuner ring {:.1} GB/s × {}",
            self.hop_s * 1e6,
            self.read_rtt_s * 1e6,
            self.staged_bytes_per_s / 1e9,
            self.channels,
            self.tuner_ring_gb_per_s,
            self.tuner_graph_channels
        )
    }
}

/// Whether NCCL's ring search falls back to "simple order" on GPUs of compute capability
/// `cc_major` whose ring crosses an inter-CPU link NCCL rates at `inter_cpu_gb_per_s`: every
/// speed it tries is above that link (`search.cc`: SM ≥ 10.0 tries down to 18 GB/s, SM 9.0 to 3,
/// older to 3).
pub fn ring_search_falls_back(
    cc_major: u32,
    crosses_sockets: bool,
    inter_cpu_gb_per_s: f64,
) -> bool {
    let slowest_tried = if cc_major >= 10 { 18.0 } else { 3.0 };
    crosses_sockets && inter_cpu_gb_per_s < slowest_tried
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The VM's figures as the fallback ring sees them: 2 channels, tuner at 0.1 GB/s; a hop of
    /// `hop_us`, a round trip in the measured proportion to it.
    fn fallback(hop_us: f64) -> ShmFigures {
        ShmFigures {
            hop_s: hop_us * 1e-6,
            read_rtt_s: hop_us * 1e-6 * RTT_PER_ONE_SHOT / HOP_PER_ONE_SHOT,
            staged_bytes_per_s: 50e9,
            channels: 2,
            tuner_ring_gb_per_s: FALLBACK_RING_GB_PER_S,
            tuner_graph_channels: 1,
            cc_major: 12,
        }
    }

    #[test]
    fn the_fallback_tuner_runs_simple_above_a_few_kilobytes() {
        let f = fallback(2.5);
        let ar = CollectiveOp::AllReduce;
        assert_eq!(f.tuner_protocol(ar, 8, 1024.0), Protocol::Ll);
        assert_eq!(f.tuner_protocol(ar, 8, 16384.0), Protocol::Simple);
        // a healthy ring (2 × 24 GB/s) keeps LL up to about a megabyte
        let ring = ShmFigures {
            tuner_ring_gb_per_s: 24.0,
            tuner_graph_channels: 2,
            ..f
        };
        assert_eq!(ring.tuner_protocol(ar, 8, 512.0 * 1024.0), Protocol::Ll);
        assert_eq!(ring.tuner_protocol(ar, 8, 8e6), Protocol::Simple);
    }

    #[test]
    fn small_all_reduce_is_fourteen_round_trips() {
        // 8 GPUs over SHM on bare metal: 42 µs for 8 B (NVIDIA/nccl#1530, 8× RTX 4090 without
        // P2P) is 6.6 µs + 14 hops of ~2.5 µs (the lent H200 guest's store-to-poll hop: 2.24 µs)
        let ring = ShmFigures {
            tuner_ring_gb_per_s: 24.0,
            tuner_graph_channels: 2,
            ..fallback(2.5)
        };
        let (t, p) = ring.time_s(CollectiveOp::AllReduce, 8, 8.0);
        assert_eq!(p, Protocol::Ll);
        assert!((t * 1e6 - 41.6).abs() < 1.0, "{}", t * 1e6);
    }

    #[test]
    fn time_grows_with_bytes_round_trip_and_fewer_channels() {
        let ar = CollectiveOp::AllReduce;
        let f = fallback(3.0);
        let mut last = 0.0;
        for e in 3..=30 {
            let (t, _) = f.time_s(ar, 8, (1u64 << e) as f64);
            assert!(t >= last, "non-monotone at 2^{e}");
            last = t;
        }
        let slow = fallback(6.0);
        let b = 786_432.0;
        assert!(slow.time_s(ar, 8, b).0 > f.time_s(ar, 8, b).0);
        // LL (a healthy ring keeps it at this size) is bound by lines in flight per channel;
        // Simple shares the GPU's staged bandwidth, whatever the channels
        let ring = ShmFigures {
            tuner_ring_gb_per_s: 24.0,
            tuner_graph_channels: 2,
            ..f.clone()
        };
        let one = ShmFigures {
            channels: 1,
            ..ring.clone()
        };
        assert_eq!(ring.time_s(ar, 8, b).1, Protocol::Ll);
        assert!(one.time_s(ar, 8, b).0 > ring.time_s(ar, 8, b).0);
        // an all-gather is half the steps of an all-reduce of the same buffer
        let ag = f.time_s(CollectiveOp::AllGather, 8, b).0;
        assert!(ag < f.time_s(ar, 8, b).0);
    }

    #[test]
    fn simple_moves_its_threads_packs_once_a_round_trip() {
        // the fallback ring on SM120: 256 threads × 16 B × unroll 6 = 24,576 B a channel a
        // round trip, below the staged 50 GB/s shared by 2 channels at the measured 1.24 µs
        let f = fallback(2.239);
        let b = 64e6;
        let (t, p) = f.time_s(CollectiveOp::AllReduce, 8, b);
        assert_eq!(p, Protocol::Simple);
        let per_channel = b / 8.0 / 2.0;
        let slices = (per_channel / SIMPLE_STEP_BYTES).ceil();
        let rate = 24_576.0 / f.read_rtt_s;
        assert!(rate < 25e9, "{rate}");
        let step = (f.hop_s + f.read_rtt_s) * slices + per_channel / rate;
        assert!(
            (t - (BASE_SIMPLE_US * 1e-6 + 14.0 * step)).abs() < 1e-9,
            "{t}"
        );
        // a healthy ring gets 512 threads; Hopper unrolls 8: both move more a round trip
        let ring = ShmFigures {
            tuner_ring_gb_per_s: 24.0,
            tuner_graph_channels: 2,
            ..f.clone()
        };
        assert!(ring.simple_bytes_in_flight() > f.simple_bytes_in_flight());
        let hopper = ShmFigures {
            cc_major: 9,
            ..f.clone()
        };
        assert!(hopper.simple_bytes_in_flight() > f.simple_bytes_in_flight());
    }

    #[test]
    fn the_search_falls_back_only_for_new_gpus_across_amd_sockets() {
        assert!(ring_search_falls_back(12, true, 16.0));
        assert!(!ring_search_falls_back(12, false, 16.0));
        assert!(!ring_search_falls_back(9, true, 16.0));
        assert!(!ring_search_falls_back(12, true, 5000.0));
    }
}
