//! The architecture of a model, as read from a HuggingFace `config.json` or an embedded preset.

use crate::format::{KvDtype, WeightFormat};
use serde::{Deserialize, Serialize};

/// A model's architecture and checkpoint formats: everything the cost model needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Preset name or the folder / file it was loaded from.
    pub name: String,
    /// Where the numbers come from (HF repo id and file, or the path loaded).
    pub source: String,
    /// HF `model_type` (`deepseek_v3`, `glm_moe_dsa`, `qwen3_moe`, `llama`, …).
    pub model_type: String,
    /// `hidden_size`.
    pub hidden_size: u64,
    /// Transformer layers of the main model (`num_hidden_layers`), MTP layers excluded.
    pub num_layers: u32,
    /// `vocab_size`.
    pub vocab_size: u64,
    /// `max_position_embeddings`: the longest context the model supports.
    pub max_context_tokens: u64,
    /// `tie_word_embeddings`: `lm_head` shares the embedding matrix.
    pub tie_word_embeddings: bool,
    /// The attention block.
    pub attention: AttentionSpec,
    /// Intermediate size of dense MLP layers (`intermediate_size`).
    pub dense_intermediate_size: u64,
    /// The MoE block, if any.
    pub moe: Option<MoeSpec>,
    /// Per main-model layer: true where the MLP is MoE, false where it is dense.
    pub moe_layers: Vec<bool>,
    /// Multi-token-prediction layers (`num_nextn_predict_layers`), each a full layer + projections.
    pub num_mtp_layers: u32,
    /// Storage format of each part of the checkpoint.
    pub formats: PartFormats,
    /// KV-cache dtype the checkpoint recommends (e.g. fp8 for modelopt NVFP4 with kv_cache_quant_algo).
    pub default_kv_dtype: KvDtype,
}

/// The attention block of one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttentionSpec {
    /// Grouped-query (or multi-head) attention.
    Gqa {
        num_heads: u32,
        num_kv_heads: u32,
        head_dim: u32,
        /// Bias on q/k/v projections (qwen2).
        qkv_bias: bool,
    },
    /// Multi-head latent attention (DeepSeek-V3 family), optionally with a DSA indexer.
    Mla {
        num_heads: u32,
        /// `q_lora_rank`; `None` when q is projected directly.
        q_lora_rank: Option<u32>,
        kv_lora_rank: u32,
        qk_nope_head_dim: u32,
        qk_rope_head_dim: u32,
        v_head_dim: u32,
        /// DeepSeek sparse attention's lightning indexer, if present.
        indexer: Option<DsaIndexer>,
    },
}

/// DeepSeek Sparse Attention's indexer (`index_n_heads`, `index_head_dim`, `index_topk`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DsaIndexer {
    pub num_heads: u32,
    pub head_dim: u32,
    /// Tokens each query attends to at most.
    pub topk: u32,
}

/// The mixture-of-experts block of a MoE layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoeSpec {
    /// Routed experts (`n_routed_experts` / `num_experts` / `num_local_experts`).
    pub num_routed_experts: u32,
    /// Shared experts (`n_shared_experts`), 0 if none.
    pub num_shared_experts: u32,
    /// Experts each token is routed to (`num_experts_per_tok`).
    pub top_k: u32,
    /// Intermediate size of one expert (`moe_intermediate_size`).
    pub expert_intermediate_size: u64,
}

/// Storage format of each part of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PartFormats {
    pub embeddings: WeightFormat,
    pub attention: WeightFormat,
    pub dense_mlp: WeightFormat,
    pub shared_experts: WeightFormat,
    pub routed_experts: WeightFormat,
    pub lm_head: WeightFormat,
    pub mtp: WeightFormat,
}

impl PartFormats {
    /// Every part in one format.
    pub fn uniform(f: WeightFormat) -> Self {
        PartFormats {
            embeddings: f,
            attention: f,
            dense_mlp: f,
            shared_experts: f,
            routed_experts: f,
            lm_head: f,
            mtp: f,
        }
    }
}

/// The parts a model's parameters are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelPart {
    Embeddings,
    /// Attention projections (incl. MLA low-rank paths and norms), main-model layers.
    Attention,
    /// DSA indexer weights, main-model layers.
    Indexer,
    DenseMlp,
    SharedExperts,
    RoutedExperts,
    Routers,
    LmHead,
    /// Multi-token-prediction layers, everything in them.
    Mtp,
}
