//! One memory verdict for every command (issue 21).
//!
//! Whether a layout fits is decided in one place, [`crate::cost::memory::checked_plan`], which
//! [`crate::cost::CostModel::new`] calls; every command builds its cost models through it, and
//! the report's memory chart reads the same plan. What used to differ was the options it was
//! given: SGLang's defaults depend on the layout (`--mem-fraction-static` on `--tp × --pp` and DP
//! attention, `--cuda-graph-max-bs` on `--tp`), and `predict --layout all` and `report` costed
//! every layout with the options of TP over every GPU (0.848 on the RTX PRO 6000, where TP8 with
//! DP attention gets 0.660). [`layout_options`] is the one way to get a layout's options, and
//! [`OptionsFor`] carries it to the functions that cost several layouts.
//!
//! [`admitted_requests`] says how many requests of a workload the engine's scheduler runs at
//! once in a layout's KV pool, for the commands' "KV-bound" warning.

use crate::cost::MemoryPlan;
use crate::engine::Engine;
use crate::engine::sglang::args::{DefaultsContext, ResolvedOptions, SglangArgs, SglangArgsError};
use crate::options::ServerOptions;
use crate::workload::Workload;
use models::{Layout, ModelSpec};

/// The server options of each layout, for functions that cost several.
pub type OptionsFor<'a> = dyn Fn(&Layout) -> ServerOptions + Sync + 'a;

/// The server options `args` give `layout` on GPUs of `gpu_memory_bytes` serving `spec`, with
/// SGLang's defaults for that layout filled in.
pub fn layout_options(
    args: &SglangArgs,
    gpu_memory_bytes: u64,
    layout: &Layout,
    spec: &ModelSpec,
) -> Result<ResolvedOptions, SglangArgsError> {
    let ctx = DefaultsContext {
        gpu_memory_bytes,
        tp: layout.tp,
        pp: layout.pp,
        dp_attention_size: if layout.dp_attention { layout.tp } else { 1 },
    };
    args.server_options(&ctx, spec)
}

/// Requests of `input_tokens` in / `output_tokens` out that `engine` runs at once in `plan`'s KV
/// pool (all DP replicas): the pool over what its admission counts a request to hold
/// ([`crate::engine::ServingEngine::kv_tokens_per_request`]: SGLang's prompt plus clipped output
/// reserved at admission, vLLM's whole context by its last step), capped by
/// `max_running_requests`.
pub fn admitted_requests(
    plan: &MemoryPlan,
    layout: &Layout,
    engine: Engine,
    input_tokens: u32,
    output_tokens: u32,
) -> u64 {
    let replicas = if layout.dp_attention { layout.tp } else { 1 } as u64;
    let per_request = engine
        .rules()
        .kv_tokens_per_request(input_tokens, output_tokens);
    let by_pool = plan.kv_tokens / per_request.max(1);
    by_pool.min(plan.max_running_requests as u64) * replicas
}

/// The warning `run` and `advise` print when `concurrency` exceeds [`admitted_requests`], with
/// the numbers behind it, in the words and flags of the options' engine; `None` when the pool
/// admits them all.
pub fn kv_bound_warning(
    spec: &models::ModelSpec,
    plan: &MemoryPlan,
    layout: &Layout,
    opts: &ServerOptions,
    input_tokens: u32,
    output_tokens: u32,
    concurrency: u32,
) -> Option<String> {
    let rules = opts.engine.rules();
    let admitted = admitted_requests(plan, layout, opts.engine, input_tokens, output_tokens);
    // a pool that is a thin remainder makes the admitted count fragile: say so in the same line
    let fragile = crate::cost::memory::thin_pool_note(
        plan.kv_tokens,
        plan.kv_pool_bytes_per_gpu,
        plan.static_budget_bytes,
        plan.weight_bytes_per_gpu,
    )
    .map_or(String::new(), |n| format!("; {n}"));
    let mem_flag = rules.memory_fraction_flag();
    let input = u64::from(input_tokens);
    let counted_output = rules.kv_tokens_per_request(input_tokens, output_tokens) - input;
    (u64::from(concurrency) > admitted).then(|| {
        format!(
            "KV-bound: {} on {}: the KV pool holds {} tokens per {} at {mem_flag} {} ({:.2} GB {} per GPU, weights {:.2} GB); {}; {}{fragile}",
            spec.name,
            layout.short_name(),
            plan.kv_tokens,
            if layout.dp_attention { "DP replica" } else { "server" },
            crate::cost::memory::shown_fraction(opts.mem_fraction_static),
            plan.static_budget_bytes as f64 / 1e9,
            // a share of the whole card (vLLM's) or of the memory free after start-up (SGLang's
            // "static" pool of weights and cache)
            if rules.card_share_kv_sizing(opts).is_some() {
                "card share"
            } else {
                "static budget"
            },
            plan.weight_bytes_per_gpu as f64 / 1e9,
            rules.kv_bound_clause(input, counted_output, admitted, concurrency),
            rules.kv_bound_remedy(crate::cost::dcp::largest_above(spec, layout, opts)),
        )
    })
}

/// [`kv_bound_warning`] for a bench_serving workload: its mean prompt and output lengths, at its
/// `--max-concurrency` (all its prompts under a request rate).
pub fn workload_kv_warning(
    spec: &models::ModelSpec,
    plan: &MemoryPlan,
    layout: &Layout,
    opts: &ServerOptions,
    workload: &Workload,
) -> Option<String> {
    let reqs = workload.requests();
    let n = reqs.len().max(1) as u64;
    let mean = |f: fn(&crate::workload::RequestSpec) -> u32| {
        (reqs.iter().map(|r| u64::from(f(r))).sum::<u64>() / n) as u32
    };
    let concurrency = workload
        .max_concurrency
        .unwrap_or(workload.num_prompts)
        .min(workload.num_prompts);
    kv_bound_warning(
        spec,
        plan,
        layout,
        opts,
        mean(|r| r.input_tokens),
        mean(|r| r.output_tokens),
        concurrency,
    )
}

#[cfg(test)]
mod tests;
