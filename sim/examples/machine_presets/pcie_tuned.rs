//! The bare-metal 8× RTX PRO 6000 box with NCCL tuned the way the rtx6kpro community runs it
//! (cross-socket P2P allowed, channels and topology corrected), in two protocol states: NCCL's own
//! protocol choice (`-nccl-tuned`), and LL128 enabled on PCIe (`-nccl-ll128`: `NCCL_PROTO=LL,LL128,Simple`
//! with a tuner that picks LL128 between LL and Simple).
//!
//! Why a separate box: the shared bare-metal curves (aiconfigurator's collection host) reach
//! ~24 GB/s all-reduce busbw at 8 GPUs, which is NCCL's default on a dual-socket AMD host (2
//! channels, the AMD_BW = 16 GB/s topology estimate): the wiki measured 22.2 GB/s there before
//! tuning and 37.6–41 GB/s after. A record that states `NCCL_P2P_LEVEL=SYS` or an explicit
//! `NCCL_PROTO` ran the tuned state. Only the 4- and 8-GPU all-reduce curves are published for it;
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
    };
    let env = BTreeMap::from([
        ("NCCL_P2P_LEVEL".to_string(), "SYS".to_string()),
        ("NCCL_PROTO".to_string(), proto.to_string()),
    ]);
    p.collectives
        .retain(|c| !(c.op == CollectiveOp::AllReduce && matches!(c.devices.len(), 4 | 8)));
    for (n, points, class) in [
        (4u32, &BUSBW_4GPU, LinkClass::NODE),
        (8, eight, LinkClass::SYS),
    ] {
        let mut c = curve(CollectiveOp::AllReduce, (0..n).collect(), class, |b| {
            time_us(points, n, b)
        });
        c.nccl_env = env.clone();
        p.collectives.push(c);
    }
    p.provenance.source = Some(format!(
        "{SOURCE} | {}",
        p.provenance.source.as_deref().unwrap_or_default()
    ));
    p.provenance.notes.insert(
        0,
        format!(
            "Tuned NCCL, {label}: the 4- and 8-GPU all_reduce curves are the published busbw \
             points of a dual-socket Turin box with cross-socket P2P (NCCL_P2P_LEVEL=SYS), converted \
             with the nccl-tests formula (time = bytes * 2(n-1)/n / busbw), log-log interpolated; \
             below the first point (64 KiB at 8 GPUs, 8 KiB at 4) the first point's time, above \
             16 MiB the 16 MiB busbw. All other curves are the bare-metal preset's (not published \
             for the tuned state)."
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
}
