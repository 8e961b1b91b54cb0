//! Latency floors and CPU costs of the kernels one engine step launches.
//!
//! Bytes and FLOPs do not see a kernel's fixed cost: its launch (or graph-node) latency, ramp-up
//! and tail. A one-token decode step of a large MoE model is ~30 kernels per layer, so at one
//! stream these floors, not bandwidth, are most of the step. Three kinds of floor:
//! - weight GEMMs and the fused MoE: the latency intercept of the SGLang kernel tables
//!   (`sim::efficiency`, `floor_us` per curve), inside [`super::kernel::KernelCurve::time`];
//! - every other kernel (norms, rotary, activations, quantize, gates, KV stores, decode attention
//!   at short context, the DSA top-k): [`Floors::small_kernel_s`], from the machine profile's
//!   `probe run --only launch` (the tiny-GEMM graph node: a kernel that really reads memory),
//!   else [`DEFAULT_SMALL_KERNEL_S`];
//! - the CPU: [`CpuCosts`], per kernel launched eagerly (`--disable-cuda-graph`), per graph replay,
//!   per scheduler turn and per running request.

use crate::machine::Machine;
use models::profile::{LaunchKernel, LaunchKind};
use serde::{Deserialize, Serialize};

/// GPU time of one small kernel when nothing was measured: ≈ 2–3 µs of execution for a minimal
/// real kernel plus ≈ 0.5–1 µs per CUDA-graph node (NVIDIA, "Getting Started with CUDA Graphs",
/// 2019: a 2.9 µs kernel costs 3.4 µs per node inside a graph). Consistent with what was measured
/// on the lent H200 (`probe/profiles/h200-x1.small-kernels.torch.json`, PyTorch kernels replayed
/// in a CUDA graph, one token of a 7168-wide layer): 1.2 µs for a bare residual add, 2.5–3.1 µs
/// for two-kernel SiLU-and-mul, rotary mul-add and fp8 quantize, 5.7 µs for the router GEMV; and
/// with the probe's tiny-GEMM node (2.36 µs) + [`REAL_KERNEL_EXTRA_S`] = 3.36 µs.
pub const DEFAULT_SMALL_KERNEL_S: f64 = 3.4e-6;
/// What a layer's small kernel costs beyond the probe's tiny GEMM (one 256×256 bf16 tile): the
/// row reduction and one more dependent DRAM round trip of a norm, rotary or quantize kernel.
pub const REAL_KERNEL_EXTRA_S: f64 = 1.0e-6;
/// Host time of one raw `cudaLaunchKernel` when nothing was measured (≈ 2–5 µs on current CPUs).
pub const DEFAULT_RAW_LAUNCH_S: f64 = 3.5e-6;
/// Host time PyTorch adds to each eager op launched from Python (dispatcher, tensor metadata,
/// Python binding): ≈ 10 µs ("Making Deep Learning Go Brrrr From First Principles", H. He, 2022:
/// eager PyTorch runs on the order of 100k small ops per second). SGLang's own Python per layer
/// comes on top: that is what calibration on a server log scales ([`super::Knobs::cpu_scale`]).
pub const FRAMEWORK_PER_OP_S: f64 = 10e-6;
/// Replaying a captured decode graph: one `cudaGraphLaunch` plus input copies, ≈ 50 µs.
pub const GRAPH_REPLAY_S: f64 = 50e-6;
/// One scheduler turn without requests (receive, build the batch, prepare inputs, hand results
/// on): ≈ 1 ms of Python in SGLang's event loop.
pub const SCHEDULER_TURN_S: f64 = 1.0e-3;
/// Scheduler time per running request per turn (its slot of the batch, stop checks, output
/// streaming): ≈ 10 µs.
pub const SCHEDULER_PER_REQUEST_S: f64 = 10e-6;

/// Small-kernel floor of one machine and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floors {
    /// GPU time of one small kernel (see the module docs), seconds.
    pub small_kernel_s: f64,
    /// Where the figure came from.
    pub source: String,
}

impl Floors {
    /// The machine's measured small-kernel floor (median over GPUs of the tiny-GEMM graph node,
    /// else of the empty-kernel node plus one DRAM round trip), else the default.
    pub fn of(machine: &Machine) -> Floors {
        let launch = &machine.profile.launch;
        let median_of = |kernel: LaunchKernel| {
            let v: Vec<f64> = launch
                .iter()
                .filter(|m| m.kind == LaunchKind::GraphNode && m.kernel == kernel)
                .map(|m| m.per_kernel_us.median)
                .filter(|v| v.is_finite() && *v > 0.0)
                .collect();
            models::stats::median_high(&v)
        };
        if let Some(us) = median_of(LaunchKernel::TinyGemm) {
            return Floors {
                small_kernel_s: us * 1e-6 + REAL_KERNEL_EXTRA_S,
                source: format!(
                    "measured: tiny-GEMM CUDA-graph node {us:.2} µs (probe) + {:.1} µs for a real kernel's reduction",
                    REAL_KERNEL_EXTRA_S * 1e6
                ),
            };
        }
        if let Some(us) = median_of(LaunchKernel::Empty) {
            // an empty node does no memory access: add the tiny GEMM's own work (≈ 1.85 µs on
            // the H200: 2.36 − 0.51) and a real kernel's extra
            let s = us * 1e-6 + 1.85e-6 + REAL_KERNEL_EXTRA_S;
            return Floors {
                small_kernel_s: s,
                source: format!(
                    "measured: empty-kernel CUDA-graph node {us:.2} µs (probe) + 2.85 µs of memory work"
                ),
            };
        }
        Floors {
            small_kernel_s: DEFAULT_SMALL_KERNEL_S,
            source: format!(
                "assumed: {:.1} µs per small kernel (not measured; `probe run --only launch` measures it)",
                DEFAULT_SMALL_KERNEL_S * 1e6
            ),
        }
    }
}

/// CPU costs of one engine step, before calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuCosts {
    /// Host time per kernel launched eagerly: raw launch + [`FRAMEWORK_PER_OP_S`], seconds.
    pub per_launch_s: f64,
    /// Host time of one CUDA-graph replay, seconds.
    pub graph_replay_s: f64,
    /// Scheduler time per turn, seconds.
    pub scheduler_turn_s: f64,
    /// Scheduler time per running request per turn, seconds.
    pub per_request_s: f64,
    /// Where the per-launch figure came from.
    pub source: String,
}

impl CpuCosts {
    /// The machine's CPU costs: its measured eager launch (median over GPUs) or the default raw
    /// launch, plus the framework's per-op overhead; the scheduler's figures are priors.
    pub fn of(machine: &Machine) -> CpuCosts {
        let v: Vec<f64> = machine
            .profile
            .launch
            .iter()
            .filter(|m| m.kind == LaunchKind::EagerLaunch)
            .map(|m| m.per_kernel_us.median)
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let (raw_s, source) = match models::stats::median_high(&v) {
            Some(us) => (
                us * 1e-6,
                format!(
                    "measured raw launch {us:.2} µs (probe) + {:.0} µs PyTorch per op",
                    FRAMEWORK_PER_OP_S * 1e6
                ),
            ),
            None => (
                DEFAULT_RAW_LAUNCH_S,
                format!(
                    "assumed raw launch {:.1} µs + {:.0} µs PyTorch per op (not measured)",
                    DEFAULT_RAW_LAUNCH_S * 1e6,
                    FRAMEWORK_PER_OP_S * 1e6
                ),
            ),
        };
        CpuCosts {
            per_launch_s: raw_s + FRAMEWORK_PER_OP_S,
            graph_replay_s: GRAPH_REPLAY_S,
            scheduler_turn_s: SCHEDULER_TURN_S,
            per_request_s: SCHEDULER_PER_REQUEST_S,
            source,
        }
    }

    /// The raw launch part of [`Self::per_launch_s`]: the lower bound calibration may scale to.
    pub fn raw_launch_s(&self) -> f64 {
        (self.per_launch_s - FRAMEWORK_PER_OP_S).max(1e-6)
    }
}
