//! The shardwise simulator: a cost model of an SGLang-style server over every parallel layout of a
//! machine's GPUs (`cost`), the machine it runs on (`machine`, from a probe profile or a preset),
//! and a serving simulation that turns iteration costs into what `bench_serving` reports.
//! `records` reads public measurements (the records format of `validation-dev/records.json`),
//! `scoreboard` predicts every one shardwise can express and says how far off it is, and
//! `engine` says which serving engine's behaviour (SGLang or vLLM) a prediction simulates.
//!
//! Units: bytes and seconds internally; output keys follow bench_serving (`mean_ttft_ms`, …).

pub mod advise;
pub mod bench_io;
pub mod calibrate;
pub mod cost;
pub mod efficiency;
pub mod engine;
pub mod error;
pub mod layout;
pub mod machine;
pub mod options;
pub mod presets;
pub mod records;
pub mod report;
pub mod scoreboard;
pub mod serving;
pub mod sweep;
pub mod workload;
