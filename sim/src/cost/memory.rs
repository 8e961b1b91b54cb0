//! How a layout uses each GPU's memory, the way SGLang sizes its KV pool.
//!
//! SGLang keeps `(1 − mem_fraction_static) × memory` for activations and CUDA graphs, loads the
//! weights, and gives the rest of the static share to the KV pool. So per GPU:
//!
//! ```text
//! kv_pool = mem_fraction_static × memory − weights − reserve
//! reserve = 1.0 GB  (CUDA context ≈ 0.5 GB, NCCL communicator buffers and GEMM/attention
//!                    workspaces ≈ 0.5 GB: allocated before the pool is sized, outside torch)
//! kv_tokens = kv_pool / (KV bytes per token + DSA index-key bytes per token) on that GPU
//! ```
//!
//! Each pipeline stage has its own pool; the engine holds as many tokens as the tightest stage.
//! Under attention-DP every GPU caches its own requests, so `kv_tokens` is per DP replica and the
//! engine holds `tp ×` that many. GB are 1e9 bytes.

use super::MemoryPlan;
use crate::error::{Result, SimError};
use crate::options::ServerOptions;
use models::footprint::Footprint;
use models::{KvDtype, Layout, ModelSpec};

/// Bytes per GPU held back inside the static share before the KV pool is sized (see module docs).
pub const RUNTIME_RESERVE_BYTES: u64 = 1_000_000_000;

/// Activation memory a forward pass of `tokens` tokens needs at its peak on one GPU, a rough
/// bound used to warn when `1 − mem_fraction_static` leaves too little: hidden states and
/// residuals (a few copies of T·h bf16), the MoE's routed intermediate (T·k·2·I/tp·bf16) and
/// the logits of one chunk (T·vocab/tp·fp32).
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

/// The memory plan of `spec` under `layout` on GPUs of `memory_bytes`, whether it fits or not.
pub fn plan(
    spec: &ModelSpec,
    footprint: &Footprint,
    memory_bytes: u64,
    opts: &ServerOptions,
) -> MemoryPlan {
    let dtype = kv_dtype(spec, opts);
    let budget = (opts.mem_fraction_static * memory_bytes as f64) as u64;
    let kv_per_layer = spec.kv_bytes_per_token_per_layer(dtype)
        / match spec.attention {
            models::spec::AttentionSpec::Gqa { num_kv_heads, .. } if !footprint.layout.dp_attention => {
                footprint.layout.tp.min(num_kv_heads.max(1)) as u64
            }
            _ => 1,
        }
        + spec.indexer_cache_bytes_per_token_per_layer();
    let weights = footprint.max_weight_bytes_per_gpu();
    // tightest stage: each stage's pool over its own layers' bytes per token
    let mut kv_tokens = u64::MAX;
    let mut kv_pool_min = u64::MAX;
    for g in footprint.per_gpu.iter().filter(|g| g.tp_rank == 0) {
        let pool = budget.saturating_sub(g.total_weight_bytes + RUNTIME_RESERVE_BYTES);
        let per_token = kv_per_layer * u64::from(g.layers.end - g.layers.start);
        kv_tokens = kv_tokens.min(pool.checked_div(per_token).unwrap_or(u64::MAX));
        kv_pool_min = kv_pool_min.min(pool);
    }
    if kv_tokens == u64::MAX {
        kv_tokens = 0;
    }
    let needed = weights + RUNTIME_RESERVE_BYTES;
    MemoryPlan {
        weight_bytes_per_gpu: weights,
        reserve_bytes_per_gpu: RUNTIME_RESERVE_BYTES,
        kv_pool_bytes_per_gpu: if kv_pool_min == u64::MAX { 0 } else { kv_pool_min },
        kv_tokens,
        gpu_memory_bytes: memory_bytes,
        fits: needed < budget && kv_tokens > 0,
        shortfall_bytes: needed.saturating_sub(budget),
    }
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
    let budget = opts.mem_fraction_static * memory_bytes as f64;
    Err(SimError::DoesNotFit {
        model: spec.name.clone(),
        layout: footprint.layout.short_name(),
        weights_gb: p.weight_bytes_per_gpu as f64 / 1e9,
        reserve_gb: p.reserve_bytes_per_gpu as f64 / 1e9,
        budget_gb: budget / 1e9,
        memory_gb: memory_bytes as f64 / 1e9,
        shortfall_gb: (p.shortfall_bytes.max(1)) as f64 / 1e9,
    })
}

/// Most requests of `context_tokens` tokens each that the KV pool holds at once (all DP replicas).
pub fn max_requests_at_context(plan: &MemoryPlan, layout: &Layout, context_tokens: u64) -> u64 {
    let replicas = if layout.dp_attention { layout.tp as u64 } else { 1 };
    plan.kv_tokens.saturating_mul(replicas) / context_tokens.max(1)
}
