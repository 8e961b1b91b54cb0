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

/// A multiply-rotate hasher (FxHash's scheme) for the memo's small integer keys: the memo is
/// looked up every iteration and SipHash's DoS resistance buys nothing here.
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
        // The multiply leaves the low bits (hashbrown's bucket index) depending only on the low
        // bits of the key, and bucketed contexts end in zeros: without this rotation every context
        // of one batch size probes the same bucket (rustc-hash's FxHasher rotates likewise).
        self.0.rotate_left(26)
    }
}

type Memo = HashMap<(u32, u32, u32), CompactCost, BuildHasherDefault<KeyHasher>>;

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
        let mean = bucket(context_sum / b.max(1) as u64).max(1);
        let key = (0, b, mean);
        if let Some(c) = self.memo.get(&key) {
            return *c;
        }
        self.batch.prefill.clear();
        self.batch.decode_context_tokens.clear();
        self.batch
            .decode_context_tokens
            .extend(std::iter::repeat_n(mean, b as usize));
        self.miss(key)
    }

    /// The cost of `n` prefill chunks computing `new_sum` tokens over `cached_sum` cached ones.
    pub fn prefill(&mut self, n: u32, new_sum: u64, cached_sum: u64) -> CompactCost {
        let n = n.max(1);
        let new_total = bucket(new_sum).max(n);
        let cached_total = bucket(cached_sum);
        let key = (n, new_total, cached_total);
        if let Some(c) = self.memo.get(&key) {
            return *c;
        }
        self.batch.decode_context_tokens.clear();
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

    fn miss(&mut self, key: (u32, u32, u32)) -> CompactCost {
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
    fn buckets_are_within_one_in_64() {
        for x in [1u64, 127, 128, 129, 1000, 4097, 123_456, 10_000_000] {
            let b = bucket(x) as f64;
            assert!((b - x as f64).abs() / x as f64 <= 1.0 / 64.0, "{x} -> {b}");
        }
        assert_eq!(bucket(100), 100);
    }
}
