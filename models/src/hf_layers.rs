//! The HF config fields of families whose layers differ from one another (gpt-oss's
//! `layer_types`, Qwen3-Next / Qwen3.5's `full_attention_interval` and `linear_*` Gated-DeltaNet
//! fields) and Qwen's single shared expert; read for [`crate::hf`].

use crate::error::Result;
use crate::hf_fields::{
    Fields, MAX_HEAD_DIM, MAX_HEADS, MAX_INTERMEDIATE, MAX_LAYERS, per_layer_kinds,
};
use crate::spec::{LayerAttention, LinearAttentionSpec};
use serde_json::Value;

/// Qwen3-Next / Qwen3.5's one shared expert (`shared_expert_intermediate_size`), counted in
/// routed-expert widths; it must be a whole number of them.
pub(crate) fn shared_experts(f: &Fields, expert_inter: u64) -> Result<u32> {
    match f.opt_int("shared_expert_intermediate_size", 0, MAX_INTERMEDIATE)? {
        None | Some(0) => Ok(0),
        Some(s) if s.is_multiple_of(expert_inter) => Ok((s / expert_inter) as u32),
        Some(s) => Err(f.err(
            "shared_expert_intermediate_size",
            format!("{s} is not a multiple of moe_intermediate_size {expert_inter}"),
        )),
    }
}

/// The attention kind of each layer: `layer_types` when given (`full_attention`,
/// `sliding_attention`, `linear_attention`) for gpt-oss and the Qwen3-Next family, else for the
/// latter every `full_attention_interval`-th layer full and the others linear; empty (all full)
/// otherwise.
pub(crate) fn layer_kinds(
    f: &Fields,
    model_type: &str,
    num_layers: u64,
) -> Result<Vec<LayerAttention>> {
    let kinds = [
        ("full_attention", LayerAttention::Full),
        ("sliding_attention", LayerAttention::Sliding),
        ("linear_attention", LayerAttention::Linear),
    ];
    // Other families' `layer_types` name other things (GLM-5.2: `deepseek_sparse_attention`).
    if !matches!(model_type, "gpt_oss" | "qwen3_next" | "qwen3_5_moe_text") {
        return Ok(Vec::new());
    }
    if let Some(types) = per_layer_kinds(f, "layer_types", num_layers, &kinds)? {
        return Ok(types);
    }
    if model_type == "gpt_oss" {
        return Ok(Vec::new());
    }
    let every = f.dim("full_attention_interval", MAX_LAYERS)?;
    Ok((0..num_layers)
        .map(|i| match (i + 1) % every {
            0 => LayerAttention::Full,
            _ => LayerAttention::Linear,
        })
        .collect())
}

/// Which layers run their own DSA indexer (the rest reuse the previous layer's top-k), read in
/// the order transformers' `GlmMoeDsaConfig.__post_init__` and SGLang's `model_config.py` read
/// them: `indexer_types` (`full` / `shared`), else `index_topk_pattern` (`F` / `S` a layer,
/// as a string or a list), else every `index_topk_freq`-th layer from
/// `index_skip_topk_offset` (default 2; a frequency of 1, or none, is every layer). Empty
/// means every layer.
pub(crate) fn indexer_layers(f: &Fields, num_layers: u64) -> Result<Vec<bool>> {
    let types = [("full", true), ("shared", false)];
    if let Some(v) = per_layer_kinds(f, "indexer_types", num_layers, &types)? {
        return Ok(v);
    }
    if let Some(Value::String(p)) = f.present("index_topk_pattern") {
        return crate::spec::indexer_pattern(p, num_layers)
            .map_err(|e| f.err("index_topk_pattern", e));
    }
    let letters = [("F", true), ("S", false)];
    if let Some(v) = per_layer_kinds(f, "index_topk_pattern", num_layers, &letters)? {
        return Ok(v);
    }
    let freq = f.opt_int("index_topk_freq", 1, MAX_LAYERS)?.unwrap_or(1);
    if freq <= 1 {
        return Ok(Vec::new());
    }
    let offset = f
        .opt_int("index_skip_topk_offset", 0, MAX_LAYERS)?
        .unwrap_or(2);
    Ok((0..num_layers)
        .map(|i| (i + 1).saturating_sub(offset).is_multiple_of(freq))
        .collect())
}

/// The Gated-DeltaNet block (`linear_*`), its state dtype from `mamba_ssm_dtype` (SGLang's
/// default float32 when absent).
pub(crate) fn linear_attention(f: &Fields) -> Result<LinearAttentionSpec> {
    let u = Fields::as_u32;
    let state_dtype_bytes = match f.present("mamba_ssm_dtype") {
        None => 4,
        Some(Value::String(s)) if s == "float32" => 4,
        Some(Value::String(s)) if s == "bfloat16" || s == "float16" => 2,
        Some(v) => {
            return Err(f.err(
                "mamba_ssm_dtype",
                format!("{v} is not float32, bfloat16 or float16"),
            ));
        }
    };
    Ok(LinearAttentionSpec {
        num_key_heads: u(f.dim("linear_num_key_heads", MAX_HEADS)?),
        num_value_heads: u(f.dim("linear_num_value_heads", MAX_HEADS)?),
        key_head_dim: u(f.dim("linear_key_head_dim", MAX_HEAD_DIM)?),
        value_head_dim: u(f.dim("linear_value_head_dim", MAX_HEAD_DIM)?),
        conv_kernel: u(f.dim("linear_conv_kernel_dim", 64)?),
        state_dtype_bytes,
        state_dtype_stated: f.present("mamba_ssm_dtype").is_some(),
    })
}
