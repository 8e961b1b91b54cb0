//! `read::load` on bench_serving output in the real formats of SGLang's source (fixtures
//! under `tests/fixtures/`, built from the key lists of commits `0033168f` and `00f9ec47`; see
//! the README there: format only, invented numbers).

use sim::bench_serving::read::{self, LengthHints, MeasuredSet, ReadError};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn load(name: &str) -> MeasuredSet {
    read::load(&fixture(name), LengthHints::default()).expect("fixture loads")
}

#[test]
fn monolith_layout_with_infinity_request_rate_is_read() {
    let s = load("bench_serving_monolith_0033168f.jsonl");
    assert!(s.skipped.is_empty(), "{:?}", s.skipped);
    assert_eq!(s.points.len(), 2);
    let p = &s.points[0];
    // `"request_rate": Infinity` is Python's spelling of inf: closed loop, all sent at once.
    assert_eq!(p.workload.request_rate, None);
    assert_eq!(p.workload.max_concurrency, Some(64));
    assert_eq!(p.workload.num_prompts, 256);
    assert_eq!(p.workload.random_input_len, 1300);
    assert_eq!(p.workload.random_output_len, 1000);
    assert_eq!(p.workload.random_range_ratio, 1.0);
    assert_eq!(p.metrics.duration, Some(1137.81));
    // No `total_throughput` key in this layout: input + output throughput.
    let total = p.metrics.total_throughput.unwrap();
    assert!(
        (total - (332800.0 + 256000.0) / 1137.81).abs() < 1e-6,
        "{total}"
    );
    assert_eq!(p.metrics.mean_ttft_ms, Some(9210.4));
    assert_eq!(p.metrics.median_tpot_ms, Some(246.1));
    assert_eq!(s.points[1].workload.max_concurrency, Some(1));
    assert!(s.points[0].source.ends_with(":1") && s.points[1].source.ends_with(":2"));
}

#[test]
fn package_layout_with_server_info_and_finite_rate_is_read() {
    let s = load("bench_serving_package_00f9ec47.jsonl");
    assert!(s.skipped.is_empty(), "{:?}", s.skipped);
    assert_eq!(s.points.len(), 2);
    let p = &s.points[0];
    assert_eq!(p.workload.max_concurrency, Some(64));
    // The flag, not the recorded prompt_len (1299: special tokens removed client-side).
    assert_eq!(p.workload.random_input_len, 1300);
    let total = p.metrics.total_throughput.unwrap();
    assert!((total - (256.0 * 1299.0 + 256000.0) / 1137.81).abs() < 1e-6);
    let q = &s.points[1];
    assert_eq!(q.workload.request_rate, Some(2.0));
    assert_eq!(q.workload.max_concurrency, None);
    assert_eq!(q.workload.random_range_ratio, 0.5);
    assert_eq!(q.workload.random_input_len, 1024);
    assert_eq!(q.workload.num_prompts, 512);
    assert_eq!(q.metrics.mean_itl_ms, Some(71.3));
}

#[test]
fn partial_file_keeps_good_lines_and_says_why_others_were_skipped() {
    let s = load("bench_serving_partial.jsonl");
    assert_eq!(s.points.len(), 2, "{:?}", s.skipped);
    assert_eq!(s.skipped.len(), 2, "{:?}", s.skipped);
    assert!(
        s.skipped[0].contains("partial.jsonl:2") && s.skipped[0].contains("`output_throughput`"),
        "{}",
        s.skipped[0]
    );
    assert!(
        s.skipped[1].contains("partial.jsonl:4") && s.skipped[1].contains("truncated"),
        "{}",
        s.skipped[1]
    );
    // The ShareGPT run: its random_* keys are the unused defaults, the means are what ran.
    let share = &s.points[1];
    assert_eq!(share.workload.random_input_len, 227);
    assert_eq!(share.workload.random_output_len, 190);
    assert_eq!(share.workload.random_range_ratio, 1.0);
}

#[test]
fn printed_summary_blocks_of_both_layouts_are_read() {
    let s = load("bench_serving_summary.txt");
    assert!(s.skipped.is_empty(), "{:?}", s.skipped);
    assert_eq!(s.points.len(), 2);
    let a = &s.points[0];
    assert_eq!(a.workload.max_concurrency, Some(64));
    assert_eq!(a.workload.request_rate, None);
    assert_eq!(a.workload.num_prompts, 256);
    assert_eq!(a.workload.random_input_len, 1300);
    assert_eq!(a.metrics.output_throughput, Some(224.99));
    assert_eq!(a.metrics.total_throughput, Some(517.48));
    assert_eq!(a.metrics.median_ttft_ms, Some(8874.2));
    let b = &s.points[1];
    // `Max request concurrency: not set` and `Traffic request rate: 2.0`, inside the block.
    assert_eq!(b.workload.max_concurrency, None);
    assert_eq!(b.workload.request_rate, Some(2.0));
    assert_eq!(b.workload.random_input_len, 768);
    assert_eq!(b.metrics.mean_tpot_ms, Some(71.2));
}

#[test]
fn a_file_of_only_bad_lines_is_an_error_with_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"completed\": 3}\n{\"duration\": 1.0, \"compl").unwrap();
    let err = read::load(path.to_str().unwrap(), LengthHints::default()).unwrap_err();
    assert!(matches!(err, ReadError::Empty { skipped: 2, .. }), "{err}");
    assert!(err.to_string().contains("2 records skipped"), "{err}");
}

fn user_box(id: &str) -> MeasuredSet {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/observations/user-box.json"
    );
    read::load(&format!("{path}#{id}"), LengthHints::default()).expect("user-box loads")
}

/// The user's table said 1 / 8 / 32 / 64 while the server ran 2 / 16 / 64 / 128: the reader takes
/// `requests_in_flight` and warns about the label with Little's law's number (536 tok/s × 12 s ÷
/// 100 tokens = 64 in flight where 32 was written).
#[test]
fn user_box_sweep_uses_requests_in_flight_and_catches_the_label() {
    let s = user_box("glm47-fp8-tp8-sweep");
    let conc: Vec<_> = s
        .points
        .iter()
        .map(|p| p.workload.max_concurrency)
        .collect();
    assert_eq!(conc, [Some(2), Some(16), Some(64), Some(128)]);
    assert_eq!(s.points[2].workload.num_prompts, 64);
    let implied = read::littles_law::implied_in_flight(&s.points[2]).unwrap();
    assert!((implied - 64.32).abs() < 0.01, "{implied}");
    let w = s.warnings.iter().find(|w| w.contains("[2]")).unwrap();
    assert!(
        w.contains("labelled concurrency 32") && w.contains("64 requests") && w.contains("64.3"),
        "{w}"
    );
    // Little's law on the first two rounds contradicts even requests_in_flight: the table's
    // latency is a whole round's time, not a request's (16 waves of 2).
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("[0]: concurrency 2") && w.contains("17.3")),
        "{:?}",
        s.warnings
    );
    println!("{:#?}", s.warnings);
}

/// A file with the old `concurrency` key (the label) would have been caught by Little's law.
#[test]
fn the_old_mislabelled_table_is_caught_by_littles_law() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old-box.json");
    std::fs::write(
        &path,
        r#"{"runs": [{"id": "sweep", "workload": {"input_len": 61, "output_len": 100},
        "points": [{"throughput_tok_s": 536, "avg_latency_s": 12, "concurrency": 32},
                   {"throughput_tok_s": 1028, "avg_latency_s": 12, "concurrency": 64}]}]}"#,
    )
    .unwrap();
    let s = read::load(&format!("{}#sweep", path.display()), LengthHints::default()).unwrap();
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    assert!(
        s.warnings[0].contains("concurrency 32")
            && s.warnings[0].contains("64.3 requests were in flight"),
        "{}",
        s.warnings[0]
    );
}

#[test]
fn bench_jsonl_points_are_checked_when_latency_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.jsonl");
    // 64 requests in 100 s at 50 s mean latency: 32 in flight; one says 32, one says 16.
    let line = |c: u32| {
        format!(
            r#"{{"completed": 64, "duration": 100.0, "output_throughput": 64.0, "max_concurrency": {c}, "random_input_len": 100, "random_output_len": 100, "mean_e2e_latency_ms": 50000.0}}"#
        )
    };
    std::fs::write(&path, format!("{}\n{}\n", line(32), line(16))).unwrap();
    let s = read::load(path.to_str().unwrap(), LengthHints::default()).unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(
        s.warnings[0].contains(":2: concurrency 16") && s.warnings[0].contains("32.0 requests"),
        "{}",
        s.warnings[0]
    );
}
