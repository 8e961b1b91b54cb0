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
//! [`admitted_requests`] says how many requests of a workload SGLang's scheduler runs at once
//! in a layout's KV pool, for the commands' "KV-bound" warning.

use crate::cost::MemoryPlan;
use crate::engine::sglang::args::{DefaultsContext, ResolvedOptions, SglangArgs, SglangArgsError};
use crate::engine::{Engine, Knob};
use crate::options::ServerOptions;
use crate::serving::kv_policy::CLIP_MAX_NEW_TOKENS;
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

/// Requests of `input_tokens` in / `output_tokens` out that SGLang runs at once in `plan`'s KV
/// pool (all DP replicas). `schedule_policy.py::PrefillAdder` admits a new request only while its
/// prompt plus its whole remaining output, clipped at `CLIP_MAX_NEW_TOKENS` (4096), fit in what
/// the pool has left beside the running requests' own reservations; those shrink as
/// `new_token_ratio` decays, but a closed-loop client refills every slot at once, so about
/// `pool / (input + min(output, 4096))` run together. Capped by `max_running_requests`.
pub fn admitted_requests(
    plan: &MemoryPlan,
    layout: &Layout,
    input_tokens: u32,
    output_tokens: u32,
) -> u64 {
    let replicas = if layout.dp_attention { layout.tp } else { 1 } as u64;
    let per_request = input_tokens as u64 + output_tokens.min(CLIP_MAX_NEW_TOKENS) as u64;
    let by_pool = plan.kv_tokens / per_request.max(1);
    by_pool.min(plan.max_running_requests as u64) * replicas
}

/// The warning `run` and `advise` print when `concurrency` exceeds [`admitted_requests`], with
/// the numbers behind it; `None` when the pool admits them all.
pub fn kv_bound_warning(
    model: &str,
    plan: &MemoryPlan,
    layout: &Layout,
    opts: &ServerOptions,
    input_tokens: u32,
    output_tokens: u32,
    concurrency: u32,
) -> Option<String> {
    let admitted = admitted_requests(plan, layout, input_tokens, output_tokens);
    // a pool that is a thin remainder makes the admitted count fragile: say so in the same line
    let fragile = crate::cost::memory::thin_pool_note(
        plan.kv_tokens,
        plan.kv_pool_bytes_per_gpu,
        plan.static_budget_bytes,
        plan.weight_bytes_per_gpu,
    )
    .map_or(String::new(), |n| format!("; {n}"));
    // SGLang's admission and defaults, so SGLang's flags
    let flag = |k| Engine::Sglang.flag(k);
    let (mem_flag, graph_flag) = (flag(Knob::MemoryShare), flag(Knob::CudaGraphMaxBatch));
    let chunk_flag = flag(Knob::PrefillChunk);
    (u64::from(concurrency) > admitted).then(|| {
        format!(
            "KV-bound: {} on {}: the KV pool holds {} tokens per {} at {mem_flag} {} ({:.2} GB static budget per GPU, weights {:.2} GB); SGLang reserves each request's prompt and remaining output ({} + {} tokens) when it admits it, so about {admitted} of the {concurrency} requests run at once and the rest wait; a higher {mem_flag}, an fp8 KV cache (--kv-cache-dtype fp8_e4m3), a smaller {graph_flag} / {chunk_flag} (SGLang's default fraction rises) or more GPUs per replica give more{fragile}",
            model,
            layout.short_name(),
            plan.kv_tokens,
            if layout.dp_attention { "DP replica" } else { "server" },
            crate::cost::memory::shown_fraction(opts.mem_fraction_static),
            plan.static_budget_bytes as f64 / 1e9,
            plan.weight_bytes_per_gpu as f64 / 1e9,
            input_tokens,
            output_tokens.min(CLIP_MAX_NEW_TOKENS),
        )
    })
}

/// [`kv_bound_warning`] for a bench_serving workload: its mean prompt and output lengths, at its
/// `--max-concurrency` (all its prompts under a request rate).
pub fn workload_kv_warning(
    model: &str,
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
        model,
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
