//! Importers: other tools' logs into the profile format.

use crate::cli::ImportCmd;
use crate::error::Result;

/// `probe import …`.
pub fn run(_cmd: ImportCmd) -> Result<()> {
    Err(crate::error::ProbeError::Invalid("import: not built yet".into()))
}
