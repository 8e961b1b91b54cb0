//! Where a profile goes when the user did not say: `./profile.json`, but never over a file that
//! is already there — an earlier run's measurements are not replaced by accident. An explicit
//! `--out` is the user's word and may overwrite.

use crate::error::{ProbeError, Result};
use std::path::{Path, PathBuf};

/// The default profile file name.
pub const DEFAULT_OUT: &str = "profile.json";

/// `--out` as given, or `./profile.json` when it does not exist yet; refused (exit 2) when it
/// does, naming both ways out.
pub fn resolve(out: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(out) = out {
        return Ok(out);
    }
    default_in(Path::new("."))
}

fn default_in(dir: &Path) -> Result<PathBuf> {
    let path = dir.join(DEFAULT_OUT);
    if path.exists() {
        return Err(ProbeError::Invalid(format!(
            "{} already exists and --out was not given: pass --out FILE, or remove {} first (without --out the profile is never written over an existing file)",
            path.display(),
            path.display()
        )));
    }
    Ok(PathBuf::from(DEFAULT_OUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_default_file_is_refused_an_explicit_out_is_not() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(default_in(dir.path()).unwrap(), PathBuf::from(DEFAULT_OUT));
        std::fs::write(dir.path().join(DEFAULT_OUT), "{}").unwrap();
        let e = default_in(dir.path()).unwrap_err().to_string();
        assert!(e.contains("already exists") && e.contains("--out"), "{e}");
        let given = dir.path().join(DEFAULT_OUT);
        assert_eq!(resolve(Some(given.clone())).unwrap(), given);
    }
}
