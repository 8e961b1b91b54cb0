//! The shardwise simulator: a cost model of an SGLang-style server over every parallel layout of a
//! machine's GPUs (`cost`), the machine it runs on (`machine`, from a probe profile or a preset),
//! and a serving simulation that turns iteration costs into what `bench_serving` reports. A machine
//! may be several boxes (`machine::nodes`); `scale` answers what the other boxes buy.
//! [`server_log`] reads SGLang's own server log (arguments, memory lines, step-time samples) for
//! calibration and validation; [`bench_serving`] reads measured bench_serving runs and writes
//! predicted ones.
//!
//! User inputs are read at the edge into the typed values the rest uses: [`engine`]'s readers (each
//! engine's launch lines, `server_args` dumps and records' flag text, with its defaults), [`bench_serving::read`]
//! (measured bench_serving runs) and [`workload`] (bench_serving's random and ShareGPT datasets);
//! [`bench_serving::write`] writes a predicted run as bench_serving's JSONL line. [`scenario`] holds one
//! prediction's resolved inputs (machine, model, flags, options, knobs) that every command shares.
//!
//! `records` reads public measurements (the records format of `validation-dev/records.json`),
//! `scoreboard` predicts every one shardwise can express and says how far off it is, and
//! [`engine`] holds the serving engines (SGLang, vLLM) behind one trait, whose tag the neutral
//! [`options::ServerOptions`] carry;
//! [`uncertainty`] puts a measured 80% interval on every prediction and a probability on every
//! verdict between two.
//!
//! Units: bytes and seconds internally; output keys follow bench_serving (`mean_ttft_ms`, …).

pub mod acceptance;
pub mod advise;
pub mod b12x_build;
pub mod bench_serving;
pub mod calibrate;
pub mod cost;
pub mod doctor;
pub mod efficiency;
pub mod engine;
pub mod error;
pub mod layout;
pub mod log_check;
pub mod machine;
pub mod memory_fit;
pub mod nccl_graph_variant;
pub mod numtext;
pub mod options;
pub mod p2p_variant;
pub mod plausible;
pub mod presets;
pub mod records;
pub mod report;
pub use advise::scale;
pub mod scenario;
pub mod scoreboard;
pub mod server_log;
pub mod serving;
pub mod sweep;
pub mod uncertainty;
pub mod workload;
