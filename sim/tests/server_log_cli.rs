//! `sim validate --server-log` and `sim calibrate --server-log` on the user's server log: the
//! samples table, the memory plan beside the log, `--format json`, and bad logs (exit 2, one
//! line naming the file).

use crate::common;

use predicates::prelude::*;
use serde_json::Value;

const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/logs/glm47-fp8-tp8-calibration.log"
);
const TARGET: [&str; 4] = [
    "--machine",
    "rtx-pro-6000-x8-baremetal",
    "--model",
    "glm-4.7-fp8",
];

use common::sim_cmd as sim;

fn validate_json() -> Value {
    let out = sim()
        .args(["validate", "--server-log", LOG, "--format", "json"])
        .args(TARGET)
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn validate_prints_samples_memory_and_predictions() {
    sim()
        .env("COLUMNS", common::UNWRAPPED) // the run's summary line is matched whole
        .args(["validate", "--server-log", LOG])
        .args(TARGET)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "50 decode samples (30 steady, 20 flagged)",
        ))
        .stdout(predicate::str::contains("weights / GPU"))
        .stdout(predicate::str::contains("after prefill"))
        .stdout(predicate::str::contains("median |error|"));
}

/// The acceptance figures of the memory plan against the log: weights within 2% of 41.90 GiB,
/// KV tokens within 3% of 864,247.
#[test]
fn the_plan_beside_the_log_is_within_the_acceptance_bounds() {
    let v = validate_json();
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["engine"], "sglang");
    let run = &v["runs"][0];
    assert_eq!(run["layout"], "TP8");
    let row = |q: &str| {
        run["memory"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["quantity"] == q)
            .unwrap_or_else(|| panic!("{q}"))
            .clone()
    };
    let w = row("weights / GPU");
    assert!((w["logged"].as_f64().unwrap() - 41.90).abs() < 0.01);
    assert!(w["error_pct"].as_f64().unwrap().abs() < 2.0, "{w}");
    let kv = row("KV tokens");
    assert_eq!(kv["logged"], 864_247.0);
    assert!(kv["error_pct"].as_f64().unwrap().abs() < 3.0, "{kv}");
    assert_eq!(row("max_running_requests")["logged"], 2182.0);
    // every decode sample is listed with its prediction; steady ones carry an error
    let samples = run["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 50);
    assert!(
        samples
            .iter()
            .filter(|s| s["steady"] == true)
            .all(|s| s["error_pct"].is_f64())
    );
    assert_eq!(
        run["memory_plan"]["reserves"]["cuda_graph_bytes"], 0,
        "--disable-cuda-graph in the log"
    );
}

#[test]
fn calibrate_fits_the_log_with_no_other_flag_and_pins_only_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal.json");
    sim()
        .args(["calibrate", "--server-log", LOG, "--output"])
        .arg(&out)
        .args(TARGET)
        .assert()
        .success()
        .stdout(predicate::str::contains("30 steady"))
        .stdout(predicate::str::contains("pinned"));
    let c: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(c["schema_version"], 2);
    assert_eq!(c["engine"], "sglang");
    assert_eq!(c["layout"], "TP8");
    assert_eq!(
        c["server"]["disable_cuda_graph"], true,
        "options come from the log"
    );
    let median = c["median_abs_error_pct"].as_f64().unwrap();
    assert!(median <= 5.0, "median |error| {median}%");
    // eager TP8 is CPU-bound at every logged load: only the per-launch cost is identified
    let reports = c["knob_reports"].as_array().unwrap();
    for r in reports {
        let pinned = r["pinned"].as_bool().unwrap();
        assert_eq!(pinned, r["knob"] == "cpu", "{r}");
    }
    let cpu = c["knobs"]["cpu_scale"].as_f64().unwrap();
    assert!((2.0..6.0).contains(&cpu), "cpu ×{cpu}");
    // held-out rounds are predicted, not fitted
    let out2 = dir.path().join("cal2.json");
    sim()
        .args([
            "calibrate",
            "--server-log",
            LOG,
            "--hold-out-running",
            "64,128",
            "-o",
        ])
        .arg(&out2)
        .args(TARGET)
        .args(["--format", "json"])
        .assert()
        .success();
    let c: serde_json::Value = serde_json::from_slice(&std::fs::read(&out2).unwrap()).unwrap();
    let held: Vec<&serde_json::Value> = c["observations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["held_out"] == true)
        .collect();
    assert_eq!(held.len(), 2);
    assert!(held.iter().all(|o| o["leave_one_out_error_pct"].is_null()));
}

#[test]
fn calibrate_refuses_layout_flags_that_disagree_with_the_log() {
    let dir = tempfile::tempdir().unwrap();
    sim()
        .args([
            "calibrate",
            "--server-log",
            LOG,
            "--tp",
            "4",
            "--pp-size",
            "2",
            "-o",
        ])
        .arg(dir.path().join("c.json"))
        .args(TARGET)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--pp-size 2"))
        .stderr(predicate::str::contains("pp_size=1 (server_args dump)"));
}

#[test]
fn bad_logs_exit_2_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let assert = sim()
        .args(["validate", "--server-log"])
        .arg(&empty)
        .args(TARGET)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("empty.log"))
        .stderr(predicate::str::contains("no usable `Decode batch` line"));
    assert_eq!(
        String::from_utf8_lossy(&assert.get_output().stderr)
            .lines()
            .count(),
        1
    );
    sim()
        .args(["validate", "--server-log", "/no/such/server.log"])
        .args(TARGET)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/no/such/server.log"));
    // --server-log and --measured exclude each other; one of them is needed
    sim()
        .args(["validate"])
        .args(TARGET)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--measured"));
    sim()
        .args(["validate", "--server-log", LOG, "--measured", "x.jsonl"])
        .args(TARGET)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}

/// The engine's warning that its Triton fused MoE runs on the default config (SGLang writes it
/// during CUDA-graph capture, behind a progress bar on the same line) is read and said beside
/// the predictions, with the file that was missing; a log without it says nothing of the kind.
#[test]
fn a_default_moe_config_is_read_and_said() {
    let text = std::fs::read_to_string(LOG).unwrap();
    let at = text.find('\n').unwrap() + 1;
    let at = at + text[at..].find('\n').unwrap() + 1; // after the server_args line
    let warning = "Capturing batches (bs=4 avail_mem=47.76 GB):   0%|          | 0/3 [00:00<?, ?it/s]\
        [2026-01-28 22:12:00 TP0] Using default MoE kernel config. Performance might be sub-optimal! \
        Config file not found at /opt/sglang/python/sglang/srt/layers/moe/fused_moe_triton/configs/triton_3_5_1/\
        E=160,N=192,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition,dtype=fp8_w8a8,block_shape=[128,128].json, \
        you can create them with https://github.com/sgl-project/sglang/tree/main/benchmark/kernels/fused_moe_triton\n";
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    std::fs::write(&log, format!("{}{warning}{}", &text[..at], &text[at..])).unwrap();
    let out = sim()
        .args(["validate", "--server-log"])
        .arg(&log)
        .args(["--format", "json"])
        .args(TARGET)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let notes = v["runs"][0]["notes"].to_string();
    assert!(notes.contains("default Triton config"), "{notes}");
    assert!(
        notes.contains("E=160,N=192,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition,dtype=fp8_w8a8,block_shape=[128,128].json"),
        "{notes}"
    );
    assert!(
        notes.contains("fused_moe_triton writes the missing file"),
        "{notes}"
    );
    // an fp8 model on the RTX PRO 6000: off the measured ground (Hopper), said so and left
    // unpriced
    assert!(
        notes.contains("not priced (measured on Hopper (H200) only)"),
        "{notes}"
    );
    assert_eq!(
        v["runs"][0]["median_abs_error_pct"],
        validate_json()["runs"][0]["median_abs_error_pct"]
    );
    // a bf16 model on the H200 (the measured ground): priced, and the doctor says what tuning
    // gives at the log's load (here 1.00×: the eager host is the bound, not the MoE kernel)
    let out = sim()
        .args(["validate", "--server-log"])
        .arg(&log)
        .args([
            "--format",
            "json",
            "--machine",
            "h200-x8",
            "--model",
            "qwen3-next-80b-a3b",
        ])
        .assert()
        .success();
    let h200: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let notes = h200["runs"][0]["notes"].to_string();
    assert!(notes.contains("priced slower than tuned by"), "{notes}");
    let tries = h200["runs"][0]["limits"][0]["try_flags"].to_string();
    assert!(tries.contains("tune the fused MoE (SGLang's"), "{tries}");
    // the samples read as before: the warning line is no foreign line
    let plain = validate_json();
    assert_eq!(
        v["runs"][0]["decode_samples"],
        plain["runs"][0]["decode_samples"]
    );
    assert!(
        !plain["runs"][0]["notes"]
            .to_string()
            .contains("default Triton config")
    );
}
