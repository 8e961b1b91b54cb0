//! `sim calibrate --server-log` on the user's GLM-4.7-FP8 TP8 log: read the log, group its steady
//! decode samples into rounds, fit the four physical knobs with leave-one-out. Target: under 1 s.

use criterion::{Criterion, criterion_group, criterion_main};
use models::{Layout, ModelSpec};
use sim::calibrate::{KnobParam, Observations, StepSample, calibrate, rounds};
use sim::cost::{Knobs, ServedModel};
use sim::machine::Machine;
use sim::options::ServerOptions;
use std::path::Path;

const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/logs/glm47-fp8-tp8-calibration.log"
);

fn fit_log(machine: &Machine, spec: &ModelSpec) -> f64 {
    let log = sim::server_log::load(Path::new(LOG)).expect("log reads");
    let run = &log.runs[0];
    let samples: Vec<StepSample> = run
        .steady_samples()
        .filter_map(|s| {
            Some(StepSample {
                source: s.line.to_string(),
                running: s.running,
                context_tokens: s.context_per_request,
                cuda_graph: s.cuda_graph.unwrap_or(false),
                step_s: s.step_s?,
            })
        })
        .collect();
    let opts = ServerOptions {
        mem_fraction_static: 0.848,
        disable_cuda_graph: true,
        ..ServerOptions::default()
    };
    let obs = Observations {
        rounds: rounds(&samples),
        ..Observations::default()
    };
    let fit = calibrate(
        |k| ServedModel::new(machine, spec, Layout::tp(8), &opts, k),
        &opts,
        &obs,
        &KnobParam::ALL,
        Knobs::default(),
    )
    .expect("fit");
    fit.median_abs_error_pct
}

fn bench(c: &mut Criterion) {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let mut g = c.benchmark_group("calibrate");
    g.sample_size(10);
    g.bench_function("server_log_glm47_tp8_fit_with_loo", |b| {
        b.iter(|| fit_log(&machine, &spec))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
