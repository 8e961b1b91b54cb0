//! Memory bars: stacked bars per category (weights, KV cache, activations, …) with a horizontal
//! reference line and label (the card's memory), so a layout that does not fit sticks out above it.

use serde::{Deserialize, Serialize};

use crate::error::ReportError;
use crate::stacked_bars::{self, Reference, StackedBars};

/// Stacked memory bars plus the capacity line they are judged against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBars {
    /// The bars; their unit is also the unit of `reference_value`.
    pub bars: StackedBars,
    /// Height of the reference line in the bars' unit, e.g. 96 (GB per card).
    pub reference_value: f64,
    /// Text beside the line, e.g. "card: 96 GB".
    pub reference_label: String,
}

/// Renders `chart` as an SVG document.
///
/// Errors as [`stacked_bars::stacked_bars`] does, and when the reference value is negative or not
/// finite.
pub fn memory_bars(chart: &MemoryBars) -> Result<String, ReportError> {
    let r = chart.reference_value;
    if !(r.is_finite() && r >= 0.0) {
        return Err(ReportError::invalid(
            &chart.bars.title,
            format!("reference value {r} must be finite and non-negative"),
        ));
    }
    stacked_bars::render(
        &chart.bars,
        Some(Reference {
            value_units: r,
            label: &chart.reference_label,
        }),
    )
}
