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
pub mod littles_law;

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
pub enum BenchIoError {
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

/// Reads `spec` = `path` or `path#run-id` (user-box.json style), detecting the format.
pub fn load(spec: &str, hints: LengthHints) -> Result<MeasuredSet, BenchIoError> {
    let (path, run_id) = match spec.split_once('#') {
        Some((p, id)) => (p, Some(id)),
        None => (spec, None),
    };
    let text = models::io::read_text_limited(Path::new(path), models::io::LOG_LIMIT_BYTES)
        .map_err(|e| BenchIoError::Read(e.to_string()))?;
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
            return Err(BenchIoError::PickRun {
                path: path.into(),
                known,
            });
        }
        return Err(BenchIoError::Empty {
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
            return Err(BenchIoError::Implausible {
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

fn num(v: &Value, key: &str) -> Option<f64> {
    match v.get(key)? {
        Value::Number(n) => n.as_f64(),
        // "~225" as people write approximate figures; Python's non-finite floats as themselves,
        // so that the checks refuse a NaN throughput instead of missing it
        Value::String(s) => crate::numtext::first(s).or_else(|| python_non_finite(s)),
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
    }
}

/// Requests to simulate for a closed-loop point whose prompt count was not recorded: four waves
/// of `concurrency`, enough to reach steady state while keeping the simulation short.
fn default_prompts(conc: Option<f64>) -> u32 {
    (conc.unwrap_or(16.0) as u32 * 4).max(8)
}

fn jsonl(path: &str, text: &str) -> MeasuredSet {
    let mut set = MeasuredSet::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{path}:{}", i + 1);
        match jsonl_point(&at, line) {
            Ok(p) => set.points.push(p),
            Err(why) => set.skipped.push(format!("{at}: {why}")),
        }
    }
    set
}

/// Python's `json.dumps` writes non-finite floats as bare `Infinity`, `-Infinity` and `NaN`
/// (bench_serving's default `request_rate` is `inf`); strict JSON has no such tokens. Rewrites
/// them, outside strings, to strings of themselves (`"NaN"`), which [`num`] reads back.
fn python_json_to_strict(line: &str) -> std::borrow::Cow<'_, str> {
    if !(line.contains("Infinity") || line.contains("NaN")) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(token) = PYTHON_NON_FINITE
            .iter()
            .map(|(t, _)| *t)
            .find(|t| rest.starts_with(t))
        {
            out.push('"');
            out.push_str(token);
            out.push('"');
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

fn jsonl_point(at: &str, line: &str) -> Result<MeasuredPoint, String> {
    let v: Value = serde_json::from_str(&python_json_to_strict(line))
        .map_err(|e| format!("not a complete JSON object, truncated or malformed ({e})"))?;
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    let req = |k: &str| num(&v, k).ok_or_else(|| format!("missing key `{k}`"));
    let completed = req("completed")?;
    if completed < 1.0 {
        return Err("`completed` is 0: no request succeeded".into());
    }
    let output_throughput = req("output_throughput")?;
    let duration = req("duration")?;
    if v.get("request_rate").and_then(Value::as_str) == Some("trace") {
        return Err(
            "`request_rate` is \"trace\" (trace timestamps), which cannot be replayed".into(),
        );
    }
    // `random_*_len` are written whatever the dataset (their defaults, 1024, for ShareGPT), so
    // they describe the run only for the random datasets; otherwise use the measured means.
    let random = v
        .get("dataset_name")
        .and_then(Value::as_str)
        .is_none_or(|d| d.starts_with("random"));
    let mean_of = |k: &str| num(&v, k).map(|t| t / completed);
    let (input, output) = if random {
        (
            num(&v, "random_input_len").or_else(|| mean_of("total_input_tokens")),
            num(&v, "random_output_len").or_else(|| mean_of("total_output_tokens")),
        )
    } else {
        (
            mean_of("total_input_tokens"),
            mean_of("total_output_tokens"),
        )
    };
    let input = input.ok_or("missing key `random_input_len` (and `total_input_tokens`)")?;
    let output = output.ok_or("missing key `random_output_len` (and `total_output_tokens`)")?;
    let conc = num(&v, "max_concurrency");
    let mut w = workload(
        conc,
        num(&v, "request_rate"),
        input.round() as u32,
        output.round() as u32,
        completed as u32,
    );
    if random && let Some(r) = num(&v, "random_range_ratio") {
        w.random_range_ratio = r;
    }
    Ok(MeasuredPoint {
        source: at.into(),
        workload: w,
        metrics: MeasuredMetrics {
            duration: Some(duration),
            output_throughput: Some(output_throughput),
            total_throughput: num(&v, "total_throughput")
                .or_else(|| num(&v, "input_throughput").map(|i| i + output_throughput)),
            request_throughput: num(&v, "request_throughput"),
            mean_ttft_ms: num(&v, "mean_ttft_ms"),
            median_ttft_ms: num(&v, "median_ttft_ms"),
            mean_tpot_ms: num(&v, "mean_tpot_ms"),
            median_tpot_ms: num(&v, "median_tpot_ms"),
            mean_itl_ms: num(&v, "mean_itl_ms"),
            mean_e2e_latency_ms: num(&v, "mean_e2e_latency_ms"),
        },
    })
}

/// Value after `label:` on a line of a summary block.
fn field(block: &str, label: &str) -> Option<f64> {
    block
        .lines()
        .find(|l| l.trim_start_matches(['#', ' ']).starts_with(label))
        .and_then(|l| l.split_once(':'))
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// Whether a line of `block` starts with `label`.
fn block_has(block: &str, label: &str) -> bool {
    block
        .lines()
        .any(|l| l.trim_start_matches(['#', ' ']).starts_with(label))
}

fn summary_blocks(path: &str, text: &str) -> MeasuredSet {
    let mut set = MeasuredSet::default();
    let parts: Vec<&str> = text.split("Serving Benchmark Result").collect();
    for (i, block) in parts.iter().enumerate().skip(1) {
        let at = format!("{path}#block{i}");
        // bench_serving prints both inside the block (`not set` / `inf` read as absent); the
        // `Maximum request concurrency` line before it is `benchmark_args` of older forks.
        let conc = if block_has(block, "Max request concurrency") {
            field(block, "Max request concurrency")
        } else {
            field(parts[i - 1], "Maximum request concurrency")
        };
        let rate = field(block, "Traffic request rate");
        let (Some(n), Some(d), Some(inp), Some(out), Some(thr)) = (
            field(block, "Successful requests"),
            field(block, "Benchmark duration (s)"),
            field(block, "Total input tokens"),
            field(block, "Total generated tokens"),
            field(block, "Output token throughput (tok/s)"),
        ) else {
            set.skipped.push(format!(
                "{at}: missing one of Successful requests / Benchmark duration / Total input tokens / Total generated tokens / Output token throughput"
            ));
            continue;
        };
        let w = workload(
            conc,
            rate,
            (inp / n).round() as u32,
            (out / n).round() as u32,
            n as u32,
        );
        set.points.push(MeasuredPoint {
            source: at,
            workload: w,
            metrics: MeasuredMetrics {
                duration: Some(d),
                output_throughput: Some(thr),
                total_throughput: field(block, "Total throughput (tok/s)")
                    .or(field(block, "Total token throughput (tok/s)"))
                    .or(field(block, "Total Token throughput (tok/s)")),
                request_throughput: field(block, "Request throughput (req/s)"),
                mean_ttft_ms: field(block, "Mean TTFT (ms)"),
                median_ttft_ms: field(block, "Median TTFT (ms)"),
                mean_tpot_ms: field(block, "Mean TPOT (ms)"),
                median_tpot_ms: field(block, "Median TPOT (ms)"),
                mean_itl_ms: field(block, "Mean ITL (ms)"),
                mean_e2e_latency_ms: field(block, "Mean E2E Latency (ms)"),
            },
        });
    }
    set
}

/// The run ids of a user-box.json style file (`{"runs": [{"id": …}, …]}`), `None` otherwise.
fn run_ids(text: &str) -> Option<String> {
    let v: Value = serde_json::from_str(text).ok()?;
    let ids: Vec<&str> = v
        .get("runs")?
        .as_array()?
        .iter()
        .filter_map(|r| r.get("id")?.as_str())
        .collect();
    (!ids.is_empty()).then(|| ids.join(", "))
}

fn user_box(
    path: &str,
    text: &str,
    id: &str,
    hints: LengthHints,
) -> Result<MeasuredSet, BenchIoError> {
    let fmt = |problem: String| BenchIoError::Format {
        path: path.into(),
        problem,
    };
    let v: Value = serde_json::from_str(text).map_err(|e| fmt(format!("malformed JSON: {e}")))?;
    let runs = v
        .get("runs")
        .and_then(Value::as_array)
        .ok_or_else(|| fmt("no `runs` array".into()))?;
    let run = runs
        .iter()
        .find(|r| r.get("id").and_then(Value::as_str) == Some(id))
        .ok_or_else(|| BenchIoError::UnknownRun {
            path: path.into(),
            id: id.into(),
            known: runs
                .iter()
                .filter_map(|r| r.get("id")?.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let empty = Value::Null;
    let wl = run.get("workload").unwrap_or(&empty);
    let source = format!("{path}#{id}");
    let lengths = || -> Result<(u32, u32), BenchIoError> {
        let i = hints.input_len.or(num(wl, "input_len").map(|x| x as u32));
        let o = hints.output_len.or(num(wl, "output_len").map(|x| x as u32));
        match (i, o) {
            (Some(i), Some(o)) => Ok((i, o)),
            _ => Err(BenchIoError::MissingLengths {
                source_: source.clone(),
            }),
        }
    };
    let mut set = MeasuredSet::default();
    if let Some(points) = run.get("points").and_then(Value::as_array) {
        let (inp, out) = lengths()?;
        for (i, p) in points.iter().enumerate() {
            // `requests_in_flight` is what the server ran; older files said `concurrency`.
            let conc = num(p, "requests_in_flight").or(num(p, "concurrency"));
            let Some(thr) = num(p, "throughput_tok_s").or(num(p, "output_tok_s")) else {
                set.skipped
                    .push(format!("{source}[{i}]: no throughput_tok_s"));
                continue;
            };
            let prompts = num(p, "num_prompts").map_or(default_prompts(conc), |n| n as u32);
            let point = MeasuredPoint {
                source: format!("{source}[{i}]"),
                workload: workload(conc, None, inp, out, prompts),
                metrics: MeasuredMetrics {
                    output_throughput: Some(thr),
                    mean_e2e_latency_ms: num(p, "avg_latency_s").map(|s| s * 1e3),
                    ..MeasuredMetrics::default()
                },
            };
            if let Some(label) = num(p, "label_concurrency").filter(|l| Some(*l) != conc) {
                let implied = littles_law::implied_in_flight(&point).map_or(String::new(), |n| {
                    format!(", Little's law on its latency {n:.1}")
                });
                set.warnings.push(format!(
                    "{}: labelled concurrency {label} but {} requests were in flight (requests_in_flight{implied}); using requests_in_flight",
                    point.source,
                    conc.map_or("an unknown number of".into(), |c| c.to_string()),
                ));
            }
            set.points.push(point);
        }
    } else if let Some(m) = run.get("metrics") {
        let conc = num(wl, "max_concurrency");
        let thr = num(m, "output_tok_s");
        if thr.is_none() {
            return Err(fmt(format!(
                "run `{id}` has no output_tok_s to compare with"
            )));
        }
        let (inp, out) = lengths()?;
        set.points.push(MeasuredPoint {
            source,
            workload: workload(conc, None, inp, out, default_prompts(conc)),
            metrics: MeasuredMetrics {
                output_throughput: thr,
                total_throughput: num(m, "total_tok_s"),
                ..MeasuredMetrics::default()
            },
        });
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_inside_text() {
        let v = |s: &str| num(&serde_json::json!({ "k": s }), "k");
        assert_eq!(v("~225"), Some(225.0));
        assert_eq!(v("short (~61 tokens, mostly cached)"), Some(61.0));
        assert_eq!(v("1.2k"), Some(1200.0));
        assert_eq!(v("none"), None);
        assert!(v("NaN").unwrap().is_nan());
        assert_eq!(v("-Infinity"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn jsonl_keeps_good_lines_and_counts_bad_ones() {
        let text = concat!(
            r#"{"completed": 100, "duration": 10.0, "output_throughput": 1000.0, "max_concurrency": 8, "random_input_len": 128, "random_output_len": 100, "mean_ttft_ms": 50.0}"#,
            "\n",
            r#"{"completed": 100, "duration": 10.0}"#,
            "\n{not json\n"
        );
        let s = jsonl("x.jsonl", text);
        assert_eq!(s.points.len(), 1);
        assert_eq!(s.skipped.len(), 2);
        assert!(
            s.skipped[0].contains("output_throughput"),
            "{:?}",
            s.skipped
        );
        let p = &s.points[0];
        assert_eq!(p.workload.max_concurrency, Some(8));
        assert_eq!(p.workload.num_prompts, 100);
        assert_eq!(p.metrics.mean_ttft_ms, Some(50.0));
    }

    #[test]
    fn summary_block_is_parsed() {
        let text = "Maximum request concurrency: 32\n============ Serving Benchmark Result ============\nBackend:                                 sglang\nSuccessful requests:                     32\nBenchmark duration (s):                  150.87\nTotal input tokens:                      65536\nTotal generated tokens:                  65536\nOutput token throughput (tok/s):         434.40\nTotal Token throughput (tok/s):          868.80\nMean TTFT (ms):                          7279.56\nMean TPOT (ms):                          70.14\n==================================================\n";
        let s = summary_blocks("b.txt", text);
        assert_eq!(s.points.len(), 1);
        let p = &s.points[0];
        assert_eq!(p.workload.max_concurrency, Some(32));
        assert_eq!(p.workload.random_input_len, 2048);
        assert_eq!(p.metrics.total_throughput, Some(868.80));
        assert_eq!(p.metrics.mean_tpot_ms, Some(70.14));
    }
}
