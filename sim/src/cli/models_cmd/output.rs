//! Serde output types of `sim models list|show --format json`, versioned by
//! [`MODELS_OUTPUT_SCHEMA_VERSION`].

use models::format::KvDtype;
use models::spec::ModelPart;
use models::{Layout, ModelSpec};
use serde::Serialize;
use std::collections::BTreeMap;

/// Schema version of the JSON `sim models` prints; bumped on any incompatible change (2: `show`
/// names its engine and a layout's flags `flags`, in that engine's spelling; was `sglang_flags`).
pub const MODELS_OUTPUT_SCHEMA_VERSION: u32 = 2;

/// `sim models list --format json`.
#[derive(Debug, Serialize)]
pub struct ModelList {
    pub schema_version: u32,
    pub models: Vec<ModelSummary>,
}

/// One model's headline numbers.
#[derive(Debug, Serialize)]
pub struct ModelSummary {
    /// Preset key or the path loaded.
    pub name: String,
    pub model_type: String,
    /// What the model is built of: attention kind, MoE, MTP head
    /// ([`ModelSpec::family_summary`]).
    pub family: String,
    /// All parameters, MTP included as served (embedding and head shared).
    pub total_params: u64,
    pub total_params_without_mtp: u64,
    /// Parameters a decoded token multiplies through (embedding lookup and MTP excluded).
    pub active_params_per_token: u64,
    /// Checkpoint weight bytes of the main model (MTP excluded), each part in its own format.
    pub weight_bytes_without_mtp: u64,
    /// Formats of routed experts / attention, e.g. `nvfp4 / bf16`.
    pub formats: String,
    /// KV dtype the checkpoint recommends.
    pub default_kv_dtype: KvDtype,
    /// KV bytes per token, all layers, in the default KV dtype (DSA index-key cache excluded).
    pub kv_bytes_per_token: u64,
    pub max_context_tokens: u64,
    pub source: String,
}

/// One part of the model: parameters, format, bytes.
#[derive(Debug, Serialize)]
pub struct PartRow {
    pub part: ModelPart,
    pub params: u64,
    pub format: String,
    pub bytes: u64,
}

/// KV-cache sizes per token over all main layers.
#[derive(Debug, Serialize)]
pub struct KvSummary {
    pub default_kv_dtype: KvDtype,
    pub bf16_bytes_per_token: u64,
    pub fp8_bytes_per_token: u64,
    /// DSA index-key cache (fp8 + scales), kept beside the KV cache; 0 without an indexer.
    pub indexer_cache_bytes_per_token: u64,
    /// Tokens one query attends to at most (DSA `index_topk`), `None` for full attention.
    pub attended_tokens_cap: Option<u64>,
    /// Main-model layers whose KV grows with the context (the per-token figures above); absent
    /// when every layer is full attention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_attention_layers: Option<u32>,
    /// Sliding-window layers and their window (each holds at most `window` tokens a request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sliding_layers: Option<(u32, u64)>,
    /// Gated-DeltaNet layers and the state (conv + recurrent) one request holds over them,
    /// unsharded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linear_layers: Option<(u32, u64)>,
}

/// What a hybrid model's request holds on one GPU of a layout, and the pools SGLang sizes.
#[derive(Debug, Serialize)]
pub struct HybridFit {
    /// Sliding-window KV bytes per token per GPU (a request holds at most `window` tokens).
    pub sliding_kv_bytes_per_token_per_gpu: u64,
    /// Gated-DeltaNet state bytes per request per GPU.
    pub state_bytes_per_request_per_gpu: u64,
    /// Cache bytes one request of the server's context length holds per GPU: full layers'
    /// KV, sliding layers' window, linear layers' state.
    pub cache_bytes_per_max_context_request_per_gpu: u64,
    /// Sliding-window pool tokens (SGLang's `swa_max_total_num_tokens`).
    pub swa_kv_tokens: u64,
    /// State-pool request slots (SGLang's `max_mamba_cache_size`) and its bytes per GPU.
    pub state_slots: u64,
    pub state_pool_bytes_per_gpu: u64,
    /// `max_running_requests` after the state pool's cap.
    pub max_running_requests: u32,
    pub context_len: u64,
}

/// The machine the footprints are checked against.
#[derive(Debug, Serialize)]
pub struct MachineSummary {
    pub gpus: u32,
    /// GPU preset key.
    pub gpu: String,
    pub memory_bytes_per_gpu: u64,
    /// `--mem-fraction-static` as given; `None`: SGLang's default for each layout (its value
    /// in each layout's `mem_fraction_static`).
    pub mem_fraction_static: Option<f64>,
    /// KV dtype the footprints use (`--kv-cache-dtype`).
    pub kv_dtype: KvDtype,
    /// Whether the MTP draft layer is loaded (speculative decoding).
    pub speculative_mtp: bool,
}

/// One pipeline stage's per-GPU weights (every TP rank of a stage holds the same).
#[derive(Debug, Serialize)]
pub struct StageRow {
    pub stage: u32,
    /// First main-model layer of the stage.
    pub first_layer: u32,
    /// One past the last layer.
    pub end_layer: u32,
    pub weight_bytes_by_part: BTreeMap<ModelPart, u64>,
    pub total_weight_bytes: u64,
}

/// A layout's per-GPU footprint and whether it fits.
#[derive(Debug, Serialize)]
pub struct LayoutFit {
    /// Short name, e.g. `TP4xPP2`.
    pub layout: String,
    /// The flags that launch it, in the engine's own spelling.
    pub flags: String,
    pub parallel: Layout,
    /// `None` when the layout is possible; else why not.
    pub impossible_reason: Option<String>,
    pub max_weight_bytes_per_gpu: u64,
    /// KV bytes per token on one GPU of the fullest stage (MLA latent replicated across TP).
    pub kv_bytes_per_token_per_gpu: u64,
    /// DSA index-key cache bytes per token per GPU (0 without an indexer).
    pub indexer_cache_bytes_per_token_per_gpu: u64,
    /// `mem_fraction_static × memory − weights` (0 when negative).
    pub kv_pool_bytes_per_gpu: u64,
    /// Tokens of KV the pool holds (per TP group; each DP-attention rank under DPA).
    pub kv_capacity_tokens: u64,
    /// The layout is possible and its weights fit in `mem_fraction_static × memory` with room
    /// left for KV.
    pub fits: bool,
    /// The KV pool holds at least one request of the model's full context.
    pub fits_max_context: bool,
    /// The `--mem-fraction-static` the fit was decided with.
    pub mem_fraction_static: f64,
    /// Sliding-window and linear-attention caches and pools; absent for models without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridFit>,
    pub stages: Vec<StageRow>,
}

/// `sim models show --format json`.
#[derive(Debug, Serialize)]
pub struct ModelShow {
    pub schema_version: u32,
    /// The engine whose defaults (`--mem-fraction-static`) and flags the layouts are shown with.
    pub engine: sim::engine::Engine,
    pub summary: ModelSummary,
    pub parts: Vec<PartRow>,
    pub kv: KvSummary,
    pub machine: MachineSummary,
    pub layouts: Vec<LayoutFit>,
    /// Modules the checkpoint keeps in BF16 while others are quantized, one line per group.
    pub bf16_modules: Vec<String>,
    /// The full architecture as loaded.
    pub spec: ModelSpec,
}
