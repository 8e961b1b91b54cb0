//! The common face of every chart kind: a [`Chart`] renders itself to SVG, and [`AnyChart`] holds
//! any kind in one serde-tagged value, so a caller (e.g. a future `sim report`) can keep a list of
//! charts, dump it to JSON, and render it later without matching on kinds itself.

use serde::{Deserialize, Serialize};

use crate::error::ReportError;
use crate::{HeatMap, LineChart, MemoryBars, ScatterChart, StackedBars};

/// Something that renders to an SVG document.
pub trait Chart {
    /// Title shown at the top of the chart (and usable as a figure caption).
    fn title(&self) -> &str;
    /// The chart as an SVG document.
    fn render_svg(&self) -> Result<String, ReportError>;
}

impl Chart for HeatMap {
    fn title(&self) -> &str {
        &self.title
    }
    fn render_svg(&self) -> Result<String, ReportError> {
        crate::heat_map(self)
    }
}

impl Chart for LineChart {
    fn title(&self) -> &str {
        &self.title
    }
    fn render_svg(&self) -> Result<String, ReportError> {
        crate::line_chart(self)
    }
}

impl Chart for StackedBars {
    fn title(&self) -> &str {
        &self.title
    }
    fn render_svg(&self) -> Result<String, ReportError> {
        crate::stacked_bars(self)
    }
}

impl Chart for ScatterChart {
    fn title(&self) -> &str {
        &self.title
    }
    fn render_svg(&self) -> Result<String, ReportError> {
        crate::scatter_chart(self)
    }
}

impl Chart for MemoryBars {
    fn title(&self) -> &str {
        &self.bars.title
    }
    fn render_svg(&self) -> Result<String, ReportError> {
        crate::memory_bars(self)
    }
}

/// Any chart kind, tagged by `"kind"` in JSON (`heat_map`, `line_chart`, `stacked_bars`,
/// `memory_bars`, `scatter_chart`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnyChart {
    /// See [`HeatMap`].
    HeatMap(HeatMap),
    /// See [`LineChart`].
    LineChart(LineChart),
    /// See [`StackedBars`].
    StackedBars(StackedBars),
    /// See [`MemoryBars`].
    MemoryBars(MemoryBars),
    /// See [`ScatterChart`].
    ScatterChart(ScatterChart),
}

impl AnyChart {
    fn inner(&self) -> &dyn Chart {
        match self {
            AnyChart::HeatMap(c) => c,
            AnyChart::LineChart(c) => c,
            AnyChart::StackedBars(c) => c,
            AnyChart::MemoryBars(c) => c,
            AnyChart::ScatterChart(c) => c,
        }
    }
}

impl Chart for AnyChart {
    fn title(&self) -> &str {
        self.inner().title()
    }
    fn render_svg(&self) -> Result<String, ReportError> {
        self.inner().render_svg()
    }
}
