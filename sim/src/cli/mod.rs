//! Command-line interface: raw flags (clap) per subcommand, each validated into a config in its
//! own module before any work starts. Every command takes `--format` where it prints results.

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "sim",
    version,
    about = "Predict SGLang-style serving performance for every parallel layout"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Model presets and HF configs: parameters, bytes, KV per token, per-GPU footprint.
    #[command(subcommand)]
    Models(models_cmd::ModelsCommand),
    /// Cost one iteration (batch, context) for a layout or all layouts, with the memory plan.
    Predict(predict::Args),
    /// Simulate one bench_serving run.
    Run(run::Args),
    /// Simulate layouts × concurrencies × workloads in parallel.
    Sweep(sweep::Args),
    /// Rank layouts for a workload and answer a question ("should we try EP?").
    Advise(advise::Args),
    /// Fit efficiency factors to measured bench_serving runs (or read a server log's samples).
    Calibrate(calibrate::Args),
    /// Compare predictions with measured runs, point by point, or with a server log's samples.
    Validate(validate::Args),
    /// Write SVG charts and an HTML report for machines and predictions.
    Report(report::Args),
}

pub mod advise;
mod advise_table;
pub mod args;
mod bench_out;
pub mod calibrate;
mod export;
mod layout_args;
mod layouts;
mod measured_args;
pub mod models_cmd;
mod own_flags;
pub mod predict;
pub mod report;
pub mod run;
pub mod scale;
pub mod scoreboard;
pub mod server_args;
pub mod server_log_cmd;
mod setup;
pub mod sweep;
pub mod tables;
pub mod validate;
mod validate_accept;
pub mod workload_args;

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Models(c) => models_cmd::run(c),
        Command::Predict(a) => predict::run(a),
        Command::Run(a) => run::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Advise(a) => advise::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Validate(a) => validate::run(a),
        Command::Report(a) => report::run(a),
    }
}
