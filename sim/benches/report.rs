//! `sim report` rendering speed: every chart and the HTML page for GLM-5-NVFP4 on both 8-GPU
//! RTX PRO 6000 presets (VM and bare metal): 19 layouts each, 7 concurrencies, 64-cell heat maps,
//! five collective overlays. Target: under 1 s on 2 cores.
//!
//! Covered: building chart data from simulated results, rendering every SVG, assembling and
//! rendering the page (`build_report` + `Page::render`). Not covered: the simulation itself
//! (benchmarked by `benches/sweep.rs`; here it runs once, small, to produce the inputs) and the
//! file writes (fsync time is the disk's, not ours).

use criterion::{Criterion, criterion_group, criterion_main};
use models::ModelSpec;
use sim::cost::Knobs;
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::report::{MachineResults, ReportInputs, ReportPlan, build_report, simulate_machine};
use sim::workload::Workload;

fn bench_report(c: &mut Criterion) {
    let spec = ModelSpec::resolve("glm-5-nvfp4").expect("model preset");
    let opts = ServerOptions::default();
    let plan = ReportPlan {
        workload: Workload {
            num_prompts: 32,
            ..Workload::default()
        },
        concurrencies: vec![1, 8, 32, 64, 128, 256, 512],
        at_concurrency: 64,
        draws: 8,
    };
    let machines: Vec<MachineResults> =
        ["rtx-pro-6000-x8-vm-hostbounce", "rtx-pro-6000-x8-baremetal"]
            .iter()
            .map(|name| {
                let m = Machine::resolve(name).expect("preset");
                simulate_machine(
                    &m,
                    &spec,
                    &|_| opts.clone(),
                    Knobs::default(),
                    &plan,
                    &|| {},
                )
            })
            .collect();
    let inputs = ReportInputs {
        model: &spec.name,
        plan: &plan,
        machines: &machines,
        scoreboard: None,
        measured: None,
        model_path: "nvidia/GLM-5-NVFP4",
        engine: sim::engine::Engine::Sglang,
    };
    let charts = build_report(&inputs)
        .expect("report renders")
        .rendered
        .len();
    assert!(charts >= 20, "only {charts} charts");
    let mut group = c.benchmark_group("report");
    group.sample_size(10);
    group.bench_function("render_all_charts_and_page_2_machines_8_gpus", |b| {
        b.iter(|| {
            let r = build_report(&inputs).expect("report renders");
            r.page.render().expect("page renders").len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_report);
criterion_main!(benches);
