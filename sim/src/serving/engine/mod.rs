//! The discrete-event loop: one engine turn at a time, as SGLang's scheduler runs it (sources
//! and simplifications: see [`crate::serving`]).
//!
//! A turn schedules one micro-batch (`get_next_batch_to_run`): the continuing chunk of the
//! scheduler's single chunked request first, then waiting requests FCFS while the prefill token
//! budget, the micro-batch cap, `--max-running-requests` and the KV admission check
//! ([`super::kv_policy`]) allow; if that forms a prefill batch it runs, otherwise the
//! micro-batch's running requests decode one step (retracting some if the pool is full).
//!
//! Pipeline timing is lockstep: in turn `t` stage `s` runs the batch launched at turn `t - s`, so a
//! turn lasts as long as its slowest stage plus one activation hop, and a micro-batch's next batch
//! can start only after its previous one left the last stage (`micro_batches >= pp`). Without PP
//! this reduces to one batch per turn lasting the cost model's `latency_s`. KV slots are
//! allocated when a batch is scheduled (prefill chunks, one slot per decoding request), as
//! SGLang's `prepare_for_extend` / `prepare_for_decode` do, and freed when a request finishes.

use super::cost_cache::{CompactCost, CostCache};
use super::kv_policy::NewTokenRatio;
use super::output::{MicroBatchSample, RunBreakdown, WeightedSample};
use crate::workload::RequestSpec;
use std::collections::VecDeque;

mod client;
mod kv;
mod recv;
mod repeat;

pub use client::Client;

/// Scheduler limits resolved from the server options and the memory plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    /// `--max-running-requests` (or its derived default).
    pub max_running_requests: u32,
    /// `--pp-max-micro-batch-size` (default `max_running_requests / pp_size`).
    pub micro_batch_cap: u32,
    /// Prompt tokens one prefill batch may compute: min(max_prefill_tokens, chunked_prefill_size).
    pub prefill_budget_tokens: u32,
    /// Micro-batches in rotation: `pp_size + pp_async_batch_depth` (1 without PP).
    pub micro_batches: u32,
    /// Pipeline stages.
    pub pp_size: u32,
    /// KV pool, tokens.
    pub kv_tokens: u64,
    /// Prompt tokens every request finds in the prefix cache.
    pub cached_prefix_tokens: u32,
    /// Prefill chunks run in the same batch as the micro-batch's decodes, the decodes taking
    /// their tokens from the budget first (SGLang's `--enable-mixed-chunk`, vLLM V1 always).
    pub mixed_chunk: bool,
    /// A prompt may be split over steps; without it a waiting prompt larger than the budget
    /// left waits (vLLM's `--no-enable-chunked-prefill`: the scheduler stops admitting there).
    pub chunking: bool,
    /// The engine whose scheduler policy runs ([`crate::engine::ServingEngine::scheduler`]).
    pub engine: crate::engine::Engine,
    /// Decode steps between the scheduler's reads of new requests (SGLang's
    /// `--scheduler-recv-interval`, [`recv`]); 1 = every step.
    pub recv_interval: u32,
}

/// Per-request results the caller summarises.
#[derive(Debug, Default)]
pub struct Trace {
    pub ttft_s: Vec<f64>,
    pub tpot_s: Vec<f64>,
    pub itl_s: WeightedSample,
    pub e2e_s: Vec<f64>,
    pub duration_s: f64,
    pub peak_running: u32,
    pub peak_kv_tokens: u64,
    pub breakdown: RunBreakdown,
    pub samples: Vec<MicroBatchSample>,
}

/// Why a run cannot proceed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EngineError {
    #[error(
        "a request needs {needed} KV tokens but the pool holds {capacity}: shorten the workload, raise {flag}, or use more GPUs"
    )]
    RequestTooLarge {
        needed: u64,
        capacity: u64,
        /// The engine's memory-share flag.
        flag: &'static str,
    },
    #[error(
        "the scheduler cannot admit any request (max-running-requests or micro-batch cap is 0)"
    )]
    Stuck,
}

#[derive(Debug, Clone, Copy, Default)]
struct Req {
    input: u32,
    output: u32,
    /// Prompt tokens to compute (prompt minus cached prefix, at least 1; after a retraction,
    /// plus the output generated so far).
    to_compute: u32,
    /// KV tokens allocated to it (prefill chunks and decode steps launched).
    kv_alloc: u32,
    /// Whether its first token was sent (a retracted request resumes without a new TTFT).
    started: bool,
    arrival_s: f64,
    send_s: f64,
    first_s: f64,
    last_s: f64,
    generated: u32,
    /// Prompt tokens whose prefill has finished (all stages).
    prefilled: u32,
    /// Prompt tokens already launched in prefill chunks (≥ `prefilled` while chunks of a
    /// pipelined prefill are in flight).
    scheduled: u32,
    /// Micro-batch holding the request (the one its latest prefill chunk ran in).
    owner: u32,
}

#[derive(Debug, Default)]
struct MicroBatch {
    running: Vec<u32>,
    /// (request, tokens) of the prefill batch in flight.
    chunks: Vec<(u32, u32)>,
    is_prefill: bool,
    /// A prefill batch that also decodes the micro-batch's running requests one token.
    mixed: bool,
    launched_turn: Option<u64>,
    cost: CompactCost,
    /// Requests assigned to this micro-batch (running or prefilling).
    held: u32,
}

/// Steps taken at once even at short contexts: 16 tokens more of context change a step's KV
/// reads by a negligible amount.
const MIN_REPEAT_TOKENS: u64 = 16;

/// Most micro-batch samples kept; older ones are thinned when exceeded.
const MAX_SAMPLES: usize = 256;

struct Engine<'a, 'm> {
    cfg: EngineConfig,
    /// The engine's scheduler decisions (token budget, admission, reservations).
    policy: &'static dyn crate::engine::SchedulerPolicy,
    cache: &'a mut CostCache<'m>,
    reqs: Vec<Req>,
    next_send: usize,
    /// Times client concurrency slots free up, ascending.
    slots: VecDeque<f64>,
    /// Closed rounds: the round's size, and its requests not yet finished.
    round_size: Option<usize>,
    round_left: usize,
    /// Closed rounds: a round has just started and only its first request has reached the
    /// scheduler. The user's GLM-4.7 server log shows every round's first prefill batch with
    /// `#new-seq: 1, #queue-req: 0` and the rest of the round in the next one (rounds of 2, 16,
    /// 64 and 128; `data/observations/logs/glm47-fp8-tp8-calibration.log`): the requests of a
    /// round pass the tokenizer one by one, and the scheduler launches on the first. Under PP this
    /// is what makes the first micro-batch small and the next take the rest of the round.
    round_first_only: bool,
    waiting: VecDeque<u32>,
    /// Requests the client sent that the scheduler has not read yet (`--scheduler-recv-interval`).
    inbox: VecDeque<u32>,
    skipper: recv::RecvSkipper,
    /// The weight of the batch the last iteration ran, for the skipper.
    last_weight: u32,
    /// SGLang's `Scheduler.chunked_req`: one per scheduler, not per micro-batch, so under PP
    /// its next chunk runs in the very next turn's micro-batch.
    chunked: Option<u32>,
    mbs: Vec<MicroBatch>,
    running_total: u32,
    /// KV tokens allocated (SGLang allocates at schedule time, not when the batch finishes).
    kv_used: u64,
    new_token_ratio: NewTokenRatio,
    completed: usize,
    /// Admissions, joins and finishes so far (a cycle without any repeats exactly).
    events: u64,
    now: f64,
    trace: Trace,
    sample_every_s: f64,
    next_sample_s: f64,
}

/// Runs `requests` through the engine and returns what happened to each.
pub fn run(
    cfg: EngineConfig,
    cache: &mut CostCache<'_>,
    requests: &[RequestSpec],
    client: Client,
) -> Result<Trace, EngineError> {
    if cfg.max_running_requests == 0 || cfg.micro_batch_cap == 0 || cfg.prefill_budget_tokens == 0 {
        return Err(EngineError::Stuck);
    }
    let reqs: Vec<Req> = requests
        .iter()
        .map(|r| Req {
            input: r.input_tokens,
            output: r.output_tokens.max(1),
            to_compute: r
                .input_tokens
                .saturating_sub(cfg.cached_prefix_tokens)
                .max(1),
            arrival_s: r.arrival_s,
            ..Req::default()
        })
        .collect();
    if let Some(r) = reqs.iter().max_by_key(|r| r.to_compute + r.output) {
        let needed = (r.to_compute + r.output) as u64 + cfg.cached_prefix_tokens as u64;
        if needed > cfg.kv_tokens {
            return Err(EngineError::RequestTooLarge {
                needed,
                capacity: cfg.kv_tokens,
                flag: cfg.engine.rules().memory_fraction_flag(),
            });
        }
    }
    let n = reqs.len();
    let slot_count = client.max_concurrency.map_or(n, |c| (c as usize).min(n));
    let mut e = Engine {
        cfg,
        policy: cfg.engine.rules().scheduler(cfg.mixed_chunk),
        cache,
        reqs,
        next_send: 0,
        slots: std::iter::repeat_n(0.0, slot_count).collect(),
        round_size: client.closed_rounds.then_some(slot_count),
        round_left: slot_count,
        round_first_only: client.closed_rounds,
        waiting: VecDeque::new(),
        inbox: VecDeque::new(),
        skipper: recv::RecvSkipper::new(cfg.recv_interval),
        last_weight: recv::DECODE_WEIGHT,
        chunked: None,
        mbs: (0..cfg.micro_batches.max(1))
            .map(|_| MicroBatch::default())
            .collect(),
        running_total: 0,
        kv_used: cfg.cached_prefix_tokens as u64,
        new_token_ratio: NewTokenRatio::default(),
        completed: 0,
        events: 0,
        now: 0.0,
        trace: Trace {
            ttft_s: Vec::with_capacity(n),
            tpot_s: Vec::with_capacity(n),
            e2e_s: Vec::with_capacity(n),
            ..Trace::default()
        },
        sample_every_s: 0.25,
        next_sample_s: 0.0,
    };
    e.run_loop()?;
    e.trace.duration_s = e.now;
    Ok(e.trace)
}

impl Engine<'_, '_> {
    fn run_loop(&mut self) -> Result<(), EngineError> {
        let l = self.mbs.len() as u64;
        let pp = self.cfg.pp_size.max(1) as u64;
        let mut t: u64 = 0;
        let mut empty_streak = 0u64;
        // Under PP, a cycle of `l` turns with only decodes and no admission or finish repeats
        // until something changes; `cycle_*` track the last cycle to take repeats at once.
        let (mut cycle_s, mut cycle_clean, mut cycle_events) = (0.0f64, false, 0u64);
        while self.completed < self.reqs.len() {
            if pp > 1 && t.is_multiple_of(l) {
                if cycle_clean && cycle_events == self.events && cycle_s > 0.0 {
                    self.repeat_decode_cycles(cycle_s);
                }
                (cycle_s, cycle_clean, cycle_events) = (0.0, true, self.events);
            }
            self.client_send();
            self.receive();
            let m = (t % l) as usize;
            self.schedule(m, t);
            let (dur, any, prefill_in_flight) = self.turn_duration(t, pp, l);
            self.last_weight = if any && self.mbs[m].is_prefill {
                recv::PREFILL_WEIGHT
            } else {
                recv::DECODE_WEIGHT
            };
            if !any {
                // SGLang's `on_idle` when no batch runs.
                self.new_token_ratio = NewTokenRatio::default();
                if self.waiting.is_empty() && self.inbox.is_empty() && self.running_total == 0 {
                    // Nothing on the server: jump to the next send.
                    let next = self.next_send_time();
                    self.trace.breakdown.idle_s += next - self.now;
                    self.now = next;
                    empty_streak = 0;
                    cycle_clean = false;
                } else {
                    empty_streak += 1;
                    if empty_streak > 2 * l {
                        return Err(EngineError::Stuck);
                    }
                }
                t += 1;
                continue;
            }
            empty_streak = 0;
            // Without PP, a decode step that changes nothing but contexts repeats until a request
            // finishes, a request may be sent, or the mean context leaves its cost bucket: take
            // those identical steps at once.
            let steps = if pp == 1 && !prefill_in_flight {
                self.identical_decode_steps(m, dur)
            } else {
                1
            };
            // the reads that fell inside the steps taken at once found nothing to read
            self.skipper.advance(steps - 1);
            let span = dur * steps as f64;
            self.now += span;
            cycle_s += span;
            cycle_clean &= !prefill_in_flight;
            if prefill_in_flight {
                self.trace.breakdown.prefill_s += span;
            } else {
                self.trace.breakdown.decode_s += span;
            }
            if steps > 1 {
                let extra = (steps - 1) as f64;
                self.trace.breakdown.decode_batches += steps as u64 - 1;
                add_parts_scaled(&mut self.trace.breakdown, &self.mbs[m].cost, extra);
                self.allocate_decode(m, steps - 1);
                self.new_token_ratio.decay(steps as u64 - 1);
            }
            if t + 1 >= pp {
                let done_turn = t + 1 - pp;
                let j = (done_turn % l) as usize;
                if self.mbs[j].launched_turn == Some(done_turn) {
                    self.complete(j, steps, dur);
                }
            }
            self.sample();
            t += 1;
        }
        Ok(())
    }

    /// SGLang's `get_next_batch_to_run` for micro-batch `m`: a prefill batch if anything can be
    /// admitted (or a chunk continues), else a decode step of its running requests.
    fn schedule(&mut self, m: usize, t: u64) {
        self.mbs[m].chunks.clear();
        // The engine's policy shares the step's token budget between the running requests'
        // decodes and prefill chunks (mixed chunks: the decodes first).
        let decoding = self.mbs[m].running.len() as u32;
        let (budget, mixed) = self
            .policy
            .prefill_budget(self.cfg.prefill_budget_tokens, decoding);
        let mut a = Admission {
            budget,
            new_sum: 0,
            cached_sum: 0,
            rem_total: self.free_after_reservations(m),
        };
        self.continue_chunked(m, &mut a);
        self.admit_waiting(m, &mut a);
        self.trace.peak_running = self.trace.peak_running.max(self.running_total);
        if !self.mbs[m].chunks.is_empty() {
            self.launch_prefill(m, mixed, &a);
        } else if !self.mbs[m].running.is_empty() {
            self.make_decode_room(m);
            if self.mbs[m].running.is_empty() {
                return;
            }
            self.allocate_decode(m, 1);
            let (b, ctx) = self.decode_rows(m);
            let mb = &mut self.mbs[m];
            mb.is_prefill = false;
            mb.mixed = false;
            mb.cost = self.cache.decode(b, ctx);
            self.trace.breakdown.decode_batches += 1;
        } else {
            return;
        }
        self.trace.peak_kv_tokens = self.trace.peak_kv_tokens.max(self.kv_used);
        let mb = &mut self.mbs[m];
        mb.launched_turn = Some(t);
        add_parts(&mut self.trace.breakdown, &mb.cost);
    }

    /// `PrefillAdder`'s `rem_total_tokens`: free slots, less the ratio's share of what this
    /// micro-batch's running requests still generate (while anything waits to be admitted).
    fn free_after_reservations(&self, m: usize) -> f64 {
        let mut rem_total = self.cfg.kv_tokens.saturating_sub(self.kv_used) as f64;
        if self.chunked.is_some() || !self.waiting.is_empty() {
            for &r in &self.mbs[m].running {
                let q = &self.reqs[r as usize];
                rem_total -= self
                    .policy
                    .reserve_for_running(self.new_token_ratio.0, q.output - q.generated);
            }
        }
        rem_total
    }

    /// The chunked request goes first and regardless of the micro-batch's cap (SGLang skips
    /// `get_num_allocatable_reqs` while `chunked_req` is set); under PP it moves to this
    /// micro-batch, as its last chunk decides which running batch it joins.
    fn continue_chunked(&mut self, m: usize, a: &mut Admission) {
        let Some(r) = self.chunked.filter(|_| a.budget > 0) else {
            return;
        };
        let prefix = self.cfg.cached_prefix_tokens;
        let q = &mut self.reqs[r as usize];
        let take = (q.to_compute - q.scheduled).min(a.budget);
        self.mbs[m].chunks.push((r, take));
        a.new_sum += take as u64;
        a.cached_sum += (prefix + q.scheduled) as u64;
        q.scheduled += take;
        a.budget -= take;
        let last = q.scheduled == q.to_compute;
        a.rem_total -= self
            .policy
            .admission_tokens(take, last, q.output - q.generated);
        if last {
            self.chunked = None;
        } else {
            a.budget = 0;
        }
        if q.owner != m as u32 {
            self.mbs[q.owner as usize].held -= 1;
            q.owner = m as u32;
            self.mbs[m].held += 1;
        }
    }

    /// Waiting requests in arrival order while the budget, the micro-batch's cap, the running
    /// limit and the KV left admit them; the last one taken may be chunked.
    fn admit_waiting(&mut self, m: usize, a: &mut Admission) {
        let prefix = self.cfg.cached_prefix_tokens;
        let mb = &mut self.mbs[m];
        while a.budget > 0 {
            let Some(&r) = self.waiting.front() else {
                break;
            };
            if mb.held >= self.cfg.micro_batch_cap
                || self.running_total >= self.cfg.max_running_requests
            {
                break;
            }
            let q = &mut self.reqs[r as usize];
            let left = q.output - q.generated;
            // unchunked, a prompt waits for a step with room for all of it (one larger than
            // any step's budget is chunked instead: vLLM refuses such a launch at start,
            // `verify_max_model_len`, and waiting would never end)
            let whole_waits = !self.cfg.chunking
                && q.to_compute > a.budget
                && q.to_compute <= self.cfg.prefill_budget_tokens;
            if self.policy.admission_tokens(q.to_compute, true, left) > a.rem_total || whole_waits {
                break;
            }
            self.waiting.pop_front();
            mb.held += 1;
            self.running_total += 1;
            let take = q.to_compute.min(a.budget);
            q.scheduled = take;
            q.owner = m as u32;
            mb.chunks.push((r, take));
            a.new_sum += take as u64;
            a.cached_sum += prefix as u64;
            a.budget -= take;
            a.rem_total -= self
                .policy
                .admission_tokens(take, take == q.to_compute, left);
            if take < q.to_compute {
                self.chunked = Some(r);
                break;
            }
        }
    }

    /// The micro-batch's prefill chunks take their KV and launch, with the running requests'
    /// decode rows beside them where chunks are mixed.
    fn launch_prefill(&mut self, m: usize, mixed: bool, a: &Admission) {
        for k in 0..self.mbs[m].chunks.len() {
            let (r, take) = self.mbs[m].chunks[k];
            self.reqs[r as usize].kv_alloc += take;
            self.kv_used += take as u64;
        }
        let (mut b, mut ctx) = (0, 0);
        if mixed {
            self.make_decode_room(m);
            self.allocate_decode(m, 1);
            (b, ctx) = self.decode_rows(m);
        }
        let mb = &mut self.mbs[m];
        mb.is_prefill = true;
        mb.mixed = b > 0;
        let n = mb.chunks.len() as u32;
        mb.cost = if b > 0 {
            self.cache.mixed(n, a.new_sum, a.cached_sum, b, ctx)
        } else {
            self.cache.prefill(n, a.new_sum, a.cached_sum)
        };
        self.trace.breakdown.prefill_batches += 1;
        self.events += 1;
    }

    /// The running requests of micro-batch `m` and the sum of their contexts (a decode step's
    /// rows).
    fn decode_rows(&self, m: usize) -> (u32, u64) {
        let running = &self.mbs[m].running;
        let ctx = running
            .iter()
            .map(|&r| {
                let q = &self.reqs[r as usize];
                (q.input + q.generated) as u64
            })
            .sum();
        (running.len() as u32, ctx)
    }

    /// How long turn `t` lasts: the slowest stage's batch plus one hop (PP), or the batch's
    /// latency without PP. Also whether anything ran and whether a prefill was among it.
    fn turn_duration(&mut self, t: u64, pp: u64, l: u64) -> (f64, bool, bool) {
        let (mut dur, mut hop, mut any, mut prefill) = (0.0f64, 0.0f64, false, false);
        for s in 0..pp.min(t + 1) {
            let launched = t - s;
            let mb = &self.mbs[(launched % l) as usize];
            if mb.launched_turn != Some(launched) {
                continue;
            }
            any = true;
            prefill |= mb.is_prefill;
            let c = &mb.cost;
            let stage = if pp == 1 {
                c.latency_s
            } else {
                // each stage's own GPU and CPU time, combined by the cost model
                c.stage_s[(s as usize).min(c.stages - 1)]
            };
            if s == 0 && c.cpu_bound {
                self.trace.breakdown.cpu_bound_turns += 1;
            }
            dur = dur.max(stage);
            hop = hop.max(c.pp_hop_s);
        }
        if pp > 1 && any {
            dur += hop;
        }
        (dur, any, prefill)
    }

    /// The batch of micro-batch `j` left the last stage at `now`: account tokens and finishes.
    /// A decode batch may stand for `steps` identical steps of `dur` each.
    fn complete(&mut self, j: usize, steps: u32, dur: f64) {
        let now = self.now;
        // Indexing (not moving the micro-batch out) keeps this allocation- and copy-free.
        if self.mbs[j].is_prefill {
            // a mixed batch's decodes first: the requests its chunks finish join afterwards
            if self.mbs[j].mixed {
                self.complete_decode(j, 1, dur);
            }
            for k in 0..self.mbs[j].chunks.len() {
                let (r, take) = self.mbs[j].chunks[k];
                let q = &mut self.reqs[r as usize];
                q.prefilled += take;
                if q.prefilled == q.to_compute {
                    if q.started {
                        // A retracted request resumed: its next token, after a long gap.
                        self.trace.itl_s.push(now - q.last_s, 1);
                    } else {
                        q.started = true;
                        q.first_s = now;
                        self.trace.ttft_s.push(now - q.send_s);
                    }
                    q.last_s = now;
                    q.generated += 1;
                    self.events += 1;
                    if q.generated >= q.output {
                        self.finish(j, r);
                    } else {
                        self.mbs[j].running.push(r);
                    }
                }
            }
        } else {
            self.complete_decode(j, steps, dur);
        }
        self.trace.peak_kv_tokens = self.trace.peak_kv_tokens.max(self.kv_used);
    }

    /// `steps` decode steps of micro-batch `j`'s running requests ended at `now`, `dur` each.
    fn complete_decode(&mut self, j: usize, steps: u32, dur: f64) {
        let now = self.now;
        let first_gap_end = now - dur * (steps - 1) as f64;
        // Requests of one batch mostly share their previous token's time: their first gaps
        // are counted as runs of equal values, and the batch's repeated steps at once (the
        // same multiset as one push per request, a fraction of the table lookups).
        let mut gaps = GapRun::default();
        let decoding = self.mbs[j].running.len() as u64;
        let mut i = 0;
        while i < self.mbs[j].running.len() {
            let r = self.mbs[j].running[i];
            let q = &mut self.reqs[r as usize];
            q.generated += steps;
            gaps.add(&mut self.trace.itl_s, first_gap_end - q.last_s);
            q.last_s = now;
            if q.generated >= q.output {
                self.mbs[j].running.swap_remove(i);
                self.finish(j, r);
            } else {
                i += 1;
            }
        }
        gaps.flush(&mut self.trace.itl_s);
        self.trace.itl_s.push(dur, (steps as u64 - 1) * decoding);
    }

    fn finish(&mut self, j: usize, r: u32) {
        let q = &self.reqs[r as usize];
        self.completed += 1;
        self.events += 1;
        self.trace.e2e_s.push(self.now - q.send_s);
        if q.output > 1 {
            self.trace
                .tpot_s
                .push((self.now - q.first_s) / (q.output - 1) as f64);
        }
        self.kv_used -= q.kv_alloc as u64;
        self.mbs[j].held -= 1;
        self.running_total -= 1;
        self.free_slot();
    }

    /// Records micro-batch sizes every `sample_every_s`, thinning to at most [`MAX_SAMPLES`].
    fn sample(&mut self) {
        if self.now < self.next_sample_s {
            return;
        }
        if self.trace.samples.len() >= MAX_SAMPLES {
            let mut keep = false;
            self.trace.samples.retain(|_| {
                keep = !keep;
                keep
            });
            self.sample_every_s *= 2.0;
        }
        self.trace.samples.push(MicroBatchSample {
            t_s: self.now,
            sizes: self.mbs.iter().map(|m| m.held).collect(),
        });
        self.next_sample_s = self.now + self.sample_every_s;
    }
}

/// A run of equal inter-token gaps waiting to be counted.
#[derive(Default)]
struct GapRun {
    value: f64,
    count: u64,
}

impl GapRun {
    fn add(&mut self, sample: &mut WeightedSample, v: f64) {
        if self.count > 0 && v.to_bits() != self.value.to_bits() {
            self.flush(sample);
        }
        self.value = v;
        self.count += 1;
    }

    fn flush(&mut self, sample: &mut WeightedSample) {
        sample.push(self.value, self.count);
        self.count = 0;
    }
}

fn add_parts(b: &mut RunBreakdown, c: &CompactCost) {
    add_parts_scaled(b, c, 1.0);
}

fn add_parts_scaled(b: &mut RunBreakdown, c: &CompactCost, k: f64) {
    b.cost_parts.add_scaled(&c.breakdown, k);
}

/// What a micro-batch's prefill admission has taken so far: the token budget left, the new and
/// cached prompt tokens of its chunks, and the KV tokens still free after the running requests'
/// reservations (`PrefillAdder`'s `rem_total_tokens`).
struct Admission {
    budget: u32,
    new_sum: u64,
    cached_sum: u64,
    rem_total: f64,
}
