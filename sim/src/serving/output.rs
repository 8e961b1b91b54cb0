//! What one simulated run reports, keyed like bench_serving's JSONL so that a predicted run and a
//! measured one line up key by key (`duration`, `completed`, `output_throughput`, `mean_ttft_ms`, …),
//! plus what bench_serving cannot see: time by iteration kind, KV use, micro-batch sizes.

use crate::cost::TimeBreakdown;
use serde::{Deserialize, Serialize};

/// Schema version of [`RunReport`]; bump when a key changes meaning or disappears. 2: the
/// layout's flags are `flags`, in the engine's own spelling, beside `engine` (1: `sglang_flags`,
/// which a vLLM run filled with SGLang's spelling).
pub const RUN_REPORT_SCHEMA_VERSION: u32 = 2;

/// One simulated bench_serving run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Always [`RUN_REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The engine whose behaviour was simulated (`sglang`, `vllm`).
    #[serde(default)]
    pub engine: crate::options::Engine,
    /// Layout short name (`TP8`, `TP4xPP2`, `EP8`).
    pub layout: String,
    /// The engine's flags that launch the layout, in its own spelling (`--tp 4 --pp-size 2`
    /// for SGLang, `-tp 4 -pp 2` for vLLM). Read from `sglang_flags` in schema 1 files.
    #[serde(alias = "sglang_flags")]
    pub flags: String,
    /// `--max-concurrency` (`null` = unlimited).
    pub max_concurrency: Option<u32>,
    /// `--closed-rounds`: `max_concurrency` is the size of each round the client sends at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed_rounds: bool,
    /// `--request-rate` (`null` = inf).
    pub request_rate: Option<f64>,
    pub random_input_len: u32,
    pub random_output_len: u32,
    pub random_range_ratio: f64,
    /// Seconds from the first send to the last response.
    pub duration: f64,
    /// Requests finished.
    pub completed: u32,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// Requests per second.
    pub request_throughput: f64,
    /// Prompt tokens per second.
    pub input_throughput: f64,
    /// Generated tokens per second.
    pub output_throughput: f64,
    /// Prompt + generated tokens per second.
    pub total_throughput: f64,
    pub mean_e2e_latency_ms: f64,
    pub median_e2e_latency_ms: f64,
    pub p99_e2e_latency_ms: f64,
    pub mean_ttft_ms: f64,
    pub median_ttft_ms: f64,
    pub p99_ttft_ms: f64,
    pub mean_tpot_ms: f64,
    pub median_tpot_ms: f64,
    pub p99_tpot_ms: f64,
    pub mean_itl_ms: f64,
    pub median_itl_ms: f64,
    pub p99_itl_ms: f64,
    /// bench_serving's `concurrency`: summed request latency / duration (mean requests in flight).
    pub concurrency: f64,
    /// Most requests running (decoding or prefilling) on the server at once.
    pub peak_running_requests: u32,
    /// KV tokens the pool holds (summed over attention-DP replicas).
    pub kv_capacity_tokens: u64,
    /// Most KV tokens in use at once (prompts + generated so far).
    pub peak_kv_tokens: u64,
    /// `peak_kv_tokens / kv_capacity_tokens`.
    pub peak_kv_usage: f64,
    /// Where the time went.
    pub breakdown: RunBreakdown,
    /// Running requests of each micro-batch (one entry per micro-batch; one without PP), sampled.
    pub micro_batch_samples: Vec<MicroBatchSample>,
    /// Engines behind SGLang's router (`--dp-size` without DP attention): the figures are the
    /// whole box's; peaks and the KV pool summed over engines. Omitted when 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub replicas: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `sim run --format json`: the run with what it was simulated on. Keys of [`RunReport`] stay at
/// the top level, as in bench_serving's JSONL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// Machine preset or profile.
    pub machine: String,
    /// Model preset or path.
    pub model: String,
    /// Knobs in force (defaults, or a calibration's).
    pub knobs: crate::cost::Knobs,
    /// The server and bench_serving flags given that do not change the prediction.
    #[serde(default)]
    pub flags_not_modelled: Vec<String>,
    /// What the prediction rests on: which inputs were measured, which modelled.
    #[serde(default)]
    pub provenance: Vec<String>,
    /// GPUs of the machine the layout leaves idle (one replica on part of the machine).
    #[serde(default)]
    pub idle_gpus: u32,
    #[serde(flatten)]
    pub run: RunReport,
}

/// Engine time by kind of turn, and the cost model's parts summed over the batches run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RunBreakdown {
    /// Wall time of turns that ran a prefill (chunk) somewhere in the pipeline.
    pub prefill_s: f64,
    /// Wall time of turns that only decoded.
    pub decode_s: f64,
    /// Wall time with nothing to run (waiting for requests).
    pub idle_s: f64,
    /// Prefill batches run.
    pub prefill_batches: u64,
    /// Decode batches run.
    pub decode_batches: u64,
    /// Turns in which the CPU (launches + scheduling) was slower than the GPU.
    pub cpu_bound_turns: u64,
    /// Requests retracted because a decode step found the KV pool full (re-prefilled later).
    #[serde(default)]
    pub retracted_requests: u64,
    /// The cost model's parts summed over every batch run (stages included).
    pub cost_parts: TimeBreakdown,
}

/// The size of each micro-batch's running set at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicroBatchSample {
    /// Seconds from the start.
    pub t_s: f64,
    /// Requests held by each micro-batch (decoding or prefilling).
    pub sizes: Vec<u32>,
}

/// Mean, median and 99th percentile of a sample, in the sample's unit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    pub mean: f64,
    pub median: f64,
    pub p99: f64,
}

impl Summary {
    /// Every statistic × `k`.
    pub fn scaled(self, k: f64) -> Summary {
        Summary {
            mean: self.mean * k,
            median: self.median * k,
            p99: self.p99 * k,
        }
    }

    /// Summarises `v` (reordered in place). numpy's default linear interpolation, like bench_serving.
    pub fn of(v: &mut [f64]) -> Summary {
        if v.is_empty() {
            return Summary::default();
        }
        v.sort_unstable_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        Summary {
            mean,
            median: models::stats::percentile_sorted(v, 0.5),
            p99: models::stats::percentile_sorted(v, 0.99),
        }
    }
}

/// Inter-token latencies as counts per distinct value: a run has few distinct step durations but
/// millions of tokens, so counting them keeps summarising cheap.
#[derive(Debug, Clone, Default)]
pub struct WeightedSample {
    counts: std::collections::HashMap<
        u64,
        u64,
        std::hash::BuildHasherDefault<super::cost_cache::KeyHasher>,
    >,
    runs: Vec<(f64, u64)>,
}

impl WeightedSample {
    /// Adds `count` observations of `v`.
    pub fn push(&mut self, v: f64, count: u64) {
        if count > 0 {
            *self.counts.entry(v.to_bits()).or_insert(0) += count;
        }
    }

    /// Adds every observation of `other`.
    pub fn absorb(&mut self, other: &WeightedSample) {
        for (&bits, &n) in &other.counts {
            *self.counts.entry(bits).or_insert(0) += n;
        }
    }

    /// Mean, median and p99 with numpy's linear interpolation over the expanded sample.
    pub fn summary(&mut self) -> Summary {
        self.runs = self
            .counts
            .iter()
            .map(|(&bits, &n)| (f64::from_bits(bits), n))
            .collect();
        let total: u64 = self.runs.iter().map(|r| r.1).sum();
        if total == 0 {
            return Summary::default();
        }
        self.runs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mean = self.runs.iter().map(|(v, n)| v * *n as f64).sum::<f64>() / total as f64;
        // The value at expanded index i.
        let at = |i: u64| {
            let mut seen = 0;
            for &(v, n) in &self.runs {
                seen += n;
                if i < seen {
                    return v;
                }
            }
            self.runs[self.runs.len() - 1].0
        };
        let pct = |q: f64| {
            let pos = q / 100.0 * (total - 1) as f64;
            let (lo, hi) = (pos.floor() as u64, pos.ceil() as u64);
            let (a, b) = (at(lo), at(hi));
            a + (b - a) * (pos - lo as f64)
        };
        Summary {
            mean,
            median: pct(50.0),
            p99: pct(99.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_numpy_linear() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        let s = Summary::of(&mut v);
        assert_eq!(s.mean, 50.5);
        assert_eq!(s.median, 50.5);
        assert!((s.p99 - 99.01).abs() < 1e-9);
        assert_eq!(Summary::of(&mut []), Summary::default());
    }

    #[test]
    fn weighted_sample_matches_the_expanded_one() {
        let mut w = WeightedSample::default();
        let mut flat = Vec::new();
        for (v, n) in [(3.0, 5u64), (1.0, 2), (3.0, 1), (2.0, 7), (10.0, 1)] {
            w.push(v, n);
            flat.extend(std::iter::repeat_n(v, n as usize));
        }
        let a = w.summary();
        let b = Summary::of(&mut flat);
        assert!((a.mean - b.mean).abs() < 1e-12);
        assert_eq!(a.median, b.median);
        assert!((a.p99 - b.p99).abs() < 1e-12);
    }
}
