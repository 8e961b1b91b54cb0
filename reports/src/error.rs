//! The one error type of the crate: what was wrong with the chart data, or why a file could not be
//! written.

use std::path::PathBuf;

/// Why a chart or page could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The caller's data cannot be drawn as asked (ragged matrix, NaN, a non-positive value on a log
    /// axis, a category index out of range, …). The message names the chart and the offending datum.
    #[error("chart \"{chart}\": {detail}")]
    InvalidData {
        /// Title of the chart (or page) that was being rendered.
        chart: String,
        /// What is wrong and, where it helps, how to fix it.
        detail: String,
    },
    /// plotters failed while drawing (should not happen for valid data; reported, never panicked).
    #[error("chart \"{chart}\": drawing failed: {detail}")]
    Draw {
        /// Title of the chart that was being drawn.
        chart: String,
        /// plotters' own message.
        detail: String,
    },
    /// Writing the output file (temporary file, or the rename onto the destination) failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// Destination path the caller asked for.
        path: PathBuf,
        /// Underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl ReportError {
    /// Builds an [`ReportError::InvalidData`] for the chart titled `chart`.
    pub(crate) fn invalid(chart: &str, detail: impl Into<String>) -> Self {
        Self::InvalidData {
            chart: chart.to_owned(),
            detail: detail.into(),
        }
    }

    /// Adapter for `map_err` on plotters' results.
    pub(crate) fn draw<E: std::fmt::Debug>(chart: &str) -> impl Fn(E) -> Self + '_ {
        move |e| Self::Draw {
            chart: chart.to_owned(),
            detail: format!("{e:?}"),
        }
    }
}
