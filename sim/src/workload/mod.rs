//! Workloads the way SGLang's `bench_serving` generates them (random and ShareGPT datasets, the
//! latter in [`sharegpt`]): how many prompts,
//! their input/output lengths, and when the client sends them (closed loop with
//! `--max-concurrency`, open loop with a Poisson `--request-rate`).
//!
//! Lengths follow bench_serving's random dataset as read in SGLang's source
//! (`python/sglang/benchmark/datasets/common.py` @ `0ae7bc27`, `compute_random_lens`, used by
//! `datasets/random.py` @ `17481b4e`): `np.random.randint(max(int(len * range_ratio), 1), len + 1)`
//! for inputs and outputs alike, i.e. uniform integers in `[max(⌊len·ratio⌋, 1), len]`;
//! `--random-range-ratio 1.0` gives fixed lengths, bench_serving's default 0.0 gives `[1, len]`.
//! Older bench_serving (`python/sglang/bench_serving.py` @ `0033168f`) drew outputs from
//! `[⌊len·ratio⌋, len]`, so 0 was possible; a 0-token output is simulated as 1. Newer versions
//! also shorten each text prompt by the tokenizer's special tokens, which the server adds back:
//! the server computes `len` tokens while the client's `total_input_tokens` counts one or two
//! fewer per request (≤ 0.2% at 1,000 tokens); the simulation reports the server's count.
//! A closed-round client ([`Workload::closed_rounds`]) is not bench_serving's: it sends a whole
//! round at once and waits for all of it. Arrivals follow `get_request`: inter-arrival gaps drawn from an exponential of rate
//! `--request-rate` (`inf` = all at once). The numbers are drawn from a seeded ChaCha generator,
//! not numpy's, so a seed reproduces a simulation, not bench_serving's exact prompts.

pub mod sharegpt;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
pub use sharegpt::ShareGptLengths;

/// bench_serving's `--dataset-name`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "name")]
pub enum Dataset {
    /// `random`: lengths from `--random-input-len`, `--random-output-len`,
    /// `--random-range-ratio`.
    #[default]
    Random,
    /// `sharegpt`: lengths of ShareGPT conversations (a file, or the published distribution);
    /// the workload's `random_*_len` then hold the source's mean lengths.
    Sharegpt(ShareGptLengths),
}

impl Dataset {
    /// The kind of prompts the dataset sends, for the speculative acceptance prior: random token
    /// ids, or ShareGPT's natural conversations.
    pub fn prompt_kind(&self) -> crate::acceptance::PromptKind {
        match self {
            Dataset::Random => crate::acceptance::PromptKind::Random,
            Dataset::Sharegpt(_) => crate::acceptance::PromptKind::Natural,
        }
    }

    /// bench_serving's name of the dataset.
    pub fn name(&self) -> &'static str {
        match self {
            Dataset::Random => "random",
            Dataset::Sharegpt(_) => "sharegpt",
        }
    }
}

/// A bench_serving-style workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// `--num-prompts`: requests sent in the run.
    pub num_prompts: u32,
    /// `--random-input-len`: longest prompt, tokens.
    pub random_input_len: u32,
    /// `--random-output-len`: longest generation, tokens.
    pub random_output_len: u32,
    /// `--random-range-ratio`: lengths are uniform in `[len·ratio, len]`.
    pub random_range_ratio: f64,
    /// `--max-concurrency`: most requests in flight at the client (`None` = unlimited).
    pub max_concurrency: Option<u32>,
    /// `--request-rate` in requests/s (`None` = `inf`: everything is sent at once, subject to
    /// `max_concurrency`).
    pub request_rate: Option<f64>,
    /// Tokens at the start of every prompt already in the server's prefix cache (a shared system
    /// prompt); they are neither computed nor re-stored. 0 = no prefix hits.
    #[serde(default)]
    pub cached_prefix_tokens: u32,
    /// `--seed`.
    pub seed: u64,
    /// `--dataset-name` (and for ShareGPT where the lengths come from).
    #[serde(default)]
    pub dataset: Dataset,
    /// Closed rounds (`--closed-rounds`): the client sends `max_concurrency` requests at once
    /// and the next round only when every request of the round has finished (a script that
    /// gathers a round of non-streaming requests), instead of bench_serving's semaphore, which
    /// sends the next request as soon as any one finishes. Each round then pays its prefill and
    /// the tail of decode steps with a partly filled batch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed_rounds: bool,
}

impl Default for Workload {
    /// bench_serving's defaults for the random dataset (1024/1024, 1000 prompts, seed 1), with a
    /// fixed length (ratio 1.0) as most published sweeps use.
    fn default() -> Self {
        Workload {
            num_prompts: 1000,
            random_input_len: 1024,
            random_output_len: 1024,
            random_range_ratio: 1.0,
            max_concurrency: None,
            request_rate: None,
            cached_prefix_tokens: 0,
            seed: 1,
            dataset: Dataset::Random,
            closed_rounds: false,
        }
    }
}

/// One request a workload sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestSpec {
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Tokens to generate (`max_tokens`, `ignore_eos`).
    pub output_tokens: u32,
    /// Earliest time the client may send it, seconds from the start of the run.
    pub arrival_s: f64,
}

/// The most requests one simulated run sends: each is drawn and replayed with its lengths and
/// timings held in memory, so memory grows with the count; a million is a day of one server at
/// ~12 requests a second, beyond any bench_serving run.
pub const MAX_NUM_PROMPTS: u32 = 1_000_000;

/// Errors in a workload description.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WorkloadError {
    #[error("--num-prompts must be at least 1")]
    NoPrompts,
    #[error(
        "--num-prompts {0} is above {MAX_NUM_PROMPTS}: each simulated request is held in memory; split the run"
    )]
    TooManyPrompts(u32),
    #[error("--random-input-len and --random-output-len must be at least 1 token")]
    ZeroLength,
    #[error("--random-range-ratio must be within [0, 1], got {0}")]
    BadRatio(f64),
    #[error("--request-rate must be positive (omit it for `inf`), got {0}")]
    BadRate(f64),
    #[error("--max-concurrency must be at least 1")]
    ZeroConcurrency,
    #[error(
        "--closed-rounds sends each round at once: drop --request-rate (the round size is --max-concurrency)"
    )]
    RoundsWithRate,
    #[error(
        "the workload needs up to {needed} tokens of context but the model supports {limit}: lower --random-input-len/--random-output-len"
    )]
    TooLong { needed: u64, limit: u64 },
}

impl Workload {
    /// The kind of prompts this workload sends ([`Dataset::prompt_kind`]).
    pub fn prompt_kind(&self) -> crate::acceptance::PromptKind {
        self.dataset.prompt_kind()
    }

    /// Checks the flags make sense, and that the longest request fits the model's context.
    pub fn validate(&self, max_context_tokens: u64) -> Result<(), WorkloadError> {
        if self.num_prompts == 0 {
            return Err(WorkloadError::NoPrompts);
        }
        if self.num_prompts > MAX_NUM_PROMPTS {
            return Err(WorkloadError::TooManyPrompts(self.num_prompts));
        }
        if self.random_input_len == 0 || self.random_output_len == 0 {
            return Err(WorkloadError::ZeroLength);
        }
        if !(0.0..=1.0).contains(&self.random_range_ratio) {
            return Err(WorkloadError::BadRatio(self.random_range_ratio));
        }
        if let Some(r) = self.request_rate
            && !(r > 0.0 && r.is_finite())
        {
            return Err(WorkloadError::BadRate(r));
        }
        if self.max_concurrency == Some(0) {
            return Err(WorkloadError::ZeroConcurrency);
        }
        if self.closed_rounds && self.request_rate.is_some() {
            return Err(WorkloadError::RoundsWithRate);
        }
        // ShareGPT pairs longer than the context are pruned when drawn, as the server would
        // refuse them; random lengths are the user's choice and must fit.
        let needed = self.random_input_len as u64 + self.random_output_len as u64;
        if matches!(self.dataset, Dataset::Random) && needed > max_context_tokens {
            return Err(WorkloadError::TooLong {
                needed,
                limit: max_context_tokens,
            });
        }
        Ok(())
    }

    /// The requests of the run, in send order, reproducible from `seed`. ShareGPT pairs are
    /// bounded by their `context_len` (the CLI sets it to the model's context at most).
    pub fn requests(&self) -> Vec<RequestSpec> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let lengths: Vec<(u32, u32)> = match &self.dataset {
            Dataset::Random => (0..self.num_prompts)
                .map(|_| {
                    let i = draw_len(&mut rng, self.random_input_len, self.random_range_ratio);
                    let o = draw_len(&mut rng, self.random_output_len, self.random_range_ratio);
                    (i, o)
                })
                .collect(),
            Dataset::Sharegpt(d) => d.draw(&mut rng, self.num_prompts, u64::MAX),
        };
        let mut t = 0.0;
        lengths
            .into_iter()
            .map(|(input_tokens, output_tokens)| {
                let arrival_s = t;
                if let Some(rate) = self.request_rate {
                    // Exponential gap by inversion; 1 - u avoids ln(0).
                    let u: f64 = rng.random();
                    t += -(1.0 - u).ln() / rate;
                }
                RequestSpec {
                    input_tokens,
                    output_tokens,
                    arrival_s,
                }
            })
            .collect()
    }

    /// A short label, e.g. `in1024/out1024 c64` or `in128/out128 4.0 req/s`.
    pub fn label(&self) -> String {
        let mut s = match self.dataset {
            Dataset::Random => format!("in{}/out{}", self.random_input_len, self.random_output_len),
            Dataset::Sharegpt(_) => format!(
                "sharegpt in~{}/out~{}",
                self.random_input_len, self.random_output_len
            ),
        };
        if self.random_range_ratio < 1.0 && self.dataset == Dataset::Random {
            s.push_str(&format!(" r{}", self.random_range_ratio));
        }
        match (self.max_concurrency, self.closed_rounds) {
            (Some(c), true) => s.push_str(&format!(" rounds of {c}")),
            (Some(c), false) => s.push_str(&format!(" c{c}")),
            (None, _) => {}
        }
        if let Some(r) = self.request_rate {
            s.push_str(&format!(" {r} req/s"));
        }
        s
    }
}

/// bench_serving's `randint(max(int(len * ratio), 1), len + 1)`.
fn draw_len(rng: &mut ChaCha8Rng, len: u32, ratio: f64) -> u32 {
    let lo = ((len as f64 * ratio) as u32).max(1).min(len);
    if lo == len {
        len
    } else {
        rng.random_range(lo..=len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_lengths_when_ratio_is_one() {
        let w = Workload {
            num_prompts: 50,
            random_input_len: 300,
            random_output_len: 20,
            ..Workload::default()
        };
        assert!(
            w.requests()
                .iter()
                .all(|r| r.input_tokens == 300 && r.output_tokens == 20 && r.arrival_s == 0.0)
        );
    }

    #[test]
    fn random_lengths_stay_in_range_and_follow_the_seed() {
        let w = Workload {
            num_prompts: 2000,
            random_input_len: 1000,
            random_output_len: 100,
            random_range_ratio: 0.5,
            ..Workload::default()
        };
        let a = w.requests();
        assert!(a.iter().all(|r| (500..=1000).contains(&r.input_tokens)));
        assert!(a.iter().all(|r| (50..=100).contains(&r.output_tokens)));
        let mean = a.iter().map(|r| r.input_tokens as f64).sum::<f64>() / a.len() as f64;
        assert!((mean - 750.0).abs() < 15.0, "mean {mean}");
        assert_eq!(a, w.requests());
        let b = Workload { seed: 2, ..w }.requests();
        assert_ne!(a, b);
    }

    #[test]
    fn poisson_arrivals_have_the_requested_rate() {
        let w = Workload {
            num_prompts: 4000,
            request_rate: Some(8.0),
            ..Workload::default()
        };
        let r = w.requests();
        let span = r.last().unwrap().arrival_s;
        let rate = (r.len() - 1) as f64 / span;
        assert!((rate - 8.0).abs() < 0.5, "rate {rate}");
        assert!(r.windows(2).all(|p| p[1].arrival_s >= p[0].arrival_s));
    }

    #[test]
    fn validation_names_the_problem() {
        let w = Workload {
            random_input_len: 200_000,
            ..Workload::default()
        };
        assert!(matches!(
            w.validate(131_072),
            Err(WorkloadError::TooLong { .. })
        ));
        let w = Workload {
            random_range_ratio: 1.5,
            ..Workload::default()
        };
        assert_eq!(w.validate(1 << 20), Err(WorkloadError::BadRatio(1.5)));
    }
}
