//! Measured serving runs, read from what people actually have:
//! - SGLang `bench_serving --output-file` JSONL: one object appended per run. Two key layouts,
//!   read from SGLang's source: the monolithic `python/sglang/bench_serving.py` (commit
//!   `0033168f`: `duration`, `completed`, `total_input_tokens`, `output_throughput`,
//!   `mean_ttft_ms`, `median_tpot_ms`, `p95_itl_ms`, `accept_length`, … and no
//!   `total_throughput`) and `python/sglang/benchmark/serving.py` after the move of PR #28996
//!   (commit `00f9ec47`: adds `tag`, a nested `server_info`, `total_throughput`,
//!   `total_input_text_tokens`, `p90_*`/`p95_*` of every latency, `max_output_tokens_per_s`,
//!   `max_concurrent_requests`; `request_rate` may be the string `"trace"`). Python's
//!   `json.dumps` writes `--request-rate inf` as the bare token `Infinity` (and a NaN as `NaN`),
//!   which strict JSON rejects; those tokens are read as the floats they stand for (and a NaN
//!   or infinite measurement is then refused, see below). A line that is not JSON (a
//!   truncated last line) or lacks a required key is skipped and counted; the good lines are kept.
//! - bench_serving's printed summary (`============ Serving Benchmark Result ============` …), one
//!   or more blocks in a text file; both layouts print `Max request concurrency:` and
//!   `Traffic request rate:` inside the block.
//! - A small CSV for hand-written figures: `concurrency,input_len,output_len,output_tok_s` plus
//!   optional `total_tok_s,mean_ttft_ms,mean_tpot_ms,num_prompts`.
//! - `data/observations/user-box.json#run-id`: a run of the user's own box (`requests_in_flight`
//!   is the load; a `label_concurrency` that differs is warned about).
//!
//! Every point whose latency is known is checked with Little's law ([`littles_law`]): a stated
//! concurrency that its own numbers contradict is a warning in [`MeasuredSet::warnings`]. A figure
//! that cannot be a measurement (negative, NaN, infinite, absurd: [`checks`]) refuses the file,
//! naming the row and the field.

pub mod checks;
mod csv;
mod jsonl;
pub mod littles_law;
mod summary;
mod user_box;

use jsonl::jsonl;
use summary::summary_blocks;
pub use user_box::RecordedFlags;
use user_box::{run_ids, user_box};

use crate::workload::Workload;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// One measured run: its workload and what it reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredPoint {
    /// Where it came from (`file:line`, `file#run-id[i]`).
    pub source: String,
    /// The workload to simulate for it.
    pub workload: Workload,
    /// What was measured.
    pub metrics: MeasuredMetrics,
}

/// bench_serving metrics; every one optional because hand-written figures have few.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeasuredMetrics {
    pub duration: Option<f64>,
    pub output_throughput: Option<f64>,
    pub total_throughput: Option<f64>,
    pub request_throughput: Option<f64>,
    pub mean_ttft_ms: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub mean_tpot_ms: Option<f64>,
    pub median_tpot_ms: Option<f64>,
    pub mean_itl_ms: Option<f64>,
    /// Mean end-to-end request latency (bench_serving's `mean_e2e_latency_ms`).
    #[serde(default)]
    pub mean_e2e_latency_ms: Option<f64>,
}

/// The readable points of a file and the lines that were not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasuredSet {
    pub points: Vec<MeasuredPoint>,
    /// One line per skipped record: where and why.
    pub skipped: Vec<String>,
    /// One line per point whose stated concurrency its own numbers contradict (Little's law).
    pub warnings: Vec<String>,
}

/// Prompt/output lengths to assume where a measurement did not record them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LengthHints {
    pub input_len: Option<u32>,
    pub output_len: Option<u32>,
}

/// Why measured runs cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Not readable as text within the size limit (`models::io`).
    #[error("{0}")]
    Read(String),
    #[error("{path}: {problem}")]
    Format { path: String, problem: String },
    #[error("{path}: no run `{id}` (runs: {known})")]
    UnknownRun {
        path: String,
        id: String,
        known: String,
    },
    #[error(
        "{source_}: input/output lengths were not recorded; pass --random-input-len and --random-output-len"
    )]
    MissingLengths { source_: String },
    #[error(
        "{path}: no usable measurement ({skipped} records skipped{first}); give bench_serving's \
         --output-file JSONL, its printed result block, a CSV, or a runs file as FILE#RUN"
    )]
    Empty {
        path: String,
        skipped: usize,
        /// `; first: <where: why>` when a record was skipped.
        first: String,
    },
    #[error("{path}: a file of several runs; pick one as {path}#RUN (runs: {known})")]
    PickRun { path: String, known: String },
    #[error("{source_}: {field} {problem}; fix or remove that row")]
    Implausible {
        source_: String,
        field: String,
        problem: String,
    },
}

/// The flags a `FILE#RUN` runs file records for its run; `None` for any other measurement
/// (a bench_serving file records its client, not the server's launch).
pub fn recorded_flags(spec: &str) -> Result<Option<RecordedFlags>, ReadError> {
    let Some((path, id)) = spec.split_once('#') else {
        return Ok(None);
    };
    let text = models::io::read_text_limited(Path::new(path), MEASURED_LIMIT_BYTES)
        .map_err(|e| ReadError::Read(e.to_string()))?;
    Ok(user_box::recorded_flags(&text, id))
}

/// Reads `spec` = `path` or `path#run-id` (user-box.json style), detecting the format.
pub fn load(spec: &str, hints: LengthHints) -> Result<MeasuredSet, ReadError> {
    let (path, run_id) = match spec.split_once('#') {
        Some((p, id)) => (p, Some(id)),
        None => (spec, None),
    };
    let text = models::io::read_text_limited(Path::new(path), MEASURED_LIMIT_BYTES)
        .map_err(|e| ReadError::Read(e.to_string()))?;
    let mut set = if let Some(id) = run_id {
        user_box(path, &text, id, hints)?
    } else if text.contains("Serving Benchmark Result") {
        summary_blocks(path, &text)
    } else if path.ends_with(".csv") {
        csv::read(path, &text)?
    } else {
        jsonl(path, &text)
    };
    if set.points.is_empty() {
        if run_id.is_none()
            && let Some(known) = run_ids(&text)
        {
            return Err(ReadError::PickRun {
                path: path.into(),
                known,
            });
        }
        return Err(ReadError::Empty {
            path: path.into(),
            skipped: set.skipped.len(),
            first: set
                .skipped
                .first()
                .map(|w| format!("; first: {w}"))
                .unwrap_or_default(),
        });
    }
    for p in &set.points {
        if let Some((field, problem)) = checks::implausible(p) {
            return Err(ReadError::Implausible {
                source_: p.source.clone(),
                field: field.into(),
                problem,
            });
        }
    }
    let checked = littles_law::warnings(&set.points);
    set.warnings.extend(checked);
    Ok(set)
}

/// The largest measured-runs file read (bench_serving JSON/JSONL, CSV, summaries, runs files):
/// a day of bench_serving JSONL is a few MB, and JSON parses to ~9× its size in memory, so
/// 64 MiB keeps a read under 1 GB where the 1 GiB log limit would take 9 GB.
pub const MEASURED_LIMIT_BYTES: u64 = 64 << 20;

/// The number at `key` of `v` (a number, a number in text, or Python's non-finite spellings).
fn num(v: &Value, key: &str) -> Option<f64> {
    match v.get(key)? {
        Value::Number(n) => n.as_f64(),
        // "~225" as people write approximate figures, read whole by the one figure grammar (a
        // text it cannot read for sure is no number, never a guess); Python's non-finite floats
        // as themselves, so that the checks refuse a NaN throughput instead of missing it
        Value::String(s) => python_non_finite(s).or_else(|| {
            crate::numtext::figure(s)
                .ok()
                .filter(|f| f.numbers.len() == 1)
                .map(|f| f.value)
        }),
        _ => None,
    }
}

/// Python's `json.dumps` spellings of non-finite floats.
const PYTHON_NON_FINITE: [(&str, f64); 3] = [
    ("-Infinity", f64::NEG_INFINITY),
    ("Infinity", f64::INFINITY),
    ("NaN", f64::NAN),
];

fn python_non_finite(s: &str) -> Option<f64> {
    PYTHON_NON_FINITE
        .iter()
        .find(|(t, _)| *t == s)
        .map(|(_, v)| *v)
}

fn workload(conc: Option<f64>, rate: Option<f64>, input: u32, output: u32, n: u32) -> Workload {
    Workload {
        num_prompts: n.max(1),
        random_input_len: input.max(1),
        random_output_len: output.max(1),
        random_range_ratio: 1.0,
        max_concurrency: conc.map(|c| c as u32),
        request_rate: rate.filter(|r| r.is_finite() && *r > 0.0),
        cached_prefix_tokens: 0,
        seed: 1,
        dataset: Default::default(),
        closed_rounds: false,
    }
}

/// Requests to simulate for a closed-loop point whose prompt count was not recorded: four waves
/// of `concurrency`, enough to reach steady state while keeping the simulation short.
fn default_prompts(conc: Option<f64>) -> u32 {
    (conc.unwrap_or(16.0) as u32 * 4).max(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_inside_text() {
        let v = |s: &str| num(&serde_json::json!({ "k": s }), "k");
        assert_eq!(v("~225"), Some(225.0));
        // read whole by the one grammar: an aside is said, words before the number are not
        // read (the run's lengths are then missing and asked for, never guessed)
        assert_eq!(v("~61 tokens (mostly cached)"), Some(61.0));
        assert_eq!(v("short (~61 tokens, mostly cached)"), None);
        assert_eq!(v("24-60"), None);
        assert_eq!(v("1.2k"), Some(1200.0));
        assert_eq!(v("none"), None);
        assert!(v("NaN").unwrap().is_nan());
        assert_eq!(v("-Infinity"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn recorded_flags_split_flags_from_prose() {
        let text = serde_json::json!({"runs": [{
            "id": "a",
            "layout": "--tp 4 --pp-size 2",
            "flags": "--disable-cuda-graph; tuned configs; chunked_prefill_size 8192; mem_fraction_static",
        }, {"id": "b"}]})
        .to_string();
        let r = user_box::recorded_flags(&text, "a").unwrap();
        assert_eq!(
            r.words,
            [
                "--tp",
                "4",
                "--pp-size",
                "2",
                "--disable-cuda-graph",
                "--chunked-prefill-size",
                "8192"
            ]
        );
        // a name without its value is prose, not a flag
        assert_eq!(r.prose, ["tuned configs", "mem_fraction_static"]);
        assert_eq!(
            user_box::recorded_flags(&text, "b"),
            Some(RecordedFlags::default())
        );
        assert_eq!(user_box::recorded_flags(&text, "c"), None);
        assert_eq!(user_box::recorded_flags("not json", "a"), None);
    }
}
