//! Steady-state decode throughput of a closed loop of C requests, straight from iteration costs
//! (no event simulation: every request decodes at the same context, no prefills interleave).
//!
//! Requests beyond what the KV pool holds at that context (or `--max-running-requests`) wait, so
//! the running count is capped; how many fit depends on whether each stream holds its own copy
//! of the context or all share one cached copy ([`ContextHolding`]). Under PP the running requests are split over `pp_size +
//! pp_async_batch_depth` micro-batches; a request's next token needs its micro-batch's trip through
//! every stage, and the busiest stage serves every micro-batch once per cycle:
//! `cycle = max(trip, micro_batches × busiest stage)`, tokens per cycle = running requests.

use super::batch_stats::BatchStats;
use super::memory::{max_requests_at_context, max_streams_sharing_prefix};
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

/// How the streams of a steady decode hold their context in the KV pool. Either way each
/// stream's attention reads its whole context; only the pool's occupancy differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextHolding {
    /// Every stream holds its own copy (different prompts, or no prefix cache).
    #[default]
    Own,
    /// All streams decode after the same cached prompt: the pool holds it once and each stream
    /// `own_tokens` besides (its generated tokens and its prompt's last partial page).
    Shared { own_tokens: u32 },
}

impl CostModel {
    /// Steady decode of `concurrency` requests each at `context_tokens` tokens of context.
    pub fn steady_decode(&self, concurrency: u32, context_tokens: u32) -> SteadyDecode {
        let own = ContextHolding::Own;
        steady_decode_with(self, concurrency, context_tokens, own, &|st| {
            self.cost_stats(st)
        })
    }

    /// Requests the pools hold at once at `context_tokens` held as `holding`.
    pub fn kv_capacity(&self, context_tokens: u32, holding: ContextHolding) -> u64 {
        let ctx = u64::from(context_tokens);
        match holding {
            ContextHolding::Own => max_requests_at_context(&self.memory, &self.layout, ctx.max(1)),
            ContextHolding::Shared { own_tokens } => max_streams_sharing_prefix(
                &self.memory,
                &self.layout,
                ctx,
                u64::from(own_tokens),
                self.memory.kv_block_tokens,
            ),
        }
    }
}

/// Steady decode of `concurrency` requests each at `context_tokens` tokens (held as `holding`)
/// on `model`'s layout, memory plan and options, each micro-batch's iteration costed by `cost` (a forward pass, or a
/// speculative step per generated token: [`super::speculative::SpeculativeModel`]).
pub(super) fn steady_decode_with(
    model: &CostModel,
    concurrency: u32,
    context_tokens: u32,
    holding: ContextHolding,
    cost: &dyn Fn(&BatchStats) -> IterationCost,
) -> SteadyDecode {
    let kv_cap = model.kv_capacity(context_tokens, holding);
    let mut running = (concurrency as u64).min(kv_cap);
    if let Some(m) = crate::engine::running_cap_in_force(&model.opts) {
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
