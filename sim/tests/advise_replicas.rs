//! `sim advise --question replicas`: one server of the whole box against two of half of it, each
//! half costed on its own GPUs; and a launch line's server on the GPUs SGLang gives it.

mod common;
use common::{sim_output, sim_stdout};
use serde_json::Value;

fn answer(machine: &str, model: &str) -> Value {
    let out = sim_stdout(&[
        "advise",
        "--machine",
        machine,
        "--model",
        model,
        "--question",
        "replicas",
        "--draws",
        "8",
        "--max-concurrency",
        "64",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["replicas"].clone()
}

#[test]
fn the_verdict_follows_the_box_and_says_its_numbers() {
    // NVLink: one TP8 server reads half the weights per GPU and all-reduces cheaply
    let nv = answer("h200-x8", "glm-4.7-fp8");
    assert_eq!(nv["verdict"], "one_server", "{nv:#}");
    let (one, two) = (&nv["one"], &nv["two"]);
    assert_eq!(
        (one["servers"].as_u64(), two["servers"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(two["weight_bytes_per_gpu"].as_f64() > one["weight_bytes_per_gpu"].as_f64());
    assert!(two["box_tok_s"].as_f64().unwrap() < one["box_tok_s"].as_f64().unwrap());
    for s in [one, two] {
        for k in ["tpot_ms", "ttft_ms", "box_tok_s"] {
            assert!(
                s[k].as_f64().is_some_and(|x| x > 0.0 && x.is_finite()),
                "{k}: {s}"
            );
        }
    }
    // PCIe: every TP8 all-reduce crosses the sockets, two TP4 servers stay inside one each
    let pcie = answer("rtx-pro-6000-x8-baremetal", "qwen3-235b-a22b-nvfp4");
    assert_eq!(pcie["verdict"], "two_replicas", "{pcie:#}");
    assert!(
        pcie["flags_to_try"][0]
            .as_str()
            .unwrap()
            .contains("--dp-size 2")
    );
    assert!(
        pcie["sentence"]
            .as_str()
            .unwrap()
            .starts_with("Two servers")
    );
}

#[test]
fn a_model_half_the_box_cannot_hold_keeps_one_server_and_says_why() {
    let a = answer("rtx-pro-6000-x8-baremetal", "kimi-k2-thinking-int4");
    assert_eq!(a["verdict"], "one_server");
    assert!(a["two"].is_null());
    assert!(
        a["sentence"]
            .as_str()
            .unwrap()
            .contains("does not fit on TP4"),
        "{a}"
    );
    let (code, _, err) = sim_output(&[
        "advise",
        "--machine",
        "h200-x8x2-ib-ndr",
        "--model",
        "glm-4.7-fp8",
        "--question",
        "replicas",
        "--draws",
        "2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--question scale") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn a_launch_line_runs_on_its_visible_gpus() {
    let run = |env: &str| {
        let line = format!(
            "{env} python -m sglang.launch_server --model-path qwen3-235b-a22b-nvfp4 --tp 4"
        );
        sim_output(&[
            "predict",
            "--machine",
            "rtx-pro-6000-x8-baremetal",
            "--batch",
            "4",
            "--context",
            "1000",
            "--server-args",
            &line,
        ])
    };
    let (code, out, err) = run("CUDA_VISIBLE_DEVICES=4,5,6,7");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("GPUs 4,5,6,7 (4×") && out.contains("[[4, 5, 6, 7]]"),
        "{out}"
    );
    let (_, out, _) = run("");
    assert!(out.contains("[[0, 1, 2, 3]]"), "{out}");
    let (code, _, err) = run("CUDA_VISIBLE_DEVICES=0,1,2,9");
    assert_eq!(code, 2);
    assert!(err.contains("no GPU 9"), "{err}");
}
