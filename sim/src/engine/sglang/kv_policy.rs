//! SGLang's optimistic KV admission and decode retraction, as `schedule_policy.py`
//! (`PrefillAdder`) and `scheduler.py` (`update_running_batch`) run them.
//!
//! A request being admitted reserves its prompt plus all of its `max_new_tokens` (clipped to
//! [`CLIP_MAX_NEW_TOKENS`]); a request already running reserves only `new_token_ratio` × its
//! remaining tokens. The ratio starts at 0.7, decays by (0.7 − 0.098) / 600 per decode step to
//! 0.098, and is reset when the server idles. When a decode step finds fewer free KV slots than
//! it has requests, requests are retracted (KV freed, sent back to the waiting queue to be
//! prefilled again with their output so far) and the ratio jumps to what the survivors need.
//! Defaults: `SGLANG_INIT_NEW_TOKEN_RATIO` 0.7, min-ratio factor 0.14, 600 decay steps,
//! `RETRACT_DECODE_STEPS` 20 (SGLang's `global_config` / `environ`).

/// `SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION`: admission never reserves more output than this.
pub const CLIP_MAX_NEW_TOKENS: u32 = 4096;

/// Decode steps of headroom a retraction frees for the requests that stay.
pub const RETRACT_DECODE_STEPS: u64 = 20;

/// Initial (and after-idle) `new_token_ratio`.
pub const INIT_NEW_TOKEN_RATIO: f64 = 0.7;

/// Floor of `new_token_ratio`: the initial ratio × 0.14.
pub const MIN_NEW_TOKEN_RATIO: f64 = INIT_NEW_TOKEN_RATIO * 0.14;

/// Decrease of `new_token_ratio` per decode step without retraction.
pub const NEW_TOKEN_RATIO_DECAY: f64 = (INIT_NEW_TOKEN_RATIO - MIN_NEW_TOKEN_RATIO) / 600.0;

/// The scheduler's `new_token_ratio`: the share of a running request's remaining output that
/// admission keeps free for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewTokenRatio(pub f64);

impl Default for NewTokenRatio {
    fn default() -> Self {
        NewTokenRatio(INIT_NEW_TOKEN_RATIO)
    }
}

impl NewTokenRatio {
    /// `steps` decode steps ran without retraction.
    pub fn decay(&mut self, steps: u64) {
        self.0 = (self.0 - NEW_TOKEN_RATIO_DECAY * steps as f64).max(MIN_NEW_TOKEN_RATIO);
    }

    /// KV tokens admission keeps free for a running request with `remaining` tokens to go.
    pub fn reserve_for(&self, remaining: u32) -> f64 {
        remaining.min(CLIP_MAX_NEW_TOKENS) as f64 * self.0
    }

    /// The ratio after a retraction left requests that have decoded `decoded` tokens of
    /// `max_new` in total, `survivors` of them: `retract_decode`'s estimate
    /// `(decoded + 20 × survivors) / (max_new + 1)`, at most 1.
    pub fn after_retraction(decoded: u64, max_new: u64, survivors: u64) -> NewTokenRatio {
        let need = decoded + RETRACT_DECODE_STEPS * survivors;
        NewTokenRatio((need as f64 / (max_new + 1) as f64).min(1.0))
    }
}

/// KV tokens a request being admitted reserves: the tokens it prefills now, plus its whole
/// (clipped) output when this is its last chunk.
pub fn admission_tokens(chunk_tokens: u32, last_chunk: bool, output_left: u32) -> f64 {
    let out = if last_chunk {
        output_left.min(CLIP_MAX_NEW_TOKENS)
    } else {
        0
    };
    (chunk_tokens + out) as f64
}

pub use crate::engine::scheduler::RetractCandidate;

/// `retract_decode`'s choice (`schedule_batch.py`, sort key `(len(output_ids),
/// -len(origin_input_ids))` descending, popped from the end): requests ordered by most
/// generated, then shortest prompt, are
/// retracted from the back (fewest generated, longest prompt first) until the free slots cover
/// [`RETRACT_DECODE_STEPS`] steps of the rest, at least one; the last one stays if it has room
/// for one step. Returns how many to retract; `cands` is left in that order (retracted last).
pub fn plan_retraction(cands: &mut [RetractCandidate], free_tokens: u64) -> usize {
    cands.sort_unstable_by(|a, b| {
        b.generated
            .cmp(&a.generated)
            .then(a.input.cmp(&b.input))
            .then(a.id.cmp(&b.id))
    });
    let (mut keep, mut free) = (cands.len(), free_tokens);
    while keep > 0
        && (keep == cands.len() || free < RETRACT_DECODE_STEPS * keep as u64)
        && !(keep == 1 && free >= 1)
    {
        keep -= 1;
        free += cands[keep].kv_tokens;
    }
    cands.len() - keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_decays_to_its_floor_in_600_steps() {
        let mut r = NewTokenRatio::default();
        r.decay(300);
        assert!((r.0 - (0.7 + 0.098) / 2.0).abs() < 1e-12);
        r.decay(10_000);
        assert_eq!(r.0, MIN_NEW_TOKEN_RATIO);
        assert!((MIN_NEW_TOKEN_RATIO - 0.098).abs() < 1e-12);
    }

    #[test]
    fn retraction_frees_room_for_twenty_steps_of_the_rest() {
        let c = |id, generated, input| RetractCandidate {
            id,
            generated,
            input,
            kv_tokens: (input + generated) as u64,
        };
        let mut cands = vec![c(0, 500, 100), c(1, 10, 100), c(2, 10, 900), c(3, 300, 50)];
        // 0 free: retract 2 (10 generated, longer prompt: 910 tokens back), then 3 × 20 = 60
        // needed and 910 free: stop.
        let n = plan_retraction(&mut cands, 0);
        assert_eq!(n, 1);
        assert_eq!(cands[3].id, 2);
        // The last request stays while it has room for a step.
        let mut one = vec![c(5, 1, 1)];
        assert_eq!(plan_retraction(&mut one, 5), 0);
        assert_eq!(plan_retraction(&mut one, 0), 1);
        let r = NewTokenRatio::after_retraction(810, 3000, 3);
        assert!((r.0 - 870.0 / 3001.0).abs() < 1e-12);
    }
}
