//! Embedded model presets (`models/presets/models/*.json`): serialized [`ModelSpec`]s written
//! from the published HF configs, each with a `source` naming the HF repository. Tests check that
//! each equals what the loader reads from the matching config in `data/hf-configs/`; the one
//! checkpoint whose config is not carried (`glm-5.2-mxfp4-experts`, a community re-export) equals
//! its base architecture's config with the formats its source states, and its bytes are checked
//! against the KV tokens its published runs report (`sim/tests/mxfp4_experts.rs`).

use crate::error::{ModelsError, Result};
use crate::spec::ModelSpec;
use std::path::{Path, PathBuf};

/// Preset key and embedded JSON text.
macro_rules! model_preset {
    ($key:literal) => {
        (
            $key,
            include_str!(concat!("../presets/models/", $key, ".json")),
        )
    };
}

const MODEL_PRESETS: &[(&str, &str)] = &[
    model_preset!("glm-5-nvfp4"),
    model_preset!("glm-5.1-nvfp4"),
    model_preset!("glm-5.2-nvfp4"),
    model_preset!("glm-5.2-mxfp4-experts"),
    model_preset!("glm-5.2-fp8-mxfp4-experts"),
    model_preset!("glm-5-fp8"),
    model_preset!("glm-5.1-fp8"),
    model_preset!("glm-5.2-fp8"),
    model_preset!("glm-4.7-fp8"),
    model_preset!("kimi-k2.5-nvfp4"),
    model_preset!("kimi-k2.5"),
    model_preset!("kimi-k2-nvfp4"),
    model_preset!("kimi-k2-thinking-int4"),
    model_preset!("kimi-k2-thinking-nvfp4"),
    model_preset!("deepseek-v3-fp8"),
    model_preset!("deepseek-r1-fp4"),
    model_preset!("qwen3-235b-a22b-nvfp4"),
    model_preset!("qwen3-30b-a3b"),
    model_preset!("mixtral-8x7b"),
    model_preset!("llama-3.1-70b"),
    model_preset!("llama-3.1-405b"),
    model_preset!("minimax-m2.5"),
    model_preset!("minimax-m2.5-nvfp4"),
    model_preset!("minimax-m2.5-int4-awq"),
    model_preset!("gpt-oss-120b"),
    model_preset!("qwen3.5-397b-a17b"),
    model_preset!("qwen3.5-397b-a17b-nvfp4"),
    model_preset!("qwen3-next-80b-a3b"),
];

fn preset_path(name: &str) -> PathBuf {
    PathBuf::from(format!("models/presets/models/{name}.json"))
}

/// Community re-uploads that hold a preset's checkpoint, by HuggingFace id → preset key. Both
/// GLM-5 ones are the ModelOpt NVFP4 quantization the `glm-5-nvfp4` preset describes
/// (local-inference-lab/rtx6kpro models/glm5.md: `lukealonso/GLM-5-NVFP4` without the MTP weights,
/// `festr2/GLM-5-NVFP4-MTP` with layer 78 restored in BF16 — the preset's MTP layer, counted
/// only when speculation is on). The GLM-5.1 ones are the ModelOpt NVFP4 checkpoint the
/// `glm-5.1-nvfp4` preset describes (rtx6kpro models/glm5.1/vllm-b12x-nsa-mtp-port-2026-05-02.md:
/// `lukealonso/GLM-5.1-NVFP4-MTP`, "ModelOpt FP4/NVFP4 weights", MTP layer kept; its vLLM
/// start-up log prints `'quantization': 'modelopt_fp4'` and "Detected ModelOpt NVFP4
/// checkpoint"). Qwen3-Next-80B-A3B's Thinking and Instruct checkpoints share one
/// architecture (data/hf-configs/README.md: the carried config equals aiconfigurator's copy of
/// the Thinking one). Kimi-K2.6 (INT4 W4A16, as K2.5) is K2.5's architecture with the same
/// vision tower (data/hf-configs/README.md: nvidia's K2.6-NVFP4 config has K2.5's text and
/// vision configs; moonshotai's own K2.6 config was not found). lukealonso's GLM-5.2 NVFP4 is taken
/// as the ModelOpt NVFP4 quantization of nvidia's `glm-5.2-nvfp4` config, as for GLM-5.1 (its
/// rtx6kpro GLM-5.2 v13 launch passes `--quantization modelopt_fp4`; its own config.json is not
/// carried).
const SAME_CHECKPOINT_AS: [(&str, &str); 7] = [
    ("lukealonso/GLM-5-NVFP4", "glm-5-nvfp4"),
    ("festr2/GLM-5-NVFP4-MTP", "glm-5-nvfp4"),
    ("lukealonso/GLM-5.1-NVFP4", "glm-5.1-nvfp4"),
    ("lukealonso/GLM-5.1-NVFP4-MTP", "glm-5.1-nvfp4"),
    ("lukealonso/GLM-5.2-NVFP4", "glm-5.2-nvfp4"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "qwen3-next-80b-a3b"),
    ("moonshotai/Kimi-K2.6", "kimi-k2.5"),
];

impl ModelSpec {
    /// The embedded preset `name` (case-insensitive), e.g. `glm-5-nvfp4`.
    pub fn preset(name: &str) -> Result<ModelSpec> {
        let key = name.to_ascii_lowercase();
        let (key, text) = MODEL_PRESETS
            .iter()
            .find(|(k, _)| *k == key)
            .ok_or_else(|| ModelsError::UnknownPreset {
                kind: "model",
                name: name.to_string(),
                known: Self::preset_names().join(", "),
            })?;
        let path = preset_path(key);
        let spec: ModelSpec = serde_json::from_str(text).map_err(|e| ModelsError::Json {
            path: path.clone(),
            message: e.to_string(),
        })?;
        spec.check(&path)?;
        Ok(spec)
    }

    /// Keys of all embedded model presets.
    pub fn preset_names() -> Vec<&'static str> {
        MODEL_PRESETS.iter().map(|(k, _)| *k).collect()
    }

    /// The preset of the HuggingFace repository `org/name` that SGLang's `--model-path` names
    /// (e.g. `zai-org/GLM-4.7-FP8` → `glm-4.7-fp8`): the preset whose `source` is that repository,
    /// else the one keyed by its lower-cased name.
    pub fn preset_for_hf_id(id: &str) -> Option<ModelSpec> {
        let id = id.trim().trim_end_matches('/');
        let (_, name) = id.split_once('/')?;
        if name.contains('/') || id.starts_with(['.', '/']) {
            return None;
        }
        if let Some((_, key)) = SAME_CHECKPOINT_AS
            .iter()
            .find(|(repo, _)| repo.eq_ignore_ascii_case(id))
        {
            return Self::preset(key).ok();
        }
        let want = format!("https://huggingface.co/{id} (").to_ascii_lowercase();
        let by_source = MODEL_PRESETS.iter().find_map(|(k, text)| {
            let spec: ModelSpec = serde_json::from_str(text).ok()?;
            spec.source
                .to_ascii_lowercase()
                .starts_with(&want)
                .then_some(*k)
        });
        Self::preset(by_source.unwrap_or(&name.to_ascii_lowercase())).ok()
    }

    /// A preset name, else a HF model folder (with `config.json`), else a config file path, else
    /// a HuggingFace repository id: from the local HF cache when it holds it
    /// ([`ModelSpec::from_hf_cache`]), else the preset of that id
    /// ([`ModelSpec::preset_for_hf_id`]). The error for anything else says where it looked.
    pub fn resolve(name_or_path: &str) -> Result<ModelSpec> {
        if let Ok(spec) = Self::preset(name_or_path) {
            return Ok(spec);
        }
        let path = Path::new(name_or_path);
        if path.is_dir() {
            return Self::from_hf_dir(path);
        }
        if path.is_file() {
            return Self::from_hf_config(path);
        }
        if let Some(spec) = Self::from_hf_cache(name_or_path)? {
            return Ok(spec);
        }
        if let Some(spec) = Self::preset_for_hf_id(name_or_path) {
            return Ok(spec);
        }
        let known = Self::preset_names().join(", ");
        let name = name_or_path.to_string();
        Err(match crate::hf_cache::is_repo_id(name_or_path) {
            true => ModelsError::UnknownModel {
                looked_in: crate::hf_cache::looked_in(name_or_path),
                name,
                known,
            },
            false => ModelsError::UnknownPreset {
                kind: "model",
                name,
                known,
            },
        })
    }

    /// Internal consistency of a spec not produced by the HF loader (a preset or a hand-written
    /// JSON): one MoE flag per layer, MoE layers only with a MoE block, sizes non-zero.
    pub fn check(&self, path: &Path) -> Result<()> {
        let fail = |field: &str, problem: String| {
            Err(ModelsError::Field {
                path: path.to_path_buf(),
                field: field.to_string(),
                problem,
            })
        };
        if self.moe_layers.len() != self.num_layers as usize {
            return fail(
                "moe_layers",
                format!(
                    "has {} entries for {} layers",
                    self.moe_layers.len(),
                    self.num_layers
                ),
            );
        }
        if !self.indexer_layers.is_empty() && self.indexer_layers.len() != self.num_layers as usize
        {
            return fail(
                "indexer_layers",
                format!(
                    "has {} entries for {} layers",
                    self.indexer_layers.len(),
                    self.num_layers
                ),
            );
        }
        if self.moe.is_none() && self.num_moe_layers() > 0 {
            return fail("moe", "missing while moe_layers marks MoE layers".into());
        }
        if self.hidden_size == 0 || self.num_layers == 0 || self.vocab_size == 0 {
            return fail(
                "hidden_size",
                "hidden_size, num_layers and vocab_size must be positive".into(),
            );
        }
        if self.attention.num_heads() == 0 {
            return fail("attention.num_heads", "must be positive".into());
        }
        Ok(())
    }
}
