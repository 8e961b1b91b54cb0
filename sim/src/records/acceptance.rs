//! Measured acceptance of speculative-decoding records: what the engine itself reported per run
//! (vLLM's `SpecDecoding metrics` acceptance rate, SGLang's `accept len`, bench_serving's
//! `accept_length`), read from a file beside a records file (`sim validate --records R
//! --implied-accept-length --acceptance FILE`) or from a record's own `accept_length` metric.
//!
//! With it, the implied acceptance length of a record is checked against the one the engine
//! measured, and the record is predicted with its own acceptance (or its pool's, below): a check
//! of the speculative step model that does not assume acceptance is constant across a series
//! (it is not: a draft's acceptance moves with the prompts of each 30-second window).
//!
//! File format (JSON, schema 1): `{"schema_version": 1, "source": "…", "records": [{"id": "…",
//! "accept_length": 2.48}, {"id": "…", "acceptance_rate": 0.494, "num_speculative_tokens": 3}]}`;
//! an acceptance rate (accepted ÷ drafted tokens, vLLM's figure) becomes a length
//! `1 + rate × num_speculative_tokens` (the bonus token plus the accepted drafts). Where a source
//! published only the range its runs' acceptance lengths spanned (not one per run), an entry says
//! `"accept_length_range": [lo, hi]`: the record is predicted at the middle of the range and its
//! row says so ([`MeasuredAcceptance::range_of`]), and the range's two ends bound the prediction.
//! Several files may be given (`--acceptance A --acceptance B`); an id in two of them is an error.
//!
//! **Pools.** An entry may name the `"pool"` it belongs to: the cells one server profile ran
//! (one launch, one draft, one page table). Each cell of a pool is predicted with the pool's mean
//! length, its own figure kept beside it ([`MeasuredAcceptance::pooled`]). Why: a cell's rate is
//! the engine's counters over that cell's window, and on the Kimi-K2.6 page
//! (`tests/fixtures/acceptance/rtx6kpro-kimi-k26-v4.json`) the cells' measured throughput does
//! not follow them: across the four DCP profiles at one (context, concurrency), the measured
//! on ÷ off step ratio rises with the cell's own length (slope 0.71 per token, correlation 0.71,
//! 108 cells), where a throughput set by that length would leave it flat; the page itself says
//! the Kimi draft's acceptance "varies much more than GLM in this setup". The pool's mean is
//! the same measurement, averaged where its window-to-window scatter cancels.

use super::Record;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Schema version of the acceptance file this build reads.
pub const ACCEPTANCE_SCHEMA_VERSION: u32 = 1;
/// Largest acceptance file read (a few thousand records fit in far less): the records' limit.
pub const MAX_ACCEPTANCE_FILE_BYTES: u64 = models::io::RECORDS_LIMIT_BYTES;
/// The record metric that carries a measured acceptance length (bench_serving's JSONL key).
pub const ACCEPT_LENGTH_METRIC: &str = "accept_length";
/// The record metric that carries vLLM's measured acceptance rate (accepted ÷ drafted tokens,
/// a share or a percentage), converted with the draft's tokens a step
/// ([`crate::acceptance::length_from_rate`]).
pub const ACCEPT_RATE_METRIC: &str = "spec_accept_rate";

/// Why an acceptance file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AcceptanceError {
    #[error("cannot read acceptance file {path}: {problem}")]
    Io { path: PathBuf, problem: String },
    #[error(
        "acceptance file {path}: {problem}; expected {{\"schema_version\": 1, \"records\": [{{\"id\": …, \"accept_length\": L}} or {{\"id\": …, \"acceptance_rate\": r, \"num_speculative_tokens\": k}} or {{\"id\": …, \"accept_length_range\": [lo, hi]}}]}}"
    )]
    Format { path: PathBuf, problem: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    schema_version: u32,
    #[serde(default)]
    #[allow(dead_code)] // read so that a file may cite where its figures came from
    source: Option<String>,
    records: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    #[serde(default)]
    accept_length: Option<f64>,
    #[serde(default)]
    acceptance_rate: Option<f64>,
    #[serde(default)]
    num_speculative_tokens: Option<u32>,
    #[serde(default)]
    accept_length_range: Option<[f64; 2]>,
    /// The server profile whose cells share one acceptance (see the module's "Pools").
    #[serde(default)]
    pool: Option<String>,
}

/// A cell predicted with its pool's mean acceptance length.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// The pool's name (the server profile, as the file says it).
    pub pool: String,
    /// Cells in the pool.
    pub cells: usize,
    /// The cell's own length, as published.
    pub own_length: f64,
}

/// Measured acceptance lengths by record id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasuredAcceptance {
    /// The length each record is predicted with (a range's middle for the ids of `ranges`).
    pub by_id: BTreeMap<String, f64>,
    /// The ids whose source published only a range over its runs: (lowest, highest) length.
    pub ranges: BTreeMap<String, (f64, f64)>,
    /// The ids predicted with their pool's mean length: the pool and the cell's own length.
    pub pooled: BTreeMap<String, Pooled>,
}

impl MeasuredAcceptance {
    /// Reads an acceptance file.
    pub fn load(path: &Path) -> Result<MeasuredAcceptance, AcceptanceError> {
        let io = |problem: String| AcceptanceError::Io {
            path: path.to_path_buf(),
            problem,
        };
        let text = models::io::read_text_limited(path, MAX_ACCEPTANCE_FILE_BYTES)
            .map_err(|e| io(e.to_string()))?;
        Self::parse(text.as_bytes(), path)
    }

    /// Reads several acceptance files into one; a record named by two of them is an error.
    pub fn load_all(paths: &[PathBuf]) -> Result<MeasuredAcceptance, AcceptanceError> {
        let mut all = MeasuredAcceptance::default();
        for path in paths {
            let one = Self::load(path)?;
            if let Some(id) = one.by_id.keys().find(|id| all.by_id.contains_key(*id)) {
                return Err(AcceptanceError::Format {
                    path: path.clone(),
                    problem: format!(
                        "record `{id}` is also in an earlier acceptance file; give each record's acceptance once"
                    ),
                });
            }
            all.by_id.extend(one.by_id);
            all.ranges.extend(one.ranges);
            all.pooled.extend(one.pooled);
        }
        Ok(all)
    }

    /// The published range a record's length is the middle of, when its source gave no per-run
    /// figure.
    pub fn range_of(&self, id: &str) -> Option<(f64, f64)> {
        self.ranges.get(id).copied()
    }

    /// Parses the bytes of an acceptance file read from `path`.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<MeasuredAcceptance, AcceptanceError> {
        let bad = |problem: String| AcceptanceError::Format {
            path: path.to_path_buf(),
            problem,
        };
        let file: File = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if file.schema_version != ACCEPTANCE_SCHEMA_VERSION {
            return Err(bad(format!(
                "schema_version {} (this build reads {ACCEPTANCE_SCHEMA_VERSION})",
                file.schema_version
            )));
        }
        let mut by_id = BTreeMap::new();
        let mut ranges = BTreeMap::new();
        let mut pools: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for e in file.records {
            let range = e.accept_length_range;
            if let Some(pool) = &e.pool {
                if range.is_some() {
                    return Err(bad(format!(
                        "record `{}`: a published range is already one figure for its runs; give \"pool\" only beside a cell's own length or rate",
                        e.id
                    )));
                }
                pools.entry(pool.clone()).or_default().push(e.id.clone());
            }
            let length = match (e.accept_length, e.acceptance_rate, e.num_speculative_tokens) {
                (None, None, _) if range.is_some() => {
                    let [lo, hi] = range.unwrap_or_default();
                    if !(lo <= hi && lo.is_finite() && hi.is_finite()) {
                        return Err(bad(format!(
                            "record `{}`: accept_length_range [{lo}, {hi}] (give [lowest, highest])",
                            e.id
                        )));
                    }
                    ranges.insert(e.id.clone(), (lo, hi));
                    (lo + hi) / 2.0
                }
                (Some(_), _, _) | (_, Some(_), _) if range.is_some() => {
                    return Err(bad(format!(
                        "record `{}`: give accept_length_range alone, not beside a length or rate",
                        e.id
                    )));
                }
                (Some(l), None, _) => l,
                (None, Some(r), Some(k)) => crate::acceptance::length_from_rate(r, k)
                    .map_err(|err| bad(format!("record `{}`: {err}", e.id)))?,
                (None, Some(_), None) => {
                    return Err(bad(format!(
                        "record `{}`: acceptance_rate without num_speculative_tokens",
                        e.id
                    )));
                }
                _ => {
                    return Err(bad(format!(
                        "record `{}`: give accept_length, accept_length_range, or acceptance_rate and num_speculative_tokens",
                        e.id
                    )));
                }
            };
            let (lowest, highest) = range.map_or((length, length), |[lo, hi]| (lo, hi));
            if !(1.0..=64.0).contains(&lowest) || !(1.0..=64.0).contains(&highest) {
                let what = match range {
                    Some(_) => format!("acceptance lengths {lowest}–{highest}"),
                    None => format!("acceptance length {length}"),
                };
                return Err(bad(format!(
                    "record `{}`: {what} (at least 1: the bonus token; at most 64)",
                    e.id
                )));
            }
            if by_id.insert(e.id.clone(), length).is_some() {
                return Err(bad(format!("record `{}` appears more than once", e.id)));
            }
        }
        let pooled = pool_lengths(&mut by_id, &pools);
        Ok(MeasuredAcceptance {
            by_id,
            ranges,
            pooled,
        })
    }

    /// The ids these files give an acceptance for that no record of `set` has (a stale or
    /// mistyped id is used by nothing; the caller says so rather than pass over it).
    pub fn unmatched<'a>(&'a self, set: &super::RecordSet) -> Vec<&'a str> {
        let known: std::collections::HashSet<&str> = set
            .records
            .iter()
            .map(|r| r.id.as_str())
            .chain(set.unreadable.iter().map(|(id, _)| id.as_str()))
            .collect();
        self.by_id
            .keys()
            .map(String::as_str)
            .filter(|id| !known.contains(id))
            .collect()
    }

    /// The warning naming [`Self::unmatched`]'s ids (up to five, then a count), if any.
    pub fn unmatched_warning(&self, set: &super::RecordSet) -> Option<String> {
        let ids = self.unmatched(set);
        if ids.is_empty() {
            return None;
        }
        let shown: Vec<String> = ids.iter().take(5).map(|id| format!("`{id}`")).collect();
        let more = match ids.len() {
            n if n > 5 => format!(" and {} more", n - 5),
            _ => String::new(),
        };
        Some(format!(
            "--acceptance gives {} id(s) that no record of {} has, unused: {}{more}",
            ids.len(),
            set.path.display(),
            shown.join(", ")
        ))
    }

    /// A record's measured acceptance length: this file's, else the record's own
    /// [`ACCEPT_LENGTH_METRIC`] (ignored unless it reads as a length ≥ 1), else its own
    /// [`ACCEPT_RATE_METRIC`] over `drafted` tokens a step (a percentage when its raw figure
    /// says `%`; ignored outside 0–1).
    pub fn of(&self, r: &Record, drafted: u32) -> Option<f64> {
        if let Some(l) = self.by_id.get(&r.id) {
            return Some(*l);
        }
        let metric = |key: &str| r.metrics.get(key);
        let length = metric(ACCEPT_LENGTH_METRIC)
            .and_then(|m| m.value)
            .and_then(|l| crate::acceptance::checked_length(l).ok());
        length.or_else(|| {
            let m = metric(ACCEPT_RATE_METRIC)?;
            let v = m.value?;
            let rate = if m.raw.contains('%') { v / 100.0 } else { v };
            crate::acceptance::length_from_rate(rate, drafted).ok()
        })
    }
}

/// Replaces each pooled cell's length in `by_id` by its pool's mean (every cell weighted alike,
/// as the source's own per-profile mean is), returning each cell's pool and own length.
fn pool_lengths(
    by_id: &mut BTreeMap<String, f64>,
    pools: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, Pooled> {
    let mut pooled = BTreeMap::new();
    for (pool, ids) in pools {
        let own: Vec<f64> = ids.iter().map(|id| by_id[id]).collect();
        let mean = own.iter().sum::<f64>() / own.len() as f64;
        for (id, own_length) in ids.iter().zip(own) {
            by_id.insert(id.clone(), mean);
            let cell = Pooled {
                pool: pool.clone(),
                cells: ids.len(),
                own_length,
            };
            pooled.insert(id.clone(), cell);
        }
    }
    pooled
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<MeasuredAcceptance, AcceptanceError> {
        MeasuredAcceptance::parse(text.as_bytes(), Path::new("a.json"))
    }

    #[test]
    fn rates_become_lengths() {
        let a = parse(
            r#"{"schema_version": 1, "source": "x", "records": [
                {"id": "a", "acceptance_rate": 0.5, "num_speculative_tokens": 3},
                {"id": "b", "accept_length": 2.25}]}"#,
        )
        .unwrap();
        assert_eq!(a.by_id["a"], 2.5);
        assert_eq!(a.by_id["b"], 2.25);
        assert!(a.ranges.is_empty());
    }

    #[test]
    fn a_published_range_is_predicted_at_its_middle_and_kept() {
        let a = parse(
            r#"{"schema_version": 1, "records": [{"id": "g", "accept_length_range": [2.19, 2.80]}]}"#,
        )
        .unwrap();
        assert!((a.by_id["g"] - 2.495).abs() < 1e-12);
        assert_eq!(a.range_of("g"), Some((2.19, 2.80)));
        assert_eq!(a.range_of("h"), None);
    }

    #[test]
    fn a_pools_cells_are_predicted_at_its_mean_and_keep_their_own() {
        let a = parse(
            r#"{"schema_version": 1, "records": [
                {"id": "a1", "acceptance_rate": 0.5, "num_speculative_tokens": 3, "pool": "DCP1"},
                {"id": "a2", "acceptance_rate": 0.3, "num_speculative_tokens": 3, "pool": "DCP1"},
                {"id": "b1", "accept_length": 3.0, "pool": "DCP2"},
                {"id": "c", "accept_length": 2.0}]}"#,
        )
        .unwrap();
        // 1 + 3 × 0.5 = 2.5 and 1 + 3 × 0.3 = 1.9: both cells at 2.2
        assert!((a.by_id["a1"] - 2.2).abs() < 1e-12 && (a.by_id["a2"] - 2.2).abs() < 1e-12);
        assert_eq!(a.pooled["a1"].cells, 2);
        assert!((a.pooled["a2"].own_length - 1.9).abs() < 1e-12);
        assert_eq!(a.pooled["a1"].pool, "DCP1");
        // a pool of one is the cell itself; a cell in no pool keeps its own
        assert_eq!(a.by_id["b1"], 3.0);
        assert_eq!(a.by_id["c"], 2.0);
        assert!(!a.pooled.contains_key("c"));
    }

    #[test]
    fn several_files_merge_and_an_id_in_two_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let a = write(
            "a.json",
            r#"{"schema_version": 1, "records": [{"id": "a", "accept_length": 2}]}"#,
        );
        let b = write(
            "b.json",
            r#"{"schema_version": 1, "records": [{"id": "b", "accept_length_range": [2, 3]}]}"#,
        );
        let all = MeasuredAcceptance::load_all(&[a.clone(), b]).unwrap();
        assert_eq!(all.by_id.len(), 2);
        assert_eq!(all.range_of("b"), Some((2.0, 3.0)));
        let e = MeasuredAcceptance::load_all(&[a.clone(), a])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("also in an earlier acceptance file") && !e.contains('\n'),
            "{e}"
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        for (text, want) in [
            (
                r#"{"schema_version": 2, "records": []}"#,
                "schema_version 2",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "acceptance_rate": 0.5}]}"#,
                "without num_speculative_tokens",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "accept_length": 0.5}]}"#,
                "at least 1",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "accept_length": 2}, {"id": "a", "accept_length": 2}]}"#,
                "more than once",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "acceptance_rate": 1.5, "num_speculative_tokens": 3}]}"#,
                "0 to 1",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "accept_length_range": [2.8, 2.1]}]}"#,
                "[lowest, highest]",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "accept_length_range": [0.5, 2.1]}]}"#,
                "at least 1",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "accept_length": 2, "accept_length_range": [2, 3]}]}"#,
                "alone",
            ),
            (
                r#"{"schema_version": 1, "records": [{"id": "a", "accept_length_range": [2, 3], "pool": "p"}]}"#,
                "already one figure",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
    }

    proptest! {
        #[test]
        fn any_bytes_are_an_error_or_lengths_of_at_least_one(
            bytes in proptest::collection::vec(any::<u8>(), 0..256)
        ) {
            if let Ok(a) = MeasuredAcceptance::parse(&bytes, Path::new("fuzz.json")) {
                prop_assert!(a.by_id.values().all(|l| *l >= 1.0));
            }
        }
    }
}
