//! `sim models list|show`.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum ModelsCommand {
    /// List the embedded model presets.
    List,
}

pub fn run(cmd: ModelsCommand) -> anyhow::Result<()> {
    match cmd {
        ModelsCommand::List => anyhow::bail!("model presets are not built yet"),
    }
}
