//! `sim run|sweep|advise|calibrate|validate` as a user runs them, including bad input (exit 2,
//! one line saying what is wrong, no partial output file).

use crate::common;

use predicates::prelude::*;
use serde_json::Value;

const VM: &str = "rtx-pro-6000-x8-vm-hostbounce";
const USER_BOX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/user-box.json"
);

use common::sim_cmd as sim;

/// Runs `sim` with `args` and expects exit code 2 with `needle` on stderr.
fn exits_2<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>, needle: &str) {
    sim()
        .args(args)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(needle));
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("valid JSON on stdout")
}

const GLM47_FLAGS: [&str; 8] = [
    "--model",
    "glm-4.7-fp8",
    "--tp",
    "8",
    "--disable-cuda-graph",
    "--mem-fraction-static",
    "0.848",
    "--machine",
];

/// A short run on the user's VM preset: eight streams, sixteen prompts of 256 / 32 tokens.
const SMALL_RUN: [&str; 15] = [
    "run",
    "--machine",
    VM,
    "--model",
    "glm-5-nvfp4",
    "--tp",
    "8",
    "--max-concurrency",
    "8",
    "--num-prompts",
    "16",
    "--random-input-len",
    "256",
    "--random-output-len",
    "32",
];

/// [`SMALL_RUN`]'s JSON.
fn small_run_json() -> Value {
    let out = sim()
        .args(SMALL_RUN)
        .args(["--format", "json"])
        .assert()
        .success();
    json(&out.get_output().stdout)
}

#[test]
fn run_prints_bench_serving_keys() {
    let v = small_run_json();
    assert_eq!(v["completed"], 16);
    assert_eq!(v["max_concurrency"], 8);
    for k in [
        "duration",
        "request_throughput",
        "input_throughput",
        "output_throughput",
        "total_throughput",
        "mean_ttft_ms",
        "median_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "median_tpot_ms",
        "p99_tpot_ms",
        "mean_itl_ms",
        "median_itl_ms",
        "p99_itl_ms",
    ] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k} = {}", v[k]);
    }
    assert!(v["peak_running_requests"].as_u64().unwrap() <= 8);
    assert!(v["breakdown"]["decode_s"].as_f64().unwrap() > 0.0);
}

/// A run's time to first token is ranged on its own ground (the request's path and waits before
/// its prefill, which the replay leaves out, only add time): its interval lies mostly above the
/// point and is wider than a per-token latency's, and the table's provenance row says why.
#[test]
fn run_ranges_the_time_to_first_token_on_its_own_ground() {
    let v = small_run_json();
    let range = |key: &str| {
        let r = v["ranges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["figure"] == key)
            .unwrap_or_else(|| panic!("{key} ranged"))
            .clone();
        let [lo, hi] = [0, 1].map(|i| r["range"][i].as_f64().unwrap());
        (
            lo,
            r["value"].as_f64().unwrap(),
            hi,
            r["widened_by"].to_string(),
        )
    };
    let (lo, point, hi, why) = range("mean_ttft_ms");
    assert!(why.contains("time to first token"), "{why}");
    // centred above the point: more of it lies above than below
    assert!(hi / point > point / lo, "{lo} {point} {hi}");
    let (tlo, tpoint, thi, twhy) = range("mean_tpot_ms");
    assert!(!twhy.contains("time to first token"), "{twhy}");
    assert!(hi / lo > thi / tlo, "{lo}-{hi} vs {tlo}-{thi} ({tpoint})");
    let table = sim().args(SMALL_RUN).assert().success();
    let text = String::from_utf8_lossy(&table.get_output().stdout).to_string();
    assert!(
        text.contains("mean_ttft_ms: also time to first token"),
        "{text}"
    );
}

#[test]
fn run_table_and_pipeline_micro_batches() {
    sim()
        .args([
            "run",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--tp",
            "4",
            "--pp-size",
            "2",
        ])
        .args(["--max-concurrency", "16", "--num-prompts", "32"])
        .args(["--random-input-len", "128", "--random-output-len", "16"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Output token throughput"))
        .stdout(predicate::str::contains("Micro-batch sizes"));
}

#[test]
fn run_rejects_bad_input() {
    let base = ["run", "--machine", VM, "--model", "glm-5-nvfp4"];
    let with = |extra: [&'static str; 2]| base.into_iter().chain(extra);
    exits_2(with(["--tp", "3"]), "error:");
    exits_2(with(["--random-input-len", "100000000"]), "context");
    exits_2(with(["--max-concurrency", "1,8"]), "sim sweep");
    exits_2(with(["--random-range-ratio", "2"]), "range-ratio");
}

#[test]
fn sweep_covers_every_layout_and_concurrency() {
    let out = sim()
        .args(["sweep", "--machine", VM, "--model", "glm-5-nvfp4"])
        .args(["--max-concurrency", "1,16", "--num-prompts", "16"])
        .args(["--workloads", "128:16,512:8", "--format", "csv"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("layout,flags,max_concurrency")
    );
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() >= 3 * 2 * 2, "{text}");
    assert_eq!(rows.len() % 4, 0);
    for name in ["TP8,", "TP4xPP2,", "EP8,"] {
        assert!(rows.iter().any(|r| r.starts_with(name)), "{name} missing");
    }
}

#[test]
fn advise_answers_the_ep_question_with_confidence() {
    let out = sim()
        .args([
            "advise",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--question",
            "ep",
        ])
        .args([
            "--max-concurrency",
            "64",
            "--num-prompts",
            "64",
            "--draws",
            "16",
        ])
        .args(["--random-input-len", "1000", "--random-output-len", "100"])
        .args(["--format", "json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let ep = &v["ep"];
    assert!(["yes", "no", "depends-on-concurrency"].contains(&ep["verdict"].as_str().unwrap()));
    let c = ep["confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&c));
    assert_eq!(ep["draws"], 16);
    assert!(ep["sentence"].as_str().unwrap().contains("EP8"));
    assert!(!v["ranking"].as_array().unwrap().is_empty());
}

#[test]
fn advise_refuses_ep_for_a_dense_model() {
    exits_2(
        [
            "advise",
            "--machine",
            VM,
            "--model",
            "llama-3.1-70b",
            "--question",
            "ep",
            "--num-prompts",
            "8",
            "--draws",
            "2",
        ],
        "is dense",
    );
}

#[test]
fn calibrate_then_validate_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let measured = format!("{USER_BOX}#glm47-fp8-tp8-sweep");
    sim()
        .arg("calibrate")
        .args(GLM47_FLAGS)
        .arg(VM)
        .args(["--measured", &measured, "--fit", "cpu", "-o"])
        .arg(&cal)
        .assert()
        .success()
        .stdout(predicate::str::contains("RMS"));
    let c: Value = serde_json::from_slice(&std::fs::read(&cal).unwrap()).unwrap();
    assert_eq!(c["schema_version"], 2);
    assert!(
        c["rms_log_error_after"].as_f64().unwrap() <= c["rms_log_error_before"].as_f64().unwrap()
    );
    let out = sim()
        .arg("validate")
        .args(GLM47_FLAGS)
        .arg(VM)
        .args(["--measured", &measured, "--format", "json", "--calibration"])
        .arg(&cal)
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    assert_eq!(v["points"].as_array().unwrap().len(), 4);
    // a calibrated run of the same machine and model takes the calibration's out-of-sample spread
    // for the box's offset, not a new source's first-contact one: a narrower interval, and says so
    let throughput_range = |cal: Option<&std::path::Path>| {
        let mut cmd = sim();
        cmd.arg("run").args(GLM47_FLAGS).arg(VM);
        cmd.args(["--num-prompts", "16", "--format", "json"]);
        if let Some(c) = cal {
            cmd.arg("--calibration").arg(c);
        }
        let v = json(&cmd.assert().success().get_output().stdout);
        // the first figure ranged is the output throughput
        let r = &v["ranges"][0];
        assert_eq!(r["figure"], "output_throughput", "{r}");
        let [lo, hi] = [0, 1].map(|i| r["range"][i].as_f64().unwrap());
        (hi / lo, r["widened_by"].to_string())
    };
    let (plain, plain_why) = throughput_range(None);
    let (calibrated, why) = throughput_range(Some(&cal));
    assert!(calibrated < plain, "{calibrated} vs {plain}");
    assert!(why.contains("calibrated on this box"), "{why}");
    assert!(!plain_why.contains("calibrated"), "{plain_why}");
    // the report's bands take it too, on the machine it was fitted on and no other
    let out = dir.path().join("report");
    sim()
        .arg("report")
        .args(&GLM47_FLAGS[..2])
        .args(&GLM47_FLAGS[4..7])
        .args(["--machine", VM, "--machine", "rtx-pro-6000-x8-baremetal"])
        .args(["--num-prompts", "16", "--max-concurrency", "1,8"])
        .args(["--at-concurrency", "8", "--draws", "4", "--out"])
        .arg(&out)
        .arg("--calibration")
        .arg(&cal)
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let caption_of = |chart: &str| {
        let at = html
            .find(chart)
            .unwrap_or_else(|| panic!("{chart} in the page"));
        let start = html[..at]
            .rfind("80% interval")
            .expect("a band caption before it");
        html[start..at].to_string()
    };
    let vm = caption_of(&format!("{VM}-output-throughput.svg"));
    assert!(vm.contains("out-of-sample spread"), "{vm}");
    let metal = caption_of("rtx-pro-6000-x8-baremetal-output-throughput.svg");
    assert!(!metal.contains("out-of-sample spread"), "{metal}");
}

#[test]
fn partial_jsonl_keeps_good_lines() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("runs.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"completed": 16, "duration": 10.0, "output_throughput": 100.0, "max_concurrency": 4, "random_input_len": 128, "random_output_len": 32}"#,
            "\n",
            r#"{"completed": 16, "duration": 10.0, "max_concurrency": 4}"#,
            "\n"
        ),
    )
    .unwrap();
    sim()
        .args([
            "validate",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--measured",
        ])
        .arg(&f)
        .assert()
        .success()
        .stderr(predicate::str::contains("skipped 1 record(s), kept 1"))
        .stderr(predicate::str::contains("output_throughput"));
}

#[test]
fn bad_measurements_and_calibrations_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"completed\": 3}\nnot json\n").unwrap();
    let validate = |measured: String| {
        [
            "validate",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--measured",
        ]
        .map(String::from)
        .into_iter()
        .chain([measured])
    };
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    exits_2(validate(path(&bad)), "no usable measurement");
    let csv = dir.path().join("fig.csv");
    std::fs::write(&csv, "concurrency,output_tok_s\n1,10\n").unwrap();
    exits_2(validate(path(&csv)), "input_len");
    exits_2(
        validate(format!("{USER_BOX}#no-such-run")),
        "glm47-fp8-tp8-sweep",
    );
    // GLM-5 figures did not record lengths: the user must say which to assume.
    exits_2(
        validate(format!("{USER_BOX}#glm5-nvfp4-tp8-c64")),
        "--random-input-len",
    );
    let cal = dir.path().join("cal.json");
    std::fs::write(&cal, "{\"schema_version\": 1").unwrap();
    sim()
        .args([
            "run",
            "--machine",
            VM,
            "--model",
            "glm-5-nvfp4",
            "--calibration",
        ])
        .arg(&cal)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("malformed JSON"));
    // A calibration that cannot be written leaves nothing behind.
    let out = dir.path().join("missing-dir").join("cal.json");
    sim()
        .arg("calibrate")
        .args(GLM47_FLAGS)
        .arg(VM)
        .args([
            "--measured",
            &format!("{USER_BOX}#glm47-fp8-tp8-sweep"),
            "--fit",
            "cpu",
            "-o",
        ])
        .arg(&out)
        .assert()
        .code(2);
    assert!(!out.exists());
}

/// With no speculative flag, "should we turn on MTP?" is answered for the chain draft length
/// that pays best where it beats the engine's default draft (for GLM-5 SGLang's EAGLE tree of 8
/// draft tokens, which at 64 streams gains less than a chain of a few): the answer names the
/// default it replaced and that default's gain, and its flags to try are the chain's.
#[test]
fn advise_mtp_without_speculative_flags_answers_for_the_draft_length_that_pays() {
    let args = "advise --machine rtx-pro-6000-x8-vm-hostbounce --model glm-5-nvfp4 --question mtp \
                --max-concurrency 64 --num-prompts 16 --draws 4 --format json";
    let out = sim().args(args.split_whitespace()).assert().success();
    let v = json(&out.get_output().stdout);
    let m = &v["mtp"];
    let default = &m["instead_of_default"];
    assert!(default.is_object(), "{m}");
    let (gain, default_gain) = (
        m["at"]["gain"].as_f64().unwrap(),
        default["gain"].as_f64().unwrap(),
    );
    assert!(gain > default_gain, "{gain} vs {default_gain}");
    assert_eq!(m["plan"]["eagle_topk"], 1);
    let steps = m["plan"]["num_steps"].as_u64().unwrap();
    assert_eq!(m["plan"]["num_draft_tokens"].as_u64().unwrap(), steps + 1);
    assert!(
        default["config"].as_str().unwrap().contains("topk 4"),
        "{default}"
    );
    let sentence = m["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("No speculative flag was given"),
        "{sentence}"
    );
    let flags = m["flags_to_try"].as_str().unwrap();
    assert!(
        flags.contains(&format!("--speculative-num-steps {steps} ")),
        "{flags}"
    );
    // the verdict word is the intervals' odds: sure and faster with speculation here, so Yes;
    // were the odds below the bar it would be Depends with the flags kept, were the other side
    // faster No with the speculative flags taken out of the `try:` line (but kept for the
    // measurement that decides)
    let mut a: sim::advise::mtp::MtpAnswer = serde_json::from_value(m.clone()).unwrap();
    let odds = a.odds.clone().expect("the answer carries its odds");
    assert!(odds.sure && odds.faster == "with speculation", "{odds:?}");
    assert_eq!(a.verdict, sim::advise::mtp::MtpVerdict::Yes);
    let mut unsure = a.clone();
    unsure.odds.as_mut().unwrap().sure = false;
    unsure.follow_odds();
    let head = |x: &sim::advise::mtp::MtpAnswer| x.sentence.split(':').next().unwrap().to_string();
    assert_eq!(
        (unsure.verdict, head(&unsure), &unsure.flags_to_try),
        (
            sim::advise::mtp::MtpVerdict::Depends,
            "Depends (measure it)".into(),
            &a.flags_to_try
        )
    );
    a.odds.as_mut().unwrap().faster = "without".into();
    a.follow_odds();
    assert_eq!(
        (a.verdict, head(&a)),
        (sim::advise::mtp::MtpVerdict::No, "No".into())
    );
    assert!(
        !a.flags_to_try.contains("--speculative"),
        "{}",
        a.flags_to_try
    );
    assert_eq!(a.flags_with_speculation(), flags);
}

/// `sim advise --question mtp` for GLM-5-NVFP4 on bare metal with EAGLE drafting.
const MTP_ON_GLM5: [&str; 9] = [
    "advise",
    "--machine",
    "rtx-pro-6000-x8-baremetal",
    "--model",
    "glm-5-nvfp4",
    "--question",
    "mtp",
    "--speculative-algorithm",
    "EAGLE",
];

#[test]
fn advise_answers_the_mtp_question_with_a_crossover_and_the_accept_length_used() {
    let out = sim()
        .args(MTP_ON_GLM5)
        .args([
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "4",
            "--max-concurrency",
            "8",
            "--num-prompts",
            "16",
            "--draws",
            "8",
            "--format",
            "json",
        ])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let m = &v["mtp"];
    assert!(["yes", "no", "depends"].contains(&m["verdict"].as_str().unwrap()));
    assert_eq!(m["plan"]["accept_source"], "prior");
    assert_eq!(m["plan"]["prompt_kind"], "random");
    assert!(
        m["accept_from"].as_str().unwrap().contains("PR 41044"),
        "{}",
        m["accept_from"]
    );
    assert_eq!(m["plan"]["num_draft_tokens"], 4);
    // the acceptance the answer flips at lies on the far side of the one assumed from the gain
    let gain = m["at"]["gain"].as_f64().unwrap();
    let assumed = m["plan"]["accept_length"].as_f64().unwrap();
    if let Some(flip) = m["flip_accept_length"].as_f64() {
        assert_eq!(
            gain > 1.0,
            flip < assumed,
            "gain {gain}, flip {flip}, assumed {assumed}"
        );
        let words = format!("flips at an accept length of {flip:.2}");
        assert!(
            m["sentence"].as_str().unwrap().contains(&words),
            "{}",
            m["sentence"]
        );
    }
    // every chain draft length 1–6, best first, the best one in the `try:` flags
    let lengths = m["by_draft_length"].as_array().unwrap();
    assert_eq!(lengths.len(), 6);
    let gains: Vec<f64> = lengths
        .iter()
        .map(|p| p["gain"].as_f64().unwrap())
        .collect();
    assert!(gains.windows(2).all(|w| w[0] >= w[1]), "{gains:?}");
    let pts = m["by_concurrency"].as_array().unwrap();
    assert!(pts.len() >= 10);
    // one stream gains from drafting: the weights are read once for several tokens
    assert!(pts[0]["gain"].as_f64().unwrap() > 1.2, "{}", pts[0]);
    assert!(m["sentence"].as_str().unwrap().contains("accept length"));
    // a measured / given acceptance length is said to be given
    let out = sim()
        .args(MTP_ON_GLM5)
        .args([
            "--speculative-accept-length",
            "1.2",
            "--num-prompts",
            "16",
            "--draws",
            "4",
            "--format",
            "json",
        ])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    assert_eq!(v["mtp"]["plan"]["accept_source"], "given");
}

/// SGLang resets `--max-running-requests` to 48 for a speculative server that does not give it:
/// at 64 streams "should we turn on MTP?" is answered with the flag raised to the load (in the
/// flags to try), and the answer says what the capped server gives, which is less; given on the
/// command line, the user's value stands and nothing is lifted.
#[test]
fn advise_mtp_lifts_sglangs_own_running_cap_above_48_streams() {
    let run = |extra: &str| {
        let args = format!(
            "advise --machine rtx-pro-6000-x8-baremetal --model glm-5-nvfp4 --question mtp \
             --max-concurrency 64 --num-prompts 16 --draws 4 --format json {extra}"
        );
        let out = sim().args(args.split_whitespace()).assert().success();
        json(&out.get_output().stdout)["mtp"].clone()
    };
    let m = run("");
    let cap = &m["running_cap"];
    assert_eq!(
        (cap["cap"].as_u64(), cap["lifted_to"].as_u64()),
        (Some(48), Some(64)),
        "{m}"
    );
    let (capped, lifted) = (
        cap["capped_tok_s"].as_f64().unwrap(),
        m["at"]["with_tok_s"].as_f64().unwrap(),
    );
    assert!(capped < lifted * 0.95, "{capped} vs {lifted}");
    let flags = m["flags_to_try"].as_str().unwrap();
    assert!(flags.ends_with("--max-running-requests 64"), "{flags}");
    assert!(
        m["sentence"]
            .as_str()
            .unwrap()
            .contains("at most 48 requests")
    );
    let given = run("--max-running-requests 32");
    assert!(given["running_cap"].is_null(), "{given}");
    assert!(
        !given["flags_to_try"]
            .as_str()
            .unwrap()
            .contains("--max-running-requests 64")
    );
}

/// SGLang runs a top-1 EAGLE chain without its overlap scheduler unless `SGLANG_ENABLE_SPEC_V2`
/// keeps it on: "should we turn on MTP?" then says what the switch gives at the load (in the
/// answer's JSON and a second `try` line), and that is the answer a launch with the switch gets;
/// a launch with the switch, or a tree draft (which the v2 worker cannot run), gets no such line.
#[test]
fn advise_mtp_says_what_sglangs_spec_v2_overlap_gives_a_top1_chain() {
    let draft = |topk: u32, tokens: u32| {
        format!(
            "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 \
             --speculative-algorithm EAGLE --speculative-num-steps 3 \
             --speculative-eagle-topk {topk} --speculative-num-draft-tokens {tokens}"
        )
    };
    let run = |line: &str| {
        let out = sim()
            .args(
                "advise --machine rtx-pro-6000-x8-baremetal --question mtp --max-concurrency 8 \
                 --num-prompts 16 --draws 4 --format json --server-args"
                    .split_whitespace(),
            )
            .arg(line)
            .assert()
            .success();
        json(&out.get_output().stdout)["mtp"].clone()
    };
    let off = run(&draft(1, 4));
    let hint = &off["spec_overlap"];
    assert_eq!(hint["env"], "SGLANG_ENABLE_SPEC_V2=True", "{off}");
    let over = hint["over_answer"].as_f64().unwrap();
    // the scheduler turn comes off the step: a gain, and not a large one
    assert!(over > 1.001 && over < 1.2, "{over}");
    assert!(
        off["sentence"]
            .as_str()
            .unwrap()
            .contains("without its overlap scheduler")
    );
    let on = run(&format!("SGLANG_ENABLE_SPEC_V2=True {}", draft(1, 4)));
    assert!(on["spec_overlap"].is_null(), "{on}");
    let (hinted, answered) = (
        hint["gain"].as_f64().unwrap(),
        on["at"]["gain"].as_f64().unwrap(),
    );
    assert!((hinted - answered).abs() < 1e-9, "{hinted} vs {answered}");
    let tree = run(&draft(4, 8));
    assert!(tree["spec_overlap"].is_null(), "{tree}");
}

/// `sim CMD --server-args LINE` of vLLM's MTP 3 on GLM-5.2 under B12X_MLA_SPARSE, `env` before
/// `vllm serve` (the fork's extend-kernel switch), as JSON.
fn glm52_b12x_mtp(cmd: &str, env: &str) -> Value {
    let line = format!(
        "{env} vllm serve lukealonso/GLM-5.2-NVFP4 --tensor-parallel-size 8 \
             --attention-backend B12X_MLA_SPARSE --moe-backend b12x --kv-cache-dtype fp8 \
             --speculative-config '{{\"method\":\"mtp\",\"num_speculative_tokens\":3}}'"
    );
    let out = sim()
        .args(cmd.split_whitespace())
        .arg("--server-args")
        .arg(line)
        .assert()
        .success();
    json(&out.get_output().stdout)
}

/// `sim run` of a launch whose verify the engine says is not priced ranges it on that ground, as
/// `validate` ranges the same launch's record: the error model's unpriced-step centre and spread.
#[test]
fn run_ranges_an_unpriced_verify_on_its_own_ground() {
    let widened = |env: &str| {
        let cmd = "run --machine rtx-pro-6000-x8-baremetal --dataset-name random \
                   --random-input-len 1000 --random-output-len 200 --num-prompts 8 \
                   --max-concurrency 1 --format json";
        glm52_b12x_mtp(cmd, env)["ranges"][0]["widened_by"].to_string()
    };
    assert!(
        widened("VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=0").contains("(speculative step unpriced)"),
        "{}",
        widened("VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=0")
    );
    let priced = widened("VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=1");
    assert!(!priced.contains("speculative step unpriced"), "{priced}");
}

/// vLLM's MTP on a GLM-5.2 launch under B12X_MLA_SPARSE: with the fork's switch at `0` the
/// verify runs b12x's extend kernel, a caveat the answer says and the prediction is flagged for;
/// with the switch unset the launch names no build, so the answer says what the June builds do
/// (not flagged); at `1` it is the priced decode kernel and nothing is said.
#[test]
fn advise_mtp_says_what_a_b12x_verify_may_cost_by_build() {
    let run = |env: &str| {
        let cmd = "advise --machine rtx-pro-6000-x8-baremetal --model glm-5.2-nvfp4 \
                   --question mtp --max-concurrency 1 --num-prompts 8 --draws 4 --format json";
        glm52_b12x_mtp(cmd, env)["mtp"].clone()
    };
    let extend = run("VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=0");
    let caveat = &extend["caveat"];
    assert!(caveat.as_str().unwrap().contains("not priced"), "{caveat}");
    let unknown = run("NCCL_P2P_LEVEL=SYS");
    assert!(
        unknown["caveat"]
            .as_str()
            .unwrap()
            .contains("the launch names no build"),
        "{unknown}"
    );
    let decode = run("VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=1");
    assert!(decode["caveat"].is_null());
    // the unpriced verify stands on its own ground in the odds, as its record does in
    // `validate`: the speculating side's interval is wider than where the step is priced
    let spread = |a: &Value| {
        let r = &a["odds"]["ranges"][0];
        r[1].as_f64().unwrap() / r[0].as_f64().unwrap()
    };
    assert_eq!(extend["odds"]["faster"], "with speculation", "{extend}");
    assert!(
        spread(&extend) > spread(&decode) + 0.05,
        "{} vs {}",
        spread(&extend),
        spread(&decode)
    );
    assert!((spread(&unknown) - spread(&decode)).abs() < 1e-9);
}
