//! What one iteration's batch holds, summed once (decode tokens and the keys they attend,
//! prefill tokens, chunks, pairs and cached keys): the one input every per-layer cost reads.

use super::IterationBatch;

/// What an iteration holds, summed once from the batch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchStats {
    /// Decode tokens (one per running request).
    pub decode: f64,
    /// Σ keys each decode token attends (DSA-capped).
    pub decode_keys: f64,
    /// Σ context of decode tokens (what the DSA indexer scores).
    pub decode_context: f64,
    /// New prefill tokens.
    pub prefill: f64,
    /// Prefill chunks (each samples / computes logits for its last token).
    pub chunks: f64,
    /// Largest chunk's new tokens.
    pub largest_chunk: f64,
    /// Σ over prefill queries of keys attended (causal, DSA-capped).
    pub prefill_pairs: f64,
    /// Σ over prefill queries of keys the DSA indexer scores (causal, uncapped).
    pub prefill_index_pairs: f64,
    /// Cached keys prefill chunks read from the KV cache.
    pub prefill_cached: f64,
    /// The longest sequence a prefill chunk ends at (cached + new tokens): SGLang's DSA
    /// backend runs a whole prefill batch as dense attention when it fits the index's top-k
    /// ([`super::attn_core::SparsePrefill`]).
    pub prefill_max_kv: f64,
    /// Decode query tokens per request (a speculative verify pass scores several draft tokens
    /// per request and reads each request's cache once for all of them); 0 or 1 = plain decode.
    pub queries_per_request: f64,
    /// Decode rows each request's query tokens arrive as that read the same cache (a verify pass
    /// whose draft tokens are rows of their own, [`crate::options::ServerOptions::
    /// verify_rows_per_draft_token`]): 0 or 1 = one row a request.
    pub rows_per_request: f64,
}

/// Σ_{pos=a..=b} min(pos, cap).
fn capped_sum(a: u64, b: u64, cap: Option<u64>) -> f64 {
    if b < a {
        return 0.0;
    }
    let tri = |lo: u64, hi: u64| (lo + hi) as f64 * (hi - lo + 1) as f64 / 2.0;
    match cap {
        None => tri(a, b),
        Some(c) if b <= c => tri(a, b),
        Some(c) if a > c => c as f64 * (b - a + 1) as f64,
        Some(c) => tri(a, c) + c as f64 * (b - c) as f64,
    }
}

impl BatchStats {
    /// Sums `batch` with DSA cap `cap` (keys a query attends at most).
    pub fn of(batch: &IterationBatch, cap: Option<u64>) -> Self {
        let mut s = BatchStats::default();
        for &c in &batch.decode_context_tokens {
            let c = c as u64;
            s.decode += 1.0;
            s.decode_context += c as f64;
            s.decode_keys += cap.map_or(c, |k| c.min(k)) as f64;
        }
        for ch in &batch.prefill {
            if ch.new_tokens == 0 {
                continue;
            }
            let (k, n) = (ch.cached_tokens as u64, ch.new_tokens as u64);
            s.prefill += n as f64;
            s.chunks += 1.0;
            s.largest_chunk = s.largest_chunk.max(n as f64);
            s.prefill_pairs += capped_sum(k + 1, k + n, cap);
            s.prefill_index_pairs += capped_sum(k + 1, k + n, None);
            s.prefill_cached += k as f64;
            s.prefill_max_kv = s.prefill_max_kv.max((k + n) as f64);
        }
        s
    }

    /// All tokens of the iteration.
    pub fn tokens(&self) -> f64 {
        self.decode + self.prefill
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_sums_match_brute_force() {
        for (a, b, cap) in [
            (1, 10, None),
            (1, 10, Some(4)),
            (5, 9, Some(3)),
            (2, 2, Some(9)),
        ] {
            let brute: u64 = (a..=b).map(|p: u64| cap.map_or(p, |c| p.min(c))).sum();
            assert_eq!(capped_sum(a, b, cap), brute as f64, "{a} {b} {cap:?}");
        }
    }
}
