//! What one rank of a run logged about its memory, in bytes, whichever engine wrote it, and the
//! memory line kinds the engines' readers turn their lines into ([`MemoryLine`]).

use super::line::RankTag;
use serde::{Deserialize, Serialize};

/// What one rank logged about its memory; every value in bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankMemory {
    pub rank: RankTag,
    /// `Init torch distributed ends. mem usage`.
    pub init_distributed_bytes: Option<u64>,
    /// `Load weight begin. avail mem`: what `mem_fraction_static` is a fraction of.
    pub available_before_load_bytes: Option<u64>,
    /// `Load weight end. mem usage`: the weights (and what loading left allocated).
    pub weight_bytes: Option<u64>,
    /// `Load weight end. avail mem`.
    pub available_after_load_bytes: Option<u64>,
    /// `Using KV cache dtype: …` (torch's name).
    pub kv_cache_dtype: Option<String>,
    /// `KV Cache is allocated. #tokens`.
    pub kv_tokens: Option<u64>,
    /// `… K size / V size` or `KV size`, in order: (`K`, bytes), (`V`, bytes).
    pub kv_sizes: Vec<(String, u64)>,
    /// `Memory pool end. avail mem`.
    pub available_after_pool_bytes: Option<u64>,
    /// `Capture cuda graph end … mem usage`.
    pub cuda_graph_bytes: Option<u64>,
    /// `Capture cuda graph end … avail mem`.
    pub available_after_graphs_bytes: Option<u64>,
    /// vLLM's profiled estimate of its CUDA graphs (`Estimated CUDA graph memory: X GiB
    /// total`, or the `(estimated)` figure of `CUDA graph pool memory`), beside the captured
    /// pool in [`RankMemory::cuda_graph_bytes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_graph_estimated_bytes: Option<u64>,
}

impl RankMemory {
    /// The KV pool: the sum of the logged K/V (or KV) sizes.
    pub fn kv_pool_bytes(&self) -> Option<u64> {
        (!self.kv_sizes.is_empty()).then(|| self.kv_sizes.iter().map(|(_, b)| b).sum())
    }
}

/// The scheduler's `max_total_num_tokens=…` summary line (rank 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolSummary {
    pub max_total_num_tokens: Option<u64>,
    pub chunked_prefill_size: Option<i64>,
    pub max_prefill_tokens: Option<u64>,
    pub max_running_requests: Option<u64>,
    pub context_len: Option<u64>,
    /// `available_gpu_mem`, bytes.
    pub available_gpu_mem_bytes: Option<u64>,
    /// vLLM's `Maximum concurrency for N tokens per request: X`: the cache's tokens ÷ N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<f64>,
}

/// One parsed memory line.
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryLine {
    InitDistributed(u64),
    LoadBegin(u64),
    LoadEnd {
        available: u64,
        usage: u64,
    },
    KvDtype(String),
    KvAllocated {
        tokens: u64,
        sizes: Vec<(String, u64)>,
    },
    PoolEnd(u64),
    CudaGraphEnd {
        usage: Option<u64>,
        available: Option<u64>,
    },
    Summary(PoolSummary),
    /// vLLM's CUDA-graph estimate (`Estimated CUDA graph memory`, `CUDA graph pool memory`).
    VllmGraphEstimate {
        estimated: u64,
    },
}

impl RankMemory {
    /// Records one line of this rank.
    pub fn apply(&mut self, line: MemoryLine) {
        match line {
            MemoryLine::InitDistributed(b) => self.init_distributed_bytes = Some(b),
            MemoryLine::LoadBegin(b) => self.available_before_load_bytes = Some(b),
            MemoryLine::LoadEnd { available, usage } => {
                self.available_after_load_bytes = Some(available);
                self.weight_bytes = Some(usage);
            }
            MemoryLine::KvDtype(d) => self.kv_cache_dtype = Some(d),
            MemoryLine::KvAllocated { tokens, sizes } => {
                self.kv_tokens = Some(tokens);
                self.kv_sizes = sizes;
            }
            MemoryLine::PoolEnd(b) => self.available_after_pool_bytes = Some(b),
            MemoryLine::CudaGraphEnd { usage, available } => {
                self.cuda_graph_bytes = usage.or(self.cuda_graph_bytes);
                self.available_after_graphs_bytes = available.or(self.available_after_graphs_bytes);
            }
            MemoryLine::Summary(_) => {}
            MemoryLine::VllmGraphEstimate { estimated } => {
                self.cuda_graph_estimated_bytes = Some(estimated)
            }
        }
    }
}
