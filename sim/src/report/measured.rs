//! The user's own measured runs (`sim report --measured FILE[#RUN]`, read by
//! [`crate::bench_serving::read`] as `sim validate --measured` reads them), drawn as markers beside the
//! predicted lines of the machine they ran on.

use crate::bench_serving::read::{MeasuredMetrics, MeasuredPoint};
use crate::workload::Workload;

/// Measured runs of one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredRuns {
    /// Label of the machine they ran on (a [`super::MachineResults::label`]).
    pub machine: String,
    /// The `--measured` arguments, for captions.
    pub sources: Vec<String>,
    /// The readable points.
    pub points: Vec<MeasuredPoint>,
}

impl MeasuredRuns {
    /// `[concurrency, value]` of every point that states its concurrency and a finite, positive
    /// value of the metric `get` reads, by concurrency.
    pub fn points(&self, get: fn(&MeasuredMetrics) -> Option<f64>) -> Vec<[f64; 2]> {
        let mut v: Vec<[f64; 2]> = self
            .points
            .iter()
            .filter_map(|p| {
                let c = p.workload.max_concurrency?;
                let y = get(&p.metrics).filter(|y| y.is_finite() && *y > 0.0)?;
                Some([f64::from(c), y])
            })
            .collect();
        v.sort_by(|a, b| a[0].total_cmp(&b[0]));
        v
    }

    /// The caption sentence of a chart of bench_serving's `key` that draws `drawn` of these
    /// points; says where the measured workload differs from the simulated one (`lines`).
    pub fn caption(&self, key: &str, drawn: usize, lines: &Workload) -> String {
        let from = self.sources.join(", ");
        if drawn == 0 {
            return format!(" The measured runs ({from}) have no `{key}` to draw here.");
        }
        let mut lengths: Vec<(u32, u32)> = self
            .points
            .iter()
            .map(|p| (p.workload.random_input_len, p.workload.random_output_len))
            .collect();
        lengths.sort_unstable();
        lengths.dedup();
        let differ = lengths
            .iter()
            .filter(|l| **l != (lines.random_input_len, lines.random_output_len))
            .map(|(i, o)| format!("{i}/{o}"))
            .collect::<Vec<_>>();
        let note = if differ.is_empty() {
            String::new()
        } else {
            format!(
                " They ran at input/output lengths {} tokens, the lines at {}/{}: compare the \
                 shape, or rerun the report with their lengths.",
                differ.join(", "),
                lines.random_input_len,
                lines.random_output_len
            )
        };
        format!(
            " Black crosses: {drawn} measured point{} from {from} (the user's runs, at the \
             concurrency the server ran).{note}",
            if drawn == 1 { "" } else { "s" }
        )
    }
}
