//! `sim models list|show` run as a binary (assert_cmd).

use crate::common;

use predicates::prelude::*;
use serde_json::Value;

use common::sim_cmd as sim;

#[test]
fn models_list_prints_every_preset() {
    let out = sim().args(["models", "list"]).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for key in [
        "glm-5-nvfp4",
        "glm-4.7-fp8",
        "kimi-k2-thinking-int4",
        "llama-3.1-405b",
    ] {
        assert!(text.contains(key), "{key} missing from:\n{text}");
    }
    let json = sim()
        .args(["models", "list", "--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(v["schema_version"], 2);
    assert!(v["models"].as_array().unwrap().len() >= 12);
}

#[test]
fn models_show_glm5_nvfp4_json() {
    let out = sim()
        .args(["models", "show", "glm-5-nvfp4", "--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).expect("valid JSON");
    assert_eq!(v["schema_version"], 2);
    // issue 33: the engine named, the flags in its spelling under an engine-neutral key
    assert_eq!(v["engine"], "sglang");
    let first = &v["layouts"][0];
    assert!(first.get("sglang_flags").is_none(), "{first}");
    assert!(
        first["flags"].as_str().unwrap().starts_with("--tp "),
        "{first}"
    );
    assert_eq!(v["summary"]["name"], "glm-5-nvfp4");
    let total = v["summary"]["total_params_without_mtp"].as_f64().unwrap();
    assert!((total / 744e9 - 1.0).abs() < 0.01, "{total}");
    assert_eq!(v["kv"]["bf16_bytes_per_token"], 78 * 576 * 2);
    let layouts = v["layouts"].as_array().unwrap();
    let names: Vec<&str> = layouts
        .iter()
        .map(|l| l["layout"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["TP8", "TP4xPP2", "EP8"]);
    for l in layouts {
        assert!(l["impossible_reason"].is_null(), "{l}");
        assert_eq!(
            l["fits"], true,
            "GLM-5-NVFP4 fits 8 × 96 GB in every layout"
        );
        let w = l["max_weight_bytes_per_gpu"].as_f64().unwrap();
        assert!(w > 50e9 && w < 65e9, "{w}");
    }
    assert_eq!(layouts[1]["stages"].as_array().unwrap().len(), 2);
}

#[test]
fn models_show_reports_layouts_that_do_not_fit_or_are_impossible() {
    // Llama-3.1-405B in bf16 (812 GB) does not fit 8 × 96 GB at --mem-fraction-static 0.85.
    let out = sim()
        .args(["models", "show", "llama-3.1-405b", "--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["layouts"][0]["fits"], false);
    // 6 GPUs: GLM-5's 64 heads do not divide by 6.
    let out = sim()
        .args([
            "models",
            "show",
            "glm-5-nvfp4",
            "--gpus",
            "6",
            "--format",
            "json",
        ])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let reason = v["layouts"][0]["impossible_reason"].as_str().unwrap();
    assert!(reason.contains("heads"), "{reason}");
}

#[test]
fn models_show_takes_a_config_path_and_prints_tables() {
    let cfg = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/hf-configs/DeepSeek-V3.json"
    );
    sim()
        .args(["models", "show", cfg])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("routed experts").and(predicate::str::contains("70272 B")),
        );
}

#[test]
fn bad_input_exits_2_with_one_line() {
    sim()
        .args(["models", "show", "no-such-model"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no-such-model").and(predicate::str::contains("glm-5-nvfp4")),
        );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("config.json");
    std::fs::write(&bad, r#"{"model_type": "llama", "hidden_size": 0}"#).unwrap();
    sim()
        .args(["models", "show", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("hidden_size").and(predicate::str::contains("config.json")),
        );
    sim()
        .args(["models", "show", "glm-5-nvfp4", "--gpu", "voodoo-5"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("voodoo-5"));
}

/// `sim … | head -1`: the reader leaves after one line; sim must end without a panic message.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command as Std, Stdio};
    let mut child = Std::new(assert_cmd::cargo::cargo_bin("sim"))
        // ~190 KB of JSON: more than a pipe holds, so sim is still writing when the reader leaves
        .args([
            "validate",
            "--records",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../validation/public-records.json"
            ),
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sim starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // the pipe's read end is dropped here, as `head -1` closes it
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!first.is_empty());
    assert!(!stderr.contains("panicked"), "{stderr}");
}
