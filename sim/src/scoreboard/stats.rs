//! Error statistics of predicted-vs-measured pairs: MAPE, median absolute error and signed bias,
//! overall and by model × metric family × quantity × concurrency band.

use super::RecordComparison;
use crate::records::{MetricFamily, Quantity};
use serde::Serialize;

/// Concurrency bands (the error model splits residuals by the same ones).
pub use crate::uncertainty::{BANDS, concurrency_band as band};

/// Errors of a set of comparisons, percent. Signed error = (predicted − measured) / measured:
/// positive is a prediction above the measurement (too fast for throughputs, too slow for
/// latencies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stats {
    pub n: usize,
    /// Mean of |error|.
    pub mape_pct: f64,
    /// Median of |error|.
    pub median_abs_pct: f64,
    /// Mean of the signed error.
    pub bias_pct: f64,
    /// Comparisons within ±20%.
    pub within_20_pct: usize,
}

impl Stats {
    /// The statistics of `errors_pct` (signed, percent).
    pub fn of(errors_pct: &[f64]) -> Stats {
        let n = errors_pct.len();
        if n == 0 {
            return Stats::default();
        }
        let mut abs: Vec<f64> = errors_pct.iter().map(|e| e.abs()).collect();
        abs.sort_unstable_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            abs[n / 2]
        } else {
            (abs[n / 2 - 1] + abs[n / 2]) / 2.0
        };
        Stats {
            n,
            mape_pct: abs.iter().sum::<f64>() / n as f64,
            median_abs_pct: median,
            bias_pct: errors_pct.iter().sum::<f64>() / n as f64,
            within_20_pct: abs.iter().filter(|e| **e <= 20.0).count(),
        }
    }
}

/// The statistics of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// Model preset, or `all`.
    pub model: String,
    pub family: MetricFamily,
    pub quantity: Quantity,
    /// Concurrency band, or `all`.
    pub band: String,
    #[serde(flatten)]
    pub stats: Stats,
}

/// How to pool comparisons into groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupBy {
    /// One group per model (else every model under `all`).
    pub model: bool,
    /// One group per concurrency band (else every band under `all`).
    pub band: bool,
}

/// Groups `rows` by (model, family, quantity, band) as `by` says: models alphabetically, then
/// family and quantity, bands in [`BANDS`] order.
pub fn groups(rows: &[&RecordComparison], by: GroupBy) -> Vec<Group> {
    let key = |c: &RecordComparison| {
        let model = if by.model {
            c.model.clone()
        } else {
            "all".into()
        };
        let b = if by.band {
            BANDS
                .iter()
                .position(|x| x.2 == c.band)
                .unwrap_or(BANDS.len())
        } else {
            BANDS.len()
        };
        (model, c.family, c.quantity, b)
    };
    let mut keys: Vec<(String, MetricFamily, Quantity, usize)> = Vec::new();
    for c in rows {
        let k = key(c);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let errs: Vec<f64> = rows
                .iter()
                .filter(|c| key(c) == k)
                .map(|c| c.error_pct)
                .collect();
            let (model, family, quantity, b) = k;
            Group {
                model,
                family,
                quantity,
                band: BANDS.get(b).map_or("all", |x| x.2).to_string(),
                stats: Stats::of(&errs),
            }
        })
        .collect()
}

/// The headline statistics of the records predicted without and with speculative decoding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecFamily {
    /// `MTP off` or `MTP on`.
    pub speculation: String,
    /// Of those with speculation on, predicted with an assumed (default) acceptance length.
    pub assumed_accept: usize,
    #[serde(flatten)]
    pub stats: Stats,
}

/// `rows` split by speculation off / on (a line only where it has rows).
pub fn by_speculation(rows: &[&RecordComparison]) -> Vec<SpecFamily> {
    [false, true]
        .into_iter()
        .filter_map(|on| {
            let mine: Vec<&&RecordComparison> = rows
                .iter()
                .filter(|c| c.speculation.is_some() == on)
                .collect();
            (!mine.is_empty()).then(|| SpecFamily {
                speculation: if on { "MTP on" } else { "MTP off" }.into(),
                assumed_accept: mine
                    .iter()
                    .filter(|c| {
                        c.speculation.is_some_and(|s| {
                            s.accept == crate::records::speculation::AcceptOrigin::Assumed
                        })
                    })
                    .count(),
                stats: Stats::of(&mine.iter().map(|c| c.error_pct).collect::<Vec<_>>()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_a_small_sample() {
        let s = Stats::of(&[10.0, -30.0, 50.0, 5.0]);
        assert_eq!(s.n, 4);
        assert!((s.mape_pct - 23.75).abs() < 1e-12);
        assert!((s.median_abs_pct - 20.0).abs() < 1e-12);
        assert!((s.bias_pct - 8.75).abs() < 1e-12);
        assert_eq!(s.within_20_pct, 2);
        assert_eq!(Stats::of(&[]), Stats::default());
    }

    #[test]
    fn bands_cover_every_concurrency() {
        assert_eq!(
            [1, 2, 3, 8, 9, 32, 33, 4096].map(band),
            ["1", "2", "3-8", "3-8", "9-32", "9-32", "33+", "33+"]
        );
    }
}
