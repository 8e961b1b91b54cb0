//! `sim advise --question replicas`: one server of the whole box against two of half of it, each
//! half costed on its own GPUs; a launch line's server on the GPUs SGLang gives it; and `sim run` of
//! a `--dp-size 2` line (two engines behind the router, replayed one by one).

use crate::common;
use common::{sim_output, sim_stdout};
use serde_json::Value;

fn answer(machine: &str, model: &str) -> Value {
    ask(machine, model, &[])
}

/// The replicas answer (JSON) at 64 concurrent with `extra` arguments (a launch line).
fn ask(machine: &str, model: &str, extra: &[&str]) -> Value {
    let base = [
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
    ];
    let out = sim_stdout(&[&base[..], extra].concat());
    let v: Value = serde_json::from_str(&out).unwrap();
    v["replicas"].clone()
}

/// An answer's `try:` flags.
fn tries_of(v: &Value) -> Vec<&str> {
    v["flags_to_try"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect()
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
    // the verdict is the intervals' odds: the side they find faster where sure, else Depends
    for a in [&nv, &pcie] {
        let odds = &a["odds"];
        let want = match (odds["sure"].as_bool().unwrap(), odds["faster"].as_str()) {
            (false, _) => "depends",
            (true, Some("two servers")) => "two_replicas",
            (true, _) => "one_server",
        };
        assert_eq!(a["verdict"], want, "{a:#}");
    }
    // odds below the bar make it Depends, one server's flags first again
    let mut r: sim::advise::replicas::ReplicasAnswer =
        serde_json::from_value(pcie.clone()).unwrap();
    let first = r.flags_to_try.clone();
    r.odds.as_mut().unwrap().sure = false;
    r.follow_odds();
    assert_eq!(r.verdict, sim::advise::replicas::ReplicasVerdict::Depends);
    assert!(
        r.sentence.starts_with("Depends (measure both): "),
        "{}",
        r.sentence
    );
    assert_eq!(r.flags_to_try, first.into_iter().rev().collect::<Vec<_>>());
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

/// Half the box that holds the weights but leaves too little KV cache for one request of the
/// workload is no option either: no zero-throughput side, no `try:` line for it, the reason said
/// (DeepSeek-V3 FP8 on 16 RTX PRO 6000: TP8 keeps ~1,400 KV tokens a server).
#[test]
fn a_half_whose_cache_holds_no_request_is_no_option() {
    let a = answer("rtx-pro-6000-x16-pcie-switch", "deepseek-v3-fp8");
    assert_eq!(a["verdict"], "one_server", "{a:#}");
    assert!(a["two"].is_null(), "{a:#}");
    let sentence = a["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("cannot run the model") && sentence.contains("KV pool holds"),
        "{sentence}"
    );
    assert_eq!(tries_of(&a).len(), 1, "{a:#}");
    assert!(a["one"]["box_tok_s"].as_f64().unwrap() > 0.0);
}

/// `sim predict` of one batch of 4 at 1000 tokens for a launch line on the PCIe box.
fn predict_line(line: &str) -> (i32, String, String) {
    common::predict_line_at(line, Some("120"))
}

#[test]
fn a_launch_line_runs_on_its_visible_gpus() {
    let run = |env: &str| {
        predict_line(&format!(
            "{env} python -m sglang.launch_server --model-path qwen3-235b-a22b-nvfp4 --tp 4"
        ))
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

/// `sim run` of `line` on the PCIe box at `c` concurrent requests: its JSON (the run's keys at
/// the top level).
fn run_line(line: &str, c: u32) -> (i32, Value, String) {
    let conc = c.to_string();
    let prompts = (4 * c).to_string();
    let (code, out, err) = sim_output(&[
        "run",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--server-args",
        line,
        "--max-concurrency",
        &conc,
        "--num-prompts",
        &prompts,
        "--random-input-len",
        "1024",
        "--random-output-len",
        "256",
        // fixed lengths: each engine's every-other request is then the one engine's workload
        "--random-range-ratio",
        "1",
        "--format",
        "json",
    ]);
    let v = serde_json::from_str::<Value>(&out).unwrap_or(Value::Null);
    (code, v, err)
}

#[test]
fn dp_size_two_runs_two_engines_on_disjoint_halves() {
    let base = "python -m sglang.launch_server --model-path qwen3-235b-a22b-nvfp4 --tp 4";
    let (code, two, err) = run_line(&format!("{base} --dp-size 2"), 32);
    assert_eq!(code, 0, "{err}");
    let (_, one, _) = run_line(base, 16);
    assert_eq!(two["replicas"], 2, "{two:#}");
    assert_eq!(two["layout"], "2×TP4");
    assert!(
        one.get("replicas").is_none(),
        "one engine: the key is omitted"
    );
    // the second engine's GPUs (4-7) are connected as the first's (0-3) on this box, so two
    // engines at 16 requests each give twice one engine's throughput at 16, with its latencies
    let ratio =
        two["output_throughput"].as_f64().unwrap() / one["output_throughput"].as_f64().unwrap();
    assert!((ratio - 2.0).abs() < 1e-3, "2×TP4 / TP4 = {ratio}");
    let tpot = two["mean_tpot_ms"].as_f64().unwrap() / one["mean_tpot_ms"].as_f64().unwrap();
    assert!((tpot - 1.0).abs() < 1e-3, "TPOT ratio {tpot}");
    assert_eq!(
        two["kv_capacity_tokens"].as_u64().unwrap(),
        2 * one["kv_capacity_tokens"].as_u64().unwrap()
    );
    assert_eq!(two["completed"], 128);
    // more engines than the box holds: one line saying so
    let (code, _, err) = run_line(&format!("{base} --dp-size 3"), 8);
    assert_eq!(code, 2);
    assert!(
        err.contains("need 12 GPUs") && err.lines().count() == 1,
        "{err}"
    );
    // commands that cost one engine refuse and point to `sim run`
    let (code, _, err) = predict_line(&format!("{base} --dp-size 2"));
    assert_eq!(code, 2);
    assert!(err.contains("`sim run` replays them"), "{err}");
}

/// The question answers for a vLLM line in vLLM's words: each server's `-tp`, the user's other
/// flags kept, and two servers said as two servers behind a router (vLLM's `-dp 2` runs a MoE
/// model's ranks in lockstep with the experts over all of them, which is not two replicas);
/// SGLang's line keeps its flags too, with its `--dp-size 2`.
#[test]
fn a_vllm_line_is_answered_in_vllms_words_with_its_flags() {
    let ask = |line: &str| {
        ask(
            "rtx-pro-6000-x8-baremetal",
            "qwen3-235b-a22b-nvfp4",
            &["--server-args", line],
        )
    };
    let v = ask("vllm serve nvidia/Qwen3-235B-A22B-NVFP4 -tp 8 --gpu-memory-utilization 0.9");
    assert_eq!(v["one"]["flags"], "-tp 8", "{v:#}");
    assert_eq!(v["two"]["flags"], "-tp 4", "{v:#}");
    let tries = tries_of(&v);
    assert_eq!(tries.len(), 2, "{tries:?}");
    assert!(
        tries.contains(&"-tp 8 --gpu-memory-utilization 0.9"),
        "{tries:?}"
    );
    let two = tries.iter().find(|f| f.starts_with("-tp 4")).unwrap();
    assert!(
        two.contains("--gpu-memory-utilization 0.9")
            && two.contains("2 servers")
            && two.contains("router")
            && !two.contains("-dp"),
        "{two}"
    );
    let s = ask(
        "python -m sglang.launch_server --model-path nvidia/Qwen3-235B-A22B-NVFP4 --tp 8 --mem-fraction-static 0.85",
    );
    assert!(
        tries_of(&s).contains(&"--tp 4 --mem-fraction-static 0.85 --dp-size 2"),
        "{tries:?}"
    );
}
