//! Calibration: fit a few physical [`Knobs`] so that the cost model matches what was measured, say
//! which knobs the measurements could pin, and compare predictions with measurements.
//!
//! Two kinds of observation:
//! - a server's own decode steps ([`StepSample`], from `sim::server_log`): the step time the
//!   server logged at a known number of running requests and context — no client can mislabel
//!   that; samples of one round (same requests, same graph mode) are fitted as their median
//!   ([`StepRound`]);
//! - client-side runs ([`MeasuredPoint`]: bench_serving JSONL / summary / CSV), simulated with
//!   `sim::serving` and compared metric by metric.
//!
//! [`knobs`] says what each knob means and how it is bounded, [`knob_fit`] how it is fitted and
//! identified.

pub mod applied;
pub mod knob_fit;
pub mod knobs;
mod steps;

pub use knob_fit::{FitOutcome, KnobReport, nelder_mead, rms};
pub use knobs::{KnobBounds, KnobParam};
pub use steps::{StepRound, StepSample, rounds};

use crate::bench_serving::read::MeasuredPoint;
use crate::cost::{IterationModel, Knobs, ServedModel};
use crate::options::ServerOptions;
use crate::serving::{RunReport, simulate};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Schema version of [`Calibration`] files (2: physical knobs, identification, per-observation
/// and leave-one-out errors; version 1 files had a non-physical overhead knob and are refused).
pub const CALIBRATION_SCHEMA_VERSION: u32 = 2;

/// One observation of a fit, before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationFit {
    /// What it is: `server log: 16 running …` or `file:line output_throughput`.
    pub label: String,
    /// The measured value (seconds per step for a server round; the metric's unit for a run).
    pub measured: f64,
    pub predicted_before: f64,
    pub predicted_after: f64,
    /// (after − measured) / measured, percent.
    pub error_pct: f64,
    /// Error when predicted from a fit without it, percent (fitted observations only).
    pub leave_one_out_error_pct: Option<f64>,
    /// Kept out of the fit (`--hold-out-running`): predicted only.
    pub held_out: bool,
}

/// A fitted calibration, as written by `sim calibrate` and read by `--calibration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Always [`CALIBRATION_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The engine of the measured runs (their server options' tag); files written before it
    /// were SGLang's.
    #[serde(default)]
    pub engine: crate::engine::Engine,
    /// The knobs to apply.
    pub knobs: Knobs,
    /// Which knobs were free in the fit.
    pub fitted: Vec<KnobParam>,
    /// Per knob: value, bounds, prior, whether the data pinned it and by what.
    pub knob_reports: Vec<KnobReport>,
    /// Machine, model and layout it was fitted on.
    pub machine: String,
    pub model: String,
    pub layout: String,
    /// Server options of the measured runs.
    pub server: ServerOptions,
    /// Measurements used (sources).
    pub measured: Vec<String>,
    /// Every observation, fitted and held out.
    pub observations: Vec<ObservationFit>,
    /// Root-mean-square of ln(predicted / measured) over the fitted observations, before and after.
    pub rms_log_error_before: f64,
    pub rms_log_error_after: f64,
    /// Median |error| of the fitted observations after the fit, percent.
    pub median_abs_error_pct: f64,
}

impl Calibration {
    /// [`Calibration::out_of_sample_rms_ln`] where this calibration was fitted on `machine` and
    /// `model` (a prediction of that box and model takes it as its own spread); `None` elsewhere.
    pub fn own_sigma_ln(&self, machine: &str, model: &str) -> Option<f64> {
        (self.machine == machine && self.model == model)
            .then(|| self.out_of_sample_rms_ln())
            .flatten()
    }

    /// Root-mean-square ln(predicted / measured) of the calibration's out-of-sample errors: each
    /// held-out observation's error and each fitted one's leave-one-out error; `None` without any
    /// (a fit of one observation). What the calibrated cost model errs by on this box on a figure
    /// it was not fitted to — the spread a calibrated prediction's interval takes in place of a new
    /// source's ([`crate::uncertainty::Regime::calibrated_sigma_ln`]).
    pub fn out_of_sample_rms_ln(&self) -> Option<f64> {
        let ln: Vec<f64> = self
            .observations
            .iter()
            .filter_map(|o| {
                if o.held_out {
                    Some(o.error_pct)
                } else {
                    o.leave_one_out_error_pct
                }
            })
            .filter(|e| e.is_finite() && *e > -100.0)
            .map(|e| (1.0 + e / 100.0).ln())
            .collect();
        (!ln.is_empty()).then(|| rms(&ln))
    }
}

/// Calibration failures.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("cannot build the cost model: {0}")]
    Model(String),
    #[error("simulating {source_} failed: {problem}")]
    Simulation { source_: String, problem: String },
    #[error(
        "no measured value to fit (server-log steps or runs with output_throughput, TTFT or TPOT; held-out rounds do not count)"
    )]
    NothingToFit,
    #[error("cannot read calibration {path}: {problem}")]
    Read { path: String, problem: String },
    #[error("cannot write calibration {path}: {problem}")]
    Write { path: String, problem: String },
    #[error(
        "calibration {path}: {knob} = {value} is outside its bounds [{low:.3}, {high:.3}] ({meaning}) on this machine and model; re-run `sim calibrate` or fix the file"
    )]
    KnobOutOfBounds {
        path: String,
        knob: &'static str,
        /// As written (`1.000e300`, `NaN`).
        value: String,
        low: f64,
        high: f64,
        meaning: &'static str,
    },
}

impl Calibration {
    /// Reads a calibration file, checking its schema version.
    pub fn load(path: &Path) -> Result<Calibration, CalibrateError> {
        let err = |problem: String| CalibrateError::Read {
            path: path.display().to_string(),
            problem,
        };
        let text = models::io::read_text_limited(path, models::io::PROFILE_LIMIT_BYTES)
            .map_err(|e| err(models::error::io_cause_or_whole(&e)))?;
        #[derive(Deserialize)]
        struct VersionOnly {
            schema_version: Option<u32>,
        }
        let v: VersionOnly =
            serde_json::from_str(&text).map_err(|e| err(format!("malformed JSON: {e}")))?;
        if v.schema_version != Some(CALIBRATION_SCHEMA_VERSION) {
            return Err(err(format!(
                "schema_version {} is not supported (this build reads {CALIBRATION_SCHEMA_VERSION}); re-run `sim calibrate`",
                v.schema_version
                    .map_or_else(|| "missing".to_string(), |v| v.to_string())
            )));
        }
        serde_json::from_str(&text).map_err(|e| err(format!("malformed JSON: {e}")))
    }

    /// Writes it atomically (temp file, then rename).
    pub fn save(&self, path: &Path) -> Result<(), CalibrateError> {
        let bytes = serde_json::to_vec_pretty(self).expect("calibration serialises");
        models::io::write_atomic(path, &bytes).map_err(|e| CalibrateError::Write {
            path: path.display().to_string(),
            problem: models::error::io_cause_or_whole(&e),
        })
    }
}

/// One compared metric of one measured point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointComparison {
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

/// Simulates every point in parallel.
fn simulate_all(
    model: &dyn IterationModel,
    opts: &ServerOptions,
    points: &[MeasuredPoint],
) -> Result<Vec<RunReport>, CalibrateError> {
    points
        .par_iter()
        .map(|p| {
            simulate(model, opts, &p.workload).map_err(|e| CalibrateError::Simulation {
                source_: p.source.clone(),
                problem: e.to_string(),
            })
        })
        .collect()
}

/// Simulates every point (in parallel) and compares it with its measurement.
pub fn compare(
    model: &dyn IterationModel,
    opts: &ServerOptions,
    points: &[MeasuredPoint],
) -> Result<Vec<PointComparison>, CalibrateError> {
    let mut out = Vec::new();
    for (p, r) in points.iter().zip(simulate_all(model, opts, points)?) {
        for (metric, predicted, measured) in pairs(p, &r) {
            out.push(PointComparison {
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
pub fn rms_log_error(rows: &[PointComparison]) -> f64 {
    let e: Vec<f64> = rows
        .iter()
        .map(|c| (c.predicted.max(1e-12) / c.measured).ln())
        .collect();
    rms(&e)
}

/// What a calibration is fitted to.
#[derive(Debug, Clone, Default)]
pub struct Observations {
    /// Server decode steps, grouped into rounds.
    pub rounds: Vec<StepRound>,
    /// Client-side runs.
    pub runs: Vec<MeasuredPoint>,
    /// Rounds kept out of the fit (by running requests): predicted only.
    pub hold_out_running: Vec<u32>,
}

/// The result of [`calibrate`].
#[derive(Debug, Clone)]
pub struct CalibrationFit {
    pub outcome: FitOutcome,
    pub observations: Vec<ObservationFit>,
    pub rms_before: f64,
    pub rms_after: f64,
    pub median_abs_error_pct: f64,
}

/// One predicted quantity of the observations, with its measured value and label.
struct FitTarget {
    label: String,
    measured: f64,
    held_out: bool,
}

/// Predicted values of every target for one cost model (server rounds, then runs' metrics).
fn predict_all(
    model: &ServedModel,
    opts: &ServerOptions,
    obs: &Observations,
) -> Result<Vec<f64>, CalibrateError> {
    let mut out: Vec<f64> = obs.rounds.iter().map(|r| r.predict_s(model)).collect();
    for (p, r) in obs.runs.iter().zip(simulate_all(model, opts, &obs.runs)?) {
        out.extend(pairs(p, &r).into_iter().map(|(_, pred, _)| pred));
    }
    Ok(out)
}

/// Fits `params` so that `build(knobs)`'s predictions match `obs`. Every observation's error is
/// reported; held-out rounds are predicted, not fitted; each fitted one also gets its
/// leave-one-out error.
pub fn calibrate<F>(
    build: F,
    opts: &ServerOptions,
    obs: &Observations,
    params: &[KnobParam],
    start: Knobs,
) -> Result<CalibrationFit, CalibrateError>
where
    F: Fn(Knobs) -> crate::error::Result<ServedModel> + Sync,
{
    let model_err = |e: crate::error::SimError| CalibrateError::Model(e.to_string());
    let base = build(start).map_err(model_err)?;
    let mut targets: Vec<FitTarget> = obs
        .rounds
        .iter()
        .map(|r| FitTarget {
            label: r.label(),
            measured: r.step_s,
            held_out: obs.hold_out_running.contains(&r.running),
        })
        .collect();
    for (p, r) in obs.runs.iter().zip(simulate_all(&base, opts, &obs.runs)?) {
        for (metric, _, measured) in pairs(p, &r) {
            targets.push(FitTarget {
                label: format!("{} {metric}", p.source),
                measured,
                held_out: false,
            });
        }
    }
    let fitted: Vec<usize> = (0..targets.len())
        .filter(|&i| !targets[i].held_out)
        .collect();
    if fitted.is_empty() {
        return Err(CalibrateError::NothingToFit);
    }
    let bounds = KnobBounds::of(base.target());
    let labels: Vec<String> = fitted.iter().map(|&i| targets[i].label.clone()).collect();
    let predict = |k: &Knobs| -> Option<Vec<f64>> {
        let m = build(*k).ok()?;
        let pred = predict_all(&m, opts, obs).ok()?;
        Some(
            fitted
                .iter()
                .map(|&i| (pred[i].max(1e-12) / targets[i].measured).ln())
                .collect(),
        )
    };
    let outcome = knob_fit::fit(&predict, &labels, params, start, bounds, true)
        .ok_or_else(|| CalibrateError::Model("the starting knobs give no prediction".into()))?;
    let before = predict_all(&base, opts, obs)?;
    let after = predict_all(&build(outcome.knobs).map_err(model_err)?, opts, obs)?;
    let mut loo = outcome
        .loo_log_errors
        .clone()
        .unwrap_or_default()
        .into_iter();
    let observations: Vec<ObservationFit> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| ObservationFit {
            label: t.label.clone(),
            measured: t.measured,
            predicted_before: before[i],
            predicted_after: after[i],
            error_pct: (after[i] / t.measured - 1.0) * 100.0,
            leave_one_out_error_pct: if t.held_out {
                None
            } else {
                loo.next().map(|e| (e.exp() - 1.0) * 100.0)
            },
            held_out: t.held_out,
        })
        .collect();
    let abs: Vec<f64> = observations
        .iter()
        .filter(|o| !o.held_out)
        .map(|o| o.error_pct.abs())
        .collect();
    Ok(CalibrationFit {
        rms_before: rms(&outcome.log_errors_before),
        rms_after: rms(&outcome.log_errors_after),
        median_abs_error_pct: models::stats::median_high(&abs).unwrap_or(0.0),
        outcome,
        observations,
    })
}
