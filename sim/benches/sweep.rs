//! `sim sweep` speed, GLM-5-NVFP4 on the bare-metal RTX PRO 6000 preset, every layout of 8 GPUs
//! (19) × 10 concurrencies:
//! - `x3w_x1000req`: 3 workloads × 1,000 requests. Target: under 2 s on 2 cores.
//! - `x10000req`: one workload × 10,000 requests (issue 12: the run time must grow linearly with
//!   `--num-prompts`). Target: under 3 s on 2 cores.

use criterion::{Criterion, criterion_group, criterion_main};
use models::ModelSpec;
use sim::cost::{CostModel, IterationModel, Knobs};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::sweep::{SweepLayout, sweep};
use sim::workload::Workload;

const CONCURRENCIES: [u32; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

fn layouts(opts: &ServerOptions) -> Vec<SweepLayout> {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").expect("preset");
    let spec = ModelSpec::resolve("glm-5-nvfp4").expect("model preset");
    let layouts: Vec<SweepLayout> = enumerate_layouts(8, &spec)
        .into_iter()
        .map(|cand| SweepLayout {
            layout: cand.layout,
            model: match cand.rejected {
                Some(why) => Err(why),
                None => CostModel::new(&machine, &spec, cand.layout, opts, Knobs::default())
                    .map(|m| Box::new(m) as Box<dyn IterationModel>)
                    .map_err(|e| e.to_string()),
            },
        })
        .collect();
    assert_eq!(layouts.len(), 19, "the benchmark's layout count changed");
    layouts
}

fn workload(num_prompts: u32, input: u32, output: u32) -> Workload {
    Workload {
        num_prompts,
        random_input_len: input,
        random_output_len: output,
        random_range_ratio: 0.5,
        ..Workload::default()
    }
}

fn bench_sweep(c: &mut Criterion) {
    let opts = ServerOptions::default();
    let layouts = layouts(&opts);
    let three: Vec<Workload> = [(128, 128), (1024, 128), (2048, 256)]
        .into_iter()
        .map(|(i, o)| workload(1000, i, o))
        .collect();
    let long = vec![workload(10_000, 1024, 128)];
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.bench_function("8gpu_all_layouts_x10c_x3w_x1000req", |b| {
        b.iter(|| sweep(&layouts, &opts, &three, &CONCURRENCIES, &|| {}))
    });
    group.bench_function("8gpu_all_layouts_x10c_x10000req", |b| {
        b.iter(|| sweep(&layouts, &opts, &long, &CONCURRENCIES, &|| {}))
    });
    group.finish();
}

criterion_group!(benches, bench_sweep);
criterion_main!(benches);
