//! Real vLLM server logs (`sim/tests/fixtures/README.md`: the rtx6kpro GLM-5.1-NVFP4 v2 runs,
//! vLLM 0.20.2rc1, TP8 on 8× RTX PRO 6000): every line kind read as the server printed it, then
//! `sim validate --server-log` on them with today's errors as bands. These runs are the held-out
//! GLM-5.1 records' own server: the bands say what shardwise misses today, nothing is fitted.

use crate::common;

use common::{sim_output, sim_stdout};
use proptest::prelude::*;
use sim::engine::Engine;
use sim::server_log::{self, ServerLog, ServerRun, Unsteady, vllm};

const GIB: f64 = (1u64 << 30) as f64;
const DCP1_MTP0: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/vllm-glm51-dcp1-mtp0.log"
);
const DCP1_MTP1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/vllm-glm51-dcp1-mtp1.log"
);
const DCP8_STARTUP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/vllm-glm51-dcp8-mtp0-startup.log"
);
const MACHINE: &str = "rtx-pro-6000-x8-baremetal-nccl-ll128";

fn parse(path: &str) -> ServerLog {
    let text = server_log::read_log_file(std::path::Path::new(path)).unwrap();
    server_log::parse_any(&text, path)
}

fn only_run(log: &ServerLog) -> &ServerRun {
    assert_eq!(log.engine, Some(Engine::Vllm));
    assert_eq!(log.runs.len(), 1, "one server start");
    &log.runs[0]
}

fn pair<'a>(run: &'a ServerRun, key: &str) -> &'a str {
    let a = run.vllm_args.as_ref().unwrap();
    let (_, v) = a.pairs.iter().find(|(k, _)| k == key).unwrap();
    v
}

/// The `non-default args` dict of each profile: the model resolves to the preset, the layout,
/// the memory and batch settings, the backends and the draft as the page states them.
#[test]
fn the_launch_args_read_as_the_server_ran() {
    for (path, dcp) in [
        (DCP1_MTP0, None),
        (DCP1_MTP1, None),
        (DCP8_STARTUP, Some(8)),
    ] {
        let log = parse(path);
        let run = only_run(&log);
        assert_eq!(run.first_line, 9, "{path}");
        assert!(!run.vllm_args.as_ref().unwrap().truncated);
        let line = run.vllm_line().expect("the args read as a vLLM launch");
        let model = line.model.clone().unwrap();
        assert_eq!(model, "lukealonso/GLM-5.1-NVFP4-MTP");
        assert_eq!(
            models::ModelSpec::resolve(&model).unwrap().name,
            "glm-5.1-nvfp4"
        );
        assert_eq!(run.layout().unwrap().short_name(), "TP8");
        assert_eq!(run.kv_dtype(), Some(models::KvDtype::Fp8));
        let k = line.knobs().unwrap();
        assert_eq!(k.memory_fraction, Some((Engine::Vllm, 0.865)));
        assert_eq!(k.context_length, Some(202_752));
        assert_eq!(k.max_running_requests, Some(64));
        assert_eq!(k.chunked_prefill_size, Some(8192));
        assert_eq!(k.cuda_graph_max_bs, Some(256));
        assert!(!k.disable_cuda_graph);
        assert_eq!(k.decode_context_parallel, dcp, "{path}");
        // proven by later lines, not printed in the dict: graphs outside the KV budget, the
        // community build's PCIe all-reduce
        assert_eq!(k.estimate_cudagraph_memory, Some(false), "{path}");
        assert_eq!(
            k.pcie_all_reduce.map(|p| p.max_bytes),
            Some(Some(56 * 1024))
        );
        assert_eq!(pair(run, "attention_backend"), "'B12X_MLA_SPARSE'");
        assert_eq!(pair(run, "moe_backend"), "'b12x'");
        assert_eq!(pair(run, "quantization"), "'modelopt_fp4'");
        for on in [
            "enable_prefix_caching",
            "async_scheduling",
            "enable_chunked_prefill",
        ] {
            assert_eq!(pair(run, on), "True", "{on}");
        }
        let spec = line.speculative().unwrap();
        if path == DCP1_MTP1 {
            let s = spec.expect("its speculative_config");
            // `method: mtp` names the target itself: the checkpoint's own MTP layer drafts
            assert_eq!((s.algorithm.as_str(), s.num_steps), ("NEXTN", 3));
            assert_eq!((s.num_draft_tokens, s.draft_model_path), (4, None));
        } else {
            assert!(spec.is_none(), "{path}");
        }
    }
}

/// The memory lines, one entry per worker: weights, KV budget and cache, the concurrency line,
/// the captured graphs and vLLM's own graph estimate.
#[test]
fn the_memory_lines_read_per_worker() {
    let gib = |x: f64| (x * GIB).round() as u64;
    let cases = [
        (DCP1_MTP0, 55.67, 19.55, 341_504, 1.68, 1.22, 4.77),
        (DCP1_MTP1, 56.62, 18.51, 319_232, 1.57, 2.39, 6.04),
        (DCP8_STARTUP, 55.67, 19.47, 2_720_768, 13.42, 1.21, 5.10),
    ];
    for (path, weights, kv, tokens, conc, graphs, estimate) in cases {
        let log = parse(path);
        let m = &only_run(&log).memory;
        assert_eq!(m.ranks.len(), 8, "{path}: TP0…TP7");
        assert_eq!(m.weight_bytes(), Some(gib(weights)), "{path}");
        assert_eq!(m.kv_pool_bytes(), Some(gib(kv)), "{path}");
        assert_eq!(m.kv_tokens(), Some(tokens), "{path}");
        let pool = m.pool.as_ref().unwrap();
        assert_eq!(
            (pool.context_len, pool.max_concurrency),
            (Some(202_752), Some(conc))
        );
        assert_eq!(m.cuda_graph_bytes(), Some(gib(graphs)), "{path}");
        assert_eq!(
            m.cuda_graph_estimated_bytes(),
            Some(gib(estimate)),
            "{path}"
        );
        assert_eq!(log.skipped.count_of("malformed"), 0, "{:?}", log.skipped);
    }
}

/// The stats lines of the whole DCP1 run: 53 intervals, their `Running` counts and generation
/// throughput, intervals with prompt work or replaced requests flagged, idle ones kept apart.
#[test]
fn the_stats_lines_are_decode_samples() {
    let log = parse(DCP1_MTP0);
    let run = only_run(&log);
    assert_eq!(run.decode.len(), 53);
    let first = &run.decode[0];
    assert_eq!(
        (first.line, first.running, first.gen_throughput_tok_s),
        (384, 1, 20.6)
    );
    assert!(first.not_steady.contains(&Unsteady::FirstOfRun));
    assert!(first.not_steady.contains(&Unsteady::AfterPrefill));
    let steady = run.decode.iter().find(|s| s.line == 395).unwrap();
    assert!(steady.steady, "{:?}", steady.not_steady);
    assert!((steady.step_s.unwrap() - 1.0 / 58.8).abs() < 1e-9);
    assert_eq!(steady.queue, Some(0));
    assert_eq!(steady.cuda_graph, Some(true), "1 ≤ the 256 captured");
    // 0.2% of the 341,504-token cache
    assert_eq!(steady.tokens_in_kv, 683);
    // one request at 2,049 tokens, then one at 16,392 ten seconds later at 15 tokens/s: another
    // request (its 16k prompt from the prefix cache), not the same one decoding
    let jump = run.decode.iter().find(|s| s.line == 434).unwrap();
    assert_eq!(
        jump.not_steady,
        vec![Unsteady::RequestsReplaced {
            tokens_before: 2049
        }]
    );
    let mut counts: Vec<u32> = run.steady_samples().map(|s| s.running).collect();
    counts.dedup();
    assert_eq!(counts, vec![1, 2, 4, 8, 16, 32, 2, 4, 2]);
    assert_eq!(run.steady_samples().count(), 28);
    let idle = run.decode.iter().filter(|s| s.running == 0).count();
    assert_eq!(idle, 4, "Running: 0 intervals are not samples of a step");
    assert!(run.spec_decode.is_empty());
}

/// vLLM 0.20's `SpecDecoding metrics` line: mean acceptance length, accepted and drafted
/// tokens, the per-position rates; each one's length joins the stats line before it.
#[test]
fn the_new_spec_decoding_lines_read_with_their_lengths() {
    let log = parse(DCP1_MTP1);
    let run = only_run(&log);
    assert_eq!(run.spec_decode.len(), 37);
    let sd = &run.spec_decode[0];
    assert_eq!(sd.mean_acceptance_length, Some(2.83));
    assert_eq!((sd.accepted_tokens, sd.drafted_tokens), (42, 69));
    assert_eq!(sd.per_position, vec![0.826, 0.652, 0.348]);
    assert!(run.spec_decode.iter().all(|s| s.per_position.len() == 3));
    let first = &run.decode[0];
    assert_eq!((first.line, first.accept_len), (491, Some(2.83)));
    let s = run.decode.iter().find(|s| s.line == 515).unwrap();
    // 1 request × 2.74 tokens a step ÷ 99.8 tokens/s
    assert!((s.step_s.unwrap() - 2.74 / 99.8).abs() < 1e-9);
    let mean = vllm::mean_acceptance_length(&run.spec_decode).unwrap();
    assert!((mean - 2.61).abs() < 0.01, "{mean}");
    assert_eq!(log.skipped.count_of("malformed"), 0, "{:?}", log.skipped);
}

/// `validate --server-log` without `--model`: the log's model, its memory plan beside the
/// logged figures, every steady interval's step beside the prediction and the doctor's verdict.
/// The bands hold today's errors: they are misses to report, not targets.
fn validate(path: &str) -> serde_json::Value {
    let out = sim_stdout(&[
        "validate",
        "--machine",
        MACHINE,
        "--server-log",
        path,
        "--format",
        "json",
    ]);
    serde_json::from_str(&out).unwrap()
}

fn memory_error(run: &serde_json::Value, quantity: &str) -> f64 {
    run["memory"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["quantity"] == quantity)
        .unwrap_or_else(|| panic!("{quantity}: {}", run["memory"]))["error_pct"]
        .as_f64()
        .unwrap()
}

/// Steady step errors (%) at `running` requests.
fn step_errors(run: &serde_json::Value, running: u64) -> Vec<f64> {
    run["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["steady"] == true && s["running"] == running)
        .filter_map(|s| s["error_pct"].as_f64())
        .collect()
}

fn within(xs: &[f64], lo: f64, hi: f64) -> bool {
    !xs.is_empty() && xs.iter().all(|x| (lo..=hi).contains(x))
}

/// A steady band: (running, lowest, highest step error %).
type Band = (u64, f64, f64);
/// One profile's errors today: path, weights error %, KV tokens band, median |step error| band,
/// steady bands by running.
type Today = (&'static str, f64, (f64, f64), (f64, f64), &'static [Band]);

#[test]
fn validate_reads_the_glm51_logs_with_todays_misses() {
    let cases: [Today; 2] = [
        (
            DCP1_MTP0,
            -0.1,
            (15.0, 25.0),
            (5.0, 12.0),
            &[
                // vLLM runs GLM-5.1's DSA sparse (twelfth session; it was costed as dense MLA):
                // the indexer's three GEMMs (its bf16 wq_b, replicated) and seven kernels on 78
                // layers add 3.8 ms to one request's step, 20.2 ms predicted against 17.0 logged
                // (−5…+4% before), while two requests' 21.5 ms step is met (−17…−14% before);
                // +10…+22% → +1…+7% since the log's `hf_overrides` index_topk_pattern is read
                // (40 of 78 layers run their own indexer: the 38 others reuse the top-k)
                (1, 0.0, 9.0),
                // −8…+6% → −13…−6% with the log's index_topk_pattern read (too fast now)
                (2, -14.0, 6.0),
                // b12x's dynamic kernel from 128 routed pairs (16 requests at top-8) since the
                // log's `--moe-backend b12x` is read: +15% before, +24% with it; +4% since the
                // MoE reads its 1.2 tokens per touched expert where they lie instead of rounding
                // them down to the 1-token compute fraction (`cost::kernel::KernelCurve::fractions`);
                // the log's step only jumps at 32; −4% since the log's `B12X_MOE_FORCE_A16=1`
                // warning is read (b12x's W4A16 kernels, not the NVFP4 ones whose dynamic
                // kernel was priced: costed as the tables, issue 35)
                // +6% since the indexer is priced (twelfth session)
                (16, 0.0, 10.0),
                // −52% → −8…+6% since the log's engine version (glmkimirebase20260514) names
                // b12x's 9–14 May W4A16 build, whose dynamic kernel runs above 128 routed pairs
                // with 32-row BF16 tiles (`cost::moe::MoeRunner::B12xA16`, priced from b12x's
                // source and the NVFP4 dynamic kernel's dev-pinned rate, not from this log)
                (32, -12.0, 14.0),
            ],
        ),
        (
            DCP1_MTP1,
            -1.8,
            // +28% while vLLM's plan left the drafter out; since the twentieth session its
            // weights come out of the budget and its layer caches in the pool, at the preset's
            // bytes (the MTP layer's routed experts bf16, nvidia's exclusion list: 2.3 GiB a
            // GPU) where this checkpoint's drafter loaded 0.95 GiB (56.62 − 55.67 logged)
            (8.0, 18.0),
            (3.0, 10.0),
            // 4 requests × 4 verified tokens reach b12x's dynamic kernel: +18–23% (5–20% before
            // it), −1…+3% since tokens per touched expert are no longer rounded down, −8…−4%
            // since the W4A16 kernels are costed as the tables (issue 35): the W4A16 MoE's cost
            // from 32 routed pairs per expert-slice GPU is left unmodelled; −48/−57% at 8/32 →
            // −1…+5% / −18…−11% since the 9–14 May W4A16 build's dynamic kernel is priced
            // (32 tokens a step and up: above its 128-pair cutover)
            // −8…−4% → +1…+6% at 4 since DSA's indexer is priced (twelfth session)
            // at 4: −4…+1% since the log's index_topk_pattern is read (38 layers reuse the top-k)
            &[(4, -5.0, 8.0), (8, -6.0, 10.0), (32, -24.0, -6.0)],
        ),
    ];
    for (path, weights, kv, median, bands) in cases {
        let v = validate(path);
        assert_eq!(v["model"], "glm-5.1-nvfp4", "the log's model");
        let run = &v["runs"][0];
        assert_eq!(run["layout"], "TP8");
        // the MTP run's logged weights hold the drafter's layer; the plan's weights are the
        // target's (the drafter's are a reserve beside them)
        assert!((memory_error(run, "weights / GPU") - weights).abs() < 0.3);
        let kv_err = memory_error(run, "KV tokens");
        assert!(
            (kv.0..kv.1).contains(&kv_err),
            "{path}: KV tokens {kv_err:+.1}%"
        );
        assert!(memory_error(run, "CUDA graphs (vLLM's estimate)") < -85.0);
        let m = run["median_abs_error_pct"].as_f64().unwrap();
        assert!((median.0..median.1).contains(&m), "{path}: median {m:.1}%");
        for &(running, lo, hi) in bands {
            let e = step_errors(run, running);
            assert!(within(&e, lo, hi), "{path} at {running}: {e:?}");
        }
        let limit = &run["limits"][0];
        assert_eq!(limit["kind"], "gpu", "{limit}");
        let finding = limit["finding"].as_str().unwrap();
        assert!(finding.contains("at 32 running requests"), "{finding}");
        // the W4A16 dynamic kernel now accounts for the logged step there (it did not: "the
        // log shows time it does not account for" before the 9–14 May build was priced)
        assert!(
            !finding.contains("the log shows time it does not account for"),
            "{finding}"
        );
        assert!(
            limit["try_flags"][0]
                .as_str()
                .unwrap()
                .contains("--max-num-seqs")
        );
    }
    let mtp = validate(DCP1_MTP1);
    let a = &mtp["runs"][0]["acceptance"];
    assert!((a["mean_acceptance_length"].as_f64().unwrap() - 2.61).abs() < 0.01);
}

/// A log whose model is neither a preset, a folder nor in the HF cache: one line naming the log
/// and what to give, exit 2.
#[test]
fn a_logged_model_shardwise_cannot_find_asks_for_model() {
    let text = std::fs::read_to_string(DCP1_MTP0)
        .unwrap()
        .replace("lukealonso/GLM-5.1-NVFP4-MTP", "someone/Unknown-Model");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.log");
    std::fs::write(&path, text).unwrap();
    let log = path.to_str().unwrap();
    let (code, out, err) = sim_output(&["validate", "--machine", MACHINE, "--server-log", log]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("the log's model someone/Unknown-Model; give --model"),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn cut_and_mutated_real_logs_never_panic(
        which in 0usize..3,
        cut in 0usize..160_000,
        edits in proptest::collection::vec((0usize..160_000, any::<u8>()), 0..64),
    ) {
        let path = [DCP1_MTP0, DCP1_MTP1, DCP8_STARTUP][which];
        let mut bytes = std::fs::read(path).unwrap();
        for (at, b) in edits {
            if at < bytes.len() {
                bytes[at] = b;
            }
        }
        bytes.truncate(cut.min(bytes.len()));
        let text = String::from_utf8_lossy(&bytes);
        let log = server_log::parse_any(&text, "cut.log");
        for run in &log.runs {
            for d in &run.decode {
                if let Some(s) = d.step_s {
                    prop_assert!(s.is_finite() && s > 0.0);
                }
            }
            let _ = run.vllm_line().map(|l| l.knobs());
            let _ = vllm::mean_acceptance_length(&run.spec_decode);
        }
        serde_json::to_string(&log).unwrap();
    }
}
