//! How one GPU of a layout holds a layer's modules: the fraction of each [`Shard`] kind it keeps
//! and the ways GQA's KV heads are split. Read by the footprint (weights and KV cache), the
//! load replay's tensor shapes and the cost model's GEMM shapes, so the split is written once.

use crate::layout::Layout;
use crate::spec::{AttentionSpec, ModelPart, ModelSpec, Shard};

/// Fraction of a module of kind `base`, split as `shard`, that one GPU of `layout` holds.
pub fn gpu_share(spec: &ModelSpec, layout: &Layout, shard: Shard, base: ModelPart) -> f64 {
    let tp = layout.tp.max(1) as f64;
    if layout.dp_attention && matches!(base, ModelPart::Attention | ModelPart::Indexer) {
        return 1.0;
    }
    match shard {
        Shard::Replicated => 1.0,
        Shard::Tp => 1.0 / tp,
        Shard::KvHeads => match spec.attention {
            AttentionSpec::Gqa { .. } => 1.0 / kv_head_split(spec, layout) as f64,
            AttentionSpec::Mla { .. } => 1.0 / tp,
        },
    }
}

/// Ways GQA's KV heads are split over one GPU's attention group: `min(tp, num_kv_heads)` (one
/// head per rank, i.e. replicated, when `num_kv_heads < tp`; SGLang `QKVParallelLinear`), 1
/// under DP attention, where each GPU holds every head. MLA's latent is not split (1). The one
/// place the KV split under TP is written: [`gpu_share`] (the k/v weights) and
/// [`crate::footprint::Footprint::kv_bytes_per_token_per_layer_per_gpu`] (the cache) both read it.
pub fn kv_head_split(spec: &ModelSpec, layout: &Layout) -> u32 {
    match spec.attention {
        AttentionSpec::Gqa { num_kv_heads, .. } if !layout.dp_attention => {
            layout.tp.max(1).min(num_kv_heads.max(1))
        }
        _ => 1,
    }
}
