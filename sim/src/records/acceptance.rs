//! Measured acceptance of speculative-decoding records: what the engine itself reported per run
//! (vLLM's `SpecDecoding metrics` acceptance rate, SGLang's `accept len`, bench_serving's
//! `accept_length`), read from a file beside a records file (`sim validate --records R
//! --implied-accept-length --acceptance FILE`) or from a record's own `accept_length` metric.
//!
//! With it, the implied acceptance length of a record is checked against the one the engine
//! measured, and the record is predicted with its own acceptance: a check of the speculative step
//! model that does not assume acceptance is constant across a series (it is not: a draft's
//! acceptance moves with the prompts of each 30-second window).
//!
//! File format (JSON, schema 1): `{"schema_version": 1, "source": "…", "records": [{"id": "…",
//! "accept_length": 2.48}, {"id": "…", "acceptance_rate": 0.494, "num_speculative_tokens": 3}]}`;
//! an acceptance rate (accepted ÷ drafted tokens, vLLM's figure) becomes a length
//! `1 + rate × num_speculative_tokens` (the bonus token plus the accepted drafts).

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

/// Why an acceptance file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AcceptanceError {
    #[error("cannot read acceptance file {path}: {problem}")]
    Io { path: PathBuf, problem: String },
    #[error(
        "acceptance file {path}: {problem}; expected {{\"schema_version\": 1, \"records\": [{{\"id\": …, \"accept_length\": L}} or {{\"id\": …, \"acceptance_rate\": r, \"num_speculative_tokens\": k}}]}}"
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
}

/// Measured acceptance lengths by record id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasuredAcceptance {
    pub by_id: BTreeMap<String, f64>,
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
        for e in file.records {
            let length = match (e.accept_length, e.acceptance_rate, e.num_speculative_tokens) {
                (Some(l), None, _) => l,
                (None, Some(r), Some(k)) if (0.0..=1.0).contains(&r) && k >= 1 => {
                    1.0 + r * k as f64
                }
                (None, Some(r), Some(k)) => {
                    return Err(bad(format!(
                        "record `{}`: acceptance_rate {r} with {k} speculative tokens (the rate is accepted ÷ drafted, 0 to 1; at least one token)",
                        e.id
                    )));
                }
                (None, Some(_), None) => {
                    return Err(bad(format!(
                        "record `{}`: acceptance_rate without num_speculative_tokens",
                        e.id
                    )));
                }
                _ => {
                    return Err(bad(format!(
                        "record `{}`: give accept_length, or acceptance_rate and num_speculative_tokens",
                        e.id
                    )));
                }
            };
            if !(1.0..=64.0).contains(&length) {
                return Err(bad(format!(
                    "record `{}`: acceptance length {length} (at least 1: the bonus token; at most 64)",
                    e.id
                )));
            }
            if by_id.insert(e.id.clone(), length).is_some() {
                return Err(bad(format!("record `{}` appears more than once", e.id)));
            }
        }
        Ok(MeasuredAcceptance { by_id })
    }

    /// A record's measured acceptance length: this file's, else the record's own
    /// [`ACCEPT_LENGTH_METRIC`] (ignored unless it reads as a length ≥ 1).
    pub fn of(&self, r: &Record) -> Option<f64> {
        self.by_id.get(&r.id).copied().or_else(|| {
            r.metrics
                .get(ACCEPT_LENGTH_METRIC)
                .and_then(|m| m.value)
                .filter(|l| (1.0..=64.0).contains(l))
        })
    }
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
