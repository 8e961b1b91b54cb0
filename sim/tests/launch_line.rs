//! Issue 13's acceptance: a user's own SGLang launch line and bench_serving line pasted into
//! `sim run`, `sim advise` and `sim calibrate`; the EP question with DeepEP on bare metal and in
//! the VM; bad profiles refused with the field named.

use crate::common;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

/// Every server flag of issue 13, spelled as SGLang spells them, with `--kv-cache-dtype fp8_e4m3`.
const LAUNCH: &str = r#"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 python3 -m sglang.launch_server \
    --model-path nvidia/GLM-5-NVFP4 --trust-remote-code --host 0.0.0.0 --port 30000 \
    --tensor-parallel-size 8 --pipeline-parallel-size 1 --expert-parallel-size 1 \
    --data-parallel-size 1 --quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3 \
    --attention-backend flashinfer --moe-runner-backend flashinfer_cutlass \
    --nsa-decode-backend trtllm --nsa-prefill-backend trtllm --fp8-gemm-backend cutlass \
    --chunked-prefill-size -1 --max-total-tokens 300000 --context-length 32768 \
    --disable-radix-cache --enable-mixed-chunk --schedule-policy lpm \
    --cuda-graph-max-bs 128 --mem-frac 0.85 --reasoning-parser glm45"#;

/// A bench_serving command as users run it (the `python3 -m sglang.bench_serving` part is what
/// they drop when pasting its flags).
const BENCH: &str = "python3 -m sglang.bench_serving --backend sglang --dataset-name random \
    --random-input-len 1000 --random-output-len 100 --random-range-ratio 1 --num-prompts 32 \
    --max-concurrency 16 --host 127.0.0.1 --port 30000 --disable-tqdm";

const VM: &str = "rtx-pro-6000-x8-vm-hostbounce";
const BARE: &str = "rtx-pro-6000-x8-baremetal";
const USER_BOX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/user-box.json"
);

use common::sim_cmd as sim;

/// `sim run --machine VM --model glm-4.7-fp8 --tp 8`, the workload flags to follow.
fn glm47_run_on_vm() -> Command {
    let mut c = sim();
    c.args([
        "run",
        "--machine",
        VM,
        "--model",
        "glm-4.7-fp8",
        "--tp",
        "8",
    ]);
    c
}

fn bench_flags() -> Vec<&'static str> {
    BENCH.split_whitespace().skip(3).collect()
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("valid JSON on stdout")
}

/// The flags that must be reported as not modelled, wherever the lines are pasted.
fn assert_lists_not_modelled(stderr: &str) {
    for f in [
        "--fp8-gemm-backend cutlass",
        "--reasoning-parser glm45",
        "--host 0.0.0.0",
        "--trust-remote-code",
        "--backend sglang",
        "--disable-tqdm",
    ] {
        assert!(
            stderr.contains(f),
            "`{f}` not listed as not modelled:\n{stderr}"
        );
    }
}

#[test]
fn sim_run_takes_the_launch_line_and_the_bench_line() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("res.jsonl");
    let out = sim()
        .args(["run", "--machine", VM, "--server-args", LAUNCH])
        .args(bench_flags())
        .arg("--output-file")
        .arg(&out_file)
        .args(["--format", "json"])
        .assert()
        .success();
    let o = out.get_output();
    assert_lists_not_modelled(&String::from_utf8_lossy(&o.stderr));
    let v = json(&o.stdout);
    assert_eq!(v["model"], "glm-5-nvfp4");
    assert_eq!(v["layout"], "TP8");
    assert_eq!(v["completed"], 32);
    let listed: Vec<&str> = v["flags_not_modelled"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(listed.contains(&"--fp8-gemm-backend cutlass"), "{listed:?}");
    // the DSA prefill and decode kernels are modelled (`SparsePrefill`, the measured decode
    // module on HGX boxes): not listed
    for f in [
        "--nsa-prefill-backend trtllm",
        "--nsa-decode-backend trtllm",
    ] {
        assert!(!listed.contains(&f), "{listed:?}");
    }
    // The predicted run is a bench_serving JSONL line that the measured-run reader reads back.
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("\"request_rate\":Infinity"), "{text}");
    let line: Value = serde_json::from_str(&text.replace("Infinity", "null")).unwrap();
    assert_eq!(line["server_info"]["tp_size"], 8);
    assert_eq!(line["shardwise"]["predicted"], true);
    let set =
        sim::bench_serving::read::load(out_file.to_str().unwrap(), Default::default()).unwrap();
    let p = &set.points[0];
    assert_eq!(p.workload.max_concurrency, Some(16));
    assert_eq!(
        (p.workload.random_input_len, p.workload.random_output_len),
        (1000, 100)
    );
    assert_eq!(p.metrics.output_throughput, v["output_throughput"].as_f64());
    // A second run appends a second line.
    sim()
        .args(["run", "--machine", VM, "--server-args", LAUNCH])
        .args(bench_flags())
        .arg("--output-file")
        .arg(&out_file)
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap().lines().count(),
        2
    );
}

#[test]
fn sim_advise_takes_the_launch_line_and_says_what_it_rests_on() {
    let out = sim()
        .args(["advise", "--machine", VM, "--server-args", LAUNCH])
        .args(bench_flags())
        .args(["--question", "ep", "--draws", "4", "--format", "json"])
        .assert()
        .success();
    let o = out.get_output();
    assert_lists_not_modelled(&String::from_utf8_lossy(&o.stderr));
    let v = json(&o.stdout);
    assert_eq!(v["schema_version"], sim::advise::ADVICE_SCHEMA_VERSION);
    let prov = v["provenance"].to_string();
    assert!(prov.contains("synthesized"), "{prov}");
    assert!(prov.contains("defaults, not fitted"), "{prov}");
    assert!(!v["flags_not_modelled"].as_array().unwrap().is_empty());
    // The try line carries the user's modelled flags.
    let try_line = v["ep"]["flags_to_try"][0].as_str().unwrap();
    assert!(try_line.contains("--kv-cache-dtype fp8_e4m3"), "{try_line}");
}

#[test]
fn sim_calibrate_takes_the_launch_line_and_the_bench_line() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    // The bench line gives the lengths the measurement did not record.
    let out = sim()
        .args(["calibrate", "--machine", VM, "--server-args", LAUNCH])
        .args(bench_flags())
        .arg("--measured")
        .arg(format!("{USER_BOX}#glm5-nvfp4-tp8-c64"))
        .args(["--fit", "memory,comm"])
        .arg("--output")
        .arg(&cal)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert_lists_not_modelled(&stderr);
    assert!(stderr.contains("--max-concurrency 16"), "{stderr}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    assert_eq!(c["layout"], "TP8");
    assert_eq!(c["server"]["kv_cache_dtype"], "fp8");
    assert_eq!(c["server"]["context_length"], 32768);
}

/// The EP question with DeepEP: EP8 with the backend against the best layout without EP.
fn ep_with_deepep(machine: &str) -> Value {
    let out = sim()
        .args(["advise", "--machine", machine, "--model", "glm-5-nvfp4"])
        .args(["--question", "ep", "--moe-a2a-backend", "deepep"])
        .args(["--num-prompts", "64", "--draws", "8", "--format", "json"])
        .assert()
        .success();
    json(&out.get_output().stdout)
}

#[test]
fn deepep_ep8_is_compared_with_the_best_layout_without_ep() {
    let v = ep_with_deepep(BARE);
    let ep = &v["ep"];
    assert_eq!(ep["ep"]["layout"], "EP8+deepep");
    assert!(
        ep["ep"]["flags"]
            .as_str()
            .unwrap()
            .contains("--moe-a2a-backend deepep")
    );
    // The other side is the best non-EP layout over all of them, not what survived the flag.
    let other = ep["other"]["flags"].as_str().unwrap();
    assert!(
        !other.contains("--ep-size") && !other.contains("a2a"),
        "{other}"
    );
    let best_non_ep = v["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["flags"].as_str().unwrap().contains("--ep-size"))
        .filter(|r| !r["run"].is_null())
        .count();
    assert!(
        best_non_ep >= 3,
        "non-EP layouts were simulated: {best_non_ep}"
    );
    // The try line is the winner's full flags: the backend is in it when EP wins.
    for f in ep["flags_to_try"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        assert_eq!(
            f.contains("--ep-size 8"),
            f.contains("--moe-a2a-backend deepep"),
            "{f}"
        );
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("no NVLink"), "{notes}");
}

#[test]
fn deepep_in_the_vm_warns_that_it_needs_p2p() {
    let v = ep_with_deepep(VM);
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("needs P2P") && notes.contains("low-latency mode"),
        "{notes}"
    );
}

fn exits_2_one_line(args: &[&str], needle: &str) {
    let out = sim().args(args).assert().code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains(needle), "`{needle}` not in: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

/// Writes the bare-metal preset with one value replaced at `pointer`.
fn bad_profile(dir: &Path, pointer: &str, v: Value) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/presets/machines/rtx-pro-6000-x8-baremetal.json"
    ))
    .unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    *doc.pointer_mut(pointer).unwrap() = v;
    let p = dir.join(format!("bad{}.json", pointer.replace('/', "_")));
    std::fs::write(&p, doc.to_string()).unwrap();
    p.display().to_string()
}

#[test]
fn bad_profiles_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (pointer, v, field) in [
        (
            "/devices/0/memory_bytes",
            Value::from(0),
            "devices[0].memory_bytes",
        ),
        (
            "/collectives/0/points/4/time_us/median",
            Value::from(1e300),
            "collectives[0].points[4].time_us.median",
        ),
        (
            "/collectives/2/points/1/busbw_gb_per_s",
            Value::from(-5.0),
            "collectives[2].points[1].busbw_gb_per_s",
        ),
    ] {
        let p = bad_profile(dir.path(), pointer, v);
        exits_2_one_line(&["run", "--machine", &p, "--model", "glm-5-nvfp4"], field);
    }
    let big = dir.path().join("huge.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(2_000_000_000)
        .unwrap();
    exits_2_one_line(
        &[
            "run",
            "--machine",
            big.to_str().unwrap(),
            "--model",
            "glm-5-nvfp4",
        ],
        "2.00 GB is more than",
    );
}

#[test]
fn formats_draws_and_disagreeing_flags_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let measured = format!("{USER_BOX}#glm47-fp8-tp8-sweep");
    exits_2_one_line(
        &[
            "calibrate",
            "--machine",
            VM,
            "--model",
            "glm-4.7-fp8",
            "--tp",
            "8",
            "--measured",
            &measured,
            "--output",
            cal.to_str().unwrap(),
            "--format",
            "csv",
        ],
        "table or json",
    );
    assert!(!cal.exists(), "no file before the format is refused");
    exits_2_one_line(
        &[
            "advise",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--draws",
            "0",
        ],
        "--draws",
    );
    let one_gpu = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../probe/profiles/h200-x1.json"
    );
    for cmd in ["advise", "sweep"] {
        exits_2_one_line(
            &[
                cmd,
                "--machine",
                one_gpu,
                "--model",
                "llama-3.1-405b",
                "--num-prompts",
                "4",
            ],
            "does not fit",
        );
    }
    exits_2_one_line(
        &["run", "--machine", VM, "--tp", "4", "--server-args", LAUNCH],
        "--tensor-parallel-size 8 (--server-args)",
    );
    exits_2_one_line(
        &[
            "run",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--kv-cache-dtype",
            "fp8",
        ],
        "fp8_e4m3",
    );
}

#[test]
fn one_kv_dtype_value_set_everywhere() {
    for v in ["fp8_e4m3", "fp8_e5m2", "bf16", "bfloat16", "auto"] {
        sim()
            .args(["models", "show", "glm-5-nvfp4", "--kv-cache-dtype", v])
            .assert()
            .success();
    }
    exits_2_one_line(
        &["models", "show", "glm-5-nvfp4", "--kv-cache-dtype", "fp8"],
        "fp8_e4m3",
    );
}

#[test]
fn sharegpt_runs_from_the_published_distribution_or_a_dataset_file() {
    let out = glm47_run_on_vm()
        .args([
            "--dataset-name",
            "sharegpt",
            "--num-prompts",
            "40",
            "--max-concurrency",
            "8",
        ])
        .args(["--format", "json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let mean_in = v["total_input_tokens"].as_f64().unwrap() / 40.0;
    assert!((60.0..400.0).contains(&mean_in), "mean prompt {mean_in}");
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("sg.json");
    let conv = r#"{"conversations": [{"from": "human", "value": "PROMPT"}, {"from": "gpt", "value": "ANSWER"}]}"#
        .replace("PROMPT", &"word ".repeat(80))
        .replace("ANSWER", &"text ".repeat(40));
    std::fs::write(&ds, format!("[{}]", vec![conv; 10].join(","))).unwrap();
    let out = glm47_run_on_vm()
        .args([
            "--dataset-name",
            "sharegpt",
            "--dataset-path",
            ds.to_str().unwrap(),
        ])
        .args(["--num-prompts", "10", "--format", "json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    // 400 bytes of prompt ≈ 100 tokens, 200 bytes of answer ≈ 50.
    assert_eq!(v["total_input_tokens"], 1000);
    assert_eq!(v["total_output_tokens"], 500);
    glm47_run_on_vm()
        .args([
            "--dataset-name",
            "sharegpt",
            "--dataset-path",
            "/no/such.json",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/no/such.json"));
}

#[test]
fn a_calibration_puts_the_models_own_error_in_the_confidence_line() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let flags = [
        "--model",
        "glm-4.7-fp8",
        "--tp",
        "8",
        "--disable-cuda-graph",
    ];
    sim()
        .args(["calibrate", "--machine", VM])
        .args(flags)
        .arg("--measured")
        .arg(format!("{USER_BOX}#glm47-fp8-tp8-sweep"))
        .args(["--fit", "memory", "--output"])
        .arg(&cal)
        .assert()
        .success();
    let out = sim()
        .env("COLUMNS", common::UNWRAPPED) // the confidence line is read as one line
        .args([
            "advise",
            "--machine",
            VM,
            "--model",
            "glm-4.7-fp8",
            "--disable-cuda-graph",
        ])
        .args(["--question", "ep", "--draws", "4", "--num-prompts", "32"])
        .args(["--random-input-len", "61", "--random-output-len", "100"])
        .arg("--calibration")
        .arg(&cal)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("verdict"))
        .expect("a confidence line");
    assert!(line.contains("the model's own error is ±"), "{line}");
    assert!(line.contains("calibration of TP8"), "{line}");
    assert!(text.contains("fitted by `sim calibrate`"), "{text}");
}

#[test]
fn the_vm_preset_says_its_curves_are_synthesized() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/presets/machines/rtx-pro-6000-x8-vm-hostbounce.json"
    ))
    .unwrap();
    let p: Value = serde_json::from_str(&text).unwrap();
    let notes: Vec<&str> = p["provenance"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes[0].starts_with("Synthesized, not measured"),
        "{notes:?}"
    );
    // "measured" only ever as "not measured" or about the other, bare-metal box.
    for n in &notes {
        for (i, _) in n.match_indices("measured") {
            let before = &n[..i];
            assert!(before.ends_with("not "), "a note claims a measurement: {n}");
        }
    }
    assert!(
        p["provenance"]["source"]
            .as_str()
            .unwrap()
            .starts_with("synthesized")
    );
}

/// `--cuda-graph-bs` on a pasted SGLang line: its largest size is the graph limit, so a decode
/// batch above it runs eagerly and pays its kernel launches; one within it costs the same as
/// under SGLang's default capture (the flag's reading: `engine/sglang/args/tests.rs`).
#[test]
fn cuda_graph_bs_runs_larger_decodes_eagerly() {
    use sim::engine::sglang::args::{DefaultsContext, from_launch_line};
    let model = models::ModelSpec::preset("glm-4.7-fp8").unwrap();
    let machine = sim::machine::Machine::resolve(BARE).unwrap();
    let ctx = DefaultsContext {
        gpu_memory_bytes: machine.memory_bytes(),
        tp: 8,
        pp: 1,
        dp_attention_size: 1,
    };
    let base = "python -m sglang.launch_server --model-path zai-org/GLM-4.7-FP8 --tp 8";
    let tok_s = |more: &str, streams: u32| {
        let a = from_launch_line(&format!("{base} {more}")).unwrap();
        let o = a.server_options(&ctx, &model).unwrap().options;
        sim::cost::ServedModel::new(
            &machine,
            &model,
            models::Layout::tp(8),
            &o,
            sim::cost::Knobs::default(),
        )
        .unwrap()
        .steady_decode(streams, 1024)
        .tok_per_s
    };
    let listed = "--cuda-graph-bs 1 2 4 8 16 32";
    assert!(tok_s(listed, 64) < tok_s("", 64));
    assert_eq!(tok_s(listed, 16), tok_s("", 16));
}

/// SGLang's speculative decoding without `SGLANG_ENABLE_SPEC_V2` runs without the overlap
/// scheduler, so each step pays its scheduler turn after the GPU's passes: the same launch is
/// slower per token than with the v2 worker, which keeps the overlap; with speculation off the
/// switch changes nothing.
#[test]
fn sglang_speculation_pays_its_scheduler_turn_unless_spec_v2() {
    let step_ms = |line: &str| {
        let v = common::predict_line_json(line, "1", "1000", &[]);
        let l = &v["layouts"][0];
        l["speculative"]["step_ms"]
            .as_f64()
            .unwrap_or_else(|| l["iteration_ms"].as_f64().unwrap())
    };
    let serve = "python3 -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8";
    let spec = "--speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4";
    let v1 = step_ms(&format!("{serve} {spec}"));
    let v2 = step_ms(&format!("SGLANG_ENABLE_SPEC_V2=True {serve} {spec}"));
    // SGLang's scheduler turn, at least: one turn (≈ 1 ms) a step
    assert!(v1 > v2 + 0.9, "{v1} vs {v2}");
    let plain = step_ms(serve);
    assert_eq!(
        plain,
        step_ms(&format!("SGLANG_ENABLE_SPEC_V2=True {serve}"))
    );
}
