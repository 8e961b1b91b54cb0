//! SGLang's DSA decode on HGX boxes priced from the measured attention module
//! (`sim::cost::dsa_module_table`): a pure decode step's attention block and indexer are the
//! module's rows (NVIDIA aiconfigurator's SGLang 0.5.14 tables), where the tables hold the GPU,
//! the weights, the cache, the decode kernel and the heads a GPU holds; elsewhere the cost
//! model's own kernels stand.

use models::{KvDtype, Layout, ModelSpec};
use sim::cost::{CostModel, IterationBatch, IterationModel, Knobs};
use sim::machine::Machine;
use sim::options::{ModelOverrides, NsaBackends, ServerOptions};

/// SGLang serving GLM-5-FP8 with an fp8 cache, the DSA decode kernel `decode` (`None`: SGLang's
/// default) and, where given, an index-cache pattern of `own` layers scoring their own top-k
/// (then the rest reusing the previous one's).
fn opts(decode: Option<&str>, own: Option<usize>) -> ServerOptions {
    ServerOptions {
        engine: sim::engine::Engine::Sglang,
        kv_cache_dtype: Some(KvDtype::Fp8),
        nsa: NsaBackends {
            prefill: None,
            decode: decode.map(str::to_string),
        },
        model_overrides: ModelOverrides {
            index_topk_pattern: own.map(|n| "F".repeat(n) + &"S".repeat(78 - n)),
            ..ModelOverrides::default()
        },
        ..ServerOptions::default()
    }
}

/// One decode step of `requests` requests at `cached` tokens on 8 GPUs of `machine` at TP8.
fn step_s(machine: &str, o: &ServerOptions, requests: usize, cached: u32) -> (f64, String) {
    let m = Machine::resolve(machine).unwrap();
    let spec = ModelSpec::preset("glm-5-fp8").unwrap();
    let cm = CostModel::new(&m, &spec, Layout::tp(8), o, Knobs::default()).unwrap();
    let batch = IterationBatch {
        decode_context_tokens: vec![cached; requests],
        prefill: Vec::new(),
    };
    let note = cm.decode_attention_note(requests as u32, cached);
    (cm.iteration(&batch).latency_s, note)
}

/// 38 layers that reuse the previous layer's top-k save 38 indexers: on a B200 at 64 requests
/// and 4,096 cached tokens each is the measured module less the module without it, 117.0 − 57.8
/// = 59.2 µs (the cost model's own kernels gave 38 µs there).
#[test]
fn a_b200s_indexer_is_the_measured_module_less_the_module_without_it() {
    let o = |own| opts(Some("trtllm"), Some(own));
    let (all, note) = step_s("b200-x8", &o(78), 64, 4096);
    let (forty, _) = step_s("b200-x8", &o(40), 64, 4096);
    assert!(note.contains("measured DSA module"), "{note}");
    let per_layer_us = (all - forty) / 38.0 * 1e6;
    assert!(
        (per_layer_us - 59.2).abs() < 0.3,
        "{per_layer_us} µs an indexer"
    );
}

/// Hopper's default decode kernel for an fp8 cache is FlashMLA's `flashmla_kv`, measured there;
/// a kernel the tables did not run (`tilelang`) and vLLM keep the cost model's own kernels.
#[test]
fn the_module_prices_only_the_kernels_the_tables_ran() {
    let (_, h200) = step_s("h200-x8", &opts(None, None), 16, 8192);
    assert!(
        h200.contains("h200 flashmla_kv, glm5, fp8 weights"),
        "{h200}"
    );
    let (_, tilelang) = step_s("b200-x8", &opts(Some("tilelang"), None), 16, 8192);
    assert!(
        tilelang.starts_with("decode attention: efficiency curve"),
        "{tilelang}"
    );
    let vllm = ServerOptions {
        engine: sim::engine::Engine::Vllm,
        ..opts(None, None)
    };
    let (_, v) = step_s("b200-x8", &vllm, 16, 8192);
    assert!(!v.contains("measured DSA module"), "{v}");
}

/// DeepSeek-V3.2 (its HF config, fp8 blocks) on an H200 at TP8 with SGLang's default decode
/// kernel for an fp8 cache: the whole module measured for its shape (16 heads a GPU, the indexer
/// inside) prices every one of its 61 layers, so a decode step at 4 requests grows from 1 to
/// 32,768 cached tokens by 61 × (117.0 − 89.2) µs, the rows' own growth.
#[test]
fn deepseek_v32_on_an_h200_reads_its_whole_module() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/hf-configs/DeepSeek-V3.2.json");
    let spec = ModelSpec::from_hf_config(&path).unwrap();
    let m = Machine::resolve("h200-x8").unwrap();
    let o = opts(None, None);
    let cm = CostModel::new(&m, &spec, Layout::tp(8), &o, Knobs::default()).unwrap();
    let note = cm.decode_attention_note(4, 32768);
    assert!(
        note.contains("deepseek-v3.2") && note.contains("16 heads a GPU"),
        "{note}"
    );
    assert!(!note.contains("of indexer"), "{note}");
    let step = |cached: u32| {
        let batch = IterationBatch {
            decode_context_tokens: vec![cached; 4],
            prefill: Vec::new(),
        };
        cm.iteration(&batch).latency_s
    };
    let grown_us = (step(32768) - step(1)) * 1e6;
    let rows_us = 61.0 * (117.0 - 89.2);
    assert!(
        (grown_us - rows_us).abs() < 0.01 * rows_us,
        "{grown_us} µs against {rows_us}"
    );
}
