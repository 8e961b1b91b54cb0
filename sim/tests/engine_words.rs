//! A message about a launch speaks that launch's engine: a vLLM line's refusals and warnings name
//! vLLM's flags and scheduler, never SGLang's (and SGLang's stay SGLang's). Each case is one the
//! CLI once answered in SGLang's words for a `vllm serve` line.

use crate::common;

use common::sim_output;

/// stderr and exit code of `sim run` on the bare-metal preset with `model` and `line`.
fn run(model: &str, line: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "run",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        model,
        "--server-args",
        line,
        "--max-concurrency",
        "16",
        "--num-prompts",
        "16",
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = sim_output(&args);
    (code, err)
}

fn says_no_sglang(err: &str) {
    for sglang in [
        "SGLang",
        "--pp-size",
        "--speculative-algorithm",
        "--speculative-draft-model-path",
        "--mem-fraction-static",
        "--cuda-graph-max-bs",
        "fp8_e4m3",
    ] {
        assert!(!err.contains(sglang), "{sglang} in a vLLM answer: {err}");
    }
}

#[test]
fn vllm_mtp_over_pipeline_stages_is_refused_for_vllms_reason() {
    let (code, err) = run(
        "glm-5-nvfp4",
        r#"vllm serve nvidia/GLM-5-NVFP4 -tp 4 -pp 2 --speculative-config '{"method":"mtp","num_speculative_tokens":3}'"#,
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--pipeline-parallel-size"), "{err}");
    assert!(err.contains("vllm-project/vllm issue #44697"), "{err}");
    says_no_sglang(&err);
}

#[test]
fn sglang_speculation_over_pipeline_stages_keeps_sglangs_words() {
    let (code, err) = run(
        "glm-5-nvfp4",
        "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 4 --pp-size 2 --speculative-algorithm EAGLE",
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("SGLang runs no speculative decoding with --pp-size > 1"),
        "{err}"
    );
}

#[test]
fn a_vllm_draft_missing_is_named_as_vllm_names_one() {
    let (code, err) = run(
        "llama-3.1-70b",
        r#"vllm serve meta-llama/Llama-3.1-70B -tp 8 --speculative-config '{"method":"mtp","num_speculative_tokens":3}'"#,
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has no MTP layers to draft with"), "{err}");
    assert!(
        err.contains(r#"--speculative-config '{"method":"eagle3""#),
        "{err}"
    );
    says_no_sglang(&err);
}

#[test]
fn a_vllm_kv_bound_warning_speaks_vllm() {
    let (code, err) = run(
        "kimi-k2.5",
        "vllm serve moonshotai/Kimi-K2.5 -tp 8 --max-model-len 200000",
        &[
            "--random-input-len",
            "150000",
            "--random-output-len",
            "1000",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("KV-bound"), "{err}");
    assert!(err.contains("--gpu-memory-utilization 0.9"), "{err}");
    assert!(err.contains("preempt"), "{err}");
    // Kimi's one latent head shards over the whole TP group: DCP 8 is offered, by vLLM's flag
    assert!(
        err.contains("--decode-context-parallel-size 8 (each GPU of the TP group holds 1/8"),
        "{err}"
    );
    says_no_sglang(&err);
}

/// A GQA model whose KV heads fill the TP group cannot shard its cache over DCP (vLLM requires
/// dcp ≤ tp / num_kv_heads): a KV bound is not told to try it.
#[test]
fn a_vllm_kv_bound_offers_dcp_only_where_vllm_admits_it() {
    let flags = |larger| {
        sim::engine::Engine::Vllm
            .rules()
            .kv_try_flags(0.9, 80.0, larger)
            .join("; ")
    };
    assert!(!flags(None).contains("decode"), "{}", flags(None));
    assert!(
        flags(Some(4)).contains("--decode-context-parallel-size 4 (decode context parallelism"),
        "{}",
        flags(Some(4))
    );
    let gqa = models::ModelSpec::preset("glm-4.7-fp8").unwrap();
    let mla = models::ModelSpec::preset("kimi-k2.5").unwrap();
    let opts = sim::options::ServerOptions {
        engine: sim::engine::Engine::Vllm,
        ..Default::default()
    };
    let tp8 = models::Layout::tp(8);
    assert_eq!(sim::cost::dcp::largest_above(&gqa, &tp8, &opts), None);
    assert_eq!(sim::cost::dcp::largest_above(&mla, &tp8, &opts), Some(8));
    assert_eq!(
        sim::cost::dcp::largest_above(&mla, &models::Layout::tp(6), &opts),
        Some(6)
    );
    // a launch already at DCP 8 has no larger one to be offered
    let at_8 = sim::options::ServerOptions {
        decode_context_parallel: 8,
        ..opts.clone()
    };
    assert_eq!(sim::cost::dcp::largest_above(&mla, &tp8, &at_8), None);
}

/// Where the best-ranked layout has pipeline stages, `advise --question mtp` answers on another
/// one and says why, in the engine's words; its table shows the layout it answered on.
#[test]
fn the_mtp_answer_says_why_it_is_not_about_the_top_layout() {
    let args = [
        "advise",
        "--machine",
        "rtx-pro-6000-x8-vm-hostbounce",
        "--model",
        "glm-5-nvfp4",
        "--question",
        "mtp",
        "--draws",
        "20",
    ];
    let (code, out, err) = sim_output(&args);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = sim_output(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let top = v["ranking"][0]["layout"].as_str().unwrap();
    let answered = v["mtp"]["layout"].as_str().unwrap();
    assert!(top.contains("PP"), "{top}");
    let sentence = v["mtp"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains(&format!("{top} ranks first"))
            && sentence.contains("SGLang runs no speculative decoding with --pp-size > 1"),
        "{sentence}"
    );
    assert!(!answered.is_empty());
    // the table shows the answered layout's row (its rank below the top five)
    let shown = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| rank"))
        .any(|l| l.split('|').nth(2).is_some_and(|c| c.trim() == "TP8+EP2"));
    assert!(shown, "{out}");
}

/// `predict` names a vLLM launch's speculation as vLLM does (its method, its token count), and
/// files DCP's collectives under a row that names DCP.
#[test]
fn predict_names_vllm_speculation_and_dcp_traffic_in_vllms_terms() {
    let (code, out, err) = sim_output(&[
        "predict",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "glm-5.1-nvfp4",
        "--server-args",
        r#"vllm serve lukealonso/GLM-5.1-NVFP4-MTP -tp 8 -dcp 8 --speculative-config '{"method":"mtp","num_speculative_tokens":3}'"#,
        "--batch",
        "32",
        "--context",
        "8192",
    ]);
    assert_eq!(code, 0, "{err}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("speculative MTP (num_speculative_tokens 3, 4 tokens verified a step"),
        "{out}"
    );
    assert!(flat.contains("DP-attention / DCP gather-scatter"), "{out}");
    for sglang in ["NEXTN", "topk", "draft tokens"] {
        assert!(!flat.contains(sglang), "{sglang}: {out}");
    }
}
