//! The local Hugging Face cache, as `huggingface_hub` lays it out: a repository `ORG/NAME` lives
//! in `<cache>/models--ORG--NAME/`, its files under `snapshots/<revision>/` (links into
//! `blobs/`), and `refs/main` names the revision `main` points at. The cache folder is
//! `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`
//! (`huggingface_hub.constants`).

use crate::error::Result;
use crate::spec::ModelSpec;
use std::path::{Path, PathBuf};

/// The hub cache folder from the environment (see the module docs); `None` without any of
/// `HF_HUB_CACHE`, `HF_HOME`, `HOME`.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("HF_HUB_CACHE")
        .or_else(|| var("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/huggingface/hub")))
}

/// Whether `id` has the form of a repository id: `ORG/NAME`, one slash, no path-like parts.
pub fn is_repo_id(id: &str) -> bool {
    let Some((org, name)) = id.split_once('/') else {
        return false;
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    ok(org) && ok(name)
}

/// The repository folder of `id` in `cache`.
pub fn repo_dir(cache: &Path, id: &str) -> PathBuf {
    cache.join(format!("models--{}", id.replace('/', "--")))
}

/// The snapshot folder of `id` that `refs/main` names, else the only snapshot there is;
/// `None` when the repository is not in the cache (or which snapshot is meant is unclear).
pub fn snapshot_dir(cache: &Path, id: &str) -> Option<PathBuf> {
    let repo = repo_dir(cache, id);
    let snapshots = repo.join("snapshots");
    if let Ok(rev) = std::fs::read_to_string(repo.join("refs/main")) {
        let dir = snapshots.join(rev.trim());
        if dir.join("config.json").is_file() {
            return Some(dir);
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("config.json").is_file())
        .collect();
    match found.len() {
        1 => found.pop(),
        _ => None,
    }
}

impl ModelSpec {
    /// The model `id` (`ORG/NAME`) from the local HF cache: its snapshot's `config.json`, with
    /// `hf_quant_config.json` beside it when there is one, else the config's
    /// `quantization_config`. `Ok(None)` when the cache does not hold it.
    pub fn from_hf_cache(id: &str) -> Result<Option<ModelSpec>> {
        let Some(cache) = cache_dir() else {
            return Ok(None);
        };
        if !is_repo_id(id) {
            return Ok(None);
        }
        let Some(dir) = snapshot_dir(&cache, id) else {
            return Ok(None);
        };
        let mut spec = Self::from_hf_dir(&dir)?;
        spec.name = id.to_string();
        Ok(Some(spec))
    }
}

/// Where [`ModelSpec::from_hf_cache`] looks for the repository id `id`, for error messages.
pub fn looked_in(id: &str) -> String {
    match cache_dir() {
        Some(c) => format!(
            "{} (HF cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)",
            repo_dir(&c, id).display()
        ),
        None => "no HF cache ($HF_HUB_CACHE, $HF_HOME and $HOME unset)".to_string(),
    }
}
