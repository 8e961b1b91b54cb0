//! `sim validate --measured`'s orchestration as a library function: every measured run of one
//! layout predicted by the [`Scenario`]'s cost model and compared metric by metric, returned as
//! the plain serializable [`Validation`] its JSON output is.

use super::{MeasuredError, Scenario};
use crate::bench_serving::read::MeasuredPoint;
use crate::calibrate::{PointComparison, compare, rms_log_error};
use models::Layout;

/// The schema of [`Validation`]'s JSON.
/// (Bumped when a key changes meaning or disappears; `engine` was added under 1.)
pub const VALIDATION_SCHEMA_VERSION: u32 = 1;

/// Predicted vs measured, point by point, on one layout (`sim validate --format json`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Validation {
    pub schema_version: u32,
    /// The engine whose behaviour was simulated (the launch's).
    pub engine: crate::engine::Engine,
    pub layout: String,
    pub knobs: crate::cost::Knobs,
    /// RMS of ln(predicted / measured) over every compared value.
    pub rms_log_error: f64,
    pub points: Vec<PointComparison>,
}

impl Scenario {
    /// `points` measured on `layout`, each predicted with the scenario's knobs; a measured
    /// speed the machine cannot reach is refused first.
    pub fn validate_against(
        &self,
        layout: Layout,
        points: &[MeasuredPoint],
    ) -> Result<Validation, MeasuredError> {
        crate::bench_serving::read::checks::check_speed(
            points,
            &self.machine,
            &self.spec,
            &self.opts_for(layout),
        )?;
        let model = self.model(layout, self.knobs)?;
        let rows = compare(&model, &self.opts, points)?;
        Ok(Validation {
            schema_version: VALIDATION_SCHEMA_VERSION,
            engine: self.launch.engine(),
            layout: layout.short_name(),
            knobs: self.knobs,
            rms_log_error: rms_log_error(&rows),
            points: rows,
        })
    }
}
