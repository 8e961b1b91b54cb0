//! The bare-metal 8× RTX PRO 6000 box with NCCL tuned the way the rtx6kpro community runs it
//! (cross-socket P2P allowed, channels and topology corrected), in three protocol states: NCCL's
//! own protocol choice (`-nccl-tuned`), LL128 enabled on PCIe (`-nccl-ll128`:
//! `NCCL_PROTO=LL,LL128,Simple` with a tuner that picks LL128 between LL and Simple), and Simple
//! alone (`-nccl-simple`: `NCCL_PROTO=Simple`, derived below from the measured Simple points).
//!
//! Why a separate box: the shared bare-metal curves (aiconfigurator's collection host) reach
//! ~24 GB/s all-reduce busbw at 8 GPUs, which is NCCL's default on a dual-socket AMD host (2
//! channels, the AMD_BW = 16 GB/s topology estimate): the wiki measured 22.2 GB/s there before
//! tuning and 37.6–41 GB/s after. A record that states `NCCL_P2P_LEVEL=SYS` or an explicit
//! `NCCL_PROTO` ran the tuned state. Only the 4- and 8-GPU all-reduce curves are published for it;
//! its all-gather and reduce-scatter on 4 and 8 GPUs are derived from them ([`ring_half_us`]),
//! every other curve, the links and the topology are the bare-metal preset's.

use super::curve;
use super::pcie::{self, Measured};
use models::MachineProfile;
use models::profile::{CollectiveOp, LinkClass};
use std::collections::BTreeMap;

/// (message bytes, nccl-tests busbw GB/s) of `all_reduce_perf` on 8× RTX PRO 6000 Blackwell,
/// AMD EPYC 9575F (Turin), dual socket, 4 + 4 GPUs, NCCL 2.28.3: the "Baseline" column
/// (NCCL's own protocol choice, LL up to ~448 KiB then Simple).
const BUSBW_8GPU_BASELINE: [(u64, f64); 7] = [
    (64 << 10, 4.96),
    (256 << 10, 9.36),
    (512 << 10, 13.06),
    (1 << 20, 16.47),
    (2 << 20, 19.10),
    (4 << 20, 33.46),
    (16 << 20, 40.39),
];
/// The same box with the tuner plugin and `NCCL_PROTO=LL,LL128,Simple`: LL128 between 448 KiB and
/// 3 MiB, where LL saturates and Simple is not yet efficient.
const BUSBW_8GPU_LL128: [(u64, f64); 7] = [
    (64 << 10, 4.91),
    (256 << 10, 8.99),
    (512 << 10, 14.43),
    (1 << 20, 21.32),
    (2 << 20, 28.67),
    (4 << 20, 33.34),
    (16 << 20, 40.19),
];
/// The points of the "Baseline" columns that ran Simple: from 4 MiB up. At 8 GPUs the busbw jumps
/// from 19.1 GB/s (2 MiB, LL near its half-bandwidth ceiling) to 33.5 GB/s (4 MiB), past anything
/// LL reaches; the plugin column (LL128 allowed) measures the same 33.3 GB/s there.
const SIMPLE_FROM_BYTES: u64 = 4 << 20;
/// 4 GPUs on one socket, same box and NCCL, "Baseline" column (the plugin adds no LL128 there).
const BUSBW_4GPU: [(u64, f64); 7] = [
    (8 << 10, 1.10),
    (64 << 10, 7.70),
    (256 << 10, 13.96),
    (512 << 10, 17.39),
    (1 << 20, 25.13),
    (4 << 20, 39.09),
    (16 << 20, 45.58),
];

const SOURCE: &str = "all_reduce 4 and 8 GPUs: local-inference-lab/rtx6kpro \
    optimization/nccl-tuning.md@18af540 ('NCCL Tuner Plugin', AllReduce Benchmark Results: \
    nccl-tests busbw on 8x RTX PRO 6000 Blackwell, AMD EPYC 9575F Turin dual socket, NCCL 2.28.3, \
    4 GPU same NUMA and 8 GPU 4+4 cross-socket, Baseline and Plugin columns); the tuning's \
    before/after (22.2 -> 37.6 GB/s busbw at 32M, 8 GPUs) from the same page";

/// Which protocol state of the tuned box.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Protocols {
    /// NCCL's own choice among LL and Simple (LL128 stays off on PCIe paths).
    NcclChoice,
    /// LL128 enabled and used between LL and Simple.
    Ll128,
    /// `NCCL_PROTO=Simple`: Simple at every size.
    Simple,
}

/// Time of an `n`-GPU all-reduce of `bytes` from published (bytes, busbw) points: log-log
/// interpolation between points; below the first point the first point's time (latency-bound:
/// NCCL's LL all-reduce time is flat below 64 KiB, 26.7–29.4 µs from 8 to 32 KiB in the shared
/// bare-metal curve); above the last, the last point's busbw (bandwidth-bound).
fn time_us(points: &[(u64, f64)], n: u32, bytes: u64) -> f64 {
    let f = CollectiveOp::AllReduce.busbw_factor(n);
    let t = |&(b, busbw): &(u64, f64)| (b as f64, b as f64 * f / (busbw * 1e3));
    let first = t(&points[0]);
    let last = t(&points[points.len() - 1]);
    let x = bytes as f64;
    if x <= first.0 {
        return first.1;
    }
    if x >= last.0 {
        return last.1 * x / last.0;
    }
    points
        .windows(2)
        .map(|w| (t(&w[0]), t(&w[1])))
        .find(|((b0, _), (b1, _))| (*b0..=*b1).contains(&x))
        .map_or(last.1, |((b0, t0), (b1, t1))| {
            let w = (x / b0).ln() / (b1 / b0).ln();
            (t0.ln() + w * (t1 / t0).ln()).exp()
        })
}

/// Time of an `n`-GPU ring all-reduce of `bytes` with NCCL's Simple protocol alone, µs.
///
/// NCCL's own cost model (NVIDIA/nccl `src/graph/tuning.cc`, `ncclTopoGetAlgoTime`) prices a
/// ring collective as `latency + bytes / algbw`: a constant latency (`ncclTopoTuneModel`:
/// `baseLat` 8.4 µs + `nsteps` × `hwLat[PCI][Ring][Simple]` 5.7 µs for Simple) and Simple's full
/// bus bandwidth (LL gets half, LL128 120/128 of it). The form is NCCL's; both of its terms are
/// taken from the two measured points that ran Simple (4 and 16 MiB of the "Baseline" column),
/// since NCCL's tuner constants are a selection heuristic, not a measurement of this box: at 8 GPUs
/// they say 88.2 µs where the two points imply 50 µs (at 4 GPUs 42.6 vs 30 µs). At and above
/// 4 MiB this is the measured curve; below it, the line through the Simple points.
fn simple_time_us(points: &[(u64, f64)], n: u32, bytes: u64) -> f64 {
    if bytes >= SIMPLE_FROM_BYTES {
        return time_us(points, n, bytes);
    }
    let simple: Vec<(f64, f64)> = points
        .iter()
        .filter(|(b, _)| *b >= SIMPLE_FROM_BYTES)
        .map(|&(b, _)| (b as f64, time_us(points, n, b)))
        .collect();
    let ((b0, t0), (b1, t1)) = (simple[0], simple[simple.len() - 1]);
    let us_per_byte = (t1 - t0) / (b1 - b0);
    let latency_us = t0 - b0 * us_per_byte;
    latency_us + bytes as f64 * us_per_byte
}

/// The curves this module derives for the tuned state at 4 and 8 GPUs.
const RING_HALVES: [CollectiveOp; 3] = [
    CollectiveOp::AllReduce,
    CollectiveOp::AllGather,
    CollectiveOp::ReduceScatter,
];

/// NCCL's base latency of a ring collective with LL, µs (`tuning.cc` `baseLatencies`, Ring/LL).
const RING_BASE_LL_US: f64 = 6.6;

/// An all-gather (gathered output `S`) or reduce-scatter (input `S`) from the all-reduce of `S`
/// on the same ranks, µs. NCCL's ring all-reduce is a reduce-scatter then an all-gather: each
/// moves `S (n-1)/n` per rank in `n-1` steps, the all-reduce `2(n-1)` steps, and NCCL's model
/// (`tuning.cc` `ncclTopoTuneModel`: latency `baseLat + nsteps × hwLat`, the same bus bandwidth)
/// makes one half `(t_allreduce + baseLat) / 2`. Checked on the bare-metal box, where all three
/// are measured (NCCL 2.29.2): at 8 GPUs the measured all-gather / reduce-scatter are 0.91–1.12×
/// this from 512 B to 32 MiB, at 4 GPUs 0.92–1.08×. Only the all-reduce is published for the
/// tuned state, so its halves are this.
pub fn ring_half_us(all_reduce_us: f64) -> f64 {
    (all_reduce_us + RING_BASE_LL_US) / 2.0
}

/// The tuned bare-metal box: [`pcie::baremetal`] with the published tuned all-reduce curves.
pub fn preset(m: &Measured, protocols: Protocols) -> MachineProfile {
    let mut p = pcie::baremetal(m);
    let (eight, proto, label) = match protocols {
        Protocols::NcclChoice => (
            &BUSBW_8GPU_BASELINE,
            "default",
            "NCCL's own protocol choice",
        ),
        Protocols::Ll128 => (
            &BUSBW_8GPU_LL128,
            "LL,LL128,Simple",
            "LL128 enabled (NCCL_PROTO=LL,LL128,Simple and a tuner that uses it from 448 KiB to 3 MiB)",
        ),
        Protocols::Simple => (
            &BUSBW_8GPU_BASELINE,
            "Simple",
            "Simple alone (NCCL_PROTO=Simple): the Baseline column's Simple points from 4 MiB up, \
             below them NCCL's ring cost form (tuning.cc ncclTopoGetAlgoTime: latency + bytes / \
             Simple's full bandwidth) through those two points (50 us + 43.4 GB/s busbw at 8 GPUs, \
             30 us + 48.2 GB/s at 4; NCCL's own tuner constants say 88.2 / 42.6 us)",
        ),
    };
    let time = |points: &[(u64, f64)], n: u32, b: u64| match protocols {
        Protocols::Simple => simple_time_us(points, n, b),
        _ => time_us(points, n, b),
    };
    let env = BTreeMap::from([
        ("NCCL_P2P_LEVEL".to_string(), "SYS".to_string()),
        ("NCCL_PROTO".to_string(), proto.to_string()),
    ]);
    p.collectives
        .retain(|c| !(RING_HALVES.contains(&c.op) && matches!(c.devices.len(), 4 | 8)));
    for (n, points, class) in [
        (4u32, &BUSBW_4GPU, LinkClass::NODE),
        (8, eight, LinkClass::SYS),
    ] {
        let mut c = curve(CollectiveOp::AllReduce, (0..n).collect(), class, |b| {
            time(points, n, b)
        });
        c.nccl_env = env.clone();
        p.collectives.push(c);
        for op in [CollectiveOp::AllGather, CollectiveOp::ReduceScatter] {
            let mut c = curve(op, (0..n).collect(), class, |b| {
                ring_half_us(time(points, n, b))
            });
            c.nccl_env = env.clone();
            p.collectives.push(c);
        }
    }
    p.provenance.source = Some(format!(
        "{SOURCE} | {}",
        p.provenance.source.as_deref().unwrap_or_default()
    ));
    let below = match protocols {
        Protocols::Simple => "below 4 MiB the Simple line described",
        _ => "below the first point (64 KiB at 8 GPUs, 8 KiB at 4) the first point's time",
    };
    p.provenance.notes.insert(
        0,
        format!(
            "Tuned NCCL, {label}: the 4- and 8-GPU all_reduce curves are the published busbw \
             points of a dual-socket Turin box with cross-socket P2P (NCCL_P2P_LEVEL=SYS), converted \
             with the nccl-tests formula (time = bytes * 2(n-1)/n / busbw), log-log interpolated; \
             {below}, above 16 MiB the 16 MiB busbw. The 4- and 8-GPU all_gather and \
             reduce_scatter curves are derived from those all_reduce curves by NCCL's ring \
             relation (t = (t_all_reduce + 6.6 us) / 2; within 0.91-1.12x of the measured curves on \
             the bare-metal box). All other curves are the bare-metal preset's (not published for \
             the tuned state)."
        ),
    );
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_points_come_back() {
        let t = time_us(&BUSBW_8GPU_LL128, 8, 1 << 20);
        // 1 MiB * 1.75 / 21.32 GB/s
        assert!((t - 1048576.0 * 1.75 / 21.32e3).abs() < 1e-6, "{t}");
        assert!(time_us(&BUSBW_8GPU_LL128, 8, 4096) == time_us(&BUSBW_8GPU_LL128, 8, 64 << 10));
        let big = time_us(&BUSBW_8GPU_BASELINE, 8, 64 << 20);
        assert!((big / time_us(&BUSBW_8GPU_BASELINE, 8, 16 << 20) - 4.0).abs() < 1e-9);
    }

    #[test]
    fn simple_is_the_measured_simple_line_below_4_mib() {
        for (points, n) in [(&BUSBW_8GPU_BASELINE, 8), (&BUSBW_4GPU, 4)] {
            for b in [4u64 << 20, 16 << 20] {
                assert_eq!(simple_time_us(points, n, b), time_us(points, n, b));
            }
            // Below the Simple points: slower than LL at 64 KiB (its latency), faster than LL at
            // 2 MiB (where LL sits near half of Simple's bandwidth), and increasing.
            assert!(simple_time_us(points, n, 64 << 10) > time_us(points, n, 64 << 10));
            assert!(simple_time_us(points, n, 1 << 10) < simple_time_us(points, n, 1 << 20));
        }
        let two_mib = 2 << 20;
        assert!(
            simple_time_us(&BUSBW_8GPU_BASELINE, 8, two_mib)
                < time_us(&BUSBW_8GPU_BASELINE, 8, two_mib)
        );
        // 8 GPUs: 50 µs latency through the 4 and 16 MiB points.
        let lat = simple_time_us(&BUSBW_8GPU_BASELINE, 8, 0);
        assert!((49.0..51.0).contains(&lat), "{lat}");
    }

    #[test]
    fn ring_halves_follow_the_all_reduce() {
        // 64 KiB at 8 GPUs: the published 23.36 µs all-reduce, half of it plus half a base latency
        let ar = time_us(&BUSBW_8GPU_BASELINE, 8, 64 << 10);
        assert!((ring_half_us(ar) - (ar / 2.0 + 3.3)).abs() < 1e-9);
        assert!(ring_half_us(ar) < ar);
    }
}
