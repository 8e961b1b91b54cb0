//! Layers that do not all run the same attention: sliding-window layers beside full ones
//! (gpt-oss) and Gated-DeltaNet linear-attention layers beside full ones (Qwen3-Next, Qwen3.5).
//!
//! What each kind keeps per request, as SGLang allocates it:
//! - full softmax attention: one KV cell per token of context (the KV pool);
//! - sliding window: one KV cell per token, but only the last `window` tokens are ever read
//!   and SGLang's SWA pool (`model_runner.py::set_num_token_hybrid`, `SWAKVPool`) frees what
//!   falls out of the window: at most `window` tokens per request for decode;
//! - Gated DeltaNet: a fixed-size recurrent state of `value_heads × key_dim × value_dim`
//!   values in `mamba_ssm_dtype` (fp32 by default) plus the short convolution's last
//!   `conv_kernel − 1` inputs (bf16), whatever the context length. SGLang sizes these as
//!   `configs/mamba_utils.py::Mamba2CacheParams.mamba_cache_per_req` (from
//!   `configs/qwen3_next.py::Qwen3NextConfig.mamba2_cache_params`): conv state
//!   `(conv_dim / tp, kernel − 1)` with `conv_dim = 2·key_heads·key_dim + value_heads·value_dim`,
//!   temporal state `(value_heads / tp, key_dim, value_dim)`, times the linear layers.

use super::ModelSpec;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The attention one main-model layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerAttention {
    /// Softmax attention over the whole context (`full_attention`).
    Full,
    /// Softmax attention over the last [`ModelSpec::sliding_window`] tokens
    /// (`sliding_attention`).
    Sliding,
    /// Gated DeltaNet linear attention (`linear_attention`): a recurrent state, no KV cache.
    Linear,
}

/// A Gated-DeltaNet linear-attention block (`linear_*` fields of Qwen3-Next / Qwen3.5 configs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinearAttentionSpec {
    /// `linear_num_key_heads` (q and k heads).
    pub num_key_heads: u32,
    /// `linear_num_value_heads` (v heads; the recurrent state has one matrix per v head).
    pub num_value_heads: u32,
    /// `linear_key_head_dim`.
    pub key_head_dim: u32,
    /// `linear_value_head_dim`.
    pub value_head_dim: u32,
    /// `linear_conv_kernel_dim`: the short causal convolution's width.
    pub conv_kernel: u32,
    /// Bytes per recurrent-state value: the config's `mamba_ssm_dtype`, else SGLang's
    /// `--mamba-ssm-dtype` default (float32, 4 B).
    pub state_dtype_bytes: u32,
    /// The config names `mamba_ssm_dtype` (Qwen3.5: float32). Where it does not (Qwen3-Next),
    /// vLLM keeps the state in the model's dtype ([`Self::with_state_dtype_bytes`] by the engine).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub state_dtype_stated: bool,
}

impl LinearAttentionSpec {
    /// This block with its recurrent state held at `bytes` a value.
    pub fn with_state_dtype_bytes(mut self, bytes: u32) -> LinearAttentionSpec {
        self.state_dtype_bytes = bytes;
        self
    }

    /// Channels of the short convolution: q, k and v together.
    pub fn conv_dim(&self) -> u64 {
        2 * self.num_key_heads as u64 * self.key_head_dim as u64
            + self.num_value_heads as u64 * self.value_head_dim as u64
    }

    /// Bytes of one request's state in one layer on a GPU holding `1/tp` of the heads (conv
    /// state in bf16 + recurrent state in the state dtype), as SGLang's `mamba_cache_per_req`.
    pub fn state_bytes_per_request(&self, tp: u32) -> u64 {
        let tp = tp.max(1) as u64;
        let conv = self.conv_dim() / tp * (self.conv_kernel.saturating_sub(1) as u64) * 2;
        let temporal = self.num_value_heads as u64 / tp
            * self.key_head_dim as u64
            * self.value_head_dim as u64
            * self.state_dtype_bytes as u64;
        conv + temporal
    }

    /// FLOPs of one decoded token in one layer, all heads: read the state `S` (`dk × dv` per v
    /// head), decay it, apply the delta-rule rank-1 update (`S·k`, `k ⊗ (v − S·k)`) and read out
    /// `S·q`: four multiply-adds per state value, `8·heads·dk·dv` FLOPs.
    pub fn decode_flops_per_token(&self) -> f64 {
        8.0 * self.num_value_heads as f64 * self.key_head_dim as f64 * self.value_head_dim as f64
    }

    /// FLOPs per prefill token in one layer with the chunked algorithm (fla's
    /// `chunk_gated_delta_rule`, chunks of [`GDN_CHUNK_TOKENS`]): the state terms of decode plus
    /// attention inside the chunk (`q·kᵀ` and `(q·kᵀ)·v` over up to `C` keys, and the WY
    /// transform's `k·kᵀ`), `heads·(8·dk·dv + 2·C·(2·dk + dv))`.
    pub fn prefill_flops_per_token(&self) -> f64 {
        let (dk, dv) = (self.key_head_dim as f64, self.value_head_dim as f64);
        let c = GDN_CHUNK_TOKENS;
        self.num_value_heads as f64 * (8.0 * dk * dv + 2.0 * c * (2.0 * dk + dv))
    }
}

/// Tokens per chunk of the chunked Gated-DeltaNet prefill kernel (flash-linear-attention's
/// `chunk_gated_delta_rule` uses 64; SGLang calls it from `hybrid_linear_attn_backend.py`).
pub const GDN_CHUNK_TOKENS: f64 = 64.0;

/// SGLang's `--mamba-full-memory-ratio` default (`server_args.py`): the state pool gets
/// `ratio / (1 + ratio)` of what the weights leave (`handle_max_mamba_cache`).
pub const MAMBA_FULL_MEMORY_RATIO: f64 = 0.9;

/// SGLang's `MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO` (`model_runner_kv_cache_mixin.py`):
/// with the radix cache on, `max_running_requests` is at most a third of the state slots.
pub const MAMBA_SLOTS_PER_RUNNING_REQUEST: u64 = 3;

/// SGLang's `--swa-full-tokens-ratio` default: the sliding-window pool holds this share of the
/// full pool's tokens (`model_runner.py::set_num_token_hybrid`).
pub const SWA_FULL_TOKENS_RATIO: f64 = 0.8;

impl ModelSpec {
    /// The attention main-model layer `layer` runs; MTP layers (and every layer of a model
    /// without `layer_attention`) are full.
    pub fn layer_attention(&self, layer: u32) -> LayerAttention {
        self.layer_attention
            .get(layer as usize)
            .copied()
            .unwrap_or(LayerAttention::Full)
    }

    /// Main-model layers in `layers` that run `kind`.
    pub fn num_layers_of_kind_in(&self, kind: LayerAttention, layers: Range<u32>) -> u32 {
        layers.filter(|&l| self.layer_attention(l) == kind).count() as u32
    }

    /// Main-model layers that run `kind`.
    pub fn num_layers_of_kind(&self, kind: LayerAttention) -> u32 {
        self.num_layers_of_kind_in(kind, 0..self.num_layers)
    }

    /// True when some layers are not full attention.
    pub fn is_hybrid_attention(&self) -> bool {
        self.layer_attention
            .iter()
            .any(|k| *k != LayerAttention::Full)
    }

    /// Gated-DeltaNet state bytes one request holds on one GPU of `tp` attention ranks over
    /// `layers` (0 without linear layers).
    pub fn linear_state_bytes_per_request_in(&self, tp: u32, layers: Range<u32>) -> u64 {
        self.linear_attention.map_or(0, |la| {
            self.num_layers_of_kind_in(LayerAttention::Linear, layers) as u64
                * la.state_bytes_per_request(tp)
        })
    }

    /// [`Self::linear_state_bytes_per_request_in`] over all main-model layers, unsharded.
    pub fn linear_state_bytes_per_request(&self) -> u64 {
        self.linear_state_bytes_per_request_in(1, 0..self.num_layers)
    }

    /// Tokens a sliding layer keeps for a request of `context_tokens` (all of them in a full layer).
    pub fn sliding_tokens(&self, context_tokens: u64) -> u64 {
        self.sliding_window
            .map_or(context_tokens, |w| context_tokens.min(w as u64))
    }
}

impl ModelSpec {
    /// What the model is built of, in one line for tables: the attention (`MLA+DSA`, `GQA 64/8`,
    /// with its sliding-window or Gated-DeltaNet layers, sinks, output gate), the MLP (`MoE
    /// 256/8+1`: routed experts / top-k + shared experts; `dense`) and the MTP head.
    pub fn family_summary(&self) -> String {
        let attention = match self.attention {
            super::AttentionSpec::Mla { indexer, .. } => {
                if indexer.is_some() { "MLA+DSA" } else { "MLA" }.to_string()
            }
            super::AttentionSpec::Gqa {
                num_heads,
                num_kv_heads,
                output_gate,
                sinks,
                ..
            } => {
                let kind = if num_kv_heads == num_heads {
                    "MHA"
                } else {
                    "GQA"
                };
                let mut s = format!("{kind} {num_heads}/{num_kv_heads}");
                if output_gate {
                    s += " gated";
                }
                if sinks {
                    s += " sinks";
                }
                s
            }
        };
        let n = |k| self.num_layers_of_kind(k);
        let attention = match (n(LayerAttention::Sliding), n(LayerAttention::Linear)) {
            (0, 0) => attention,
            (s, 0) => format!(
                "{attention}, {s} sliding({}) + {} full",
                self.sliding_window.unwrap_or(0),
                n(LayerAttention::Full)
            ),
            (_, l) => format!("GDN {l} + {attention} {}", n(LayerAttention::Full)),
        };
        let mlp = match self.moe {
            Some(m) if m.num_shared_experts > 0 => format!(
                "MoE {}/{}+{}",
                m.num_routed_experts, m.top_k, m.num_shared_experts
            ),
            Some(m) => format!("MoE {}/{}", m.num_routed_experts, m.top_k),
            None => "dense".to_string(),
        };
        let mtp = match self.num_mtp_layers {
            0 => String::new(),
            k => format!(" · MTP{k}"),
        };
        format!("{attention} · {mlp}{mtp}")
    }
}
