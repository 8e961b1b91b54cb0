//! The small CSV of hand-written figures: `concurrency,input_len,output_len,output_tok_s` plus
//! optional `total_tok_s,mean_ttft_ms,mean_tpot_ms,mean_e2e_latency_ms,num_prompts`. An empty
//! cell was not recorded; a cell that is not a number, or a count below 1, refuses the file
//! naming the row and the column.

use super::{MeasuredMetrics, MeasuredPoint, MeasuredSet, ReadError, default_prompts, workload};

/// Columns that count tokens, requests or streams.
const COUNT_COLUMNS: [&str; 4] = ["concurrency", "input_len", "output_len", "num_prompts"];

/// The columns a measured CSV may have; others are ignored.
const KNOWN_CSV_COLUMNS: [&str; 9] = [
    "concurrency",
    "input_len",
    "output_len",
    "output_tok_s",
    "total_tok_s",
    "mean_ttft_ms",
    "mean_tpot_ms",
    "mean_e2e_latency_ms",
    "num_prompts",
];

pub(super) fn read(path: &str, text: &str) -> Result<MeasuredSet, ReadError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .map(|(_, h)| {
            h.split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    let col = |name: &str| header.iter().position(|h| h == name);
    let required = ["concurrency", "input_len", "output_len", "output_tok_s"];
    if let Some(missing) = required.iter().find(|c| col(c).is_none()) {
        return Err(ReadError::Format {
            path: path.into(),
            problem: format!(
                "CSV header lacks `{missing}` (needs concurrency,input_len,output_len,output_tok_s)"
            ),
        });
    }
    let mut set = MeasuredSet::default();
    for (i, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let at = format!("{path}:{}", i + 1);
        // an empty cell was not recorded; any other must be a number (`inf`, `NaN` included:
        // the checks refuse them by name)
        if let Some((name, cell)) = header.iter().zip(&cells).find(|(h, c)| {
            KNOWN_CSV_COLUMNS.contains(&h.as_str()) && !c.is_empty() && c.parse::<f64>().is_err()
        }) {
            return Err(ReadError::Implausible {
                source_: at,
                field: name.clone(),
                problem: format!("`{cell}` is not a number"),
            });
        }
        let get = |name: &str| col(name).and_then(|c| cells.get(c)?.parse::<f64>().ok());
        if let Some(name) = COUNT_COLUMNS
            .into_iter()
            .find(|c| get(c).is_some_and(|v| !(v >= 1.0 && v <= f64::from(u32::MAX))))
        {
            return Err(ReadError::Implausible {
                source_: at,
                field: name.into(),
                problem: format!(
                    "{} is not a count of at least 1",
                    crate::plausible::shown(get(name).unwrap_or_default())
                ),
            });
        }
        let (Some(c), Some(inp), Some(out), Some(thr)) = (
            get("concurrency"),
            get("input_len"),
            get("output_len"),
            get("output_tok_s"),
        ) else {
            set.skipped
                .push(format!("{at}: a required cell is empty or not a number"));
            continue;
        };
        let n = get("num_prompts").map_or(default_prompts(Some(c)), |n| n as u32);
        set.points.push(MeasuredPoint {
            source: at,
            workload: workload(Some(c), None, inp as u32, out as u32, n),
            metrics: MeasuredMetrics {
                output_throughput: Some(thr),
                total_throughput: get("total_tok_s"),
                mean_ttft_ms: get("mean_ttft_ms"),
                mean_tpot_ms: get("mean_tpot_ms"),
                mean_e2e_latency_ms: get("mean_e2e_latency_ms"),
                ..MeasuredMetrics::default()
            },
        });
    }
    Ok(set)
}
