//! SGLang's scheduler policy for the serving replay (`scheduler.py`, `schedule_policy.py`):
//! a step is a prefill batch whenever anything can be admitted (`get_new_batch_prefill` before
//! `update_running_batch`), its prompt tokens bounded by `min(--max-prefill-tokens,
//! --chunked-prefill-size)`; under `--enable-mixed-chunk` the running requests' decode tokens
//! join that batch and come out of the budget first (`PrefillAdder`'s
//! `mixed_with_decode_tokens`). Admission reserves a request's prompt plus its whole clipped
//! output, a running request only `new_token_ratio` of what it has left ([`super::kv_policy`]).

use super::kv_policy::{self, NewTokenRatio};
use crate::engine::SchedulerPolicy;
use crate::engine::scheduler::RetractCandidate;

/// SGLang's prefill-first scheduler, with or without mixed chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefillFirst {
    /// `--enable-mixed-chunk`.
    pub mixed_chunk: bool,
}

/// Without `--enable-mixed-chunk` (SGLang's default).
pub static PREFILL_FIRST: PrefillFirst = PrefillFirst { mixed_chunk: false };
/// With `--enable-mixed-chunk`.
pub static PREFILL_FIRST_MIXED: PrefillFirst = PrefillFirst { mixed_chunk: true };

/// The policy for `mixed_chunk`.
pub fn policy(mixed_chunk: bool) -> &'static PrefillFirst {
    if mixed_chunk {
        &PREFILL_FIRST_MIXED
    } else {
        &PREFILL_FIRST
    }
}

impl SchedulerPolicy for PrefillFirst {
    fn prefill_budget(&self, budget_tokens: u32, decoding: u32) -> (u32, bool) {
        let mixed = self.mixed_chunk && decoding > 0;
        let budget = if mixed {
            budget_tokens.saturating_sub(decoding)
        } else {
            budget_tokens
        };
        (budget, mixed)
    }

    fn reserve_for_running(&self, new_token_ratio: f64, remaining: u32) -> f64 {
        NewTokenRatio(new_token_ratio).reserve_for(remaining)
    }

    fn admission_tokens(&self, chunk_tokens: u32, last_chunk: bool, output_left: u32) -> f64 {
        kv_policy::admission_tokens(chunk_tokens, last_chunk, output_left)
    }

    fn plan_retraction(&self, cands: &mut [RetractCandidate], free_tokens: u64) -> usize {
        kv_policy::plan_retraction(cands, free_tokens)
    }

    fn retracted_first(&self) -> bool {
        // `retract_decode` appends them to the waiting queue
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_chunks_take_the_decode_tokens_out_of_the_budget_first() {
        assert_eq!(policy(false).prefill_budget(8192, 10), (8192, false));
        assert_eq!(policy(true).prefill_budget(8192, 10), (8182, true));
        assert_eq!(policy(true).prefill_budget(8192, 0), (8192, false));
        assert_eq!(policy(true).prefill_budget(4, 10), (0, true));
    }

    #[test]
    fn admission_reserves_the_clipped_output_on_the_last_chunk_only() {
        let p = policy(false);
        assert_eq!(p.admission_tokens(1000, false, 500), 1000.0);
        assert_eq!(p.admission_tokens(1000, true, 500), 1500.0);
        assert_eq!(
            p.admission_tokens(1000, true, 100_000),
            1000.0 + f64::from(kv_policy::CLIP_MAX_NEW_TOKENS)
        );
        assert!((p.reserve_for_running(0.5, 100) - 50.0).abs() < 1e-12);
    }
}
