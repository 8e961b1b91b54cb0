//! Typed errors of the probe library. Public variants never name the CUDA bindings: driver, NCCL
//! and cuBLAS failures are carried as text (what failed and the library's own error name).

use std::path::PathBuf;

/// Everything that can stop a measurement, an import or a diff.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A needed shared library (libcuda, libnccl, libcublasLt, libnvidia-ml) could not be loaded.
    #[error("{library} not found: {hint}")]
    MissingLibrary { library: String, hint: String },
    /// The driver sees no GPU at all.
    #[error("no CUDA GPU found: check `nvidia-smi` and CUDA_VISIBLE_DEVICES")]
    NoGpu,
    /// `--gpus` names more or other GPUs than the machine has.
    #[error(
        "GPU {asked} requested but only {available} GPU(s) are visible (indices 0..{available})"
    )]
    TooFewGpus { asked: u32, available: u32 },
    /// A CUDA driver, NCCL or cuBLAS call failed.
    #[error("{what} failed: {message}")]
    Cuda { what: String, message: String },
    /// A worker child printed something the parent cannot read (a probe bug, not the GPU's).
    #[error(
        "{what}: {message}; this is a probe bug, please report it with the output of `probe run -v`"
    )]
    WorkerProtocol { what: String, message: String },
    /// Device or pinned host memory ran out.
    #[error("out of memory allocating {bytes} bytes for {what}: free GPU memory or use --quick")]
    OutOfMemory { what: String, bytes: u64 },
    /// An input file is malformed; names the file and line.
    #[error("{path}:{line}: {problem}")]
    Parse {
        path: PathBuf,
        line: usize,
        problem: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file (a chart, a page) could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A profile could not be read or written.
    #[error(transparent)]
    Profile(#[from] models::ModelsError),
    /// Bad combination of options.
    #[error("{0}")]
    Invalid(String),
    /// A multi-node run could not go on: a node did not join, was refused, or stopped.
    #[error("{0}")]
    Dist(String),
}

/// Exit code for bad input or an unusable environment (no GPU, no library, malformed file).
pub const EXIT_BAD_INPUT: i32 = 2;

/// Result alias for the probe library.
pub type Result<T> = std::result::Result<T, ProbeError>;

impl ProbeError {
    /// Wraps a failed GPU-library call, keeping only its printable form.
    pub fn cuda(what: impl Into<String>, err: impl std::fmt::Debug) -> Self {
        ProbeError::Cuda {
            what: what.into(),
            message: format!("{err:?}"),
        }
    }
}
