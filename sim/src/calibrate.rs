//! Calibration: fit a few [`Knobs`] so that simulated runs match measured ones, and compare
//! predictions with measurements point by point.
//!
//! The fit minimises Σ ln(predicted / measured)² over every metric a point has (output and total
//! throughput, mean TTFT, mean TPOT), plus a weak prior pulling each knob to its default
//! (`PRIOR_WEIGHT`·ln(scale)², overhead in units of 10 ms): with four points and five knobs the
//! prior picks the least surprising of equally good fits instead of an arbitrary one. It uses a
//! bounded Nelder–Mead over log-scales (scales in [1/20, 20], overhead in [0, 200 ms]).

use crate::bench_io::MeasuredPoint;
use crate::cost::{IterationModel, Knobs};
use crate::options::ServerOptions;
use crate::serving::{RunReport, simulate};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Schema version of [`Calibration`] files.
pub const CALIBRATION_SCHEMA_VERSION: u32 = 1;
/// Weight of the prior that keeps knobs near their defaults.
pub const PRIOR_WEIGHT: f64 = 0.02;
const SCALE_BOUND: f64 = 20.0;
const OVERHEAD_MAX_S: f64 = 0.2;
const OVERHEAD_UNIT_S: f64 = 0.01;

/// A knob the fit may move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum KnobParam {
    /// `compute_scale`.
    Compute,
    /// `memory_scale`.
    Memory,
    /// `comm_time_scale`.
    Comm,
    /// `iteration_overhead_s`.
    Overhead,
    /// `cpu_scale`.
    Cpu,
}

impl KnobParam {
    /// Every knob.
    pub const ALL: [KnobParam; 5] = [
        KnobParam::Compute,
        KnobParam::Memory,
        KnobParam::Comm,
        KnobParam::Overhead,
        KnobParam::Cpu,
    ];

    fn set(self, k: &mut Knobs, x: f64) {
        match self {
            KnobParam::Compute => k.compute_scale = x.exp(),
            KnobParam::Memory => k.memory_scale = x.exp(),
            KnobParam::Comm => k.comm_time_scale = x.exp(),
            KnobParam::Cpu => k.cpu_scale = x.exp(),
            KnobParam::Overhead => k.iteration_overhead_s = x * OVERHEAD_UNIT_S,
        }
    }

    fn bounds(self) -> (f64, f64) {
        match self {
            KnobParam::Overhead => (0.0, OVERHEAD_MAX_S / OVERHEAD_UNIT_S),
            _ => (-SCALE_BOUND.ln(), SCALE_BOUND.ln()),
        }
    }
}

/// A fitted calibration, as written by `sim calibrate` and read by `--calibration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Always [`CALIBRATION_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The knobs to apply.
    pub knobs: Knobs,
    /// Which knobs were fitted (the others stayed at their defaults).
    pub fitted: Vec<KnobParam>,
    /// Machine, model and layout it was fitted on.
    pub machine: String,
    pub model: String,
    pub layout: String,
    /// Server options of the measured runs.
    pub server: ServerOptions,
    /// Measurements used (sources).
    pub measured: Vec<String>,
    /// Root-mean-square of ln(predicted / measured) before and after fitting.
    pub rms_log_error_before: f64,
    pub rms_log_error_after: f64,
}

/// Calibration failures.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("cannot build the cost model: {0}")]
    Model(String),
    #[error("simulating {source_} failed: {problem}")]
    Simulation { source_: String, problem: String },
    #[error("no measured metric to fit (points need output_throughput, TTFT or TPOT)")]
    NothingToFit,
    #[error("cannot read calibration {path}: {problem}")]
    Read { path: String, problem: String },
    #[error("cannot write calibration {path}: {problem}")]
    Write { path: String, problem: String },
}

impl Calibration {
    /// Reads a calibration file, checking its schema version.
    pub fn load(path: &Path) -> Result<Calibration, CalibrateError> {
        let err = |problem: String| CalibrateError::Read {
            path: path.display().to_string(),
            problem,
        };
        let text = models::input::read_text_limited(path, models::input::PROFILE_LIMIT_BYTES)
            .map_err(|e| err(e.to_string()))?;
        let c: Calibration =
            serde_json::from_str(&text).map_err(|e| err(format!("malformed JSON: {e}")))?;
        if c.schema_version != CALIBRATION_SCHEMA_VERSION {
            return Err(err(format!(
                "schema_version {} is not supported (this build reads {CALIBRATION_SCHEMA_VERSION})",
                c.schema_version
            )));
        }
        Ok(c)
    }

    /// Writes it atomically (temp file, then rename).
    pub fn save(&self, path: &Path) -> Result<(), CalibrateError> {
        let bytes = serde_json::to_vec_pretty(self).expect("calibration serialises");
        models::profile::write_atomic(path, &bytes).map_err(|e| CalibrateError::Write {
            path: path.display().to_string(),
            problem: e.to_string(),
        })
    }
}

/// One compared metric of one measured point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub source: String,
    pub max_concurrency: Option<u32>,
    pub random_input_len: u32,
    pub random_output_len: u32,
    /// bench_serving key compared.
    pub metric: String,
    pub predicted: f64,
    pub measured: f64,
    /// (predicted − measured) / measured, percent.
    pub error_pct: f64,
}

/// The (metric, predicted, measured) pairs a point offers.
fn pairs(p: &MeasuredPoint, r: &RunReport) -> Vec<(&'static str, f64, f64)> {
    let m = &p.metrics;
    [
        (
            "output_throughput",
            m.output_throughput,
            r.output_throughput,
        ),
        ("total_throughput", m.total_throughput, r.total_throughput),
        ("mean_ttft_ms", m.mean_ttft_ms, r.mean_ttft_ms),
        ("mean_tpot_ms", m.mean_tpot_ms, r.mean_tpot_ms),
    ]
    .into_iter()
    .filter_map(|(k, meas, pred)| meas.filter(|v| *v > 0.0).map(|v| (k, pred, v)))
    .collect()
}

/// Simulates every point (in parallel) and compares it with its measurement.
pub fn compare(
    model: &dyn IterationModel,
    opts: &ServerOptions,
    points: &[MeasuredPoint],
) -> Result<Vec<Comparison>, CalibrateError> {
    let runs: Vec<Result<RunReport, CalibrateError>> = points
        .par_iter()
        .map(|p| {
            simulate(model, opts, &p.workload).map_err(|e| CalibrateError::Simulation {
                source_: p.source.clone(),
                problem: e.to_string(),
            })
        })
        .collect();
    let mut out = Vec::new();
    for (p, r) in points.iter().zip(runs) {
        let r = r?;
        for (metric, predicted, measured) in pairs(p, &r) {
            out.push(Comparison {
                source: p.source.clone(),
                max_concurrency: p.workload.max_concurrency,
                random_input_len: p.workload.random_input_len,
                random_output_len: p.workload.random_output_len,
                metric: metric.into(),
                predicted,
                measured,
                error_pct: (predicted - measured) / measured * 100.0,
            });
        }
    }
    Ok(out)
}

/// Root-mean-square of ln(predicted / measured).
pub fn rms_log_error(rows: &[Comparison]) -> f64 {
    if rows.is_empty() {
        return 0.0;
    }
    let s: f64 = rows
        .iter()
        .map(|c| (c.predicted.max(1e-12) / c.measured).ln().powi(2))
        .sum();
    (s / rows.len() as f64).sqrt()
}

/// The fitted knobs and the fit's quality.
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    pub knobs: Knobs,
    pub rms_before: f64,
    pub rms_after: f64,
    pub evaluations: u32,
}

/// Fits `params` of the knobs (starting from `start`) so that simulations of `points` on the model
/// `build` makes match the measurements.
pub fn fit<F, E>(
    build: F,
    opts: &ServerOptions,
    points: &[MeasuredPoint],
    params: &[KnobParam],
    start: Knobs,
) -> Result<FitResult, CalibrateError>
where
    F: Fn(Knobs) -> Result<Box<dyn IterationModel>, E> + Sync,
    E: std::fmt::Display,
{
    let eval = |k: Knobs| -> Result<Vec<Comparison>, CalibrateError> {
        let m = build(k).map_err(|e| CalibrateError::Model(e.to_string()))?;
        compare(m.as_ref(), opts, points)
    };
    let first = eval(start)?;
    if first.is_empty() {
        return Err(CalibrateError::NothingToFit);
    }
    let rms_before = rms_log_error(&first);
    let knobs_at = |x: &[f64]| {
        let mut k = start;
        for (p, v) in params.iter().zip(x) {
            p.set(&mut k, *v);
        }
        k
    };
    let objective = |x: &[f64]| -> f64 {
        let Ok(rows) = eval(knobs_at(x)) else {
            return f64::INFINITY;
        };
        let data: f64 = rows
            .iter()
            .map(|c| (c.predicted.max(1e-12) / c.measured).ln().powi(2))
            .sum();
        let prior: f64 = x.iter().map(|v| v * v).sum::<f64>() * PRIOR_WEIGHT;
        data + prior
    };
    let x0: Vec<f64> = params
        .iter()
        .map(|p| match p {
            KnobParam::Overhead => start.iteration_overhead_s / OVERHEAD_UNIT_S,
            KnobParam::Compute => start.compute_scale.ln(),
            KnobParam::Memory => start.memory_scale.ln(),
            KnobParam::Comm => start.comm_time_scale.ln(),
            KnobParam::Cpu => start.cpu_scale.ln(),
        })
        .collect();
    let bounds: Vec<(f64, f64)> = params.iter().map(|p| p.bounds()).collect();
    let (x, evaluations) = nelder_mead(&objective, &x0, &bounds, 400);
    let knobs = knobs_at(&x);
    let rms_after = rms_log_error(&eval(knobs)?);
    Ok(FitResult {
        knobs,
        rms_before,
        rms_after,
        evaluations,
    })
}

/// Bounded Nelder–Mead (standard coefficients 1, 2, ½, ½; points clamped into the box).
/// Returns the best point and the number of evaluations.
pub fn nelder_mead(
    f: &dyn Fn(&[f64]) -> f64,
    x0: &[f64],
    bounds: &[(f64, f64)],
    max_evals: u32,
) -> (Vec<f64>, u32) {
    let n = x0.len();
    if n == 0 {
        return (Vec::new(), 0);
    }
    let clamp = |mut x: Vec<f64>| {
        for (v, (lo, hi)) in x.iter_mut().zip(bounds) {
            *v = v.clamp(*lo, *hi);
        }
        x
    };
    let evals = std::cell::Cell::new(0u32);
    let call = |x: &[f64]| {
        evals.set(evals.get() + 1);
        f(x)
    };
    let mut simplex: Vec<(Vec<f64>, f64)> = Vec::with_capacity(n + 1);
    let p0 = clamp(x0.to_vec());
    simplex.push((p0.clone(), call(&p0)));
    for i in 0..n {
        let mut p = p0.clone();
        let step = 0.25 * (bounds[i].1 - bounds[i].0).min(4.0);
        p[i] = if p[i] + step <= bounds[i].1 {
            p[i] + step
        } else {
            p[i] - step
        };
        let p = clamp(p);
        let v = call(&p);
        simplex.push((p, v));
    }
    while evals.get() < max_evals {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, worst) = (simplex[0].1, simplex[n].1);
        if (worst - best).abs() <= 1e-9 * (1.0 + best.abs()) {
            break;
        }
        let centroid: Vec<f64> = (0..n)
            .map(|j| simplex[..n].iter().map(|(p, _)| p[j]).sum::<f64>() / n as f64)
            .collect();
        let towards = |t: f64| -> Vec<f64> {
            clamp(
                (0..n)
                    .map(|j| centroid[j] + t * (simplex[n].0[j] - centroid[j]))
                    .collect(),
            )
        };
        let xr = towards(-1.0);
        let fr = call(&xr);
        if fr < simplex[0].1 {
            let xe = towards(-2.0);
            let fe = call(&xe);
            simplex[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (xr, fr);
        } else {
            let xc = towards(if fr < worst { -0.5 } else { 0.5 });
            let fc = call(&xc);
            if fc < worst.min(fr) {
                simplex[n] = (xc, fc);
            } else {
                let b = simplex[0].0.clone();
                for (p, v) in simplex.iter_mut().skip(1) {
                    *p = clamp(p.iter().zip(&b).map(|(x, y)| y + 0.5 * (x - y)).collect());
                    *v = call(p);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    (simplex.swap_remove(0).0, evals.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nelder_mead_finds_a_bounded_minimum() {
        let f = |x: &[f64]| (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2);
        let (x, _) = nelder_mead(&f, &[0.0, 0.0], &[(-5.0, 5.0), (-5.0, 5.0)], 500);
        assert!(
            (x[0] - 1.0).abs() < 1e-3 && (x[1] + 2.0).abs() < 1e-3,
            "{x:?}"
        );
        // The unconstrained minimum at x = -2 is outside [0, 5]: the fit stops at the bound.
        let (x, _) = nelder_mead(&f, &[3.0, 0.0], &[(-5.0, 5.0), (0.0, 5.0)], 500);
        assert!(x[1].abs() < 1e-3, "{x:?}");
    }
}
