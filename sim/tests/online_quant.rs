//! vLLM's online quantization (`--quantization-config '{"linear": {"weight": "mxfp8"}, …}'`):
//! read from a launch line and a record's words alike, applied to the BF16 linears of the served
//! model (less weight to hold and stream, more KV, a faster one-stream step), and refused where
//! it asks what shardwise does not price.

use crate::common;

use models::{ModelSpec, WeightFormat};
use sim::cost::{IterationModel, ServedModel};
use sim::engine::vllm::args::VllmLine;

const BASE: &str = "vllm serve lukealonso/GLM-5.2-NVFP4 --tensor-parallel-size 8 --kv-cache-dtype fp8 --quantization modelopt_fp4 --gpu-memory-utilization 0.9 --max-model-len 131072 --max-num-seqs 32";
const MXFP8: &str =
    r#"--quantization-config '{"linear":{"weight":"mxfp8"},"ignore":["re:.*kv_b_proj"]}'"#;

fn served(line: &str) -> ServedModel {
    common::vllm_served_tp8(&ModelSpec::preset("glm-5.2-nvfp4").unwrap(), line)
}

/// The online MXFP8 linears hold about half the BF16 ones' bytes (1 + 1/32 a value against 2):
/// the weights shrink, the KV pool grows by what they freed, and a one-stream step, which
/// streams them, is faster; by less than the whole step, which the NVFP4 experts, the
/// all-reduces and the kernels' floors keep.
#[test]
fn online_mxfp8_shrinks_the_bf16_linears_and_speeds_the_step() {
    let (bf16, mx) = (served(BASE), served(&format!("{BASE} {MXFP8}")));
    let (w0, w1) = (
        bf16.memory().weight_bytes_per_gpu,
        mx.memory().weight_bytes_per_gpu,
    );
    assert!(w1 < w0, "{w1} < {w0}");
    assert!(mx.memory().kv_tokens > bf16.memory().kv_tokens);
    let (t0, t1) = (
        bf16.steady_decode(1, 0).tok_per_s,
        mx.steady_decode(1, 0).tok_per_s,
    );
    assert!(t1 > 1.02 * t0 && t1 < 1.3 * t0, "{t1} vs {t0}");
}

/// The object is read as vLLM's `QuantizationConfigArgs`: a name or a `{"weight": …}` spec,
/// `ignore` kept; what shardwise cannot price for sure (a `moe` spec re-quantizing the
/// experts, an activation key, an unknown name or key) is refused with the flag named.
#[test]
fn the_quantization_config_is_read_as_vllm_takes_it_and_refused_where_unpriced() {
    let knobs = |json: &str| {
        VllmLine::parse(&format!("{BASE} --quantization-config '{json}'"))
            .and_then(|l| l.unwrap().knobs())
            .map(|k| k.online_quant)
    };
    let q = knobs(r#"{"linear":{"weight":"mxfp8"},"ignore":["re:.*kv_b_proj"]}"#)
        .unwrap()
        .unwrap();
    assert_eq!(q.linear, Some(WeightFormat::Mxfp8));
    assert_eq!(q.ignore, ["re:.*kv_b_proj"]);
    let fp8 = knobs(r#"{"linear":"fp8_per_block_dynamic"}"#)
        .unwrap()
        .unwrap();
    assert_eq!(fp8.linear, Some(WeightFormat::Fp8 { block: 128 }));
    assert_eq!(knobs(r#"{"ignore":[]}"#).unwrap(), None);
    for bad in [
        r#"{"linear":{"weight":"mxfp8","activation":"mxfp8"}}"#,
        r#"{"linear":{"weight":"int3"}}"#,
        r#"{"linaer":{"weight":"mxfp8"}}"#,
        r#"{"linear":{"weight":"mxfp8"},"ignore":"kv_b_proj"}"#,
    ] {
        let e = knobs(bad).expect_err(bad).to_string();
        assert!(e.contains("--quantization-config"), "{bad}: {e}");
    }
}

/// A record that says its BF16 linears were converted to MXFP8 at load expresses on the
/// preset's checkpoint with its flags' spec, and is refused where its flags carry none (never
/// priced as BF16).
#[test]
fn a_record_of_online_mxfp8_runs_with_its_flags_spec_or_is_refused() {
    let record = |flags: &str| {
        common::vllm_tp8_decode_record(
            "lukealonso/GLM-5.2-NVFP4",
            "nvfp4 (modelopt_fp4) routed experts; online mxfp8: eligible BF16 dense linears converted to MXFP8 at load; fp8 KV cache",
            flags,
        )
    };
    let e = sim::records::express(&record(&format!("{BASE} {MXFP8}"))).unwrap();
    assert_eq!(e.model, "glm-5.2-nvfp4");
    assert_eq!(
        e.knobs.online_quant.and_then(|q| q.linear),
        Some(WeightFormat::Mxfp8)
    );
    let why = sim::records::express(&record(BASE)).unwrap_err();
    assert!(
        why[0].detail.contains("--quantization-config"),
        "{:?}",
        why[0]
    );
    // a shorthand the launch line refuses is refused in a record too, not priced as BF16
    let int8 =
        "vllm serve lukealonso/GLM-5.2-NVFP4 -tp 8 --quantization int8_per_channel_weight_only";
    let why = sim::records::express(&record(int8)).unwrap_err();
    assert!(why.iter().any(|u| u.detail.contains("INT8")), "{why:?}");
}

/// `--quantization fp8` on a BF16 checkpoint quantizes its linears and experts as either engine
/// loads it (vLLM's and SGLang's `Fp8Config` without an FP8-serialized checkpoint; vLLM's
/// `fp8_per_block` / `mxfp8` shorthands likewise): the weights about halve and a decode step
/// gets faster, through `sim predict` as a user runs it. Until the twenty-seventh session the
/// flag was kept and changed nothing: a BF16 prediction for an FP8 server.
#[test]
fn quantization_fp8_on_a_bf16_checkpoint_halves_its_weights_in_both_engines() {
    let predict_on = |line: &str, layout: &str| {
        let v = common::predict_line_json(line, "8", "1024", &["--layout", layout]);
        let l = &v["layouts"][0];
        (
            l["memory"]["weights_gb_per_gpu"].as_f64().unwrap(),
            8.0 / (l["iteration_ms"].as_f64().unwrap() * 1e-3),
        )
    };
    let predict = |line: &str| predict_on(line, "TP2");
    // TP 2: a 384-column expert slice, whole 128-blocks for the per-block shorthand (at TP 4 its
    // 192 columns are refused, as vLLM refuses them)
    let vllm = "vllm serve Qwen/Qwen3-30B-A3B -tp 2";
    let sglang = "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 2";
    for (base, more) in [
        (vllm, "--quantization fp8"),
        (vllm, "--quantization fp8_per_block"),
        (vllm, "--quantization mxfp8"),
        (sglang, "--quantization fp8"),
    ] {
        let (w0, t0) = predict(base);
        let (w1, t1) = predict(&format!("{base} {more}"));
        assert!((0.5..0.6).contains(&(w1 / w0)), "{more}: {w1} / {w0}");
        assert!(t1 > 1.1 * t0, "{more}: {t1} vs {t0}");
    }
    // on a quantized checkpoint the method names the checkpoint's own scheme: nothing
    // converts, its BF16 attention and shared experts included
    let mm = "vllm serve nvidia/Qwen3.5-397B-A17B-NVFP4 -tp 4";
    let (w0, t0) = predict_on(mm, "TP4");
    let (w1, t1) = predict_on(&format!("{mm} --quantization fp8"), "TP4");
    assert_eq!((w0, t0), (w1, t1));
    // the weight-only INT8 shorthand is not priced: refused, the flag named
    let (code, _, err) = common::sim_output(&[
        "predict",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--server-args",
        "vllm serve Qwen/Qwen3-30B-A3B -tp 4 --quantization int8_per_channel_weight_only",
        "--batch",
        "1",
        "--context",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--quantization"), "{err}");
}
