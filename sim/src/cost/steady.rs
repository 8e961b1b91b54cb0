//! Steady-state decode throughput of a closed loop of C requests, straight from iteration costs
//! (no event simulation: every request decodes at the same context, no prefills interleave).
//!
//! Requests beyond what the KV pool holds at that context (or `--max-running-requests`) wait, so
//! the running count is capped. Under PP the running requests are split over `pp_size +
//! pp_async_batch_depth` micro-batches; a request's next token needs its micro-batch's trip through
//! every stage, and the busiest stage serves every micro-batch once per cycle:
//! `cycle = max(trip, micro_batches × busiest stage)`, tokens per cycle = running requests.

use super::batch_stats::BatchStats;
use super::memory::max_requests_at_context;
use super::{CostModel, IterationCost, IterationModel};
use serde::Serialize;

/// Steady decode of a closed loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyDecode {
    /// Requests asked for (`--max-concurrency`).
    pub concurrency: u32,
    /// Requests that actually run (capped by KV capacity and `--max-running-requests`).
    pub running: u32,
    /// True when the KV pool, not the client, limits `running`.
    pub limited_by_kv: bool,
    /// Micro-batches in flight (1 without PP).
    pub micro_batches: u32,
    /// Cost of one micro-batch's iteration.
    pub iteration: IterationCost,
    /// Time between two tokens of one request, seconds.
    pub cycle_s: f64,
    /// Idle time of the busiest stage per cycle (pipeline bubble), seconds.
    pub bubble_s: f64,
    /// Output tokens per second of the whole engine.
    pub tok_per_s: f64,
}

impl CostModel {
    /// Steady decode of `concurrency` requests each at `context_tokens` tokens of context.
    pub fn steady_decode(&self, concurrency: u32, context_tokens: u32) -> SteadyDecode {
        steady_decode_with(self, concurrency, context_tokens, &|st| self.cost_stats(st))
    }
}

/// Steady decode of `concurrency` requests each at `context_tokens` tokens on `model`'s layout,
/// memory plan and options, each micro-batch's iteration costed by `cost` (a forward pass, or a
/// speculative step per generated token: [`super::speculative::SpeculativeModel`]).
pub(super) fn steady_decode_with(
    model: &CostModel,
    concurrency: u32,
    context_tokens: u32,
    cost: &dyn Fn(&BatchStats) -> IterationCost,
) -> SteadyDecode {
    let kv_cap =
        max_requests_at_context(&model.memory, &model.layout, context_tokens.max(1) as u64);
    let mut running = (concurrency as u64).min(kv_cap);
    if let Some(m) = model.opts.max_running_requests {
        running = running.min(m as u64);
    }
    let pp = model.stages.len() as u32;
    let slots = (pp + model.opts.pp_async_batch_depth) as u64;
    if let (Some(m), true) = (model.opts.pp_max_micro_batch_size, pp > 1) {
        // `--pp-max-micro-batch-size` caps each micro-batch
        running = running.min(slots * m as u64);
    }
    let running = running as u32;
    let limited_by_kv = (concurrency as u64) > kv_cap;
    let micro = (slots as u32).min(running).max(1);
    let per_micro = running.div_ceil(micro);
    let ctx = context_tokens as f64;
    let cap = model.core.topk_cap.map_or(ctx, |c| ctx.min(c as f64));
    let st = BatchStats {
        decode: per_micro as f64,
        decode_keys: per_micro as f64 * cap,
        decode_context: per_micro as f64 * ctx,
        ..BatchStats::default()
    };
    let iteration = cost(&st);
    let busiest = iteration.stage_s.iter().copied().fold(0.0, f64::max);
    let busy = busiest.max(iteration.cpu_s);
    let cycle_s = if running == 0 {
        0.0
    } else {
        iteration.latency_s.max(micro as f64 * busy)
    };
    let tok_per_s = if cycle_s > 0.0 {
        running as f64 / cycle_s
    } else {
        0.0
    };
    SteadyDecode {
        concurrency,
        running,
        limited_by_kv,
        micro_batches: micro,
        bubble_s: (cycle_s - micro as f64 * busiest).max(0.0),
        iteration,
        cycle_s,
        tok_per_s,
    }
}

/// The decode step a server log reports for `running` requests at `context_tokens` each on
/// `model`: one iteration's latency without PP; under PP the interval between micro-batch
/// completions, the slowest stage plus a hop. Under speculation the whole step (draft, verify,
/// extend), as the logs' `running × accept length ÷ generation throughput` measures it, not the
/// per-token share [`IterationModel::iteration`] reports.
pub fn logged_step_s(model: &dyn IterationModel, running: u32, context_tokens: u32) -> f64 {
    forward_step_s(model, running, context_tokens) * model.tokens_per_decode_step()
}

/// [`logged_step_s`] per generated token.
fn forward_step_s(model: &dyn IterationModel, running: u32, context_tokens: u32) -> f64 {
    let ctx = context_tokens.max(1);
    let batch = super::IterationBatch {
        decode_context_tokens: vec![ctx; running as usize],
        prefill: Vec::new(),
    };
    let c = model.iteration(&batch);
    if c.stage_s.len() <= 1 {
        c.latency_s
    } else {
        c.stage_s.iter().copied().fold(0.0, f64::max) + c.pp_hop_s
    }
}

/// Output tokens per second of `concurrency` requests decoding at `context_tokens` each, capped by
/// KV capacity (see [`CostModel::steady_decode`]).
pub fn steady_decode_tok_per_s(model: &CostModel, concurrency: u32, context_tokens: u32) -> f64 {
    model.steady_decode(concurrency, context_tokens).tok_per_s
}
