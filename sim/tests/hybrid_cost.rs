//! Issue 24: the cost and memory plan of models whose layers mix attention kinds. Sliding-window
//! layers (gpt-oss) read at most their window, Gated-DeltaNet layers (Qwen3.5) a fixed state, so
//! the decode KV reads grow only in the full-attention layers; the state pool is carved out of
//! the static budget beside the KV pool.

use models::{Layout, ModelSpec};
use sim::cost::{CostModel, IterationBatch, IterationModel, Knobs};
use sim::machine::Machine;
use sim::options::ServerOptions;

fn kv_read_s(spec: &ModelSpec, requests: usize, ctx: u32) -> f64 {
    let m = Machine::resolve("h200-x8").unwrap();
    let cm = CostModel::new(
        &m,
        spec,
        Layout::tp(8),
        &ServerOptions::default(),
        Knobs::default(),
    )
    .unwrap();
    let batch = IterationBatch {
        decode_context_tokens: vec![ctx; requests],
        prefill: Vec::new(),
    };
    cm.iteration(&batch).breakdown.kv_read_s
}

/// The same architecture with every layer full attention.
fn all_full(spec: &ModelSpec) -> ModelSpec {
    let mut s = spec.clone();
    s.layer_attention.clear();
    s.sliding_window = None;
    s
}

#[test]
fn decode_kv_reads_grow_only_in_full_layers() {
    // (model, full layers / all layers)
    for (name, full_share) in [("gpt-oss-120b", 0.5), ("qwen3.5-397b-a17b-nvfp4", 0.25)] {
        let s = ModelSpec::preset(name).unwrap();
        let f = all_full(&s);
        let growth = |spec: &ModelSpec| kv_read_s(spec, 64, 65_536) - kv_read_s(spec, 64, 8_192);
        let ratio = growth(&s) / growth(&f);
        assert!(
            (ratio / full_share - 1.0).abs() < 0.15,
            "{name}: KV-read growth {ratio:.3} of the all-full model's, expected ≈ {full_share}"
        );
    }
    // a sliding layer reads the same at 4K and 64K: gpt-oss's growth is its full layers' alone
    let g = ModelSpec::preset("gpt-oss-120b").unwrap();
    assert!(kv_read_s(&g, 64, 65_536) > kv_read_s(&g, 64, 8_192));
    // Qwen3.5's linear layers read and write their state even at a 1-token context
    let q = ModelSpec::preset("qwen3.5-397b-a17b-nvfp4").unwrap();
    assert!(kv_read_s(&q, 256, 16) > 0.0);
}

#[test]
fn the_state_pool_comes_out_of_the_static_budget() {
    let m = Machine::resolve("h200-x8").unwrap();
    for name in ["qwen3.5-397b-a17b-nvfp4", "qwen3-next-80b-a3b"] {
        let s = ModelSpec::preset(name).unwrap();
        for tp in [4, 8] {
            let fp = models::footprint::footprint(&s, &Layout::tp(tp)).unwrap();
            let opts = ServerOptions {
                mem_fraction_static: 0.85,
                ..ServerOptions::default()
            };
            let p = sim::cost::memory::plan(&s, &fp, m.memory_bytes(), &opts);
            assert!(p.state_slots > 0, "{name} TP{tp}");
            assert!(
                p.weight_bytes_per_gpu + p.kv_pool_bytes_per_gpu + p.state_pool_bytes_per_gpu
                    <= p.static_budget_bytes,
                "{name} TP{tp}"
            );
            // SGLang: the state pool is ratio/(1+ratio) = 0.9/1.9 of what the weights leave
            let rest = (p.static_budget_bytes - p.weight_bytes_per_gpu) as f64;
            let share = p.state_pool_bytes_per_gpu as f64 / rest;
            assert!((share - 0.9 / 1.9).abs() < 0.01, "{name} TP{tp}: {share}");
            assert!(p.max_running_requests as u64 <= p.state_slots / 3);
        }
    }
}

/// Issue 35: on the RTX PRO 6000 the linear layers' decode is the engine's measured recurrent
/// kernel (`sim::cost::gdn_table`), never below its state's DRAM traffic: Qwen3.5-397B at TP4
/// and 0 cached tokens, where the full layers read nothing, 256 requests cost 45 linear layers ×
/// the vLLM row's 368 µs (1 MiB of fp32 state a request); the note says which table priced it.
/// H200 (no table) keeps the curve and no such note.
#[test]
fn gdn_decode_reads_the_engine_s_kernel_table_on_sm120() {
    let spec = ModelSpec::preset("qwen3.5-397b-a17b-nvfp4").unwrap();
    let m = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let m = m.first_gpus(4).unwrap();
    let opts = ServerOptions {
        engine: sim::engine::Engine::Vllm,
        ..ServerOptions::default()
    };
    let cm = CostModel::new(&m, &spec, Layout::tp(4), &opts, Knobs::default()).unwrap();
    let batch = IterationBatch {
        decode_context_tokens: vec![0; 256],
        prefill: Vec::new(),
    };
    let kv = cm.iteration(&batch).breakdown.kv_read_s;
    let want = 45.0 * 367.877e-6;
    // the 15 full layers at 0 cached tokens add only their launch floors
    assert!(kv >= want && kv < want * 1.05, "{kv} vs {want}");
    let note = cm.gdn_decode_note(256).unwrap();
    assert!(
        note.contains("vllm fused recurrent") && note.contains("4 k / 16 v heads"),
        "{note}"
    );
    let h200 = Machine::resolve("h200-x8").unwrap();
    let cm = CostModel::new(
        &h200,
        &spec,
        Layout::tp(8),
        &ServerOptions::default(),
        Knobs::default(),
    )
    .unwrap();
    assert!(cm.gdn_decode_note(256).is_none());
}
