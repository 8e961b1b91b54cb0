//! The architecture of a model, as read from a HuggingFace `config.json` or an embedded preset.

use crate::format::{KvDtype, WeightFormat};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod bf16;
mod flops;
mod hybrid;
mod layer_set;
mod mla;
mod modules;
mod vision;

pub use bf16::describe_bf16_modules;
pub use hybrid::{
    GDN_CHUNK_TOKENS, LayerAttention, LinearAttentionSpec, MAMBA_FULL_MEMORY_RATIO,
    MAMBA_SLOTS_PER_RUNNING_REQUEST, SWA_FULL_TOKENS_RATIO,
};
pub use layer_set::LayerSet;
pub use mla::MlaDims;
pub use modules::{Bf16Modules, LinearModule, ModuleFormats, ModuleOverride, PlainParams, Shard};
pub use vision::VisionSpec;

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
    /// Storage format of each part of the checkpoint: the format holding most of the part's
    /// parameters; exceptions module by module in `module_formats`.
    pub formats: PartFormats,
    /// KV-cache dtype the checkpoint recommends (e.g. fp8 for modelopt NVFP4 with kv_cache_quant_algo).
    pub default_kv_dtype: KvDtype,
    /// Per main-model layer: true where the layer runs its own DSA indexer (`indexer_types`
    /// `full`), false where it reuses the previous indexer's top-k (`shared`, GLM-5.2) and so
    /// holds no indexer weights and no index-key cache. Empty: every layer has one (when the
    /// attention has an indexer at all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexer_layers: Vec<bool>,
    /// Modules stored in another format than their part's (`formats`), as the checkpoint's
    /// exclusion list says, layer by layer (see [`ModelSpec::module_format`]).
    #[serde(default, skip_serializing_if = "ModuleFormats::is_empty")]
    pub module_formats: ModuleFormats,
    /// A multimodal checkpoint's vision tower and projector (HF `vision_config`), `None` for a
    /// text-only one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<VisionSpec>,
    /// Per main-model layer: the attention it runs (HF `layer_types` / `full_attention_interval`).
    /// Empty: every layer is full attention.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_attention: Vec<LayerAttention>,
    /// Tokens a [`LayerAttention::Sliding`] layer attends (`sliding_window`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<u32>,
    /// The Gated-DeltaNet block of [`LayerAttention::Linear`] layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_attention: Option<LinearAttentionSpec>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The attention block of one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttentionSpec {
    /// Grouped-query (or multi-head) attention.
    Gqa {
        /// Query heads (`num_attention_heads`).
        num_heads: u32,
        /// Key/value heads (`num_key_value_heads`); equal to `num_heads` for plain MHA.
        num_kv_heads: u32,
        /// Dimension of one head (`head_dim`, else `hidden_size / num_heads`).
        head_dim: u32,
        /// Dimensions of a head that RoPE rotates when not all of them
        /// (`partial_rotary_factor` × `head_dim`: GLM-4.x 0.5, Qwen3-Next / Qwen3.5 0.25);
        /// `None`: the whole head.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rotary_dim: Option<u32>,
        /// Bias on q/k/v projections (qwen2).
        qkv_bias: bool,
        /// Gated attention (Qwen3-Next, Qwen3.5 `attn_output_gate`): `q_proj` also produces a
        /// per-head sigmoid gate on the attention output, doubling its width.
        #[serde(default, skip_serializing_if = "is_false")]
        output_gate: bool,
        /// Attention sinks (gpt-oss): one learned logit per head added to every softmax.
        #[serde(default, skip_serializing_if = "is_false")]
        sinks: bool,
    },
    /// Multi-head latent attention (DeepSeek-V3 family), optionally with a DSA indexer.
    Mla {
        /// Query heads (`num_attention_heads`).
        num_heads: u32,
        /// `q_lora_rank`; `None` when q is projected directly.
        q_lora_rank: Option<u32>,
        /// Width of the cached KV latent (`kv_lora_rank`).
        kv_lora_rank: u32,
        /// Per-head q/k dimension without rotary embedding (`qk_nope_head_dim`).
        qk_nope_head_dim: u32,
        /// Per-head rotary q/k dimension (`qk_rope_head_dim`); the rope key is cached too.
        qk_rope_head_dim: u32,
        /// Per-head value dimension (`v_head_dim`).
        v_head_dim: u32,
        /// DeepSeek sparse attention's lightning indexer, if present.
        indexer: Option<DsaIndexer>,
    },
}

/// DeepSeek Sparse Attention's indexer (`index_n_heads`, `index_head_dim`, `index_topk`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DsaIndexer {
    /// Indexer heads (`index_n_heads`).
    pub num_heads: u32,
    /// Indexer head dimension (`index_head_dim`), also the width of its cached index key.
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
    /// Input embedding table (never quantized by the supported schemes).
    pub embeddings: WeightFormat,
    /// Attention projections; the DSA indexer follows this format.
    pub attention: WeightFormat,
    /// Dense-layer MLPs.
    pub dense_mlp: WeightFormat,
    /// Shared experts of MoE layers.
    pub shared_experts: WeightFormat,
    /// Routed experts of MoE layers.
    pub routed_experts: WeightFormat,
    /// Output head (SGLang loads it unquantized).
    pub lm_head: WeightFormat,
    /// MTP layers (bf16 when the checkpoint has none).
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
    /// Input embedding table.
    Embeddings,
    /// Attention projections (incl. MLA low-rank paths and norms), main-model layers.
    Attention,
    /// DSA indexer weights, main-model layers.
    Indexer,
    /// MLPs of dense layers.
    DenseMlp,
    /// Shared experts of MoE layers.
    SharedExperts,
    /// Routed experts of MoE layers.
    RoutedExperts,
    /// MoE gates (router weights and score-correction biases), kept in bf16.
    Routers,
    /// Output head plus the final norm (only the norm when embeddings are tied).
    LmHead,
    /// Multi-token-prediction layers, everything in them.
    Mtp,
    /// A multimodal checkpoint's vision tower and projector ([`VisionSpec`]), BF16.
    VisionTower,
    /// What SGLang holds beside the checkpoint's tensors after loading, and counts in its
    /// "weights" figure: MLA's `w_kc` / `w_vc` copies of `kv_b_proj` and the NVFP4 MoE
    /// allocator holes (see `footprint`).
    LoadOverhead,
}

impl AttentionSpec {
    /// Query heads (`num_attention_heads`).
    pub fn num_heads(&self) -> u32 {
        match *self {
            AttentionSpec::Gqa { num_heads, .. } | AttentionSpec::Mla { num_heads, .. } => {
                num_heads
            }
        }
    }

    /// The DSA indexer, if this is MLA with DeepSeek sparse attention.
    pub fn indexer(&self) -> Option<DsaIndexer> {
        match *self {
            AttentionSpec::Mla { indexer, .. } => indexer,
            AttentionSpec::Gqa { .. } => None,
        }
    }

    /// True for multi-head latent attention.
    pub fn is_mla(&self) -> bool {
        matches!(self, AttentionSpec::Mla { .. })
    }
}

/// Attention parameters of one layer split by how SGLang shards them over a TP group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttentionParamSplit {
    /// Sharded over the attention TP group (q/kv up-projections, o_proj, GQA heads).
    pub sharded: u64,
    /// Replicated on every TP rank (MLA down-projections `q_a_proj`, `kv_a_proj_with_mqa`, norms).
    pub replicated: u64,
    /// GQA k/v projections: sharded by KV head, replicated when `num_kv_heads < tp`.
    pub kv_heads: u64,
}

impl ModelSpec {
    /// True when main-model layer `layer` runs its own DSA indexer (see `indexer_layers`).
    pub fn layer_has_indexer(&self, layer: u32) -> bool {
        self.attention.indexer().is_some()
            && self
                .indexer_layers
                .get(layer as usize)
                .copied()
                .unwrap_or(self.indexer_layers.is_empty())
    }

    /// The layers that run their own DSA indexer by an `index_topk_pattern` (`F` a layer that
    /// scores its own top-k, `S` one that reuses the previous layer's), as transformers'
    /// `GlmMoeDsaConfig` and both engines read it: one letter a main-model layer, optionally
    /// followed by one a MTP layer (the rtx6kpro GLM-5.1 vLLM port's pattern has 79 letters for
    /// 78 + 1 layers; the MTP layer's letter is not priced: the draft's indexer is not modelled).
    /// The engines read a shorter pattern's missing layers as `F`; shardwise refuses any other
    /// length rather than guess. The error says what is wrong with the pattern.
    pub fn indexer_layers_from_pattern(&self, pattern: &str) -> Result<Vec<bool>, String> {
        let n = u64::from(self.num_layers);
        let letters = pattern.chars().count() as u64;
        let mtp = u64::from(self.num_mtp_layers);
        if mtp > 0 && letters == n + mtp {
            // the MTP layers' letters must be F / S too, though they price nothing
            let rest: String = pattern.chars().skip(n as usize).collect();
            indexer_pattern(&rest, mtp)?;
            let main: String = pattern.chars().take(n as usize).collect();
            return indexer_pattern(&main, n);
        }
        indexer_pattern(pattern, n).map_err(|e| {
            if mtp > 0 {
                format!("{e} (or {} with its MTP layers)", n + mtp)
            } else {
                e
            }
        })
    }

    /// Main-model layers in `layers` that run their own DSA indexer.
    pub fn num_indexer_layers_in(&self, layers: std::ops::Range<u32>) -> u32 {
        layers.filter(|&l| self.layer_has_indexer(l)).count() as u32
    }

    /// Main-model layers that run their own DSA indexer (0 without DSA).
    pub fn num_indexer_layers(&self) -> u32 {
        self.num_indexer_layers_in(0..self.num_layers)
    }

    /// Attention parameters of a full-attention layer: projections (incl. MLA low-rank paths and
    /// their norms) plus the layer's two RMSNorms. The DSA indexer is counted separately.
    pub fn attention_params_per_layer(&self) -> u64 {
        self.attention_params_of_kind(LayerAttention::Full)
    }

    /// Attention parameters of main-model layer `layer` (its own kind: full, sliding or linear).
    pub fn attention_params_of_layer(&self, layer: u32) -> u64 {
        self.attention_params_of_kind(self.layer_attention(layer))
    }

    /// Attention parameters of one layer of `kind`, summed from [`Self::attention_modules`] and
    /// [`Self::attention_plain_params`] (the one place their shapes are written).
    pub fn attention_params_of_kind(&self, kind: LayerAttention) -> u64 {
        let s = self.attention_param_split_of(kind);
        s.sharded + s.replicated + s.kv_heads
    }

    /// Attention parameters of all main-model layers.
    pub fn attention_params(&self) -> u64 {
        (0..self.num_layers)
            .map(|l| self.attention_params_of_layer(l))
            .sum()
    }

    /// [`Self::attention_params_per_layer`] split by how TP shards it (see [`AttentionParamSplit`]).
    pub fn attention_param_split(&self) -> AttentionParamSplit {
        self.attention_param_split_of(LayerAttention::Full)
    }

    fn attention_param_split_of(&self, kind: LayerAttention) -> AttentionParamSplit {
        let mut s = AttentionParamSplit::default();
        let parts = (ModelPart::Attention, ModelPart::Attention);
        let shards = self
            .attention_modules(kind, parts)
            .into_iter()
            .map(|m| (m.shard, m.params))
            .chain(
                self.attention_plain_params(kind, parts)
                    .into_iter()
                    .map(|p| (p.shard, p.params)),
            );
        for (shard, params) in shards {
            match shard {
                Shard::Tp => s.sharded += params,
                Shard::Replicated => s.replicated += params,
                Shard::KvHeads => s.kv_heads += params,
            }
        }
        s
    }

    /// DSA lightning-indexer parameters of one layer that has an indexer (`wq_b`, `wk`, `k_norm`,
    /// `weights_proj`: its modules and plain parameters); 0 without DSA. SGLang replicates these
    /// on every TP rank. Multiply by [`Self::num_indexer_layers`], not `num_layers` (GLM-5.2
    /// shares indexers across layers).
    pub fn indexer_params_per_layer(&self) -> u64 {
        self.indexer_modules_and_plain_params()
    }

    /// Dense MLP parameters of one dense layer: gate, up and down projections, `3·h·intermediate`.
    pub fn dense_mlp_params_per_layer(&self) -> u64 {
        3 * self.hidden_size * self.dense_intermediate_size
    }

    /// Parameters of one routed expert, `3·h·moe_intermediate`; 0 for dense models.
    pub fn params_per_routed_expert(&self) -> u64 {
        self.moe
            .map_or(0, |m| 3 * self.hidden_size * m.expert_intermediate_size)
    }

    /// Shared-expert parameters of one MoE layer (all shared experts together).
    pub fn shared_expert_params_per_layer(&self) -> u64 {
        self.moe.map_or(0, |m| {
            m.num_shared_experts as u64 * self.params_per_routed_expert()
        })
    }

    /// Router (gate) parameters of one MoE layer: `h·experts` plus the per-expert score bias.
    pub fn router_params_per_layer(&self) -> u64 {
        self.moe
            .map_or(0, |m| (self.hidden_size + 1) * m.num_routed_experts as u64)
    }

    /// All routed-expert parameters of one MoE layer.
    pub fn routed_expert_params_per_layer(&self) -> u64 {
        self.moe.map_or(0, |m| {
            m.num_routed_experts as u64 * self.params_per_routed_expert()
        })
    }

    /// Input embedding table, `vocab·h`.
    pub fn embedding_params(&self) -> u64 {
        self.vocab_size * self.hidden_size
    }

    /// Output head `vocab·h` plus the final norm. When `tie_word_embeddings` is set the head is
    /// the embedding matrix, so only the final norm (`h`) is counted here: no extra parameters.
    pub fn lm_head_params(&self) -> u64 {
        let head = if self.tie_word_embeddings {
            0
        } else {
            self.vocab_size * self.hidden_size
        };
        head + self.hidden_size
    }

    /// One main-model layer's MLP parameters (dense MLP, or shared + routed experts + router).
    fn mlp_params_of_layer(&self, is_moe: bool) -> u64 {
        if is_moe {
            self.shared_expert_params_per_layer()
                + self.routed_expert_params_per_layer()
                + self.router_params_per_layer()
        } else {
            self.dense_mlp_params_per_layer()
        }
    }

    /// Parameters of one multi-token-prediction module as SGLang serves it: `enorm`, `hnorm`,
    /// `eh_proj` (2h→h), one full decoder layer (MoE when the model is MoE, indexer included) and
    /// the head norm. The embedding and output head are shared with the main model and not counted.
    pub fn mtp_params_per_layer(&self) -> u64 {
        let h = self.hidden_size;
        let layer = self.attention_params_of_kind(LayerAttention::Full)
            + self.indexer_params_per_layer()
            + self.mlp_params_of_layer(self.moe.is_some());
        layer + 2 * h * h + 3 * h
    }

    /// All MTP modules' parameters as served (see [`Self::mtp_params_per_layer`]); 0 without MTP.
    pub fn mtp_params(&self) -> u64 {
        self.num_mtp_layers as u64 * self.mtp_params_per_layer()
    }

    /// MTP parameters as stored in the checkpoint, where each module carries its own copy of the
    /// embedding and output head (DeepSeek's "14B MTP module" counts them).
    pub fn mtp_checkpoint_params(&self) -> u64 {
        let copies = self.vocab_size * self.hidden_size * 2;
        self.num_mtp_layers as u64 * (self.mtp_params_per_layer() + copies)
    }

    /// Main-model layers whose MLP is MoE.
    pub fn num_moe_layers(&self) -> u32 {
        self.moe_layers.iter().filter(|&&m| m).count() as u32
    }

    /// Main-model layers whose MLP is dense.
    pub fn num_dense_layers(&self) -> u32 {
        self.num_layers - self.num_moe_layers()
    }

    /// Parameters by part for the whole model, MTP included (as served: see [`Self::mtp_params`]).
    pub fn params_by_part(&self) -> BTreeMap<ModelPart, u64> {
        let moe = self.num_moe_layers() as u64;
        let dense = self.num_dense_layers() as u64;
        let mut m = BTreeMap::new();
        m.insert(ModelPart::Embeddings, self.embedding_params());
        m.insert(ModelPart::Attention, self.attention_params());
        m.insert(
            ModelPart::Indexer,
            self.num_indexer_layers() as u64 * self.indexer_params_per_layer(),
        );
        m.insert(
            ModelPart::DenseMlp,
            dense * self.dense_mlp_params_per_layer(),
        );
        m.insert(
            ModelPart::SharedExperts,
            moe * self.shared_expert_params_per_layer(),
        );
        m.insert(
            ModelPart::RoutedExperts,
            moe * self.routed_expert_params_per_layer(),
        );
        m.insert(ModelPart::Routers, moe * self.router_params_per_layer());
        m.insert(ModelPart::LmHead, self.lm_head_params());
        m.insert(ModelPart::Mtp, self.mtp_params());
        m
    }

    /// Total parameters including the MTP modules as served (embedding and head shared).
    pub fn total_params(&self) -> u64 {
        self.params_by_part().values().sum()
    }

    /// Total parameters of the main model alone.
    pub fn total_params_without_mtp(&self) -> u64 {
        self.total_params() - self.mtp_params()
    }

    /// The storage format of a part. The indexer and routers follow attention's format except that
    /// routers are always kept in bf16 (every quantizer excludes the tiny gate).
    pub fn format_of(&self, part: ModelPart) -> WeightFormat {
        let f = &self.formats;
        match part {
            ModelPart::Embeddings => f.embeddings,
            ModelPart::Attention | ModelPart::Indexer => f.attention,
            ModelPart::DenseMlp => f.dense_mlp,
            ModelPart::SharedExperts => f.shared_experts,
            ModelPart::RoutedExperts => f.routed_experts,
            ModelPart::Routers => WeightFormat::Bf16,
            ModelPart::LmHead => f.lm_head,
            ModelPart::Mtp => f.mtp,
            ModelPart::VisionTower | ModelPart::LoadOverhead => WeightFormat::Bf16,
        }
    }

    /// Bytes of `params` parameters stored in `part`'s format, rounded to whole bytes.
    pub fn bytes_of(&self, part: ModelPart, params: u64) -> u64 {
        (params as f64 * self.format_of(part).bytes_per_value()).round() as u64
    }

    /// All weight bytes, MTP included.
    pub fn total_weight_bytes(&self) -> u64 {
        self.weight_bytes_by_part().values().sum()
    }

    /// All weight bytes of the main model (MTP excluded).
    pub fn total_weight_bytes_without_mtp(&self) -> u64 {
        self.weight_bytes_by_part()
            .iter()
            .filter(|(p, _)| **p != ModelPart::Mtp)
            .map(|(_, b)| *b)
            .sum()
    }

    /// KV-cache bytes one token occupies in one layer, all heads together (unsharded).
    /// MLA caches the compressed latent plus the rope key: `(kv_lora_rank + qk_rope_head_dim)·dtype`;
    /// GQA caches keys and values: `2·kv_heads·head_dim·dtype`. The DSA index-key cache is separate
    /// ([`Self::indexer_cache_bytes_per_token_per_layer`]).
    pub fn kv_bytes_per_token_per_layer(&self, dtype: KvDtype) -> u64 {
        let values = match self.attention {
            AttentionSpec::Gqa {
                num_kv_heads,
                head_dim,
                ..
            } => 2 * num_kv_heads as u64 * head_dim as u64,
            AttentionSpec::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            } => kv_lora_rank as u64 + qk_rope_head_dim as u64,
        };
        values * dtype.bytes()
    }

    /// KV-cache bytes per token of context over the main-model layers whose cache grows with the
    /// context (full attention; MTP layers excluded). Sliding-window layers hold at most
    /// `sliding_window` tokens and linear-attention layers a fixed state per request
    /// ([`Self::kv_bytes_per_request`]).
    pub fn kv_bytes_per_token(&self, dtype: KvDtype) -> u64 {
        self.num_layers_of_kind(LayerAttention::Full) as u64
            * self.kv_bytes_per_token_per_layer(dtype)
    }

    /// Cache bytes one request of `context_tokens` holds over the main-model layers, unsharded:
    /// full layers every token, sliding layers the last `sliding_window`, linear layers their
    /// fixed state. DSA index keys excluded.
    pub fn kv_bytes_per_request(&self, dtype: KvDtype, context_tokens: u64) -> u64 {
        let per_layer = self.kv_bytes_per_token_per_layer(dtype);
        let sliding = self.num_layers_of_kind(LayerAttention::Sliding) as u64;
        self.kv_bytes_per_token(dtype) * context_tokens
            + sliding * per_layer * self.sliding_tokens(context_tokens)
            + self.linear_state_bytes_per_request()
    }

    /// Bytes per token per layer of the DSA indexer's key cache, which SGLang's NSA backend keeps
    /// beside the KV cache whatever `--kv-cache-dtype` says: `index_head_dim` fp8 values plus one
    /// fp32 scale per 128 values. 0 without an indexer.
    pub fn indexer_cache_bytes_per_token_per_layer(&self) -> u64 {
        self.attention.indexer().map_or(0, |ix| {
            let d = ix.head_dim as u64;
            d + 4 * d.div_ceil(128)
        })
    }

    /// [`Self::indexer_cache_bytes_per_token_per_layer`] over the main-model layers that run an
    /// indexer.
    pub fn indexer_cache_bytes_per_token(&self) -> u64 {
        self.num_indexer_layers() as u64 * self.indexer_cache_bytes_per_token_per_layer()
    }

    /// Parameters one decoded token multiplies through: attention, indexer, dense MLPs, shared
    /// experts, `top_k` routed experts and routers of every main layer, plus the output head.
    /// Excluded: MTP layers and the embedding table (a lookup reads one row and costs no FLOPs).
    /// Published "activated parameter" figures sometimes include the embedding table
    /// ([`Self::embedding_params`]); add it to compare with those.
    pub fn active_params_per_token(&self) -> u64 {
        let moe = self.num_moe_layers() as u64;
        let dense = self.num_dense_layers() as u64;
        let routed_active = self
            .moe
            .map_or(0, |m| m.top_k as u64 * self.params_per_routed_expert());
        self.attention_params()
            + self.num_indexer_layers() as u64 * self.indexer_params_per_layer()
            + dense * self.dense_mlp_params_per_layer()
            + moe
                * (self.shared_expert_params_per_layer()
                    + routed_active
                    + self.router_params_per_layer())
            + self.lm_head_params()
    }
}

/// [`ModelSpec::indexer_layers_from_pattern`] for `num_layers` layers.
pub(crate) fn indexer_pattern(pattern: &str, num_layers: u64) -> Result<Vec<bool>, String> {
    if pattern.chars().count() as u64 != num_layers {
        return Err(format!(
            "index_topk_pattern has {} letters but the model has {num_layers} layers",
            pattern.chars().count()
        ));
    }
    pattern
        .chars()
        .map(|c| match c {
            'F' => Ok(true),
            'S' => Ok(false),
            other => Err(format!(
                "index_topk_pattern letter `{other}` is neither F (a layer with its own indexer) nor S (one reusing the previous top-k)"
            )),
        })
        .collect()
}
