//! The memory lines of a server start, per rank, in bytes (SGLang prints GiB and calls them "GB":
//! `get_available_gpu_memory` and the pools divide by `1 << 30`).
//!
//! ```text
//! Init torch distributed ends. mem usage=0.28 GB
//! Load weight begin. avail mem=94.13 GB
//! Load weight end. [elapsed=…, ]type=Glm4MoeForCausalLM, dtype=torch.bfloat16, avail mem=52.22 GB, mem usage=41.90 GB.
//! Using KV cache dtype: torch.bfloat16
//! KV Cache is allocated. #tokens: 864247, K size: 18.96 GB, V size: 18.96 GB      (MHA pools)
//! KV Cache is allocated. #tokens: 314000, KV size: 29.32 GB                        (MLA pools)
//! Memory pool end. avail mem=12.48 GB
//! Capture cuda graph end. Time elapsed: 7.23 s. [mem usage=0.93 GB. ]avail mem=0.53 GB.
//! max_total_num_tokens=864247, chunked_prefill_size=8192, max_prefill_tokens=16384,
//!   max_running_requests=2182, context_len=202752, available_gpu_mem=12.00 GB      (TP0 only)
//! ```

use super::SkipReason;
use super::line::RankTag;
use serde::{Deserialize, Serialize};

const GIB: f64 = (1u64 << 30) as f64;

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

/// `X GB` (GiB) → bytes; an error when the number does not parse.
fn gib(text: &str, field: &str) -> Result<u64, SkipReason> {
    let num = text
        .trim()
        .trim_end_matches('.')
        .trim_end_matches("GB")
        .trim();
    num.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e9)
        .map(|x| (x * GIB).round() as u64)
        .ok_or_else(|| SkipReason::UnparsableNumber(field.to_string()))
}

/// The text after `key` up to the next `,` or `. ` (values end with ` GB` or ` GB.`).
fn after<'a>(message: &'a str, key: &str) -> Option<&'a str> {
    let start = message.find(key)? + key.len();
    let rest = &message[start..];
    let end = rest
        .find(',')
        .or_else(|| rest.find(". "))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn need_gib(message: &str, key: &str) -> Result<u64, SkipReason> {
    match after(message, key) {
        Some(v) => gib(v, key.trim_end_matches('=')),
        None => Err(SkipReason::Truncated),
    }
}

fn summary(message: &str) -> Result<PoolSummary, SkipReason> {
    let mut s = PoolSummary::default();
    let mut seen = 0;
    for item in message.split(',') {
        let Some((k, v)) = item.trim().split_once('=') else {
            continue;
        };
        let int = |v: &str| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| SkipReason::UnparsableNumber(k.to_string()))
        };
        let uint = |v: &str| int(v).map(|x| x.max(0) as u64);
        match k {
            "max_total_num_tokens" => s.max_total_num_tokens = Some(uint(v)?),
            "chunked_prefill_size" => s.chunked_prefill_size = Some(int(v)?),
            "max_prefill_tokens" => s.max_prefill_tokens = Some(uint(v)?),
            "max_running_requests" => s.max_running_requests = Some(uint(v)?),
            "context_len" => s.context_len = Some(uint(v)?),
            "available_gpu_mem" => s.available_gpu_mem_bytes = Some(gib(v, k)?),
            _ => continue,
        }
        seen += 1;
    }
    if s.max_total_num_tokens.is_none() || seen < 2 {
        return Err(SkipReason::Truncated);
    }
    Ok(s)
}

/// Reads a memory line; `None` when `message` is not one.
pub fn parse(message: &str) -> Option<Result<MemoryLine, SkipReason>> {
    let m = message.trim_end();
    Some(if m.starts_with("Init torch distributed ends.") {
        need_gib(m, "mem usage=").map(MemoryLine::InitDistributed)
    } else if m.starts_with("Load weight begin.") {
        need_gib(m, "avail mem=").map(MemoryLine::LoadBegin)
    } else if m.starts_with("Load weight end.") {
        need_gib(m, "avail mem=").and_then(|available| {
            Ok(MemoryLine::LoadEnd {
                available,
                usage: need_gib(m, "mem usage=")?,
            })
        })
    } else if let Some(d) = m.strip_prefix("Using KV cache dtype:") {
        Ok(MemoryLine::KvDtype(d.trim().to_string()))
    } else if let Some(rest) = m.strip_prefix("KV Cache is allocated.") {
        kv_allocated(rest)
    } else if m.starts_with("Memory pool end.") {
        need_gib(m, "avail mem=").map(MemoryLine::PoolEnd)
    } else if m.starts_with("max_total_num_tokens=") {
        summary(m).map(MemoryLine::Summary)
    } else if m.to_ascii_lowercase().contains("cuda graph end") {
        let opt = |key| after(m, key).map(|v| gib(v, key)).transpose();
        opt("mem usage=").and_then(|usage| {
            Ok(MemoryLine::CudaGraphEnd {
                usage,
                available: opt("avail mem=")?,
            })
        })
    } else {
        return None;
    })
}

fn kv_allocated(rest: &str) -> Result<MemoryLine, SkipReason> {
    let mut tokens = None;
    let mut sizes = Vec::new();
    for item in rest.split(',') {
        let Some((k, v)) = item.split_once(':') else {
            continue;
        };
        let k = k.trim();
        if k == "#tokens" {
            tokens = Some(
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| SkipReason::UnparsableNumber("#tokens".into()))?,
            );
        } else if let Some(label) = k.strip_suffix(" size") {
            sizes.push((label.trim().to_string(), gib(v, k)?));
        }
    }
    match (tokens, sizes.is_empty()) {
        (Some(tokens), false) => Ok(MemoryLine::KvAllocated { tokens, sizes }),
        _ => Err(SkipReason::Truncated),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_lines_in_bytes() {
        let gib = |x: f64| (x * GIB).round() as u64;
        assert_eq!(
            parse(
                "Load weight end. type=Glm4MoeForCausalLM, dtype=torch.bfloat16, avail mem=52.22 GB, mem usage=41.90 GB."
            ),
            Some(Ok(MemoryLine::LoadEnd {
                available: gib(52.22),
                usage: gib(41.90)
            }))
        );
        assert_eq!(
            parse("KV Cache is allocated. #tokens: 864247, K size: 18.96 GB, V size: 18.96 GB"),
            Some(Ok(MemoryLine::KvAllocated {
                tokens: 864_247,
                sizes: vec![("K".into(), gib(18.96)), ("V".into(), gib(18.96))]
            }))
        );
        assert_eq!(
            parse("KV Cache is allocated. #tokens: 314000, KV size: 29.32 GB"),
            Some(Ok(MemoryLine::KvAllocated {
                tokens: 314_000,
                sizes: vec![("KV".into(), gib(29.32))]
            }))
        );
        assert_eq!(
            parse(
                "Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB."
            ),
            Some(Ok(MemoryLine::CudaGraphEnd {
                usage: Some(gib(0.93)),
                available: Some(gib(0.53))
            }))
        );
        let Some(Ok(MemoryLine::Summary(s))) = parse(
            "max_total_num_tokens=864247, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2182, context_len=202752, available_gpu_mem=12.00 GB",
        ) else {
            panic!()
        };
        assert_eq!(
            (s.max_running_requests, s.context_len),
            (Some(2182), Some(202_752))
        );
        assert_eq!(
            parse("Load weight begin. avail mem=9x GB"),
            Some(Err(SkipReason::UnparsableNumber("avail mem".into())))
        );
        assert_eq!(
            parse("KV Cache is allocated. #tokens: 86"),
            Some(Err(SkipReason::Truncated))
        );
        assert_eq!(parse("Decode batch, x"), None);
    }
}
