//! `sim validate` (not built yet: its issue fills this module).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`sim validate` is not built yet")
}
