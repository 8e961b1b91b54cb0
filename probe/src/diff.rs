//! `probe diff`.

use crate::cli::DiffArgs;
use crate::error::Result;

/// `probe diff A B`.
pub fn run(_a: DiffArgs) -> Result<()> {
    Err(crate::error::ProbeError::Invalid("diff: not built yet".into()))
}
