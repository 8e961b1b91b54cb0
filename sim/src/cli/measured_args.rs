//! `--measured FILE` / `--server-log FILE`, shared by `sim validate`, `sim calibrate` and
//! `sim report`: where measured runs come from, and lengths to assume where they were not
//! recorded.

use super::args::TargetArgs;
use crate::cli::tables::wrap;
use anyhow::{Context, Result, bail};
use sim::bench_serving::read::{self, LengthHints, MeasuredPoint};

/// Where measured runs come from, and lengths to assume where they were not recorded.
#[derive(clap::Args, Debug, Clone)]
pub struct MeasuredArgs {
    /// bench_serving JSONL, its printed summary, a CSV (concurrency,input_len,output_len,
    /// output_tok_s,…) or `user-box.json#run-id`; repeatable.
    /// Required unless --server-log (or --records for `sim validate`); checked when loading.
    #[arg(long, value_name = "FILE[#RUN]")]
    pub measured: Vec<String>,
    /// The server's own log, SGLang's (`launch_server` output: layout and options from its
    /// `server_args`, step-time samples from its `Decode batch` lines) or vLLM's (`vllm serve`:
    /// its `non-default args`, its `Avg generation throughput` stats and `SpecDecoding metrics`);
    /// memory from its start-up.
    #[arg(long, value_name = "FILE", conflicts_with = "measured")]
    pub server_log: Option<std::path::PathBuf>,
    /// Prompt length to assume where the measurement did not record it.
    #[arg(long, value_name = "TOKENS")]
    pub random_input_len: Option<u32>,
    /// Output length to assume where the measurement did not record it.
    #[arg(long, value_name = "TOKENS")]
    pub random_output_len: Option<u32>,
    /// Requests to simulate per point where the measurement did not record it (default 4 ×
    /// concurrency).
    #[arg(long, value_name = "N", value_parser = super::args::bounded_u32(
        1,
        super::args::MAX_NUM_PROMPTS,
        "each simulated request is held in memory; a million is beyond any bench_serving run",
    ))]
    pub num_prompts: Option<u32>,
}

/// Everything measured that a command was given.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Client-side runs.
    pub points: Vec<MeasuredPoint>,
    /// Server decode rounds.
    pub rounds: Vec<sim::calibrate::StepRound>,
    /// The launch a server log states, read by its engine: an SGLang run's `server_args` (the
    /// flags it ran with), a vLLM run's `non-default args` (the launch line vLLM read).
    pub launch: Option<sim::engine::Launch>,
    /// The sources, for the calibration file.
    pub sources: Vec<String>,
}

impl MeasuredArgs {
    /// Runs, or a server log's rounds (its steady decode samples of the reporting ranks) with
    /// the layout and options its `server_args` state.
    pub fn load_all(&self, target: &TargetArgs) -> Result<Measured> {
        let Some(path) = &self.server_log else {
            let sglang = target.server.sglang()?;
            let spec = target.model.resolve_or(sglang.model_path())?;
            return Ok(Measured {
                points: self.load(spec.max_context_tokens)?,
                sources: self.measured.clone(),
                ..Measured::default()
            });
        };
        let log = sim::server_log::load(path)?;
        let runs: Vec<&sim::server_log::ServerRun> = log
            .runs
            .iter()
            .filter(|r| r.layout().is_some() && r.steady_samples().next().is_some())
            .collect();
        let Some(first) = runs.first() else {
            bail!(
                "{}: no run with a server_args dump and a steady decode sample; pass the log from the server's start",
                path.display()
            );
        };
        let layout = first.layout();
        if let Some(other) = runs.iter().find(|r| r.layout() != layout) {
            bail!(
                "{}: runs {} and {} ran different layouts ({} and {}); a calibration fits one: cut the log to one run",
                path.display(),
                first.index,
                other.index,
                layout.map_or_else(String::new, |l| l.short_name()),
                other.layout().map_or_else(String::new, |l| l.short_name())
            );
        }
        let launch = first
            .launch()
            .with_context(|| format!("{}: its server_args", path.display()))?;
        let samples: Vec<sim::calibrate::StepSample> = runs
            .iter()
            .flat_map(|r| r.steady_samples())
            .filter_map(|s| {
                Some(sim::calibrate::StepSample {
                    source: format!("{}:{}", path.display(), s.line),
                    running: s.running,
                    context_tokens: s.context_per_request,
                    cuda_graph: s.cuda_graph.unwrap_or(false),
                    step_s: s.step_s?,
                })
            })
            .collect();
        Ok(Measured {
            points: Vec::new(),
            rounds: sim::calibrate::rounds(&samples),
            launch,
            sources: vec![path.display().to_string()],
        })
    }

    /// Every readable point; skipped records are reported on stderr with a count.
    /// `target` with the flags each `FILE#RUN` runs file records for its run (the server's
    /// launch as the measurement ran it), said in a note; a modelled flag this command sets
    /// otherwise is refused in one line naming both (`ServerArgs::sglang`).
    pub fn with_recorded_flags(&self, target: &TargetArgs) -> Result<TargetArgs> {
        let mut out = target.clone();
        for spec in &self.measured {
            let Some(r) = read::recorded_flags(spec)? else {
                continue;
            };
            if r.words.is_empty() {
                continue;
            }
            let prose = if r.prose.is_empty() {
                String::new()
            } else {
                format!(" (not flags, not read: {})", r.prose.join("; "))
            };
            let n = format!(
                "{spec}: the run's recorded flags apply: {}{prose}",
                r.words.join(" ")
            );
            eprintln!("{}", wrap("note: ", &n));
            out.server = out.server.with_recorded(r.words);
        }
        Ok(out)
    }

    pub fn load(&self, max_context_tokens: u64) -> Result<Vec<MeasuredPoint>> {
        let hints = LengthHints {
            input_len: self.random_input_len,
            output_len: self.random_output_len,
        };
        let mut points = Vec::new();
        for spec in &self.measured {
            let set = read::load(spec, hints)?;
            for w in &set.warnings {
                eprintln!("{}", wrap("warning: ", w));
            }
            if !set.skipped.is_empty() {
                eprintln!(
                    "warning: {spec}: skipped {} record(s), kept {}:",
                    set.skipped.len(),
                    set.points.len()
                );
                for s in &set.skipped {
                    eprintln!("  {s}");
                }
            }
            points.extend(set.points);
        }
        for p in &mut points {
            if let Some(n) = self.num_prompts {
                p.workload.num_prompts = n;
            }
            p.workload
                .validate(max_context_tokens)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.source))?;
        }
        Ok(points)
    }
}
