//! The attention block of an HF config: MLA (DeepSeek / Kimi / GLM-5, with the DSA indexer where
//! the config has one) or grouped-query attention with its biases, output gate, sinks and the
//! share of each head RoPE rotates; read for [`crate::hf`].

use crate::error::Result;
use crate::hf_fields::{Fields, MAX_HEAD_DIM, MAX_HEADS, MAX_RANK};
use crate::spec::{AttentionSpec, DsaIndexer};

fn is_mla(model_type: &str) -> bool {
    matches!(
        model_type,
        "deepseek_v3" | "kimi_k2" | "deepseek_v32" | "glm_moe_dsa"
    )
}

pub(crate) fn attention(f: &Fields, model_type: &str, hidden: u64) -> Result<AttentionSpec> {
    let u = Fields::as_u32;
    let num_heads = f.dim("num_attention_heads", MAX_HEADS)?;
    if is_mla(model_type) {
        let indexer = if matches!(model_type, "deepseek_v32" | "glm_moe_dsa") {
            Some(DsaIndexer {
                num_heads: u(f.dim("index_n_heads", MAX_HEADS)?),
                head_dim: u(f.dim("index_head_dim", MAX_HEAD_DIM)?),
                topk: u(f.dim("index_topk", 1 << 24)?),
            })
        } else {
            None
        };
        return Ok(AttentionSpec::Mla {
            num_heads: u(num_heads),
            q_lora_rank: f.opt_int("q_lora_rank", 1, MAX_RANK)?.map(u),
            kv_lora_rank: u(f.dim("kv_lora_rank", MAX_RANK)?),
            qk_nope_head_dim: u(f.dim("qk_nope_head_dim", MAX_HEAD_DIM)?),
            qk_rope_head_dim: u(f.dim("qk_rope_head_dim", MAX_HEAD_DIM)?),
            v_head_dim: u(f.dim("v_head_dim", MAX_HEAD_DIM)?),
            indexer,
        });
    }
    let num_kv_heads = f
        .opt_int("num_key_value_heads", 1, MAX_HEADS)?
        .unwrap_or(num_heads);
    if num_heads % num_kv_heads != 0 {
        return Err(f.err(
            "num_key_value_heads",
            format!("{num_kv_heads} does not divide num_attention_heads {num_heads}"),
        ));
    }
    let head_dim = match f.opt_int("head_dim", 1, MAX_HEAD_DIM)? {
        Some(d) => d,
        None if hidden.is_multiple_of(num_heads) && hidden / num_heads <= MAX_HEAD_DIM => {
            hidden / num_heads
        }
        None => {
            return Err(f.err(
                "num_attention_heads",
                format!("{num_heads} does not divide hidden_size {hidden} and head_dim is missing"),
            ));
        }
    };
    // Qwen2 always has q/k/v biases; GLM-4.5/4.7 configs set attention_bias true.
    let default_bias = matches!(model_type, "qwen2" | "glm4_moe");
    let qkv_bias = f.opt_bool("attention_bias")?.unwrap_or(default_bias);
    // Qwen3-Next's attention is always gated (its config has no key for it); Qwen3.5 says so.
    let output_gate = f
        .opt_bool("attn_output_gate")?
        .unwrap_or(model_type == "qwen3_next");
    // SGLang's `glm4_moe.py` rotates half of each head when the config does not say
    // (`getattr(config, "partial_rotary_factor", 0.5)`); everyone else the whole head.
    let rotary = f
        .opt_fraction("partial_rotary_factor")?
        .unwrap_or(if model_type == "glm4_moe" { 0.5 } else { 1.0 });
    // MiniMax-M2 names the rotated dimensions outright (`rotary_dim`).
    let rotary_dim = match f.opt_int("rotary_dim", 1, head_dim)? {
        Some(d) if d < head_dim => Some(d as u32),
        Some(_) => None,
        None => (rotary < 1.0).then_some((head_dim as f64 * rotary) as u32),
    };
    Ok(AttentionSpec::Gqa {
        num_heads: num_heads as u32,
        num_kv_heads: num_kv_heads as u32,
        head_dim: head_dim as u32,
        rotary_dim,
        qkv_bias,
        output_gate,
        sinks: model_type == "gpt_oss",
    })
}
