//! Files in and out: reading a user's file with a size limit, and writing one atomically.
//!
//! A wrong path (a 2 GB checkpoint shard passed as a profile, `/dev/zero` as records,
//! `/dev/urandom` as a server log) is refused with a message naming the file and the limit before
//! it is read whole, instead of exhausting memory or hanging. Every file `sim` and `probe` read
//! from a user goes through [`read_limited`] (bytes) or [`read_text_limited`] (UTF-8 text) with one
//! of the limits below; both read at most `limit + 1` bytes through [`Read::take`], so a device
//! or a pipe that never ends stops there.
//!
//! The limits are two orders of magnitude above the largest real file of each kind (a probe
//! profile of 8 GPUs is ~0.3 MB, a HF config ~40 kB, the public records file 0.66 MB, a day of
//! bench_serving JSONL a few MB).
//!
//! Outputs are written with [`write_atomic`]: a temp file beside the target, then a rename, so a
//! failed write never leaves a partial file.

use crate::error::{ModelsError, Result};
use std::io::Read;
use std::path::Path;

/// HuggingFace `config.json` / `hf_quant_config.json`.
pub const CONFIG_LIMIT_BYTES: u64 = 16 << 20;
/// Machine profiles (`probe run` output, imports, presets) and calibration files.
pub const PROFILE_LIMIT_BYTES: u64 = 256 << 20;
/// Hand-curated JSON of cited measurements: records files (`validation/public-records.json` is
/// 0.66 MB) and acceptance files.
pub const RECORDS_LIMIT_BYTES: u64 = 64 << 20;
/// Logs and measurement files: bench_serving JSONL/CSV/summaries, nccl-tests and
/// p2pBandwidthLatencyTest output, server logs, ShareGPT-style datasets.
pub const LOG_LIMIT_BYTES: u64 = 1 << 30;

/// Reads `path` as UTF-8 text if it holds at most `limit_bytes` bytes ([`read_limited`]); bytes
/// that are not UTF-8 are an error naming the file and the offset.
pub fn read_text_limited(path: &Path, limit_bytes: u64) -> Result<String> {
    let bytes = read_limited(path, limit_bytes)?;
    String::from_utf8(bytes).map_err(|e| ModelsError::NotText {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Reads the bytes of `path` if it holds at most `limit_bytes` bytes.
///
/// The size is checked from the file's metadata before reading, and again while reading (for
/// devices and pipes whose metadata says nothing), so at most `limit_bytes + 1` bytes are ever
/// read.
pub fn read_limited(path: &Path, limit_bytes: u64) -> Result<Vec<u8>> {
    let io = |source| ModelsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let too_large = |bytes: Option<u64>| ModelsError::TooLarge {
        path: path.to_path_buf(),
        bytes,
        limit_bytes,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(ModelsError::Field {
            path: path.to_path_buf(),
            field: "(file)".into(),
            problem: "is a folder; give the path of a file".into(),
        });
    }
    if meta.is_file() && meta.len() > limit_bytes {
        return Err(too_large(Some(meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit_bytes) as usize);
    file.take(limit_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit_bytes {
        return Err(too_large(None));
    }
    Ok(bytes)
}

/// Writes `bytes` to `path` through a temp file in the same folder and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let io_err = |source| ModelsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_read_large_ones_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "{\"x\": 1}").unwrap();
        assert_eq!(read_text_limited(&p, 100).unwrap(), "{\"x\": 1}");
        // A sparse 3 GB file: refused from its metadata, nothing read.
        let big = dir.path().join("big.json");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(3_000_000_000).unwrap();
        let e = read_text_limited(&big, PROFILE_LIMIT_BYTES).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ModelsError::TooLarge { .. }), "{msg}");
        assert!(msg.contains("3.00 GB") && msg.contains("big.json"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn unbounded_streams_stop_at_the_limit() {
        let e = read_text_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(
            matches!(e, ModelsError::TooLarge { bytes: None, .. }),
            "{e}"
        );
    }

    #[test]
    fn binary_files_and_folders_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.bin");
        std::fs::write(&p, [b'a', 0xff, 0xfe]).unwrap();
        let e = read_text_limited(&p, 100).unwrap_err().to_string();
        assert!(e.contains("not UTF-8 text") && e.contains("byte 1"), "{e}");
        let e = read_text_limited(dir.path(), 100).unwrap_err().to_string();
        assert!(e.contains("folder"), "{e}");
    }
}
