//! festr2's GLM-5.2 with AMD's MXFP4 routed experts (`glm-5.2-mxfp4-experts`, thirty-fourth
//! session): its bytes as the page that ran it measured them, and its records read whole or
//! refused.

use crate::common;

use models::ModelSpec;
use sim::cost::{IterationModel, ServedModel};

/// The KV-cache tokens vLLM reported at start-up on the rtx6kpro GLM-5.2 v15 page
/// (Visual-Synthesizer/rtx6kpro `models/glm5.2_v15.md` @28065baf, '## v15 Reduced Validation',
/// column 'KV tokens', DCP 1 rows; TP 8, `--gpu-memory-utilization 0.90`, fp8 KV,
/// `--max-model-len 131072`, `--max-num-seqs 1`): `Luke NVFP4 A4 orig` and `BF16 AMD MXFP4
/// experts A8 orig`.
const PAGE_KV_TOKENS_NVFP4: f64 = 575_488.0;
const PAGE_KV_TOKENS_MXFP4_EXPERTS: f64 = 624_896.0;

fn served(model: &str) -> ServedModel {
    let line = format!(
        "vllm serve {model} --tensor-parallel-size 8 --kv-cache-dtype fp8 \
         --gpu-memory-utilization 0.90 --max-model-len 131072 --max-num-seqs 1 \
         --max-num-batched-tokens 8192 --max-cudagraph-capture-size 6"
    );
    common::vllm_served_tp8(&ModelSpec::preset_for_hf_id(model).unwrap(), &line)
}

/// The MXFP4 experts (one 1-byte scale per 32 values) hold 1/32 of a byte a value less than
/// NVFP4's (one per 16), every other module BF16 in both: the KV pool the weights leave grows
/// by what they free. The page measured +49,408 tokens (+8.6%) for the AMD checkpoint over
/// luke's NVFP4 at one launch; the preset's bytes give that growth within 10%. A wrong format
/// (NVFP4 bytes: no growth; BF16 dense MLPs quantized: far more) fails it.
#[test]
fn the_mxfp4_experts_free_the_kv_tokens_the_page_measured() {
    let (nv, mx) = (
        served("lukealonso/GLM-5.2-NVFP4"),
        served("festr2/GLM-5.2-BF16-AMDMXFP4experts"),
    );
    let (kv_nv, kv_mx) = (nv.memory().kv_tokens as f64, mx.memory().kv_tokens as f64);
    let predicted = kv_mx - kv_nv;
    let measured = PAGE_KV_TOKENS_MXFP4_EXPERTS - PAGE_KV_TOKENS_NVFP4;
    println!("KV tokens: {kv_nv} → {kv_mx} (+{predicted}); page +{measured}");
    assert!(
        (predicted / measured - 1.0).abs() < 0.10,
        "{predicted} vs {measured}"
    );
    // at one stream the step streams the BF16 modules, which both share: the two run alike
    let (t_nv, t_mx) = (
        nv.steady_decode(1, 0).tok_per_s,
        mx.steady_decode(1, 0).tok_per_s,
    );
    assert!(t_mx >= t_nv && t_mx < 1.03 * t_nv, "{t_mx} vs {t_nv}");
}

/// A record whose words say its BF16 linears were converted to FP8 (or MXFP8) as the engine
/// loaded them, with flags that carry no config saying which, is refused: priced on the
/// checkpoint's BF16 it would be misread (first-contact-3's online-FP8 AMD row was, for a
/// moment, 27% slow).
#[test]
fn a_conversion_at_load_the_flags_do_not_state_is_refused() {
    let record = |quant: &str| {
        common::vllm_tp8_decode_record(
            "festr2/GLM-5.2-BF16-AMDMXFP4experts",
            quant,
            "vllm serve festr2/GLM-5.2-BF16-AMDMXFP4experts --tensor-parallel-size 8 --quantization mxfp4 --kv-cache-dtype fp8",
        )
    };
    let plain = "MXFP4 (OCP microscaling, not NVFP4) routed experts from AMD, forced A8 (W4A8-MX); BF16 dense linears; fp8 KV cache";
    let e = sim::records::express(&record(plain)).unwrap();
    assert_eq!(e.model, "glm-5.2-mxfp4-experts");
    for (to, words) in [
        (
            "FP8",
            "eligible BF16 dense linears converted to static block FP8 at load",
        ),
        (
            "MXFP8",
            "eligible BF16 dense linears converted to MXFP8 at load",
        ),
    ] {
        let quant = format!("MXFP4 routed experts from AMD; {words}; fp8 KV cache");
        let why = sim::records::express(&record(&quant)).unwrap_err();
        assert!(
            why[0]
                .detail
                .contains(&format!("converted to {to} at load"))
                && why[0].detail.contains("--quantization-config"),
            "{why:?}"
        );
    }
}
