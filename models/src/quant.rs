//! Checkpoint quantization: reads `hf_quant_config.json` (NVIDIA ModelOpt) or the
//! `quantization_config` block of `config.json` (fp8 block-wise, modelopt, compressed-tensors) and
//! decides each model part's storage format, honouring the exclusion lists.
//!
//! Exclusion lists name modules (`model.layers.3.self_attn.q_a_proj`) by fnmatch-style globs
//! (ModelOpt's `exclude_modules`, fp8's `modules_to_not_convert`) or by `re:` regexes
//! (compressed-tensors' `ignore`). Every linear module of every layer is matched by its own
//! checkpoint name ([`QuantScheme::resolve`]); what stayed BF16 is listed by
//! [`ModelSpec::bf16_modules`](crate::spec::ModelSpec::bf16_modules).

use crate::error::{ModelsError, Result};
use crate::format::{KvDtype, WeightFormat};
use crate::spec::{LayerSet, ModelPart, ModelSpec, ModuleFormats, ModuleOverride, PartFormats};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// What a quantization description says: the quantized format, the KV dtype and the exclusions.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantScheme {
    /// Format of quantized linear layers.
    pub format: WeightFormat,
    /// KV-cache dtype implied by `kv_cache_quant_algo` / `kv_cache_scheme` (None: not stated).
    pub kv_dtype: Option<KvDtype>,
    /// Module-name patterns left unquantized.
    pub excluded: Vec<String>,
}

fn field_err(path: &Path, field: &str, problem: impl Into<String>) -> ModelsError {
    ModelsError::Field {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem: problem.into(),
    }
}

fn string_list(v: Option<&Value>, path: &Path, field: &str) -> Result<Vec<String>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| field_err(path, field, "every entry must be a string"))
            })
            .collect(),
        Some(_) => Err(field_err(path, field, "must be a list of module names")),
    }
}

fn kv_from_algo(v: Option<&Value>) -> Option<KvDtype> {
    match v.and_then(Value::as_str) {
        Some(s) if s.to_ascii_uppercase().starts_with("FP8") => Some(KvDtype::Fp8),
        _ => None,
    }
}

fn kv_from_scheme(v: Option<&Value>) -> Option<KvDtype> {
    let bits = v?.get("num_bits")?.as_u64()?;
    (bits == 8).then_some(KvDtype::Fp8)
}

/// Maps a ModelOpt `quant_algo` (`NVFP4`, `FP8`, `FP8_BLOCK`…) to a format.
fn modelopt_format(
    algo: &str,
    group: Option<u64>,
    path: &Path,
    field: &str,
) -> Result<WeightFormat> {
    let a = algo.to_ascii_uppercase();
    if a.contains("NVFP4") {
        Ok(WeightFormat::Nvfp4)
    } else if a.starts_with("FP8") {
        Ok(WeightFormat::Fp8 {
            block: if a.contains("BLOCK") { 128 } else { 0 },
        })
    } else if a.contains("W4A") || a.contains("INT4") {
        Ok(WeightFormat::Int4 {
            group_size: group.unwrap_or(128).clamp(1, 1 << 16) as u32,
        })
    } else {
        Err(field_err(
            path,
            field,
            format!(
                "unsupported quant_algo `{algo}` (supported: NVFP4, FP8, FP8_BLOCK, W4A16/INT4)"
            ),
        ))
    }
}

/// Parses a ModelOpt `hf_quant_config.json` (`{"quantization": {"quant_algo": …}}`).
pub fn parse_hf_quant_config(text: &str, path: &Path) -> Result<QuantScheme> {
    let v: Value = serde_json::from_str(text).map_err(|e| ModelsError::Json {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let q = v
        .get("quantization")
        .filter(|q| q.is_object())
        .ok_or_else(|| {
            field_err(
                path,
                "quantization",
                "missing (expected an object with quant_algo)",
            )
        })?;
    let algo = q
        .get("quant_algo")
        .and_then(Value::as_str)
        .ok_or_else(|| field_err(path, "quantization.quant_algo", "missing or not a string"))?;
    let format = modelopt_format(
        algo,
        q.get("group_size").and_then(Value::as_u64),
        path,
        "quantization.quant_algo",
    )?;
    Ok(QuantScheme {
        format,
        kv_dtype: kv_from_algo(q.get("kv_cache_quant_algo")),
        excluded: string_list(
            q.get("exclude_modules"),
            path,
            "quantization.exclude_modules",
        )?,
    })
}

/// Parses a `quantization_config` object found inside `config.json` (`field` names where).
pub fn parse_quantization_config(q: &Value, path: &Path, field: &str) -> Result<QuantScheme> {
    let f = |k: &str| format!("{field}.{k}");
    if !q.is_object() {
        return Err(field_err(path, field, "must be an object"));
    }
    let method = q
        .get("quant_method")
        .and_then(Value::as_str)
        .ok_or_else(|| field_err(path, &f("quant_method"), "missing or not a string"))?;
    match method {
        "fp8" => fp8_scheme(q, path, field),
        "modelopt" => modelopt_scheme(q, path, field),
        "mxfp4" => mxfp4_scheme(q, path, field),
        "compressed-tensors" => compressed_tensors_scheme(q, path, field),
        other => Err(field_err(
            path,
            &f("quant_method"),
            format!("unsupported `{other}` (supported: fp8, modelopt, mxfp4, compressed-tensors)"),
        )),
    }
}

/// Block-wise FP8 (`quant_method: fp8`, `weight_block_size`).
fn fp8_scheme(q: &Value, path: &Path, field: &str) -> Result<QuantScheme> {
    let f = |k: &str| format!("{field}.{k}");
    let block = match q.get("weight_block_size") {
        None | Some(Value::Null) => 0,
        Some(Value::Array(b)) if !b.is_empty() => b[0]
            .as_u64()
            .filter(|&x| (1..=1 << 16).contains(&x))
            .ok_or_else(|| field_err(path, &f("weight_block_size"), "must be positive integers"))?
            as u32,
        Some(_) => {
            return Err(field_err(
                path,
                &f("weight_block_size"),
                "must be a list like [128, 128]",
            ));
        }
    };
    Ok(QuantScheme {
        format: WeightFormat::Fp8 { block },
        kv_dtype: None,
        excluded: string_list(
            q.get("modules_to_not_convert").or(q.get("ignored_layers")),
            path,
            &f("modules_to_not_convert"),
        )?,
    })
}

/// NVIDIA ModelOpt (`quant_method: modelopt`: NVFP4 / FP8 by `quant_algo`).
fn modelopt_scheme(q: &Value, path: &Path, field: &str) -> Result<QuantScheme> {
    let f = |k: &str| format!("{field}.{k}");
    let algo = q
        .get("quant_algo")
        .and_then(Value::as_str)
        .ok_or_else(|| field_err(path, &f("quant_algo"), "missing or not a string"))?;
    let group = q
        .pointer("/config_groups/group_0/weights/group_size")
        .and_then(Value::as_u64);
    Ok(QuantScheme {
        format: modelopt_format(algo, group, path, &f("quant_algo"))?,
        kv_dtype: kv_from_algo(q.get("kv_cache_quant_algo"))
            .or_else(|| kv_from_scheme(q.get("kv_cache_scheme"))),
        excluded: string_list(
            q.get("exclude_modules").or(q.get("ignore")),
            path,
            &f("ignore"),
        )?,
    })
}

/// transformers' MXFP4 (gpt-oss): only the MoE experts are quantized; its
/// `modules_to_not_convert` names module prefixes (`model.layers.*.self_attn`), so each
/// entry also covers what lies under it.
fn mxfp4_scheme(q: &Value, path: &Path, field: &str) -> Result<QuantScheme> {
    let f = |k: &str| format!("{field}.{k}");
    let prefixes = string_list(
        q.get("modules_to_not_convert"),
        path,
        &f("modules_to_not_convert"),
    )?;
    let mut excluded = Vec::with_capacity(2 * prefixes.len());
    for p in prefixes {
        excluded.push(format!("{p}.*"));
        excluded.push(p);
    }
    Ok(QuantScheme {
        format: WeightFormat::Mxfp4,
        kv_dtype: None,
        excluded,
    })
}

/// compressed-tensors (`config_groups.*.weights`: INT4 / NVFP4 / FP8 / BF16 by bits and type).
fn compressed_tensors_scheme(q: &Value, path: &Path, field: &str) -> Result<QuantScheme> {
    let f = |k: &str| format!("{field}.{k}");
    let groups = q
        .get("config_groups")
        .and_then(Value::as_object)
        .ok_or_else(|| field_err(path, &f("config_groups"), "missing or not an object"))?;
    let weights = groups
        .values()
        .find_map(|g| g.get("weights").filter(|w| w.is_object()))
        .ok_or_else(|| field_err(path, &f("config_groups"), "no group has `weights`"))?;
    let bits = weights.get("num_bits").and_then(Value::as_u64);
    let kind = weights.get("type").and_then(Value::as_str).unwrap_or("int");
    let group = weights.get("group_size").and_then(Value::as_u64);
    let format = match (bits, kind) {
        (Some(4), "float") => WeightFormat::Nvfp4,
        (Some(4), _) => WeightFormat::Int4 {
            group_size: group.unwrap_or(128).clamp(1, 1 << 16) as u32,
        },
        (Some(8), _) => {
            let block = weights
                .pointer("/block_structure/0")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(1 << 16) as u32;
            WeightFormat::Fp8 { block }
        }
        (Some(16), _) => WeightFormat::Bf16,
        _ => {
            return Err(field_err(
                path,
                &f("config_groups.*.weights.num_bits"),
                "missing or unsupported (supported: 4, 8, 16)",
            ));
        }
    };
    Ok(QuantScheme {
        format,
        kv_dtype: kv_from_scheme(q.get("kv_cache_scheme")),
        excluded: string_list(q.get("ignore"), path, &f("ignore"))?,
    })
}

/// True when `name` matches an exclusion `pattern` (`re:` regex, else glob with `*` and `?`).
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_prefix("re:") {
        Some(re) => crate::minire::full_match(re, name),
        None => glob_match(pattern.as_bytes(), name.as_bytes()),
    }
}

/// fnmatch-style glob: `*` any run, `?` one character, everything else literal.
fn glob_match(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

impl QuantScheme {
    /// Whether a module is excluded under any of its names: `name`, the same under a wrapped
    /// multimodal checkpoint's `language_model.` prefix (Kimi K2.5) or with `model.` become
    /// `model.language_model.` (Qwen3.5), and `alias` (an MTP layer's own name, `mtp.layers.0.…`).
    fn is_excluded(&self, module: &str, alias: Option<&str>) -> bool {
        let wrapped = format!("language_model.{module}");
        let inner = module
            .strip_prefix("model.")
            .map(|rest| format!("model.language_model.{rest}"));
        let names = [
            Some(module),
            Some(wrapped.as_str()),
            inner.as_deref(),
            alias,
        ];
        self.excluded
            .iter()
            .any(|p| names.iter().flatten().any(|name| pattern_matches(p, name)))
    }

    /// Each part's format and the module-by-module exceptions for `spec` (whose own formats
    /// are ignored): every linear module of every layer, MTP layers included, is looked up in
    /// the exclusion list under its checkpoint name (`model.layers.{i}.{module}`, expert 0
    /// standing for all experts); excluded modules stay BF16. A part takes the format holding
    /// most of its parameters, and modules that differ from it become [`ModuleOverride`]s.
    /// Embeddings and `lm_head` are BF16: SGLang loads them unquantized under these schemes.
    pub fn resolve(&self, spec: &ModelSpec) -> (PartFormats, ModuleFormats) {
        // (part, module name) → per layer format; params per (part, format) for dominance.
        let mut resolved: Vec<(ModelPart, &'static str, u32, WeightFormat)> = Vec::new();
        let mut weight: BTreeMap<(ModelPart, String), u64> = BTreeMap::new();
        for layer in spec.all_layer_indices() {
            for m in spec.layer_modules(layer) {
                let name = format!("model.layers.{layer}.{}", m.probe);
                // Qwen3.5 stores its MTP layer as `mtp.layers.0.…`
                let alias = (layer >= spec.num_layers)
                    .then(|| format!("mtp.layers.{}.{}", layer - spec.num_layers, m.probe));
                let f = if self.is_excluded(&name, alias.as_deref()) {
                    WeightFormat::Bf16
                } else {
                    self.format
                };
                resolved.push((m.part, m.name, layer, f));
                *weight.entry((m.part, f.name())).or_default() += m.params;
            }
        }
        let dominant = |part: ModelPart, empty: WeightFormat| {
            [self.format, WeightFormat::Bf16]
                .into_iter()
                .map(|f| (weight.get(&(part, f.name())).copied().unwrap_or(0), f))
                .filter(|(n, _)| *n > 0)
                .max_by_key(|(n, _)| *n)
                .map_or(empty, |(_, f)| f)
        };
        let attention = dominant(ModelPart::Attention, self.format);
        let formats = PartFormats {
            embeddings: WeightFormat::Bf16,
            attention,
            dense_mlp: dominant(ModelPart::DenseMlp, self.format),
            shared_experts: dominant(ModelPart::SharedExperts, self.format),
            routed_experts: dominant(ModelPart::RoutedExperts, self.format),
            lm_head: WeightFormat::Bf16,
            // Without MTP layers nothing is stored; say bf16 rather than invent a format.
            mtp: dominant(ModelPart::Mtp, WeightFormat::Bf16),
        };
        let default_of = |part: ModelPart| match part {
            ModelPart::Attention | ModelPart::Indexer => formats.attention,
            ModelPart::DenseMlp => formats.dense_mlp,
            ModelPart::SharedExperts => formats.shared_experts,
            ModelPart::RoutedExperts => formats.routed_experts,
            ModelPart::Mtp => formats.mtp,
            _ => WeightFormat::Bf16,
        };
        let mut groups: Vec<(&'static str, WeightFormat, Vec<u32>)> = Vec::new();
        for (part, name, layer, f) in resolved {
            if f == default_of(part) {
                continue;
            }
            match groups.iter_mut().find(|(n, g, _)| *n == name && *g == f) {
                Some(g) => g.2.push(layer),
                None => groups.push((name, f, vec![layer])),
            }
        }
        let overrides = groups
            .into_iter()
            .map(|(name, format, layers)| ModuleOverride {
                module: name.to_string(),
                layers: LayerSet::from_layers(layers),
                format,
            })
            .collect();
        (formats, ModuleFormats { overrides })
    }
}
