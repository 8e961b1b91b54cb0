//! nccl-tests stdout (`all_reduce_perf`, `all_gather_perf`, `reduce_scatter_perf`,
//! `alltoall_perf`, `sendrecv_perf`) into collective curves.
//!
//! Read: `# nccl-tests version 2.18.3 nccl-headers=22809 nccl-library=22809`, `# Collective test
//! starting: all_reduce_perf`, `#  Rank  0 Group  0 Pid 1234 on host device  0 [0000:18:00]
//! NVIDIA …` and the table rows `size count type redop root time algbw busbw #wrong time algbw
//! busbw #wrong` (out-of-place columns are kept; logs from before the `root` column have 11
//! columns). The op comes from the "Collective test starting" line, else from a `*_perf` word
//! anywhere in the log (the command line), else from the file name.

use crate::error::{ProbeError, Result};
use models::profile::{
    CollectiveCurve, CollectiveOp, CollectivePoint, CollectiveStatus, DeviceInfo, Stat,
};
use std::path::Path;

/// One parsed log.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclTestsLog {
    /// The collective.
    pub op: CollectiveOp,
    /// Ranks as listed in the header (CUDA device index and name).
    pub devices: Vec<DeviceInfo>,
    /// `2.28.3` from `nccl-library=22803`, if present.
    pub nccl_version: Option<String>,
    /// nccl-tests' own version.
    pub tests_version: Option<String>,
    /// The curve (out-of-place figures).
    pub curve: CollectiveCurve,
}

/// Maps a nccl-tests binary name to an op.
pub fn op_from_binary(word: &str) -> Option<CollectiveOp> {
    let w = word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase();
    let table = [
        ("all_reduce_perf", CollectiveOp::AllReduce),
        ("all_gather_perf", CollectiveOp::AllGather),
        ("reduce_scatter_perf", CollectiveOp::ReduceScatter),
        ("alltoall_perf", CollectiveOp::AllToAll),
        ("sendrecv_perf", CollectiveOp::SendRecv),
    ];
    table.iter().find(|(k, _)| w.contains(k)).map(|(_, op)| *op)
}

fn version_from_code(code: &str) -> Option<String> {
    let v: u32 = code.trim().parse().ok()?;
    Some(format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100))
}

fn parse_rank_line(line: &str) -> Option<(u32, DeviceInfo)> {
    // "#  Rank  0 Group  0 Pid  11565 on HOST device  0 [0000:06:00] NVIDIA Graphics Device"
    let body = line.trim_start_matches('#').trim();
    let mut it = body.split_whitespace();
    if it.next()? != "Rank" {
        return None;
    }
    let rank: u32 = it.next()?.parse().ok()?;
    let pos = body.find(" device ")?;
    let rest = body[pos + 8..].trim();
    let mut parts = rest.splitn(2, ' ');
    let dev: u32 = parts.next()?.trim().parse().ok()?;
    let tail = parts.next().unwrap_or("").trim();
    let (bus, name) = match tail.strip_prefix('[') {
        Some(t) => {
            let end = t.find(']')?;
            (Some(t[..end].to_string()), t[end + 1..].trim().to_string())
        }
        None => (None, tail.to_string()),
    };
    Some((
        rank,
        DeviceInfo {
            index: dev,
            name,
            pci_bus_id: bus,
            ..Default::default()
        },
    ))
}

/// Parses one log's text; `path` names it in errors and may give the op.
pub fn parse(text: &str, path: &Path) -> Result<NcclTestsLog> {
    let err = |line: usize, problem: String| ProbeError::Parse {
        path: path.to_path_buf(),
        line,
        problem,
    };
    let mut op = None;
    let mut op_from_words = None;
    let mut nccl_version = None;
    let mut tests_version = None;
    let mut ranks: Vec<(u32, DeviceInfo)> = Vec::new();
    let mut points = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("# nccl-tests version") {
            let mut w = rest.split_whitespace();
            tests_version = w.next().map(|s| s.to_string());
            for kv in w {
                if let Some(code) = kv.strip_prefix("nccl-library=") {
                    nccl_version = version_from_code(code);
                }
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("# Collective test starting:") {
            op = op_from_binary(rest.trim());
            continue;
        }
        if let Some(rest) = t.strip_prefix("NCCL version ") {
            if nccl_version.is_none() {
                nccl_version = rest.split('+').next().map(|s| s.trim().to_string());
            }
            continue;
        }
        if t.starts_with('#') {
            if let Some(r) = parse_rank_line(t) {
                ranks.push(r);
            }
            continue;
        }
        // Only command lines name the binary; skip the word scan on table rows.
        if op_from_words.is_none() && t.contains("_perf") {
            op_from_words = t.split_whitespace().find_map(op_from_binary);
        }
        if let Some(point) = table_row(t, ln, path)? {
            points.push(point);
        }
    }
    let op = op
        .or(op_from_words)
        .or_else(|| path.file_name().and_then(|f| op_from_binary(&f.to_string_lossy())))
        .ok_or_else(|| err(1, "cannot tell the collective: no `# Collective test starting:` line, no *_perf name in the log or file name (supported: all_reduce, all_gather, reduce_scatter, alltoall, sendrecv)".into()))?;
    if points.is_empty() {
        return Err(err(
            text.lines().count().max(1),
            "no result rows found: is this nccl-tests output?".into(),
        ));
    }
    let devices = devices_by_rank(ranks);
    let curve = CollectiveCurve {
        op,
        devices: devices.iter().map(|d| d.index).collect(),
        link_class: None,
        nccl_env: Default::default(),
        points,
    };
    Ok(NcclTestsLog {
        op,
        devices,
        nccl_version,
        tests_version,
        curve,
    })
}

/// One result row of nccl-tests' table (`size count type redop [root] time algbw busbw #wrong`,
/// out-of-place half), `None` for a line that is not a row.
fn table_row(t: &str, ln: usize, path: &Path) -> Result<Option<CollectivePoint>> {
    let err = |problem: String| ProbeError::Parse {
        path: path.to_path_buf(),
        line: ln,
        problem,
    };
    let cols: Vec<&str> = t.split_whitespace().collect();
    let Some(first) = cols.first() else {
        return Ok(None);
    };
    if !first.chars().all(|c| c.is_ascii_digit()) {
        return Ok(None);
    }
    // With `root` (nccl-tests ≥ 2.10): size count type redop root time algbw busbw #wrong …
    let base = match cols.len() {
        n if n >= 13 => 5,
        n if n >= 11 => 4,
        n => {
            return Err(err(format!(
                "table row has {n} columns, expected 13 (or 11 in old logs)"
            )));
        }
    };
    let num = |k: usize, what: &str| -> Result<f64> {
        cols[k]
            .parse::<f64>()
            .map_err(|_| err(format!("{what} `{}` is not a number", cols[k])))
    };
    let bytes = num(0, "size")? as u64;
    let time_us = num(base, "time")?;
    let algbw = num(base + 1, "algbw")?;
    let busbw = num(base + 2, "busbw")?;
    let status = match cols[base + 3].parse::<f64>() {
        Ok(x) if x > 0.0 => CollectiveStatus::WrongResult,
        _ => CollectiveStatus::Ok, // 0, or N/A when validation was off
    };
    Ok(Some(CollectivePoint {
        bytes,
        time_us: Stat::exact(time_us),
        algbw_gb_per_s: algbw,
        busbw_gb_per_s: busbw,
        status,
    }))
}

/// The ranks' devices in rank order. Several hosts reuse device indices: then the rank numbers
/// stand in, so the group stays distinct.
fn devices_by_rank(mut ranks: Vec<(u32, DeviceInfo)>) -> Vec<DeviceInfo> {
    ranks.sort_by_key(|r| r.0);
    let mut devices: Vec<DeviceInfo> = ranks.into_iter().map(|(_, d)| d).collect();
    let mut seen = std::collections::HashSet::new();
    if !devices.iter().all(|d| seen.insert(d.index)) {
        for (r, d) in devices.iter_mut().enumerate() {
            d.index = r as u32;
        }
    }
    devices
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = include_str!("../../tests/fixtures/all_reduce_perf_4gpu.log");

    #[test]
    fn parses_header_ranks_and_rows() {
        let l = parse(LOG, Path::new("x.log")).unwrap();
        assert_eq!(l.op, CollectiveOp::AllReduce);
        assert_eq!(l.nccl_version.as_deref(), Some("2.28.3"));
        assert_eq!(l.tests_version.as_deref(), Some("2.17.6"));
        assert_eq!(l.curve.devices, vec![0, 1, 2, 3]);
        assert_eq!(l.devices[2].pci_bus_id.as_deref(), Some("0000:5a:00"));
        assert!(l.devices[0].name.contains("RTX PRO 6000"));
        let p = l.curve.points.iter().find(|p| p.bytes == 1 << 20).unwrap();
        assert_eq!(p.time_us.median, 61.74);
        assert_eq!(p.busbw_gb_per_s, 25.47);
        // busbw = algbw × 2(n-1)/n, as nccl-tests computes it.
        assert!(
            (p.algbw_gb_per_s * CollectiveOp::AllReduce.busbw_factor(4) - p.busbw_gb_per_s).abs()
                < 0.02
        );
    }

    #[test]
    fn op_falls_back_to_file_name_and_old_columns() {
        let old = "#  Rank  0 Group  0 Pid 1 on h device  0 [0x18] Tesla V100\n\
                   #  Rank  1 Group  0 Pid 1 on h device  1 [0x3b] Tesla V100\n\
                   \x20       1024           128     float    none    12.10    0.08    0.04  0e+00    11.90    0.09    0.04  0e+00\n";
        let l = parse(old, Path::new("logs/alltoall_perf.2gpu.txt")).unwrap();
        assert_eq!(l.op, CollectiveOp::AllToAll);
        assert_eq!(l.curve.points[0].time_us.median, 12.10);
    }

    #[test]
    fn wrong_counts_and_bad_rows_are_reported() {
        let bad = "# Collective test starting: all_gather_perf\n  1024  256  float  none  -1  x  1  1  0  1 1 1 0\n";
        let e = parse(bad, Path::new("a.log")).unwrap_err().to_string();
        assert!(e.contains("a.log:2"), "{e}");
        let wrong = "# Collective test starting: sendrecv_perf\n  1024  256  float  sum  -1  10.0  0.1  0.1  3  10.0 0.1 0.1 0\n";
        let l = parse(wrong, Path::new("b.log")).unwrap();
        assert_eq!(l.curve.points[0].status, CollectiveStatus::WrongResult);
        assert!(parse("hello\n", Path::new("all_reduce_perf.log")).is_err());
    }
}
