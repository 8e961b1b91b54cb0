//! Axis scales, tick placement and tick labels, including the binary message-size axis
//! (`1 KiB … 1 GiB`) that both probe and sim charts use.
//!
//! Charts draw in a transformed space (identity, log10 or log2 of the data) and hand plotters
//! explicit tick positions, so ticks land on round values of the *data* (powers of two for sizes),
//! not on round values of the transformed space.

use serde::{Deserialize, Serialize};

/// How data values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Evenly spaced values, ticks at 1/2/5 × 10ⁿ steps.
    #[default]
    Linear,
    /// Logarithmic, ticks at powers of ten (and 2×, 5× when the range is short).
    Log10,
    /// Logarithmic base 2 over byte counts, ticks at powers of two labelled in binary units
    /// (`1 KiB`, `4 MiB`, `1 GiB`).
    Log2Bytes,
}

/// One axis of a line chart: its title, unit and scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// What the axis measures, e.g. "bus bandwidth".
    pub title: String,
    /// Unit shown after the title in parentheses, e.g. "GB/s"; empty for none.
    #[serde(default)]
    pub unit: String,
    /// Value-to-position mapping.
    #[serde(default)]
    pub scale: Scale,
    /// Fixed `[min, max]` in data units; `None` fits the data (linear axes then start at zero when
    /// all data are positive, which is what bandwidth and throughput readers expect).
    #[serde(default)]
    pub range: Option<[f64; 2]>,
}

impl Axis {
    /// An axis with `title`, `unit` and `scale`, range fitted to the data.
    pub fn new(title: impl Into<String>, unit: impl Into<String>, scale: Scale) -> Self {
        Self {
            title: title.into(),
            unit: unit.into(),
            scale,
            range: None,
        }
    }
}

impl Scale {
    /// Data value → drawing position.
    pub(crate) fn forward(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log10 => v.log10(),
            Scale::Log2Bytes => v.log2(),
        }
    }

    /// Drawing position → data value.
    pub(crate) fn inverse(self, p: f64) -> f64 {
        match self {
            Scale::Linear => p,
            Scale::Log10 => 10f64.powf(p),
            Scale::Log2Bytes => p.exp2(),
        }
    }

    /// Whether `v` can be placed on this axis.
    pub(crate) fn accepts(self, v: f64) -> bool {
        v.is_finite() && (self == Scale::Linear || v > 0.0)
    }

    /// Drawing-space range `[lo, hi)` covering data `min..=max`, with a little air.
    pub(crate) fn fitted_range(self, min: f64, max: f64, fixed: Option<[f64; 2]>) -> (f64, f64) {
        if let Some([lo, hi]) = fixed {
            return (self.forward(lo), self.forward(hi));
        }
        let (lo, hi) = match self {
            Scale::Linear => {
                let lo = if min >= 0.0 { 0.0 } else { min };
                let hi = if max <= 0.0 { 0.0 } else { max };
                let span = if hi > lo { hi - lo } else { 1.0 };
                (
                    if lo < 0.0 { lo - 0.05 * span } else { lo },
                    hi + 0.05 * span,
                )
            }
            Scale::Log10 | Scale::Log2Bytes => {
                let (a, b) = (self.forward(min), self.forward(max));
                // Log10: 5% of the span; sizes: a third of a doubling, so end points sit just inside.
                let pad = match self {
                    Scale::Log10 => 0.05 * (b - a).max(1.0),
                    _ => 0.35,
                };
                (a - pad, b + pad)
            }
        };
        if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, lo + 0.5)
        }
    }

    /// Tick positions (drawing space) inside `lo..=hi`, at most about `max_ticks`.
    pub(crate) fn ticks(self, lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
        match self {
            Scale::Linear => linear_ticks(lo, hi, max_ticks),
            Scale::Log2Bytes => {
                let (first, last) = (lo.ceil() as i64, hi.floor() as i64);
                let count = (last - first + 1).max(1) as usize;
                // Steps of 1, 2, 5, 10 … doublings: they divide 10, so 1 KiB, 1 MiB and 1 GiB
                // (2¹⁰, 2²⁰, 2³⁰) are labelled whenever they are in range.
                let step = [1usize, 2, 5, 10, 20, 30, 60]
                    .into_iter()
                    .find(|s| count.div_ceil(*s) <= max_ticks.max(1))
                    .unwrap_or(count) as i64;
                // Start on a multiple of the step so that KiB/MiB/GiB boundaries (multiples of 10)
                // show up when step divides 10.
                let mut start = first.div_euclid(step) * step;
                if start < first {
                    start += step;
                }
                (0..)
                    .map(|k| start + k * step)
                    .take_while(|&e| e <= last)
                    .map(|e| e as f64)
                    .collect()
            }
            Scale::Log10 => {
                let (first, last) = (lo.ceil() as i64, hi.floor() as i64);
                let decades: Vec<f64> = (first..=last).map(|e| e as f64).collect();
                if decades.len() >= 4 {
                    let step = decades.len().div_ceil(max_ticks.max(1)).max(1);
                    return decades.into_iter().step_by(step).collect();
                }
                // Short range: add 2× and 5× so the axis has enough labels to read values off.
                let mut out = Vec::new();
                for e in (lo.floor() as i64)..=(hi.ceil() as i64) {
                    for m in [1.0f64, 2.0, 5.0] {
                        let p = (m * 10f64.powi(e as i32)).log10();
                        if p >= lo - 1e-9 && p <= hi + 1e-9 {
                            out.push(p);
                        }
                    }
                }
                out
            }
        }
    }

    /// Label of the tick at drawing position `p`; `step` is the distance to the next tick.
    pub(crate) fn tick_label(self, p: f64, step: f64) -> String {
        match self {
            Scale::Linear => format_number(p, step),
            Scale::Log10 => {
                let v = self.inverse(p);
                format_number(v, v / 10.0)
            }
            Scale::Log2Bytes => binary_size_label(self.inverse(p).round() as u64),
        }
    }
}

/// A drawing-space coordinate `lo..hi` whose ticks are exactly `ticks`: plotters' own
/// `with_key_points` wrapper loses the label formatter on `f64` ranges, so charts use this instead.
#[derive(Debug, Clone)]
pub(crate) struct Ticked {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
}

impl Ticked {
    /// Coordinate `lo..hi` with exactly `ticks`.
    pub(crate) fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Self {
        Self { lo, hi, ticks }
    }
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// "Nice" linear ticks (1, 2, 5 × 10ⁿ) within `lo..=hi`.
fn linear_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    let step = nice_step((hi - lo) / max_ticks.max(1) as f64);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// The smallest of 1, 2, 5 × 10ⁿ not below `raw`.
pub(crate) fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// A tick or value label: as many decimals as `step` needs, thousands shortened with k/M/G
/// (`12k` tokens/s, `1.5M`), trailing zeros dropped.
pub fn format_number(v: f64, step: f64) -> String {
    let a = v.abs();
    let (scaled, suffix, step) = if a >= 1e9 {
        (v / 1e9, "G", step / 1e9)
    } else if a >= 1e6 {
        (v / 1e6, "M", step / 1e6)
    } else if a >= 1e4 {
        (v / 1e3, "k", step / 1e3)
    } else {
        (v, "", step)
    };
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10().floor()).clamp(0.0, 6.0) as usize
    } else {
        2
    };
    let mut s = format!("{scaled:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_owned();
    }
    if s == "-0" {
        s = "0".to_owned();
    }
    format!("{s}{suffix}")
}

/// A value printed with about three significant digits (`0.123`, `12.3`, `1234`), for heat-map cells
/// and bar totals.
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$}")
}

/// A byte count in binary units as nccl-tests sizes are usually read: `512 B`, `4 KiB`, `1.5 MiB`,
/// `1 GiB`. Exact powers of 1024 print without decimals.
pub fn binary_size_label(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let text = if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        let s = format!("{value:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    format!("{text} {}", UNITS[unit])
}

/// Message sizes `min_bytes, 2·min_bytes, …` up to `max_bytes` (inclusive), the sweep nccl-tests
/// runs with `-f 2`; empty when `min_bytes` is 0 or above `max_bytes`.
pub fn power_of_two_sizes(min_bytes: u64, max_bytes: u64) -> Vec<u64> {
    if min_bytes == 0 {
        return Vec::new();
    }
    std::iter::successors(Some(min_bytes), |s| s.checked_mul(2))
        .take_while(|s| *s <= max_bytes)
        .collect()
}

/// Smallest and largest x and y over named point series, after checking every point fits its
/// axis (finite, positive on log axes). Shared by the line and scatter charts.
pub(crate) fn series_bounds<'a>(
    title: &str,
    series: impl ExactSizeIterator<Item = (&'a str, &'a [[f64; 2]])>,
    x_scale: Scale,
    y_scale: Scale,
) -> Result<(f64, f64, f64, f64), crate::error::ReportError> {
    use crate::error::ReportError;
    if series.len() == 0 {
        return Err(ReportError::invalid(title, "no series to draw"));
    }
    let mut b = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (series_name, points) in series {
        if points.is_empty() {
            return Err(ReportError::invalid(
                title,
                format!("series \"{series_name}\" has no points"),
            ));
        }
        for [x, y] in points {
            for (v, scale, name) in [(x, x_scale, "x"), (y, y_scale, "y")] {
                if !scale.accepts(*v) {
                    return Err(ReportError::invalid(
                        title,
                        format!(
                            "series \"{series_name}\": {name} = {v} cannot be drawn on a {scale:?} \
                             axis (values must be finite, and positive on log axes)"
                        ),
                    ));
                }
            }
            b = (b.0.min(*x), b.1.max(*x), b.2.min(*y), b.3.max(*y));
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_labels_read_like_nccl_sizes() {
        assert_eq!(binary_size_label(8), "8 B");
        assert_eq!(binary_size_label(1024), "1 KiB");
        assert_eq!(binary_size_label(4096), "4 KiB");
        assert_eq!(binary_size_label(1 << 30), "1 GiB");
        assert_eq!(binary_size_label(3 << 19), "1.5 MiB");
        assert_eq!(binary_size_label(1000), "1000 B");
    }

    #[test]
    fn size_sweep_doubles_to_the_limit() {
        let s = power_of_two_sizes(1024, 1 << 30);
        assert_eq!(s.len(), 21);
        assert_eq!(s[1], 2048);
        assert_eq!(*s.last().unwrap(), 1 << 30);
        assert!(power_of_two_sizes(0, 10).is_empty());
    }

    #[test]
    fn log2_ticks_land_on_kib_mib_gib() {
        let (lo, hi) = Scale::Log2Bytes.fitted_range(1024.0, (1u64 << 30) as f64, None);
        let ticks = Scale::Log2Bytes.ticks(lo, hi, 11);
        let labels: Vec<String> = ticks
            .iter()
            .map(|t| Scale::Log2Bytes.tick_label(*t, 2.0))
            .collect();
        assert_eq!(labels.first().unwrap(), "1 KiB");
        assert_eq!(labels.last().unwrap(), "1 GiB");
        assert!(labels.contains(&"1 MiB".to_owned()), "{labels:?}");
        assert!(ticks.len() <= 11);
    }

    #[test]
    fn linear_ticks_are_round() {
        let t = linear_ticks(0.0, 52.5, 6);
        assert_eq!(t, vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(format_number(12_000.0, 2_000.0), "12k");
        assert_eq!(format_number(0.25, 0.05), "0.25");
        assert_eq!(format_number(3.0, 0.5), "3");
    }

    #[test]
    fn log10_ticks_fill_short_ranges() {
        let t = Scale::Log10.ticks(1.0f64.log10(), 30.0f64.log10(), 8);
        let labels: Vec<String> = t.iter().map(|p| Scale::Log10.tick_label(*p, 1.0)).collect();
        assert_eq!(labels, vec!["1", "2", "5", "10", "20"]);
    }
}
