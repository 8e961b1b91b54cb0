//! `sim predict` (not built yet: its issue fills this module).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`sim predict` is not built yet")
}
