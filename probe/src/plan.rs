//! What a `probe run` measures and how hard: the validated form of the CLI flags.
//!
//! Durations (model and evidence in [`crate::estimate`]): `--quick` took 3.6–3.9 s on 1× H200
//! and 4.1–4.9 s on 2× H200 (`profiles/h200-x1-quick.json`, `profiles/h200-x2-quick.json`); priced for
//! the user's 8-GPU two-socket VM with pessimistic speeds (2 GB/s host bounce, 3 GB/s NCCL busbw,
//! 50 µs per small op) it is ≈ 24 s (≈ 16 s at H200 speeds). What keeps it there: one P2P pair
//! per (link class, NUMA pair) over every size, the rest at the largest only (`p2p_sample`);
//! buffers allocated once per run, not per pair; 4 MiB data checks; pageable copies once per
//! NUMA node; GEMM on one GPU; NCCL sizes up to 64 MiB, all groups in one worker process, and
//! result checks that read back regions, not whole buffers. A full run took 12.6–14.1 s on 1×
//! H200 and 44.9–50.2 s on 2×; on the 8-GPU VM it is ≈ 8.5 min at H200 speeds and ≈ 33 min priced
//! pessimistically (56 pairs × every size × both directions through the host bounce, and three
//! NCCL environments over groups of 2, 4 and 8).

use crate::error::{ProbeError, Result};

/// One group of measurements `--only` can select.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// GPUs, links, versions, hypervisor.
    Inventory,
    /// Host ↔ device copies.
    Host,
    /// On-device copy bandwidth.
    Device,
    /// GPU pair transfers.
    P2p,
    /// NCCL collectives.
    Nccl,
    /// cuBLASLt GEMM throughput.
    Gemm,
    /// Kernel-launch floors: a CUDA graph's per-node time and an eager launch's host cost.
    Launch,
}

impl Step {
    /// Every step in run order.
    pub const ALL: [Step; 7] = [
        Step::Inventory,
        Step::Host,
        Step::Device,
        Step::P2p,
        Step::Nccl,
        Step::Gemm,
        Step::Launch,
    ];

    /// The `--only` spelling.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Inventory => "inventory",
            Step::Host => "host",
            Step::Device => "device",
            Step::P2p => "p2p",
            Step::Nccl => "nccl",
            Step::Gemm => "gemm",
            Step::Launch => "launch",
        }
    }

    /// Parses one `--only` item.
    pub fn parse(s: &str) -> Result<Step> {
        Step::ALL
            .into_iter()
            .find(|st| st.name() == s.trim())
            .ok_or_else(|| {
                ProbeError::Invalid(format!(
                    "unknown step `{s}` in --only (choose from {})",
                    Step::ALL.map(|s| s.name()).join(",")
                ))
            })
    }
}

/// How many times each figure is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Repeats {
    /// Untimed runs before the first sample.
    pub warmup: u32,
    /// Timed samples; each sample is one or more back-to-back operations.
    pub samples: u32,
    /// Bytes one sample should move at least, so small copies are timed in batches.
    pub min_bytes_per_sample: u64,
    /// Most operations in one sample.
    pub max_reps: u32,
}

impl Repeats {
    /// Operations per sample for a transfer of `bytes`.
    pub fn reps_for(&self, bytes: u64) -> u32 {
        (self.min_bytes_per_sample.div_ceil(bytes.max(1)) as u32).clamp(1, self.max_reps)
    }
}

/// A validated plan for `probe run`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    /// CUDA device indices to measure; `None` = all visible.
    pub gpus: Option<Vec<u32>>,
    /// Steps to run, in order.
    pub steps: Vec<Step>,
    /// Whether this is the `--quick` plan.
    pub quick: bool,
    /// Host↔device copy size.
    pub host_bytes: u64,
    /// Whether pageable host copies are measured on every GPU or, for `--quick`, on the first
    /// GPU of each NUMA node (a pageable copy is limited by the CPU's staging memcpy, which the
    /// GPUs of one node share; pinned copies are still measured on every GPU).
    pub host_pageable_all_gpus: bool,
    /// Device-to-device copy size.
    pub device_copy_bytes: u64,
    /// P2P message sizes.
    pub p2p_sizes: Vec<u64>,
    /// Whether P2P also runs both directions at once (full runs only: it doubles the pair time).
    pub p2p_bidirectional: bool,
    /// `--quick`: only one ordered pair per distinct (link class, source NUMA node, destination
    /// NUMA node) gets every size of `p2p_sizes`; the other pairs get latency, the data check and
    /// bandwidth at the largest size only (see `p2p_sample`). Full runs measure every pair fully.
    pub p2p_sample_pairs: bool,
    /// Bytes of the data check per pair and mode (fresh pattern A → B, read back through B):
    /// the largest size in full runs, 4 MiB in `--quick` ones (a private mirror fails at any
    /// size; the extra megabytes only cost time).
    pub p2p_check_bytes: u64,
    /// Whether GEMMs run on every GPU or, for `--quick`, on the first one only.
    pub gemm_all_gpus: bool,
    /// NCCL message sizes (nccl-tests' `size` column).
    pub nccl_sizes: Vec<u64>,
    /// Seconds one NCCL group may take before it is aborted and recorded as `hang`.
    pub nccl_timeout_s: f64,
    /// Whether NCCL batches are released behind a gate (see `nccl::gate`); `false` only for the
    /// hidden `--nccl-ungated` comparison.
    pub nccl_gated: bool,
    /// Full runs: also run `NCCL_P2P_LEVEL=SYS` when a group crosses links (PHB, NODE, SYS)
    /// over which NCCL's default (P2P up to PXB) does not use P2P — the two-socket PCIe case.
    pub nccl_p2p_level_variant: bool,
    /// NCCL environment variants to run besides the defaults (each in its own child process).
    pub nccl_env_variants: Vec<Vec<(String, String)>>,
    /// GEMM token counts M for decode shapes against the `decode_weight` matrix.
    pub gemm_decode_m: Vec<u64>,
    /// Weight shape (K, N) of the decode GEMMs (DeepSeek V3's 7168 × 18432 MLP).
    pub decode_weight: (u64, u64),
    /// Square GEMM size.
    pub gemm_square: u64,
    /// Kernels in one timed launch-floor chain (graph nodes, or eager launches), the same in
    /// `--quick` (a chain of 512 empty kernels is about a millisecond of GPU time).
    pub launch_chain_length: u32,
    /// The tiny GEMM of the launch step as (M tokens, N, K): one token row against a 256 × 256
    /// bf16 weight, a decode-sized product whose time is all floor.
    pub launch_gemm: (u64, u64, u64),
    /// Repeats for bandwidth figures.
    pub repeats: Repeats,
    /// `--no-peer-access`: never enable peer access between GPUs, so every pair is measured
    /// only as host-staged copies — the path a VM without P2P takes on real hardware.
    pub no_peer_access: bool,
}

/// Pair evidence written when `--no-peer-access` kept peer access off.
pub const NO_PEER_ACCESS_EVIDENCE: &str = "peer access disabled by --no-peer-access";

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

impl RunPlan {
    /// The plan for the given flags.
    pub fn new(gpus: Option<Vec<u32>>, only: Option<Vec<Step>>, quick: bool) -> RunPlan {
        let mut steps = only.unwrap_or_else(|| Step::ALL.to_vec());
        steps.sort();
        steps.dedup();
        let (p2p_sizes, nccl_sizes, decode_m, repeats, variants) = if quick {
            (
                vec![64 * KIB, 16 * MIB],
                vec![8, KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB],
                vec![1, 64],
                Repeats {
                    warmup: 2,
                    samples: 5,
                    min_bytes_per_sample: 16 * MIB,
                    max_reps: 20,
                },
                Vec::new(),
            )
        } else {
            (
                crate::stats::geometric_sizes(4 * KIB, 256 * MIB, 2),
                crate::stats::geometric_sizes(8, 1024 * MIB, 2),
                vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
                Repeats {
                    warmup: 3,
                    samples: 15,
                    min_bytes_per_sample: 64 * MIB,
                    max_reps: 50,
                },
                vec![vec![("NCCL_P2P_DISABLE".to_string(), "1".to_string())]],
            )
        };
        RunPlan {
            gpus,
            steps,
            quick,
            host_bytes: if quick { 64 * MIB } else { 256 * MIB },
            host_pageable_all_gpus: !quick,
            device_copy_bytes: if quick { 128 * MIB } else { 1024 * MIB },
            p2p_sizes,
            p2p_bidirectional: !quick,
            p2p_sample_pairs: quick,
            p2p_check_bytes: if quick { 4 * MIB } else { 256 * MIB },
            gemm_all_gpus: !quick,
            nccl_sizes,
            nccl_timeout_s: if quick { 20.0 } else { 120.0 },
            nccl_gated: true,
            nccl_p2p_level_variant: !quick,
            nccl_env_variants: variants,
            gemm_decode_m: decode_m,
            decode_weight: (7168, 18432),
            gemm_square: 8192,
            launch_chain_length: 512,
            launch_gemm: (1, 256, 256),
            repeats,
            no_peer_access: false,
        }
    }

    /// P2P sizes for one pair: every size for a sampled pair (or in a full run), only the largest
    /// for the other pairs of a `--quick` run.
    pub fn p2p_sizes_for(&self, sampled: bool) -> Vec<u64> {
        if sampled || !self.p2p_sample_pairs {
            return self.p2p_sizes.clone();
        }
        self.p2p_sizes.iter().max().copied().into_iter().collect()
    }

    /// Whether `step` is part of this plan.
    pub fn has(&self, step: Step) -> bool {
        self.steps.contains(&step)
    }
}

/// Parses `--gpus 0,1,2`.
pub fn parse_gpu_list(s: &str) -> Result<Vec<u32>> {
    let mut v = Vec::new();
    for item in s.split(',').filter(|x| !x.trim().is_empty()) {
        let n: u32 = item.trim().parse().map_err(|_| {
            ProbeError::Invalid(format!(
                "--gpus: `{item}` is not a GPU index (e.g. --gpus 0,1,2,3)"
            ))
        })?;
        if v.contains(&n) {
            return Err(ProbeError::Invalid(format!("--gpus: GPU {n} listed twice")));
        }
        v.push(n);
    }
    if v.is_empty() {
        return Err(ProbeError::Invalid("--gpus: empty list".into()));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_parses_and_orders_steps() {
        let steps: Vec<Step> = "gemm,host"
            .split(',')
            .map(|s| Step::parse(s).unwrap())
            .collect();
        let p = RunPlan::new(None, Some(steps), true);
        assert_eq!(p.steps, vec![Step::Host, Step::Gemm]);
        assert!(Step::parse("bogus").is_err());
    }

    #[test]
    fn gpu_list_rejects_duplicates_and_junk() {
        assert_eq!(parse_gpu_list("0,2,3").unwrap(), vec![0, 2, 3]);
        assert!(parse_gpu_list("0,0").is_err());
        assert!(parse_gpu_list("a").is_err());
    }

    #[test]
    fn reps_batch_small_copies() {
        let r = RunPlan::new(None, None, false).repeats;
        assert_eq!(r.reps_for(4096), 50);
        assert_eq!(r.reps_for(256 * MIB), 1);
    }
}
