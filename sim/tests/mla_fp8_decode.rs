//! MLA decode over an fp8 KV cache. The one fp8-cache MLA decode kernel measured (SGLang 0.5.14 on
//! an H200) streams at ~6% of bandwidth; that stays where it was measured. vLLM's and SGLang's
//! SM100 MLA kernels (FlashInfer's trtllm-gen MLA, FlashMLA's fp8 sparse decode) read an fp8 cache
//! as they read a bf16 one, so on a B200 an fp8 cache halves the KV reads of a decode step.

use models::{KvDtype, Layout, ModelSpec};
use sim::cost::Knobs;
use sim::cost::report::{PredictQuery, predict_layout};
use sim::engine::Engine;
use sim::machine::Machine;
use sim::options::ServerOptions;

/// The decode attention's milliseconds in one step of 64 requests at 8,700 cached tokens: its
/// KV reads, or its compute where the kernel's (padded) FLOPs outweigh them (nothing else in a
/// decode step of this size is compute-bound).
fn kv_read_ms(machine: &str, engine: Engine, kv: KvDtype) -> f64 {
    attention_ms("kimi-k2.5", machine, engine, kv)
}

fn attention_ms(model: &str, machine: &str, engine: Engine, kv: KvDtype) -> f64 {
    let machine = Machine::resolve(machine).unwrap();
    let spec = ModelSpec::preset(model).unwrap();
    let opts = ServerOptions {
        engine,
        kv_cache_dtype: Some(kv),
        ..ServerOptions::default()
    };
    let q = PredictQuery {
        batch: 64,
        context_tokens: 8_700,
        prefill_tokens: 0,
    };
    let p = predict_layout(&machine, &spec, Layout::tp(8), &opts, Knobs::default(), &q).unwrap();
    let b = p.breakdown.expect("the layout runs");
    b.kv_read_ms + b.compute_ms
}

#[test]
fn an_fp8_cache_halves_mla_decode_reads_on_blackwell() {
    for engine in [Engine::Vllm, Engine::Sglang] {
        let bf16 = kv_read_ms("b200-x8", engine, KvDtype::Bf16);
        let fp8 = kv_read_ms("b200-x8", engine, KvDtype::Fp8);
        let ratio = fp8 / bf16;
        assert!((0.45..=0.55).contains(&ratio), "{engine:?}: {fp8} / {bf16}");
    }
}

#[test]
fn sglangs_measured_fp8_mla_kernel_on_hopper_stays_what_it_measured() {
    let bf16 = kv_read_ms("h200-x8", Engine::Sglang, KvDtype::Bf16);
    let fp8 = kv_read_ms("h200-x8", Engine::Sglang, KvDtype::Fp8);
    // ~6% of bandwidth over half the bytes: several times the bf16 kernel's reads
    assert!(fp8 > 3.0 * bf16, "{fp8} vs {bf16}");
    // vLLM's Hopper kernels are not that one
    let vllm = kv_read_ms("h200-x8", Engine::Vllm, KvDtype::Fp8);
    assert!(vllm < bf16, "{vllm} vs {bf16}");
}

/// SGLang's DSA decode on SM90 with an fp8 cache is FlashMLA's fp8 sparse kernel, not the dense
/// kernel measured at ~6%: no dearer than the bf16 cache's.
#[test]
fn sglangs_fp8_dsa_decode_on_hopper_is_not_the_measured_dense_kernel() {
    let bf16 = attention_ms("glm-5-fp8", "h200-x8", Engine::Sglang, KvDtype::Bf16);
    let fp8 = attention_ms("glm-5-fp8", "h200-x8", Engine::Sglang, KvDtype::Fp8);
    assert!(fp8 <= bf16 * 1.001, "{fp8} vs {bf16}");
}
