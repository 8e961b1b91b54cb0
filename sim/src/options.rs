//! Server options of an SGLang-style engine, named after SGLang's launch flags.

use models::format::KvDtype;
use serde::{Deserialize, Serialize};

/// The engine options that change cost, memory or scheduling (parallel sizes live in
/// [`models::Layout`]). Defaults follow SGLang's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerOptions {
    /// `--mem-fraction-static`: share of each GPU's memory for weights + KV pool.
    pub mem_fraction_static: f64,
    /// `--kv-cache-dtype`; `None` = the model's default (`auto`).
    pub kv_cache_dtype: Option<KvDtype>,
    /// `--chunked-prefill-size`: most prefill tokens per iteration.
    pub chunked_prefill_size: u32,
    /// `--max-prefill-tokens`.
    pub max_prefill_tokens: u32,
    /// `--max-running-requests`; `None` = derived from KV capacity.
    pub max_running_requests: Option<u32>,
    /// `--cuda-graph-max-bs`: decode batches up to this size run under a CUDA graph.
    pub cuda_graph_max_bs: u32,
    /// `--disable-cuda-graph`.
    pub disable_cuda_graph: bool,
    /// `--disable-custom-all-reduce`.
    pub disable_custom_all_reduce: bool,
    /// `--moe-a2a-backend` (`deepep`, `mooncake`, …); `None` = no all-to-all backend.
    pub moe_a2a_backend: Option<String>,
    /// `--pp-max-micro-batch-size`; `None` = `max_running_requests / pp_size`.
    pub pp_max_micro_batch_size: Option<u32>,
    /// `--pp-async-batch-depth`: extra micro-batches in flight beyond `pp_size`.
    pub pp_async_batch_depth: u32,
    /// Overlap communication with compute (not SGLang's default; an option to explore).
    pub overlap_comm: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            mem_fraction_static: 0.85,
            kv_cache_dtype: None,
            chunked_prefill_size: 8192,
            max_prefill_tokens: 16384,
            max_running_requests: None,
            cuda_graph_max_bs: 160,
            disable_cuda_graph: false,
            disable_custom_all_reduce: false,
            moe_a2a_backend: None,
            pp_max_micro_batch_size: None,
            pp_async_batch_depth: 0,
            overlap_comm: false,
        }
    }
}
