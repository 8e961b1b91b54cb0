//! Sample statistics and the bandwidth formulas every measurement shares.

use models::profile::Stat;

/// Median with p10 / p90 of `samples` (linear interpolation between order statistics).
/// An empty slice gives [`missing`]: zeros with `samples: 0` (JSON has no NaN); readers must
/// look at `samples` before trusting a figure.
pub fn summarize(samples: &[f64]) -> Stat {
    if samples.is_empty() {
        return missing();
    }
    let mut v: Vec<f64> = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    Stat {
        median: percentile_sorted(&v, 0.5),
        p10: percentile_sorted(&v, 0.1),
        p90: percentile_sorted(&v, 0.9),
        samples: v.len() as u32,
    }
}

/// A figure that could not be measured (hang, error): zeros with `samples: 0`.
pub fn missing() -> Stat {
    Stat {
        median: 0.0,
        p10: 0.0,
        p90: 0.0,
        samples: 0,
    }
}

pub use models::stats::percentile_sorted;

/// GB/s (1e9 bytes per second, as nccl-tests prints) for `bytes` moved in `seconds`.
pub fn gb_per_s(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e9
}

/// Turns per-iteration times (seconds) into the profile's µs and GB/s statistics. Bandwidth is
/// summarized per sample, so its p10 comes from the slowest samples, not from 1/p90 of time.
pub fn time_and_bandwidth(bytes: u64, seconds: &[f64]) -> (Stat, Stat) {
    let us: Vec<f64> = seconds.iter().map(|s| s * 1e6).collect();
    let bw: Vec<f64> = seconds.iter().map(|&s| gb_per_s(bytes, s)).collect();
    (summarize(&us), summarize(&bw))
}

/// TFLOP/s of an `m`×`n`×`k` matrix product (2·m·n·k operations) taking `seconds`.
pub fn gemm_tflops(m: u64, n: u64, k: u64, seconds: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / seconds / 1e12
}

/// Sizes from `min` to `max` bytes, each `factor` times the last (nccl-tests' `-f`).
pub fn geometric_sizes(min: u64, max: u64, factor: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = min.max(1);
    while s <= max {
        out.push(s);
        s = s.saturating_mul(factor.max(2));
    }
    out
}

/// `median (p10–p90)` with one decimal, or `-` for a missing figure.
pub fn fmt_stat(s: &Stat) -> String {
    if s.samples == 0 || !s.median.is_finite() {
        return "-".into();
    }
    if s.samples <= 1 {
        return format!("{:.1}", s.median);
    }
    format!("{:.1} ({:.1}–{:.1})", s.median, s.p10, s.p90)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn median_and_percentiles_of_known_samples() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(s.median, 3.0);
        assert!((s.p10 - 1.4).abs() < 1e-12);
        assert!((s.p90 - 4.6).abs() < 1e-12);
        assert_eq!(s.samples, 5);
    }

    #[test]
    fn empty_samples_are_marked_missing() {
        let s = summarize(&[]);
        assert_eq!(s.samples, 0);
        assert!(serde_json::to_string(&s).unwrap().contains("\"samples\":0"));
    }

    #[test]
    fn bandwidth_uses_decimal_gigabytes() {
        assert_eq!(gb_per_s(1_000_000_000, 1.0), 1.0);
        let (t, bw) = time_and_bandwidth(268_435_456, &[0.005]);
        assert!((t.median - 5000.0).abs() < 1e-9);
        assert!((bw.median - 53.687_091_2).abs() < 1e-6);
    }

    #[test]
    fn gemm_flops_count_multiply_and_add() {
        assert!((gemm_tflops(8192, 8192, 8192, 1.0) - 1.099_511_627_776).abs() < 1e-9);
    }

    #[test]
    fn nccl_size_ladder_is_powers_of_two() {
        let s = geometric_sizes(8, 1 << 30, 2);
        assert_eq!(s.len(), 28);
        assert_eq!(s[0], 8);
        assert_eq!(*s.last().unwrap(), 1 << 30);
    }

    proptest! {
        #[test]
        fn quantiles_are_ordered_and_inside_range(v in proptest::collection::vec(0.0f64..1e6, 1..50)) {
            let s = summarize(&v);
            let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(lo <= s.p10 && s.p10 <= s.median && s.median <= s.p90 && s.p90 <= hi);
        }
    }
}
