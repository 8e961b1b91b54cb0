//! bench_serving's printed summary (`============ Serving Benchmark Result ============` …),
//! one or more blocks in a text file.

use super::{MeasuredMetrics, MeasuredPoint, MeasuredSet, workload};

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

pub(super) fn summary_blocks(path: &str, text: &str) -> MeasuredSet {
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

#[cfg(test)]
mod tests {
    use super::*;

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
