//! Typed errors of the simulator library. Every message is one line that says what is wrong and
//! what to do about it; binaries print it and exit with status 2.

use std::path::PathBuf;

/// Everything that can go wrong while resolving a machine, checking a layout or costing it.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A model, GPU, layout or profile problem reported by the `models` crate.
    #[error(transparent)]
    Models(#[from] models::ModelsError),
    /// `--machine` named neither a preset nor a readable profile file.
    #[error(
        "unknown machine `{name}`: not a preset ({known}) and not a profile file; pass a preset name or a JSON profile written by `probe run`"
    )]
    UnknownMachine { name: String, known: String },
    /// A profile that parsed but cannot describe a machine (no GPUs, unknown GPU model, …).
    #[error("machine profile {path}: {problem}")]
    Profile { path: PathBuf, problem: String },
    /// A layout that asks for more GPUs than the machine has.
    #[error(
        "layout {layout} needs {needed} GPUs but machine `{machine}` has {available}; pick a layout of TP × PP ≤ {available} GPUs"
    )]
    NotEnoughGpus {
        layout: String,
        machine: String,
        needed: u32,
        available: u32,
    },
    /// GPUs asked of a machine (`CUDA_VISIBLE_DEVICES`, a record's part of a box) that it does
    /// not have, or listed twice.
    #[error("GPUs {asked} of machine `{machine}`: {problem}")]
    GpuSelection {
        asked: String,
        machine: String,
        problem: String,
    },
    /// A layout that the model or the engine cannot run, with the reason.
    #[error("layout {layout} is impossible: {reason}")]
    ImpossibleLayout { layout: String, reason: String },
    /// The weights (plus the runtime reserve) do not fit the static memory budget.
    #[error(
        "{model} does not fit on {layout}: weights {weights_gb:.2} GB + reserve {reserve_gb:.2} GB per GPU exceed the static budget {budget_gb:.2} GB ({flag} {fraction} × {memory_gb:.1} GB) by {shortfall_gb:.2} GB; use more GPUs per stage, a smaller format, a higher {flag}, or hold {offload_gib} GiB{more} a GPU in host memory (CPU weight offload: those weights then cross PCIe every forward pass)",
        more = if *.offload_more { " more" } else { "" }
    )]
    DoesNotFit {
        model: String,
        /// The engine's memory-share flag ([`crate::engine::ServingEngine::memory_fraction_flag`]).
        flag: &'static str,
        layout: String,
        fraction: f64,
        weights_gb: f64,
        reserve_gb: f64,
        budget_gb: f64,
        memory_gb: f64,
        shortfall_gb: f64,
        /// The whole GiB a GPU CPU weight offload would have to hold to make the shortfall up.
        offload_gib: u32,
        /// Some weights are held on the host already: the GiB are more of them.
        offload_more: bool,
    },
    /// The weights fit but leave no room for a single token of KV cache.
    #[error(
        "{model} on {layout}: the weights fit the static budget {budget_gb:.2} GB ({flag} {fraction} of the {available_gb:.2} GB free before loading) but leave {pool_gb:.2} GB per GPU for the KV cache, not one token; raise {flag} or use more GPUs per stage"
    )]
    NoKvRoom {
        model: String,
        /// The engine's memory-share flag.
        flag: &'static str,
        layout: String,
        fraction: f64,
        budget_gb: f64,
        available_gb: f64,
        pool_gb: f64,
    },
    /// A KV cache given outright (vLLM's `--kv-cache-memory-bytes`) that, with the weights and the
    /// runtime's reserves, is more than the card holds: the server runs out of memory.
    #[error(
        "{model} on {layout}: {flag} {cache_gib:.2} GiB: that cache ({cache_gb:.2} GB), the weights ({weights_gb:.2} GB) and the reserves ({reserve_gb:.2} GB) per GPU are {shortfall_gb:.2} GB more than the {memory_gb:.1} GB card holds (the engine runs out of memory allocating it); lower {flag} or use more GPUs per stage"
    )]
    KvCacheDoesNotFit {
        model: String,
        /// The engine's flag for the cache's bytes.
        flag: &'static str,
        layout: String,
        cache_gib: f64,
        /// What the cache takes as allocated (whole blocks, the draft's layers too).
        cache_gb: f64,
        weights_gb: f64,
        reserve_gb: f64,
        memory_gb: f64,
        shortfall_gb: f64,
    },
    /// A KV cache given outright (vLLM's `--kv-cache-memory-bytes`, plain bytes) too small for one
    /// block of tokens on each GPU: vLLM has no cache to start with.
    #[error(
        "{model} on {layout}: {flag} {given_bytes} (bytes) holds no KV token: one block of {block_tokens} tokens takes {block_bytes} bytes on each GPU of the busiest stage; give at least that many bytes (a unit reads too: 20G, 40GiB)"
    )]
    KvCacheHoldsNoToken {
        model: String,
        /// The engine's flag for the cache's bytes.
        flag: &'static str,
        layout: String,
        given_bytes: u64,
        block_tokens: u64,
        block_bytes: u64,
    },
    /// A server option out of range (`--mem-fraction-static 1.5`, `--cuda-graph-max-bs 0`, …).
    #[error("invalid {flag}: {problem}")]
    InvalidOption { flag: &'static str, problem: String },
}

/// Result alias for the simulator library.
pub type Result<T> = std::result::Result<T, SimError>;
