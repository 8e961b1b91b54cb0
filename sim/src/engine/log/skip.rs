//! Lines that did not become samples, counted by reason: log noise (HTTP access lines, other
//! INFO lines), foreign lines (not SGLang's format) and malformed sample lines.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Examples (line numbers) kept per skip reason.
const EXAMPLES_PER_REASON: usize = 5;

/// Why a line did not become a sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Noise: a uvicorn access line (`"POST /v1/chat/completions HTTP/1.1" 200`).
    HttpAccess,
    /// Noise: any other SGLang log line (start-up, warnings, INFO).
    OtherLogLine,
    /// Not SGLang's `[time] message` format (tracebacks, progress bars, other programs).
    Foreign,
    /// A sample line that ends early.
    Truncated,
    /// A sample line with a field that is not a number.
    UnparsableNumber(String),
    /// A sample line without a field every version writes.
    MissingField(String),
    /// A `server_args=` line that is not a `ServerArgs(...)` dump.
    NotADump,
}

impl SkipReason {
    /// Ordinary log noise, not a sample at all (as opposed to a sample line that is broken).
    pub fn is_noise(&self) -> bool {
        matches!(self, SkipReason::HttpAccess | SkipReason::OtherLogLine)
    }

    /// Not in SGLang's format.
    pub fn is_foreign(&self) -> bool {
        matches!(self, SkipReason::Foreign)
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::HttpAccess => f.write_str("HTTP access line"),
            SkipReason::OtherLogLine => f.write_str("other log line (not a sample)"),
            SkipReason::Foreign => f.write_str(
                "foreign line (no log header: Python warnings, progress bars, interleaved output)",
            ),
            SkipReason::Truncated => f.write_str("truncated sample line"),
            SkipReason::UnparsableNumber(k) => write!(f, "unparsable number in `{k}`"),
            SkipReason::MissingField(k) => write!(f, "sample line without `{k}`"),
            SkipReason::NotADump => f.write_str("`server_args=` without `ServerArgs(...)`"),
        }
    }
}

/// Lines skipped, by reason, with the first few line numbers of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkipCounts {
    pub by_reason: BTreeMap<String, SkipEntry>,
}

/// One reason's count and example line numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkipEntry {
    /// `noise`, `foreign` or `malformed`.
    pub kind: String,
    pub count: usize,
    pub example_lines: Vec<usize>,
}

impl SkipCounts {
    pub(crate) fn add(&mut self, reason: &SkipReason, line: usize) {
        let kind = if reason.is_noise() {
            "noise"
        } else if reason.is_foreign() {
            "foreign"
        } else {
            "malformed"
        };
        let e = self.by_reason.entry(reason.to_string()).or_default();
        e.kind = kind.to_string();
        e.count += 1;
        if e.example_lines.len() < EXAMPLES_PER_REASON {
            e.example_lines.push(line);
        }
    }

    /// Lines of one kind (`noise`, `foreign`, `malformed`).
    pub fn count_of(&self, kind: &str) -> usize {
        self.by_reason
            .values()
            .filter(|e| e.kind == kind)
            .map(|e| e.count)
            .sum()
    }

    /// One line: `12 noise, 0 foreign, 1 malformed (truncated sample line: 1)`.
    pub fn summary(&self) -> String {
        let malformed: Vec<String> = self
            .by_reason
            .iter()
            .filter(|(_, e)| e.kind == "malformed")
            .map(|(r, e)| format!("{r}: {}", e.count))
            .collect();
        let mut s = format!(
            "{} noise, {} foreign, {} malformed",
            self.count_of("noise"),
            self.count_of("foreign"),
            self.count_of("malformed")
        );
        if !malformed.is_empty() {
            s.push_str(&format!(" ({})", malformed.join("; ")));
        }
        s
    }
}
