//! `sim predict` end to end: one layout, every layout, JSON shape, and bad input (exit 2, one line).

use crate::common;

use predicates::prelude::*;
use serde_json::Value;

const VM: &str = "rtx-pro-6000-x8-vm-hostbounce";

use common::sim_cmd as sim;

fn predict_json(args: &[&str]) -> Value {
    let mut all = vec!["predict", "--format", "json"];
    all.extend_from_slice(args);
    common::sim_json(&all)
}

/// Runs a bad command: exit 2, a one-line `error:` message containing `needle`, nothing on stdout.
fn fails_with(args: &[&str], needle: &str) {
    let out = sim().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line please: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn one_layout_reports_breakdown_traffic_and_memory() {
    let v = predict_json(&[
        "--machine",
        VM,
        "--model",
        "glm-5-nvfp4",
        "--tp",
        "8",
        "--batch",
        "64",
        "--context",
        "2000",
    ]);
    assert_eq!(v["schema_version"], 2);
    let p = &v["layouts"][0];
    assert_eq!(p["layout"], "TP8");
    assert_eq!(p["flags"], "--tp 8");
    let b = &p["breakdown"];
    let parts: f64 = [
        "compute_ms",
        "kernel_floor_ms",
        "activation_ms",
        "weight_read_ms",
        "kv_read_ms",
        "all_reduce_ms",
        "all_to_all_ms",
        "dp_attention_comm_ms",
        "pp_send_ms",
        "overhead_ms",
        "bubble_ms",
    ]
    .iter()
    .map(|k| b[k].as_f64().unwrap())
    .sum();
    assert!((parts - b["total_ms"].as_f64().unwrap()).abs() < 1e-6);
    assert!((b["total_ms"].as_f64().unwrap() - p["iteration_ms"].as_f64().unwrap()).abs() < 1e-6);
    // TP8 on PCIe: all-reduces are a real share, expert reads dominate the memory side
    assert!(b["all_reduce_ms"].as_f64().unwrap() > 0.0);
    assert!(p["traffic"]["expert_read_bytes"].as_f64().unwrap() > 1e9);
    let m = &p["memory"];
    assert!(m["fits"].as_bool().unwrap());
    assert!(m["kv_tokens"].as_u64().unwrap() > 100_000);
    let steady = &p["steady"];
    let tok_s = steady["output_tok_per_s"].as_f64().unwrap();
    assert!((tok_s - 64.0 / (steady["cycle_ms"].as_f64().unwrap() / 1e3)).abs() < 1e-6);
}

#[test]
fn layout_all_ranks_every_layout_usual_ones_included() {
    let v = predict_json(&[
        "--machine",
        VM,
        "--model",
        "glm-5-nvfp4",
        "--layout",
        "all",
        "--batch",
        "8",
        "--context",
        "4096",
    ]);
    let layouts = v["layouts"].as_array().unwrap();
    let names: Vec<&str> = layouts
        .iter()
        .map(|l| l["layout"].as_str().unwrap())
        .collect();
    for want in ["TP8", "TP4xPP2", "EP8", "TP2xPP4", "TP1xPP8", "TP8+EP8+DPA"] {
        assert!(names.contains(&want), "{want} missing in {names:?}");
    }
    // feasible ones come first, best steady throughput first
    let tps: Vec<f64> = layouts
        .iter()
        .filter(|l| l["rejected"].is_null())
        .map(|l| l["steady"]["output_tok_per_s"].as_f64().unwrap())
        .collect();
    assert!(tps.windows(2).all(|w| w[0] >= w[1]));
}

#[test]
fn layout_all_lists_rejected_layouts_with_reasons() {
    // Llama-3.1-405B in bf16 does not fit one stage of 8 × 96 GB: every layout says why
    let out = sim()
        .args([
            "predict",
            "--machine",
            VM,
            "--model",
            "llama-3.1-405b",
            "--layout",
            "all",
            "--batch",
            "1",
            "--context",
            "1000",
        ])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("┆ [1]"), "{text}");
    assert!(text.contains("does not fit"), "{text}");
}

#[test]
fn table_and_csv_formats_print() {
    sim()
        .args([
            "predict",
            "--machine",
            "h200-x8",
            "--model",
            "glm-4.7-fp8",
            "--tp",
            "4",
            "--pp-size",
            "2",
            "--batch",
            "16",
            "--context",
            "8000",
            "--prefill",
            "2048",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("TP4xPP2").and(predicate::str::contains("PP send/recv")));
    sim()
        .args([
            "predict",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--layout",
            "all",
            "--batch",
            "4",
            "--context",
            "1000",
            "--format",
            "csv",
        ])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("layout,flags,iteration_ms"));
}

#[test]
fn tp3_on_eight_gpus_is_rejected() {
    fails_with(
        &[
            "predict",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--tp",
            "3",
            "--batch",
            "1",
            "--context",
            "100",
        ],
        "--tp 3",
    );
}

#[test]
fn heads_not_divisible_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/hf-configs/Qwen3-30B-A3B.json"
    );
    let mut cfg: Value = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    cfg["num_attention_heads"] = 12.into();
    let path = dir.path().join("config.json");
    std::fs::write(&path, cfg.to_string()).unwrap();
    fails_with(
        &[
            "predict",
            "--machine",
            VM,
            "--model",
            path.to_str().unwrap(),
            "--tp",
            "8",
            "--batch",
            "1",
            "--context",
            "100",
        ],
        "heads",
    );
}

#[test]
fn model_too_big_says_by_how_much() {
    fails_with(
        &[
            "predict",
            "--machine",
            VM,
            "--model",
            "llama-3.1-405b",
            "--tp",
            "8",
            "--batch",
            "1",
            "--context",
            "100",
        ],
        "GB",
    );
}

#[test]
fn bad_machine_profile_and_options_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.json");
    std::fs::write(&bad, "{\"schema_version\": 1, \"provenance\": ").unwrap();
    fails_with(
        &[
            "predict",
            "--machine",
            bad.to_str().unwrap(),
            "--model",
            "glm-5-nvfp4",
            "--batch",
            "1",
            "--context",
            "10",
        ],
        "malformed JSON",
    );
    fails_with(
        &[
            "predict",
            "--machine",
            "no-such-box",
            "--model",
            "glm-5-nvfp4",
            "--batch",
            "1",
            "--context",
            "10",
        ],
        "unknown machine",
    );
    fails_with(
        &[
            "predict",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--mem-fraction-static",
            "1.5",
            "--batch",
            "1",
            "--context",
            "10",
        ],
        "--mem-fraction-static",
    );
    fails_with(
        &[
            "predict",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--tp",
            "4",
            "--ep-size",
            "4",
            "--moe-a2a-backend",
            "deepep",
            "--batch",
            "1",
            "--context",
            "10",
        ],
        // TP4 on 8 GPUs is one replica now (issue 13); GLM-5 does not fit four of them
        "does not fit on EP4",
    );
    fails_with(
        &[
            "predict",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--moe-a2a-backend",
            "deepep",
            "--batch",
            "1",
            "--context",
            "10",
        ],
        "--ep-size",
    );
}

/// A vLLM launch whose weights do not fit says numbers that add up: weights + reserve − budget is
/// the shortfall it states (the reserve is vLLM's profiling peak and non-torch allocations inside
/// `--gpu-memory-utilization`, not SGLang's pre-load overhead).
#[test]
fn a_vllm_launch_that_does_not_fit_says_numbers_that_add_up() {
    let out = sim()
        .args([
            "predict",
            "--machine",
            "rtx-pro-6000-x8-baremetal",
            "--server-args",
            "vllm serve zai-org/GLM-5-FP8 --tensor-parallel-size 8",
            "--batch",
            "1",
            "--context",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    let gb_after = |word: &str| -> f64 {
        let at = err.find(word).unwrap_or_else(|| panic!("{word}: {err}")) + word.len();
        err[at..]
            .trim_start()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|e| panic!("{word}: {e}: {err}"))
    };
    let (weights, reserve) = (gb_after("weights"), gb_after("+ reserve"));
    let (budget, shortfall) = (gb_after("static budget"), gb_after(") by"));
    assert!(err.contains("--gpu-memory-utilization 0.9"), "{err}");
    assert!(
        (weights + reserve - budget - shortfall).abs() < 0.015,
        "{weights} + {reserve} - {budget} vs {shortfall}: {err}"
    );
}
