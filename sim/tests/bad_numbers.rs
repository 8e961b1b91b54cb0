//! Issue 21, "no number misread, no nonsense accepted": every figure of a user's file is read as
//! the number it is, or skipped / refused with a reason that names where it is; every file input
//! has a size limit. Each case runs `sim` as a user would and checks its exit code and message.

use crate::common;

use predicates::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

use common::sim_cmd as sim;

/// A user's own decode measurement naming presets (quick to simulate), with its headline metric
/// and concurrency as given.
fn record(id: &str, output_tok_s: Value, concurrency: Value) -> Value {
    json!({
        "id": id,
        "hardware": {"machine": "h200-x8", "count": 8},
        "engine": {"name": "sglang", "flags": "--tp 8"},
        "model": "deepseek-v3-fp8",
        "parallel": {"tp": 8},
        "workload": {"input_len": 2048, "concurrency": concurrency, "dataset": "llm_decode_bench"},
        "metrics": {"output_tok_s": output_tok_s}
    })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn records_file(dir: &Path, records: Vec<Value>) -> PathBuf {
    write(
        dir,
        "records.json",
        &json!({ "records": records }).to_string(),
    )
}

/// `sim validate --records FILE --format json`: exit 0 and the scoreboard.
fn scoreboard(path: &Path) -> Value {
    let out = sim()
        .args(["validate", "--records"])
        .arg(path)
        .args(["--format", "json"])
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// The (kind, detail) of the counted reason `id` was not compared for.
fn skipped(board: &Value, id: &str) -> (String, String) {
    let u = board["unexpressible"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == id)
        .unwrap_or_else(|| panic!("{id} was compared: {board:#}"));
    let first = &u["reasons"][0];
    (
        first["kind"].as_str().unwrap().to_string(),
        first["detail"].as_str().unwrap().to_string(),
    )
}

#[test]
fn records_figures_are_read_as_the_numbers_written() {
    let dir = tempfile::tempdir().unwrap();
    let spellings = [
        ("1e3", 1000.0),
        ("1.2k", 1200.0),
        ("~1550", 1550.0),
        ("5,154 tok/s", 5154.0),
    ];
    let records = spellings
        .iter()
        .enumerate()
        .map(|(i, (s, _))| record(&format!("r{i}"), json!(s), json!(4)))
        .collect();
    let board = scoreboard(&records_file(dir.path(), records));
    let comparisons = board["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), spellings.len(), "{board:#}");
    for (i, (s, want)) in spellings.iter().enumerate() {
        let c = comparisons
            .iter()
            .find(|c| c["id"] == format!("r{i}"))
            .unwrap();
        assert_eq!(c["measured"].as_f64(), Some(*want), "{s}");
    }
}

#[test]
fn records_figures_that_are_no_measurement_are_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("neg", json!("-50"), "`-50` is negative"),
        ("huge", json!("1e300"), "`1e300` is above"),
        (
            "overflow",
            json!("1e400"),
            "`1e400` is beyond any finite number",
        ),
        ("zero", json!(0), "`0` is zero"),
        ("words", json!("n/a"), "`n/a` holds no number"),
    ];
    let mut records: Vec<Value> = cases
        .iter()
        .map(|(id, v, _)| record(id, v.clone(), json!(4)))
        .collect();
    records.push(record("good", json!("400"), json!(4)));
    let path = records_file(dir.path(), records);
    let board = scoreboard(&path);
    for (id, _, why) in cases {
        let (kind, detail) = skipped(&board, id);
        assert_eq!(kind, "unreadable-value", "{id}: {detail}");
        assert!(
            detail.contains(&format!("record `{id}`")) && detail.contains(why),
            "{id}: {detail}"
        );
    }
    // only the good record enters the statistics
    assert_eq!(board["summary"]["n"], 1, "{board:#}");
    // the table says why, naming the record
    sim()
        .args(["validate", "--records"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("unreadable-value"))
        .stdout(predicate::str::contains(
            "record `neg`: output_tok_s `-50` is negative",
        ));
}

#[test]
fn words_where_a_count_belongs_skip_that_record_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = records_file(
        dir.path(),
        vec![
            record("prose", json!("400"), json!("1 and high (not stated)")),
            record("half", json!("400"), json!(1.5)),
            record("good", json!("400"), json!(4)),
        ],
    );
    let board = scoreboard(&path);
    let (kind, detail) = skipped(&board, "prose");
    assert_eq!(kind, "unreadable-value");
    assert_eq!(
        detail,
        "record `prose`: workload.concurrency `1 and high (not stated)` is not a whole number: it has words beside it"
    );
    assert!(
        skipped(&board, "half")
            .1
            .contains("`1.5` is not a whole number")
    );
    assert_eq!(board["expressible"], 1);
}

#[test]
fn skip_reasons_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let mut no_conc = record("absent", json!("400"), json!(4));
    no_conc["workload"]
        .as_object_mut()
        .unwrap()
        .remove("concurrency");
    let mut tp0 = record("tp0", json!("400"), json!(4));
    tp0["parallel"]["tp"] = json!(0);
    let board = scoreboard(&records_file(
        dir.path(),
        vec![record("zero", json!("400"), json!(0)), no_conc, tp0],
    ));
    assert_eq!(
        skipped(&board, "zero"),
        (
            "missing-workload".into(),
            "concurrency 0: no stream ran".into()
        )
    );
    assert_eq!(skipped(&board, "absent").1, "concurrency not stated");
    assert_eq!(skipped(&board, "tp0").1, "tp 0: no GPU runs the model");
}

#[test]
fn an_empty_records_file_compares_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = records_file(dir.path(), Vec::new());
    for format in ["table", "markdown"] {
        sim()
            .args(["validate", "--records"])
            .arg(&path)
            .args(["--format", format])
            .assert()
            .success()
            .stdout(predicate::str::contains("nothing compared"))
            .stdout(predicate::str::contains("MAPE 0.0%").not());
    }
}

/// `sim validate --measured FILE` of GLM-5 on 8× RTX PRO 6000 (TP8).
fn validate_measured(file: &Path) -> assert_cmd::assert::Assert {
    sim()
        .args([
            "validate",
            "--machine",
            "rtx-pro-6000-x8-baremetal",
            "--model",
            "glm-5-nvfp4",
            "--tp",
            "8",
            "--measured",
        ])
        .arg(file)
        .assert()
}

const CSV_HEADER: &str = "concurrency,input_len,output_len,output_tok_s\n";

#[test]
fn implausible_measured_rows_are_refused_naming_row_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let csv = |row: &str| format!("{CSV_HEADER}64,1000,100,225\n{row}\n");
    let jsonl = |thr: &str| {
        format!(
            r#"{{"completed": 10, "duration": 10.0, "output_throughput": {thr}, "max_concurrency": 1, "random_input_len": 100, "random_output_len": 100}}"#
        )
    };
    let cases = [
        (
            "neg.csv",
            csv("1,1000,100,-50"),
            ":3: output_throughput -50 tok/s is not positive",
        ),
        (
            "nan.csv",
            csv("1,1000,100,NaN"),
            ":3: output_throughput NaN is not a finite number",
        ),
        (
            "inf.csv",
            csv("1,1000,100,inf"),
            ":3: output_throughput inf is not a finite number",
        ),
        (
            "huge.csv",
            csv("1,1000,100,1e300"),
            ":3: output_throughput 1.000e300 tok/s per stream is more than",
        ),
        (
            "fast.csv",
            csv("1,1000,100,50000"),
            ":3: output_throughput 50000 tok/s per stream is more than 702",
        ),
        (
            "words.csv",
            csv("1,1000,100,fast"),
            ":3: output_tok_s `fast` is not a number",
        ),
        (
            "conc0.csv",
            csv("0,1000,100,10"),
            ":3: concurrency 0 is not a count of at least 1",
        ),
        (
            "nan.jsonl",
            jsonl("NaN"),
            ":1: output_throughput NaN is not a finite number",
        ),
        (
            "neg.jsonl",
            jsonl("-50"),
            ":1: output_throughput -50 tok/s is not positive",
        ),
        (
            "inf.jsonl",
            jsonl("Infinity"),
            ":1: output_throughput inf is not a finite number",
        ),
        (
            "fast.jsonl",
            jsonl("50000"),
            ":1: output_throughput 50000 tok/s per stream",
        ),
    ];
    for (name, text, message) in cases {
        let path = write(dir.path(), name, &text);
        validate_measured(&path)
            .code(2)
            .stderr(predicate::str::contains(format!("{name}{message}")))
            .stderr(predicate::str::contains("RMS").not());
    }
    // a plausible file still compares, Python's `Infinity` request rate included
    let ok = write(
        dir.path(),
        "ok.jsonl",
        &jsonl("30").replace("}", r#", "request_rate": Infinity}"#),
    );
    validate_measured(&ok)
        .success()
        .stdout(predicate::str::contains("over 1 values"));
}

/// A calibration of GLM-4.7-FP8 on 8× RTX PRO 6000 in eager mode, as `sim calibrate` writes it.
fn calibration(dir: &Path, knobs: sim::cost::Knobs) -> PathBuf {
    let cal = sim::calibrate::Calibration {
        schema_version: sim::calibrate::CALIBRATION_SCHEMA_VERSION,
        engine: sim::engine::Engine::Sglang,
        knobs,
        fitted: vec![sim::calibrate::KnobParam::Cpu],
        knob_reports: Vec::new(),
        machine: "rtx-pro-6000-x8-baremetal".into(),
        model: "glm-4.7-fp8".into(),
        layout: "TP8".into(),
        server: sim::options::ServerOptions {
            disable_cuda_graph: true,
            ..Default::default()
        },
        measured: vec!["glm47.log".into()],
        observations: Vec::new(),
        rms_log_error_before: 0.1,
        rms_log_error_after: 0.03,
        median_abs_error_pct: 3.0,
    };
    let path = dir.join("cal.json");
    cal.save(&path).unwrap();
    path
}

fn run_with(cal: &Path, machine: &str, model: &str, eager: bool) -> assert_cmd::assert::Assert {
    let mut c = sim();
    // the calibration warnings are matched whole
    c.env("COLUMNS", common::UNWRAPPED)
        .args(["run", "--machine", machine, "--model", model, "--tp", "8"])
        .args(["--num-prompts", "4", "--max-concurrency", "1"])
        .args(["--random-input-len", "100", "--random-output-len", "10"])
        .arg("--calibration")
        .arg(cal);
    if eager {
        c.arg("--disable-cuda-graph");
    }
    c.assert()
}

#[test]
fn calibration_knobs_outside_their_bounds_are_refused() {
    use sim::cost::Knobs;
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            Knobs {
                memory_scale: 0.0,
                ..Knobs::default()
            },
            "memory_scale = 0 is outside its bounds [0.250, ",
        ),
        (
            Knobs {
                comm_time_scale: 1e300,
                ..Knobs::default()
            },
            "comm_time_scale = 1.000e300 is outside its bounds [0.500, 3.000]",
        ),
        (
            Knobs {
                cpu_scale: -3.0,
                ..Knobs::default()
            },
            "cpu_scale = -3 is outside its bounds [0.259, ",
        ),
    ];
    for (knobs, message) in cases {
        let cal = calibration(dir.path(), knobs);
        run_with(&cal, "rtx-pro-6000-x8-baremetal", "glm-4.7-fp8", true)
            .code(2)
            .stderr(predicate::str::contains(message))
            .stdout(predicate::str::is_empty());
    }
}

#[test]
fn a_calibration_applied_elsewhere_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibration(
        dir.path(),
        sim::cost::Knobs {
            cpu_scale: 3.26,
            ..Default::default()
        },
    );
    run_with(&cal, "rtx-pro-6000-x8-baremetal", "glm-4.7-fp8", true)
        .success()
        .stderr(predicate::str::contains("calibration was").not());
    run_with(&cal, "rtx-pro-6000-x8-baremetal", "glm-4.7-fp8", false)
        .success()
        .stderr(predicate::str::contains(
            "the calibration was fitted in eager mode (--disable-cuda-graph), applied in CUDA-graph mode: ",
        ));
    run_with(&cal, "h200-x8", "qwen3-30b-a3b", true)
        .success()
        .stderr(predicate::str::contains(
            "fitted on glm-4.7-fp8, applied to qwen3-30b-a3b; fitted on rtx-pro-6000-x8-baremetal, applied to h200-x8",
        ));
}

#[test]
fn every_file_input_stops_at_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    // a HF folder whose config.json never ends
    let hf = dir.path().join("hf");
    std::fs::create_dir(&hf).unwrap();
    std::os::unix::fs::symlink("/dev/zero", hf.join("config.json")).unwrap();
    // a sparse 3 GB records file: refused from its size, nothing read
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(3_000_000_000)
        .unwrap();
    let hf_s = hf.to_str().unwrap();
    let big_s = big.to_str().unwrap();
    let predict = |extra: &[&str]| {
        let mut v = vec![
            "predict",
            "--machine",
            "h200-x8",
            "--batch",
            "1",
            "--context",
            "100",
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let records = |p: &str| vec!["validate".to_string(), "--records".into(), p.into()];
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            records("/dev/zero"),
            "records file: /dev/zero: a binary file (a NUL byte at byte 0)",
        ),
        (records("/dev/urandom"), "records file: /dev/urandom: "),
        (records(big_s), "is more than the 64 MiB this input may be"),
        (
            [
                "validate",
                "--machine",
                "h200-x8",
                "--model",
                "glm-4.7-fp8",
                "--server-log",
                "/dev/urandom",
            ]
            .map(String::from)
            .to_vec(),
            "server log: /dev/urandom: a binary file",
        ),
        (
            [
                "validate",
                "--machine",
                "h200-x8",
                "--model",
                "glm-4.7-fp8",
                "--measured",
                "/dev/zero",
            ]
            .map(String::from)
            .to_vec(),
            "/dev/zero: a binary file",
        ),
        (
            predict(&["--model", "glm-4.7-fp8", "--server-args-file", "/dev/zero"]),
            "--server-args-file /dev/zero: /dev/zero: a binary file",
        ),
        (predict(&["--model", hf_s]), "config.json: a binary file"),
        (
            [
                "predict",
                "--machine",
                "/dev/zero",
                "--model",
                "glm-4.7-fp8",
                "--batch",
                "1",
                "--context",
                "100",
            ]
            .map(String::from)
            .to_vec(),
            "--machine /dev/zero: /dev/zero: a binary file",
        ),
        (
            [
                "run",
                "--machine",
                "h200-x8",
                "--model",
                "glm-4.7-fp8",
                "--calibration",
                "/dev/zero",
            ]
            .map(String::from)
            .to_vec(),
            "calibration /dev/zero: /dev/zero: a binary file",
        ),
        (
            [
                "validate",
                "--records",
                "../validation/public-records.json",
                "--implied-accept-length",
                "--acceptance",
                "/dev/zero",
            ]
            .map(String::from)
            .to_vec(),
            "acceptance file /dev/zero: /dev/zero: a binary file",
        ),
    ];
    for (args, message) in cases {
        let started = std::time::Instant::now();
        sim()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&args)
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(message));
        assert!(
            started.elapsed().as_secs() < 20,
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
}

/// A launch setting stated with a value the engine's launch refuses (`--mem-fraction-static 1.2`,
/// `GPU_MEM=NaN`) skips that record with the reason, instead of being left unread and the engine's
/// default priced in its place.
#[test]
fn a_launch_setting_the_engine_would_refuse_skips_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let with_flags = |id: &str, flags: &str| {
        let mut r = record(id, json!("400"), json!(4));
        r["engine"]["flags"] = json!(flags);
        r
    };
    let path = records_file(
        dir.path(),
        vec![
            with_flags("over", "--tp 8 --mem-fraction-static 1.2"),
            with_flags("variable", "--tp 8 --cuda-graph-max-bs $BS"),
            with_flags("good", "--tp 8 --mem-fraction-static 0.85"),
        ],
    );
    let board = scoreboard(&path);
    let (kind, detail) = skipped(&board, "over");
    assert_eq!(kind, "unreadable-value");
    assert_eq!(
        detail,
        "record `over`: engine.flags `--mem-fraction-static 1.2: must be a fraction in (0, 1], e.g. 0.85` (sglang would refuse that value, so the setting cannot be read; correct it in the record)"
    );
    assert!(
        skipped(&board, "variable")
            .1
            .contains("--cuda-graph-max-bs $BS: is not an integer")
    );
    assert_eq!(board["expressible"], 1, "{board:#}");
}

/// A measured acceptance length above the tokens a step verifies (a rate or a per-position sum
/// put where a length belongs) skips its record with the reason instead of being clamped to the
/// verified count and priced as measured; an acceptance file's id that no record has is said on
/// stderr, not passed over.
#[test]
fn an_acceptance_a_step_cannot_reach_skips_the_record_and_stale_ids_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let mut mtp = record("mtp", json!("400"), json!(4));
    mtp["engine"]["flags"] = json!(
        "--tp 8 --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
    );
    mtp["parallel"]["mtp"] = json!(true);
    let mut own = mtp.clone();
    own["id"] = json!("own");
    own["metrics"]["accept_length"] = json!("7.5");
    let path = records_file(
        dir.path(),
        vec![mtp, own, record("good", json!("400"), json!(4))],
    );
    let acceptance = write(
        dir.path(),
        "acceptance.json",
        &json!({"schema_version": 1, "records": [
            {"id": "mtp", "accept_length": 9.0},
            {"id": "gone", "accept_length": 2.0}
        ]})
        .to_string(),
    );
    let out = sim()
        .args(["validate", "--records"])
        .arg(&path)
        .arg("--acceptance")
        .arg(&acceptance)
        .args(["--format", "json"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("--acceptance gives 1 id(s)") && stderr.contains("`gone`"),
        "{stderr}"
    );
    let board: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    for (id, length) in [("mtp", "9.00"), ("own", "7.50")] {
        let (kind, detail) = skipped(&board, id);
        assert_eq!(kind, "unreadable-value", "{id}: {detail}");
        assert!(
            detail.contains(&format!(
                "acceptance length {length} is above the 4 tokens a step verifies"
            )),
            "{id}: {detail}"
        );
    }
    assert_eq!(board["summary"]["n"], 1, "{board:#}");
}
