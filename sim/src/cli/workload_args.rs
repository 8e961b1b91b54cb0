//! bench_serving's workload flags, as bench_serving spells them, shared by `run`, `sweep`,
//! `advise` (all of [`WorkloadArgs`]) and `calibrate` ([`BenchCompatArgs`]: there the workload
//! comes from `--measured`, and a pasted bench_serving line's flags are recorded).

use anyhow::{Context, Result, bail};
use sim::workload::{Dataset, ShareGptLengths, Workload};
use std::path::{Path, PathBuf};

/// bench_serving flags that do not change the simulated workload: kept so a pasted
/// bench_serving command runs, and listed as not modelled.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BenchExtras {
    /// `--backend` (the simulated server is SGLang's; recorded).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// `--output-file`: append the predicted run as one bench_serving JSONL line (`sim run`,
    /// `sim sweep`: one line per row).
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// `--disable-ignore-eos` (recorded: the simulation generates every requested token).
    #[arg(long)]
    pub disable_ignore_eos: bool,
    /// `--disable-tqdm` (recorded).
    #[arg(long, hide = true)]
    pub disable_tqdm: bool,
    /// `--flush-cache` (recorded).
    #[arg(long, hide = true)]
    pub flush_cache: bool,
    /// `--apply-chat-template` (recorded).
    #[arg(long, hide = true)]
    pub apply_chat_template: bool,
    /// `--disable-stream` (recorded).
    #[arg(long, hide = true)]
    pub disable_stream: bool,
    /// `--output-details` (recorded).
    #[arg(long, hide = true)]
    pub output_details: bool,
    /// `--warmup-requests` (recorded).
    #[arg(long, hide = true, value_name = "N")]
    pub warmup_requests: Option<u32>,
    /// `--tokenizer` (recorded).
    #[arg(long, hide = true, value_name = "PATH")]
    pub tokenizer: Option<String>,
    /// `--base-url` (recorded).
    #[arg(long, hide = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// `--tag` (recorded).
    #[arg(long, hide = true, value_name = "TAG")]
    pub tag: Option<String>,
    /// `--extra-request-body` (recorded).
    #[arg(long, hide = true, value_name = "JSON")]
    pub extra_request_body: Option<String>,
}

impl BenchExtras {
    /// The flags given, as written, each with why it is not modelled where that is not obvious.
    pub fn not_modelled(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut opt = |f: &str, x: Option<String>| {
            if let Some(x) = x {
                v.push(format!("{f} {x}"));
            }
        };
        opt("--backend", self.backend.clone());
        opt(
            "--warmup-requests",
            self.warmup_requests.map(|n| n.to_string()),
        );
        opt(sim::bench_serving::flags::TOKENIZER, self.tokenizer.clone());
        opt("--base-url", self.base_url.clone());
        opt("--tag", self.tag.clone());
        opt("--extra-request-body", self.extra_request_body.clone());
        for (on, f) in [
            (self.disable_tqdm, "--disable-tqdm"),
            (self.flush_cache, "--flush-cache"),
            (self.apply_chat_template, "--apply-chat-template"),
            (self.disable_stream, "--disable-stream"),
            (self.output_details, "--output-details"),
            (
                self.disable_ignore_eos,
                "--disable-ignore-eos (outputs are simulated to their full length)",
            ),
        ] {
            if on {
                v.push(f.to_string());
            }
        }
        v
    }

    /// Refuses an `--output-file` whose folder does not exist, before anything is simulated.
    pub fn check_output_file(&self) -> Result<()> {
        if let Some(p) = &self.output_file
            && let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            bail!(
                "--output-file {}: folder {} does not exist; create it first",
                p.display(),
                dir.display()
            );
        }
        Ok(())
    }
}

/// Workload flags with bench_serving's names and defaults.
#[derive(clap::Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Requests in the run (`--num-prompts`; at most a million, each held in memory).
    #[arg(long, default_value_t = 1000, value_parser = super::args::bounded_u32(
        1,
        super::args::MAX_NUM_PROMPTS,
        "each simulated request is held in memory; a million is beyond any bench_serving run (split the run)",
    ))]
    pub num_prompts: u32,
    /// Longest prompt, tokens (random dataset; `--random-input` as bench_serving abbreviates it).
    #[arg(long, visible_alias = "random-input", default_value_t = 1024)]
    pub random_input_len: u32,
    /// Longest generation, tokens (requests ignore EOS).
    #[arg(long, visible_alias = "random-output", default_value_t = 1024)]
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
    /// Closed rounds, not bench_serving's client: send `--max-concurrency` requests at once and
    /// the next round only when all of them have finished (a script gathering a round of
    /// non-streaming requests); throughput is then the rounds' tokens over the rounds' time.
    #[arg(long)]
    pub closed_rounds: bool,
    /// Prompt tokens every request finds in the prefix cache (a shared system prompt).
    #[arg(long, default_value_t = 0)]
    pub cached_prefix_tokens: u32,
    /// Seed of lengths and arrivals.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `--dataset-name`: `random` (or `random-ids`), or `sharegpt` (lengths from
    /// `--dataset-path`, else ShareGPT's published distribution).
    #[arg(long, default_value = "random", value_parser = ["random", "random-ids", "sharegpt"])]
    pub dataset_name: String,
    /// `--dataset-path`: the ShareGPT JSON bench_serving reads.
    #[arg(long, value_name = "FILE")]
    pub dataset_path: Option<PathBuf>,
    /// shardwise's own: the prompts your clients send, for the speculative acceptance assumed when
    /// none is given (`--speculative-accept-length`); default: the dataset's (random tokens, or
    /// ShareGPT's natural text). `padded-text` is SGLang's own `bench_serving --dataset-name
    /// random`, which cuts or repeats ShareGPT text to the length (vLLM's `bench serve` random
    /// sends token ids: the default).
    #[arg(long, value_name = "KIND", value_parser = ["random", "padded-text", "synthetic", "natural", "code", "reasoning"])]
    pub prompt_kind: Option<String>,
    /// `--sharegpt-output-len`: every ShareGPT request generates this many tokens.
    #[arg(long, value_name = "TOKENS")]
    pub sharegpt_output_len: Option<u32>,
    /// `--sharegpt-context-len`: drop ShareGPT pairs longer than this.
    #[arg(long, value_name = "TOKENS")]
    pub sharegpt_context_len: Option<u32>,
    #[command(flatten)]
    pub bench: BenchExtras,
}

impl WorkloadArgs {
    /// The dataset the flags pick, ShareGPT lengths bounded by `max_context_tokens`.
    fn dataset(&self, max_context_tokens: u64) -> Result<Dataset> {
        if self.dataset_name != "sharegpt" {
            if let Some(p) = &self.dataset_path {
                bail!(
                    "--dataset-path {} is read for --dataset-name sharegpt only (the random dataset draws lengths)",
                    p.display()
                );
            }
            return Ok(Dataset::Random);
        }
        if self.sharegpt_output_len.is_some_and(|o| o < 4) {
            bail!("--sharegpt-output-len must be at least 4 (bench_serving refuses less)");
        }
        let limit = self
            .sharegpt_context_len
            .map_or(max_context_tokens, |c| (c as u64).min(max_context_tokens));
        let context_len = Some(limit.min(u32::MAX as u64) as u32);
        let lengths = match &self.dataset_path {
            Some(p) => ShareGptLengths::from_file(p, self.sharegpt_output_len, context_len)
                .with_context(|| format!("--dataset-path {}", p.display()))?,
            None => ShareGptLengths::published(self.sharegpt_output_len, context_len),
        };
        Ok(Dataset::Sharegpt(lengths))
    }

    /// Where the workload's lengths come from, for provenance lines.
    pub fn lengths_provenance(&self) -> String {
        match (&*self.dataset_name, &self.dataset_path) {
            ("sharegpt", Some(p)) => format!(
                "ShareGPT lengths from {} (tokens estimated as bytes/4)",
                display(p)
            ),
            ("sharegpt", None) => "ShareGPT lengths from the published distribution (means 161/338 tokens, Kwon et al. 2023; log-normal shape assumed)".into(),
            _ => "random dataset lengths as bench_serving draws them".into(),
        }
    }

    /// The workloads the flags describe: one per `--max-concurrency` value (one without it),
    /// each checked against the server's context length.
    pub fn workloads(&self, max_context_tokens: u64) -> Result<Vec<Workload>> {
        let request_rate = match self.request_rate.as_deref() {
            None | Some("inf") => None,
            Some(s) => Some(
                s.parse::<f64>()
                    .with_context(|| format!("--request-rate `{s}` is not a number or `inf`"))?,
            ),
        };
        let dataset = self.dataset(max_context_tokens)?;
        // For ShareGPT the `random_*_len` fields carry the dataset's mean lengths.
        let (input, output) = match &dataset {
            Dataset::Sharegpt(d) => {
                let (i, o) = d.mean_lengths();
                (i.round().max(1.0) as u32, o.round().max(1.0) as u32)
            }
            Dataset::Random => (self.random_input_len, self.random_output_len),
        };
        let base = Workload {
            num_prompts: self.num_prompts,
            random_input_len: input,
            random_output_len: output,
            random_range_ratio: self.random_range_ratio,
            max_concurrency: None,
            request_rate,
            cached_prefix_tokens: self.cached_prefix_tokens,
            seed: self.seed,
            dataset,
            closed_rounds: self.closed_rounds,
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
    pub fn one(&self, max_context_tokens: u64) -> Result<Workload> {
        let mut v = self.workloads(max_context_tokens)?;
        if v.len() != 1 {
            bail!("`sim run` takes one --max-concurrency value; use `sim sweep` for a list");
        }
        Ok(v.remove(0))
    }

    /// The prompts `w` sends, for the acceptance prior: `--prompt-kind`, else the dataset's.
    pub fn prompt_kind(&self, w: &Workload) -> sim::acceptance::PromptKind {
        self.prompt_kind
            .as_deref()
            .and_then(sim::acceptance::PromptKind::parse)
            .unwrap_or_else(|| w.prompt_kind())
    }

    /// The bench_serving flags given that do not change the simulation.
    pub fn not_modelled(&self) -> Vec<String> {
        self.bench.not_modelled()
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// bench_serving flags `sim calibrate` accepts from a pasted bench_serving line; the workloads
/// come from `--measured`, so these are recorded (`--random-input-len`, `--random-output-len`
/// and `--num-prompts` are `--measured`'s hints).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BenchCompatArgs {
    /// `--dataset-name` (recorded: the measured file says what ran).
    #[arg(long, value_name = "NAME")]
    pub dataset_name: Option<String>,
    /// `--dataset-path` (recorded).
    #[arg(long, value_name = "FILE")]
    pub dataset_path: Option<PathBuf>,
    /// `--max-concurrency` (recorded: each measured point has its own).
    #[arg(long, value_name = "N")]
    pub max_concurrency: Option<String>,
    /// `--request-rate` (recorded).
    #[arg(long, value_name = "RATE")]
    pub request_rate: Option<String>,
    /// `--random-range-ratio` (recorded).
    #[arg(long, value_name = "RATIO")]
    pub random_range_ratio: Option<f64>,
    /// `--seed` (recorded).
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub bench: BenchExtras,
}

impl BenchCompatArgs {
    /// The flags given, as written.
    pub fn not_modelled(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut opt = |f: &str, x: Option<String>| {
            if let Some(x) = x {
                v.push(format!("{f} {x}"));
            }
        };
        opt("--dataset-name", self.dataset_name.clone());
        opt("--dataset-path", self.dataset_path.as_deref().map(display));
        opt("--max-concurrency", self.max_concurrency.clone());
        opt("--request-rate", self.request_rate.clone());
        opt(
            "--random-range-ratio",
            self.random_range_ratio.map(|r| r.to_string()),
        );
        opt(
            sim::bench_serving::flags::SEED,
            self.seed.map(|s| s.to_string()),
        );
        if let Some(p) = &self.bench.output_file {
            v.push(format!(
                "--output-file {} (calibrate writes its fit to --output)",
                p.display()
            ));
        }
        v.extend(self.bench.not_modelled());
        v
    }
}
