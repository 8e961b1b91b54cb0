//! How vLLM (V1) sizes its KV cache, read from vLLM main (`v1/worker/gpu_worker.py` @35d5cda,
//! `Worker.init_device` and `Worker.determine_available_memory`; `utils/mem_utils.py` @a6d5c39,
//! `memory_profiling`):
//!
//! ```text
//! requested_memory   = total_memory × gpu_memory_utilization        (of the card, not of free)
//! non_kv_cache       = weights + torch_peak_increase + non_torch_increase
//! available_kv_bytes = requested_memory − non_kv_cache [− CUDA-graph estimate]
//! ```
//!
//! The baseline snapshot is taken after NCCL is initialised, so the CUDA context and NCCL's
//! communicators sit outside the requested share (in `1 − gpu_memory_utilization`), unlike
//! SGLang's `mem_fraction_static` of the memory free after them. `torch_peak_increase` is the
//! peak of `profile_run`: one forward pass of `max_num_batched_tokens` dummy tokens and a
//! sampler run over `min(max_num_seqs, max_num_batched_tokens)` rows. The CUDA-graph estimate
//! is subtracted only with `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1` (default 0, `envs.py`);
//! otherwise graphs are captured after the cache is allocated, out of the unrequested share.
//! `kv_cache_utils.get_num_blocks` then gives `available / (block_bytes × layers)` blocks of
//! `--block-size` tokens (16 on CUDA, [`crate::engine::vllm::VLLM_BLOCK_SIZE`]), and the "GPU KV cache size: N tokens" line prints
//! `blocks × block_size` (× the DCP size: each rank holds `1/dcp` of every request).
//!
//! All three terms are torch's *allocated* bytes (or used − reserved for the non-torch one), so
//! the weights are [`weight_bytes`] (without the caching allocator's holes) and the peak is
//! [`profile_peak_bytes`], which counts what the dummy run allocates: activations, the fused
//! MoE's caches, the sparse-MLA indexer's workspace ([`indexer_profile_bytes`]) and the sampler.

use super::{MemoryReserves, activation_bytes, context_len};
use crate::cost::MemoryPlan;
use crate::engine::{Engine, Knob, batch_defaults};
use crate::options::ServerOptions;
use crate::options::VllmMemory;
use models::footprint::{Footprint, GpuFootprint};
use models::{Layout, ModelSpec};

/// The block size vLLM sets for the sparse-MLA models ([`crate::engine::vllm`]).
pub use crate::engine::vllm::VLLM_SPARSE_MLA_BLOCK_SIZE;

/// Memory vLLM's own allocations add outside torch's allocator between the baseline snapshot
/// and the end of the profiling run (cuBLAS/cuBLASLt workspaces, the custom all-reduce's IPC
/// buffers, attention-backend metadata). Assumed, not measured: a vLLM server log's
/// "non-torch forward increase memory" figure replaces it.
pub const VLLM_NON_TORCH_INCREASE_BYTES: u64 = 512 << 20;

/// Entries of the sparse-MLA indexer's prefill gather workspace per token of `--max-model-len`:
/// `get_max_prefill_buffer_size` returns `max_model_len × 40` (`v1/attention/backends/mla/
/// indexer.py`, vLLM main; sized to fit inside FlashMLA-sparse's `5 × max_model_len × 576 × 2`
/// bytes). Each entry is one token's indexer key in fp8 plus its fp32 scales.
pub const VLLM_INDEXER_PREFILL_BUFFER_PER_MODEL_LEN: u64 = 40;
/// The radix top-k workspace the indexer reserves beside the gather buffer
/// (`RADIX_TOPK_WORKSPACE_SIZE`, `model_executor/layers/sparse_attn_indexer.py`).
pub const VLLM_INDEXER_TOPK_WORKSPACE_BYTES: u64 = 1 << 20;
/// `VLLM_SPARSE_INDEXER_MAX_LOGITS_MB` default, 512 (`envs.py`): the indexer's dummy allocation
/// standing for the largest prefill logits chunk during the profiling run.
pub const VLLM_SPARSE_INDEXER_MAX_LOGITS_BYTES: u64 = 512 << 20;

/// What the sparse-MLA (DSA) indexer holds at the profiling run's peak, on one GPU, as
/// `sparse_attn_indexer` (`model_executor/layers/sparse_attn_indexer.py`) does when
/// `attn_metadata` is not a dict (the dummy run): `(persistent, transient)` bytes.
/// - persistent: `current_workspace_manager().get_simultaneous(...)` of the K-gather buffer
///   (`total_seq_lens` × `head_dim` fp8 + `total_seq_lens` × 4 scale bytes, `total_seq_lens` =
///   [`VLLM_INDEXER_PREFILL_BUFFER_PER_MODEL_LEN`] × `max_model_len`) and the radix top-k
///   workspace; the workspace manager keeps it, so it is live through the sampler too.
/// - transient: the `torch.empty` of `VLLM_SPARSE_INDEXER_MAX_LOGITS_MB` MiB, freed after each
///   layer but part of the forward pass's peak.
///
/// `(0, 0)` for a model without an indexer.
pub fn indexer_profile_bytes(spec: &ModelSpec, max_model_len: u64) -> (u64, u64) {
    if spec.attention.indexer().is_none() {
        return (0, 0);
    }
    let entries = VLLM_INDEXER_PREFILL_BUFFER_PER_MODEL_LEN * max_model_len;
    let gather = entries * spec.indexer_cache_bytes_per_token_per_layer();
    (
        gather + VLLM_INDEXER_TOPK_WORKSPACE_BYTES,
        VLLM_SPARSE_INDEXER_MAX_LOGITS_BYTES,
    )
}

/// The peak of vLLM's profiling run on one GPU: the indexer's persistent workspace (see
/// [`indexer_profile_bytes`]) plus the larger of the forward pass of `tokens` tokens (hidden
/// states, the fused MoE's two caches `T·k·2I/tp` and `T·k·h` in bf16, the indexer's logits
/// stand-in) and the sampler over `rows` rows of full-vocabulary fp32 logits (logits and one
/// probability copy). `max_model_len` sizes the indexer's buffers.
pub fn profile_peak_bytes(
    spec: &ModelSpec,
    layout: &Layout,
    tokens: u32,
    rows: u32,
    max_model_len: u64,
) -> u64 {
    let t = f64::from(tokens);
    let hidden = activation_bytes(spec, layout, u64::from(tokens)) as f64
        - t * spec.vocab_size as f64 / f64::from(layout.tp.max(1)) * 4.0;
    let moe_caches = spec.moe.map_or(0.0, |m| {
        let i = 2.0 * m.expert_intermediate_size as f64 / f64::from(layout.tp.max(1));
        t * m.top_k as f64 * (i + spec.hidden_size as f64) * 2.0
    });
    let (indexer_persistent, indexer_logits) = indexer_profile_bytes(spec, max_model_len);
    let forward = hidden + moe_caches + indexer_logits as f64;
    let sampler = 2.0 * f64::from(rows) * spec.vocab_size as f64 * 4.0;
    indexer_persistent + forward.max(sampler) as u64
}

/// The packed cell of vLLM's `fp8_ds_mla` cache, bytes per token and layer: the 512-wide latent
/// in fp8, four fp32 scales (one per 128 values) and the 64 RoPE values kept in bf16
/// (`v1/kv_cache_interface.py`, `MLAAttentionSpec.real_page_size_bytes`; the layout of
/// `v1/attention/backends/mla/flashmla_sparse.py`). vLLM picks it for fp8 KV on the sparse-MLA
/// (DSA indexer) models, DeepSeek-V3.2 and GLM-5; their indexer cache comes on top.
pub const FP8_DS_MLA_BYTES_PER_TOKEN: u64 = 656;

/// KV bytes per token and layer on one GPU as vLLM lays them out, before the DCP split: a
/// sparse-MLA model with fp8 KV stores [`FP8_DS_MLA_BYTES_PER_TOKEN`] (not the 576 of plain fp8
/// MLA) plus its indexer cache; everything else as the model's own cache.
pub fn cell_bytes_per_token_per_layer(
    spec: &ModelSpec,
    footprint: &Footprint,
    dtype: models::KvDtype,
    dcp: u32,
) -> u64 {
    let sparse = spec.attention.indexer().is_some();
    if sparse && dtype == models::KvDtype::Fp8 {
        (FP8_DS_MLA_BYTES_PER_TOKEN + spec.indexer_cache_bytes_per_token_per_layer())
            .div_ceil(u64::from(dcp.max(1)))
    } else {
        super::kv_bytes_per_token_per_layer(spec, footprint, dtype, dcp)
    }
}

/// [`cell_bytes_per_token_per_layer`] in the launch's KV dtype and DCP.
fn launch_cell_bytes(spec: &ModelSpec, footprint: &Footprint, opts: &ServerOptions) -> u64 {
    cell_bytes_per_token_per_layer(
        spec,
        footprint,
        super::kv_dtype(spec, opts),
        crate::cost::dcp::shards(opts),
    )
}

/// The weight bytes vLLM's budget counts on GPU `g`: "Model loading took X GiB" is
/// `DeviceMemoryProfiler.consumed_memory` (`v1/worker/gpu_model_runner.py`, `load_model`), a
/// difference of `torch.cuda.max_memory_allocated` (`platforms/cuda.py`,
/// `get_current_memory_usage`), and `memory_profiling` (`utils/mem_utils.py`) counts torch's
/// *allocated* peak and the non-torch memory as used − *reserved*: memory the caching allocator
/// holds in holes is in neither. So the footprint's allocator holes of the expert
/// post-processing ([`models::load_replay`], counted there because SGLang's free-memory figure
/// sees them) are taken out; the checkpoint's tensors and the MLA absorbed copy stay. vLLM's RoPE
/// cache is in the model's dtype (`rotary_embedding/base.py`: `cache.to(dtype)`), half the FP32
/// one SGLang keeps on CUDA ([`models::footprint::rope_cache_bytes`]).
pub fn weight_bytes(spec: &ModelSpec, footprint: &Footprint, g: &GpuFootprint) -> u64 {
    let last = footprint.layout.pp.max(1) - 1;
    let holes = models::load_replay::replay_stage(
        spec,
        &footprint.layout,
        g.layers.clone(),
        g.stage == 0,
        g.stage == last,
    )
    .map_or(0, |r| r.hole_bytes());
    let rope_half = (models::footprint::rope_cache_bytes(spec) / 2.0) as u64;
    g.total_weight_bytes.saturating_sub(holes + rope_half)
}

/// CUDA-graph memory per captured size when vLLM estimates it: the same 2 MiB per captured
/// batch SGLang reserves ([`super::CUDA_GRAPH_BYTES_PER_BS`]), an assumption.
fn cudagraph_bytes(opts: &ServerOptions) -> u64 {
    if opts.disable_cuda_graph {
        0
    } else {
        u64::from(opts.cuda_graph_max_bs) * super::CUDA_GRAPH_BYTES_PER_BS
    }
}

/// vLLM's refusal (a pool of `kv_tokens` holds no request of `ctx` tokens), or under
/// `--max-model-len auto` (`auto_fit`) the length it cuts to instead, and its out-of-memory
/// warning (`free_bytes` < 0 left on the card: short of the `outside_bytes` its memory share
/// leaves, or, with `--kv-cache-memory-bytes`, of the card itself); vLLM's sizing, so vLLM's
/// flags.
fn sizing_notes(
    kv_tokens: u64,
    ctx: u64,
    auto_fit: bool,
    free_bytes: i64,
    outside_bytes: u64,
    budget: KvBudget,
) -> Vec<String> {
    let mem_flag = Engine::Vllm.flag(Knob::MemoryShare);
    let mut notes = Vec::new();
    if kv_tokens > 0 && kv_tokens < ctx {
        let ctx_flag = Engine::Vllm.flag(Knob::ContextLength);
        notes.push(if auto_fit {
            // `_auto_fit_max_model_len`: the longest request one worker's KV cache holds
            format!(
                "vLLM cuts {ctx_flag} auto to about {kv_tokens} tokens (the model's {ctx} do not fit its KV cache); a request longer than that is refused"
            )
        } else {
            format!(
                "vLLM refuses to start: {kv_tokens} KV tokens hold no request of {ctx_flag} {ctx}; lower {ctx_flag} or raise {mem_flag}"
            )
        });
    }
    let short_gb = -free_bytes as f64 / 1e9;
    match budget {
        KvBudget::AfterWeights(_) if kv_tokens > 0 && free_bytes < 0 => {
            notes.push(format!(
                "the {:.2} GB per GPU outside {mem_flag} are {short_gb:.2} GB short of the CUDA context, NCCL and CUDA graphs: vLLM may run out of memory",
                outside_bytes as f64 / 1e9,
            ))
        }
        KvBudget::Given(bytes) => {
            let flag = Engine::Vllm.flag(Knob::KvCacheBytes);
            notes.push(format!(
                "{flag} {:.2} GiB: vLLM reserves this cache on each GPU and ignores {mem_flag}",
                bytes as f64 / (1u64 << 30) as f64
            ));
            if free_bytes < 0 {
                notes.push(format!(
                    "the weights, that cache and the reserves are {short_gb:.2} GB more than the card holds: vLLM runs out of memory; lower {flag}"
                ));
            }
        }
        KvBudget::AfterWeights(_) => {}
    }
    notes
}

/// Where the bytes of vLLM's KV cache on one GPU come from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KvBudget {
    /// `gpu_memory_utilization × memory − non_kv_cache` (less each GPU's weights): the
    /// profiled budget.
    AfterWeights(u64),
    /// `--kv-cache-memory-bytes`: given outright.
    Given(u64),
}

impl KvBudget {
    /// The static budget the plan reports, whether the server starts and the bytes it falls
    /// short by. Profiled: `weights` and `non_kv` (the forward pass's peak and vLLM's own
    /// allocations) within `requested`, else short by what the weights overrun (as SGLang's
    /// check words it). Given: the server takes weights, `non_kv`, the drafter's weights and the
    /// cache, `requested` sizes nothing, and it starts if the card holds them and the reserves
    /// (`free_bytes` ≥ 0).
    fn verdict(
        self,
        requested: u64,
        weights: u64,
        non_kv: u64,
        draft_weights: u64,
        free_bytes: i64,
    ) -> (u64, bool, u64) {
        match self {
            KvBudget::AfterWeights(_) => (
                requested,
                weights + non_kv < requested,
                weights.saturating_sub(requested.saturating_sub(non_kv)),
            ),
            KvBudget::Given(bytes) => (
                weights + non_kv + draft_weights + bytes,
                free_bytes >= 0,
                free_bytes.min(0).unsigned_abs(),
            ),
        }
    }

    /// Bytes a GPU's cache has once its `weights` are placed.
    fn for_gpu(self, weights: u64) -> u64 {
        match self {
            KvBudget::AfterWeights(b) => b.saturating_sub(weights),
            KvBudget::Given(b) => b,
        }
    }
}

/// The memory plan vLLM makes for `spec` under `footprint`'s layout on GPUs of `memory_bytes`.
pub fn plan(
    spec: &ModelSpec,
    footprint: &Footprint,
    memory_bytes: u64,
    v: &VllmMemory,
    opts: &ServerOptions,
) -> MemoryPlan {
    let layout = footprint.layout;
    let (tokens_default, seqs_default) = batch_defaults(memory_bytes);
    let seqs = v.max_num_seqs.unwrap_or(seqs_default);
    let requested = (v.gpu_memory_utilization * memory_bytes as f64) as u64;
    let ctx = context_len(spec, opts);
    let tokens = step_budget_tokens(v, tokens_default, seqs, ctx);
    let peak = profile_peak_bytes(spec, &layout, tokens, seqs.min(tokens), ctx);
    let graphs = cudagraph_bytes(opts);
    let graphs_in_budget = if v.estimate_cudagraphs { graphs } else { 0 };
    let per_layer = launch_cell_bytes(spec, footprint, opts);
    let weights = footprint
        .per_gpu
        .iter()
        .map(|g| weight_bytes(spec, footprint, g))
        .max()
        .unwrap_or(0);
    // the holes are still taken from the card, outside the budget
    let weights_on_card = footprint.max_weight_bytes_per_gpu();
    let non_kv = peak + VLLM_NON_TORCH_INCREASE_BYTES + graphs_in_budget;
    let block = kv_block_tokens(spec, opts);
    // the checkpoint's MTP layers: vLLM loads the drafter before it profiles, so its weights
    // come out of the budget, and sizes one cache over every attention layer, the drafter's
    // too (`determine_available_memory`, then `get_kv_cache_config` over the layers of both)
    let (draft_weights, draft_cell) = mtp_draft_bytes(spec, footprint, opts, per_layer);
    let kv_budget = match v.kv_cache_memory_bytes {
        Some(bytes) => KvBudget::Given(bytes),
        None => KvBudget::AfterWeights(requested.saturating_sub(non_kv + draft_weights)),
    };
    let by_memory = tokens_by_memory(spec, footprint, kv_budget, per_layer, block, draft_cell);
    let kv_tokens = by_memory;
    let kv_pool = kv_tokens * per_layer * u64::from(footprint.max_layers_per_stage());
    let reserves = MemoryReserves {
        pre_load_bytes: super::PRE_LOAD_OVERHEAD_BYTES,
        req_to_token_bytes: 0,
        attention_workspace_bytes: VLLM_NON_TORCH_INCREASE_BYTES,
        cuda_graph_bytes: graphs,
        activation_bytes: peak,
        draft_weight_bytes: draft_weights,
        draft_kv_bytes: kv_tokens * draft_cell,
    };
    let free = memory_bytes as i64 - (weights_on_card + kv_pool + reserves.total_bytes()) as i64;
    let auto_fit = opts.context_length_auto_fit;
    let outside_bytes = memory_bytes.saturating_sub(requested);
    let mut notes = sizing_notes(kv_tokens, ctx, auto_fit, free, outside_bytes, kv_budget);
    if let KvBudget::AfterWeights(_) = kv_budget {
        let budget = requested.saturating_sub(non_kv);
        notes.extend(super::thin_pool_note(kv_tokens, kv_pool, budget, weights));
    }
    let (requested, fits, shortfall) =
        kv_budget.verdict(requested, weights, non_kv, draft_weights, free);
    notes.extend(hybrid_note(spec));
    MemoryPlan {
        engine: crate::options::Engine::Vllm,
        weight_bytes_per_gpu: weights,
        reserve_bytes_per_gpu: reserves.total_bytes(),
        kv_pool_bytes_per_gpu: kv_pool,
        kv_tokens,
        kv_block_tokens: block,
        // vLLM's hybrid KV-cache manager (sliding windows, mamba states) is not modelled: a
        // hybrid model's layers are all sized as full attention here (said in the notes)
        swa_kv_tokens: 0,
        state_pool_bytes_per_gpu: 0,
        state_slots: 0,
        gpu_memory_bytes: memory_bytes,
        fits: fits && kv_tokens > 0,
        shortfall_bytes: shortfall,
        kv_cache_given_bytes: match kv_budget {
            KvBudget::Given(bytes) => Some(bytes),
            KvBudget::AfterWeights(_) => None,
        },
        available_before_load_bytes: memory_bytes,
        static_budget_bytes: requested,
        mem_fraction_static: v.gpu_memory_utilization,
        reserves,
        kv_tokens_by_memory: by_memory,
        max_running_requests: seqs,
        context_len: ctx,
        prefill_budget_tokens: u64::from(tokens),
        free_after_reserves_bytes: free,
        notes,
    }
}

/// `max_num_batched_tokens`: given, or the default for the card; unchunked with none given,
/// `max(max_model_len, the default)`, at most `max_num_seqs × max_model_len` (the budget must
/// hold the longest prompt: `EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`).
fn step_budget_tokens(v: &VllmMemory, tokens_default: u32, seqs: u32, ctx: u64) -> u32 {
    let tokens = v.max_num_batched_tokens.unwrap_or(tokens_default);
    if !v.unchunked_default_budget {
        return tokens;
    }
    let ctx = u32::try_from(ctx).unwrap_or(u32::MAX);
    tokens.max(ctx).min(seqs.saturating_mul(ctx))
}

/// vLLM's hybrid KV-cache manager (sliding-window and linear-attention layers) is not modelled:
/// said where the model has such layers.
fn hybrid_note(spec: &ModelSpec) -> Option<String> {
    spec.layer_attention
        .iter()
        .any(|a| *a != models::spec::LayerAttention::Full)
        .then(|| "vLLM's hybrid KV-cache manager (sliding-window and linear-attention layers) is not modelled: every layer is sized as full attention, so the KV tokens are a lower bound".into())
}

/// `--block-size` as vLLM's translation set it (the neutral page), 64 for the indexer.
fn kv_block_tokens(spec: &ModelSpec, opts: &ServerOptions) -> u64 {
    u64::from(if spec.attention.indexer().is_some() {
        VLLM_SPARSE_MLA_BLOCK_SIZE
    } else {
        opts.page_size.max(1)
    })
}

/// Whole blocks of KV the tightest pipeline stage's first TP rank has room for: what is left of
/// the `--gpu-memory-utilization` budget after its weights and `non_kv_budget`, over one token's
/// cells on that stage's layers (and the MTP drafter's, `draft_cell`, on the last stage); 0 when
/// no rank is listed.
fn tokens_by_memory(
    spec: &ModelSpec,
    footprint: &Footprint,
    budget: KvBudget,
    per_layer: u64,
    block: u64,
    draft_cell: u64,
) -> u64 {
    footprint
        .per_gpu
        .iter()
        .filter(|g| g.tp_rank == 0)
        .map(|g| {
            let available = budget.for_gpu(weight_bytes(spec, footprint, g));
            let cell = gpu_cell_bytes(spec, g, per_layer, draft_cell);
            available.checked_div(cell * block).unwrap_or(0) * block
        })
        .min()
        .unwrap_or(0)
}

/// The MTP drafter's weight bytes and its KV cell per token (its layers at `per_layer` bytes each),
/// `(0, 0)` without one.
fn mtp_draft_bytes(
    spec: &ModelSpec,
    footprint: &Footprint,
    opts: &ServerOptions,
    per_layer: u64,
) -> (u64, u64) {
    super::mtp_draft(spec, footprint, opts).map_or((0, 0), |(w, _)| {
        (w, per_layer * u64::from(spec.num_mtp_layers))
    })
}

/// KV bytes one token takes on GPU `g`: a cell on each of its stage's layers, and the MTP
/// drafter's (`draft_cell`) on the last stage, where the drafter's layers sit.
fn gpu_cell_bytes(spec: &ModelSpec, g: &GpuFootprint, per_layer: u64, draft_cell: u64) -> u64 {
    let draft = if g.layers.end >= spec.num_layers {
        draft_cell
    } else {
        0
    };
    per_layer * u64::from(g.layers.end - g.layers.start) + draft
}

/// The least `--kv-cache-memory-bytes` that holds one block of KV tokens on every GPU of the
/// layout (the busiest stage's cells, the drafter's included): a smaller cache holds no token.
pub fn one_block_bytes(spec: &ModelSpec, footprint: &Footprint, opts: &ServerOptions) -> u64 {
    let per_layer = launch_cell_bytes(spec, footprint, opts);
    let (_, draft_cell) = mtp_draft_bytes(spec, footprint, opts, per_layer);
    let block = kv_block_tokens(spec, opts);
    footprint
        .per_gpu
        .iter()
        .map(|g| gpu_cell_bytes(spec, g, per_layer, draft_cell) * block)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {

    /// A KV cache that holds no request of the model's length: vLLM refuses to start, unless
    /// `--max-model-len auto` lets it cut the length to what the cache holds.
    #[test]
    fn a_short_cache_refuses_the_length_or_cuts_it_under_auto() {
        let refused =
            sizing_notes(6_752, 262_144, false, 0, 0, KvBudget::AfterWeights(0)).join(" ");
        assert!(refused.contains("vLLM refuses to start"), "{refused}");
        let cut = sizing_notes(6_752, 262_144, true, 0, 0, KvBudget::AfterWeights(0)).join(" ");
        assert!(
            cut.contains("cuts --max-model-len auto to about 6752 tokens")
                && !cut.contains("refuses"),
            "{cut}"
        );
        assert!(sizing_notes(300_000, 262_144, true, 0, 0, KvBudget::AfterWeights(0)).is_empty());
    }
    use super::*;

    /// The user's card (97,887 MiB RTX PRO 6000) is in vLLM's large tier.
    #[test]
    fn batch_defaults_follow_the_card() {
        assert_eq!(batch_defaults(97_887 << 20), (8192, 1024));
        assert_eq!(batch_defaults(48 << 30), (2048, 256));
    }

    /// GLM-5.1's indexer (head_dim 128: 132 bytes an entry) at its logged --max-model-len 202,752
    /// holds 40 × 202,752 × 132 bytes (1.0 GiB) plus the 1 MiB top-k workspace, and a 512 MiB
    /// logits stand-in in the forward pass; a model without an indexer holds neither.
    #[test]
    fn indexer_profile_workspace_follows_max_model_len() {
        let glm = ModelSpec::preset("glm-5.1-nvfp4").unwrap();
        let (persistent, logits) = indexer_profile_bytes(&glm, 202_752);
        assert_eq!(persistent, 40 * 202_752 * 132 + (1 << 20));
        assert_eq!(logits, 512 << 20);
        let (half, _) = indexer_profile_bytes(&glm, 101_376);
        assert!(half < persistent / 2 + (1 << 20));
        let kimi = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
        assert_eq!(indexer_profile_bytes(&kimi, 262_144), (0, 0));
    }

    /// vLLM's weights leave out the allocator holes of the expert post-processing: GLM-5.1-NVFP4
    /// TP8 holds 55.62 GiB by this count (its log: 'Model loading took 55.67 GiB'), 1.85 GiB
    /// below the footprint's SGLang figure; an FP8 checkpoint without post-processing loses
    /// only the allocator's rounding and segment tails (under 0.3%).
    #[test]
    fn weights_are_the_allocated_bytes() {
        let gib = (1u64 << 30) as f64;
        let glm = ModelSpec::preset("glm-5.1-nvfp4").unwrap();
        let fp = models::footprint::footprint(&glm, &Layout::tp(8)).unwrap();
        let vllm = weight_bytes(&glm, &fp, &fp.per_gpu[0]) as f64 / gib;
        let sglang = fp.per_gpu[0].total_weight_bytes as f64 / gib;
        assert!((vllm / 55.67 - 1.0).abs() < 0.01, "{vllm:.2} GiB");
        assert!(
            (1.7..2.0).contains(&(sglang - vllm)),
            "{sglang:.2} - {vllm:.2} GiB"
        );
        let minimax = ModelSpec::preset("minimax-m2.5").unwrap();
        let fp = models::footprint::footprint(&minimax, &Layout::tp(4)).unwrap();
        let g = &fp.per_gpu[0];
        let lost = 1.0 - weight_bytes(&minimax, &fp, g) as f64 / g.total_weight_bytes as f64;
        assert!((0.0..0.003).contains(&lost), "{lost:.5}");
    }

    /// A preset at TP8 with vLLM at `utilization` of the card, batch defaults, no graph estimate.
    fn tp8_at(preset: &str, utilization: f64) -> (ModelSpec, Footprint, VllmMemory) {
        let spec = ModelSpec::preset(preset).unwrap();
        let fp = models::footprint::footprint(&spec, &Layout::tp(8)).unwrap();
        let v = VllmMemory {
            gpu_memory_utilization: utilization,
            max_num_batched_tokens: None,
            max_num_seqs: None,
            estimate_cudagraphs: false,
            unchunked_default_budget: false,
            kv_cache_memory_bytes: None,
        };
        (spec, fp, v)
    }

    #[test]
    fn the_checkpoints_mtp_drafter_takes_its_weights_and_a_layer_of_cache() {
        // GLM-5.1's MTP layer keeps its routed experts in bf16 (the checkpoint's exclusion
        // list): at TP8 about 2.5 GB a GPU that vLLM loads before it sizes the cache
        let (spec, fp, v) = tp8_at("glm-5.1-nvfp4", 0.865);
        let off = ServerOptions {
            kv_cache_dtype: Some(models::KvDtype::Fp8),
            cuda_graph_max_bs: 256,
            context_length: Some(202_752),
            ..ServerOptions::default()
        };
        let on = ServerOptions {
            speculative: Some(crate::engine::draft::recipe_draft("EAGLE", None)),
            ..off.clone()
        };
        let card = 97_887u64 << 20;
        let (a, b) = (
            plan(&spec, &fp, card, &v, &off),
            plan(&spec, &fp, card, &v, &on),
        );
        let w = b.reserves.draft_weight_bytes;
        assert!((2.0e9..3.0e9).contains(&(w as f64)), "{w} draft bytes");
        assert_eq!(a.reserves.draft_weight_bytes, 0);
        // the drafter's weights and its one layer of cache come out of the same pool
        let cell = |p: &MemoryPlan| p.kv_pool_bytes_per_gpu as f64 / p.kv_tokens as f64;
        let lost = (a.kv_tokens - b.kv_tokens) as f64 * cell(&a);
        let draft_cache = b.reserves.draft_kv_bytes as f64;
        assert!(
            (lost - (w as f64 + draft_cache)).abs() < 64.0 * cell(&a) + 1e6,
            "{lost} lost vs {w} + {draft_cache}"
        );
        // a separate draft model (EAGLE-3) is not planned: its size is not known here
        let eagle = ServerOptions {
            speculative: Some(crate::engine::draft::recipe_draft("EAGLE3", Some("head"))),
            ..off.clone()
        };
        assert_eq!(plan(&spec, &fp, card, &v, &eagle).kv_tokens, a.kv_tokens);
    }

    /// `--kv-cache-memory-bytes`: the cache holds those bytes on each GPU (whole blocks, never
    /// more) whatever `--gpu-memory-utilization` says, the plan says so, and a cache the card
    /// cannot hold beside the weights does not fit (`checked_plan` names the flag).
    #[test]
    fn a_given_kv_cache_size_sets_the_pool_and_the_memory_share_sizes_nothing() {
        let card = 97_887u64 << 20;
        let opts = ServerOptions {
            kv_cache_dtype: Some(models::KvDtype::Fp8),
            cuda_graph_max_bs: 256,
            context_length: Some(202_752),
            ..ServerOptions::default()
        };
        let given = 20u64 << 30;
        let pools: Vec<MemoryPlan> = [0.5, 0.9, 0.95]
            .iter()
            .map(|&u| {
                let (spec, fp, v) = tp8_at("glm-5.1-nvfp4", u);
                let v = VllmMemory {
                    kv_cache_memory_bytes: Some(given),
                    ..v
                };
                plan(&spec, &fp, card, &v, &opts)
            })
            .collect();
        for p in &pools {
            assert_eq!(p.kv_tokens, pools[0].kv_tokens);
            assert!(p.fits, "{:?}", p.notes);
            let cell = p.kv_pool_bytes_per_gpu as f64 / p.kv_tokens as f64;
            let left = given as f64 - p.kv_pool_bytes_per_gpu as f64;
            // whole blocks of the pool's block size, never more than given
            assert!(
                (0.0..cell * p.kv_block_tokens as f64).contains(&left),
                "{left}"
            );
            assert!(
                p.notes
                    .iter()
                    .any(|n| n.contains("--kv-cache-memory-bytes 20.00 GiB"))
            );
        }
        // the profiled pool at 0.9 differs: the share no longer sizes it
        let (spec, fp, v) = tp8_at("glm-5.1-nvfp4", 0.9);
        assert_ne!(
            plan(&spec, &fp, card, &v, &opts).kv_tokens,
            pools[0].kv_tokens
        );
        // 45 GiB beside ~56 GiB of weights: more than the card
        let big = ServerOptions {
            vllm_memory: Some(VllmMemory {
                kv_cache_memory_bytes: Some(45u64 << 30),
                ..v
            }),
            engine: crate::options::Engine::Vllm,
            ..opts.clone()
        };
        let p = plan(&spec, &fp, card, big.vllm_memory.as_ref().unwrap(), &big);
        assert!(!p.fits && p.shortfall_bytes > 0, "{:?}", p.notes);
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("more than the card holds"))
        );
        let e = super::super::checked_plan(&spec, &fp, card, &big)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--kv-cache-memory-bytes 45.00 GiB") && e.contains("more than the"),
            "{e}"
        );
        // a cache of plain bytes smaller than one block (a unit left off) holds no token: said
        // so with the block's bytes, not sent to raise the memory share
        let block = one_block_bytes(&spec, &fp, &opts);
        for given in [1, block - 1] {
            let tiny = ServerOptions {
                vllm_memory: Some(VllmMemory {
                    kv_cache_memory_bytes: Some(given),
                    ..v
                }),
                engine: crate::options::Engine::Vllm,
                ..opts.clone()
            };
            let e = super::super::checked_plan(&spec, &fp, card, &tiny)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!(
                    "--kv-cache-memory-bytes {given} (bytes) holds no KV token"
                )) && e.contains(&format!("takes {block} bytes"))
                    && !e.contains("--gpu-memory-utilization"),
                "{e}"
            );
        }
        let one = ServerOptions {
            vllm_memory: Some(VllmMemory {
                kv_cache_memory_bytes: Some(block),
                ..v
            }),
            engine: crate::options::Engine::Vllm,
            ..opts.clone()
        };
        let p = super::super::checked_plan(&spec, &fp, card, &one).unwrap();
        assert_eq!(p.kv_tokens, p.kv_block_tokens);
    }

    /// Kimi-K2.6 at TP8, fp8 KV, 0.94 on the user's card: the KV tokens vLLM would print,
    /// beside the 478,992 the rtx6kpro Kimi-K2.6 v4 page reports for that launch (DCP 1, MTP
    /// off); DCP d multiplies them by d.
    #[test]
    fn kimi_k26_tp8_kv_tokens_beside_the_published_line() {
        let (spec, fp, v) = tp8_at("kimi-k2-thinking-int4", 0.94);
        let opts = |dcp: u32| ServerOptions {
            kv_cache_dtype: Some(models::KvDtype::Fp8),
            cuda_graph_max_bs: 512,
            decode_context_parallel: dcp,
            context_length: Some(262_144),
            ..ServerOptions::default()
        };
        let card = 97_887u64 << 20;
        let one = plan(&spec, &fp, card, &v, &opts(1));
        let err = (one.kv_tokens as f64 - 478_992.0) / 478_992.0;
        assert!(
            err.abs() < 0.10,
            "{} tokens ({:+.1}%)",
            one.kv_tokens,
            err * 100.0
        );
        assert!(one.fits && one.notes.is_empty(), "{:?}", one.notes);
        let eight = plan(&spec, &fp, card, &v, &opts(8));
        assert!(eight.kv_tokens >= 8 * one.kv_tokens - 8 * 16);
        let graphs = plan(
            &spec,
            &fp,
            card,
            &VllmMemory {
                estimate_cudagraphs: true,
                ..v
            },
            &opts(1),
        );
        assert!(graphs.kv_tokens < one.kv_tokens);
    }
}
