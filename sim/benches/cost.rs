//! Costing every layout of 8 GPUs (GLM-5-NVFP4 on the RTX PRO 6000 VM preset) for 1,000 (batch,
//! prefill, context) points. Target: well under 100 ms on 2 cores. Building the cost models
//! (curve resolution, envelopes) is measured separately.

use criterion::{Criterion, criterion_group, criterion_main};
use models::ModelSpec;
use sim::cost::{CostModel, IterationBatch, IterationModel, Knobs, PrefillChunk};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;
use std::hint::black_box;

fn models(machine: &Machine, spec: &ModelSpec) -> Vec<CostModel> {
    let opts = ServerOptions::default();
    enumerate_layouts(8, spec)
        .into_iter()
        .filter(|c| c.is_feasible())
        .filter_map(|c| CostModel::new(machine, spec, c.layout, &opts, Knobs::default()).ok())
        .collect()
}

/// 1,000 deterministic (batch, prefill, context) points spread over 1–512 decodes, 0–8192 prefill
/// tokens and 128–65,536 tokens of context.
fn points() -> Vec<IterationBatch> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    (0..1000)
        .map(|_| {
            let b = 1 + next(512) as usize;
            let ctx = 128 + next(65_408) as u32;
            let p = if next(4) == 0 { next(8193) as u32 } else { 0 };
            IterationBatch {
                decode_context_tokens: vec![ctx; b],
                prefill: (p > 0)
                    .then_some(PrefillChunk {
                        new_tokens: p,
                        cached_tokens: 0,
                    })
                    .into_iter()
                    .collect(),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let machine = Machine::resolve("rtx-pro-6000-x8-vm-hostbounce").expect("preset");
    let spec = ModelSpec::preset("glm-5-nvfp4").expect("preset");
    let cms = models(&machine, &spec);
    assert!(
        cms.len() >= 15,
        "expected every 8-GPU layout, got {}",
        cms.len()
    );
    let pts = points();
    c.bench_function("cost every layout x 1000 points", |bch| {
        bch.iter(|| {
            let mut sum = 0.0;
            for cm in &cms {
                for p in &pts {
                    sum += cm.iteration(black_box(p)).latency_s;
                }
            }
            sum
        })
    });
    c.bench_function("build every layout's cost model", |bch| {
        bch.iter(|| models(black_box(&machine), black_box(&spec)).len())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
