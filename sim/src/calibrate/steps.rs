//! Server decode steps as calibration observations.

use crate::cost::IterationModel;
use crate::cost::steady::logged_step_s;
use serde::{Deserialize, Serialize};

/// One decode-step sample of a server: what a `Decode batch` log line says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSample {
    /// Where it came from (`file:line`).
    pub source: String,
    /// Requests decoding (`#running-req`).
    pub running: u32,
    /// Mean tokens in the KV cache per running request (`#token ÷ #running-req`).
    pub context_tokens: f64,
    /// Whether the step replayed a CUDA graph (`cuda graph: True`).
    pub cuda_graph: bool,
    /// Seconds per decode step (`#running-req ÷ gen throughput`).
    pub step_s: f64,
}

/// The steady samples of one round: same running requests, same graph mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRound {
    pub running: u32,
    pub cuda_graph: bool,
    /// Median of the samples' step times, seconds.
    pub step_s: f64,
    /// Mean context of the samples, tokens.
    pub context_tokens: f64,
    /// Samples behind it.
    pub samples: u32,
    /// Their spread: (max − min) ÷ median.
    pub spread: f64,
}

/// Groups samples into rounds by (running requests, graph mode), sorted by running requests.
pub fn rounds(samples: &[StepSample]) -> Vec<StepRound> {
    let mut keys: Vec<(u32, bool)> = samples.iter().map(|s| (s.running, s.cuda_graph)).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|(running, cuda_graph)| {
            let of: Vec<&StepSample> = samples
                .iter()
                .filter(|s| s.running == running && s.cuda_graph == cuda_graph)
                .filter(|s| s.step_s.is_finite() && s.step_s > 0.0)
                .collect();
            if of.is_empty() {
                return None;
            }
            let steps: Vec<f64> = of.iter().map(|s| s.step_s).collect();
            let median = models::stats::median(&steps)?;
            Some(StepRound {
                running,
                cuda_graph,
                step_s: median,
                context_tokens: of.iter().map(|s| s.context_tokens).sum::<f64>() / of.len() as f64,
                samples: of.len() as u32,
                spread: (steps[steps.len() - 1] - steps[0]) / median,
            })
        })
        .collect()
}

impl StepRound {
    /// A short label for tables: `server log: 16 running, eager (3 samples)`.
    pub fn label(&self) -> String {
        format!(
            "server log: {} running, {} ({} sample{})",
            self.running,
            if self.cuda_graph {
                "CUDA graph"
            } else {
                "eager"
            },
            self.samples,
            if self.samples == 1 { "" } else { "s" }
        )
    }

    /// The step time `model` predicts for what the log measured
    /// ([`logged_step_s`]).
    pub fn predict_s(&self, model: &dyn IterationModel) -> f64 {
        let ctx = self.context_tokens.round().clamp(1.0, u32::MAX as f64) as u32;
        logged_step_s(model, self.running, ctx)
    }
}
