//! bench_serving's side of a simulated run, shared by `sim run`, `sweep`, `advise` and
//! `calibrate`: the bench_serving flags that change nothing, and `--output-file`'s JSONL line.

use super::setup::Setup;
use super::workload_args::WorkloadArgs;
use anyhow::{Context, Result};
use models::Layout;
use sim::serving::RunReport;

/// Warns, on stderr, of bench_serving flags given that do not change the simulation.
pub fn print_bench_flags(flags: &[String]) {
    if !flags.is_empty() {
        let w = format!("bench_serving flags not modelled: {}", flags.join(", "));
        eprintln!("{}", crate::cli::tables::wrap("warning: ", &w));
    }
}

/// Appends `run` to `--output-file` as bench_serving would.
pub fn write_bench_line(
    path: &std::path::Path,
    setup: &Setup,
    w: &WorkloadArgs,
    run: &RunReport,
    workload: &sim::workload::Workload,
    layout: Layout,
) -> Result<()> {
    let opts = setup.opts_ranking(layout);
    let ctx = sim::bench_serving::write::BenchLineContext {
        // bench_serving's `--backend` names the server it talks to: the engine simulated
        backend: w
            .bench
            .backend
            .as_deref()
            .unwrap_or_else(|| setup.opts.engine.name()),
        random_input_len: w.random_input_len,
        random_output_len: w.random_output_len,
        sharegpt_output_len: w.sharegpt_output_len,
        // the model the launch names (`--model-path`, `vllm serve MODEL`), asked of the engine's
        // launch, else the model's name
        model_path: setup.launch.model_path().unwrap_or(&setup.spec.name),
        machine: setup.machine.name(),
        layout,
        opts: &opts,
    };
    let line = sim::bench_serving::write::jsonl_line(run, workload, &ctx);
    sim::bench_serving::write::append_jsonl(path, &line)
        .with_context(|| format!("--output-file {}", path.display()))
}
