//! The serving simulation against a test double with known costs, independent of the cost model.

use models::Layout;
use sim::cost::{IterationBatch, IterationCost, IterationModel, MemoryPlan, TimeBreakdown};
use sim::options::ServerOptions;
use sim::serving::{ServingError, simulate};
use sim::workload::Workload;

/// Every iteration costs `fixed_s + per_token_s × tokens`, split evenly over `pp` stages.
struct Fake {
    layout: Layout,
    fixed_s: f64,
    per_token_s: f64,
    hop_s: f64,
    cpu_s: f64,
    memory: MemoryPlan,
}

impl Fake {
    fn new(pp: u32, kv_tokens: u64) -> Fake {
        Fake {
            layout: Layout {
                tp: 8 / pp,
                pp,
                ep: 1,
                dp_attention: false,
            },
            fixed_s: 0.010,
            per_token_s: 0.0,
            hop_s: 0.0,
            cpu_s: 0.0,
            memory: MemoryPlan {
                kv_tokens,
                fits: true,
                ..MemoryPlan::default()
            },
        }
    }
}

impl IterationModel for Fake {
    fn layout(&self) -> Layout {
        self.layout
    }
    fn iteration(&self, b: &IterationBatch) -> IterationCost {
        let tokens = b.decode_context_tokens.len() as f64
            + b.prefill.iter().map(|c| c.new_tokens as f64).sum::<f64>();
        let gpu = self.fixed_s + self.per_token_s * tokens;
        let pp = self.layout.pp as usize;
        // each stage is its own process: its time is its GPU share or its CPU, whichever is longer
        let stage = (gpu / pp as f64).max(self.cpu_s);
        IterationCost {
            stage_s: vec![stage; pp],
            stage_gpu_s: vec![gpu / pp as f64; pp],
            stage_cpu_s: vec![self.cpu_s; pp],
            pp_hop_s: self.hop_s,
            cpu_s: self.cpu_s,
            latency_s: stage * pp as f64 + self.hop_s * (pp - 1) as f64,
            eager_launches: 0.0,
            breakdown: TimeBreakdown {
                compute_s: gpu,
                ..TimeBreakdown::default()
            },
        }
    }
    fn memory(&self) -> &MemoryPlan {
        &self.memory
    }
}

fn closed(c: u32, n: u32, input: u32, output: u32) -> Workload {
    Workload {
        num_prompts: n,
        random_input_len: input,
        random_output_len: output,
        random_range_ratio: 1.0,
        max_concurrency: Some(c),
        ..Workload::default()
    }
}

#[test]
fn single_stream_matches_hand_computation() {
    // One request at a time, 10 ms per iteration: 1 prefill + 99 decodes = 100 iterations = 1 s.
    let m = Fake::new(1, 1 << 20);
    let r = simulate(&m, &ServerOptions::default(), &closed(1, 5, 100, 100)).unwrap();
    assert!((r.duration - 5.0).abs() < 1e-9, "{}", r.duration);
    assert!((r.output_throughput - 100.0).abs() < 1e-6);
    assert!((r.mean_ttft_ms - 10.0).abs() < 1e-9);
    assert!((r.mean_tpot_ms - 10.0).abs() < 1e-9);
    assert!((r.median_itl_ms - 10.0).abs() < 1e-9);
    assert_eq!(r.peak_running_requests, 1);
    assert_eq!(r.completed, 5);
    assert!((r.total_throughput - 200.0).abs() < 1e-6);
}

#[test]
fn fixed_cost_batches_scale_throughput_with_concurrency() {
    // With a batch-size-independent iteration cost, C concurrent requests give ~C× the throughput.
    let m = Fake::new(1, 1 << 20);
    let o = ServerOptions::default();
    let one = simulate(&m, &o, &closed(1, 16, 32, 50)).unwrap();
    let eight = simulate(&m, &o, &closed(8, 16, 32, 50)).unwrap();
    let ratio = eight.output_throughput / one.output_throughput;
    assert!((ratio - 8.0).abs() < 0.5, "ratio {ratio}");
    assert_eq!(eight.peak_running_requests, 8);
}

#[test]
fn chunked_prefill_splits_long_prompts() {
    // A 10,000-token prompt with an 8192-token budget needs two prefill iterations.
    let m = Fake::new(1, 1 << 20);
    let r = simulate(&m, &ServerOptions::default(), &closed(1, 1, 10_000, 2)).unwrap();
    assert_eq!(r.breakdown.prefill_batches, 2);
    assert!((r.mean_ttft_ms - 20.0).abs() < 1e-9);
    let o = ServerOptions {
        chunked_prefill_size: 2048,
        ..ServerOptions::default()
    };
    let r = simulate(&m, &o, &closed(1, 1, 10_000, 2)).unwrap();
    assert_eq!(r.breakdown.prefill_batches, 5);
}

#[test]
fn pipeline_runs_the_chunks_of_one_prompt_in_consecutive_turns() {
    // SGLang keeps one `chunked_req` per scheduler: under PP its next chunk goes into the next
    // turn's micro-batch, so the chunks of a 4-chunk prompt enter the pipeline one turn apart
    // (stage 0 of chunk k+1 beside stage 1 of chunk k). PP2, 10 ms per batch = 5 ms per stage:
    // launches at turns 0..3, the last leaves stage 1 at the end of turn 4 → TTFT 5 × 5 ms.
    let m = Fake::new(2, 1 << 20);
    let o = ServerOptions {
        chunked_prefill_size: 1000,
        ..ServerOptions::default()
    };
    let r = simulate(&m, &o, &closed(1, 1, 4000, 2)).unwrap();
    assert_eq!(r.breakdown.prefill_batches, 4);
    assert!((r.mean_ttft_ms - 25.0).abs() < 1e-9, "{}", r.mean_ttft_ms);
    // Only one request is chunked at a time: a second one starts when the first one's last
    // chunk has taken the whole budget, at turn 4, and leaves the pipeline after turn 8.
    let r = simulate(&m, &o, &closed(2, 2, 4000, 2)).unwrap();
    assert_eq!(r.breakdown.prefill_batches, 8);
    assert!(
        (r.mean_ttft_ms - (25.0 + 45.0) / 2.0).abs() < 1e-9,
        "{}",
        r.mean_ttft_ms
    );
}

#[test]
fn kv_pool_limits_admission() {
    // 1,000 KV tokens and 100 + 100-token requests. One prefill batch reserves whole requests:
    // 5. Running requests then reserve only `new_token_ratio` (0.7, decaying) of their remaining
    // output, so SGLang admits a few more, never past the pool.
    let m = Fake::new(1, 1000);
    let r = simulate(&m, &ServerOptions::default(), &closed(64, 40, 100, 100)).unwrap();
    assert_eq!(r.completed, 40);
    assert!(
        (5..10).contains(&r.peak_running_requests),
        "{}",
        r.peak_running_requests
    );
    assert!(r.peak_kv_tokens <= 1000);
    assert!(
        r.mean_ttft_ms > 100.0,
        "requests wait for KV: {}",
        r.mean_ttft_ms
    );
}

#[test]
fn optimistic_admission_retracts_when_the_pool_fills() {
    // 2,000 KV tokens, two 100 + 1000-token requests: the first reserves 1,100; once it runs it
    // reserves only 0.7 × its remaining output, which lets the second in. Together they need
    // 2,200 slots, so around step 900 a decode step finds the pool full and one is retracted,
    // re-prefilled (prompt + output so far) when the other finishes.
    let m = Fake::new(1, 2000);
    let r = simulate(&m, &ServerOptions::default(), &closed(2, 2, 100, 1000)).unwrap();
    assert_eq!(r.completed, 2);
    assert_eq!(r.peak_running_requests, 2);
    assert!(r.breakdown.retracted_requests >= 1);
    assert!(r.peak_kv_tokens <= 2000, "{}", r.peak_kv_tokens);
    // The retracted request's re-prefill is an extra prefill batch beyond the two admissions.
    assert!(r.breakdown.prefill_batches >= 3);
    assert_eq!(r.total_output_tokens, 2000);
}

#[test]
fn max_running_requests_caps_the_batch() {
    let m = Fake::new(1, 1 << 20);
    let o = ServerOptions {
        max_running_requests: Some(4),
        ..ServerOptions::default()
    };
    let r = simulate(&m, &o, &closed(32, 64, 10, 10)).unwrap();
    assert_eq!(r.peak_running_requests, 4);
}

#[test]
fn request_larger_than_kv_pool_is_an_error() {
    let m = Fake::new(1, 100);
    let e = simulate(&m, &ServerOptions::default(), &closed(1, 1, 100, 100)).unwrap_err();
    assert!(matches!(e, ServingError::Engine(_)));
    assert!(e.to_string().contains("200 KV tokens"), "{e}");
}

#[test]
fn layout_that_does_not_fit_is_an_error() {
    let mut m = Fake::new(1, 100);
    m.memory.fits = false;
    m.memory.shortfall_bytes = 3_000_000_000;
    let e = simulate(&m, &ServerOptions::default(), &closed(1, 1, 10, 10)).unwrap_err();
    assert!(e.to_string().contains("3.00 GB"), "{e}");
}

#[test]
fn pipeline_single_stream_pays_every_stage_and_hop() {
    // PP2, 10 ms split into two 5 ms stages, 1 ms hop: a lone request waits a full pipeline trip
    // (2 turns of 5+1 ms) per token.
    let mut m = Fake::new(2, 1 << 20);
    m.hop_s = 0.001;
    let r = simulate(&m, &ServerOptions::default(), &closed(1, 2, 10, 50)).unwrap();
    assert!((r.mean_tpot_ms - 12.0).abs() < 1e-6, "{}", r.mean_tpot_ms);
}

#[test]
fn pipeline_fills_with_enough_micro_batches() {
    // Two micro-batches each holding requests keep both stages busy: throughput per turn doubles
    // relative to a lone request.
    let m = Fake::new(2, 1 << 20);
    let o = ServerOptions::default();
    let one = simulate(&m, &o, &closed(1, 8, 10, 100)).unwrap();
    let many = simulate(&m, &o, &closed(16, 64, 10, 100)).unwrap();
    let per_req_one = one.output_throughput;
    let per_req_many = many.output_throughput / 16.0;
    assert!(
        per_req_many > 0.9 * per_req_one,
        "{per_req_one} vs {per_req_many}"
    );
    // Micro-batch sizes are sampled, one entry per micro-batch.
    assert!(many.micro_batch_samples.iter().all(|s| s.sizes.len() == 2));
    let peak: u32 = many
        .micro_batch_samples
        .iter()
        .map(|s| s.sizes.iter().sum::<u32>())
        .max()
        .unwrap();
    assert_eq!(peak, 16);
}

#[test]
fn micro_batch_cap_is_respected() {
    let m = Fake::new(2, 1 << 20);
    let o = ServerOptions {
        pp_max_micro_batch_size: Some(3),
        ..ServerOptions::default()
    };
    let r = simulate(&m, &o, &closed(16, 32, 10, 20)).unwrap();
    assert!(
        r.micro_batch_samples
            .iter()
            .all(|s| s.sizes.iter().all(|&x| x <= 3))
    );
    assert!(r.peak_running_requests <= 6);
}

#[test]
fn cpu_bound_iterations_set_the_pace() {
    // CPU 30 ms per iteration beside 10 ms of GPU: iterations take 30 ms.
    let mut m = Fake::new(1, 1 << 20);
    m.cpu_s = 0.030;
    let r = simulate(&m, &ServerOptions::default(), &closed(1, 1, 10, 11)).unwrap();
    assert!((r.mean_tpot_ms - 30.0).abs() < 1e-9);
    assert!(r.breakdown.cpu_bound_turns > 0);
}

#[test]
fn open_loop_idles_between_sparse_arrivals() {
    let m = Fake::new(1, 1 << 20);
    let w = Workload {
        num_prompts: 20,
        random_input_len: 10,
        random_output_len: 5,
        request_rate: Some(1.0),
        ..Workload::default()
    };
    let r = simulate(&m, &ServerOptions::default(), &w).unwrap();
    assert!(r.breakdown.idle_s > 10.0, "{}", r.breakdown.idle_s);
    assert!((r.mean_ttft_ms - 10.0).abs() < 1e-9);
}

#[test]
fn per_token_costs_make_bigger_batches_slower_per_step() {
    let mut m = Fake::new(1, 1 << 20);
    m.per_token_s = 0.001;
    let o = ServerOptions::default();
    let a = simulate(&m, &o, &closed(1, 4, 10, 50)).unwrap();
    let b = simulate(&m, &o, &closed(32, 64, 10, 50)).unwrap();
    assert!(b.mean_tpot_ms > 3.0 * a.mean_tpot_ms);
    assert!(b.output_throughput > a.output_throughput);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Every request finishes, tokens are conserved, the client limit holds, latencies are
        /// ordered, and a slower engine is never faster.
        #[test]
        fn runs_are_consistent(
            c in 1u32..40,
            n in 1u32..60,
            input in 1u32..3000,
            output in 1u32..60,
            pp in prop::sample::select(vec![1u32, 2, 4]),
            per_token_us in 0.0f64..200.0,
            ratio in prop::sample::select(vec![0.0f64, 0.5, 1.0]),
        ) {
            let mut m = Fake::new(pp, 1 << 22);
            m.per_token_s = per_token_us * 1e-6;
            let w = Workload { random_range_ratio: ratio, ..closed(c, n, input, output) };
            let o = ServerOptions { chunked_prefill_size: 1024, ..ServerOptions::default() };
            let r = simulate(&m, &o, &w).unwrap();
            let expected: u64 = w.requests().iter().map(|q| q.output_tokens as u64).sum();
            prop_assert_eq!(r.completed, n);
            prop_assert_eq!(r.total_output_tokens, expected);
            prop_assert!(r.peak_running_requests <= c.min(n));
            prop_assert!(r.mean_ttft_ms <= r.mean_e2e_latency_ms + 1e-9);
            prop_assert!(r.duration > 0.0);
            m.fixed_s *= 2.0;
            let slower = simulate(&m, &o, &w).unwrap();
            prop_assert!(slower.duration >= r.duration - 1e-9);
        }
    }
}

#[test]
fn repeated_decode_steps_are_accounted_exactly() {
    // Long contexts let the engine take identical decode steps (and PP cycles) at once; timings
    // and counts must be what one-by-one stepping gives.
    for pp in [1, 2, 4] {
        let mut m = Fake::new(pp, 1 << 22);
        m.hop_s = 0.001 * f64::from(pp - 1).min(1.0);
        let r = simulate(&m, &ServerOptions::default(), &closed(1, 3, 4000, 400)).unwrap();
        let per_token_ms = 10.0 + f64::from(pp) * m.hop_s * 1e3;
        assert!(
            (r.mean_tpot_ms - per_token_ms).abs() < 1e-6,
            "pp{pp}: {}",
            r.mean_tpot_ms
        );
        assert!((r.median_itl_ms - per_token_ms).abs() < 1e-6);
        assert_eq!(r.breakdown.decode_batches, 3 * 399, "pp{pp}");
        assert_eq!(r.total_output_tokens, 1200);
        // Four requests per micro-batch decode in lockstep: throughput scales by 8 at pp 2.
        let many = simulate(&m, &ServerOptions::default(), &closed(8, 16, 4000, 400)).unwrap();
        assert!(
            many.output_throughput > 7.0 * r.output_throughput * 0.9,
            "pp{pp}"
        );
        assert_eq!(many.completed, 16);
    }
}

/// Closed rounds of `n` requests, each round's time by hand: its prefill batches (the first
/// request alone, as the user's server log shows every round start, then the rest of the
/// round's prompt tokens in 8192-token budgets; prefill goes first in SGLang's scheduler, so no
/// decode runs until the round is admitted) plus one decode step per token after the first of
/// its longest request, 10 ms each.
fn closed_round_duration_by_hand(w: &Workload) -> (f64, u64) {
    let n = w.max_concurrency.unwrap() as usize;
    let reqs = w.requests();
    let (mut secs, mut tokens) = (0.0, 0u64);
    for round in reqs.chunks(n) {
        let prompt: u64 = round.iter().map(|r| r.input_tokens as u64).sum();
        let longest = round.iter().map(|r| r.output_tokens.max(1)).max().unwrap();
        let prefills = 1 + (prompt - round[0].input_tokens as u64).div_ceil(8192);
        secs += 0.010 * (prefills + longest as u64 - 1) as f64;
        tokens += round
            .iter()
            .map(|r| r.output_tokens.max(1) as u64)
            .sum::<u64>();
    }
    (secs, tokens)
}

#[test]
fn closed_rounds_pay_each_rounds_prefill_and_its_tail() {
    // The user's GLM-4.7 client: rounds of 256 and 512 requests sent at once, 61-token prompts
    // and up to 100 tokens out (U{1..100}: the round waits for its longest request).
    let m = Fake::new(1, 1 << 26);
    let o = ServerOptions::default();
    for n in [256u32, 512] {
        let open = Workload {
            random_input_len: 61,
            random_range_ratio: 0.0,
            ..closed(n, 8 * n, 61, 100)
        };
        let rounds = Workload {
            closed_rounds: true,
            ..open.clone()
        };
        let (secs, tokens) = closed_round_duration_by_hand(&rounds);
        let r = simulate(&m, &o, &rounds).unwrap();
        assert_eq!(r.total_output_tokens, tokens);
        assert!(
            (r.duration - secs).abs() < 1e-6,
            "n={n}: simulated {} s, by hand {secs} s",
            r.duration
        );
        assert!((r.output_throughput - tokens as f64 / secs).abs() < 1e-6);
        // Against the steady decode figure (n tokens per 10 ms step, what a full batch gives)
        // the round loses its prefill steps and the tail where its batch empties: U{1..100}
        // outputs make ~50 tokens per request over ~100 steps, so about half.
        let steady = n as f64 / 0.010;
        let share = r.output_throughput / steady;
        let mean_out = tokens as f64 / (8 * n) as f64;
        assert!(
            share < 0.55 && share > 0.9 * mean_out / 102.0,
            "n={n}: closed {:.0} tok/s is {share:.2} of the steady {steady:.0} tok/s",
            r.output_throughput
        );
    }
}

#[test]
fn closed_rounds_refuse_a_request_rate() {
    let w = Workload {
        closed_rounds: true,
        request_rate: Some(2.0),
        ..closed(8, 16, 32, 50)
    };
    assert_eq!(
        w.validate(1 << 20),
        Err(sim::workload::WorkloadError::RoundsWithRate)
    );
}

/// A TP4×PP2 closed round of 128 short prompts: the round's first request reaches the scheduler
/// alone and fills the first micro-batch's prefill, the next micro-batch takes the other 127
/// (SGLang's split, 1/127, as uneven as the 81/937 of the user's logs); every token of either
/// micro-batch then waits a rotation paced by the 127-request step, as
/// `serving::pipeline::split_rotation_s` (the doctor's costing of a logged split) says.
#[test]
fn an_uneven_pipeline_split_decodes_at_the_pace_the_doctor_costs() {
    let mut m = Fake::new(2, 1 << 20);
    m.per_token_s = 0.0001;
    m.hop_s = 0.001;
    let w = Workload {
        closed_rounds: true,
        ..closed(128, 128, 10, 50)
    };
    let r = simulate(&m, &ServerOptions::default(), &w).unwrap();
    let sizes: Vec<Vec<u32>> = r
        .micro_batch_samples
        .iter()
        .map(|s| s.sizes.clone())
        .collect();
    assert!(sizes.contains(&vec![1, 127]), "{sizes:?}");
    let rotation = sim::serving::pipeline::split_rotation_s(&m, &[1, 127], 60);
    // 2 turns of (127-request stage step + hop): (10 ms + 12.7 ms) / 2 + 1 ms each
    assert!(
        (rotation - 2.0 * (0.01135 + 0.001)).abs() < 1e-9,
        "{rotation}"
    );
    assert!(
        (r.median_itl_ms - rotation * 1e3).abs() < 1e-6,
        "median ITL {} ms, rotation {} ms",
        r.median_itl_ms,
        rotation * 1e3
    );
}

#[test]
fn mixed_chunks_carry_the_running_decodes_through_each_prefill() {
    // fixed-cost iterations: a prefill beside the running decodes costs what either alone does,
    // so mixing (SGLang's --enable-mixed-chunk, vLLM V1) saves every decode-free prefill turn
    let fake = Fake::new(1, 1_000_000);
    let w = Workload {
        random_range_ratio: 0.3,
        ..closed(8, 64, 200, 40)
    };
    let run = |mixed: bool| {
        let opts = ServerOptions {
            enable_mixed_chunk: mixed,
            ..ServerOptions::default()
        };
        simulate(&fake, &opts, &w).unwrap()
    };
    let (apart, mixed) = (run(false), run(true));
    assert_eq!(mixed.completed, 64);
    assert_eq!(mixed.total_output_tokens, apart.total_output_tokens);
    // decode steps ride along in the prefill batches
    assert!(
        mixed.breakdown.decode_batches < apart.breakdown.decode_batches,
        "{} vs {}",
        mixed.breakdown.decode_batches,
        apart.breakdown.decode_batches
    );
    assert!(mixed.duration < apart.duration);
    // no decode waits a whole prefill turn for its next token
    assert!(mixed.p99_itl_ms <= apart.p99_itl_ms);
}

#[test]
fn mixed_decodes_take_their_tokens_from_the_prefill_budget_first() {
    // per-token cost only: a mixed batch of 4 decodes leaves 8 - 4 prompt tokens of an
    // 8-token budget, so a long prompt needs more (and cheaper) chunks than apart
    let mut fake = Fake::new(1, 1_000_000);
    fake.fixed_s = 0.0;
    fake.per_token_s = 0.001;
    let opts = |mixed: bool| ServerOptions {
        enable_mixed_chunk: mixed,
        chunked_prefill_size: 8,
        max_prefill_tokens: 8,
        ..ServerOptions::default()
    };
    let w = closed(5, 5, 64, 200);
    let apart = simulate(&fake, &opts(false), &w).unwrap();
    let mixed = simulate(&fake, &opts(true), &w).unwrap();
    assert!(mixed.breakdown.prefill_batches > apart.breakdown.prefill_batches);
    assert_eq!(mixed.total_output_tokens, apart.total_output_tokens);
}

/// SGLang's `--scheduler-recv-interval N`: during decode a request the client sends is read at
/// the scheduler's next read, every `N` decode steps (an idle scheduler reads at once), so it
/// waits up to `N` steps before its prefill. At 4 streams of uneven lengths and 10 ms steps the
/// mean TTFT grows by a few steps, no request waits more than about `N` steps longer, and the
/// throughput stays; vLLM has no such interval.
#[test]
fn scheduler_recv_interval_holds_arrivals_until_the_next_read() {
    let m = Fake::new(1, 1 << 20);
    let w = Workload {
        num_prompts: 40,
        random_input_len: 100,
        random_output_len: 200,
        random_range_ratio: 0.5,
        max_concurrency: Some(4),
        ..Workload::default()
    };
    let every = simulate(&m, &ServerOptions::default(), &w).unwrap();
    let ten = ServerOptions {
        scheduler_recv_interval: 10,
        ..ServerOptions::default()
    };
    let r = simulate(&m, &ten, &w).unwrap();
    let extra_ms = r.mean_ttft_ms - every.mean_ttft_ms;
    assert!((20.0..=90.0).contains(&extra_ms), "{extra_ms}");
    assert!(
        r.p99_ttft_ms <= every.p99_ttft_ms + 12.0 * 10.0,
        "{} vs {}",
        r.p99_ttft_ms,
        every.p99_ttft_ms
    );
    let ratio = r.output_throughput / every.output_throughput;
    assert!((ratio - 1.0).abs() < 0.05, "{ratio}");
    let vllm = |n: u32| ServerOptions {
        engine: sim::engine::Engine::Vllm,
        scheduler_recv_interval: n,
        ..ServerOptions::default()
    };
    let (a, b) = (
        simulate(&m, &vllm(1), &w).unwrap(),
        simulate(&m, &vllm(10), &w).unwrap(),
    );
    assert_eq!(a.mean_ttft_ms, b.mean_ttft_ms);
}

/// vLLM's `--no-enable-chunked-prefill`: a waiting prompt larger than the step's budget left
/// waits for a later step instead of being split, so prompts that would share a step as chunks
/// go one after another (the mean TTFT grows); a prompt no step could hold is still served.
#[test]
fn unchunked_prefill_waits_for_a_step_with_room_for_the_whole_prompt() {
    let m = Fake::new(1, 1 << 20);
    let w = Workload {
        num_prompts: 8,
        random_input_len: 600,
        random_output_len: 20,
        random_range_ratio: 1.0,
        max_concurrency: Some(8),
        ..Workload::default()
    };
    let vllm = |chunking: bool, budget: u32| ServerOptions {
        engine: sim::engine::Engine::Vllm,
        chunked_prefill_size: budget,
        max_prefill_tokens: budget,
        prefill_chunking: chunking,
        ..ServerOptions::default()
    };
    let chunked = simulate(&m, &vllm(true, 1000), &w).unwrap();
    let whole = simulate(&m, &vllm(false, 1000), &w).unwrap();
    assert_eq!(whole.completed, 8);
    assert!(
        whole.mean_ttft_ms > chunked.mean_ttft_ms,
        "{} vs {}",
        whole.mean_ttft_ms,
        chunked.mean_ttft_ms
    );
    // every prompt larger than the whole budget: served as chunks, not held forever
    let tight = simulate(&m, &vllm(false, 500), &w).unwrap();
    assert_eq!(tight.completed, 8);
}
