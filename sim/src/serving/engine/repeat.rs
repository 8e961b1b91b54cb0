//! Taking many identical decode steps at once: between two events (an admission, a finish, a
//! send, a retraction) decode steps differ only by one token of context, so the engine takes
//! them together instead of turn by turn (the simulation's speed depends on it).

use super::{Engine, MIN_REPEAT_TOKENS, add_parts_scaled};

impl Engine<'_, '_> {
    /// How many identical decode steps micro-batch `m` (just scheduled, lasting `dur`) runs before
    /// something changes: a request finishing, the client sending one, or the mean context
    /// growing past 1/128 of itself (the cost bucket's resolution is 1/64) or 16 tokens.
    pub(super) fn identical_decode_steps(&self, m: usize, dur: f64) -> u32 {
        let mb = &self.mbs[m];
        if mb.running.is_empty() || dur <= 0.0 || self.kv_may_admit() {
            return 1;
        }
        let (mut min_left, mut ctx) = (u32::MAX, 0u64);
        for &r in &mb.running {
            let q = &self.reqs[r as usize];
            min_left = min_left.min(q.output - q.generated);
            ctx += (q.input + q.generated) as u64;
        }
        let mean_ctx = ctx / mb.running.len() as u64;
        let mut k = min_left.min((mean_ctx / 128).max(MIN_REPEAT_TOKENS) as u32);
        // Each further step allocates a slot per request; stop before the pool runs out.
        let free = self.cfg.kv_tokens.saturating_sub(self.kv_used);
        k = k.min((1 + free / mb.running.len() as u64).min(u32::MAX as u64) as u32);
        if self.next_send < self.reqs.len()
            && let Some(&free) = self.slots.front()
        {
            let next = self.reqs[self.next_send].arrival_s.max(free);
            k = k.min((((next - self.now) / dur).floor() as u32).max(1));
        }
        // a request in the inbox is read at the skipper's next read: stop there
        if !self.inbox.is_empty() {
            k = k.min(self.skipper.steps_to_read());
        }
        k.max(1)
    }

    /// At a cycle boundary under PP, after a cycle of `cycle_s` with only decodes and no
    /// admission, join or finish: the next cycles are the same, so take as many as possible at
    /// once (stopping two tokens before any request's last, before the client may send, and
    /// within 1/128 of the mean context).
    pub(super) fn repeat_decode_cycles(&mut self, cycle_s: f64) {
        if self.chunked.is_some() || self.kv_may_admit() {
            return;
        }
        let (mut min_left, mut ctx, mut n) = (u32::MAX, 0u64, 0u64);
        for mb in &self.mbs {
            for &r in &mb.running {
                let q = &self.reqs[r as usize];
                min_left = min_left.min(q.output - q.generated);
                ctx += (q.input + q.generated) as u64;
                n += 1;
            }
        }
        if n == 0 {
            return;
        }
        let mut k = min_left
            .saturating_sub(2)
            .min((ctx / n / 128).max(MIN_REPEAT_TOKENS) as u32);
        let free = self.cfg.kv_tokens.saturating_sub(self.kv_used);
        k = k.min((free / n).min(u32::MAX as u64) as u32);
        if self.next_send < self.reqs.len()
            && let Some(&free) = self.slots.front()
        {
            let next = self.reqs[self.next_send].arrival_s.max(free);
            k = k.min(((next - self.now) / cycle_s).floor().max(0.0) as u32);
        }
        if k == 0 {
            return;
        }
        let span = cycle_s * k as f64;
        self.now += span;
        self.trace.breakdown.decode_s += span;
        for mb in &self.mbs {
            if mb.running.is_empty() {
                continue;
            }
            self.trace.breakdown.decode_batches += k as u64;
            self.new_token_ratio.decay(k as u64);
            add_parts_scaled(&mut self.trace.breakdown, &mb.cost, k as f64);
            for &r in &mb.running {
                let q = &mut self.reqs[r as usize];
                q.generated += k;
                q.kv_alloc += k;
                q.last_s += span;
            }
            self.trace
                .itl_s
                .push(cycle_s, k as u64 * mb.running.len() as u64);
        }
        self.kv_used += n * k as u64;
        self.trace.peak_kv_tokens = self.trace.peak_kv_tokens.max(self.kv_used);
    }

    /// Whether a waiting request is held back by the KV check alone: `new_token_ratio` decays
    /// every step, so it may be admitted after any step and steps are not identical.
    fn kv_may_admit(&self) -> bool {
        !self.waiting.is_empty()
            && self.running_total < self.cfg.max_running_requests
            && self.mbs.iter().any(|mb| mb.held < self.cfg.micro_batch_cap)
    }
}
