//! The fields of a HuggingFace `config.json` as the model reader takes them: one config object's
//! typed getters that name the file and the field in errors ([`Fields`]), the upper bounds that
//! keep every derived product inside `u64`, and per-layer lists. The model reader ([`crate::hf`])
//! and its attention and layer readers (`hf_attention`, `hf_layers`) all stand on this module,
//! so none of them imports another's internals.

use crate::error::{ModelsError, Result};
use serde_json::{Map, Value};
use std::path::Path;

/// Upper bounds on config dimensions (far above any published model) that keep every derived
/// product inside `u64`.
pub(crate) const MAX_HIDDEN: u64 = 1 << 16;
pub(crate) const MAX_INTERMEDIATE: u64 = 1 << 18;
pub(crate) const MAX_LAYERS: u64 = 1 << 10;
pub(crate) const MAX_VOCAB: u64 = 1 << 22;
pub(crate) const MAX_HEADS: u64 = 1 << 10;
pub(crate) const MAX_HEAD_DIM: u64 = 1 << 11;
pub(crate) const MAX_RANK: u64 = 1 << 16;
pub(crate) const MAX_EXPERTS: u64 = 1 << 12;
pub(crate) const MAX_CONTEXT: u64 = 1 << 40;

/// Reads JSON fields of one config object, naming the file and the (prefixed) field in errors.
pub(crate) struct Fields<'a> {
    pub(crate) obj: &'a Map<String, Value>,
    pub(crate) path: &'a Path,
    /// `text_config.` for wrapped multimodal configs, else empty.
    pub(crate) prefix: &'static str,
}

impl Fields<'_> {
    pub(crate) fn err(&self, key: &str, problem: impl Into<String>) -> ModelsError {
        ModelsError::Field {
            path: self.path.to_path_buf(),
            field: format!("{}{key}", self.prefix),
            problem: problem.into(),
        }
    }

    pub(crate) fn present(&self, key: &str) -> Option<&Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    /// An optional integer in `[min, max]`.
    pub(crate) fn opt_int(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>> {
        let Some(v) = self.present(key) else {
            return Ok(None);
        };
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e19)
                    .map(|f| f as u64)
            }),
            _ => None,
        };
        match n {
            Some(n) if n < min => Err(self.err(key, format!("must be at least {min}, got {v}"))),
            Some(n) if n > max => Err(self.err(
                key,
                format!("{v} is implausibly large (at most {max} supported)"),
            )),
            Some(n) => Ok(Some(n)),
            None => Err(self.err(key, format!("must be a non-negative integer, got {v}"))),
        }
    }

    /// A required positive integer at most `max`.
    pub(crate) fn dim(&self, key: &str, max: u64) -> Result<u64> {
        self.opt_int(key, 1, max)?
            .ok_or_else(|| self.err(key, "missing (required positive integer)"))
    }

    /// An optional fraction in (0, 1], at `key` or inside `rope_parameters` (Qwen3.5 nests
    /// its rope settings there).
    pub(crate) fn opt_fraction(&self, key: &str) -> Result<Option<f64>> {
        let nested = self
            .present("rope_parameters")
            .and_then(|r| r.get(key))
            .filter(|v| !v.is_null());
        let Some(v) = self.present(key).or(nested) else {
            return Ok(None);
        };
        match v.as_f64() {
            Some(f) if f > 0.0 && f <= 1.0 => Ok(Some(f)),
            _ => Err(self.err(key, format!("must be a number in (0, 1], got {v}"))),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.present(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(key, format!("must be true or false, got {v}"))),
        }
    }

    pub(crate) fn as_u32(n: u64) -> u32 {
        // Every bound above is below u32::MAX except context and vocab, never passed here.
        n as u32
    }
}

/// A per-layer list of kinds (`mlp_layer_types`: dense / sparse, `indexer_types`: full /
/// shared) mapped to booleans by `kinds`, when present; it must have one entry per layer.
pub(crate) fn per_layer_kinds<T: Copy>(
    f: &Fields,
    key: &str,
    num_layers: u64,
    kinds: &[(&str, T)],
) -> Result<Option<Vec<T>>> {
    let Some(v) = f.present(key) else {
        return Ok(None);
    };
    let names: Vec<&str> = kinds.iter().map(|(k, _)| *k).collect();
    let items = v
        .as_array()
        .ok_or_else(|| f.err(key, format!("must be a list of {}", names.join(" / "))))?;
    if items.len() as u64 != num_layers {
        return Err(f.err(
            key,
            format!(
                "has {} entries but num_hidden_layers is {num_layers}",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .map(|t| {
            t.as_str()
                .and_then(|t| kinds.iter().find(|(k, _)| *k == t))
                .map(|(_, b)| *b)
                .ok_or_else(|| {
                    f.err(
                        key,
                        format!("unknown entry {t} (expected {})", names.join(" or ")),
                    )
                })
        })
        .collect::<Result<Vec<T>>>()
        .map(Some)
}

/// A list of layer indices (e.g. `mlp_only_layers`), each below `num_layers`.
pub(crate) fn index_list(f: &Fields, key: &str, num_layers: u64) -> Result<Vec<u64>> {
    let Some(v) = f.present(key) else {
        return Ok(Vec::new());
    };
    let items = v
        .as_array()
        .ok_or_else(|| f.err(key, "must be a list of layer indices"))?;
    items
        .iter()
        .map(|i| {
            i.as_u64().filter(|&i| i < num_layers).ok_or_else(|| {
                f.err(
                    key,
                    format!("entry {i} is not a layer index below {num_layers}"),
                )
            })
        })
        .collect()
}
