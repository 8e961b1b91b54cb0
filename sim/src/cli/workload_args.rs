//! bench_serving's workload flags, shared by `run`, `sweep`, `advise`, `calibrate` and `validate`.

use anyhow::{Context, bail};
use sim::workload::Workload;

/// Workload flags with bench_serving's names and defaults (random dataset).
#[derive(clap::Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Requests in the run (`--num-prompts`).
    #[arg(long, default_value_t = 1000)]
    pub num_prompts: u32,
    /// Longest prompt, tokens.
    #[arg(long, default_value_t = 1024)]
    pub random_input_len: u32,
    /// Longest generation, tokens (requests ignore EOS).
    #[arg(long, default_value_t = 1024)]
    pub random_output_len: u32,
    /// Lengths are uniform in [len·ratio, len]; 1.0 = fixed lengths. bench_serving's default is 0.0.
    #[arg(long, default_value_t = 0.0)]
    pub random_range_ratio: f64,
    /// Most requests in flight (closed loop); a comma-separated list where a command sweeps.
    #[arg(long, value_delimiter = ',')]
    pub max_concurrency: Vec<u32>,
    /// Poisson arrival rate, requests/s (`inf` or omitted = all at once).
    #[arg(long)]
    pub request_rate: Option<String>,
    /// Prompt tokens every request finds in the prefix cache (a shared system prompt).
    #[arg(long, default_value_t = 0)]
    pub cached_prefix_tokens: u32,
    /// Seed of lengths and arrivals.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl WorkloadArgs {
    /// The workloads the flags describe: one per `--max-concurrency` value (one without it),
    /// each checked against the model's context length.
    pub fn workloads(&self, max_context_tokens: u64) -> anyhow::Result<Vec<Workload>> {
        let request_rate = match self.request_rate.as_deref() {
            None | Some("inf") => None,
            Some(s) => Some(
                s.parse::<f64>()
                    .with_context(|| format!("--request-rate `{s}` is not a number or `inf`"))?,
            ),
        };
        let base = Workload {
            num_prompts: self.num_prompts,
            random_input_len: self.random_input_len,
            random_output_len: self.random_output_len,
            random_range_ratio: self.random_range_ratio,
            max_concurrency: None,
            request_rate,
            cached_prefix_tokens: self.cached_prefix_tokens,
            seed: self.seed,
        };
        let list: Vec<Option<u32>> = if self.max_concurrency.is_empty() {
            vec![None]
        } else {
            self.max_concurrency.iter().map(|&c| Some(c)).collect()
        };
        list.into_iter()
            .map(|c| {
                let w = Workload {
                    max_concurrency: c,
                    ..base.clone()
                };
                w.validate(max_context_tokens)?;
                Ok(w)
            })
            .collect()
    }

    /// The single workload of a command that runs one (`sim run`).
    pub fn one(&self, max_context_tokens: u64) -> anyhow::Result<Workload> {
        let mut v = self.workloads(max_context_tokens)?;
        if v.len() != 1 {
            bail!("`sim run` takes one --max-concurrency value; use `sim sweep` for a list");
        }
        Ok(v.remove(0))
    }
}
