//! `sim sweep` speed. Targets on 2 cores:
//! - every layout of 8 GPUs × 10 concurrencies × 3 workloads × 1,000 requests, GLM-5-NVFP4 on the
//!   bare-metal RTX PRO 6000 preset: under 2 s;
//! - the same layouts × 10 concurrencies × one workload of 10,000 requests (issue 12: the run
//!   time must grow linearly with `--num-prompts`): under 3 s;
//! - every layout of 16 GPUs (two boxes) × 10 concurrencies × 1,000 requests of `sim sweep`'s
//!   default workload (bench_serving's random 1024/1024, range ratio 0), Kimi-K2.5-NVFP4 on the
//!   `rtx-pro-6000-x8x2-400gbe` preset (issue 15): under 2 s.

use criterion::{Criterion, criterion_group, criterion_main};
use models::ModelSpec;
use sim::cost::{CostModel, IterationModel, Knobs};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::sweep::{SweepLayout, sweep};
use sim::workload::Workload;

const CONCURRENCIES: [u32; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/// Every layout of `gpus` GPUs of `machine` for `model`, costed (or rejected) as `sim sweep` does.
fn layouts(
    machine: &Machine,
    spec: &ModelSpec,
    gpus: u32,
    opts: &ServerOptions,
) -> Vec<SweepLayout> {
    enumerate_layouts(gpus, spec)
        .into_iter()
        .map(|cand| {
            let model = match cand.rejected {
                Some(why) => Err(why),
                None => CostModel::new(machine, spec, cand.layout, opts, Knobs::default())
                    .map(|m| Box::new(m) as Box<dyn IterationModel>)
                    .map_err(|e| e.to_string()),
            };
            SweepLayout::new(machine, cand.layout, model)
        })
        .collect()
}

fn bench_sweep(c: &mut Criterion) {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").expect("preset");
    let spec = ModelSpec::resolve("glm-5-nvfp4").expect("model preset");
    let opts = ServerOptions::default();
    let layouts8 = layouts(&machine, &spec, 8, &opts);
    let workloads: Vec<Workload> = [(128, 128), (1024, 128), (2048, 256)]
        .into_iter()
        .map(|(i, o)| Workload {
            num_prompts: 1000,
            random_input_len: i,
            random_output_len: o,
            random_range_ratio: 0.5,
            ..Workload::default()
        })
        .collect();
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.bench_function("8gpu_all_layouts_x10c_x3w_x1000req", |b| {
        b.iter(|| sweep(&layouts8, &opts, &workloads, &CONCURRENCIES, &|| {}))
    });
    let long = [Workload {
        num_prompts: 10_000,
        random_input_len: 1024,
        random_output_len: 128,
        random_range_ratio: 0.5,
        ..Workload::default()
    }];
    group.bench_function("8gpu_all_layouts_x10c_x10000req", |b| {
        b.iter(|| sweep(&layouts8, &opts, &long, &CONCURRENCIES, &|| {}))
    });

    let two_boxes = Machine::resolve("rtx-pro-6000-x8x2-400gbe").expect("preset");
    let kimi = ModelSpec::resolve("kimi-k2.5-nvfp4").expect("model preset");
    let layouts16 = layouts(&two_boxes, &kimi, 16, &opts);
    // `sim sweep`'s defaults: 1,000 prompts of bench_serving's random 1024/1024, ratio 0.
    let default = Workload {
        random_range_ratio: 0.0,
        ..Workload::default()
    };
    group.bench_function("16gpu_2nodes_all_layouts_x10c_x1000req", |b| {
        b.iter(|| {
            sweep(
                &layouts16,
                &opts,
                std::slice::from_ref(&default),
                &CONCURRENCIES,
                &|| {},
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench_sweep);
criterion_main!(benches);
