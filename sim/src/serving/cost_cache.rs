//! Memoised iteration costs: the cost model call is the simulation's hot path, and consecutive
//! decode iterations differ only by one token of context, so batches are costed by a representative
//! of their bucket and the answer is reused.
//!
//! A decode batch of `b` requests is costed as `b` requests at the batch's mean context, rounded
//! to 7 significant bits (≤ 1/64 relative); a prefill batch of `n` chunks as `n` equal chunks of the
//! rounded totals of new and cached tokens. KV reads are linear in context and DSA caps attended
//! tokens uniformly, so the mean is what the cost depends on to first order.

use crate::cost::{IterationBatch, IterationModel, PrefillChunk, TimeBreakdown};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher (FxHash's scheme) with a finalizer, for the memo's small integer keys
/// and the inter-token-latency table's f64 bit patterns: both are looked up every iteration and
/// SipHash's DoS resistance buys nothing here. The finalizer matters: the table indexes by the
/// hash's low bits, and a bare product's low bits depend only on the key's low bits — time gaps
/// late in a long run (differences of large, nearby f64s) and bucketed contexts end in runs of
/// zero bits, which piled them into a few buckets with long probe chains (10× the prompts cost
/// 29× the time).
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        // murmur3's fmix64: spreads every input bit over the low bits the table indexes by
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// (prefill chunks, new tokens, cached tokens, decode rows, mean decode context), bucketed.
type Key = (u32, u32, u32, u32, u32);
type Memo = HashMap<Key, CompactCost, BuildHasherDefault<KeyHasher>>;

/// Most pipeline stages a cached cost keeps separately (8-GPU boxes: `--pp-size` ≤ 8); deeper
/// pipelines fold their last stages into the eighth (their maximum is what a turn waits for).
pub const MAX_STAGES: usize = 8;

/// An [`crate::cost::IterationCost`] without heap storage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CompactCost {
    pub stage_s: [f64; MAX_STAGES],
    pub stages: usize,
    pub pp_hop_s: f64,
    pub cpu_s: f64,
    /// Some stage waited for its CPU (eager launches or the scheduler) rather than its GPU.
    pub cpu_bound: bool,
    pub latency_s: f64,
    pub breakdown: TimeBreakdown,
}

/// Bucketed cost memo over one [`IterationModel`].
pub struct CostCache<'m> {
    model: &'m dyn IterationModel,
    memo: Memo,
    /// Reused so that a miss allocates nothing once warm.
    batch: IterationBatch,
    /// Cost-model calls made (misses).
    pub calls: u64,
}

/// Rounds `x` to its 7 most significant bits.
pub fn bucket(x: u64) -> u32 {
    if x < 128 {
        return x as u32;
    }
    let shift = 63 - x.leading_zeros() - 6;
    let rounded = ((x + (1 << (shift - 1))) >> shift) << shift;
    rounded.min(u32::MAX as u64) as u32
}

impl<'m> CostCache<'m> {
    pub fn new(model: &'m dyn IterationModel) -> Self {
        CostCache {
            model,
            memo: Memo::default(),
            batch: IterationBatch::default(),
            calls: 0,
        }
    }

    /// The model being costed.
    pub fn model(&self) -> &'m dyn IterationModel {
        self.model
    }

    /// The cost of `b` decode requests whose contexts sum to `context_sum` tokens.
    pub fn decode(&mut self, b: u32, context_sum: u64) -> CompactCost {
        self.mixed(0, 0, 0, b, context_sum)
    }

    /// The cost of one batch of `n` prefill chunks (`new_sum` tokens computed over `cached_sum`
    /// cached ones; none when `n` is 0) beside `b` decode requests whose contexts sum to
    /// `context_sum` (SGLang's mixed chunk, vLLM's V1 batches).
    pub fn mixed(
        &mut self,
        n: u32,
        new_sum: u64,
        cached_sum: u64,
        b: u32,
        context_sum: u64,
    ) -> CompactCost {
        let mean = if b == 0 {
            0
        } else {
            bucket(context_sum / b as u64).max(1)
        };
        let (new_total, cached_total) = if n == 0 {
            (0, 0)
        } else {
            (bucket(new_sum).max(n), bucket(cached_sum))
        };
        let key = (n, new_total, cached_total, b, mean);
        if let Some(c) = self.memo.get(&key) {
            return *c;
        }
        self.batch.decode_context_tokens.clear();
        self.batch
            .decode_context_tokens
            .extend(std::iter::repeat_n(mean, b as usize));
        self.batch.prefill.clear();
        for i in 0..n {
            // Spread the totals over n chunks exactly (remainders on the first chunks).
            let share = |t: u32| t / n + u32::from(i < t % n);
            self.batch.prefill.push(PrefillChunk {
                new_tokens: share(new_total),
                cached_tokens: share(cached_total),
            });
        }
        self.miss(key)
    }

    /// The cost of `n` prefill chunks computing `new_sum` tokens over `cached_sum` cached ones.
    pub fn prefill(&mut self, n: u32, new_sum: u64, cached_sum: u64) -> CompactCost {
        self.mixed(n.max(1), new_sum, cached_sum, 0, 0)
    }

    fn miss(&mut self, key: Key) -> CompactCost {
        self.calls += 1;
        let c = self.model.iteration(&self.batch);
        let stages = c.stage_s.len().clamp(1, MAX_STAGES);
        let mut stage_s = [0.0; MAX_STAGES];
        if c.stage_s.is_empty() {
            stage_s[0] = c.latency_s;
        } else {
            stage_s[..stages].copy_from_slice(&c.stage_s[..stages]);
            let rest = c.stage_s[stages - 1..].iter().copied().fold(0.0, f64::max);
            stage_s[stages - 1] = rest;
        }
        let compact = CompactCost {
            stage_s,
            stages,
            pp_hop_s: c.pp_hop_s,
            cpu_s: c.cpu_s,
            cpu_bound: c.cpu_bound(),
            latency_s: c.latency_s,
            breakdown: c.breakdown,
        };
        self.memo.insert(key, compact);
        compact
    }
}

#[cfg(test)]
mod tests {
    use super::bucket;

    #[test]
    fn keys_that_differ_only_in_high_bits_spread_over_low_bits() {
        use super::KeyHasher;
        use std::hash::Hasher;
        // 4096 gaps between times late in a long run (≈ 10^5 s): exact f64 differences whose
        // low 12 bits are all zero
        let gaps: Vec<u64> = (1..=4096u64)
            .map(|k| (1e5 + k as f64 * 1e-3 - 1e5f64).to_bits())
            .collect();
        assert!(gaps.iter().all(|g| g.trailing_zeros() >= 12));
        let low: std::collections::HashSet<u64> = gaps
            .iter()
            .map(|&g| {
                let mut h = KeyHasher::default();
                h.write_u64(g);
                h.finish() & 0xfff
            })
            .collect();
        // a random function of 4096 keys into 4096 slots fills ≈ 63% of them
        assert!(low.len() > 2000, "{} distinct low-12-bit hashes", low.len());
    }

    #[test]
    fn buckets_are_within_one_in_64() {
        for x in [1u64, 127, 128, 129, 1000, 4097, 123_456, 10_000_000] {
            let b = bucket(x) as f64;
            assert!((b - x as f64).abs() / x as f64 <= 1.0 / 64.0, "{x} -> {b}");
        }
        assert_eq!(bucket(100), 100);
    }
}
