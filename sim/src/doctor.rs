//! What limits a running server, from its own log: the highest-load steady decode samples of a
//! run, costed at the load the log shows, say whether the step is bound by the host launching
//! kernels (eager mode), by the KV pool (requests wait for cache), by communication, or by the
//! GPU's own work, with the numbers and the SGLang flags to try. Each verdict is the cost model's
//! step at the logged `#running-req` and `#token` (so its calibration, if given, applies), not a
//! rule of thumb.

use crate::cost::steady::logged_step_s;
use crate::cost::{IterationBatch, IterationCost, IterationModel};
use crate::engine::{Engine, Knob};
use crate::options::ServerOptions;
use crate::server_log::{DecodeSample, PrefillSample};
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
    /// Pipeline micro-batches far from even, with what that costs (or saves) against an even split.
    PpImbalance,
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

/// A pipeline split is named when its largest micro-batch holds this many times an even share,
/// or when it costs at least [`PP_IMBALANCE_LOSS`] of the decode throughput.
const PP_UNEVEN_RATIO: f64 = 1.5;
/// Share of the decode throughput an uneven pipeline split must cost to be named by its cost.
const PP_IMBALANCE_LOSS: f64 = 0.05;

/// The load a diagnosis is made at: the most requests the log shows running in steady decode.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    pub running: u32,
    pub context_tokens: u32,
    /// Highest `token usage` the log printed at that load.
    pub token_usage: Option<f64>,
    /// Most requests the log shows waiting (`#queue-req`) at that load.
    pub queue: Option<u32>,
    /// Median prompt tokens per request of the run's prefill batches (new + cached per new seq).
    pub prompt_tokens: Option<f64>,
    /// The pool the log printed (`max_total_num_tokens`); the memory plan's otherwise.
    pub pool_tokens: Option<u64>,
    /// Under PP, the logged micro-batch split with the most requests in flight.
    pub pp_split: Option<PpSplit>,
    /// The largest decode-context-parallel size above the run's that its model and layout admit
    /// ([`crate::cost::dcp::largest_above`]), for a KV bound's remedies; `None`: none is.
    pub larger_dcp: Option<u32>,
    /// Median step the log measured at that load (`running × accept ÷ throughput`).
    pub logged_step_s: Option<f64>,
    /// The lightest steady load of the log beside it: (running, context per request, median
    /// logged step), when it differs from `running`.
    pub lightest: Option<(u32, u32, f64)>,
}

/// A logged step this far (either way) from the predicted one is said beside the verdict: the
/// bound named is the cost model's, and the log shows time it does not account for.
const STEP_MISS_RATIO: f64 = 1.25;

/// One round of a PP server's micro-batches as its log shows them: each `Decode batch` line of
/// the reporting rank is one micro-batch, so `pp` consecutive steady lines are one split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PpSplit {
    /// `#running-req` of each micro-batch.
    pub running: Vec<u32>,
    /// KV tokens per request over the split (`#token` summed over `#running-req` summed).
    pub context_tokens: u32,
}

impl PpSplit {
    /// The window of `pp` consecutive samples with the most requests (the most uneven among
    /// equals); `None` without PP or without a full window. Under PP consecutive lines alternate
    /// between micro-batches, so none is steady: pass every line of the reporting rank.
    pub fn of(samples: &[&DecodeSample], pp: u32) -> Option<PpSplit> {
        if pp < 2 {
            return None;
        }
        let steady: Vec<&&DecodeSample> = samples.iter().filter(|s| s.running > 0).collect();
        let spread = |w: &[&&DecodeSample]| {
            let r = w.iter().map(|s| s.running);
            r.clone().max().unwrap_or(0) - r.min().unwrap_or(0)
        };
        let best = steady
            .windows(pp as usize)
            .max_by_key(|w| (w.iter().map(|s| s.running).sum::<u32>(), spread(w)))?;
        let running: Vec<u32> = best.iter().map(|s| s.running).collect();
        let tokens: u64 = best.iter().map(|s| s.tokens_in_kv).sum();
        let total = running.iter().sum::<u32>().max(1);
        Some(PpSplit {
            running,
            context_tokens: (tokens / u64::from(total)).max(1) as u32,
        })
    }

    /// Requests in flight over the split.
    pub fn total(&self) -> u32 {
        self.running.iter().sum()
    }
}

impl Load {
    /// The highest steady load of `samples` (reporting ranks only); `None` without one.
    pub fn of<'a>(samples: impl Iterator<Item = &'a DecodeSample>) -> Option<Load> {
        let steady: Vec<&DecodeSample> = samples.filter(|s| s.steady && s.running > 0).collect();
        let running = steady.iter().map(|s| s.running).max()?;
        let at: Vec<&&DecodeSample> = steady.iter().filter(|s| s.running == running).collect();
        // the median context per request (whole tokens) and logged step of the samples at a load
        let medians = |n: u32| {
            let at = steady.iter().filter(|s| s.running == n);
            let ctx: Vec<f64> = at.clone().map(|s| s.context_per_request).collect();
            let steps: Vec<f64> = at.filter_map(|s| s.step_s).collect();
            let ctx = models::stats::median(&ctx).map(|c| c.round().max(1.0) as u32);
            (ctx, models::stats::median(&steps))
        };
        let (ctx, logged_step_s) = medians(running);
        let light = steady.iter().map(|s| s.running).min()?;
        let lightest = match medians(light) {
            (Some(c), Some(step)) if light < running => Some((light, c, step)),
            _ => None,
        };
        Some(Load {
            lightest,
            logged_step_s,
            running,
            context_tokens: ctx?,
            token_usage: at.iter().filter_map(|s| s.token_usage).reduce(f64::max),
            queue: at.iter().filter_map(|s| s.queue).max(),
            prompt_tokens: None,
            pool_tokens: None,
            pp_split: None,
            larger_dcp: None,
        })
    }

    /// The prompt length of `prefill` batches: median of (new + cached tokens) per new sequence.
    pub fn with_prompts<'a>(mut self, prefill: impl Iterator<Item = &'a PrefillSample>) -> Self {
        let per_seq: Vec<f64> = prefill
            .filter(|p| p.new_seq > 0)
            .map(|p| (p.new_tokens + p.cached_tokens) as f64 / f64::from(p.new_seq))
            .collect();
        self.prompt_tokens = models::stats::median(&per_seq);
        self
    }

    /// Requests in flight: the whole split under PP, else the load's own.
    fn in_flight(&self) -> u32 {
        self.pp_split.as_ref().map_or(self.running, PpSplit::total)
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
    // a speculative iteration is costed per generated token: its parts × the acceptance
    // length are the whole step the log measured
    let per_step = model.tokens_per_decode_step();
    let gpu_s = cost.stage_gpu_s.iter().copied().fold(0.0, f64::max) * per_step;
    let eager = opts.disable_cuda_graph || load.running > opts.cuda_graph_max_bs;
    let mut limits = Vec::new();
    if eager && cost.cpu_s * per_step >= gpu_s {
        limits.push(cpu_limit(
            &cost,
            opts,
            graphs,
            &load,
            (step_s, gpu_s, per_step),
        ));
    }
    // the log's own flat step names the host where the uncalibrated model does not; the
    // prediction's miss is then what the finding explains, not a caveat beside it
    let mut explained_by_log = false;
    if eager
        && limits.is_empty()
        && let Some(l) = flat_eager_step(model, opts, &load, (step_s, gpu_s), graphs)
    {
        limits.push(l);
        explained_by_log = true;
    }
    limits.extend(kv_limit(model, opts, &load));
    limits.extend(comm_limit(&cost, opts, per_step));
    if limits.is_empty() {
        limits.push(gpu_limit(&cost, opts, &load, step_s, per_step));
    }
    if !explained_by_log
        && let Some(logged) = load.logged_step_s.filter(|l| *l > 0.0 && step_s > 0.0)
        && (logged / step_s).max(step_s / logged) >= STEP_MISS_RATIO
        && let Some(first) = limits.first_mut()
    {
        first.finding.push_str(&format!(
            "; but the log's step there is {:.1} ms, {:.2}× this prediction: the bound is the cost model's, and the log shows time it does not account for",
            logged * 1e3,
            logged / step_s
        ));
    }
    // after the fallback: a split that costs nothing is a finding, not the bound
    limits.extend(load.pp_split.as_ref().and_then(|p| pp_imbalance(model, p)));
    limits
}

/// The host launching each kernel is the bound (eager mode, CPU time ≥ GPU time), with what the
/// CUDA-graph step would be where `graphs` prices it.
fn cpu_limit(
    cost: &IterationCost,
    opts: &ServerOptions,
    graphs: Option<&dyn IterationModel>,
    load: &Load,
    (step_s, gpu_s, per_step): (f64, f64, f64),
) -> Limit {
    let graph_s = graphs.map(|g| logged_step_s(g, load.running, load.context_tokens));
    let mut try_flags = Vec::new();
    if let Some(g) = graph_s {
        let flag = graph_flag(opts, load.running);
        try_flags.push(format!(
            "{flag}: {:.1} ms per step predicted, {:.2}× the decode throughput",
            g * 1e3,
            step_s / g
        ));
    }
    Limit {
        kind: BoundKind::CpuLaunch,
        finding: format!(
            "CPU-bound (eager): at {} running requests the host needs {:.1} ms per step to launch {:.0} kernels and schedule, longer than the GPU's {:.1} ms of work; the step takes {:.1} ms",
            load.running,
            cost.cpu_s * per_step * 1e3,
            cost.eager_launches,
            gpu_s * 1e3,
            step_s * 1e3
        ),
        try_flags,
    }
}

/// The KV pool is the bound: the log's usage near full, or the pool's arithmetic admitting fewer
/// requests than ran.
fn kv_limit(model: &dyn IterationModel, opts: &ServerOptions, load: &Load) -> Option<Limit> {
    let plan = model.memory();
    let pool = load.pool_tokens.unwrap_or(plan.kv_tokens);
    let usage = load.token_usage.filter(|&u| u >= KV_FULL_USAGE);
    let arithmetic = pool_admits(pool, load, opts);
    if usage.is_none() && arithmetic.is_none() {
        return None;
    }
    let per_request = load.context_tokens.max(1) as u64;
    let mut finding = match usage {
        Some(u) => format!(
            "KV-bound: the pool was {:.0}% full at {} running requests; its {} tokens hold about {} requests of {} tokens",
            u * 100.0,
            load.running,
            pool,
            pool / per_request,
            per_request
        ),
        None => "KV-bound".to_string(),
    };
    if let Some(a) = arithmetic {
        finding.push_str(&a);
    }
    Some(Limit {
        kind: BoundKind::KvPool,
        finding,
        try_flags: kv_flags(opts, plan, load.larger_dcp),
    })
}

/// Collectives are the bound when they take at least [`COMM_BOUND_SHARE`] of the GPU step.
fn comm_limit(cost: &IterationCost, opts: &ServerOptions, per_step: f64) -> Option<Limit> {
    let comm = cost.breakdown.comm_s();
    let total = cost.breakdown.total_s().max(1e-12);
    (comm / total >= COMM_BOUND_SHARE).then(|| Limit {
        kind: BoundKind::Communication,
        finding: format!(
            "communication-bound: collectives take {:.1} of the {:.1} ms GPU step ({:.0}%)",
            comm * per_step * 1e3,
            total * per_step * 1e3,
            100.0 * comm / total
        ),
        try_flags: vec![
            format!(
                "fewer GPUs per all-reduce ({})",
                opts.engine.rules().tp_pp_flags(4, 2)
            ),
            "check that P2P works between the GPUs (`probe run`): a host bounce multiplies every all-reduce".into(),
        ],
    })
}

/// Nothing else binds: the step is the GPU's own work.
fn gpu_limit(
    cost: &IterationCost,
    opts: &ServerOptions,
    load: &Load,
    step_s: f64,
    per_step: f64,
) -> Limit {
    Limit {
        kind: BoundKind::Gpu,
        finding: format!(
            "GPU-bound: at {} running requests the {:.1} ms step is the GPU's own work (weights {:.1} ms, KV reads {:.1} ms)",
            load.running,
            step_s * 1e3,
            cost.breakdown.weight_read_s * per_step * 1e3,
            cost.breakdown.kv_read_s * per_step * 1e3
        ),
        try_flags: vec![format!(
            "more requests per step ({}, a higher client concurrency) while the pool allows",
            opts.engine.rules().max_requests_flag()
        )],
    }
}

/// A logged eager step that stays within this share from the lightest to the heaviest load is
/// flat: a fixed per-step cost.
const FLAT_STEP_SHARE: f64 = 0.15;
/// ... while the load grew at least this many times and the predicted GPU work at least this share.
const FLAT_LOAD_RATIO: u32 = 4;
const FLAT_GPU_GROWTH: f64 = 0.3;

/// An eager server whose logged step does not grow with the batch while its GPU work does is
/// paying a fixed cost per step: the host issuing every kernel. The cost model (uncalibrated)
/// may put the host below the GPU; the log says otherwise, and `sim calibrate --server-log`
/// measures it. `step`: the predicted (whole, GPU) step at the heaviest load, as
/// [`diagnose`] costed it. `None` when the log does not show that.
fn flat_eager_step(
    model: &dyn IterationModel,
    opts: &ServerOptions,
    load: &Load,
    (step_s, g_heavy): (f64, f64),
    graphs: Option<&dyn IterationModel>,
) -> Option<Limit> {
    let (light, light_ctx, light_step) = load.lightest?;
    let heavy_step = load.logged_step_s?;
    let batch = IterationBatch {
        decode_context_tokens: vec![light_ctx; light as usize],
        prefill: Vec::new(),
    };
    let light_cost = model.iteration(&batch);
    let g_light =
        light_cost.stage_gpu_s.iter().copied().fold(0.0, f64::max) * model.tokens_per_decode_step();
    let flat = (heavy_step / light_step - 1.0).abs() <= FLAT_STEP_SHARE;
    if !(flat
        && load.running >= FLAT_LOAD_RATIO * light
        && g_heavy >= (1.0 + FLAT_GPU_GROWTH) * g_light)
    {
        return None;
    }
    let mut try_flags = vec![
        "`sim calibrate --server-log` on this log: it measures the host's time per kernel launch and prices the CUDA-graph step".to_string(),
    ];
    if let Some(g) = graphs {
        let graph_s = logged_step_s(g, load.running, load.context_tokens);
        try_flags.insert(
            0,
            format!(
                "{}: the GPU's {:.1} ms step predicted, up to {:.2}× the decode throughput",
                graph_flag(opts, load.running),
                graph_s * 1e3,
                heavy_step / graph_s
            ),
        );
    }
    Some(Limit {
        kind: BoundKind::CpuLaunch,
        finding: format!(
            "CPU-bound (eager), from the log: the step stays at {:.1}–{:.1} ms from {} to {} running requests while the GPU's predicted work grows from {:.1} to {:.1} ms: a fixed cost per step, the host launching each kernel (the uncalibrated model puts the step at {:.1} ms)",
            light_step.min(heavy_step) * 1e3,
            light_step.max(heavy_step) * 1e3,
            light,
            load.running,
            g_light * 1e3,
            g_heavy * 1e3,
            step_s * 1e3
        ),
        try_flags,
    })
}

/// The flag that puts an eager step of `running` requests under CUDA graphs, in the engine's
/// spelling: graphs off altogether, or a batch above the largest captured one.
fn graph_flag(opts: &ServerOptions, running: u32) -> String {
    opts.engine
        .rules()
        .graph_flag(opts.disable_cuda_graph, running.next_power_of_two())
}

/// The pool arithmetic behind a KV bound, by the engine's admission rule
/// ([`crate::engine::ServingEngine::pool_admits`]). `Some(sentence)` when the clients had more
/// requests in flight (running + waiting) than that admits and the running ones fill most of it.
fn pool_admits(pool_tokens: u64, load: &Load, opts: &ServerOptions) -> Option<String> {
    let queue = load.queue.filter(|&q| q > 0)?;
    opts.engine.rules().pool_admits(
        pool_tokens,
        f64::from(load.context_tokens.max(1)),
        load.prompt_tokens,
        load.in_flight(),
        queue,
    )
}

fn kv_flags(
    opts: &ServerOptions,
    plan: &crate::cost::MemoryPlan,
    larger_dcp: Option<u32>,
) -> Vec<String> {
    opts.engine.rules().kv_try_flags(
        crate::cost::memory::shown_fraction(plan.mem_fraction_static),
        plan.static_budget_bytes as f64 / 1e9,
        larger_dcp,
    )
}

/// The cost of an uneven PP split: a rotation of the logged micro-batches against one of an even
/// share, both paced as SGLang's PP loop paces them ([`crate::serving::pipeline`], the rule the
/// serving replay follows): each turn waits for its slowest stage.
fn pp_imbalance(model: &dyn IterationModel, split: &PpSplit) -> Option<Limit> {
    let pp = split.running.len() as u32;
    let total = split.total();
    if pp < 2 || total < pp {
        return None;
    }
    let ctx = split.context_tokens;
    let uneven = crate::serving::pipeline::split_rotation_s(model, &split.running, ctx);
    let share = total.div_ceil(pp);
    let even = crate::serving::pipeline::split_rotation_s(model, &vec![share; pp as usize], ctx);
    let loss = 1.0 - even / uneven;
    let largest = split.running.iter().copied().max().unwrap_or(0);
    let ratio = f64::from(largest) / (f64::from(total) / f64::from(pp));
    if loss < PP_IMBALANCE_LOSS && ratio < PP_UNEVEN_RATIO {
        return None;
    }
    let shown = split
        .running
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("/");
    let round = format!(
        "PP split: the logged micro-batches held {shown} of {total} requests; a rotation of them (each turn waits for its slowest stage) takes {:.1} ms against {:.1} ms for an even {share}-request split",
        uneven * 1e3,
        even * 1e3
    );
    let (finding, try_flags) = if loss >= PP_IMBALANCE_LOSS {
        (
            format!(
                "{round}: the imbalance costs {:.0}% of the decode throughput",
                loss * 100.0
            ),
            vec![format!(
                "{} {share} (SGLang's default cap is {} / {}, so one micro-batch can take most of the requests): {:.2}× the decode throughput predicted",
                Engine::Sglang.flag(Knob::PpMaxMicroBatch),
                Engine::Sglang.flag(Knob::MaxRunningRequests),
                Engine::Sglang.flag(Knob::PipelineParallel),
                uneven / even
            )],
        )
    } else if loss <= -PP_IMBALANCE_LOSS {
        (
            format!(
                "{round}: the uneven split is {:.0}% faster (a MoE step reads fewer experts per request the more requests it holds, so two unequal micro-batches read less than two equal ones); evening it would not help",
                -loss * 100.0
            ),
            Vec::new(),
        )
    } else {
        (
            format!(
                "{round}: within {:.0}% either way (the step barely grows with its requests)",
                PP_IMBALANCE_LOSS * 100.0
            ),
            Vec::new(),
        )
    };
    Some(Limit {
        kind: BoundKind::PpImbalance,
        finding,
        try_flags,
    })
}
