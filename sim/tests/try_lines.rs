//! Issue 38: the `try:` line `sim advise` ends its ranking with launches what was ranked. Run
//! back through `sim run` with the same workload, it reproduces the ranked prediction exactly
//! (throughput, latency, KV capacity), for a vLLM line (its `--gpu-memory-utilization`,
//! `--kv-cache-dtype` and `--max-model-len` kept) and an SGLang one (`--trust-remote-code` and
//! the backends the user gave kept).

use crate::common;
use assert_cmd::Command;
use serde_json::Value;

const MACHINE: &str = "rtx-pro-6000-x8-baremetal";
const WORKLOAD: [&str; 8] = common::SHORT_WORKLOAD;

fn sim(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("sim")
        .unwrap()
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
}

/// The `try:` line of `sim advise` for `server_args`, and the best ranked run (JSON).
fn advise(server_args: &str) -> (String, Value) {
    let base = ["advise", "--machine", MACHINE, "--server-args", server_args];
    let table = sim(&[&base[..], &WORKLOAD[..]].concat());
    assert!(table.status.success(), "{table:?}");
    let out = String::from_utf8(table.stdout).unwrap();
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("try: "))
        .unwrap_or_else(|| panic!("no try: line in\n{out}"))
        .to_string();
    let json = sim(&[&base[..], &WORKLOAD[..], &["--format", "json"]].concat());
    assert!(json.status.success(), "{json:?}");
    let advice: Value = serde_json::from_slice(&json.stdout).unwrap();
    let best = advice["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| !r["run"].is_null())
        .expect("a ranked run")["run"]
        .clone();
    (line, best)
}

/// `sim run` of `line` with the same workload (JSON).
fn run(line: &str) -> Value {
    let base = ["run", "--machine", MACHINE, "--server-args", line];
    let out = sim(&[&base[..], &WORKLOAD[..], &["--format", "json"]].concat());
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn reproduces(server_args: &str, kept: &[&str]) {
    let (line, ranked) = advise(server_args);
    for flag in kept {
        assert!(line.contains(flag), "`{flag}` dropped from `{line}`");
    }
    let again = run(&line);
    for key in [
        "layout",
        "output_throughput",
        "total_throughput",
        "mean_ttft_ms",
        "mean_itl_ms",
        "kv_capacity_tokens",
        "peak_running_requests",
    ] {
        assert_eq!(again[key], ranked[key], "{key} of `{line}`");
    }
}

#[test]
fn the_vllm_try_line_reproduces_the_ranked_prediction() {
    reproduces(
        "vllm serve zai-org/GLM-4.7-FP8 -tp 8 --gpu-memory-utilization 0.85 --kv-cache-dtype fp8 --max-model-len 32768 --trust-remote-code",
        &[
            "--gpu-memory-utilization 0.85",
            "--kv-cache-dtype fp8",
            "--max-model-len 32768",
            "--trust-remote-code",
        ],
    );
}

#[test]
fn the_sglang_try_line_reproduces_the_ranked_prediction() {
    reproduces(
        "python -m sglang.launch_server --model-path zai-org/GLM-4.7-FP8 --tp 8 --trust-remote-code --attention-backend flashinfer --mem-fraction-static 0.8 --kv-cache-dtype fp8_e4m3 --context-length 32768",
        &[
            "--trust-remote-code",
            "--attention-backend flashinfer",
            "--mem-fraction-static 0.8",
            "--kv-cache-dtype fp8_e4m3",
            "--context-length 32768",
        ],
    );
}
