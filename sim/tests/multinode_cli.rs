//! The multi-box and sub-machine features as a user runs them: `sim advise --question scale` on a
//! two-box preset, the refusal on one box, and `--tp 4` on an 8-GPU box saying how many GPUs
//! sit idle.

use crate::common;

use predicates::prelude::*;
use serde_json::Value;

use common::sim_cmd as sim;

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("valid JSON on stdout")
}

const SMALL: [&str; 8] = [
    "--num-prompts",
    "32",
    "--random-input-len",
    "256",
    "--random-output-len",
    "64",
    "--max-concurrency",
    "16",
];

#[test]
fn advise_scale_answers_on_the_two_box_rtx_preset() {
    let out = sim()
        .args(["advise", "--machine", "rtx-pro-6000-x8x2-400gbe"])
        .args(["--model", "kimi-k2.5-nvfp4", "--question", "scale"])
        // SGLang's own default for this VLM (0.7715: the vision-tower adjustment) leaves its
        // weights no room on one 8-GPU box; the scale answer needs one that fits
        .args(["--mem-fraction-static", "0.85"])
        .args(SMALL)
        .args(["--draws", "8", "--format", "json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let s = &v["scale"];
    assert_eq!(s["nodes"], 2);
    assert_eq!(s["gpus_per_node"], 8);
    assert!(
        ["one-box", "all-boxes", "replicas"].contains(&s["best"].as_str().unwrap()),
        "{}",
        s["best"]
    );
    assert!(
        s["all_boxes"]["flags"]
            .as_str()
            .unwrap()
            .ends_with("--nnodes 2")
    );
    assert_eq!(s["one_box"]["gpus"], 8);
    assert_eq!(s["replicas"]["servers"], 2);
    assert!(s["by_concurrency"].as_array().unwrap().len() >= 8);
    assert!(
        s["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("not measured"))
    );
    // The ranking is of all 16 GPUs, each launched with --nnodes 2.
    for r in v["ranking"].as_array().unwrap() {
        let flags = r["flags"].as_str().unwrap();
        assert!(flags.ends_with("--nnodes 2"), "{flags}");
    }
    // The table form says what to launch on each node or box.
    sim()
        .args(["advise", "--machine", "rtx-pro-6000-x8x2-400gbe"])
        .args(["--model", "kimi-k2.5-nvfp4", "--question", "scale"])
        // SGLang's own default for this VLM (0.7715: the vision-tower adjustment) leaves its
        // weights no room on one 8-GPU box; the scale answer needs one that fits
        .args(["--mem-fraction-static", "0.85"])
        .args(SMALL)
        .args(["--draws", "4"])
        .assert()
        .success()
        .stdout(predicate::str::contains("× one box"))
        .stdout(predicate::str::contains(
            "try: python -m sglang.launch_server",
        ));
}

/// The scale question for a vLLM line: every option in vLLM's flags (layouts vLLM cannot launch
/// left out), the server over both boxes joined with vLLM's `--node-rank` / `--master-addr`,
/// one server per box behind an HTTP router, the line's other flags kept.
#[test]
fn advise_scale_answers_a_vllm_line_in_vllms_words() {
    let out = sim()
        .args([
            "advise",
            "--machine",
            "rtx-pro-6000-x8x2-400gbe",
            "--question",
            "scale",
        ])
        .args([
            "--server-args",
            "vllm serve nvidia/GLM-5-NVFP4 -tp 8 --gpu-memory-utilization 0.9",
        ])
        .args(SMALL)
        .args(["--draws", "4", "--format", "json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let s = &v["scale"];
    let sglang_words = [
        "--tp ",
        "--pp-size",
        "--ep-size",
        "--dist-init-addr",
        "--dp-size",
    ];
    for k in ["one_box", "all_boxes", "replicas"] {
        let flags = s[k]["flags"].as_str().unwrap();
        assert!(
            flags.starts_with("-tp ") || flags.starts_with("-dp "),
            "{k}: {flags}"
        );
        assert!(
            !sglang_words.iter().any(|w| flags.contains(w)),
            "{k}: {flags}"
        );
    }
    assert!(
        s["all_boxes"]["flags"]
            .as_str()
            .unwrap()
            .ends_with("--nnodes 2")
    );
    let tries: Vec<&str> = s["flags_to_try"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for (r, t) in tries.iter().enumerate() {
        assert!(t.contains("--gpu-memory-utilization 0.9"), "{t}");
        assert!(!sglang_words.iter().any(|w| t.contains(w)), "{t}");
        match s["best"].as_str().unwrap() {
            "all-boxes" => assert!(
                t.contains(&format!("--node-rank {r} --master-addr <node-0-address>")),
                "{t}"
            ),
            "replicas" => assert!(t.contains("router in front of http://<box-0>:8000"), "{t}"),
            _ => {}
        }
    }
    // the join words of each engine, which the all-boxes lines carry
    use sim::engine::Engine;
    assert_eq!(
        Engine::Vllm.rules().node_join_flags(1),
        "--node-rank 1 --master-addr <node-0-address>"
    );
    assert_eq!(
        Engine::Sglang.rules().node_join_flags(1),
        "--node-rank 1 --dist-init-addr <node-0-address>:5000"
    );
}

#[test]
fn advise_scale_on_one_box_is_refused() {
    sim()
        .args(["advise", "--machine", "rtx-pro-6000-x8-baremetal"])
        .args(["--model", "kimi-k2.5-nvfp4", "--question", "scale"])
        // SGLang's own default for this VLM (0.7715: the vision-tower adjustment) leaves its
        // weights no room on one 8-GPU box; the scale answer needs one that fits
        .args(["--mem-fraction-static", "0.85"])
        .args(SMALL)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("one box of 8 GPUs"));
}

#[test]
fn tp4_on_eight_gpus_runs_and_says_four_sit_idle() {
    let base = [
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "qwen3-235b-a22b-nvfp4",
        "--tp",
        "4",
    ];
    let out = sim()
        .arg("run")
        .args(base)
        .args(SMALL)
        .args(["--format", "json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    assert_eq!(v["idle_gpus"], 4);
    assert_eq!(v["flags"], "--tp 4");
    for cmd in ["run", "sweep"] {
        sim()
            .arg(cmd)
            .args(base)
            .args(SMALL)
            .assert()
            .success()
            .stdout(predicate::str::contains("4 GPUs idle"));
    }
    sim()
        .arg("predict")
        .args(base)
        .args(["--batch", "8", "--context", "1024"])
        .assert()
        .success()
        .stdout(predicate::str::contains("4 GPUs sit idle"));
    // --layout NAME takes a layout of fewer GPUs too
    let out = sim()
        .args(["sweep", "--machine", "rtx-pro-6000-x8-baremetal"])
        .args(["--model", "qwen3-235b-a22b-nvfp4", "--layout", "tp2xpp2"])
        .args(SMALL)
        .args(["--format", "json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let rows = &v["rows"];
    assert_eq!(rows[0]["idle_gpus"], 4);
    assert_eq!(rows[0]["flags"], "--tp 2 --pp-size 2");
}
