//! The SGLang server log reader on the user's real log (data/observations/logs/) and on
//! arbitrary, cut and mutated input: never a panic, and the figures the log states.

use proptest::prelude::*;
use sim::engine::sglang::args::flags::{
    CHUNKED_PREFILL_SIZE, CONTEXT_LENGTH, DISABLE_CUDA_GRAPH, DP_SIZE, MEM_FRACTION_STATIC,
    PP_SIZE, TP_SIZE,
};
use sim::server_log::{self, RankTag, ServerLogError, Unsteady};
use std::collections::BTreeMap;

const GIB: f64 = (1u64 << 30) as f64;

fn log_path() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/observations/logs/glm47-fp8-tp8-calibration.log"
    ))
}

fn log_text() -> String {
    std::fs::read_to_string(log_path()).unwrap()
}

fn user_box_steps_ms() -> Vec<(u32, f64)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/observations/user-box.json"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let run = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "glm47-fp8-tp8-sweep")
        .unwrap();
    run["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["requests_in_flight"].as_u64().unwrap() as u32,
                p["server_decode_step_ms"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_users_log_reads_as_one_tp8_run() {
    let log = server_log::load(&log_path()).unwrap();
    assert_eq!(log.schema_version, server_log::SERVER_LOG_SCHEMA_VERSION);
    assert_eq!(log.lines, 390);
    assert_eq!(log.runs.len(), 1);
    let run = &log.runs[0];
    let args = run.server_args.as_ref().unwrap();
    assert!(!args.truncated);
    assert_eq!(args.pairs.len(), 319, "every ServerArgs field");
    assert_eq!(
        args.get(&sim::engine::sglang::args::flags::MODEL_PATH),
        Some("'zai-org/GLM-4.7-FP8'")
    );
    assert_eq!(
        (
            args.size(&TP_SIZE),
            args.size(&PP_SIZE),
            args.size(&DP_SIZE)
        ),
        (8, 1, 1)
    );
    assert!(args.on(&DISABLE_CUDA_GRAPH));
    assert_eq!(args.decode_log_interval(), 40);
    assert_eq!(args.float(&MEM_FRACTION_STATIC), Some(0.848));
    assert_eq!(args.int(&CONTEXT_LENGTH), None);
    assert_eq!(args.int(&CHUNKED_PREFILL_SIZE), Some(8192));
    assert!(
        raw(args, "cuda_graph_bs")
            .unwrap()
            .starts_with("[1, 2, 4, 8, 12,")
    );
    assert_eq!(raw(args, "mm_process_config"), Some("{}"));
    assert_eq!(args.pairs.last().unwrap().0, "forward_hooks");
    // 50 decode and 40 prefill lines; 256 HTTP access lines and one INFO line are noise.
    assert_eq!((run.decode.len(), run.prefill.len()), (50, 40));
    assert_eq!(log.skipped.count_of("noise"), 257);
    assert_eq!(log.skipped.count_of("foreign"), 0);
    assert_eq!(log.skipped.count_of("malformed"), 0);
    assert!(run.decode.iter().all(|d| d.rank
        == RankTag {
            tp: Some(0),
            ..RankTag::default()
        }));
    assert!(run.decode.iter().all(|d| d.cuda_graph == Some(false)));
}

#[test]
fn memory_lines_per_rank_in_bytes() {
    let log = server_log::load(&log_path()).unwrap();
    let m = &log.runs[0].memory;
    assert_eq!(m.ranks.len(), 8);
    assert_eq!(m.lines, 42);
    assert!(!m.ranks_differ());
    let gib = |b: Option<u64>| b.unwrap() as f64 / GIB;
    assert!((gib(m.weight_bytes()) - 41.90).abs() < 0.005);
    assert!((gib(m.available_before_load_bytes()) - 94.13).abs() < 0.005);
    assert!((gib(m.kv_pool_bytes()) - 37.92).abs() < 0.005);
    assert!((gib(m.available_after_pool_bytes()) - 12.48).abs() < 0.005);
    assert_eq!(m.kv_tokens(), Some(864_247));
    let pool = m.pool.as_ref().unwrap();
    assert_eq!(pool.max_running_requests, Some(2182));
    assert_eq!(pool.context_len, Some(202_752));
    assert_eq!(m.ranks[0].kv_sizes[0].0, "K");
    assert_eq!(log.runs[0].kv_dtype(), Some(models::KvDtype::Bf16));
    assert_eq!(log.runs[0].layout(), Some(models::Layout::tp(8)));
}

/// The steady samples give the step times the user's table records (`server_decode_step_ms`,
/// the mean of the steady lines at each load).
#[test]
fn steady_decode_samples_give_the_recorded_step_times() {
    let log = server_log::load(&log_path()).unwrap();
    let run = &log.runs[0];
    let mut by_running: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for s in run.steady_samples() {
        by_running
            .entry(s.running)
            .or_default()
            .push(s.step_s.unwrap() * 1e3);
    }
    for (running, want_ms) in user_box_steps_ms() {
        let v = &by_running[&running];
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "{running} requests: {} steady samples, mean step {mean:.2} ms (table {want_ms})",
            v.len()
        );
        assert!(
            (mean / want_ms - 1.0).abs() < 0.002,
            "{running}: {mean} vs {want_ms}"
        );
    }
    // Every first line after a prefill is flagged, and kept.
    let first = &run.decode[0];
    assert!(!first.steady);
    assert!(first.not_steady.contains(&Unsteady::FirstOfRun));
    assert!(first.not_steady.contains(&Unsteady::AfterPrefill));
    assert_eq!(
        run.steady_samples().count() + run.flagged_samples().count(),
        50
    );
    assert_eq!(run.steady_samples().count(), 30);
    // the 16-request round's first line: the throughput interval covered the prefill
    let s = run.decode.iter().find(|d| d.running == 16).unwrap();
    assert!(
        s.not_steady
            .contains(&Unsteady::BatchChanged { previous: 2 })
    );
    // a sample's batch: 128 requests at #token / running
    let b = run.decode.iter().rev().find(|d| d.running == 128).unwrap();
    let batch = b.iteration_batch();
    assert_eq!(batch.decode_context_tokens.len(), 128);
    assert_eq!(
        batch.decode_context_tokens[0],
        (18_188.0f64 / 128.0).round() as u32
    );
}

#[test]
fn prefill_samples_count_prefix_cache_hits() {
    let log = server_log::load(&log_path()).unwrap();
    let p = log.runs[0]
        .prefill
        .iter()
        .find(|p| p.new_seq == 127)
        .unwrap();
    assert_eq!((p.new_tokens, p.cached_tokens), (3199, 4548));
    assert!((p.cache_hit_fraction() - 4548.0 / 7747.0).abs() < 1e-12);
}

#[test]
fn several_runs_pp_and_dp_tags_and_progress_bars() {
    let text = log_text();
    let pp = concat!(
        "Loading safetensors checkpoint shards:  50% Completed | 1/2\rLoading safetensors checkpoint shards: 100% Completed | 2/2\n",
        "[2026-02-01 10:00:00] server_args=ServerArgs(tp_size=4, pp_size=2, enable_dp_attention=False, decode_log_interval=40)\n",
        "[2026-02-01 10:00:09 PP0 TP0] Prefill batch, #new-seq: 8, #new-token: 512, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, \n",
        "[2026-02-01 10:00:10 PP0 TP0] Decode batch, #running-req: 8, #token: 600, token usage: 0.00, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0, \n",
        "[2026-02-01 10:00:10 PP1 TP0] Decode batch, #running-req: 8, #token: 600, token usage: 0.00, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0, \n",
        "[2026-02-01 10:00:13 PP0 TP0] Decode batch, #running-req: 8, #token: 920, token usage: 0.00, cuda graph: True, gen throughput (token/s): 320.00, #queue-req: 0, \n",
        "[2026-02-01 10:00:13 PP1 TP0] Decode batch, #running-req: 8, #token: 920, token usage: 0.00, cuda graph: True, gen throughput (token/s): 320.00, #queue-req: 0, \n",
        "[2026-02-01 10:00:14 DP1 TP1] Decode batch, #running-req: 3, #token: 90, token usage: 0.00, accept len: 2.50, accept rate: 0.62, cuda graph: True, gen throughput (token/s): 75.00, #queue-req: 0, \n",
    );
    let log = server_log::parse(&format!("{text}{pp}{text}"), "three-runs.log");
    assert_eq!(log.runs.len(), 3);
    assert_eq!(log.runs[1].layout().unwrap().pp, 2);
    assert_eq!(log.runs[1].decode.len(), 5);
    assert_eq!(log.runs[1].first_line, 392);
    // the second PP0 line is steady; PP1 repeats it and is not a reporting rank
    let steady: Vec<_> = log.runs[1].steady_samples().collect();
    assert_eq!(steady.len(), 1);
    assert_eq!(steady[0].rank.pp, Some(0));
    assert!((steady[0].step_s.unwrap() - 8.0 / 320.0).abs() < 1e-12);
    // speculative: tokens per step = running × accept len
    let spec = log.runs[1].decode.last().unwrap();
    assert_eq!(spec.rank.dp, Some(1));
    assert!((spec.step_s.unwrap() - 3.0 * 2.5 / 75.0).abs() < 1e-12);
    assert_eq!(
        log.skipped.count_of("foreign"),
        2,
        "the two progress-bar pieces"
    );
    assert_eq!(log.runs[2].decode.len(), 50);
}

#[test]
fn no_usable_sample_is_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let e = server_log::load(&empty).unwrap_err();
    assert!(matches!(e, ServerLogError::NoSample { .. }));
    let msg = e.to_string();
    assert!(msg.contains("empty.log") && !msg.contains('\n'), "{msg}");
    // the start-up part of the log alone: memory, no decode line
    let startup = dir.path().join("startup.log");
    let head: String = log_text()
        .lines()
        .take(45)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&startup, head).unwrap();
    assert!(
        server_log::load(&startup)
            .unwrap_err()
            .to_string()
            .contains("startup.log")
    );
    let foreign = dir.path().join("foreign.log");
    std::fs::write(
        &foreign,
        "Traceback (most recent call last):\n  File \"x.py\"\n",
    )
    .unwrap();
    let msg = server_log::load(&foreign).unwrap_err().to_string();
    assert!(msg.contains("2 foreign"), "{msg}");
    let missing = server_log::load(&dir.path().join("nope.log")).unwrap_err();
    assert!(matches!(missing, ServerLogError::Io(_)));
}

#[test]
fn a_log_over_the_limit_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.log");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(server_log::MAX_LOG_BYTES + 1).unwrap(); // sparse: nothing is written
    let e = server_log::load(&big).unwrap_err();
    assert!(matches!(e, ServerLogError::TooLarge { .. }), "{e}");
}

#[test]
fn malformed_sample_lines_are_counted_not_taken() {
    let text = concat!(
        "[2026-01-28 22:13:32 TP0] Decode batch, #running-req: 2, #token: 136, token usage: 0.00, cuda graph: False, gen throughput (token/s): 43.24, #queue-req: 0, \n",
        "[2026-01-28 22:13:37 TP0] Decode batch, #running-req: 2, #token: 2\n",
        "[2026-01-28 22:13:41 TP0] Decode batch, #running-req: 2, #token: 296, token usage: 0.00, cuda graph: False, gen throughput (token/s): 1x.13, #queue-req: 0, \n",
        "[2026-01-28 22:13:42] INFO:     127.0.0.1:42766 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
    );
    let log = server_log::parse(text, "m.log");
    assert_eq!(log.runs[0].decode.len(), 1);
    assert_eq!(log.skipped.count_of("malformed"), 2);
    assert_eq!(log.skipped.count_of("noise"), 1);
    let reasons: Vec<&String> = log.skipped.by_reason.keys().collect();
    assert!(
        reasons.iter().any(|r| r.contains("truncated")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("gen throughput")),
        "{reasons:?}"
    );
    assert_eq!(
        log.skipped.by_reason["truncated sample line"].example_lines,
        vec![2]
    );
}

/// Invariants any parse keeps, whatever the input.
fn check_invariants(log: &server_log::ServerLog) {
    for run in &log.runs {
        for d in &run.decode {
            assert_eq!(d.steady, d.not_steady.is_empty());
            if let Some(s) = d.step_s {
                assert!(s.is_finite() && s > 0.0);
            }
            assert!(d.context_per_request.is_finite());
        }
        for p in &run.prefill {
            let h = p.cache_hit_fraction();
            assert!((0.0..=1.0).contains(&h));
        }
    }
    serde_json::to_string(log).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let text = String::from_utf8_lossy(&bytes);
        check_invariants(&server_log::parse(&text, "fuzz.log"));
    }

    #[test]
    fn arbitrary_lines_in_sglang_format_never_panic(
        lines in proptest::collection::vec(
            ("\\[20[0-9]{2}-[01][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9]( (DP|PP|TP|EP)[0-9]{1,3}){0,3}\\] ",
             prop_oneof![
                "Decode batch[,.] [#a-z \\-():0-9.,]{0,120}",
                "Prefill batch[,.] [#a-z \\-():0-9.,]{0,120}",
                "server_args=ServerArgs\\([a-z_=0-9'\\[\\](),. ]{0,120}",
                "(Load weight (begin|end)|Memory pool end|KV Cache is allocated)\\.[ a-zA-Z#:=0-9.,]{0,80}",
                "max_total_num_tokens=[0-9a-z_=., ]{0,80}",
                ".{0,80}",
             ]),
            0..40)
    ) {
        let text: String = lines.into_iter().map(|(h, m)| format!("{h}{m}\n")).collect();
        check_invariants(&server_log::parse(&text, "fuzz.log"));
    }

    #[test]
    fn cut_and_mutated_copies_of_the_real_log_never_panic(
        cut in 0usize..51_536,
        edits in proptest::collection::vec((0usize..51_536, any::<u8>()), 0..64),
    ) {
        let mut bytes = log_text().into_bytes();
        for (at, b) in edits {
            let at = at % bytes.len();
            match b % 3 {
                0 => bytes[at] = b,
                1 => { bytes.remove(at); }
                _ => bytes.insert(at, b),
            }
        }
        bytes.truncate(cut.min(bytes.len()));
        let log = server_log::parse(&String::from_utf8_lossy(&bytes), "mutated.log");
        check_invariants(&log);
        let decode: usize = log.runs.iter().map(|r| r.decode.len()).sum();
        prop_assert!(decode <= 50 + 64);
    }
}

/// The value text of a dump key outside shardwise's flag table.
fn raw<'a>(d: &'a sim::server_log::args::ServerArgsDump, key: &str) -> Option<&'a str> {
    d.pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}
