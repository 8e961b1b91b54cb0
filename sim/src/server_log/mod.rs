//! A server log file read by the engine that wrote it: SGLang's own log (`python -m
//! sglang.launch_server … 2>&1 | tee server.log`) or vLLM's (`vllm serve … 2>&1 | tee
//! server.log`), into the engine-neutral run values of [`crate::engine::log`] (each engine's
//! line readers are in its folder: `engine/sglang/log/`, `engine/vllm/log.rs`). Here: reading
//! the file within its size limit ([`load`]), the cost model's view of a logged sample and of a
//! run's memory ([`batch`]), and a logged run's server options ([`options`]).

pub mod batch;

/// The neutral run values each engine reads its log into ([`crate::engine::log`]).
pub use crate::engine::log::{
    DecodeSample, PoolSummary, PrefillSample, RankMemory, RankTag, RunMemory,
    SERVER_LOG_SCHEMA_VERSION, ServerArgsDump, ServerLog, ServerRun, SkipCounts, SkipEntry,
    SkipReason, Unsteady, line, memory, skip,
};
/// SGLang's `server_args` dump, read by SGLang's reader ([`crate::engine::sglang::args::dump`]).
pub use crate::engine::sglang::args::dump as args;
/// SGLang's log reader ([`crate::engine::sglang::log`]).
pub use crate::engine::sglang::log::{parse, stats};
/// vLLM's `non-default args` dict, read by vLLM's reader ([`crate::engine::vllm::args::dump`]).
pub use crate::engine::vllm::args::dump as vllm_launch;
/// vLLM's log reader ([`crate::engine::vllm::log`]).
pub use crate::engine::vllm::log as vllm;

use std::path::Path;

/// Largest log read ([`models::io::LOG_LIMIT_BYTES`], 1 GiB): a bigger file is refused before it
/// is read, a stream (`/dev/urandom`) once it passes the limit.
pub const MAX_LOG_BYTES: u64 = models::io::LOG_LIMIT_BYTES;

/// Why the log cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ServerLogError {
    /// Missing, unreadable, a folder or binary (the message names the file).
    #[error("server log: {0}")]
    Io(models::ModelsError),
    #[error(
        "server log {path} is {}, over the {limit}-byte limit; cut it to the runs you want (e.g. with grep or tail)",
        bytes.map_or_else(|| "a stream that does not end".to_string(), |b| format!("{b} bytes"))
    )]
    TooLarge {
        path: String,
        /// The file's size (`None`: a device or pipe that went past the limit).
        bytes: Option<u64>,
        limit: u64,
    },
    /// A log without a decode sample that has a step time: the engine that wrote it says what
    /// line was missing and how to get one ([`crate::engine::ServingEngine::log_without_samples`]).
    #[error("server log {path}: {missing} ({lines} lines: {skipped}); {hint}")]
    NoSample {
        path: String,
        /// The engine whose log it is.
        engine: crate::engine::Engine,
        missing: &'static str,
        lines: usize,
        skipped: String,
        hint: &'static str,
    },
}

/// Reads a log file whole ([`models::io::read_log_limited`]), refusing one over
/// [`MAX_LOG_BYTES`] or a binary file. Invalid UTF-8 is replaced, not refused (logs pick up
/// binary junk).
pub fn read_log_file(path: &Path) -> Result<String, ServerLogError> {
    models::io::read_log_limited(path, MAX_LOG_BYTES).map_err(|e| match e {
        models::ModelsError::TooLarge { bytes, .. } => ServerLogError::TooLarge {
            path: path.display().to_string(),
            bytes,
            limit: MAX_LOG_BYTES,
        },
        other => ServerLogError::Io(other),
    })
}

/// Reads and parses `path`, failing when no run has a decode sample with a step time.
pub fn load(path: &Path) -> Result<ServerLog, ServerLogError> {
    let text = read_log_file(path)?;
    let log = parse_any(&text, &path.display().to_string());
    if !log.has_usable_sample() {
        let engine = log.engine.unwrap_or_default();
        let (missing, hint) = engine.rules().log_without_samples();
        return Err(ServerLogError::NoSample {
            path: path.display().to_string(),
            engine,
            missing,
            lines: log.lines,
            skipped: log.skipped.summary(),
            hint,
        });
    }
    Ok(log)
}

/// Parses a log of whichever engine wrote it: the registry asks each engine whether `text` is
/// its log ([`crate::engine::Engine::of_log`]) and that engine reads it.
pub fn parse_any(text: &str, source: &str) -> ServerLog {
    crate::engine::Engine::read_log(text, source)
}
