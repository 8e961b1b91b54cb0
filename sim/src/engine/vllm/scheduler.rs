//! vLLM V1's scheduler policy for the serving replay (`v1/core/sched/scheduler.py`,
//! `Scheduler.schedule`): one token budget per step (`--max-num-batched-tokens`), the running
//! requests first (a decode takes one token of it), then waiting requests in arrival order
//! with what is left, the last one chunked (`--max-num-seqs` caps the running). The KV cache
//! manager allocates a step's new tokens only (`KVCacheManager.allocate_slots`): admission
//! keeps nothing free for what running requests will still generate; when a running request
//! finds no free slot, the latest-admitted running request is preempted (`self.running.pop()`,
//! its blocks freed, recomputed later from the front of the waiting queue) until it fits.

use crate::engine::SchedulerPolicy;
use crate::engine::scheduler::RetractCandidate;

/// vLLM V1's decode-first scheduler with chunked prefills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeFirst;

/// The one instance.
pub static DECODE_FIRST: DecodeFirst = DecodeFirst;

impl SchedulerPolicy for DecodeFirst {
    fn prefill_budget(&self, budget_tokens: u32, decoding: u32) -> (u32, bool) {
        // decodes always run in the step, out of the same budget (chunked prefill is always
        // on in V1)
        (budget_tokens.saturating_sub(decoding), decoding > 0)
    }

    fn reserve_for_running(&self, _new_token_ratio: f64, _remaining: u32) -> f64 {
        0.0
    }

    fn admission_tokens(&self, chunk_tokens: u32, _last_chunk: bool, _output_left: u32) -> f64 {
        f64::from(chunk_tokens)
    }

    fn plan_retraction(&self, cands: &mut [RetractCandidate], free_tokens: u64) -> usize {
        // in running order: the latest admitted (the back) goes first, one at a time, until
        // the rest have a slot each
        let (mut keep, mut free) = (cands.len(), free_tokens);
        while keep > 0 && free < keep as u64 {
            keep -= 1;
            free += cands[keep].kv_tokens;
        }
        cands.len() - keep
    }

    fn retracted_first(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_take_the_budget_first_and_admission_reserves_no_output() {
        assert_eq!(DECODE_FIRST.prefill_budget(8192, 10), (8182, true));
        assert_eq!(DECODE_FIRST.prefill_budget(8192, 0), (8192, false));
        assert_eq!(DECODE_FIRST.admission_tokens(1000, true, 5000), 1000.0);
        assert_eq!(DECODE_FIRST.reserve_for_running(0.7, 5000), 0.0);
    }

    #[test]
    fn preemption_takes_the_latest_admitted_until_the_rest_fit() {
        let c = |id, kv| RetractCandidate {
            id,
            generated: 0,
            input: 0,
            kv_tokens: kv,
        };
        let mut cands = vec![c(0, 100), c(1, 100), c(2, 1)];
        // 1 free for 3: preempting 2 frees 1 (2 for 2), enough
        assert_eq!(DECODE_FIRST.plan_retraction(&mut cands, 1), 1);
        assert_eq!(cands[2].id, 2, "the latest admitted goes");
        assert_eq!(DECODE_FIRST.plan_retraction(&mut cands, 3), 0);
    }
}
