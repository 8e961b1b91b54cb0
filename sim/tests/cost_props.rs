//! Invariants of the cost model (proptest): more bandwidth or FLOP/s never slower, more tokens
//! never faster, collective bytes follow their formulas, memory never negative.

use models::profile::CollectiveOp;
use models::{Layout, ModelSpec};
use proptest::prelude::*;
use sim::cost::traffic::wire_bytes_per_rank;
use sim::cost::{BatchStats, CostModel, IterationBatch, IterationModel, Knobs, PrefillChunk};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;
use std::sync::OnceLock;

const MACHINES: [&str; 3] = [
    "rtx-pro-6000-x8-vm-hostbounce",
    "rtx-pro-6000-x8-baremetal",
    "h200-x8",
];
const MODELS: [&str; 3] = ["glm-5-nvfp4", "glm-4.7-fp8", "qwen3-235b-a22b-nvfp4"];

fn machines() -> &'static Vec<Machine> {
    static M: OnceLock<Vec<Machine>> = OnceLock::new();
    M.get_or_init(|| {
        MACHINES
            .iter()
            .map(|n| Machine::resolve(n).unwrap())
            .collect()
    })
}

fn specs() -> &'static Vec<ModelSpec> {
    static S: OnceLock<Vec<ModelSpec>> = OnceLock::new();
    S.get_or_init(|| {
        MODELS
            .iter()
            .map(|n| ModelSpec::preset(n).unwrap())
            .collect()
    })
}

/// Every feasible layout of 8 GPUs for model `mi` on machine `ma`, with `knobs`.
fn models_with(ma: usize, mi: usize, knobs: Knobs, opts: &ServerOptions) -> Vec<CostModel> {
    let (m, s) = (&machines()[ma], &specs()[mi]);
    enumerate_layouts(8, s)
        .into_iter()
        .filter(|c| c.is_feasible())
        .filter_map(|c| CostModel::new(m, s, c.layout, opts, knobs).ok())
        .collect()
}

fn batch(decode: u32, ctx: u32, prefill: u32, cached: u32) -> IterationBatch {
    IterationBatch {
        decode_context_tokens: vec![ctx; decode as usize],
        prefill: if prefill > 0 {
            vec![PrefillChunk {
                new_tokens: prefill,
                cached_tokens: cached,
            }]
        } else {
            Vec::new()
        },
    }
}

fn opts(graph: bool) -> ServerOptions {
    ServerOptions {
        disable_cuda_graph: !graph,
        ..ServerOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn more_bandwidth_or_flops_is_never_slower(
        ma in 0usize..3, mi in 0usize..3,
        decode in 0u32..300, ctx in 1u32..60_000, prefill in 0u32..9000,
        mem in 1.0f64..4.0, comp in 1.0f64..4.0, graph in any::<bool>(),
    ) {
        prop_assume!(decode + prefill > 0);
        let o = opts(graph);
        let base = models_with(ma, mi, Knobs::default(), &o);
        let faster = models_with(ma, mi, Knobs { memory_scale: mem, compute_scale: comp, ..Knobs::default() }, &o);
        prop_assert!(!base.is_empty() && base.len() == faster.len());
        let b = batch(decode, ctx, prefill, 0);
        for (x, y) in base.iter().zip(&faster) {
            let (tx, ty) = (x.iteration(&b).latency_s, y.iteration(&b).latency_s);
            prop_assert!(ty <= tx * (1.0 + 1e-12), "{}: {ty} > {tx}", x.layout());
        }
    }

    #[test]
    fn more_tokens_are_never_faster(
        ma in 0usize..3, mi in 0usize..3,
        decode in 0u32..400, extra in 1u32..64, ctx in 1u32..60_000, more_ctx in 0u32..10_000,
        prefill in 0u32..9000, graph in any::<bool>(),
    ) {
        let o = opts(graph);
        let all = models_with(ma, mi, Knobs::default(), &o);
        prop_assert!(!all.is_empty());
        for cm in all {
            let small = cm.iteration(&batch(decode, ctx, prefill, 0));
            let more_decode = cm.iteration(&batch(decode + extra, ctx, prefill, 0));
            let longer = cm.iteration(&batch(decode, ctx + more_ctx, prefill, 0));
            let more_prefill = cm.iteration(&batch(decode, ctx, prefill + extra, 0));
            for (what, t) in [("decode", &more_decode), ("context", &longer), ("prefill", &more_prefill)] {
                prop_assert!(
                    t.latency_s >= small.latency_s * (1.0 - 1e-9),
                    "{} more {what}: {} < {}", cm.layout(), t.latency_s, small.latency_s
                );
            }
        }
    }

    #[test]
    fn collective_bytes_follow_their_formulas(tokens in 1u32..5000, mi in 0usize..3) {
        let s = &specs()[mi];
        let o = ServerOptions::default();
        let cm = CostModel::new(&machines()[0], s, Layout::tp(8), &o, Knobs::default()).unwrap();
        let st = BatchStats { decode: tokens as f64, decode_keys: tokens as f64, decode_context: tokens as f64, ..BatchStats::default() };
        let tr = cm.traffic(&st);
        let act = tokens as f64 * s.hidden_size as f64 * 2.0;
        // TP8: two all-reduces per layer, each rank sends 2(n-1)/n of the buffer
        let want = s.num_layers as f64 * 2.0 * 2.0 * 7.0 / 8.0 * act;
        prop_assert!((tr.all_reduce_wire_bytes / want - 1.0).abs() < 1e-9);
        prop_assert_eq!(wire_bytes_per_rank(CollectiveOp::AllGather, 800.0, 8), 700.0);
        prop_assert_eq!(wire_bytes_per_rank(CollectiveOp::AllToAll, 800.0, 4), 600.0);
        prop_assert_eq!(wire_bytes_per_rank(CollectiveOp::AllReduce, 800.0, 1), 0.0);
        // EP8 with an all-to-all backend: dispatch T·k·h/ep (fp8) + combine twice that per rank
        let moe = s.moe.unwrap();
        let a2a = ServerOptions { moe_a2a_backend: Some("deepep".into()), ..ServerOptions::default() };
        let ep = Layout { tp: 8, pp: 1, ep: 8, dp_attention: true };
        let cm = CostModel::new(&machines()[2], s, ep, &a2a, Knobs::default()).unwrap();
        let tr = cm.traffic(&st);
        let per_rank = tokens as f64 * moe.top_k as f64 * s.hidden_size as f64 / 8.0;
        let want = s.num_moe_layers() as f64 * 3.0 * per_rank * 7.0 / 8.0;
        prop_assert!((tr.all_to_all_wire_bytes / want - 1.0).abs() < 1e-9);
    }

    #[test]
    fn memory_plan_is_never_negative_and_adds_up(
        ma in 0usize..3, mi in 0usize..3, frac in 0.05f64..1.0, fp8 in any::<bool>(),
    ) {
        let o = ServerOptions {
            mem_fraction_static: frac,
            kv_cache_dtype: Some(if fp8 { models::KvDtype::Fp8 } else { models::KvDtype::Bf16 }),
            ..ServerOptions::default()
        };
        let (m, s) = (&machines()[ma], &specs()[mi]);
        for c in enumerate_layouts(8, s).into_iter().filter(|c| c.is_feasible()) {
            let fp = models::footprint::footprint(s, &c.layout).unwrap();
            let p = sim::cost::memory::plan(s, &fp, m.memory_bytes(), &o);
            let budget = (frac * m.memory_bytes() as f64) as u64;
            // weights + pool come out of the static share; reserves and the rest fill the card
            let used = p.weight_bytes_per_gpu + p.kv_pool_bytes_per_gpu + p.reserve_bytes_per_gpu;
            prop_assert_eq!(used as i64 + p.free_after_reserves_bytes, m.memory_bytes() as i64);
            if p.fits {
                prop_assert!(p.weight_bytes_per_gpu + p.kv_pool_bytes_per_gpu <= p.static_budget_bytes);
                prop_assert!(p.static_budget_bytes <= budget);
                prop_assert!(p.kv_tokens > 0);
                prop_assert_eq!(p.shortfall_bytes, 0);
            } else {
                prop_assert!(p.shortfall_bytes > 0 || p.kv_tokens == 0);
                prop_assert!(CostModel::new(m, s, c.layout, &o, Knobs::default()).is_err());
            }
        }
    }
}

/// Every decode batch size from 1 to 600 and prefill chunks from 1 to 4096, step by step: the
/// efficiency curves' knots must not make a bigger step cheaper anywhere.
#[test]
fn latency_rises_step_by_step_with_batch_and_prefill() {
    for (ma, mi) in [(0, 0), (1, 1), (2, 2)] {
        for graph in [true, false] {
            for cm in models_with(ma, mi, Knobs::default(), &opts(graph)) {
                let mut prev = 0.0;
                for b in 1..=600 {
                    let t = cm.iteration(&batch(b, 4096, 0, 0)).latency_s;
                    assert!(
                        t >= prev * (1.0 - 1e-9),
                        "{} decode {b}: {t} < {prev}",
                        cm.layout()
                    );
                    prev = t;
                }
                if graph {
                    continue; // prefill never replays a graph: same numbers
                }
                let mut prev = 0.0;
                for p in (1..=4096).step_by(13) {
                    let t = cm.iteration(&batch(0, 0, p, 0)).latency_s;
                    assert!(
                        t >= prev * (1.0 - 1e-9),
                        "{} prefill {p}: {t} < {prev}",
                        cm.layout()
                    );
                    prev = t;
                }
            }
        }
    }
}
