//! `sim validate --server-log FILE` and `sim calibrate --server-log FILE`: the server's own log
//! read with `sim::server_log` and checked by `sim::log_check` (each run's memory plan beside
//! the logged figures, each decode sample's logged step time beside the cost model's
//! prediction); this file resolves the model and prints.
//!
//! The layout and the memory-relevant options come from each run's launch arguments
//! ([`sim::engine::ServingEngine::logged_options`]); the machine and the model from `--machine` / `--model`.

use super::args::TargetArgs;
use super::export::Export;
use super::setup::{CalibrationArg, Setup};
use crate::cli::tables::{wrap, wrap_hanging};
use anyhow::{Context, Result, bail};
use comfy_table::Table;
pub use sim::log_check::{LoggedRunReport, ServerLogReport};
use sim::log_check::{check_log, logged_model};
use sim::server_log::{self, ServerLog};
use std::path::Path;

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

/// Every run of `log` checked under `setup` ([`check_log`]), a failure naming the file.
fn checked(setup: &Setup, log: ServerLog, path: &Path) -> Result<ServerLogReport> {
    check_log(setup, &log).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// [`report`] with an already resolved setup (e.g. a fit's knobs).
pub fn report_with(setup: &Setup, path: &Path) -> Result<ServerLogReport> {
    checked(setup, server_log::load(path)?, path)
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
    let head = format!(
        "run {} (line {}): {} as {} on {} ({}); {} decode samples ({} steady, {} flagged), {} prefill ({:.0}% of prompt tokens from the prefix cache), {} memory lines",
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
    println!("\n{}", wrap("", &head));
    if !run.memory.is_empty() {
        println!("{}", memory_table(run));
    }
    if let Some(notes) = run.memory_plan.as_ref().map(|p| &p.notes) {
        for n in notes {
            println!("{}", wrap("note: ", n));
        }
    }
    for n in &run.notes {
        println!("{}", wrap("note: ", n));
    }
    if let Some(e) = &run.error {
        println!("{}", wrap("cannot cost this run: ", &e.to_string()));
    }
    println!("{}", samples_table(run));
    println!("{}", steady_summary(run));
    if let Some(m) = run.median_abs_error_pct {
        println!(
            "median |error| of the predicted step over {} steady samples: {m:.1}%",
            run.steady_samples
        );
    }
    if let Some(a) = &run.acceptance {
        let per: Vec<String> = a.per_position.iter().map(|r| format!("{r:.3}")).collect();
        let measured = format!(
            "speculative decoding measured over {} lines: mean acceptance length {:.2} (per draft position {})",
            a.lines,
            a.mean_acceptance_length,
            per.join(", ")
        );
        println!("{}", wrap("", &measured));
    }
    if !run.limits.is_empty() {
        println!("what limits this server:");
    }
    for l in &run.limits {
        println!("{}", wrap_hanging("  ", "    ", &l.finding));
        for f in &l.try_flags {
            println!("    try {f}");
        }
    }
}

/// The memory plan beside the log's own memory lines.
fn memory_table(run: &LoggedRunReport) -> comfy_table::Table {
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
    t
}

/// Every decode sample: what the log says, the predicted step and why a sample is not steady.
fn samples_table(run: &LoggedRunReport) -> comfy_table::Table {
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
    t
}
