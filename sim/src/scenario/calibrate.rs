//! `sim calibrate`'s orchestration as a library function: the knobs of the [`Scenario`]'s cost
//! model fitted to measured runs and a server log's rounds on one layout, checked first against
//! what the machine can do, returned as the [`Calibration`] file's content and the fit's report.

use super::Scenario;
use crate::bench_serving::read::ReadError;
use crate::calibrate::{
    CALIBRATION_SCHEMA_VERSION, CalibrateError, Calibration, CalibrationFit, KnobParam,
    Observations, calibrate,
};
use crate::error::SimError;
use models::Layout;

/// Why measured runs could not be compared with the scenario's predictions or fitted.
#[derive(Debug, thiserror::Error)]
pub enum MeasuredError {
    /// The layout's engine could not be built (its own message, before any fitting).
    #[error(transparent)]
    Engine(#[from] SimError),
    /// A measured run faster than the machine can go.
    #[error(transparent)]
    Measured(#[from] ReadError),
    /// The fit itself failed.
    #[error(transparent)]
    Fit(#[from] CalibrateError),
}

impl Scenario {
    /// Fits the knobs `fit` (the others at the scenario's) of `layout`'s cost model to `obs`,
    /// whose measurements came from `sources`: the calibration `sim calibrate` writes, and the
    /// fit's report (every observation before and after, leave-one-out errors).
    pub fn calibrate_to(
        &self,
        layout: Layout,
        obs: &Observations,
        fit: &[KnobParam],
        sources: Vec<String>,
    ) -> Result<(Calibration, CalibrationFit), MeasuredError> {
        // fail early, with the cost model's own message, on a layout that cannot run
        self.model(layout, self.knobs)?;
        let opts = self.opts_for(layout);
        crate::bench_serving::read::checks::check_speed(
            &obs.runs,
            &self.machine,
            &self.spec,
            &opts,
        )?;
        let result = calibrate(|k| self.model(layout, k), &self.opts, obs, fit, self.knobs)?;
        let cal = Calibration {
            schema_version: CALIBRATION_SCHEMA_VERSION,
            engine: self.opts.engine,
            knobs: result.outcome.knobs,
            fitted: fit.to_vec(),
            knob_reports: result.outcome.reports.clone(),
            machine: self.machine.name().to_string(),
            model: self.spec.name.clone(),
            layout: layout.short_name(),
            server: self.opts.clone(),
            measured: sources,
            observations: result.observations.clone(),
            rms_log_error_before: result.rms_before,
            rms_log_error_after: result.rms_after,
            median_abs_error_pct: result.median_abs_error_pct,
        };
        Ok((cal, result))
    }
}
