//! `sim validate`: predicted vs measured, point by point (with or without a calibration), for
//! one layout's measured runs (`--measured`), or the scoreboard of a records file (`--records`,
//! [`sim::scoreboard`]). Also the `--measured` flags `sim calibrate` shares.

use super::args::{MachineArg, ModelArg, ServerArgs, Target};
use super::run::{CalibrationArg, Setup};
use super::scoreboard;
use anyhow::{Context, Result, bail};
use comfy_table::Table;
use sim::bench_io::{self, LengthHints, MeasuredPoint};
use sim::calibrate::{Comparison, compare, rms_log_error};
use sim::engine::Engine;
use sim::records::RecordSet;
use sim::scoreboard::{ScoreOptions, score};
use std::path::PathBuf;

/// Where measured runs come from, and lengths to assume where they were not recorded.
#[derive(clap::Args, Debug, Clone)]
pub struct MeasuredArgs {
    /// bench_serving JSONL, its printed summary, a CSV (concurrency,input_len,output_len,
    /// output_tok_s,…) or `user-box.json#run-id`; repeatable; required (checked in `load`, so
    /// that `sim validate --records` can go without).
    #[arg(long, value_name = "FILE[#RUN]")]
    pub measured: Vec<String>,
    /// Prompt length to assume where the measurement did not record it.
    #[arg(long, value_name = "TOKENS")]
    pub random_input_len: Option<u32>,
    /// Output length to assume where the measurement did not record it.
    #[arg(long, value_name = "TOKENS")]
    pub random_output_len: Option<u32>,
    /// Requests to simulate per point where the measurement did not record it (default 4 ×
    /// concurrency).
    #[arg(long, value_name = "N")]
    pub num_prompts: Option<u32>,
}

impl MeasuredArgs {
    /// Every readable point; skipped records are reported on stderr with a count.
    pub fn load(&self, max_context_tokens: u64) -> Result<Vec<MeasuredPoint>> {
        if self.measured.is_empty() {
            bail!(
                "--measured FILE is required: a bench_serving JSONL, its printed summary, a CSV or user-box.json#run-id"
            );
        }
        let hints = LengthHints {
            input_len: self.random_input_len,
            output_len: self.random_output_len,
        };
        let mut points = Vec::new();
        for spec in &self.measured {
            let set = bench_io::load(spec, hints)?;
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

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A records file in the format of validation-dev/records.json: predict every record shardwise
    /// can express and print MAPE, median error and bias by model × metric family × concurrency
    /// band, the worst records, and why the others were not compared.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["machine", "model", "measured", "calibration"])]
    pub records: Option<PathBuf>,
    /// With --records: simulate every record as this engine would run it (default: each record's
    /// own engine).
    #[arg(long, value_enum, requires = "records")]
    pub engine: Option<EngineArg>,
    // `--measured` mode's machine and model, spelled out here (not the shared required groups) so
    // that `--records` needs neither
    /// Machine preset name or a profile JSON path written by `probe run` (with --measured).
    #[arg(long, value_name = "PRESET|PROFILE.json")]
    pub machine: Option<String>,
    /// Model preset, a HF folder or a config.json path (with --measured).
    #[arg(long, value_name = "PRESET|DIR|CONFIG.json")]
    pub model: Option<String>,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub measured: MeasuredArgs,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    /// Output format (markdown and csv: --records only).
    #[arg(long, value_enum, default_value_t = ValidateFormat::Table)]
    pub format: ValidateFormat,
}

/// `--engine` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    Sglang,
    Vllm,
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Engine {
        match e {
            EngineArg::Sglang => Engine::Sglang,
            EngineArg::Vllm => Engine::Vllm,
        }
    }
}

/// `sim validate --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ValidateFormat {
    /// Terminal tables.
    #[default]
    Table,
    /// JSON (schema-versioned).
    Json,
    /// GitHub markdown: the scoreboard's summary tables (--records).
    Markdown,
    /// One row per compared figure (--records).
    Csv,
}

/// `sim validate --format json` output.
#[derive(serde::Serialize)]
struct ValidateOutput<'a> {
    schema_version: u32,
    layout: String,
    knobs: sim::cost::Knobs,
    rms_log_error: f64,
    points: &'a [Comparison],
}

pub fn run(args: Args) -> Result<()> {
    if let Some(path) = &args.records {
        return run_records(path, args.engine.map(Engine::from), args.format);
    }
    let measured = &args.measured;
    let (Some(machine), Some(model), false) =
        (&args.machine, &args.model, measured.measured.is_empty())
    else {
        bail!(
            "`sim validate` needs --records FILE, or --machine, --model and --measured FILE for one layout"
        );
    };
    let target = Target {
        machine: MachineArg {
            machine: machine.clone(),
        },
        model: ModelArg {
            model: model.clone(),
        },
        server: args.server.clone(),
    };
    let setup = Setup::new(&target, &args.calibration)?;
    let layout = setup.one_layout(&target.server, "validate")?;
    let points = measured.load(setup.spec.max_context_tokens)?;
    let model = setup.model(layout, setup.knobs)?;
    let rows = compare(&model, &setup.opts, &points)?;
    let rms = rms_log_error(&rows);
    match args.format {
        ValidateFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&ValidateOutput {
                schema_version: 1,
                layout: layout.short_name(),
                knobs: setup.knobs,
                rms_log_error: rms,
                points: &rows,
            })?
        ),
        ValidateFormat::Csv | ValidateFormat::Markdown => {
            bail!(
                "`sim validate --measured` prints table or json; csv and markdown are for --records"
            )
        }
        ValidateFormat::Table => {
            println!("{}", comparison_table(&rows));
            println!(
                "{} on {}, {}: RMS of ln(predicted/measured) = {rms:.3} over {} values",
                setup.spec.name,
                setup.machine.name(),
                layout.short_name(),
                rows.len()
            );
        }
    }
    Ok(())
}

/// `sim validate --records FILE`.
fn run_records(
    path: &std::path::Path,
    engine: Option<Engine>,
    format: ValidateFormat,
) -> Result<()> {
    let set = RecordSet::load(path)?;
    let board = score(&set, &ScoreOptions { engine });
    match format {
        ValidateFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&board).context("writing the scoreboard as JSON")?
        ),
        ValidateFormat::Markdown => print!("{}", sim::scoreboard::text::markdown(&board)),
        ValidateFormat::Csv => print!("{}", sim::scoreboard::text::csv(&board)),
        ValidateFormat::Table => scoreboard::print_table(&board),
    }
    Ok(())
}

/// Predicted vs measured, one row per metric of each point.
pub fn comparison_table(rows: &[Comparison]) -> Table {
    let mut t = Table::new();
    t.set_header(vec![
        "source",
        "conc",
        "in/out",
        "metric",
        "predicted",
        "measured",
        "error",
    ]);
    for c in rows {
        t.add_row(vec![
            c.source.clone(),
            c.max_concurrency.map_or("-".into(), |x| x.to_string()),
            format!("{}/{}", c.random_input_len, c.random_output_len),
            c.metric.clone(),
            format!("{:.2}", c.predicted),
            format!("{:.2}", c.measured),
            format!("{:+.1}%", c.error_pct),
        ]);
    }
    t
}
