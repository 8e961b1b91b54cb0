//! How long a `probe run` takes: a model of sizes × iterations × per-op time plus the fixed work
//! each step does (allocating, pinning, filling and checking buffers, starting NCCL), so the
//! `--quick` target (under 30 s on 8 GPUs) and the full-run duration rest on arithmetic, not
//! hope. The fixed costs are fitted to the step seconds that 1× and 2× H200 runs record in their
//! profile notes (`profiles/h200-x1*.json`, `profiles/h200-x2*.json`); the tests check the model
//! reproduces those four runs, then price the user's 8-GPU box with pessimistic VM speeds.

use crate::nccl::{OPS, counts};
use crate::plan::RunPlan;

/// What the machine's links and units do, as the estimate needs them (GB = 1e9 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct MachineSpeeds {
    /// Pinned host ↔ device copy, one direction.
    pub host_pinned_gb_per_s: f64,
    /// Pageable host ↔ device copy, one direction.
    pub host_pageable_gb_per_s: f64,
    /// On-device copy (bytes counted once).
    pub d2d_gb_per_s: f64,
    /// Peer copy bandwidth; `None` when pairs have no P2P (host bounce only).
    pub peer_gb_per_s: Option<f64>,
    /// Latency of one small peer copy.
    pub peer_latency_us: f64,
    /// Host-staged pair copy (D2H then H2D).
    pub staged_gb_per_s: f64,
    /// Latency of one small host-staged copy.
    pub staged_latency_us: f64,
    /// NCCL bus bandwidth at large sizes.
    pub nccl_busbw_gb_per_s: f64,
    /// NCCL time of one small collective.
    pub nccl_latency_us: f64,
    /// bf16 GEMM throughput (fp8 is taken as twice it).
    pub gemm_bf16_tflops: f64,
}

impl MachineSpeeds {
    /// 2× H200 with NV18, as measured (`profiles/h200-x2.json`).
    pub fn h200_nvlink() -> MachineSpeeds {
        MachineSpeeds {
            host_pinned_gb_per_s: 55.0,
            host_pageable_gb_per_s: 8.0,
            d2d_gb_per_s: 2100.0,
            peer_gb_per_s: Some(390.0),
            peer_latency_us: 3.5,
            staged_gb_per_s: 27.5,
            staged_latency_us: 20.5,
            nccl_busbw_gb_per_s: 300.0,
            nccl_latency_us: 6.0,
            gemm_bf16_tflops: 790.0,
        }
    }

    /// The user's box priced pessimistically: 8 PCIe GPUs in a VM whose pairs bounce through
    /// host memory at 2 GB/s with 50 µs per small copy, NCCL at 3 GB/s busbw and 50 µs per small
    /// collective (the user reports ~1 GB/s for small messages), slower host copies than bare
    /// metal, and an RTX PRO 6000's GEMM rate.
    pub fn user_vm_pessimistic() -> MachineSpeeds {
        MachineSpeeds {
            host_pinned_gb_per_s: 20.0,
            host_pageable_gb_per_s: 4.0,
            d2d_gb_per_s: 700.0,
            peer_gb_per_s: None,
            peer_latency_us: 0.0,
            staged_gb_per_s: 2.0,
            staged_latency_us: 50.0,
            nccl_busbw_gb_per_s: 3.0,
            nccl_latency_us: 50.0,
            gemm_bf16_tflops: 400.0,
        }
    }
}

/// The machine's shape, as the plan will meet it.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineShape {
    /// GPUs measured.
    pub gpus: usize,
    /// NUMA nodes they sit on (pageable copies are measured once per node in `--quick`).
    pub numa_nodes: usize,
    /// Ordered pairs measured over every size (all pairs in a full run; see `p2p_sample`).
    pub full_pairs: usize,
    /// Ranks of each NCCL group (`nccl::choose_groups`).
    pub groups: Vec<usize>,
    /// Whether a group crosses PHB/NODE/SYS links (full runs then add `NCCL_P2P_LEVEL=SYS`).
    pub crosses_root_complex: bool,
}

/// Fixed work per step, fitted to 1× and 2× H200 runs (seconds; "per GB" = per GB of the
/// buffer the step allocates, fills and checks).
const INVENTORY_S: f64 = 0.4;
const INVENTORY_S_PER_GPU: f64 = 0.1;
const HOST_PINNED_SETUP_S_PER_GB: f64 = 0.65;
const HOST_PAGEABLE_SETUP_S_PER_GB: f64 = 1.95;
const HOST_AT_ONCE_SETUP_S_PER_GB: f64 = 1.0;
const DEVICE_SETUP_S_PER_GB: f64 = 0.75;
const P2P_SETUP_S: f64 = 0.05;
const P2P_BUFFER_S_PER_GB: f64 = 0.25;
const P2P_PAIR_S: f64 = 0.005;
const P2P_CHECK_S_PER_GB: f64 = 0.4;
/// Spawn, library loads and contexts, and teardown, of one worker process.
const NCCL_WORKER_START_S: f64 = 0.5;
const NCCL_WORKER_S_PER_GPU: f64 = 0.05;
const NCCL_INIT_S: f64 = 0.4;
const NCCL_INIT_S_PER_RANK: f64 = 0.15;
const NCCL_BUFFER_S_PER_GB_RANK: f64 = 0.22;
/// Host time to enqueue one collective, per rank (one thread launches every rank's op): the
/// slowest seen, 2× H200 full run with NVLink (13.7 s for ~73 K two-rank launches).
const NCCL_ENQUEUE_US_PER_RANK: f64 = 94.0;
/// One rank: NCCL short-circuits the collectives (6 µs) but not grouped send/recv (65 µs).
const NCCL_ENQUEUE_US_ONE_RANK: f64 = 30.0;
const NCCL_CHECK_S_PER_RANK_POINT: f64 = 0.0016;
/// cuBLASLt load and input generation, then per GPU and (dtype, shape): buffers, upload,
/// heuristic and check.
const GEMM_SETUP_S: f64 = 0.45;
const GEMM_SHAPE_S: f64 = 0.11;
/// Launch floors: NVRTC compile of the empty kernel, then per GPU the module load, the tiny
/// GEMM's setup and the graph captures (the timed chains themselves are milliseconds). 0.3 s on
/// 1× H200 in `--quick` (`profiles/h200-x1-quick.json`), 1.0 s alone (`--only launch`, which
/// also pays cuBLASLt's first load).
const LAUNCH_SETUP_S: f64 = 0.2;
const LAUNCH_S_PER_GPU: f64 = 0.1;

/// Seconds per step, in run order.
pub fn estimate_s(
    plan: &RunPlan,
    shape: &MachineShape,
    sp: &MachineSpeeds,
) -> Vec<(&'static str, f64)> {
    let r = plan.repeats;
    let runs = (r.warmup + r.samples) as f64;
    let gb = |bytes: u64| bytes as f64 / 1e9;
    let g = shape.gpus as f64;
    let mut out = vec![("inventory", INVENTORY_S + INVENTORY_S_PER_GPU * g)];

    // Host: H2D, D2H and both at once per GPU, pinned on all, pageable on some; then all at
    // once, with host memory taken to serve only two GPUs' worth (pessimistic).
    let hb = gb(plan.host_bytes);
    let pageable_gpus = if plan.host_pageable_all_gpus {
        g
    } else {
        shape.numa_nodes as f64
    };
    let mut host = g
        * (HOST_PINNED_SETUP_S_PER_GB * hb + runs * 3.0 * hb / sp.host_pinned_gb_per_s)
        + pageable_gpus
            * (HOST_PAGEABLE_SETUP_S_PER_GB * hb + runs * 3.0 * hb / sp.host_pageable_gb_per_s);
    if shape.gpus > 1 {
        host += g * HOST_AT_ONCE_SETUP_S_PER_GB * hb
            + runs * 3.0 * hb * g / (sp.host_pinned_gb_per_s * g.min(2.0));
    }
    out.push(("host", host));

    let db = gb(plan.device_copy_bytes);
    out.push((
        "device",
        g * (DEVICE_SETUP_S_PER_GB * db + runs * db / sp.d2d_gb_per_s),
    ));

    out.push(("p2p", p2p_s(plan, shape, sp)));
    out.push(("nccl", nccl_s(plan, shape, sp)));

    let gemm_gpus = if plan.gemm_all_gpus { g } else { 1.0 };
    let (k, n) = plan.decode_weight;
    let sq = plan.gemm_square as f64;
    let mut flops = 2.0 * sq * sq * sq;
    flops += plan
        .gemm_decode_m
        .iter()
        .map(|&m| 2.0 * (m * n * k) as f64)
        .sum::<f64>();
    // bf16, then fp8 at twice the rate; each shape runs ≥ 1 ms per sample (see `gemm`).
    let shapes = 2.0 * (1 + plan.gemm_decode_m.len()) as f64;
    let per_gpu = runs * (flops / (sp.gemm_bf16_tflops * 1e12)) * 1.5
        + runs * shapes * 1e-3
        + shapes * GEMM_SHAPE_S;
    out.push(("gemm", GEMM_SETUP_S + gemm_gpus * per_gpu));
    // Two kernels × (graph + eager) chains per GPU at up to ~3 µs per launch.
    let chains = 4.0 * runs * plan.launch_chain_length as f64 * 3e-6;
    out.push(("launch", LAUNCH_SETUP_S + g * (LAUNCH_S_PER_GPU + chains)));
    out
}

/// P2P: per ordered pair, per mode, per direction, every size's runs; latency batches; checks.
fn p2p_s(plan: &RunPlan, shape: &MachineShape, sp: &MachineSpeeds) -> f64 {
    let r = plan.repeats;
    let runs = (r.warmup + r.samples) as f64;
    let pairs = if shape.gpus == 1 {
        1
    } else {
        shape.gpus * (shape.gpus - 1)
    };
    let largest = plan.p2p_sizes.iter().copied().max().unwrap_or(0);
    let setup =
        P2P_SETUP_S + (2 * shape.gpus + 3) as f64 * largest as f64 / 1e9 * P2P_BUFFER_S_PER_GB;
    // (bandwidth, latency) of each mode the pair is measured in.
    let mut modes = vec![(sp.staged_gb_per_s, sp.staged_latency_us)];
    if let Some(peer) = sp
        .peer_gb_per_s
        .filter(|_| shape.gpus > 1 && !plan.no_peer_access)
    {
        modes.push((peer, sp.peer_latency_us));
        modes.push((peer, sp.peer_latency_us));
    }
    let dirs = if plan.p2p_bidirectional && shape.gpus > 1 {
        2.0
    } else {
        1.0
    };
    let sizes_s = |sizes: &[u64]| -> f64 {
        modes
            .iter()
            .map(|&(bw, lat)| {
                let sizes: f64 = sizes
                    .iter()
                    .map(|&s| {
                        let ops = r.warmup as f64 + (r.samples * r.reps_for(s)) as f64;
                        ops * (s as f64 / (bw * 1e9) + lat * 1e-6)
                    })
                    .sum();
                let check = plan.p2p_check_bytes.min(largest) as f64;
                dirs * sizes
                    + runs * 100.0 * lat * 1e-6
                    + check / 1e9 * P2P_CHECK_S_PER_GB
                    + check / (bw * 1e9)
            })
            .sum::<f64>()
            + P2P_PAIR_S
    };
    let full = shape.full_pairs.min(pairs);
    setup
        + full as f64 * sizes_s(&plan.p2p_sizes_for(true))
        + (pairs - full) as f64 * sizes_s(&plan.p2p_sizes_for(false))
}

/// NCCL: one worker per environment; per group its init, buffers and, per op and size, the
/// launches (host enqueue, then the gated GPU run) and the result check.
fn nccl_s(plan: &RunPlan, shape: &MachineShape, sp: &MachineSpeeds) -> f64 {
    let r = plan.repeats;
    let largest = plan.nccl_sizes.iter().copied().max().unwrap_or(8);
    let group_s = |ranks: usize| -> f64 {
        let n = ranks as f64;
        let mut s = NCCL_INIT_S + NCCL_INIT_S_PER_RANK * n;
        s += n * largest as f64 / 1e9 * NCCL_BUFFER_S_PER_GB_RANK;
        for op in OPS {
            for &size in &plan.nccl_sizes {
                let c = counts(op, size, ranks);
                let reps =
                    (r.min_bytes_per_sample.div_ceil(c.bytes.max(1)) as u32).clamp(1, r.max_reps);
                let launches = r.warmup as f64 + (r.samples * reps) as f64;
                let gpu = sp.nccl_latency_us * 1e-6
                    + c.bytes as f64 * op.busbw_factor(ranks as u32)
                        / (sp.nccl_busbw_gb_per_s * 1e9);
                let enqueue_us = if ranks == 1 {
                    NCCL_ENQUEUE_US_ONE_RANK
                } else {
                    NCCL_ENQUEUE_US_PER_RANK * n
                };
                s += launches * (enqueue_us * 1e-6 + gpu);
                s += n * NCCL_CHECK_S_PER_RANK_POINT;
            }
        }
        s
    };
    let level = plan.nccl_p2p_level_variant && shape.crosses_root_complex;
    let variants = 1 + plan.nccl_env_variants.len() + usize::from(level);
    let per_variant = NCCL_WORKER_START_S
        + NCCL_WORKER_S_PER_GPU * shape.gpus as f64
        + shape.groups.iter().map(|&k| group_s(k)).sum::<f64>();
    // Variants skip one-rank groups (nothing to switch).
    let multi = shape.groups.iter().any(|&k| k > 1);
    per_variant
        + if multi {
            (variants - 1) as f64 * per_variant
        } else {
            0.0
        }
}

/// Total seconds of an estimate.
pub fn total_s(steps: &[(&'static str, f64)]) -> f64 {
    steps.iter().map(|(_, s)| s).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine whose GPUs share one switch level (NVLink here); see `user_box` for PCIe.
    fn shape(gpus: usize, numa_nodes: usize, full_pairs: usize, groups: &[usize]) -> MachineShape {
        MachineShape {
            gpus,
            numa_nodes,
            full_pairs,
            groups: groups.to_vec(),
            crosses_root_complex: false,
        }
    }

    /// The user's box: 8 GPUs on two NUMA nodes (NODE inside a socket, SYS across), groups of
    /// 2, 4 and 8, `full_pairs` pairs over every size.
    fn user_box(full_pairs: usize) -> MachineShape {
        MachineShape {
            crosses_root_complex: true,
            ..shape(8, 2, full_pairs, &[2, 4, 8])
        }
    }

    fn show(steps: &[(&'static str, f64)]) -> String {
        steps
            .iter()
            .map(|(n, s)| format!("{n} {s:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The model against the runs it was fitted to (totals from the profiles' notes).
    #[test]
    fn reproduces_the_measured_h200_runs() {
        let h = MachineSpeeds::h200_nvlink();
        let quick = RunPlan::new(None, None, true);
        let full = RunPlan::new(None, None, false);
        // Two device calls on different machine instances: the fit's and the committed profiles'.
        for (plan, sh, measured) in [
            (&quick, shape(1, 1, 1, &[1]), 3.6),
            (&quick, shape(2, 1, 1, &[2]), 4.1),
            (&full, shape(1, 1, 1, &[1]), 12.6),
            (&full, shape(2, 1, 2, &[2]), 44.9),
            (&quick, shape(1, 1, 1, &[1]), 3.9),
            // The two calls with the launch step (0.3–0.4 s of each run).
            (&quick, shape(1, 1, 1, &[1]), 3.4),
            (&full, shape(1, 1, 1, &[1]), 13.2),
            (&quick, shape(2, 1, 1, &[2]), 4.6),
            (&full, shape(1, 1, 1, &[1]), 14.1),
            (&full, shape(2, 1, 2, &[2]), 50.2),
        ] {
            let est = estimate_s(plan, &sh, &h);
            let t = total_s(&est);
            assert!(
                (t / measured - 1.0).abs() < 0.25,
                "{} GPU(s), quick {}: model {t:.1} s vs measured {measured} s ({})",
                sh.gpus,
                plan.quick,
                show(&est)
            );
        }
    }

    /// The user's box: 8 GPUs on two NUMA nodes, NCCL groups of 2, 4 and 8, one P2P pair per
    /// (link class, NUMA pair) over every size (4 of 56), every link a slow host bounce.
    #[test]
    fn quick_on_the_users_8_gpu_vm_stays_under_30_s() {
        let plan = RunPlan::new(None, None, true);
        let est = estimate_s(&plan, &user_box(4), &MachineSpeeds::user_vm_pessimistic());
        let t = total_s(&est);
        assert!(t < 30.0, "quick on 8 GPUs: {t:.1} s ({})", show(&est));
        // The figure the docs quote (plan.rs, README).
        assert!((t - 24.3).abs() < 0.5, "{t:.2} s: update the docs");
        // Bare-metal-like speeds are faster still.
        let fast = total_s(&estimate_s(
            &plan,
            &user_box(4),
            &MachineSpeeds::h200_nvlink(),
        ));
        assert!(fast < t);
    }

    /// A full run on the same box: minutes, dominated by the 56 pairs (every size, both
    /// directions, through a slow host bounce) and NCCL's large sizes.
    #[test]
    fn full_run_on_the_users_8_gpu_vm() {
        let plan = RunPlan::new(None, None, false);
        let est = estimate_s(&plan, &user_box(56), &MachineSpeeds::user_vm_pessimistic());
        let t = total_s(&est);
        // The figures the docs quote: ~33 min priced pessimistically, ~8.5 min at H200 speeds
        // (three NCCL environments: defaults, NCCL_P2P_DISABLE=1, NCCL_P2P_LEVEL=SYS).
        assert!((t - 1951.0).abs() < 30.0, "{t:.0} s ({})", show(&est));
        let fast = total_s(&estimate_s(
            &plan,
            &user_box(56),
            &MachineSpeeds::h200_nvlink(),
        ));
        assert!((fast - 504.0).abs() < 10.0, "{fast:.0} s");
    }
}
