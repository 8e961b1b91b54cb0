//! Order statistics every crate of the workspace reports: the median and linear-interpolation
//! percentiles (numpy's default), one implementation for probe's samples, sim's latency
//! summaries and fits, and the reports' headline figures.

/// The median of `values` (mean of the two middle values when their number is even); `None`
/// when empty. NaN sorts last (`total_cmp`), so callers that may hold NaN filter it first.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    })
}

/// The high median of `values`: the larger of the two middle values when their number is even
/// (Python's `statistics.median_high`), always one of the values; `None` when empty. For picking
/// one measured figure (a launch floor, a spread) rather than averaging two.
pub fn median_high(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// [`median`], NaN for no values (a table row with nothing to summarize prints NaN, not 0).
pub fn median_or_nan(values: impl AsRef<[f64]>) -> f64 {
    median(values.as_ref()).unwrap_or(f64::NAN)
}

/// The `q`-quantile (`q` in 0..=1, clamped) of an ascending, non-empty slice, interpolated
/// linearly between order statistics; NaN for an empty slice.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_samples() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        // numpy.percentile(range(1, 101), 90) = 90.1
        assert!((percentile_sorted(&v, 0.9) - 90.1).abs() < 1e-12);
        assert!(percentile_sorted(&[], 0.5).is_nan());
        assert_eq!(median_high(&[]), None);
        assert_eq!(median_high(&[4.0, 1.0, 2.0, 3.0]), Some(3.0));
        assert_eq!(median_high(&[3.0, 1.0, 2.0]), Some(2.0));
        assert!(median_or_nan([]).is_nan());
    }

    proptest! {
        #[test]
        fn the_median_is_the_half_percentile_and_lies_between_the_extremes(
            v in proptest::collection::vec(-1e9f64..1e9, 1..50)
        ) {
            let m = median(&v).unwrap();
            let mut s = v.clone();
            s.sort_by(f64::total_cmp);
            prop_assert!((m - percentile_sorted(&s, 0.5)).abs() <= 1e-9 * m.abs().max(1.0));
            prop_assert!(s[0] <= m && m <= s[s.len() - 1]);
        }
    }
}
