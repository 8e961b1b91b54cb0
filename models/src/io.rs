//! Files in and out: reading a user's file with a size limit, and writing one atomically.
//!
//! A wrong path (a 2 GB checkpoint shard passed as a profile, `/dev/zero` as records,
//! `/dev/urandom` as a server log) is refused with a message naming the file and the limit before
//! it is read whole, instead of exhausting memory or hanging. Every file `sim` and `probe` read
//! from a user goes through [`read_limited`] (bytes), [`read_text_limited`] (UTF-8 text) or
//! [`read_log_limited`] (a log: junk bytes replaced, binary refused) with one of the limits below;
//! all read at most `limit + 1` bytes through [`Read::take`], a chunk at a time, so a device or a
//! pipe that never ends stops there, and one that is not text after its first chunk.
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

/// Bytes read at a time: a stream of junk is refused after one chunk, not after the limit.
const CHUNK_BYTES: usize = 64 << 10;

/// Bytes at the start of a log searched for a NUL: a text file has none, a binary one almost
/// always does (git's heuristic looks at the same first 8000 bytes).
const BINARY_SNIFF_BYTES: usize = 8000;

/// Reads `path` as UTF-8 text if it holds at most `limit_bytes` bytes ([`read_limited`]); the
/// first byte that is not UTF-8 stops the read with an error naming the file and the offset, and
/// so does a NUL among the first 8000 bytes (`/dev/zero`: JSON, CSV and launch lines hold none).
pub fn read_text_limited(path: &Path, limit_bytes: u64) -> Result<String> {
    let mut checked = 0;
    let bytes = read_chunked(path, limit_bytes, |bytes| {
        refuse_binary(path, bytes)?;
        match std::str::from_utf8(&bytes[checked..]) {
            Ok(_) => checked = bytes.len(),
            // a character cut by the chunk's end is completed by the next chunk
            Err(e) if e.error_len().is_none() => checked += e.valid_up_to(),
            Err(e) => {
                return Err(ModelsError::NotText {
                    path: path.to_path_buf(),
                    offset: checked + e.valid_up_to(),
                });
            }
        }
        Ok(())
    })?;
    String::from_utf8(bytes).map_err(|e| ModelsError::NotText {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Reads a log as text if it holds at most `limit_bytes` bytes: bytes that are not UTF-8 are
/// replaced (logs pick up binary junk), but a NUL among the first 8000 bytes refuses the file as
/// binary (`/dev/urandom`, a checkpoint shard) before more is read.
pub fn read_log_limited(path: &Path, limit_bytes: u64) -> Result<String> {
    let bytes = read_chunked(path, limit_bytes, |bytes| refuse_binary(path, bytes))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A NUL among the first [`BINARY_SNIFF_BYTES`] of `bytes`: a binary file.
fn refuse_binary(path: &Path, bytes: &[u8]) -> Result<()> {
    let head = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    match head.iter().position(|b| *b == 0) {
        Some(offset) => Err(ModelsError::Binary {
            path: path.to_path_buf(),
            offset,
        }),
        None => Ok(()),
    }
}

/// Reads the bytes of `path` if it holds at most `limit_bytes` bytes.
///
/// The size is checked from the file's metadata before reading, and again while reading (for
/// devices and pipes whose metadata says nothing), so at most `limit_bytes + 1` bytes are ever
/// read.
pub fn read_limited(path: &Path, limit_bytes: u64) -> Result<Vec<u8>> {
    read_chunked(path, limit_bytes, |_| Ok(()))
}

/// How long opening a named pipe may wait for a program to write to it: `<(…)` process
/// substitution has its writer at once; a FIFO nobody writes to would block forever.
pub const PIPE_OPEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens `path` for reading; a named pipe is opened on a helper thread that may wait at most
/// [`PIPE_OPEN_TIMEOUT`], then it is refused in one line (the thread stays blocked until the
/// process exits, which it does with the error).
fn open(path: &Path) -> Result<std::fs::File> {
    let io = |source| ModelsError::Io {
        path: path.to_path_buf(),
        source,
    };
    if !std::fs::metadata(path).is_ok_and(|m| is_fifo(&m)) {
        return std::fs::File::open(path).map_err(io);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::File::open(p));
    });
    match rx.recv_timeout(PIPE_OPEN_TIMEOUT) {
        Ok(opened) => opened.map_err(io),
        Err(_) => Err(ModelsError::NotAFile {
            path: path.to_path_buf(),
            problem: format!(
                "is a named pipe no program writes to (waited {} s); give a regular file, or start the writer first",
                PIPE_OPEN_TIMEOUT.as_secs()
            ),
        }),
    }
}

#[cfg(unix)]
fn is_fifo(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::Metadata) -> bool {
    false
}

/// The bytes of every named pipe read so far, by path: a pipe (`<(…)` process substitution)
/// can be read once, and a command may read the same file twice (a runs file's flags, then its
/// runs); the second read gets what the first one read.
static PIPES_READ: std::sync::OnceLock<
    std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, Vec<u8>>>,
> = std::sync::OnceLock::new();

/// [`read_once`], a named pipe read once per process ([`PIPES_READ`]).
fn read_chunked(
    path: &Path,
    limit_bytes: u64,
    mut inspect: impl FnMut(&[u8]) -> Result<()>,
) -> Result<Vec<u8>> {
    if !std::fs::metadata(path).is_ok_and(|m| is_fifo(&m)) {
        return read_once(path, limit_bytes, inspect);
    }
    let pipes = PIPES_READ.get_or_init(Default::default);
    let earlier = pipes.lock().ok().and_then(|m| m.get(path).cloned());
    if let Some(bytes) = earlier {
        if bytes.len() as u64 > limit_bytes {
            return Err(ModelsError::TooLarge {
                path: path.to_path_buf(),
                bytes: None,
                limit_bytes,
            });
        }
        inspect(&bytes)?;
        return Ok(bytes);
    }
    let bytes = read_once(path, limit_bytes, inspect)?;
    if let Ok(mut m) = pipes.lock() {
        m.insert(path.to_path_buf(), bytes.clone());
    }
    Ok(bytes)
}

/// The one reader: [`Read::take`] of `limit_bytes + 1`, [`CHUNK_BYTES`] at a time; after each
/// chunk `inspect` sees every byte read so far and may stop the read (bytes that are not text).
fn read_once(
    path: &Path,
    limit_bytes: u64,
    mut inspect: impl FnMut(&[u8]) -> Result<()>,
) -> Result<Vec<u8>> {
    let io = |source| ModelsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let too_large = |bytes: Option<u64>| ModelsError::TooLarge {
        path: path.to_path_buf(),
        bytes,
        limit_bytes,
    };
    let file = open(path)?;
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
    let mut reader = file.take(limit_bytes + 1);
    loop {
        let before = bytes.len();
        let n = (&mut reader)
            .take(CHUNK_BYTES as u64)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > limit_bytes {
            return Err(too_large(None));
        }
        inspect(&bytes)?;
        if n == 0 || bytes.len() - before < CHUNK_BYTES {
            return Ok(bytes);
        }
    }
}

/// Writes `bytes` to `path` through a temp file in the same folder and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let io_err = |source| ModelsError::Write {
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
        let e = read_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(
            matches!(e, ModelsError::TooLarge { bytes: None, .. }),
            "{e}"
        );
    }

    #[test]
    fn junk_streams_stop_after_one_chunk() {
        // a limit far above what the test could read: refused after the first chunk
        let e = read_text_limited(Path::new("/dev/urandom"), 1 << 40).unwrap_err();
        assert!(
            matches!(e, ModelsError::NotText { .. } | ModelsError::Binary { .. }),
            "{e}"
        );
        let e = read_log_limited(Path::new("/dev/urandom"), 1 << 40).unwrap_err();
        assert!(e.to_string().contains("/dev/urandom"), "{e}");
        for e in [
            read_log_limited(Path::new("/dev/zero"), 1 << 40).unwrap_err(),
            read_text_limited(Path::new("/dev/zero"), 1 << 40).unwrap_err(),
        ] {
            assert!(matches!(e, ModelsError::Binary { offset: 0, .. }), "{e}");
        }
    }

    #[test]
    fn text_across_chunks_reads_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.log");
        // multi-byte characters cut by every chunk boundary, and junk replaced in a log
        let text = "é→日".repeat(CHUNK_BYTES / 2);
        std::fs::write(&p, &text).unwrap();
        assert_eq!(read_text_limited(&p, 1 << 30).unwrap(), text);
        let mut junk = text.clone().into_bytes();
        junk.push(0xff);
        std::fs::write(&p, &junk).unwrap();
        let e = read_text_limited(&p, 1 << 30).unwrap_err().to_string();
        assert!(e.contains(&format!("byte {}", text.len())), "{e}");
        assert!(read_log_limited(&p, 1 << 30).unwrap().ends_with('\u{fffd}'));
    }

    #[test]
    #[cfg(unix)]
    fn named_pipes_without_a_writer_are_refused_and_pipes_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo on this system: nothing to check
        }
        let t = std::time::Instant::now();
        let e = read_text_limited(&fifo, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("named pipe no program writes to"), "{e}");
        assert!(t.elapsed() < PIPE_OPEN_TIMEOUT * 3, "{:?}", t.elapsed());
        // a writer (on a pipe of its own: the refused open above still waits on the first):
        // read once, the second read gets the same text
        let fifo = dir.path().join("pipe2");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, "--tp 8\n").unwrap())
        };
        assert_eq!(read_text_limited(&fifo, 1 << 20).unwrap(), "--tp 8\n");
        writer.join().unwrap();
        assert_eq!(read_text_limited(&fifo, 1 << 20).unwrap(), "--tp 8\n");
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
