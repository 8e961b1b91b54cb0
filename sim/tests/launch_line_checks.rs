//! Issue 21's launch-line cases, as a user types them: each bad input ends with exit 2 and one
//! line naming what is wrong and what to do; the speculative run says what it assumed.

use crate::common;

use common::sim_output as sim;

fn refused(args: &[&str], want: &str) {
    let (code, _, err) = sim(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

const RUN: [&str; 6] = [
    "run",
    "--machine",
    "h200-x8",
    "--num-prompts",
    "8",
    "--model",
];

fn run_with(model: &str, line: &str) -> Vec<String> {
    RUN.iter()
        .map(|s| s.to_string())
        .chain([model.to_string(), "--server-args".into(), line.into()])
        .collect()
}

fn refused_run(model: &str, line: &str, want: &str) {
    let args = run_with(model, line);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    refused(&args, want);
}

#[test]
fn a_misspelled_flag_is_named_with_the_one_meant() {
    refused_run(
        "deepseek-v3-fp8",
        "python -m sglang.launch_server --tp-sze 8",
        "--tp-sze: not an SGLang option (SGLang refuses the line); did you mean --tp-size?",
    );
}

#[test]
fn a_model_path_that_disagrees_with_model_is_refused_naming_both() {
    refused_run(
        "deepseek-v3-fp8",
        "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 8",
        "--model deepseek-v3-fp8 (deepseek-v3-fp8) disagrees with the launch line's --model-path Qwen/Qwen3-30B-A3B (qwen3-30b-a3b)",
    );
}

#[test]
fn environment_that_changes_the_machine_is_refused_with_what_to_do() {
    refused_run(
        "deepseek-v3-fp8",
        "NCCL_PROTO=LL128 python -m sglang.launch_server --tp 8",
        "probe with the same setting",
    );
    refused_run(
        "deepseek-v3-fp8",
        "CUDA_VISIBLE_DEVICES=0,1,2,3 python -m sglang.launch_server --tp 8",
        "4 GPU(s) visible, but the layout needs 8",
    );
    // other environment is listed as recorded
    let args = run_with(
        "deepseek-v3-fp8",
        "SGLANG_ENABLE_JIT_DEEPGEMM=0 python -m sglang.launch_server --tp 8",
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = sim(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("environment, recorded: SGLANG_ENABLE_JIT_DEEPGEMM=0"),
        "{err}"
    );
}

/// Output tok/s of a launch line on `h200-x8` (one stream, graphs), with its stderr.
fn tok_s(line: &str) -> (f64, String) {
    let mut args = run_with("deepseek-v3-fp8", line);
    args.extend(["--max-concurrency", "1", "--format", "json"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = sim(&args);
    assert_eq!(code, 0, "{line}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    (v["output_throughput"].as_f64().unwrap(), err)
}

/// Issue 34: NCCL's P2P settings are modelled, in the direction NCCL takes them; a value NCCL
/// ignores is a note, not a refusal. With the custom all-reduce off NCCL carries every
/// all-reduce, so its transport shows.
#[test]
fn nccl_p2p_settings_on_a_launch_line_change_the_prediction() {
    let base = "python -m sglang.launch_server --tp 8 --disable-custom-all-reduce";
    let (p2p, _) = tok_s(base);
    let (off, err) = tok_s(&format!("NCCL_P2P_DISABLE=1 {base}"));
    assert!(off < p2p, "P2P off {off:.1} vs {p2p:.1}");
    assert!(
        err.contains("NCCL_P2P_DISABLE=1: NCCL runs every collective over its SHM transport"),
        "{err}"
    );
    let (loc, _) = tok_s(&format!("NCCL_P2P_LEVEL=LOC {base}"));
    assert!(loc < p2p, "LOC {loc:.1} vs {p2p:.1}");
    let (sys, _) = tok_s(&format!("NCCL_P2P_LEVEL=SYS {base}"));
    assert_eq!(sys, p2p);
    let (kept, err) = tok_s(&format!("NCCL_P2P_DISABLE=0 {base}"));
    assert_eq!(kept, p2p);
    assert!(err.contains("NCCL keeps P2P"), "{err}");
    let (ignored, err) = tok_s(&format!("NCCL_P2P_LEVEL=nvlink {base}"));
    assert_eq!(ignored, p2p);
    assert!(err.contains("NCCL ignores it"), "{err}");
    // the custom all-reduce is the engine's: NCCL's setting leaves it running over NVLink
    let (custom, _) = tok_s("python -m sglang.launch_server --tp 8");
    let (custom_off, _) = tok_s("NCCL_P2P_DISABLE=1 python -m sglang.launch_server --tp 8");
    assert!(custom_off <= custom && custom_off > off, "{custom_off:.1}");
}

#[test]
fn a_negative_number_names_its_flag() {
    refused(
        &[
            "predict",
            "--machine",
            "h200-x8",
            "--model",
            "deepseek-v3-fp8",
            "--batch",
            "-1",
            "--context",
            "5",
        ],
        "'--batch <REQUESTS>'",
    );
    refused(
        &[
            "predict",
            "--machine",
            "h200-x8",
            "--model",
            "deepseek-v3-fp8",
            "--tp",
            "-2",
            "--batch",
            "1",
            "--context",
            "5",
        ],
        "--tp-size -2: must be at least 1",
    );
}

#[test]
fn a_speculative_run_says_it_is_modelled_and_what_it_assumed() {
    let (code, _, err) = sim(&[
        "run",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "glm-5-nvfp4",
        "--tp",
        "8",
        "--speculative-algorithm",
        "EAGLE",
        "--num-prompts",
        "8",
        "--random-input-len",
        "100",
        "--random-output-len",
        "50",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("speculative decoding modelled: EAGLE"),
        "{err}"
    );
    assert!(
        // the prior for random prompts: 0.61 per chained token over SGLang's 5 steps for this
        // model, and where it came from
        err.contains("acceptance length 2.43 tokens per step (prior for random prompts, MTP layer")
            && err.contains("vllm-project/vllm PR 41044"),
        "{err}"
    );
}
