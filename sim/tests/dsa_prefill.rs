//! SGLang's DSA prefill on Blackwell: `--nsa-prefill-backend trtllm` runs trtllm-gen's sparse MLA
//! decode kernel with one row a prompt token (sgl-project/sglang #21783), each row reading its
//! own top-k keys. Those reads do not shrink with the heads a GPU holds, so TP8 pays them as TP4
//! does, and they cost at least the keys' bytes at the GPU's datasheet bandwidth.

use models::{Layout, ModelSpec};
use sim::cost::{CostModel, IterationBatch, IterationModel, Knobs, PrefillChunk};
use sim::machine::Machine;
use sim::options::ServerOptions;

/// Latency of one 8,192-token prompt prefilled whole by GLM-5-NVFP4 (its checkpoint's fp8 cache) on `tp` B200s.
fn prefill_s(tp: u32, backend: &str) -> f64 {
    let m = Machine::resolve("b200-x8").unwrap();
    let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
    let opts = ServerOptions {
        engine: sim::engine::Engine::Sglang,
        nsa: sim::options::NsaBackends {
            prefill: Some(backend.to_string()),
            decode: None,
        },
        ..ServerOptions::default()
    };
    let cm = CostModel::new(&m, &spec, Layout::tp(tp), &opts, Knobs::default()).unwrap();
    let batch = IterationBatch {
        decode_context_tokens: Vec::new(),
        prefill: vec![PrefillChunk {
            new_tokens: 8192,
            cached_tokens: 0,
        }],
    };
    cm.iteration(&batch).latency_s
}

#[test]
fn trtllm_prefill_reads_every_tokens_top_k_keys_whatever_the_tp() {
    // `tilelang` pads nothing and gathers nothing modelled: the FLOPs-only sparse prefill
    let gather = |tp| prefill_s(tp, "trtllm") - prefill_s(tp, "tilelang");
    let (tp4, tp8) = (gather(4), gather(8));
    // Σ over 8,192 causal queries of min(position, 2,048) keys, 576 B a key (fp8 latent + rope),
    // 78 layers, at B200's 8 TB/s
    let pairs: f64 = (1..=8192u64).map(|p| p.min(2048) as f64).sum();
    let floor_s = 78.0 * pairs * 576.0 / 8.0e12;
    assert!(
        tp8 >= floor_s,
        "TP8 gather {tp8} s below the bytes' floor {floor_s} s"
    );
    assert!(
        tp8 > 0.9 * tp4,
        "the gather shrank with TP: TP4 {tp4} s, TP8 {tp8} s"
    );
}

/// SGLang's `auto` cache for a DSA model follows the GPU, not the checkpoint: fp8 on SM100
/// (so GLM-5-FP8's bf16 checkpoint default holds ~2× the tokens there), bf16 on SM90; a build of
/// the 2026-03-07 – 04-02 window gave a server without DP attention bf16 on SM100 too. A named
/// cache and vLLM are untouched.
#[test]
fn sglangs_auto_dsa_cache_follows_the_gpu_and_the_build() {
    let spec = ModelSpec::preset("glm-5-fp8").unwrap();
    let tokens = |machine: &str, o: &ServerOptions| {
        let m = Machine::resolve(machine).unwrap();
        let cm = CostModel::new(&m, &spec, Layout::tp(8), o, Knobs::default()).unwrap();
        cm.memory().kv_tokens as f64
    };
    let sglang = ServerOptions {
        engine: sim::engine::Engine::Sglang,
        ..ServerOptions::default()
    };
    let named_bf16 = ServerOptions {
        kv_cache_dtype: Some(models::KvDtype::Bf16),
        ..sglang.clone()
    };
    let window = ServerOptions {
        dsa_build: sim::options::DsaBuild {
            kv_auto_dp_window: true,
            ..Default::default()
        },
        ..sglang.clone()
    };
    let b200 = tokens("b200-x8", &sglang) / tokens("b200-x8", &named_bf16);
    assert!(b200 > 1.5, "{b200}");
    assert_eq!(tokens("b200-x8", &window), tokens("b200-x8", &named_bf16));
    assert_eq!(tokens("h200-x8", &sglang), tokens("h200-x8", &named_bf16));
    let vllm = ServerOptions {
        engine: sim::engine::Engine::Vllm,
        ..ServerOptions::default()
    };
    let vllm_bf16 = ServerOptions {
        kv_cache_dtype: Some(models::KvDtype::Bf16),
        ..vllm.clone()
    };
    assert_eq!(tokens("b200-x8", &vllm), tokens("b200-x8", &vllm_bf16));
}
