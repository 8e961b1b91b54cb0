//! Multi-head latent attention's dimensions, unpacked once for every shape computed from them.

use super::AttentionSpec;

impl AttentionSpec {
    /// MLA's dimensions as integers, `None` for GQA: the one place the MLA fields are unpacked
    /// for shapes (modules, kernels, copies).
    pub fn mla_dims(&self) -> Option<MlaDims> {
        match *self {
            AttentionSpec::Mla {
                num_heads,
                q_lora_rank,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
                ..
            } => Some(MlaDims {
                heads: num_heads as u64,
                q_lora_rank: q_lora_rank.map(u64::from),
                kv_lora_rank: kv_lora_rank as u64,
                nope: qk_nope_head_dim as u64,
                rope: qk_rope_head_dim as u64,
                v: v_head_dim as u64,
            }),
            AttentionSpec::Gqa { .. } => None,
        }
    }
}

/// MLA's dimensions ([`AttentionSpec::mla_dims`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MlaDims {
    /// Query heads.
    pub heads: u64,
    /// `q_lora_rank`; `None` when q is projected directly.
    pub q_lora_rank: Option<u64>,
    /// Width of the cached latent.
    pub kv_lora_rank: u64,
    /// Per-head q/k dims without and with rotary embedding, and the value dim.
    pub nope: u64,
    pub rope: u64,
    pub v: u64,
}
