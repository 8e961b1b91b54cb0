//! Command-line interface: raw flags (clap) per subcommand, each validated into a config in its
//! own module before any work starts.

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
}

pub mod models_cmd;

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Models(c) => models_cmd::run(c),
    }
}
