//! `sim run` (not built yet: its issue fills this module).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`sim run` is not built yet")
}
