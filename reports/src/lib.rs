//! A small chart vocabulary rendered to SVG with `plotters`: heat maps, line charts over log sizes,
//! stacked bars, scatter charts (with an optional y = x line and band). It knows nothing of LLMs:
//! callers hand it plain series and matrices.
//!
//! Every chart kind is a serde-serialisable input type plus one function returning an SVG string:
//! [`heat_map()`], [`line_chart()`], [`stacked_bars()`], [`memory_bars()`], [`scatter_chart()`];
//! the [`Chart`] trait and
//! the [`AnyChart`] enum give them one face. [`html::Page`] assembles
//! charts and tables into one self-contained HTML page; [`write_svg`] / [`write_html`] write files
//! atomically. All caller text is escaped (plotters' SVG backend escapes `<>&"'`; the HTML builder
//! escapes its own output) and stripped of control characters.

#![warn(missing_docs)]

pub mod axis;
pub mod chart;
pub mod error;
pub mod heat_map;
pub mod html;
mod labels;
mod legend;
pub mod line_chart;
pub mod memory_bars;
pub mod output;
pub mod profile;
pub mod scatter_chart;
pub mod stacked_bars;
pub mod style;
mod xy_frame;

pub use axis::{Axis, Scale, binary_size_label, format_number, format_value, power_of_two_sizes};
pub use chart::{AnyChart, Chart};
pub use error::ReportError;
pub use heat_map::{Category, HeatCells, HeatMap, heat_map};
pub use line_chart::{LineChart, Series, line_chart};
pub use memory_bars::{MemoryBars, memory_bars};
pub use output::{write_atomic, write_html, write_svg};
pub use scatter_chart::{IdentityBand, PointSeries, ScatterChart, scatter_chart};
pub use stacked_bars::{BarPart, StackedBars, stacked_bars};
pub use style::{Dash, MAX_LEGEND_ENTRIES, Marker, PALETTE, Rgb, palette_colour};
