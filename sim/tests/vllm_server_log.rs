//! vLLM's own server log (`sim::server_log::vllm`): the synthetic fixture built from vLLM's
//! formats (`sim/tests/fixtures/README.md`) read into the same typed values as an SGLang log,
//! then checked, calibrated and diagnosed by `sim validate/calibrate --server-log`; arbitrary,
//! cut and mutated input never panics.

use crate::common;

use common::sim_stdout;
use proptest::prelude::*;
use sim::engine::Engine;
use sim::server_log::{self, ServerLog, Unsteady, vllm};

const GIB: f64 = (1u64 << 30) as f64;
const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/vllm_server_synthetic.log"
);
const BOX: [&str; 4] = [
    "--machine",
    "rtx-pro-6000-x8-vm-hostbounce",
    "--model",
    "kimi-k2-thinking-int4",
];

fn fixture() -> ServerLog {
    server_log::load(std::path::Path::new(LOG)).unwrap()
}

#[test]
fn the_startup_lines_become_the_run_and_its_memory() {
    let log = fixture();
    assert_eq!(log.engine, Some(Engine::Vllm));
    assert_eq!(log.runs.len(), 1);
    let run = &log.runs[0];
    assert_eq!(
        run.first_line, 3,
        "the non-default args line starts the run"
    );
    let layout = run.layout().expect("tensor_parallel_size 8");
    assert_eq!(layout.short_name(), "TP8");
    assert_eq!(run.kv_dtype(), Some(models::KvDtype::Fp8));
    let line = run.vllm_line().unwrap();
    assert_eq!(line.model.as_deref(), Some("moonshotai/Kimi-K2-Thinking"));
    let spec = line.speculative().unwrap().expect("its speculative_config");
    // an EAGLE-3 head (Kimi has no MTP layers to draft with: the fixture's `mtp` method would
    // be refused, issue 36)
    assert_eq!((spec.num_steps, spec.algorithm.as_str()), (3, "EAGLE3"));
    assert_eq!(
        spec.draft_model_path.as_deref(),
        Some("lightseekorg/kimi-k2.5-eagle3")
    );
    let m = &run.memory;
    assert_eq!(m.ranks.len(), 8, "one memory entry per worker");
    assert_eq!(m.weight_bytes(), Some((71.64 * GIB).round() as u64));
    assert_eq!(m.kv_pool_bytes(), Some((15.67 * GIB).round() as u64));
    assert_eq!(m.kv_tokens(), Some(478_992));
    assert_eq!(m.cuda_graph_bytes(), Some((0.62 * GIB).round() as u64));
    let pool = m.pool.as_ref().unwrap();
    assert_eq!(pool.context_len, Some(262_144));
    assert_eq!(pool.max_concurrency, Some(1.83));
}

#[test]
fn stats_lines_are_decode_samples_with_the_measured_acceptance() {
    let log = fixture();
    let run = &log.runs[0];
    assert_eq!(run.decode.len(), 19);
    assert_eq!(run.spec_decode.len(), 19);
    let first = &run.decode[0];
    assert!(first.not_steady.contains(&Unsteady::FirstOfRun));
    assert!(
        first.not_steady.contains(&Unsteady::AfterPrefill),
        "prompt throughput 12800 tokens/s: prefill ran in the interval"
    );
    let s = &run.decode[1];
    assert!(s.steady, "{:?}", s.not_steady);
    assert_eq!((s.running, s.queue), (64, Some(0)));
    assert_eq!(s.cuda_graph, Some(true), "64 ≤ the 512 captured");
    assert_eq!(s.accept_len, Some(2.61));
    // 64 requests × 2.61 tokens ÷ 4176 tokens/s
    assert!((s.step_s.unwrap() - 0.040).abs() < 1e-4, "{:?}", s.step_s);
    assert_eq!(s.tokens_in_kv, (0.146 * 478_992.0f64).round() as u64);
    let last = run.decode.last().unwrap();
    assert_eq!((last.running, last.queue), (180, Some(320)));
    assert_eq!(last.token_usage, Some(0.978));
    assert_eq!(run.steady_samples().count(), 16);
    let mean = vllm::mean_acceptance_length(&run.spec_decode).unwrap();
    assert!((mean - 2.61).abs() < 0.005, "{mean}");
    assert_eq!(run.spec_decode[1].per_position, vec![0.8, 0.53, 0.28]);
    assert_eq!(log.skipped.count_of("malformed"), 0, "{:?}", log.skipped);
}

/// Lines of several vLLM versions and spellings: no process prefix, milliseconds, a stats
/// line without the engine index, the older speculative line without lengths, the KV size
/// and concurrency on one line.
#[test]
fn other_versions_spellings() {
    let text = "\
INFO 11-20 08:00:00 [utils.py:233] non-default args: {'model': 'x/y', 'tensor_parallel_size': 4, 'enforce_eager': True, 'compilation_config': {'cudagraph_mode': None}}
INFO 11-20 08:00:09.250 [kv_cache_utils.py:1087] GPU KV cache size: 1,234 tokens, Maximum concurrency for 1,000 tokens per request: 1.23x
INFO 11-20 08:00:10 [loggers.py:116] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 100.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 50.0%
INFO 11-20 08:00:10 [metrics.py:70] SpecDecoding metrics: Draft acceptance rate: 60.0%, Accepted: 60 tokens, Drafted: 100 tokens
WARNING 11-20 08:00:20 [loggers.py:116] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1x0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 50.0%
INFO 11-20 08:00:30 [loggers.py:116] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 100.0 tokens/s, Running: 4
";
    let log = server_log::parse_any(text, "versions.log");
    assert_eq!(log.engine, Some(Engine::Vllm));
    let run = &log.runs[0];
    assert_eq!(run.layout().unwrap().short_name(), "TP4");
    assert_eq!(run.memory.kv_tokens(), Some(1_234));
    assert_eq!(run.memory.pool.as_ref().unwrap().context_len, Some(1_000));
    assert_eq!(run.decode.len(), 1);
    let d = &run.decode[0];
    assert_eq!(d.cuda_graph, Some(false), "--enforce-eager");
    assert_eq!((d.tokens_in_kv, d.accept_len), (617, None));
    assert!((d.step_s.unwrap() - 0.04).abs() < 1e-9);
    assert_eq!(run.spec_decode[0].mean_acceptance_length, None);
    assert_eq!(log.skipped.count_of("malformed"), 2, "{:?}", log.skipped);
}

#[test]
fn validate_checks_the_memory_and_names_the_kv_bound() {
    let mut args: Vec<&str> = vec!["validate"];
    args.extend(BOX);
    args.extend(["--server-log", LOG]);
    // the diagnosis is matched a phrase at a time, unwrapped
    let (code, out, err) = common::sim_output_at(&args, Some(common::UNWRAPPED));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("moonshotai/Kimi-K2-Thinking as TP8"), "{out}");
    for row in ["weights / GPU", "KV pool / GPU", "KV tokens", "CUDA graphs"] {
        assert!(out.contains(row), "{row}: {out}");
    }
    assert!(
        out.contains("mean acceptance length 2.61 (per draft position 0.800, 0.530, 0.280)"),
        "{out}"
    );
    let l = &out[out.find("what limits this server:").expect("a diagnosis")..];
    assert!(
        l.contains("KV-bound: the pool was 98% full at 180 running requests; its 478992 tokens"),
        "{l}"
    );
    assert!(l.contains("vLLM allocates blocks as requests grow"), "{l}");
    assert!(l.contains("--gpu-memory-utilization above 0.94"), "{l}");
    assert!(
        l.contains("--kv-cache-dtype fp8") && !l.contains("--mem-fraction-static"),
        "{l}"
    );
}

#[test]
fn calibrate_fits_the_logged_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let mut args: Vec<&str> = vec!["calibrate"];
    args.extend(BOX);
    args.extend(["--server-log", LOG, "--output", cal.to_str().unwrap()]);
    let out = sim_stdout(&args);
    assert!(
        out.contains("server log: 180 running, CUDA graph (6 samples)"),
        "{out}"
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    assert!(written.get("knobs").is_some(), "{written}");
}

fn check_invariants(log: &ServerLog) {
    for run in &log.runs {
        for d in &run.decode {
            if let Some(s) = d.step_s {
                assert!(s.is_finite() && s > 0.0, "{d:?}");
            }
            assert!(d.context_per_request.is_finite());
        }
        let _ = run.layout();
        let _ = run.kv_dtype();
        let _ = vllm::mean_acceptance_length(&run.spec_decode);
    }
    serde_json::to_string(log).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let text = String::from_utf8_lossy(&bytes);
        check_invariants(&vllm::parse(&text, "fuzz.log"));
    }

    #[test]
    fn arbitrary_lines_in_vllm_format_never_panic(
        lines in proptest::collection::vec(
            ("(\\((EngineCore|Worker|APIServer)(_(DP|TP|PP)[0-9]{1,2}){0,2} pid=[0-9]{1,4}\\) )?(INFO|WARNING) [01][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9] \\[[a-z_]{1,12}\\.py:[0-9]{1,4}\\] ",
             prop_oneof![
                "(Engine 00[0-9]: )?Avg prompt throughput: [0-9.,]{0,8} tokens/s, [A-Za-z :%0-9.,/]{0,140}",
                "SpecDecoding metrics: [A-Za-z :%0-9.,/-]{0,160}",
                "non-default args: \\{[a-z_':0-9 ,{}\\[\\]TrueFalsNn.]{0,120}",
                "(Model loading took|Available KV cache memory:|GPU KV cache size:|Maximum concurrency for|Graph capturing finished in) [0-9.,]{0,8}[ a-zA-Z:0-9.,]{0,40}",
                ".{0,80}",
             ]),
            0..40)
    ) {
        let text: String = lines.into_iter().map(|(h, m)| format!("{h}{m}\n")).collect();
        check_invariants(&vllm::parse(&text, "fuzz.log"));
    }

    #[test]
    fn cut_and_mutated_copies_of_the_fixture_never_panic(
        cut in 0usize..12_000,
        edits in proptest::collection::vec((0usize..12_000, any::<u8>()), 0..64),
    ) {
        let mut bytes = std::fs::read(LOG).unwrap();
        for (at, b) in edits {
            if at < bytes.len() {
                bytes[at] = b;
            }
        }
        bytes.truncate(cut.min(bytes.len()));
        let text = String::from_utf8_lossy(&bytes);
        check_invariants(&server_log::parse_any(&text, "cut.log"));
    }
}

/// Lines of a real vLLM start-up log, as printed (rtx6kpro
/// `models/glm5.1/benchmarks/glm51-v2-full-68b3569f-20260514/glm-dcp1-mtp0/startup.log` @
/// d6cb558, vLLM 0.20.2rc1): enum reprs inside `compilation_config`, `max_cudagraph_capture_size`
/// as a flag of its own, interleaved worker prefixes.
const GLM51_STARTUP: &str = r#"(APIServer pid=1) INFO 05-15 03:30:49 [utils.py:240] non-default args: {'model_tag': 'lukealonso/GLM-5.1-NVFP4-MTP', 'enable_auto_tool_choice': True, 'tool_call_parser': 'glm47', 'host': '0.0.0.0', 'port': 5264, 'model': 'lukealonso/GLM-5.1-NVFP4-MTP', 'trust_remote_code': True, 'max_model_len': 202752, 'quantization': 'modelopt_fp4', 'served_model_name': ['GLM-5'], 'hf_overrides': {'index_topk_pattern': 'FFSF'}, 'load_format': 'fastsafetensors', 'attention_backend': 'B12X_MLA_SPARSE', 'reasoning_parser': 'glm45', 'tensor_parallel_size': 8, 'gpu_memory_utilization': 0.865, 'kv_cache_dtype': 'fp8', 'enable_prefix_caching': True, 'mm_processor_cache_gb': 0.0, 'max_num_batched_tokens': 8192, 'max_num_seqs': 64, 'enable_chunked_prefill': True, 'async_scheduling': True, 'max_cudagraph_capture_size': 256, 'moe_backend': 'b12x', 'compilation_config': {'mode': None, 'cache_dir': '', 'custom_ops': [], 'cudagraph_mode': None, 'pass_config': {'fuse_allreduce_rms': True}, 'max_cudagraph_capture_size': None, 'dynamic_shapes_config': {'type': <DynamicShapesType.BACKED: 'backed'>, 'evaluate_guards': False}, 'static_all_moe_layers': []}}
(Worker pid=353) (Worker pid=354) (Worker pid=356) WARNING 05-15 03:31:20 [symm_mem.py:66] SymmMemCommunicator: Device capability 12.0 not supported, communicator is not available.
(Worker_TP0 pid=350) INFO 05-15 03:32:07 [gpu_model_runner.py:5448] Model loading took 55.67 GiB memory and 44.557197 seconds
(Worker_TP0 pid=350) INFO 05-15 03:33:17 [gpu_worker.py:462] Available KV cache memory: 19.55 GiB
(EngineCore pid=310) INFO 05-15 03:33:18 [kv_cache_utils.py:1731] GPU KV cache size: 341,504 tokens
(EngineCore pid=310) INFO 05-15 03:33:18 [kv_cache_utils.py:1732] Maximum concurrency for 202,752 tokens per request: 1.68x
(Worker_TP0 pid=350) INFO 05-15 03:34:34 [gpu_model_runner.py:7232] Graph capturing finished in 33 secs, took 1.22 GiB
(APIServer pid=1) INFO:     127.0.0.1:37526 - "GET /v1/models HTTP/1.1" 200 OK
"#;

/// With `--kv-cache-memory-bytes` vLLM prints the cache it reserved instead of an "Available KV
/// cache memory" line (`Worker.determine_available_memory`, local-inference-lab/vllm
/// @28be48fa, its f-string as printed with `format_gib`'s two decimals); the launch's flag and the
/// line read alike.
#[test]
fn a_given_kv_cache_reads_from_its_reserved_line() {
    let log = GLM51_STARTUP
        .replace("'max_num_seqs': 64,", "'max_num_seqs': 64, 'kv_cache_memory_bytes': 21474836480,")
        .replace(
            "Available KV cache memory: 19.55 GiB",
            "Initial free memory 94.12 GiB, reserved 20.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization config. Only use kv_cache_memory_bytes config when you want manual control of KV cache memory size. If OOM'ed, check the difference of initial free memory between the current run and the previous run where kv_cache_memory_bytes is suggested and update it correspondingly.",
        );
    let log = server_log::parse_any(&log, "startup.log");
    let run = &log.runs[0];
    let k = run.vllm_line().unwrap().knobs().unwrap();
    assert_eq!(k.kv_cache_memory_bytes, Some(20 << 30));
    assert_eq!(run.memory.kv_pool_bytes(), Some(20 << 30));
    assert_eq!(log.skipped.count_of("malformed"), 0, "{:?}", log.skipped);
}

#[test]
fn a_real_startup_log_reads_its_launch_and_memory() {
    let log = server_log::parse_any(GLM51_STARTUP, "startup.log");
    assert_eq!(log.engine, Some(Engine::Vllm));
    let run = &log.runs[0];
    let line = run.vllm_line().expect("the args read as a vLLM launch");
    assert_eq!(line.model.as_deref(), Some("lukealonso/GLM-5.1-NVFP4-MTP"));
    let k = line.knobs().unwrap();
    assert_eq!(k.cuda_graph_max_bs, Some(256), "the flag of its own");
    assert!(!k.disable_cuda_graph);
    assert_eq!(k.max_running_requests, Some(64));
    assert_eq!(k.chunked_prefill_size, Some(8192));
    assert_eq!(run.layout().unwrap().short_name(), "TP8");
    assert_eq!(run.kv_dtype(), Some(models::KvDtype::Fp8));
    let m = &run.memory;
    assert_eq!(m.weight_bytes(), Some((55.67 * GIB).round() as u64));
    assert_eq!(m.kv_pool_bytes(), Some((19.55 * GIB).round() as u64));
    assert_eq!(m.kv_tokens(), Some(341_504));
    assert_eq!(m.cuda_graph_bytes(), Some((1.22 * GIB).round() as u64));
    assert_eq!(log.skipped.count_of("malformed"), 0, "{:?}", log.skipped);
    assert_eq!(log.skipped.count_of("foreign"), 0, "{:?}", log.skipped);
    // no stats line: `--server-log` says so in one line
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("startup.log");
    std::fs::write(&path, GLM51_STARTUP).unwrap();
    let err = server_log::load(&path).unwrap_err();
    assert!(
        matches!(
            err,
            server_log::ServerLogError::NoSample {
                engine: sim::engine::Engine::Vllm,
                ..
            }
        ),
        "{err}"
    );
}
