//! `sim report`: SVG charts and one self-contained HTML page for one or more machines and a model.
//!
//! [`measured`] holds the user's runs drawn beside the lines, [`layout_fit`] decides once which layouts run (every part below reads its verdict),
//! [`simulate`] computes the numbers (per layout: memory plan, decode breakdown, a bench_serving
//! run per concurrency; per machine: the EP verdict), [`charts`] turns one machine's numbers into
//! layout charts, [`page`] adds the profile charts from `reports::profile` (shared with `probe
//! charts`), renders everything and lays out the page, [`output`] is the JSON summary,
//! [`scoreboard`] the predicted-against-measured part of `--records`. Rendering happens in memory
//! before any file is written.

pub mod charts;
pub mod layout_fit;
pub mod measured;
pub mod output;
pub mod p2p_chart;
pub mod page;
pub mod scoreboard;
pub mod simulate;

pub use measured::MeasuredRuns;
pub use output::{MachineSummary, REPORT_SCHEMA_VERSION, ReportOutput};
pub use page::{BuiltReport, ReportInputs, build_report, write_report};
pub use simulate::{LayoutResult, MachineResults, ReportPlan, simulate_machine};
