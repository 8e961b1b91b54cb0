//! KV slots at decode time: allocation per step and retraction when the pool is full
//! (the engine's policy: [`crate::engine::SchedulerPolicy`]).

use super::Engine;
use crate::serving::kv_policy::{NewTokenRatio, RetractCandidate};

impl Engine<'_, '_> {
    /// `update_running_batch`: a decode step needs a free slot per request; when the pool is
    /// short, retract requests of this micro-batch (their KV freed, back to the waiting queue)
    /// and raise `new_token_ratio`, else decay it by one step.
    pub(super) fn make_decode_room(&mut self, m: usize) {
        let free = self.cfg.kv_tokens.saturating_sub(self.kv_used);
        if free >= self.mbs[m].running.len() as u64 {
            self.new_token_ratio.decay(1);
            return;
        }
        let mut cands: Vec<RetractCandidate> = self.mbs[m]
            .running
            .iter()
            .map(|&r| {
                let q = &self.reqs[r as usize];
                RetractCandidate {
                    id: r,
                    generated: q.generated,
                    input: q.input,
                    kv_tokens: q.kv_alloc as u64,
                }
            })
            .collect();
        let n = self.policy.plan_retraction(&mut cands, free);
        let keep = cands.len() - n;
        let prefix = self.cfg.cached_prefix_tokens;
        let first = self.policy.retracted_first();
        // to the front in their running order, or appended
        for c in cands[keep..].iter().rev().filter(|_| first) {
            self.waiting.push_front(c.id);
        }
        for c in &cands[keep..] {
            let q = &mut self.reqs[c.id as usize];
            self.kv_used -= q.kv_alloc as u64;
            q.kv_alloc = 0;
            // Re-prefilled with its output so far; the client keeps what it already received.
            q.to_compute = q.input.saturating_sub(prefix).max(1) + q.generated;
            q.prefilled = 0;
            q.scheduled = 0;
            if !first {
                self.waiting.push_back(c.id);
            }
        }
        self.mbs[m].held -= n as u32;
        self.running_total -= n as u32;
        self.trace.breakdown.retracted_requests += n as u64;
        self.events += 1;
        let survivors = &cands[..keep];
        let decoded = survivors.iter().map(|c| c.generated as u64).sum();
        let max_new = survivors
            .iter()
            .map(|c| self.reqs[c.id as usize].output as u64)
            .sum();
        self.new_token_ratio = if keep == 0 {
            NewTokenRatio::default()
        } else {
            NewTokenRatio::after_retraction(decoded, max_new, keep as u64)
        };
        self.mbs[m].running = survivors.iter().map(|c| c.id).collect();
    }

    /// Allocates `steps` decode slots to every running request of micro-batch `m`.
    pub(super) fn allocate_decode(&mut self, m: usize, steps: u32) {
        for &r in &self.mbs[m].running {
            self.reqs[r as usize].kv_alloc += steps;
        }
        self.kv_used += self.mbs[m].running.len() as u64 * steps as u64;
        self.trace.peak_kv_tokens = self.trace.peak_kv_tokens.max(self.kv_used);
    }
}
