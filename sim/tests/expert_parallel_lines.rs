//! b12x runs the routed experts sliced by TP only: SGLang refuses `--moe-runner-backend b12x`
//! with `--ep-size` > 1 (`ServerArgs._handle_b12x_moe_support`), vLLM `--moe-backend b12x` with
//! `--enable-expert-parallel` (`B12xExperts._supports_parallel_config`). A launch line that asks
//! for both is refused as the engine refuses it (one line, exit 2) rather than priced on b12x's
//! kernels; `advise --question ep` prices the EP side on the engine's own kernels and its
//! `try:` line drops the b12x flag, so that the line starts and reproduces what was priced.
//! `advise --question ep` answers for a vLLM line too (EP over the TP group,
//! `--enable-expert-parallel`), each `try:` line reproducing its side's figure. Also: vLLM's DP
//! ranks with TP inside each are refused in vLLM's words.

use crate::common;
use common::sim_output;
use serde_json::Value;

const MACHINE: &str = "rtx-pro-6000-x8-baremetal";
const WORKLOAD: [&str; 8] = common::SHORT_WORKLOAD;
const SGLANG: &str = "python -m sglang.launch_server --model-path lukealonso/GLM-5-NVFP4";

/// `sim predict` of `line`: (exit code, stderr).
fn predict(line: &str) -> (Option<i32>, String) {
    let (code, _, err) = sim_output(&[
        "predict",
        "--machine",
        MACHINE,
        "--server-args",
        line,
        "--batch",
        "8",
        "--context",
        "4096",
    ]);
    (Some(code), err)
}

#[test]
fn b12x_with_expert_parallelism_is_refused_in_each_engines_words() {
    for (line, flag) in [
        (
            format!("{SGLANG} --tp 8 --ep-size 8 --moe-runner-backend b12x"),
            "--moe-runner-backend b12x runs the routed experts sliced by TP only",
        ),
        (
            "vllm serve lukealonso/GLM-5-NVFP4 -tp 8 --enable-expert-parallel --moe-backend b12x"
                .to_string(),
            "--moe-backend b12x runs the routed experts sliced by TP only",
        ),
    ] {
        let (code, err) = predict(&line);
        assert_eq!(code, Some(2), "{line}: {err}");
        assert!(err.contains(flag), "{line}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    // the same runner without EP, and EP without it, are priced
    for line in [
        format!("{SGLANG} --tp 8 --moe-runner-backend b12x"),
        format!("{SGLANG} --tp 8 --ep-size 8"),
        "vllm serve lukealonso/GLM-5-NVFP4 -tp 8 --moe-backend b12x".to_string(),
        "vllm serve lukealonso/GLM-5-NVFP4 -tp 8 --enable-expert-parallel".to_string(),
    ] {
        let (code, err) = predict(&line);
        assert_eq!(code, Some(0), "{line}: {err}");
    }
}

/// `sim run` of `launcher flags` with the test's workload: its output tok/s.
fn run_tok_s(launcher: &str, flags: &str) -> f64 {
    let line = format!("{launcher} {flags}");
    let (code, out, err) = sim_output(
        &[
            &["run", "--machine", MACHINE, "--server-args", &line][..],
            &WORKLOAD[..],
            &["--format", "json"][..],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    r["output_throughput"].as_f64().unwrap()
}

/// `sim advise --question ep` of `line` with the test's workload (JSON).
fn ep_advice(line: &str) -> Value {
    let base = [
        "advise",
        "--machine",
        MACHINE,
        "--question",
        "ep",
        "--server-args",
        line,
        "--format",
        "json",
    ];
    let (code, out, err) = sim_output(&[&base[..], &WORKLOAD[..]].concat());
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn the_ep_question_answers_for_a_vllm_line_in_vllms_flags() {
    let launcher = "vllm serve lukealonso/GLM-5-NVFP4";
    let a = ep_advice(&format!(
        "{launcher} -tp 8 --gpu-memory-utilization 0.9 --kv-cache-dtype fp8"
    ));
    let ep = &a["ep"];
    assert_eq!(ep["ep"]["flags"], "-tp 8 --enable-expert-parallel", "{ep}");
    for side in ["ep", "other"] {
        let flags = format!(
            "{} --gpu-memory-utilization 0.9 --kv-cache-dtype fp8",
            ep[side]["flags"].as_str().unwrap()
        );
        assert!(
            !flags.contains("--ep-size") && !flags.contains("--pp-size"),
            "{flags}"
        );
        let priced = ep[side]["output_throughput"].as_f64().unwrap();
        let tried = run_tok_s(launcher, &flags);
        assert!(
            (priced - tried).abs() <= 1e-9 * priced,
            "{side}: {priced} vs {tried}"
        );
    }
}

#[test]
fn the_ep_question_prices_and_tries_ep_without_b12x() {
    let line = format!("{SGLANG} --tp 8 --moe-runner-backend b12x --mem-fraction-static 0.9");
    let a = ep_advice(&line);
    let tries: Vec<&str> = a["ep"]["flags_to_try"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let ep_try = tries
        .iter()
        .find(|f| f.contains("--ep-size 8"))
        .unwrap_or_else(|| panic!("an EP try line among {tries:?}"));
    assert!(!ep_try.contains("b12x"), "{ep_try}");
    // a non-EP layout keeps the user's runner
    for t in tries.iter().filter(|f| !f.contains("--ep-size")) {
        assert!(t.contains("--moe-runner-backend b12x"), "{t}");
    }
    // the EP line, run, reproduces the EP side's figure: it was priced without b12x
    let ep = a["ep"]["ep"]["output_throughput"].as_f64().unwrap();
    let tried = run_tok_s(
        "python -m sglang.launch_server --model-path lukealonso/GLM-5-NVFP4",
        ep_try,
    );
    assert!(
        (ep - tried).abs() <= 1e-9 * ep,
        "EP side {ep} vs its try line {tried}"
    );
}

#[test]
fn vllm_dp_ranks_with_tp_inside_are_refused_in_vllms_words() {
    let (code, err) =
        predict("vllm serve lukealonso/GLM-5-NVFP4 -tp 2 -dp 4 --enable-expert-parallel");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--data-parallel-size 4 with --tensor-parallel-size 2")
            && err.contains("-dp 8 --enable-expert-parallel")
            && !err.contains("--enable-dp-attention"),
        "{err}"
    );
}

/// `sim predict --format json` of a vLLM line on an NVLink box: (all-to-all wire bytes per GPU
/// and step, stderr with its lines' wrapping undone).
fn vllm_a2a(flags: &str) -> (f64, String) {
    let line = format!("vllm serve deepseek-ai/DeepSeek-V3 {flags}");
    let (code, out, err) = sim_output(&[
        "predict",
        "--machine",
        "h200-x8",
        "--server-args",
        &line,
        "--batch",
        "64",
        "--context",
        "4096",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{flags}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let l = &v["layouts"][0];
    (
        l["traffic"]["all_to_all_wire_bytes"].as_f64().unwrap(),
        err.split_whitespace().collect::<Vec<_>>().join(" "),
    )
}

/// vLLM's `--all2all-backend` as vLLM runs it (`use_all2all_kernels`: DP ranks and EP): a DeepEP
/// backend sends the experts' tokens by all-to-all where the default all-gathers them; without
/// DP ranks it does nothing and says so; the removed `pplx` falls back to the default and says
/// so; a value vLLM's argparse refuses is refused; `--enable-eplb` is recorded.
#[test]
fn vllm_all2all_backend_runs_only_with_dp_ranks_and_ep() {
    let dp_ep = "-dp 8 --enable-expert-parallel";
    let (default, _) = vllm_a2a(dp_ep);
    let (deepep, _) = vllm_a2a(&format!("{dp_ep} --all2all-backend deepep_low_latency"));
    assert_eq!(default, 0.0);
    assert!(deepep > 0.0, "{deepep}");
    let (tp_ep, err) =
        vllm_a2a("-tp 8 --enable-expert-parallel --all2all-backend deepep_low_latency");
    assert_eq!(tp_ep, 0.0);
    assert!(err.contains("no effect without -dp > 1"), "{err}");
    let (pplx, err) = vllm_a2a(&format!("{dp_ep} --all2all-backend pplx"));
    assert_eq!(pplx, default);
    assert!(
        err.contains("falls back to allgather_reducescatter"),
        "{err}"
    );
    let (_, err) = vllm_a2a(&format!("{dp_ep} --enable-eplb"));
    assert!(
        err.contains("recorded, no effect on cost: --enable-eplb"),
        "{err}"
    );
    // the ranking's try: line says the backend once, after the layout it runs with
    let (_, text, _) = sim_output(&[
        "advise",
        "--machine",
        "h200-x8",
        "--server-args",
        "vllm serve deepseek-ai/DeepSeek-V3 -dp 8 --enable-expert-parallel --all2all-backend deepep_low_latency --gpu-memory-utilization 0.9",
    ]);
    let try_line = text.lines().find(|l| l.starts_with("try: ")).unwrap();
    assert_eq!(
        try_line
            .matches("--all2all-backend deepep_low_latency")
            .count(),
        1,
        "{try_line}"
    );
    assert!(
        try_line.contains("--gpu-memory-utilization 0.9"),
        "{try_line}"
    );
    let (code, err) = predict(
        "vllm serve lukealonso/GLM-5-NVFP4 -dp 8 --enable-expert-parallel --all2all-backend deepep",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--all2all-backend deepep: is not one of"),
        "{err}"
    );
    // dual batch overlap: refused as vLLM refuses it without a DeepEP backend; read and said
    // as not priced with one
    let (code, err) =
        predict("vllm serve lukealonso/GLM-5-NVFP4 -dp 8 --enable-expert-parallel --enable-dbo");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("deepep_low_latency or deepep_high_throughput"),
        "{err}"
    );
    let (with_deepep, err) = vllm_a2a(&format!(
        "{dp_ep} --all2all-backend deepep_low_latency --enable-dbo"
    ));
    assert_eq!(with_deepep, deepep);
    assert!(
        err.contains("--enable-dbo: two micro-batches")
            && !err.contains("no effect on cost: --enable-dbo"),
        "{err}"
    );
}
