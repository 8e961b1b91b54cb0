//! One seam for the engines' schedulers: the serving replay (`crate::serving`) runs one event
//! loop for every engine and asks the engine's [`SchedulerPolicy`] the decisions where the
//! schedulers differ — how one step's token budget is shared between the running requests'
//! decodes and prefill chunks, and how much KV admitting a request takes beside what the
//! running ones keep free. SGLang's (prefill-first batches under `--chunked-prefill-size`,
//! optionally `--enable-mixed-chunk`, with `new_token_ratio` reservations) is
//! `engine/sglang/scheduler.rs`; vLLM V1's (one token budget a step, decodes first, no output
//! reserved at admission, preemption of the latest admitted) is `engine/vllm/scheduler.rs`.

/// An engine's scheduler decisions inside one scheduling step of the replay.
pub trait SchedulerPolicy: Sync {
    /// The prompt tokens a step may prefill out of `budget_tokens` in a micro-batch where
    /// `decoding` requests are running, and whether those requests decode in the same batch as
    /// the prefill chunks (else they wait for a decode step).
    fn prefill_budget(&self, budget_tokens: u32, decoding: u32) -> (u32, bool);

    /// KV tokens admission keeps free for a running request with `remaining` tokens still to
    /// generate while requests wait, under the scheduler's `new_token_ratio` (SGLang's share
    /// of a running request's remaining output).
    fn reserve_for_running(&self, new_token_ratio: f64, remaining: u32) -> f64;

    /// KV tokens admitting a prefill chunk of `chunk_tokens` takes from what is free (its
    /// `last_chunk`: the request still has `output_left` tokens to generate).
    fn admission_tokens(&self, chunk_tokens: u32, last_chunk: bool, output_left: u32) -> f64;

    /// How many running requests of `cands` a decode step that finds `free_tokens` KV slots for
    /// `cands.len()` requests sends back to the waiting queue (their KV freed, recomputed
    /// later); `cands` is left with those last.
    fn plan_retraction(&self, cands: &mut [RetractCandidate], free_tokens: u64) -> usize;

    /// Whether retracted requests go back to the front of the waiting queue (else its back).
    fn retracted_first(&self) -> bool;
}

/// One running request as retraction sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetractCandidate {
    pub id: u32,
    pub generated: u32,
    pub input: u32,
    /// KV tokens it holds.
    pub kv_tokens: u64,
}
