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

use crate::engine::log::SkipReason;
use crate::engine::log::memory::{MemoryLine, PoolSummary};

const GIB: f64 = (1u64 << 30) as f64;

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
