//! `sim sweep` speed: every layout of 8 GPUs × 10 concurrencies × 3 workloads × 1,000 requests,
//! GLM-5-NVFP4 on the bare-metal RTX PRO 6000 preset. Target: under 2 s on 2 cores.

use criterion::{Criterion, criterion_group, criterion_main};
use models::ModelSpec;
use sim::cost::{CostModel, IterationModel, Knobs};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::sweep::{SweepLayout, sweep};
use sim::workload::Workload;

fn bench_sweep(c: &mut Criterion) {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").expect("preset");
    let spec = ModelSpec::resolve("glm-5-nvfp4").expect("model preset");
    let opts = ServerOptions::default();
    let layouts: Vec<SweepLayout> = enumerate_layouts(8, &spec)
        .into_iter()
        .map(|cand| {
            let model = match cand.rejected {
                Some(why) => Err(why),
                None => CostModel::new(&machine, &spec, cand.layout, &opts, Knobs::default())
                    .map(|m| Box::new(m) as Box<dyn IterationModel>)
                    .map_err(|e| e.to_string()),
            };
            SweepLayout::new(&machine, cand.layout, model)
        })
        .collect();
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
    let concurrencies = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.bench_function("8gpu_all_layouts_x10c_x3w_x1000req", |b| {
        b.iter(|| sweep(&layouts, &opts, &workloads, &concurrencies, &|| {}))
    });
    group.finish();
}

criterion_group!(benches, bench_sweep);
criterion_main!(benches);
