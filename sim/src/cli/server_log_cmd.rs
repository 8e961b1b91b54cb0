//! `sim validate --server-log FILE` and `sim calibrate --server-log FILE`: the server's own log
//! read with `sim::server_log`, each run's memory plan beside the logged figures, and each
//! decode sample's logged step time beside the cost model's prediction.
//!
//! The layout and the memory-relevant options come from each run's launch arguments
//! ([`sim::server_log::options`]); the machine and the model from `--machine` / `--model`.

use super::args::TargetArgs;
use super::export::Export;
use super::setup::{CalibrationArg, Setup};
use anyhow::{Context, Result, bail};
use comfy_table::Table;
use models::footprint::footprint;
use sim::cost::{IterationModel, Knobs, MemoryPlan, ServedModel, memory};
use sim::engine::sglang::args::flags::MODEL_PATH;
use sim::options::ServerOptions;
use sim::server_log::batch::{MemoryCheck, check_memory, predicted_step_s};
use sim::server_log::{self, DecodeSample, ServerLog, ServerRun, SkipCounts};
use std::path::Path;

/// Schema version of the `--server-log --format json` output (2 adds `engine`).
pub const SERVER_LOG_REPORT_SCHEMA_VERSION: u32 = 2;

/// `--format json` output of the server-log mode.
#[derive(serde::Serialize)]
pub struct ServerLogReport {
    pub schema_version: u32,
    /// The engine that wrote the log.
    pub engine: sim::engine::Engine,
    pub source: String,
    pub machine: String,
    pub model: String,
    pub knobs: Knobs,
    pub lines: usize,
    pub skipped: SkipCounts,
    pub runs: Vec<LoggedRunReport>,
}

/// One run of the log, checked.
#[derive(serde::Serialize)]
pub struct LoggedRunReport {
    pub index: usize,
    pub first_line: usize,
    /// `model_path` of the run's `ServerArgs`.
    pub model_path: Option<String>,
    /// Layout short name (`TP8`), `None` without a `ServerArgs` dump.
    pub layout: Option<String>,
    pub decode_samples: usize,
    /// Steady samples of the reporting ranks ([`ServerRun::steady_samples`]).
    pub steady_samples: usize,
    pub flagged_samples: usize,
    pub prefill_samples: usize,
    /// Prompt tokens found in the radix cache over all prefill batches.
    pub prefix_cache_hit_fraction: f64,
    pub memory_lines: usize,
    /// The memory plan for the run's options, and it beside the log.
    pub memory_plan: Option<MemoryPlan>,
    pub memory: Vec<MemoryCheck>,
    /// Why the run could not be costed, if it could not.
    pub error: Option<String>,
    pub samples: Vec<SampleRow>,
    /// Median |error| of the predicted step over the steady samples, %.
    pub median_abs_error_pct: Option<f64>,
    /// What limits this server at the highest steady load the log shows, with the flags to try
    /// (`sim::doctor`).
    pub limits: Vec<sim::doctor::Limit>,
    /// vLLM's measured speculative acceptance (`SpecDecoding metrics` lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<MeasuredAcceptance>,
    /// What the log's own lines say against its `server_args` dump ([`log_notes`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The acceptance a vLLM log measured over its `SpecDecoding metrics` lines.
#[derive(serde::Serialize)]
pub struct MeasuredAcceptance {
    pub lines: usize,
    /// Tokens per request and step, the bonus token included (drafted-weighted).
    pub mean_acceptance_length: f64,
    /// Per draft position, the share accepted (drafted-weighted mean over the lines).
    pub per_position: Vec<f64>,
}

/// [`MeasuredAcceptance`] of a vLLM run; `None` without speculative lines.
fn vllm_acceptance(run: &ServerRun) -> Option<MeasuredAcceptance> {
    let mean = server_log::vllm::mean_acceptance_length(&run.spec_decode)?;
    let k = run.spec_decode.iter().map(|s| s.per_position.len()).max()?;
    let mut sums = vec![0.0; k];
    let mut weight = 0.0;
    for s in run.spec_decode.iter().filter(|s| s.per_position.len() == k) {
        let w = s.drafted_tokens as f64;
        weight += w;
        for (sum, r) in sums.iter_mut().zip(&s.per_position) {
            *sum += r * w;
        }
    }
    Some(MeasuredAcceptance {
        lines: run.spec_decode.len(),
        mean_acceptance_length: mean,
        per_position: sums.iter().map(|x| x / weight.max(1.0)).collect(),
    })
}

/// A decode sample and its prediction.
#[derive(serde::Serialize)]
pub struct SampleRow {
    #[serde(flatten)]
    pub sample: DecodeSample,
    /// From the reporting ranks (see [`ServerRun::is_reporting_rank`]).
    pub reporting: bool,
    pub predicted_step_ms: Option<f64>,
    pub error_pct: Option<f64>,
}

/// Steady samples of the reporting ranks grouped by `#running-req`: count, mean logged and
/// predicted step.
fn steady_summary(run: &LoggedRunReport) -> Table {
    let mut groups: std::collections::BTreeMap<u32, (usize, f64, f64, usize)> = Default::default();
    for r in run
        .samples
        .iter()
        .filter(|r| r.reporting && r.sample.steady)
    {
        let g = groups.entry(r.sample.running).or_default();
        g.0 += 1;
        g.1 += r.sample.step_s.unwrap_or(0.0) * 1e3;
        if let Some(p) = r.predicted_step_ms {
            g.2 += p;
            g.3 += 1;
        }
    }
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "running",
        "steady samples",
        "logged step ms",
        "predicted ms",
        "error",
    ]);
    for (running, (n, logged, predicted, np)) in groups {
        let logged = logged / n as f64;
        let predicted = (np > 0).then(|| predicted / np as f64);
        t.add_row(vec![
            running.to_string(),
            n.to_string(),
            format!("{logged:.1}"),
            predicted.map_or("-".into(), |p| format!("{p:.1}")),
            predicted.map_or("-".into(), |p| {
                format!("{:+.1}%", (p / logged - 1.0) * 100.0)
            }),
        ]);
    }
    t
}

fn check_run(setup: &Setup, run: &ServerRun, vllm_log: bool) -> LoggedRunReport {
    let prompt: u64 = run
        .prefill
        .iter()
        .map(|p| p.new_tokens + p.cached_tokens)
        .sum();
    let cached: u64 = run.prefill.iter().map(|p| p.cached_tokens).sum();
    let mut report = LoggedRunReport {
        index: run.index,
        first_line: run.first_line,
        model_path: logged_model(run),
        layout: run.layout().map(|l| l.short_name()),
        decode_samples: run.decode.len(),
        steady_samples: run.steady_samples().count(),
        flagged_samples: run.flagged_samples().count(),
        prefill_samples: run.prefill.len(),
        prefix_cache_hit_fraction: if prompt > 0 {
            cached as f64 / prompt as f64
        } else {
            0.0
        },
        memory_lines: run.memory.lines,
        memory_plan: None,
        memory: Vec::new(),
        error: None,
        samples: Vec::new(),
        median_abs_error_pct: None,
        limits: Vec::new(),
        acceptance: None,
        notes: Vec::new(),
    };
    let rows = |predict: &dyn Fn(&DecodeSample) -> Option<f64>| {
        run.decode
            .iter()
            .map(|s| {
                let predicted = predict(s);
                SampleRow {
                    sample: s.clone(),
                    reporting: run.is_reporting_rank(s),
                    predicted_step_ms: predicted.map(|p| p * 1e3),
                    error_pct: predicted.zip(s.step_s).map(|(p, m)| (p / m - 1.0) * 100.0),
                }
            })
            .collect::<Vec<_>>()
    };
    let Some(layout) = run.layout() else {
        report.error = Some(if run.vllm_args.is_some() {
            "its non-default args cannot be read as a vLLM launch: layout unknown".into()
        } else if vllm_log {
            "no `non-default args` line before these lines: layout unknown (pass the log from the vLLM server's start)".into()
        } else {
            "no ServerArgs dump before these lines: layout unknown".into()
        });
        report.samples = rows(&|_| None);
        return report;
    };
    let opts = match server_log::options::logged_options(&setup.opts, run, &layout, &setup.machine)
    {
        Ok((o, notes)) => {
            report.notes = notes;
            o
        }
        Err(e) => {
            report.error = Some(e);
            report.samples = rows(&|_| None);
            return report;
        }
    };
    report.acceptance = vllm_acceptance(run);
    if let Ok(fp) = footprint(&setup.spec, &layout) {
        let plan = memory::plan(&setup.spec, &fp, setup.machine.memory_bytes(), &opts);
        report.memory = check_memory(&plan, &run.memory);
        report.memory_plan = Some(plan);
    }
    match ServedModel::new(&setup.machine, &setup.spec, layout, &opts, setup.knobs) {
        Ok(model) => {
            report.samples = rows(&|s| (s.running > 0).then(|| predicted_step_s(&model, s)));
            let errors: Vec<f64> = report
                .samples
                .iter()
                .filter(|r| r.reporting && r.sample.steady)
                .filter_map(|r| r.error_pct.map(f64::abs))
                .collect();
            report.median_abs_error_pct = models::stats::median(&errors);
            let graphs = ServerOptions {
                disable_cuda_graph: false,
                ..opts.clone()
            };
            let graph_model =
                ServedModel::new(&setup.machine, &setup.spec, layout, &graphs, setup.knobs).ok();
            let reporting: Vec<_> = run
                .steady_samples()
                .filter(|s| run.is_reporting_rank(s))
                .collect();
            if let Some(mut load) = sim::doctor::Load::of(reporting.iter().copied()) {
                load = load.with_prompts(run.prefill.iter());
                load.pool_tokens = run
                    .memory
                    .pool
                    .as_ref()
                    .and_then(|p| p.max_total_num_tokens);
                // under PP every line is one micro-batch, so none is "steady": all of them
                let lines: Vec<_> = run
                    .decode
                    .iter()
                    .filter(|s| run.is_reporting_rank(s))
                    .collect();
                load.pp_split = sim::doctor::PpSplit::of(&lines, layout.pp);
                report.limits = sim::doctor::diagnose(
                    &model,
                    &opts,
                    graph_model.as_ref().map(|g| g as &dyn IterationModel),
                    load,
                );
            }
        }
        Err(e) => {
            report.error = Some(e.to_string());
            report.samples = rows(&|_| None);
        }
    }
    report
}

/// Reads the log and checks every run. Without `--model` (and no `--model-path` on a
/// `--server-args` line) the model is the log's own: the first run's `non-default args` model
/// (vLLM) or `model_path` (SGLang), resolved as a `--model` HF id is.
pub fn report(target: &TargetArgs, cal: &CalibrationArg, path: &Path) -> Result<ServerLogReport> {
    let log: ServerLog = server_log::load(path)?;
    let mut target = target.clone();
    if target.model.model.is_none() && !target.server.has_launch_line() {
        let logged = log.runs.iter().find_map(logged_model);
        let Some(id) = logged else {
            bail!(
                "{}: the log names no model (no `non-default args` / `server_args` line with one); give --model",
                path.display()
            );
        };
        models::ModelSpec::resolve(&id).with_context(|| {
            format!(
                "{}: the log's model {id}; give --model (a preset, or the checkpoint's HF folder)",
                path.display()
            )
        })?;
        target.model.model = Some(id);
    }
    checked(&Setup::new(&target, cal)?, log, path)
}

/// The model a run's launch arguments name.
fn logged_model(run: &ServerRun) -> Option<String> {
    match run.vllm_line() {
        Some(l) => l.model,
        None => run.server_args.as_ref()?.string(&MODEL_PATH),
    }
}

/// [`report`] with an already resolved setup (e.g. a fit's knobs).
pub fn report_with(setup: &Setup, path: &Path) -> Result<ServerLogReport> {
    checked(setup, server_log::load(path)?, path)
}

/// Every run of `log` checked under `setup`.
fn checked(setup: &Setup, log: ServerLog, path: &Path) -> Result<ServerLogReport> {
    let vllm_log = log.engine.is_some();
    let runs: Vec<LoggedRunReport> = log
        .runs
        .iter()
        .map(|r| check_run(setup, r, vllm_log))
        .collect();
    if let Some(first) = runs.iter().find_map(|r| r.error.as_ref())
        && runs.iter().all(|r| r.error.is_some())
    {
        bail!("{}: no run can be costed: {first}", path.display());
    }
    Ok(ServerLogReport {
        schema_version: SERVER_LOG_REPORT_SCHEMA_VERSION,
        engine: log.engine.unwrap_or_default(),
        source: log.source.clone(),
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        knobs: setup.knobs,
        lines: log.lines,
        skipped: log.skipped,
        runs,
    })
}

impl Export for ServerLogReport {
    type Json = ServerLogReport;
    const WHAT: &'static str = "--server-log";

    fn json(&self) -> &ServerLogReport {
        self
    }

    fn print_table(&self) -> Result<()> {
        print_tables(self)
    }
}

/// Prints the report as tables.
fn print_tables(r: &ServerLogReport) -> Result<()> {
    println!(
        "{}: {} lines, {} run(s); skipped {}",
        r.source,
        r.lines,
        r.runs.len(),
        r.skipped.summary()
    );
    for (reason, e) in &r.skipped.by_reason {
        if e.kind != "noise" {
            println!("  {reason}: {} (lines {:?})", e.count, e.example_lines);
        }
    }
    for run in &r.runs {
        print_run(run, r);
    }
    Ok(())
}

fn print_run(run: &LoggedRunReport, r: &ServerLogReport) {
    println!(
        "\nrun {} (line {}): {} as {} on {} ({}); {} decode samples ({} steady, {} flagged), {} prefill ({:.0}% of prompt tokens from the prefix cache), {} memory lines",
        run.index,
        run.first_line,
        run.model_path.as_deref().unwrap_or("model ?"),
        run.layout.as_deref().unwrap_or("layout ?"),
        r.machine,
        r.model,
        run.decode_samples,
        run.steady_samples,
        run.flagged_samples,
        run.prefill_samples,
        run.prefix_cache_hit_fraction * 100.0,
        run.memory_lines
    );
    if !run.memory.is_empty() {
        let mut t = crate::cli::tables::table();
        t.set_header(vec!["memory per GPU", "plan", "log", "error"]);
        for c in &run.memory {
            let fmt = |x: f64| match c.unit.as_str() {
                "GiB" => format!("{x:.2} GiB"),
                _ => format!("{x:.0}"),
            };
            t.add_row(vec![
                c.quantity.clone(),
                fmt(c.plan),
                fmt(c.logged),
                format!("{:+.1}%", c.error_pct),
            ]);
        }
        println!("{t}");
    }
    if let Some(notes) = run.memory_plan.as_ref().map(|p| &p.notes) {
        for n in notes {
            println!("note: {n}");
        }
    }
    for n in &run.notes {
        println!("note: {n}");
    }
    if let Some(e) = &run.error {
        println!("cannot cost this run: {e}");
    }
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "line",
        "rank",
        "running",
        "#token",
        "ctx/req",
        "graph",
        "gen tok/s",
        "step ms",
        "predicted",
        "error",
        "steady",
    ]);
    for row in &run.samples {
        let s = &row.sample;
        let why: Vec<String> = s.not_steady.iter().map(|u| u.to_string()).collect();
        t.add_row(vec![
            s.line.to_string(),
            format!("{}{}", s.rank, if row.reporting { "" } else { " (dup)" }),
            s.running.to_string(),
            s.tokens_in_kv.to_string(),
            format!("{:.0}", s.context_per_request),
            s.cuda_graph.map_or("-".into(), |g| g.to_string()),
            format!("{:.2}", s.gen_throughput_tok_s),
            s.step_s.map_or("-".into(), |x| format!("{:.1}", x * 1e3)),
            row.predicted_step_ms
                .map_or("-".into(), |x| format!("{x:.1}")),
            row.error_pct.map_or("-".into(), |e| format!("{e:+.1}%")),
            if s.steady {
                "yes".into()
            } else {
                why.join(", ")
            },
        ]);
    }
    println!("{t}");
    println!("{}", steady_summary(run));
    if let Some(m) = run.median_abs_error_pct {
        println!(
            "median |error| of the predicted step over {} steady samples: {m:.1}%",
            run.steady_samples
        );
    }
    if let Some(a) = &run.acceptance {
        let per: Vec<String> = a.per_position.iter().map(|r| format!("{r:.3}")).collect();
        println!(
            "speculative decoding measured over {} lines: mean acceptance length {:.2} (per draft position {})",
            a.lines,
            a.mean_acceptance_length,
            per.join(", ")
        );
    }
    if !run.limits.is_empty() {
        println!("what limits this server:");
    }
    for l in &run.limits {
        println!("  {}", l.finding);
        for f in &l.try_flags {
            println!("    try {f}");
        }
    }
}
