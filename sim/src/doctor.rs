//! What limits a running server, from its own log: the highest-load steady decode samples of a
//! run, costed at the load the log shows, say whether the step is bound by the host launching
//! kernels (eager mode), by the KV pool (requests wait for cache), by communication, or by the
//! GPU's own work, with the numbers and the SGLang flags to try. Each verdict is the cost model's
//! step at the logged `#running-req` and `#token` (so its calibration, if given, applies), not a
//! rule of thumb.

use crate::cost::steady::logged_step_s;
use crate::cost::{IterationBatch, IterationModel};
use crate::options::ServerOptions;
use crate::server_log::DecodeSample;
use serde::Serialize;

/// Share of the KV pool in use above which the pool is what bounds the server.
const KV_FULL_USAGE: f64 = 0.9;
/// Share of the step spent in collectives above which communication is named a bound.
const COMM_BOUND_SHARE: f64 = 0.4;

/// What bounds the server, one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundKind {
    /// The host issuing every kernel of an eager step.
    CpuLaunch,
    /// The KV pool: requests wait for cache.
    KvPool,
    /// Collectives (all-reduce, all-to-all) take most of the step.
    Communication,
    /// The GPU's own work (weights, KV reads, compute).
    Gpu,
}

/// One finding, with its numbers and what to change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    pub kind: BoundKind,
    /// The finding in one sentence with its numbers.
    pub finding: String,
    /// SGLang flags to try, each with what the model predicts for it.
    pub try_flags: Vec<String>,
}

/// The load a diagnosis is made at: the most requests the log shows running in steady decode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub running: u32,
    pub context_tokens: u32,
    /// Highest `token usage` the log printed at that load.
    pub token_usage: Option<f64>,
}

impl Load {
    /// The highest steady load of `samples` (reporting ranks only); `None` without one.
    pub fn of<'a>(samples: impl Iterator<Item = &'a DecodeSample>) -> Option<Load> {
        let steady: Vec<&DecodeSample> = samples.filter(|s| s.steady && s.running > 0).collect();
        let running = steady.iter().map(|s| s.running).max()?;
        let at: Vec<&&DecodeSample> = steady.iter().filter(|s| s.running == running).collect();
        let ctx: Vec<f64> = at.iter().map(|s| s.context_per_request).collect();
        Some(Load {
            running,
            context_tokens: models::stats::median(&ctx)?.round().max(1.0) as u32,
            token_usage: at.iter().filter_map(|s| s.token_usage).reduce(f64::max),
        })
    }
}

/// What limits the server of `model` (built with the run's options `opts`) at `load`; `graphs`,
/// the same layout with CUDA graphs on, prices the eager step's alternative.
pub fn diagnose(
    model: &dyn IterationModel,
    opts: &ServerOptions,
    graphs: Option<&dyn IterationModel>,
    load: Load,
) -> Vec<Limit> {
    let batch = IterationBatch {
        decode_context_tokens: vec![load.context_tokens; load.running as usize],
        prefill: Vec::new(),
    };
    let cost = model.iteration(&batch);
    let step_s = logged_step_s(model, load.running, load.context_tokens);
    let gpu_s = cost.stage_gpu_s.iter().copied().fold(0.0, f64::max);
    let mut limits = Vec::new();
    let eager = opts.disable_cuda_graph || load.running > opts.cuda_graph_max_bs;
    if eager && cost.cpu_s >= gpu_s {
        let graph_s = graphs.map(|g| logged_step_s(g, load.running, load.context_tokens));
        let mut try_flags = Vec::new();
        if let Some(g) = graph_s {
            let flag = if opts.disable_cuda_graph {
                "drop --disable-cuda-graph".to_string()
            } else {
                format!("--cuda-graph-max-bs {}", load.running.next_power_of_two())
            };
            try_flags.push(format!(
                "{flag}: {:.1} ms per step predicted, {:.2}× the decode throughput",
                g * 1e3,
                step_s / g
            ));
        }
        limits.push(Limit {
            kind: BoundKind::CpuLaunch,
            finding: format!(
                "CPU-bound (eager): at {} running requests the host needs {:.1} ms per step to launch {:.0} kernels and schedule, longer than the GPU's {:.1} ms of work; the step takes {:.1} ms",
                load.running,
                cost.cpu_s * 1e3,
                cost.eager_launches,
                gpu_s * 1e3,
                step_s * 1e3
            ),
            try_flags,
        });
    }
    let plan = model.memory();
    if let Some(u) = load.token_usage.filter(|&u| u >= KV_FULL_USAGE) {
        let per_request = load.context_tokens.max(1) as u64;
        limits.push(Limit {
            kind: BoundKind::KvPool,
            finding: format!(
                "KV-bound: the pool was {:.0}% full at {} running requests; its {} tokens hold about {} requests of {} tokens",
                u * 100.0,
                load.running,
                plan.kv_tokens,
                plan.kv_tokens / per_request,
                per_request
            ),
            try_flags: vec![
                format!(
                    "--mem-fraction-static above {} (the static budget is {:.1} GB per GPU; the rest holds SGLang's reserves)",
                    crate::cost::memory::shown_fraction(opts.mem_fraction_static),
                    plan.static_budget_bytes as f64 / 1e9
                ),
                "--kv-cache-dtype fp8_e4m3 (half the bytes per cached token of bf16)".into(),
                "a smaller --cuda-graph-max-bs or --chunked-prefill-size (less reserve beside the pool)".into(),
                "more GPUs per replica (--tp, --pp-size): the weights per GPU shrink, the pool grows".into(),
            ],
        });
    }
    let comm = cost.breakdown.comm_s();
    let total = cost.breakdown.total_s().max(1e-12);
    if comm / total >= COMM_BOUND_SHARE {
        limits.push(Limit {
            kind: BoundKind::Communication,
            finding: format!(
                "communication-bound: collectives take {:.1} of the {:.1} ms GPU step ({:.0}%)",
                comm * 1e3,
                total * 1e3,
                100.0 * comm / total
            ),
            try_flags: vec![
                "fewer GPUs per all-reduce (--tp 4 --pp-size 2)".into(),
                "check that P2P works between the GPUs (`probe run`): a host bounce multiplies every all-reduce".into(),
            ],
        });
    }
    if limits.is_empty() {
        limits.push(Limit {
            kind: BoundKind::Gpu,
            finding: format!(
                "GPU-bound: at {} running requests the {:.1} ms step is the GPU's own work (weights {:.1} ms, KV reads {:.1} ms)",
                load.running,
                step_s * 1e3,
                cost.breakdown.weight_read_s * 1e3,
                cost.breakdown.kv_read_s * 1e3
            ),
            try_flags: vec!["more requests per step (--max-running-requests, a higher client concurrency) while the pool allows".into()],
        });
    }
    limits
}
