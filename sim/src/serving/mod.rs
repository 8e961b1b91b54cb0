//! Serving simulation: turns a layout's iteration costs ([`IterationModel`]) into what
//! `bench_serving` would report for a workload, by replaying SGLang's scheduler turn by turn.
//!
//! # What it follows
//! Read from SGLang's source (sgl-project/sglang, main-branch commits of the 0.5.2x line, 2026):
//! - `python/sglang/srt/managers/scheduler_pp_mixin.py` @ `00ff98d3` (`event_loop_pp`): with PP,
//!   `pp_size + pp_async_batch_depth` micro-batches in rotation, each with its own running batch;
//!   each turn receives requests, schedules the next micro-batch with `get_next_batch_to_run`, and
//!   processes the results of the micro-batch that left the last stage.
//! - `python/sglang/srt/managers/scheduler.py` @ `0003215c`: `get_next_batch_to_run` merges the
//!   last prefill into the running batch and runs a new prefill batch first, else a decode step
//!   of the running batch (prefill and decode share a batch only with `--enable-mixed-chunk`,
//!   off by default: `mix_with_running`, the running requests' decode tokens taken from the
//!   chunk budget first; vLLM V1 always batches so, decodes first in its token budget;
//!   different micro-batches do share the pipeline);
//!   `chunked_req` is one per scheduler, so under PP a long prompt's chunks enter the pipeline in
//!   consecutive turns and the request joins the micro-batch of its last chunk;
//!   `get_num_allocatable_reqs` caps each micro-batch at `pp_max_micro_batch_size` (default
//!   `max(max_running_requests // pp_size, 1)`), waived for the chunked request;
//!   `update_running_batch` retracts when a decode step finds the pool full.
//! - `python/sglang/srt/managers/schedule_policy.py` @ `00550cd1` (`PrefillAdder`): budgets of
//!   `chunked_prefill_size` and `max_prefill_tokens` tokens per prefill batch, the last admitted
//!   request chunked; KV admission with `new_token_ratio` ([`kv_policy`]).
//! - Closed rounds (not bench_serving's client: [`crate::workload::Workload::closed_rounds`]): a
//!   round's requests reach the server together and the next round when its last one finished.
//! - Workloads and measured runs: `bench_serving` ([`crate::workload`], [`crate::bench_serving::read`]).
//!
//! # Simplifications that remain
//! - One prefill budget, `min(max_prefill_tokens, chunked_prefill_size)`; SGLang lets the last
//!   whole request overshoot `max_prefill_tokens` when it is the smaller (not by default).
//! - Page size 1: chunk boundaries are not rounded to pages and no per-request page is reserved.
//! - FCFS only (`--schedule-policy fcfs`; `lpm` behaves the same on random prompts). The prefix
//!   cache holds only the workload's shared prefix; evictable radix-cache tokens are not counted
//!   as free, and a retracted request recomputes its whole prompt and output.
//! - A retracted request recomputes its prompt and output: SGLang frees its KV without inserting
//!   it into the radix tree (`release_kv_cache(.., is_insert=False)`), but the prompt's radix
//!   nodes may survive eviction and be matched again. A last request with no free slot is
//!   retracted (SGLang aborts it). The `--disable-radix-cache` + `ignore_eos` admission path
//!   (`add_one_req_ignore_eos`) is not modelled.
//! - Pipeline turns are lockstep (every stage waits for the slowest); a micro-batch's tokens are
//!   delivered when its batch leaves the last stage, also with `--pp-async-batch-depth` > 0
//!   (SGLang processes them up to that many turns later). Dynamic chunking
//!   (`--enable-dynamic-chunking`) is not modelled.
//! - Attention-DP replicas are one pool of their summed capacity (no per-replica balancing).
//! - A token reaches the client when its batch ends (no detokenizer, HTTP or client overhead;
//!   bench_serving's warmup request is not simulated); `max_tokens` 0 is treated as 1.
//! - Costs are bucketed ([`cost_cache`]) and identical decode steps are taken together.

pub mod cost_cache;
pub mod engine;
/// SGLang's KV admission and retraction arithmetic ([`crate::engine::sglang::kv_policy`]).
pub use crate::engine::sglang::kv_policy;
pub mod output;
pub mod pipeline;
pub mod replicas;

use crate::cost::IterationModel;
use crate::options::ServerOptions;
use crate::workload::Workload;
pub use cost_cache::CostCache;
pub use engine::{EngineConfig, EngineError};
pub use output::{RUN_REPORT_SCHEMA_VERSION, RunBreakdown, RunOutput, RunReport, Summary};
pub use replicas::simulate_replicas;

/// SGLang's cap on concurrently held requests when `--max-running-requests` is not given: the
/// request-to-token pool holds at most 4096 requests, and the scheduler keeps at most half the KV
/// tokens' worth of requests (`max_total_num_tokens // 2`). Recalled, not re-read: the stored
/// scheduler takes `max_running_requests` from the model worker.
pub const DEFAULT_MAX_RUNNING_CAP: u32 = 4096;

/// Why a simulation cannot run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ServingError {
    #[error(
        "layout {layout} does not fit: {shortfall_gb:.2} GB per GPU missing for weights + reserve in the static budget {budget_gb:.2} GB ({flag} {fraction}); use more GPUs, a smaller checkpoint format, or raise {flag}"
    )]
    DoesNotFit {
        layout: String,
        /// The engine's memory-share flag.
        flag: &'static str,
        shortfall_gb: f64,
        fraction: f64,
        budget_gb: f64,
    },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl EngineConfig {
    /// The scheduler limits SGLang derives from its flags and the memory plan.
    pub fn new(model: &dyn IterationModel, opts: &ServerOptions, workload: &Workload) -> Self {
        let layout = model.layout();
        // Under DP attention every replica (one per GPU of the TP group) has its own pool and
        // its own scheduler limits; the engine is modelled as one pool of their sum.
        let replicas = if layout.dp_attention {
            layout.tp.max(1)
        } else {
            1
        };
        let per_replica = model.memory().kv_tokens;
        let kv_tokens = per_replica * replicas as u64;
        // The memory plan derives it as SGLang does; a plan without it falls back to the cap.
        let derived = match model.memory().max_running_requests {
            0 => (per_replica / 2).clamp(1, DEFAULT_MAX_RUNNING_CAP as u64) as u32,
            n => n,
        } * replicas;
        let max_running_requests = crate::engine::running_cap_in_force(opts).unwrap_or(derived);
        let pp = layout.pp.max(1);
        let micro_batches = if pp > 1 {
            pp + opts.pp_async_batch_depth
        } else {
            1
        };
        EngineConfig {
            max_running_requests,
            micro_batch_cap: opts
                .pp_max_micro_batch_size
                .unwrap_or((max_running_requests / pp).max(1)),
            prefill_budget_tokens: match model.memory().prefill_budget_tokens {
                0 => opts.max_prefill_tokens.min(opts.chunked_prefill_size),
                n => u32::try_from(n).unwrap_or(u32::MAX),
            },
            chunking: opts.prefill_chunking,
            micro_batches,
            pp_size: pp,
            kv_tokens,
            cached_prefix_tokens: workload.cached_prefix_tokens,
            mixed_chunk: opts.enable_mixed_chunk,
            engine: opts.engine,
            // SGLang's skipper, without PP (its pipelined event loop is not modelled with it)
            recv_interval: if opts.engine == crate::engine::Engine::Sglang && pp == 1 {
                opts.scheduler_recv_interval.max(1)
            } else {
                1
            },
        }
    }
}

/// How the workload's client paces its requests.
fn client(workload: &Workload) -> engine::Client {
    engine::Client {
        max_concurrency: workload.max_concurrency,
        closed_rounds: workload.closed_rounds,
    }
}

/// Simulates one bench_serving run of `workload` against `model` served with `opts`.
pub fn simulate(
    model: &dyn IterationModel,
    opts: &ServerOptions,
    workload: &Workload,
) -> Result<RunReport, ServingError> {
    let mut cache = CostCache::new(model);
    simulate_with(&mut cache, opts, workload)
}

/// [`simulate`] reusing a cost cache (several workloads on one layout share costs).
pub fn simulate_with(
    cache: &mut CostCache<'_>,
    opts: &ServerOptions,
    workload: &Workload,
) -> Result<RunReport, ServingError> {
    let model = cache.model();
    check_fits(model)?;
    let cfg = EngineConfig::new(model, opts, workload);
    let kv_capacity = cfg.kv_tokens;
    let requests = workload.requests();
    let trace = engine::run(cfg, cache, &requests, client(workload))?;
    Ok(report(model, opts, workload, &requests, trace, kv_capacity))
}

/// Refuses a layout whose weights do not fit its static budget.
fn check_fits(model: &dyn IterationModel) -> Result<(), ServingError> {
    let mem = model.memory();
    if mem.fits {
        return Ok(());
    }
    Err(ServingError::DoesNotFit {
        layout: model.layout().short_name(),
        flag: mem.fraction_flag(),
        shortfall_gb: mem.shortfall_bytes as f64 / 1e9,
        fraction: crate::cost::memory::shown_fraction(mem.mem_fraction_static),
        budget_gb: mem.static_budget_bytes as f64 / 1e9,
    })
}

/// What bench_serving would print for `requests` served as `trace` records (`model`'s layout).
fn report(
    model: &dyn IterationModel,
    opts: &ServerOptions,
    workload: &Workload,
    requests: &[crate::workload::RequestSpec],
    mut trace: engine::Trace,
    kv_capacity: u64,
) -> RunReport {
    let layout = model.layout();
    let in_tok: u64 = requests.iter().map(|r| r.input_tokens as u64).sum();
    let out_tok: u64 = requests.iter().map(|r| r.output_tokens.max(1) as u64).sum();
    let d = trace.duration_s.max(f64::MIN_POSITIVE);
    let ttft = Summary::of(&mut trace.ttft_s);
    let tpot = Summary::of(&mut trace.tpot_s);
    // `--stream-interval N`: SGLang sends the first token at once, then one chunk every N decode
    // steps (`stream_output`: `decode_forward_ct % stream_interval == 0`), so bench_serving's
    // inter-token gaps are N steps long (the mean exactly but for the last partial chunk; median
    // and p99 scaled alike, an approximation).
    let itl = trace
        .itl_s
        .summary()
        .scaled(opts.stream_interval.max(1) as f64);
    let e2e_sum: f64 = trace.e2e_s.iter().sum();
    let e2e = Summary::of(&mut trace.e2e_s);
    let ms = 1e3;
    RunReport {
        schema_version: RUN_REPORT_SCHEMA_VERSION,
        engine: opts.engine,
        layout: layout.short_name(),
        flags: opts
            .engine
            .rules()
            .launch_flags(&layout, opts.decode_context_parallel, 1),
        max_concurrency: workload.max_concurrency,
        closed_rounds: workload.closed_rounds,
        request_rate: workload.request_rate,
        random_input_len: workload.random_input_len,
        random_output_len: workload.random_output_len,
        random_range_ratio: workload.random_range_ratio,
        duration: trace.duration_s,
        completed: requests.len() as u32,
        total_input_tokens: in_tok,
        total_output_tokens: out_tok,
        request_throughput: requests.len() as f64 / d,
        input_throughput: in_tok as f64 / d,
        output_throughput: out_tok as f64 / d,
        total_throughput: (in_tok + out_tok) as f64 / d,
        mean_e2e_latency_ms: e2e.mean * ms,
        median_e2e_latency_ms: e2e.median * ms,
        p99_e2e_latency_ms: e2e.p99 * ms,
        mean_ttft_ms: ttft.mean * ms,
        median_ttft_ms: ttft.median * ms,
        p99_ttft_ms: ttft.p99 * ms,
        mean_tpot_ms: tpot.mean * ms,
        median_tpot_ms: tpot.median * ms,
        p99_tpot_ms: tpot.p99 * ms,
        mean_itl_ms: itl.mean * ms,
        median_itl_ms: itl.median * ms,
        p99_itl_ms: itl.p99 * ms,
        concurrency: e2e_sum / d,
        peak_running_requests: trace.peak_running,
        kv_capacity_tokens: kv_capacity,
        peak_kv_tokens: trace.peak_kv_tokens,
        peak_kv_usage: trace.peak_kv_tokens as f64 / kv_capacity.max(1) as f64,
        breakdown: trace.breakdown,
        micro_batch_samples: trace.samples,
        replicas: 1,
    }
}
