//! A run of a runs file (`data/observations/user-box.json#run-id`): `requests_in_flight` is the
//! load; a `label_concurrency` that differs is warned about; `"closed_rounds": true` in its
//! workload says the client sent each round at once ([`Workload::closed_rounds`]).

use super::{
    LengthHints, MeasuredMetrics, MeasuredPoint, MeasuredSet, ReadError, default_prompts,
    littles_law, num, workload,
};
use crate::workload::Workload;
use serde_json::Value;

/// The run ids of a user-box.json style file (`{"runs": [{"id": …}, …]}`), `None` otherwise.
pub(super) fn run_ids(text: &str) -> Option<String> {
    let v: Value = serde_json::from_str(text).ok()?;
    let ids: Vec<&str> = v
        .get("runs")?
        .as_array()?
        .iter()
        .filter_map(|r| r.get("id")?.as_str())
        .collect();
    (!ids.is_empty()).then(|| ids.join(", "))
}

/// What a runs file records of how its run's server was launched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedFlags {
    /// Its `layout` and `flags` texts as launch-line words (`--tp`, `8`, `--disable-cuda-graph`),
    /// a `name value` clause in the `server_args` spelling (`chunked_prefill_size 8192`) as the
    /// flag it is (`--chunked-prefill-size 8192`).
    pub words: Vec<String>,
    /// The `;`-separated clauses that are prose, not flags ("tuned Triton fused-MoE configs").
    pub prose: Vec<String>,
}

/// The flags run `id` of a runs file records (its `layout`, then its `flags`); `None` when the
/// file is not one or holds no such run.
pub(super) fn recorded_flags(text: &str, id: &str) -> Option<RecordedFlags> {
    let v: Value = serde_json::from_str(text).ok()?;
    let run = v
        .get("runs")?
        .as_array()?
        .iter()
        .find(|r| r.get("id").and_then(Value::as_str) == Some(id))?;
    let mut out = RecordedFlags::default();
    for field in ["layout", "flags"] {
        let Some(text) = run.get(field).and_then(Value::as_str) else {
            continue;
        };
        for clause in text.split(';').map(str::trim).filter(|c| !c.is_empty()) {
            // "(per FINDINGS.md commands)" beside the flags is prose, named; the flags stay
            let (clause, asides) = without_asides(clause);
            out.prose.extend(asides);
            let clause = clause.as_str();
            if clause.is_empty() {
                continue;
            }
            let words: Vec<&str> = clause.split_whitespace().collect();
            let dest = crate::engine::sglang::args::SPECS
                .iter()
                .find(|s| words.len() == 2 && s.dest == words[0]);
            if clause.starts_with("--") {
                out.words.extend(words.iter().map(|w| w.to_string()));
            } else if let Some(spec) = dest {
                out.words.push(spec.canonical().to_string());
                out.words.push(words[1].to_string());
            } else {
                out.prose.push(clause.to_string());
            }
        }
    }
    Some(out)
}

/// `clause` without its parenthesised asides, and the asides (with their parentheses); an
/// unclosed `(` leaves the rest as the aside.
fn without_asides(clause: &str) -> (String, Vec<String>) {
    let (mut kept, mut asides, mut depth, mut aside) =
        (String::new(), Vec::new(), 0u32, String::new());
    for c in clause.chars() {
        match c {
            '(' => {
                depth += 1;
                aside.push(c);
            }
            ')' if depth > 0 => {
                depth -= 1;
                aside.push(c);
                if depth == 0 {
                    asides.push(std::mem::take(&mut aside));
                }
            }
            _ if depth > 0 => aside.push(c),
            _ => kept.push(c),
        }
    }
    if !aside.is_empty() {
        asides.push(aside);
    }
    (kept.trim().to_string(), asides)
}

/// The points of run `id` of the runs file at `path` (`hints` fill lengths it left out).
pub(super) fn user_box(
    path: &str,
    text: &str,
    id: &str,
    hints: LengthHints,
) -> Result<MeasuredSet, ReadError> {
    let fmt = |problem: String| ReadError::Format {
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
        .ok_or_else(|| ReadError::UnknownRun {
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
    let lengths = || -> Result<(u32, u32), ReadError> {
        // the run's own lengths first: the hints fill only what it did not record
        let i = num(wl, "input_len").map(|x| x as u32).or(hints.input_len);
        let o = num(wl, "output_len").map(|x| x as u32).or(hints.output_len);
        match (i, o) {
            (Some(i), Some(o)) => Ok((i, o)),
            _ => Err(ReadError::MissingLengths {
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
                workload: Workload {
                    // a client that sends each round at once and waits for all of it
                    closed_rounds: wl.get("closed_rounds").and_then(Value::as_bool) == Some(true),
                    ..workload(conc, None, inp, out, prompts)
                },
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
