//! Loading a [`ModelSpec`] from a HuggingFace `config.json` (plus its quantization description).
//!
//! Supported `model_type`s: MLA + MoE `deepseek_v3`, `kimi_k2`; MLA + DSA indexer + MoE
//! `deepseek_v32`, `glm_moe_dsa`; GQA + MoE `glm4_moe`, `qwen3_moe`, `mixtral`; dense GQA `llama`,
//! `qwen2`, `qwen3`; GQA + MoE with other attention kinds: `minimax_m2` (MiniMax-M2.5), `gpt_oss`
//! (alternating sliding-window / full attention with sinks), `qwen3_next` and `qwen3_5_moe_text`
//! (Gated-DeltaNet linear attention with a full-attention layer every few layers, see
//! [`crate::spec::LayerAttention`]). Multimodal wrappers (Kimi K2.5, Qwen3.5) keep the language
//! model under `text_config`.
//!
//! Every dimension is checked against a generous upper bound so that derived quantities cannot
//! overflow `u64`; a value outside it is reported as implausible rather than computed with.

use crate::error::{ModelsError, Result};
use crate::format::{KvDtype, WeightFormat};
use crate::hf_attention::attention;
use crate::hf_fields::{
    Fields, MAX_CONTEXT, MAX_EXPERTS, MAX_HIDDEN, MAX_INTERMEDIATE, MAX_LAYERS, MAX_VOCAB,
    index_list, per_layer_kinds,
};
use crate::hf_layers::{layer_kinds, linear_attention, shared_experts};
use crate::quant::{self, QuantScheme};
use crate::spec::{LayerAttention, ModelSpec, ModuleFormats, MoeSpec, PartFormats, VisionSpec};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The supported HF `model_type`s.
pub const SUPPORTED_MODEL_TYPES: &[&str] = &[
    "deepseek_v3",
    "kimi_k2",
    "deepseek_v32",
    "glm_moe_dsa",
    "glm4_moe",
    "qwen3_moe",
    "mixtral",
    "llama",
    "qwen2",
    "qwen3",
    "minimax_m2",
    "gpt_oss",
    "qwen3_next",
    "qwen3_5_moe_text",
];

/// MTP layers a checkpoint carries that its config does not name. Qwen3-Next's config has no MTP
/// key, yet its checkpoint holds one MTP layer (`mtp.*`) and both engines build it when asked to
/// speculate: vLLM's `Qwen3NextMultiTokenPredictor` takes `num_nextn_predict_layers` with a
/// default of 1 (vllm-project/vllm @055e47c2 `vllm/model_executor/models/qwen3_next_mtp.py`),
/// SGLang's `Qwen3NextForCausalLMMTP` sets `num_hidden_layers = 1` (sgl-project/sglang @00534216
/// `python/sglang/srt/models/qwen3_next_mtp.py`). Read as none, its `qwen3_next_mtp` runs were
/// priced as a one-layer dense EAGLE head instead of that MoE layer.
fn unannounced_mtp_layers(model_type: &str) -> u64 {
    u64::from(model_type == "qwen3_next")
}

fn read_text(path: &Path) -> Result<String> {
    crate::io::read_text_limited(path, crate::io::CONFIG_LIMIT_BYTES)
}

fn parse_json(text: &str, path: &Path) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| ModelsError::Json {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Where a config's ModelOpt `hf_quant_config.json` would be: `<stem>.hf_quant_config.json`
/// (the naming in `data/hf-configs`), else `hf_quant_config.json` in the same folder.
fn quant_config_beside(config_path: &Path) -> Option<PathBuf> {
    let dir = config_path.parent().unwrap_or(Path::new("."));
    let stem = config_path.file_stem()?.to_string_lossy().into_owned();
    [
        dir.join(format!("{stem}.hf_quant_config.json")),
        dir.join("hf_quant_config.json"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

impl ModelSpec {
    /// Loads `dir/config.json`, with `dir/hf_quant_config.json` when present.
    pub fn from_hf_dir(dir: &Path) -> Result<ModelSpec> {
        let mut spec = Self::from_hf_config(&dir.join("config.json"))?;
        if let Some(n) = dir.file_name() {
            spec.name = n.to_string_lossy().into_owned();
        }
        Ok(spec)
    }

    /// Loads a HF config file. Quantization comes from `<stem>.hf_quant_config.json` or
    /// `hf_quant_config.json` beside it, else from `quantization_config` inside it, else bf16.
    pub fn from_hf_config(config_path: &Path) -> Result<ModelSpec> {
        let text = read_text(config_path)?;
        let quant = match quant_config_beside(config_path) {
            Some(qp) => Some(quant::parse_hf_quant_config(&read_text(&qp)?, &qp)?),
            None => None,
        };
        let name = config_path
            .file_stem()
            .map_or_else(|| "model".to_string(), |s| s.to_string_lossy().into_owned());
        Self::from_hf_json(&text, config_path, quant, &name)
    }

    /// Parses config JSON text; `path` is only used in error messages and as the source.
    /// `quant` overrides any `quantization_config` inside the config.
    pub fn from_hf_json(
        text: &str,
        path: &Path,
        quant: Option<QuantScheme>,
        name: &str,
    ) -> Result<ModelSpec> {
        let root = parse_json(text, path)?;
        let root_obj = root.as_object().ok_or_else(|| ModelsError::Json {
            path: path.to_path_buf(),
            message: "top level is not a JSON object".into(),
        })?;
        let (obj, prefix) = match root_obj.get("text_config") {
            Some(Value::Object(t)) => (t, "text_config."),
            Some(Value::Null) | None => (root_obj, ""),
            Some(_) => {
                return Err(ModelsError::Field {
                    path: path.to_path_buf(),
                    field: "text_config".into(),
                    problem: "must be an object".into(),
                });
            }
        };
        let f = Fields { obj, path, prefix };
        let model_type = match f.present("model_type") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => return Err(f.err("model_type", format!("must be a string, got {v}"))),
            None => return Err(f.err("model_type", "missing")),
        };
        if !SUPPORTED_MODEL_TYPES.contains(&model_type.as_str()) {
            return Err(ModelsError::UnsupportedModelType {
                path: path.to_path_buf(),
                model_type,
            });
        }
        let quant = match quant {
            Some(q) => Some(q),
            None => match (
                root_obj.get("quantization_config"),
                obj.get("quantization_config"),
            ) {
                (Some(q), _) if !q.is_null() => Some(quant::parse_quantization_config(
                    q,
                    path,
                    "quantization_config",
                )?),
                (_, Some(q)) if !q.is_null() => Some(quant::parse_quantization_config(
                    q,
                    path,
                    &format!("{prefix}quantization_config"),
                )?),
                _ => None,
            },
        };
        let mut spec = build(&f, model_type, quant, name)?;
        spec.vision = vision(root_obj, path)?;
        Ok(spec)
    }
}

/// The `vision_config` of a multimodal checkpoint, with the checkpoint's `architectures[0]`.
/// Kimi's MoonViT names its fields `vt_*`; the plain names are the ViT convention; Qwen3.5's
/// (Qwen3-VL) tower says `depth`, `spatial_merge_size` (a side: merge² patches per token) and
/// `num_position_embeddings`.
fn vision(root: &Map<String, Value>, path: &Path) -> Result<Option<VisionSpec>> {
    let Some(Value::Object(obj)) = root.get("vision_config") else {
        return Ok(None);
    };
    let f = Fields {
        obj,
        path,
        prefix: "vision_config.",
    };
    let either = |a: &str, b: &str, max: u64| -> Result<u64> {
        match f.opt_int(a, 1, max)? {
            Some(n) => Ok(n),
            None => f.dim(b, max),
        }
    };
    let architecture = match root.get("architectures") {
        Some(Value::Array(a)) => a.first().and_then(Value::as_str).unwrap_or("").to_string(),
        _ => String::new(),
    };
    let merge_patches = match f.present("merge_kernel_size") {
        Some(Value::Array(k)) => k
            .iter()
            .map(|v| v.as_u64().filter(|n| (1..=16).contains(n)))
            .try_fold(1u32, |acc, n| n.map(|n| acc * n as u32))
            .ok_or_else(|| f.err("merge_kernel_size", "must be a list of integers 1..16"))?,
        Some(v) => return Err(f.err("merge_kernel_size", format!("must be a list, got {v}"))),
        None => f
            .opt_int("spatial_merge_size", 1, 16)?
            .map_or(1, |m| (m * m) as u32),
    };
    let side = |k: &str| f.opt_int(k, 1, 4096);
    let pos_emb_positions = match (side("init_pos_emb_height")?, side("init_pos_emb_width")?) {
        (Some(h), Some(w)) => h * w,
        _ => f
            .opt_int("num_position_embeddings", 1, 1 << 24)?
            .unwrap_or(0),
    };
    let num_layers = match f.opt_int("depth", 1, MAX_LAYERS)? {
        Some(d) => d,
        None => either("vt_num_hidden_layers", "num_hidden_layers", MAX_LAYERS)?,
    };
    Ok(Some(VisionSpec {
        architecture,
        num_layers: num_layers as u32,
        hidden_size: either("vt_hidden_size", "hidden_size", MAX_HIDDEN)?,
        intermediate_size: either(
            "vt_intermediate_size",
            "intermediate_size",
            MAX_INTERMEDIATE,
        )?,
        patch_size: f.opt_int("patch_size", 1, 1024)?.unwrap_or(14) as u32,
        pos_emb_positions,
        merge_patches,
    }))
}

fn build(
    f: &Fields,
    model_type: String,
    quant: Option<QuantScheme>,
    name: &str,
) -> Result<ModelSpec> {
    let hidden = f.dim("hidden_size", MAX_HIDDEN)?;
    let num_layers = f.dim("num_hidden_layers", MAX_LAYERS)?;
    let vocab = f.dim("vocab_size", MAX_VOCAB)?;
    let max_context = f.dim("max_position_embeddings", MAX_CONTEXT)?;
    let tie = f.opt_bool("tie_word_embeddings")?.unwrap_or(false);
    // Qwen3.5 names its MTP depth `mtp_num_hidden_layers`. MiniMax-M2.5's config announces MTP
    // modules (`num_mtp_modules`) but its checkpoint holds none (228.7B parameters as published,
    // what the main model alone counts to), so it gets none.
    let num_mtp = match f.opt_int("num_nextn_predict_layers", 0, 16)? {
        Some(n) => n,
        None => f
            .opt_int("mtp_num_hidden_layers", 0, 16)?
            .unwrap_or_else(|| unannounced_mtp_layers(&model_type)),
    };
    let attention = attention(f, &model_type, hidden)?;
    let indexer_layers = match attention.indexer() {
        Some(_) => crate::hf_layers::indexer_layers(f, num_layers)?,
        None => Vec::new(),
    };
    let (moe, moe_layers, dense_inter) = mlp(f, &model_type, hidden, num_layers)?;
    let layer_attention = layer_kinds(f, &model_type, num_layers)?;
    let sliding_window = match layer_attention.contains(&LayerAttention::Sliding) {
        true => Some(f.dim("sliding_window", 1 << 24)? as u32),
        false => None,
    };
    let linear_attention = match layer_attention.contains(&LayerAttention::Linear) {
        true => Some(linear_attention(f)?),
        false => None,
    };
    let mut spec = ModelSpec {
        name: name.to_string(),
        source: f.path.display().to_string(),
        model_type,
        hidden_size: hidden,
        num_layers: num_layers as u32,
        vocab_size: vocab,
        max_context_tokens: max_context,
        tie_word_embeddings: tie,
        attention,
        dense_intermediate_size: dense_inter,
        moe,
        moe_layers,
        num_mtp_layers: num_mtp as u32,
        formats: PartFormats::uniform(WeightFormat::Bf16),
        default_kv_dtype: KvDtype::Bf16,
        indexer_layers,
        module_formats: ModuleFormats::default(),
        vision: None,
        layer_attention,
        sliding_window,
        linear_attention,
    };
    // The exclusion lists name modules of this very architecture, so resolve them on it.
    if let Some(q) = &quant {
        (spec.formats, spec.module_formats) = q.resolve(&spec);
        spec.default_kv_dtype = q.kv_dtype.unwrap_or(KvDtype::Bf16);
    }
    Ok(spec)
}

/// The MoE block, the per-layer MoE flags and the dense intermediate size.
fn mlp(
    f: &Fields,
    model_type: &str,
    hidden: u64,
    num_layers: u64,
) -> Result<(Option<MoeSpec>, Vec<bool>, u64)> {
    let u = Fields::as_u32;
    let n = num_layers as usize;
    let _ = hidden;
    match model_type {
        "llama" | "qwen2" | "qwen3" => {
            let inter = f.dim("intermediate_size", MAX_INTERMEDIATE)?;
            Ok((None, vec![false; n], inter))
        }
        "mixtral" => {
            let inter = f.dim("intermediate_size", MAX_INTERMEDIATE)?;
            let experts = f.dim("num_local_experts", MAX_EXPERTS)?;
            let top_k = top_k(f, experts)?;
            let moe = MoeSpec {
                num_routed_experts: u(experts),
                num_shared_experts: 0,
                top_k,
                expert_intermediate_size: inter,
            };
            Ok((Some(moe), vec![true; n], inter))
        }
        // MiniMax-M2 and gpt-oss: every layer MoE, `intermediate_size` is one expert's
        // (gpt-oss also spells top-k `experts_per_token`), no shared expert.
        "minimax_m2" | "gpt_oss" => {
            let inter = f.dim("intermediate_size", MAX_INTERMEDIATE)?;
            let experts = f.dim("num_local_experts", MAX_EXPERTS)?;
            let moe = MoeSpec {
                num_routed_experts: u(experts),
                num_shared_experts: 0,
                top_k: top_k(f, experts)?,
                expert_intermediate_size: inter,
            };
            Ok((Some(moe), vec![true; n], inter))
        }
        "qwen3_moe" | "qwen3_next" | "qwen3_5_moe_text" => {
            let experts = f.dim("num_experts", MAX_EXPERTS)?;
            let expert_inter = f.dim("moe_intermediate_size", MAX_INTERMEDIATE)?;
            // Qwen3.5's text config has no dense `intermediate_size` (every layer is MoE).
            let inter = f
                .opt_int("intermediate_size", 1, MAX_INTERMEDIATE)?
                .unwrap_or(expert_inter);
            let moe = MoeSpec {
                num_routed_experts: u(experts),
                num_shared_experts: shared_experts(f, expert_inter)?,
                top_k: top_k(f, experts)?,
                expert_intermediate_size: expert_inter,
            };
            let step = f
                .opt_int("decoder_sparse_step", 1, MAX_LAYERS)?
                .unwrap_or(1);
            let mlp_only = index_list(f, "mlp_only_layers", num_layers)?;
            let layers = (0..num_layers)
                .map(|i| !mlp_only.contains(&i) && (i + 1) % step == 0)
                .collect();
            Ok((Some(moe), layers, inter))
        }
        // deepseek_v3, kimi_k2, deepseek_v32, glm_moe_dsa, glm4_moe
        _ => {
            let inter = f.dim("intermediate_size", MAX_INTERMEDIATE)?;
            let experts = f.dim("n_routed_experts", MAX_EXPERTS)?;
            let moe = MoeSpec {
                num_routed_experts: u(experts),
                num_shared_experts: u(f.opt_int("n_shared_experts", 0, 64)?.unwrap_or(0)),
                top_k: top_k(f, experts)?,
                expert_intermediate_size: f.dim("moe_intermediate_size", MAX_INTERMEDIATE)?,
            };
            let first_dense = f
                .opt_int("first_k_dense_replace", 0, num_layers)?
                .unwrap_or(0);
            let freq = f.opt_int("moe_layer_freq", 1, MAX_LAYERS)?.unwrap_or(1);
            let kinds = [("dense", false), ("sparse", true), ("moe", true)];
            let layers = match per_layer_kinds(f, "mlp_layer_types", num_layers, &kinds)? {
                Some(types) => types,
                None => (0..num_layers)
                    .map(|i| i >= first_dense && i % freq == 0)
                    .collect(),
            };
            Ok((Some(moe), layers, inter))
        }
    }
}

fn top_k(f: &Fields, experts: u64) -> Result<u32> {
    let k = match f.opt_int("experts_per_token", 1, MAX_EXPERTS)? {
        Some(k) if f.present("num_experts_per_tok").is_none() => k,
        _ => f.dim("num_experts_per_tok", MAX_EXPERTS)?,
    };
    if k > experts {
        return Err(f.err(
            "num_experts_per_tok",
            format!("{k} is more than the {experts} routed experts"),
        ));
    }
    Ok(k as u32)
}
