//! One line of an SGLang server log: `[<time><rank tags>] <message>`.
//!
//! SGLang's `configure_logger` writes `[%(asctime)s{prefix}] %(message)s` with `datefmt`
//! `%Y-%m-%d %H:%M:%S` (newer builds: `%m-%d %H:%M:%S`, some with `.%(msecs)03d`), where the
//! scheduler's prefix is built in `run_scheduler_process` from ` DP{dp}` (attention DP), ` PP{pp}`
//! (pp_size > 1), ` ATTN_CP{cp}`, ` MOE_DP{d}`, ` TP{tp}` (tp_size > 1) and ` EP{ep}` (ep_size > 1);
//! their order changed between versions, so tags are read by name. Newer builds colour the
//! output (ANSI escapes, removed here). Progress bars rewrite their line with `\r`: every
//! `\r`-separated piece is a line of its own.

use serde::{Deserialize, Serialize};

/// Which scheduler process wrote a line (`DP0 TP0`, `PP1 TP0`, …); absent tags are `None`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct RankTag {
    /// Attention data-parallel rank (`DP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<u32>,
    /// Pipeline stage (`PP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pp: Option<u32>,
    /// Tensor-parallel rank (`TP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp: Option<u32>,
    /// Expert-parallel rank (`EP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ep: Option<u32>,
}

impl RankTag {
    /// No tag at all (the launcher, the tokenizer, uvicorn).
    pub fn is_none(&self) -> bool {
        *self == RankTag::default()
    }
}

impl std::fmt::Display for RankTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        for (name, v) in [
            ("DP", self.dp),
            ("PP", self.pp),
            ("TP", self.tp),
            ("EP", self.ep),
        ] {
            if let Some(v) = v {
                parts.push(format!("{name}{v}"));
            }
        }
        if parts.is_empty() {
            f.write_str("-")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

/// A line split into its header and message.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine<'a> {
    /// The timestamp as written (`2026-01-28 22:13:30`).
    pub time: &'a str,
    /// Seconds since an arbitrary origin, for intervals (years absent from the short format
    /// are taken as 2000).
    pub time_s: Option<f64>,
    pub rank: RankTag,
    pub message: &'a str,
}

/// Every physical line of `text` (split on `\n` and `\r`), with its 1-based line number (`\r`
/// pieces share the number of their line).
pub fn physical_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .flat_map(|(i, l)| l.split('\r').map(move |p| (i + 1, p)))
}

/// `s` without ANSI colour escapes (`ESC [ … letter`).
pub fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // skip `[`, parameters and the final letter
        let mut in_csi = false;
        for d in chars.by_ref() {
            if !in_csi && d == '[' {
                in_csi = true;
                continue;
            }
            if !in_csi || d.is_ascii_alphabetic() {
                break;
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Days from 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds of `date time` (`2026-01-28 22:13:30`, `01-28 22:13:30.123`).
pub(crate) fn parse_time(date: &str, time: &str) -> Option<f64> {
    let mut d = date.split('-');
    let (y, m, day) = match (d.next(), d.next(), d.next(), d.next()) {
        (Some(y), Some(m), Some(day), None) => (digits(y, 4)?, digits(m, 2)?, digits(day, 2)?),
        (Some(m), Some(day), None, None) => (2000, digits(m, 2)?, digits(day, 2)?),
        _ => return None,
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let (hms, frac) = match time.split_once(['.', ',']) {
        Some((hms, frac)) => (hms, frac),
        None => (time, ""),
    };
    let mut t = hms.split(':');
    let (h, mi, s) = match (t.next(), t.next(), t.next(), t.next()) {
        (Some(h), Some(mi), Some(s), None) => (digits(h, 2)?, digits(mi, 2)?, digits(s, 2)?),
        _ => return None,
    };
    if h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let frac_s = if frac.is_empty() {
        0.0
    } else if frac.len() <= 9 && frac.bytes().all(|b| b.is_ascii_digit()) {
        format!("0.{frac}").parse().ok()?
    } else {
        return None;
    };
    let days = days_from_civil(y as i64, m, day) as f64;
    Some(days * 86_400.0 + (h * 3600 + mi * 60 + s) as f64 + frac_s)
}

/// Reads a rank tag such as `TP3`, `PP1`, `DP0`, `EP7`, `ATTN_CP0`; `None` for anything else.
pub(crate) fn apply_tag(rank: &mut RankTag, token: &str) -> bool {
    let split = token
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(token.len());
    let (name, num) = token.split_at(split);
    let Ok(n) = num.parse::<u32>() else {
        return false;
    };
    match name {
        "DP" => rank.dp = Some(n),
        "PP" => rank.pp = Some(n),
        "TP" => rank.tp = Some(n),
        "EP" => rank.ep = Some(n),
        // other process-group tags (context parallel, MoE DP) are known but not kept
        "ATTN_CP" | "MOE_DP" | "CP" => {}
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_and_carriage_returns() {
        assert_eq!(strip_ansi("\u{1b}[32m[x]\u{1b}[0m y"), "[x] y");
        let lines: Vec<_> = physical_lines("a\rb\nc").collect();
        assert_eq!(lines, vec![(1, "a"), (1, "b"), (2, "c")]);
    }
}
