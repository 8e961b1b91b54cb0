//! The launch arguments a server log prints, kept as the engine printed them: SGLang's
//! `server_args=ServerArgs(…)` pairs and vLLM's `non-default args` dict. Each engine's reader
//! splits and reads them (`engine/sglang/args/dump.rs`, `engine/vllm/args/dump.rs`); these are
//! the values a [`super::ServerRun`] holds.

use serde::{Deserialize, Serialize};

/// The pairs of one `ServerArgs(...)` dump, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerArgsDump {
    /// (key, value text) as printed: `("model_path", "'zai-org/GLM-4.7-FP8'")`.
    pub pairs: Vec<(String, String)>,
    /// The dump ended before its closing `)` (a cut line): the last, partial pair is dropped.
    pub truncated: bool,
}

/// A run's `non-default args` dict, and the `vllm serve` line it stands for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VllmArgs {
    /// (dest, Python literal) as printed: `("tensor_parallel_size", "8")`.
    pub pairs: Vec<(String, String)>,
    /// The dict was cut before its closing `}` (its last, partial pair is dropped).
    pub truncated: bool,
    /// `vllm serve MODEL --flag value …`, read by [`crate::engine::vllm::args::VllmLine`].
    pub launch_line: String,
    /// Environment the log's later lines prove the server ran with (`NAME`, value), which the
    /// dict does not hold: prefixed to the launch line (`VllmArgs::line_with_env`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    /// The engine's version as its `Initializing a V1 LLM engine (v…)` line prints it (a
    /// community image's `0.20.2rc1.dev249+glmkimirebase20260514`): the build date the b12x
    /// W4A16 kernels are told apart by ([`crate::b12x_build::B12xA16Build::of_text`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
}
