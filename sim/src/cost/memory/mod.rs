//! How a layout uses each GPU's memory, the way SGLang sizes its KV pool.
//!
//! Read from SGLang's `model_runner_kv_cache_mixin.py` (main, early 2026; the GLM-4.7 log of
//! `data/observations/logs/` comes from such a build): `profile_max_num_token` measures the free
//! memory before the weights are loaded (`Load weight begin. avail mem=`) and after
//! (`Load weight end … avail mem=`), and gives the KV pool
//!
//! ```text
//! rest = avail_after_load − avail_before_load × (1 − mem_fraction_static)
//!      = mem_fraction_static × avail_before_load − weights
//! max_total_num_tokens = rest / cell_size       (cell: KV bytes per token over the stage's layers)
//! ```
//!
//! So `mem_fraction_static` is a share of what is free *after* the CUDA context and NCCL
//! communicators are set up, not of the card. `--max-total-tokens` caps the result; pipeline
//! stages each size their own pool and keep the minimum. What is left, `(1 − mem_fraction_static)
//! × avail_before_load`, must hold everything else ([`MemoryReserves`]): the `req_to_token` table
//! (`(max_running_requests + 1) × (context_len + 4) × 4 B`), the attention backend's workspace,
//! CUDA-graph buffers when graphs are on and the activations of a prefill chunk. SGLang does not
//! shrink the pool for them; when they do not fit it runs out of memory later, which the plan
//! reports as a note. With speculative decoding on the checkpoint's MTP layer(s), the draft
//! worker loads them and allocates its own pool of the same token count over those layers after
//! the target's pool is sized, so they too come out of that remainder (SGLang's automatic
//! `mem_fraction_static` reserves 2 GiB for them). `max_running_requests`, when not given, is
//! derived as SGLang's
//! `_resolve_max_num_reqs` does: `clamp(tokens / context_len × 512, 2048, 4096)`, at most half the
//! tokens.
//!
//! Hybrid models size more pools from the same remainder ([`stage_pools`]): a state pool per
//! request slot for Gated-DeltaNet layers, a sliding-window pool beside the full layers' KV;
//! with speculative decoding the draft tokens' intermediate states come off first
//! ([`speculative_state_bytes`]).
//!
//! Under attention-DP every GPU caches its own requests, so `kv_tokens` is per DP replica and the
//! engine holds `tp ×` that many. GB are 1e9 bytes; SGLang's "GB" are GiB.

use super::MemoryPlan;
use crate::engine::{Engine, Knob, running_cap_in_force};
use crate::error::{Result, SimError};
use crate::options::ServerOptions;
use models::footprint::Footprint;
use models::spec::{
    MAMBA_FULL_MEMORY_RATIO, MAMBA_SLOTS_PER_RUNNING_REQUEST, SWA_FULL_TOKENS_RATIO,
};
use models::{KvDtype, Layout, ModelSpec};
use serde::{Deserialize, Serialize};

pub mod vllm;

const MIB: u64 = 1 << 20;

/// GPU memory in use before SGLang loads the weights: the CUDA context, cuBLAS handles, the NCCL
/// communicators and torch.distributed's buffers. From the user's server log (8× RTX PRO 6000,
/// TP8): the card's 97,887 MiB (95.59 GiB) minus `Load weight begin. avail mem=94.13 GB` (GiB).
/// One measurement of one box; a server log of the box itself replaces it.
pub const PRE_LOAD_OVERHEAD_BYTES: u64 = 1_570_000_000;

/// The attention backend's constant workspace and metadata buffers, allocated after the pool
/// (SGLang's `reserved_mem` starts from 512 MiB for them; the user's log shows 0.48 GiB going
/// between `Memory pool end` and the scheduler's `available_gpu_mem`).
pub const ATTENTION_WORKSPACE_BYTES: u64 = 512 * MIB;

/// CUDA-graph buffer memory SGLang reserves per captured batch size unit (`cuda_graph_max_bs × 2`
/// MiB; with DP attention `× dp × 3` MiB more, and `× dp × 1.5` more above 300).
pub const CUDA_GRAPH_BYTES_PER_BS: u64 = 2 * MIB;

/// Extra columns SGLang gives each `req_to_token` row beyond the context length.
pub const REQ_TO_TOKEN_EXTRA_COLUMNS: u64 = 4;

/// What the server holds besides weights and the KV pool, per GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReserves {
    /// In use before the weights load ([`PRE_LOAD_OVERHEAD_BYTES`]).
    pub pre_load_bytes: u64,
    /// The `req_to_token` table: `(max_running_requests + 1) × (context_len + 4) × 4 B`.
    pub req_to_token_bytes: u64,
    /// Attention backend workspace ([`ATTENTION_WORKSPACE_BYTES`]).
    pub attention_workspace_bytes: u64,
    /// CUDA-graph buffers when graphs are on (0 with `--disable-cuda-graph`).
    pub cuda_graph_bytes: u64,
    /// Activations of one prefill chunk (`--chunked-prefill-size`), from the tensors a chunk
    /// needs ([`activation_bytes`]). SGLang's own heuristic for choosing `mem_fraction_static`
    /// (`max(chunk, 2048) × 1.5` MiB, 12 GiB at 8192) is far above that and not used here.
    pub activation_bytes: u64,
    /// The MTP draft layer(s) when speculative decoding uses the checkpoint's own (NEXTN /
    /// EAGLE without a draft model path): their weights, loaded by the draft worker after the
    /// target's pool is sized.
    #[serde(default)]
    pub draft_weight_bytes: u64,
    /// The draft worker's KV pool: as many tokens as the target's, over the MTP layers.
    #[serde(default)]
    pub draft_kv_bytes: u64,
}

impl MemoryReserves {
    /// Everything but the pre-load part: what must fit in `(1 − mem_fraction_static)` of the
    /// memory free before loading.
    pub fn runtime_bytes(&self) -> u64 {
        self.req_to_token_bytes
            + self.attention_workspace_bytes
            + self.cuda_graph_bytes
            + self.activation_bytes
            + self.draft_weight_bytes
            + self.draft_kv_bytes
    }

    /// All of it.
    pub fn total_bytes(&self) -> u64 {
        self.pre_load_bytes + self.runtime_bytes()
    }
}

/// Activation memory a forward pass of `tokens` tokens needs at its peak on one GPU, a rough
/// bound: hidden states and residuals (a few copies of T·h bf16), the MoE's routed intermediate
/// (T·k·2·I/tp·bf16) and the logits of one chunk (T·vocab/tp·fp32).
pub fn activation_bytes(spec: &ModelSpec, layout: &Layout, tokens: u64) -> u64 {
    let t = tokens as f64;
    let h = spec.hidden_size as f64;
    let tp = layout.tp.max(1) as f64;
    let hidden = 8.0 * t * h * 2.0;
    let mlp = match spec.moe {
        Some(m) => t * m.top_k as f64 * 2.0 * m.expert_intermediate_size as f64 / tp * 2.0,
        None => t * 2.0 * spec.dense_intermediate_size as f64 / tp * 2.0,
    };
    let logits = t * spec.vocab_size as f64 / tp * 4.0;
    (hidden + mlp + logits) as u64
}

/// The KV-cache dtype in force: `--kv-cache-dtype`, else the checkpoint's default.
pub fn kv_dtype(spec: &ModelSpec, opts: &ServerOptions) -> KvDtype {
    opts.kv_cache_dtype.unwrap_or(spec.default_kv_dtype)
}

/// The context length the server runs with: `--context-length`, else the model's.
pub fn context_len(spec: &ModelSpec, opts: &ServerOptions) -> u64 {
    opts.context_length
        .map_or(spec.max_context_tokens, u64::from)
        .max(1)
}

/// SGLang's `max_running_requests` per DP worker for a pool of `kv_tokens` tokens
/// (`_resolve_max_num_reqs`): `clamp(int(tokens / context_len × 512), 2048, 4096)`, capped by
/// `--max-running-requests / dp` when given, else by half the tokens.
pub fn max_running_requests(
    kv_tokens: u64,
    context_len: u64,
    given: Option<u32>,
    dp_size: u32,
) -> u32 {
    let estimated =
        ((kv_tokens as f64 / context_len.max(1) as f64 * 512.0) as u64).clamp(2048, 4096);
    let n = match given {
        Some(g) => (u64::from(g) / u64::from(dp_size.max(1))).min(estimated),
        None => estimated.min(kv_tokens / 2),
    };
    n as u32
}

/// Bytes of SGLang's `req_to_token` table: one int32 row of `context_len + 4` columns per
/// request slot, `max_running_requests + 1` slots.
pub fn req_to_token_bytes(max_running_requests: u32, context_len: u64) -> u64 {
    (u64::from(max_running_requests) + 1) * (context_len + REQ_TO_TOKEN_EXTRA_COLUMNS) * 4
}

/// KV bytes one token occupies per full-attention layer on one GPU: the layer's KV (the
/// footprint's split under TP) plus the DSA index-key cache, over the DCP shards (vLLM's decode
/// context parallelism keeps `1/dcp` of every request's tokens on each rank,
/// [`crate::cost::dcp`]).
fn kv_bytes_per_token_per_layer(
    spec: &ModelSpec,
    footprint: &Footprint,
    dtype: KvDtype,
    dcp: u32,
) -> u64 {
    (footprint.kv_bytes_per_token_per_layer_per_gpu(spec, dtype)
        + spec.indexer_cache_bytes_per_token_per_layer())
    .div_ceil(u64::from(dcp.max(1)))
}

/// The pools one stage's GPU sizes from `pool_bytes` (what the weights leave of the static
/// budget), as SGLang does:
/// - hybrid linear attention (`model_runner_kv_cache_mixin.py::handle_max_mamba_cache`, radix
///   cache on, no `--max-mamba-cache-size`): `ratio / (1 + ratio)` of it to the state pool
///   (`--mamba-full-memory-ratio`, [`MAMBA_FULL_MEMORY_RATIO`]), in whole request slots
///   (`HybridReqToTokenPool`'s `MambaPool`), the rest to the KV of the full layers;
/// - sliding windows (`model_runner.py::set_num_token_hybrid`): the KV tokens of the full layers
///   and [`SWA_FULL_TOKENS_RATIO`] as many in the sliding layers share the rest.
///
/// Returns (full-layer KV tokens, state slots).
fn stage_pools(pool_bytes: u64, cell: &StageCell) -> (u64, u64) {
    let mut rest = pool_bytes;
    let r = MAMBA_FULL_MEMORY_RATIO;
    let state = (rest as f64 * r / (1.0 + r)) as u64;
    let slots = state.checked_div(cell.state_bytes_per_request).unwrap_or(0);
    rest -= slots * cell.state_bytes_per_request;
    let per_token = cell.kv_bytes_per_token as f64
        + SWA_FULL_TOKENS_RATIO * cell.sliding_kv_bytes_per_token as f64;
    let tokens = if per_token > 0.0 {
        (rest as f64 / per_token) as u64
    } else {
        0
    };
    (tokens, slots)
}

/// One stage's cache cell: KV bytes per token of its full layers (indexer keys included), of
/// its sliding layers, and state bytes per request of its linear layers.
struct StageCell {
    kv_bytes_per_token: u64,
    sliding_kv_bytes_per_token: u64,
    state_bytes_per_request: u64,
}

/// One stage's cache cell; decode context parallelism (`dcp` > 1) keeps `1/dcp` of every
/// request's tokens on each rank ([`crate::cost::dcp`]).
fn stage_cell(
    spec: &ModelSpec,
    footprint: &Footprint,
    dtype: KvDtype,
    layers: std::ops::Range<u32>,
    dcp: u32,
) -> StageCell {
    let c = footprint.stage_cache(spec, dtype, layers.clone());
    // SGLang's NSA pool keeps an index-key row in every layer of the stage
    let index_keys =
        spec.indexer_cache_bytes_per_token_per_layer() * u64::from(layers.end - layers.start);
    let dcp = u64::from(dcp.max(1));
    StageCell {
        kv_bytes_per_token: (c.kv_bytes_per_token + index_keys).div_ceil(dcp),
        sliding_kv_bytes_per_token: c.sliding_kv_bytes_per_token.div_ceil(dcp),
        state_bytes_per_request: c.state_bytes_per_request,
    }
}

/// The MTP draft's weight bytes on the fullest GPU and its KV bytes per token, when `opts` runs
/// speculative decoding on the checkpoint's own MTP layers.
pub(super) fn mtp_draft(
    spec: &ModelSpec,
    footprint: &Footprint,
    opts: &ServerOptions,
) -> Option<(u64, u64)> {
    let s = opts.speculative.as_ref()?;
    if s.draft_model_path.is_some() || spec.num_mtp_layers == 0 {
        return None;
    }
    let with = models::footprint::footprint_with(
        spec,
        &footprint.layout,
        models::footprint::FootprintOptions {
            speculative_mtp: true,
        },
    )
    .ok()?;
    let weights = with
        .max_weight_bytes_per_gpu()
        .saturating_sub(footprint.max_weight_bytes_per_gpu());
    let per_layer = kv_bytes_per_token_per_layer(
        spec,
        footprint,
        kv_dtype(spec, opts),
        crate::cost::dcp::shards(opts),
    );
    Some((weights, per_layer * u64::from(spec.num_mtp_layers)))
}

/// The runtime reserves besides the table (workspace, CUDA graphs, activations).
fn runtime_reserves(spec: &ModelSpec, layout: &Layout, opts: &ServerOptions) -> MemoryReserves {
    let dp = if layout.dp_attention { layout.tp } else { 1 } as u64;
    let bs = u64::from(opts.cuda_graph_max_bs);
    let cuda_graph_bytes = if opts.disable_cuda_graph {
        0
    } else {
        let mut b = bs * CUDA_GRAPH_BYTES_PER_BS;
        if layout.dp_attention {
            b += bs * dp * 3 * MIB;
            if bs > 300 {
                b += bs * dp * 3 * MIB / 2;
            }
        }
        b
    };
    MemoryReserves {
        pre_load_bytes: PRE_LOAD_OVERHEAD_BYTES,
        req_to_token_bytes: 0,
        attention_workspace_bytes: ATTENTION_WORKSPACE_BYTES,
        cuda_graph_bytes,
        activation_bytes: activation_bytes(spec, layout, u64::from(opts.chunked_prefill_size)),
        draft_weight_bytes: 0,
        draft_kv_bytes: 0,
    }
}

/// The memory plan of `spec` under `footprint`'s layout on GPUs of `memory_bytes`, whether it
/// fits or not (see the module docs for SGLang's formula).
pub fn plan(
    spec: &ModelSpec,
    footprint: &Footprint,
    memory_bytes: u64,
    opts: &ServerOptions,
) -> MemoryPlan {
    plan_with_pre_load(spec, footprint, memory_bytes, PRE_LOAD_OVERHEAD_BYTES, opts)
}

/// What SGLang's `handle_max_mamba_cache` (`model_runner_kv_cache_mixin.py`) sets aside before
/// it splits the pool when a hybrid linear-attention model decodes speculatively: the
/// intermediate state of every draft token of every request, `mamba_cache_per_req ×
/// max_running_requests × speculative_num_draft_tokens` (per DP worker). SGLang asserts that
/// `--max-running-requests` is given then; without it nothing is set aside here.
fn speculative_state_bytes(cell: &StageCell, layout: &Layout, opts: &ServerOptions) -> u64 {
    let (Some(s), Some(running)) = (&opts.speculative, running_cap_in_force(opts)) else {
        return 0;
    };
    let dp = if layout.dp_attention { layout.tp } else { 1 };
    cell.state_bytes_per_request * u64::from(running / dp.max(1)) * u64::from(s.num_draft_tokens)
}

/// Each stage's pools over its own layers (what `budget` leaves after the stage's weights); the
/// engine keeps the minimum (PP ranks all-reduce it with MIN): (KV tokens, state slots, the
/// largest cell of any stage).
fn stage_minimum(
    spec: &ModelSpec,
    footprint: &Footprint,
    budget: u64,
    dtype: KvDtype,
    opts: &ServerOptions,
) -> (u64, u64, StageCell) {
    let mut by_memory = u64::MAX;
    let mut state_slots = u64::MAX;
    let mut fullest = StageCell {
        kv_bytes_per_token: 0,
        sliding_kv_bytes_per_token: 0,
        state_bytes_per_request: 0,
    };
    for g in footprint.per_gpu.iter().filter(|g| g.tp_rank == 0) {
        let cell = stage_cell(
            spec,
            footprint,
            dtype,
            g.layers.clone(),
            crate::cost::dcp::shards(opts),
        );
        let pool = budget
            .saturating_sub(g.total_weight_bytes)
            .saturating_sub(speculative_state_bytes(&cell, &footprint.layout, opts));
        let (tokens, slots) = stage_pools(pool, &cell);
        by_memory = by_memory.min(tokens);
        state_slots = state_slots.min(slots);
        fullest.kv_bytes_per_token = fullest.kv_bytes_per_token.max(cell.kv_bytes_per_token);
        fullest.sliding_kv_bytes_per_token = fullest
            .sliding_kv_bytes_per_token
            .max(cell.sliding_kv_bytes_per_token);
        fullest.state_bytes_per_request = fullest
            .state_bytes_per_request
            .max(cell.state_bytes_per_request);
    }
    if by_memory == u64::MAX {
        by_memory = 0;
        state_slots = 0;
    }
    (by_memory, state_slots, fullest)
}

/// The warning that the `outside_bytes` per GPU left beside weights and KV pool are `short_bytes`
/// short of SGLang's `reserves` for `(max_running, context_tokens, chunk_tokens)`; SGLang's
/// sizing, so SGLang's flags.
fn reserves_short_note(
    outside_bytes: u64,
    short_bytes: i64,
    reserves: &MemoryReserves,
    (max_running, ctx, chunk_tokens): (u32, u64, u32),
) -> String {
    let flag = |k| Engine::Sglang.flag(k);
    let (mem_flag, ctx_flag) = (flag(Knob::MemoryShare), flag(Knob::ContextLength));
    let chunk_flag = flag(Knob::PrefillChunk);
    format!(
        "the {:.2} GB per GPU left beside weights and KV pool (1 − {mem_flag} of the free memory) are {:.2} GB short of SGLang's reserves (req_to_token {:.2} GB for {max_running} requests × {ctx} tokens, CUDA graphs {:.2} GB, a {chunk_tokens}-token prefill chunk's activations {:.2} GB): it may run out of memory; lower {mem_flag}, {ctx_flag} or {chunk_flag}",
        outside_bytes as f64 / 1e9,
        short_bytes as f64 / 1e9,
        reserves.req_to_token_bytes as f64 / 1e9,
        reserves.cuda_graph_bytes as f64 / 1e9,
        reserves.activation_bytes as f64 / 1e9,
    )
}

/// [`plan`] with a known pre-load overhead (a server log's `Load weight begin. avail mem`).
pub fn plan_with_pre_load(
    spec: &ModelSpec,
    footprint: &Footprint,
    memory_bytes: u64,
    pre_load_bytes: u64,
    opts: &ServerOptions,
) -> MemoryPlan {
    // the engine says how it sizes its cache (vLLM from a share of the whole card)
    if let Some(v) = opts.engine.rules().card_share_kv_sizing(opts) {
        return vllm::plan(spec, footprint, memory_bytes, v, opts);
    }
    let layout = footprint.layout;
    let available = memory_bytes.saturating_sub(pre_load_bytes);
    let budget = (opts.mem_fraction_static * available as f64) as u64;
    let dtype = kv_dtype(spec, opts);
    let weights = footprint.max_weight_bytes_per_gpu();
    let (by_memory, state_slots, fullest) = stage_minimum(spec, footprint, budget, dtype, opts);
    let page = u64::from(opts.page_size.max(1));
    let capped = opts
        .max_total_tokens
        .map_or(by_memory, |m| m.min(by_memory));
    let kv_tokens = capped / page * page;
    let swa_kv_tokens = (kv_tokens as f64 * SWA_FULL_TOKENS_RATIO) as u64;
    let swa_kv_tokens = if fullest.sliding_kv_bytes_per_token > 0 {
        swa_kv_tokens
    } else {
        0
    };
    let kv_pool =
        kv_tokens * fullest.kv_bytes_per_token + swa_kv_tokens * fullest.sliding_kv_bytes_per_token;
    // the draft tokens' intermediate states are allocated beside the state slots
    let state_pool = state_slots * fullest.state_bytes_per_request
        + speculative_state_bytes(&fullest, &layout, opts);
    let ctx = context_len(spec, opts);
    let dp = if layout.dp_attention { layout.tp } else { 1 };
    let mut max_running = max_running_requests(kv_tokens, ctx, running_cap_in_force(opts), dp);
    if fullest.state_bytes_per_request > 0 {
        // every running request holds a state slot (three with the radix cache, which keeps
        // states of cached prefixes: MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO)
        let per_request = if opts.disable_radix_cache {
            1
        } else {
            MAMBA_SLOTS_PER_RUNNING_REQUEST
        };
        max_running = max_running.min((state_slots / per_request).min(u64::from(u32::MAX)) as u32);
    }
    let mut reserves = runtime_reserves(spec, &layout, opts);
    reserves.pre_load_bytes = pre_load_bytes;
    reserves.req_to_token_bytes = req_to_token_bytes(max_running, ctx);
    if let Some((weights, per_token)) = mtp_draft(spec, footprint, opts) {
        reserves.draft_weight_bytes = weights;
        reserves.draft_kv_bytes = kv_tokens * per_token;
    }
    let free =
        memory_bytes as i64 - (weights + kv_pool + state_pool + reserves.total_bytes()) as i64;
    let mut notes = Vec::new();
    if kv_tokens > 0 && free < 0 {
        let outside_bytes = available - budget.min(available);
        let requests = (max_running, ctx, opts.chunked_prefill_size);
        notes.push(reserves_short_note(
            outside_bytes,
            -free,
            &reserves,
            requests,
        ));
    }
    notes.extend(thin_pool_note(kv_tokens, kv_pool, budget, weights));
    if let Some(m) = opts.max_total_tokens.filter(|&m| m > by_memory) {
        notes.push(format!(
            "{} {m} is more than the {by_memory} tokens memory allows; SGLang uses the smaller",
            Engine::Sglang.flag(Knob::MaxTotalTokens)
        ));
    }
    MemoryPlan {
        engine: opts.engine,
        weight_bytes_per_gpu: weights,
        reserve_bytes_per_gpu: reserves.total_bytes(),
        kv_pool_bytes_per_gpu: kv_pool,
        kv_tokens,
        kv_block_tokens: page,
        swa_kv_tokens,
        state_pool_bytes_per_gpu: state_pool,
        state_slots,
        gpu_memory_bytes: memory_bytes,
        fits: weights < budget && kv_tokens > 0,
        shortfall_bytes: weights.saturating_sub(budget),
        available_before_load_bytes: available,
        static_budget_bytes: budget,
        mem_fraction_static: opts.mem_fraction_static,
        reserves,
        kv_tokens_by_memory: by_memory,
        max_running_requests: max_running,
        context_len: ctx,
        prefill_budget_tokens: 0,
        free_after_reserves_bytes: free,
        notes,
        kv_cache_given_bytes: None,
    }
}

/// Below this share of the static budget, the KV pool is a thin remainder of two large figures.
const THIN_POOL_SHARE: f64 = 0.05;

/// A note when the KV pool is a thin remainder (`budget − weights`, under [`THIN_POOL_SHARE`] of
/// the budget): then a small error in the weights is a large one in the tokens, and the plan
/// says how large rather than print a token count with more trust than it deserves.
pub(crate) fn thin_pool_note(
    kv_tokens: u64,
    kv_pool_bytes: u64,
    budget_bytes: u64,
    weight_bytes: u64,
) -> Option<String> {
    const GIB: f64 = (1u64 << 30) as f64;
    if kv_tokens == 0 || kv_pool_bytes as f64 >= THIN_POOL_SHARE * budget_bytes as f64 {
        return None;
    }
    let per_token = kv_pool_bytes as f64 / kv_tokens as f64;
    let moved = (0.1 * GIB / per_token).round();
    Some(format!(
        "the KV pool is a thin remainder: {:.2} of the {:.1} GB budget is left after the weights, so a 0.1 GiB error in the weights ({:.2}% of them) moves it by {moved:.0} tokens ({:.0}%); trust the server's own KV-tokens line over this figure, or leave the pool more memory",
        kv_pool_bytes as f64 / 1e9,
        budget_bytes as f64 / 1e9,
        0.1 * GIB / weight_bytes.max(1) as f64 * 100.0,
        moved / kv_tokens as f64 * 100.0,
    ))
}

/// `--mem-fraction-static` as messages print it: 4 decimals at most (SGLang's VLM adjustment
/// leaves 0.77145640625; its log prints 0.771).
pub fn shown_fraction(f: f64) -> f64 {
    (f * 1e4).round() / 1e4
}

/// [`plan`], failing with [`SimError::DoesNotFit`] (how many GB are missing) when it does not fit.
pub fn checked_plan(
    spec: &ModelSpec,
    footprint: &Footprint,
    memory_bytes: u64,
    opts: &ServerOptions,
) -> Result<MemoryPlan> {
    let p = plan(spec, footprint, memory_bytes, opts);
    if p.fits {
        return Ok(p);
    }
    if let Some(given) = p.kv_cache_given_bytes.filter(|_| p.shortfall_bytes == 0) {
        // the cache given outright fits the card but holds not one block: the memory share is
        // not what to raise
        return Err(SimError::KvCacheHoldsNoToken {
            model: spec.name.clone(),
            flag: p.engine.flag(crate::engine::Knob::KvCacheBytes),
            layout: footprint.layout.short_name(),
            given_bytes: given,
            block_tokens: p.kv_block_tokens,
            block_bytes: vllm::one_block_bytes(spec, footprint, opts),
        });
    }
    if p.shortfall_bytes == 0 {
        return Err(SimError::NoKvRoom {
            model: spec.name.clone(),
            flag: p.fraction_flag(),
            layout: footprint.layout.short_name(),
            fraction: shown_fraction(opts.mem_fraction_static),
            budget_gb: p.static_budget_bytes as f64 / 1e9,
            available_gb: p.available_before_load_bytes as f64 / 1e9,
            pool_gb: p.static_budget_bytes.saturating_sub(p.weight_bytes_per_gpu) as f64 / 1e9,
        });
    }
    if let Some(bytes) = p.kv_cache_given_bytes {
        return Err(SimError::KvCacheDoesNotFit {
            model: spec.name.clone(),
            flag: p.engine.flag(crate::engine::Knob::KvCacheBytes),
            layout: footprint.layout.short_name(),
            cache_gib: bytes as f64 / (1u64 << 30) as f64,
            cache_gb: (p.kv_pool_bytes_per_gpu + p.reserves.draft_kv_bytes) as f64 / 1e9,
            // on the card: the caching allocator's holes too
            weights_gb: footprint.max_weight_bytes_per_gpu() as f64 / 1e9,
            reserve_gb: p
                .reserves
                .total_bytes()
                .saturating_sub(p.reserves.draft_kv_bytes) as f64
                / 1e9,
            memory_gb: memory_bytes as f64 / 1e9,
            shortfall_gb: p.shortfall_bytes as f64 / 1e9,
        });
    }
    // SGLang: weights + f × pre-load overhead > f × memory  ⇔  weights > f × (memory − overhead);
    // vLLM: weights + the profiling run's peak, non-torch allocations and in-budget graphs > f ×
    // memory. Either way the reserve said is what the budget holds besides the weights, so the
    // sentence's weights + reserve − budget is its shortfall
    let f = opts.mem_fraction_static;
    let budget_bytes = f * memory_bytes as f64;
    let reserve_bytes = p.shortfall_bytes as f64 + budget_bytes - p.weight_bytes_per_gpu as f64;
    Err(SimError::DoesNotFit {
        model: spec.name.clone(),
        flag: p.fraction_flag(),
        layout: footprint.layout.short_name(),
        fraction: shown_fraction(f),
        weights_gb: p.weight_bytes_per_gpu as f64 / 1e9,
        reserve_gb: reserve_bytes / 1e9,
        budget_gb: budget_bytes / 1e9,
        memory_gb: memory_bytes as f64 / 1e9,
        shortfall_gb: p.shortfall_bytes as f64 / 1e9,
        offload_gib: p
            .shortfall_bytes
            .div_ceil(1 << 30)
            .clamp(1, u64::from(u32::MAX)) as u32,
        offload_more: opts.weight_offload.is_some(),
    })
}

/// Most requests of `context_tokens` tokens each that the KV pool (and a hybrid model's state
/// pool) holds at once (all DP replicas).
pub fn max_requests_at_context(plan: &MemoryPlan, layout: &Layout, context_tokens: u64) -> u64 {
    // a request holds whole pages (SGLang's `--page-size`, vLLM's `--block-size`): up to one
    // page less one token of every request is allocated and unused
    let page = plan.kv_block_tokens.max(1);
    let held = context_tokens.max(1).div_ceil(page) * page;
    let by_kv = plan.kv_tokens.saturating_mul(replicas(layout)) / held;
    capped_by_state_slots(plan, layout, by_kv)
}

/// Most streams that run at once when all of them decode after one cached prefix of
/// `shared_tokens` tokens: the radix cache (SGLang) or prefix cache (vLLM) keeps a single copy,
/// locked while a request uses it, and each stream holds only `own_tokens` besides it (its
/// generated tokens and the partial page of its prompt's tail, recomputed per request because
/// the match stops at a page boundary before the last prompt token). Both are rounded up to
/// `page_tokens`. Under attention-DP every replica caches its own copy. A hybrid model's
/// running requests still need a state slot each ([`max_requests_at_context`]).
pub fn max_streams_sharing_prefix(
    plan: &MemoryPlan,
    layout: &Layout,
    shared_tokens: u64,
    own_tokens: u64,
    page_tokens: u64,
) -> u64 {
    let page = page_tokens.max(1);
    let shared = shared_tokens.div_ceil(page) * page;
    let own = own_tokens.max(1).div_ceil(page) * page;
    let by_kv = (plan.kv_tokens.saturating_sub(shared) / own).saturating_mul(replicas(layout));
    capped_by_state_slots(plan, layout, by_kv)
}

/// KV pools of `layout`: one per DP replica under attention-DP, else one.
fn replicas(layout: &Layout) -> u64 {
    if layout.dp_attention {
        layout.tp as u64
    } else {
        1
    }
}

/// `by_kv` requests (all replicas) capped by the state slots of a hybrid linear-attention
/// model: SGLang's max_running_requests (a third of the slots with the radix cache) says how
/// many requests hold one.
fn capped_by_state_slots(plan: &MemoryPlan, layout: &Layout, by_kv: u64) -> u64 {
    if plan.state_slots > 0 {
        by_kv.min(u64::from(plan.max_running_requests).saturating_mul(replicas(layout)))
    } else {
        by_kv
    }
}

#[cfg(test)]
mod tests;
