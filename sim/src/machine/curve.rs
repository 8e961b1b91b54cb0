//! Time of one transfer or collective as a function of its size, from measured points.
//!
//! Inside the measured range the time is interpolated log–log between neighbouring points; outside
//! it extends along an alpha–beta line (latency + bytes / bandwidth) fitted to all the measured
//! points by least squares on relative error, so that small and large sizes weigh alike. Measured
//! times are first made non-decreasing in size (a running maximum): noise in a measurement must
//! never make a bigger message cheaper in the model.

/// Time vs bytes of one communication pattern on one group of GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct CommCurve {
    /// (ln bytes, ln seconds), bytes strictly increasing, seconds non-decreasing.
    ln_points: Vec<(f64, f64)>,
    /// Latency of the alpha–beta fit, seconds.
    alpha_s: f64,
    /// Seconds per byte of the alpha–beta fit (1 / bandwidth).
    s_per_byte: f64,
    /// Where the curve comes from, for notes (`measured all_reduce on GPUs 0-3`, `derived …`).
    pub source: String,
}

impl CommCurve {
    /// A curve that costs nothing (a group of one GPU).
    pub fn free() -> Self {
        CommCurve {
            ln_points: Vec::new(),
            alpha_s: 0.0,
            s_per_byte: 0.0,
            source: "single GPU: no communication".into(),
        }
    }

    /// A pure alpha–beta curve: `alpha_s + bytes / bytes_per_s`.
    pub fn alpha_beta(alpha_s: f64, bytes_per_s: f64, source: impl Into<String>) -> Self {
        CommCurve {
            ln_points: Vec::new(),
            alpha_s: alpha_s.max(0.0),
            s_per_byte: 1.0 / bytes_per_s.max(1.0),
            source: source.into(),
        }
    }

    /// A curve through measured `(bytes, seconds)` points; `None` when no point is usable
    /// (zero bytes, non-finite or non-positive time).
    pub fn from_points(points: &[(f64, f64)], source: impl Into<String>) -> Option<Self> {
        let mut pts: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|&(b, t)| b >= 1.0 && t.is_finite() && t > 0.0)
            .collect();
        if pts.is_empty() {
            return None;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts.dedup_by(|a, b| a.0 == b.0);
        let mut running = 0.0f64;
        for p in &mut pts {
            running = running.max(p.1);
            p.1 = running;
        }
        let (alpha_s, s_per_byte) = fit_alpha_beta(&pts);
        Some(CommCurve {
            ln_points: pts.iter().map(|&(b, t)| (b.ln(), t.ln())).collect(),
            alpha_s,
            s_per_byte,
            source: source.into(),
        })
    }

    /// Latency of the alpha–beta fit, seconds.
    pub fn alpha_s(&self) -> f64 {
        self.alpha_s
    }

    /// Large-message bandwidth of the alpha–beta fit, bytes per second.
    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        if self.s_per_byte > 0.0 {
            1.0 / self.s_per_byte
        } else {
            f64::INFINITY
        }
    }

    /// Seconds to move a message of `bytes` (0 for an empty message).
    pub fn time_s(&self, bytes: f64) -> f64 {
        if bytes <= 0.0 || (self.alpha_s == 0.0 && self.s_per_byte == 0.0) {
            return 0.0;
        }
        let (first, last) = match (self.ln_points.first(), self.ln_points.last()) {
            (Some(f), Some(l)) => (*f, *l),
            _ => return self.alpha_s + bytes * self.s_per_byte,
        };
        let x = bytes.ln();
        if x <= first.0 {
            // Below the smallest measured size: slide down the fitted bandwidth line from the
            // first point, never under the fitted latency (or the first point, if smaller).
            let t_first = first.1.exp();
            let floor = self.alpha_s.min(t_first);
            return (t_first - (first.0.exp() - bytes) * self.s_per_byte).max(floor);
        }
        if x >= last.0 {
            return last.1.exp() + (bytes - last.0.exp()) * self.s_per_byte;
        }
        let i = self.ln_points.partition_point(|p| p.0 <= x);
        let (x0, y0) = self.ln_points[i - 1];
        let (x1, y1) = self.ln_points[i];
        let w = (x - x0) / (x1 - x0);
        (y0 + w * (y1 - y0)).exp()
    }

    /// This curve with its latency part scaled by `latency_factor` and its size-dependent part by
    /// `bandwidth_factor` (ring-model rescaling to another group size, or a derived op).
    pub fn rescaled(
        &self,
        latency_factor: f64,
        bandwidth_factor: f64,
        source: impl Into<String>,
    ) -> Self {
        let alpha = self.alpha_s;
        let pts: Vec<(f64, f64)> = self
            .ln_points
            .iter()
            .map(|&(lb, lt)| {
                let t = lt.exp();
                let lat = alpha.min(t);
                (
                    lb.exp(),
                    lat * latency_factor + (t - lat) * bandwidth_factor,
                )
            })
            .collect();
        let mut out = CommCurve::from_points(&pts, "").unwrap_or_else(|| {
            CommCurve::alpha_beta(
                alpha * latency_factor,
                self.bandwidth_bytes_per_s() / bandwidth_factor.max(1e-12),
                "",
            )
        });
        out.source = source.into();
        out
    }

    /// The same curve evaluated at `bytes_factor` × the message size (e.g. send/recv of `x` bytes
    /// as a 2-rank all-gather of `2x`).
    pub fn at_scaled_bytes(&self, bytes_factor: f64, source: impl Into<String>) -> Self {
        let pts: Vec<(f64, f64)> = self
            .ln_points
            .iter()
            .map(|&(lb, lt)| (lb.exp() / bytes_factor, lt.exp()))
            .collect();
        let mut out = CommCurve::from_points(&pts, "").unwrap_or_else(|| {
            CommCurve::alpha_beta(
                self.alpha_s,
                self.bandwidth_bytes_per_s() / bytes_factor,
                "",
            )
        });
        out.source = source.into();
        out
    }
}

/// Least-squares alpha–beta fit minimising relative error: Σ ((α + β·x − t) / t)².
fn fit_alpha_beta(pts: &[(f64, f64)]) -> (f64, f64) {
    if pts.len() == 1 {
        let (b, t) = pts[0];
        return (t * 0.5, t * 0.5 / b);
    }
    // Normal equations of the weighted problem with weights 1/t².
    let (mut s11, mut s1x, mut sxx, mut s1t, mut sxt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, t) in pts {
        let w = 1.0 / (t * t);
        s11 += w;
        s1x += w * x;
        sxx += w * x * x;
        s1t += w * t;
        sxt += w * x * t;
    }
    let det = s11 * sxx - s1x * s1x;
    let (mut alpha, mut beta) = if det.abs() > 0.0 {
        ((sxx * s1t - s1x * sxt) / det, (s11 * sxt - s1x * s1t) / det)
    } else {
        (0.0, 0.0)
    };
    let (x_last, t_last) = pts[pts.len() - 1];
    if beta <= 0.0 {
        beta = t_last / x_last;
    }
    if alpha < 0.0 {
        alpha = 0.0;
    }
    (alpha, beta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ab(alpha: f64, bw: f64) -> Vec<(f64, f64)> {
        (10..=28)
            .map(|e| {
                let b = (1u64 << e) as f64;
                (b, alpha + b / bw)
            })
            .collect()
    }

    #[test]
    fn recovers_an_exact_alpha_beta_line() {
        let c = CommCurve::from_points(&ab(20e-6, 25e9), "t").unwrap();
        assert!((c.alpha_s() - 20e-6).abs() < 1e-7);
        assert!((c.bandwidth_bytes_per_s() / 25e9 - 1.0).abs() < 1e-3);
        // interpolation between points stays close to the line
        let b = 3.0e6;
        assert!((c.time_s(b) / (20e-6 + b / 25e9) - 1.0).abs() < 0.05);
    }

    #[test]
    fn extrapolates_monotonically_on_both_sides() {
        let c = CommCurve::from_points(&ab(20e-6, 25e9), "t").unwrap();
        let mut prev = 0.0;
        for e in 0..40 {
            let t = c.time_s((1u64 << e) as f64);
            assert!(t >= prev, "size 2^{e}: {t} < {prev}");
            prev = t;
        }
        assert!(c.time_s(1.0) >= 19e-6);
        let big = (1u64 << 34) as f64;
        assert!((c.time_s(big) / (20e-6 + big / 25e9) - 1.0).abs() < 0.01);
    }

    #[test]
    fn noisy_points_become_non_decreasing() {
        let pts = [(1e3, 30e-6), (1e4, 25e-6), (1e5, 40e-6)];
        let c = CommCurve::from_points(&pts, "t").unwrap();
        assert!(c.time_s(1e4) >= c.time_s(1e3));
    }

    #[test]
    fn rescaling_splits_latency_and_bandwidth() {
        let c = CommCurve::from_points(&ab(20e-6, 25e9), "t").unwrap();
        let r = c.rescaled(0.5, 2.0, "r");
        let b = 1e8;
        let want = 10e-6 + 2.0 * b / 25e9;
        assert!((r.time_s(b) / want - 1.0).abs() < 0.02);
    }
}
