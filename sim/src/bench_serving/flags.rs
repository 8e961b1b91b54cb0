//! bench_serving's own flags whose spelling a serving engine's flag table has too: vLLM's
//! server takes `--tokenizer` and `--seed`, and so does bench_serving, the client
//! (`python -m sglang.bench_serving`), meaning its own tokenizer and its own prompt sampling.
//! bench_serving is not a serving engine, so its flags are spelt here, in the client's folder,
//! and the commands echo these; `use_graph`'s engine-flag check counts a spelling here as the
//! client's only if it is listed in [`SHARED_WITH_ENGINES`], and anywhere else outside `engine/`
//! as an engine's.

/// `--tokenizer`: the tokenizer bench_serving counts tokens with (recorded, not modelled).
pub const TOKENIZER: &str = "--tokenizer";
/// `--seed`: the seed of bench_serving's prompt sampling (recorded; the simulation's own seed
/// comes from the workload).
pub const SEED: &str = "--seed";

/// The flags above: bench_serving's, spelt as an engine's table spells one of its own.
pub const SHARED_WITH_ENGINES: [&str; 2] = [TOKENIZER, SEED];
