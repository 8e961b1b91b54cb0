//! Typed errors of the models crate.

use std::path::PathBuf;

/// Everything that can go wrong while describing a model, a GPU, a layout or a profile.
#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON, or does not have the expected shape.
    #[error("{path}: malformed JSON: {message}")]
    Json { path: PathBuf, message: String },
    /// A field is missing or has an impossible value; names the file and the field.
    #[error("{path}: field `{field}`: {problem}")]
    Field {
        path: PathBuf,
        field: String,
        problem: String,
    },
    /// The config's `model_type` is not one this crate understands.
    #[error(
        "{path}: unsupported model_type `{model_type}` (supported: deepseek_v3, kimi_k2, deepseek_v32, glm_moe_dsa, glm4_moe, qwen3_moe, mixtral, llama, qwen2, qwen3)"
    )]
    UnsupportedModelType { path: PathBuf, model_type: String },
    /// No preset of that name, and no such path.
    #[error("unknown {kind} `{name}`: not a preset ({known}) and not a path")]
    UnknownPreset {
        kind: &'static str,
        name: String,
        known: String,
    },
    /// A layout that cannot hold this model (heads or experts do not divide, too few layers…).
    #[error("layout {layout} is impossible for {model}: {reason}")]
    ImpossibleLayout {
        layout: String,
        model: String,
        reason: String,
    },
    /// A machine profile written by a newer or unknown schema.
    #[error(
        "{path}: profile schema_version {found} is not supported (this build reads {supported})"
    )]
    SchemaVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, ModelsError>;
