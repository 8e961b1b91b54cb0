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
    /// A file could not be written (the temp file, its sync, or the rename onto the path).
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A path that is not a regular file to read (a named pipe no program writes to).
    #[error("{path}: {problem}")]
    NotAFile { path: PathBuf, problem: String },
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
    /// A model name that is no preset, no path, not in the local HF cache and no preset's HF id.
    #[error(
        "unknown model `{name}`: not a preset ({known}), not a path, and not in the HF cache (looked in {looked_in}); download it (`huggingface-cli download {name} config.json`), pass its folder, or use a preset"
    )]
    UnknownModel {
        name: String,
        looked_in: String,
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
    /// A user's file is larger than its kind of input can be ([`crate::io`]).
    #[error(
        "{path}: {} is more than the {} this input may be; is it the right file?",
        bytes.map_or("the stream".to_string(), |b| format!("{:.2} GB", b as f64 / 1e9)),
        human_limit(*limit_bytes)
    )]
    TooLarge {
        path: PathBuf,
        /// The file's size when known (`None`: a stream that went past the limit).
        bytes: Option<u64>,
        limit_bytes: u64,
    },
    /// A file that should be text holds bytes that are not UTF-8.
    #[error("{path}: not UTF-8 text (invalid byte at byte {offset}); is it the right file?")]
    NotText { path: PathBuf, offset: usize },
    /// A file that should be a text log holds a NUL byte near its start.
    #[error("{path}: a binary file (a NUL byte at byte {offset}), not text; is it the right file?")]
    Binary { path: PathBuf, offset: usize },
}

fn human_limit(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

/// An error and its causes on one line, `a: b: c`, leaving out a cause whose text the line
/// already holds: a typed error whose message prints its `{source}` and also returns it from
/// `source()` would otherwise print the io error twice ("… (os error 13): … (os error 13)").
pub fn one_line(top: &(dyn std::error::Error + 'static)) -> String {
    let mut line = top.to_string();
    let mut cause = top.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

/// For a caller whose own message already names the path and the operation ("cannot write
/// calibration X: …"): the io error alone for [`ModelsError::Io`] / [`ModelsError::Write`],
/// the whole message otherwise.
pub fn io_cause_or_whole(e: &ModelsError) -> String {
    match e {
        ModelsError::Io { source, .. } | ModelsError::Write { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, ModelsError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_error_says_write_and_its_os_error_once() {
        let e = ModelsError::Write {
            path: "/ro/profile.json".into(),
            source: std::io::Error::from_raw_os_error(30),
        };
        let line = one_line(&e);
        assert_eq!(
            line,
            "cannot write /ro/profile.json: Read-only file system (os error 30)"
        );
    }

    #[test]
    fn a_cause_not_in_the_message_is_appended() {
        #[derive(Debug, thiserror::Error)]
        #[error("loading the machine")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::from_raw_os_error(2));
        assert_eq!(
            one_line(&e),
            "loading the machine: No such file or directory (os error 2)"
        );
    }
}
