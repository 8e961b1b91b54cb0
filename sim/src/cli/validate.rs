//! `sim validate`: predicted vs measured, point by point (with or without a calibration), for
//! one layout's measured runs (`--measured`), a server's own log (`--server-log`), or the
//! scoreboard of a records file (`--records`, [`sim::scoreboard`]). Also the `--measured` flags
//! `sim calibrate` shares.

use super::args::{MachineArg, ModelArg, OutputFormat, ServerArgs, Target};
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
    /// output_tok_s,…) or `user-box.json#run-id`; repeatable.
    /// Required unless --server-log (or --records for `sim validate`); checked when loading.
    #[arg(long, value_name = "FILE[#RUN]")]
    pub measured: Vec<String>,
    /// SGLang's own server log (`launch_server` output): layout and options from its
    /// `server_args`, step-time samples from its `Decode batch` lines, memory from its start-up.
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
    #[arg(long, value_name = "N")]
    pub num_prompts: Option<u32>,
}

/// Everything measured that a command was given.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Client-side runs.
    pub points: Vec<MeasuredPoint>,
    /// Server decode rounds.
    pub rounds: Vec<sim::calibrate::StepRound>,
    /// The server's own `server_args`, if a log was given: the flags it ran with.
    pub sglang: Option<sim::sglang_args::SglangArgs>,
    /// The sources, for the calibration file.
    pub sources: Vec<String>,
}

impl MeasuredArgs {
    /// Runs, or a server log's rounds (its steady decode samples of the reporting ranks) with
    /// the layout and options its `server_args` state.
    pub fn load_all(&self, target: &super::args::Target) -> Result<Measured> {
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
        let pairs = &first
            .server_args
            .as_ref()
            .expect("runs with a layout have a dump")
            .pairs;
        let sglang = sim::sglang_args::from_pairs(pairs)
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
            sglang: Some(sglang),
            sources: vec![path.display().to_string()],
        })
    }

    /// Every readable point; skipped records are reported on stderr with a count.
    pub fn load(&self, max_context_tokens: u64) -> Result<Vec<MeasuredPoint>> {
        let hints = LengthHints {
            input_len: self.random_input_len,
            output_len: self.random_output_len,
        };
        let mut points = Vec::new();
        for spec in &self.measured {
            let set = bench_io::load(spec, hints)?;
            for w in &set.warnings {
                eprintln!("warning: {w}");
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

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A records file in the format of validation-dev/records.json: predict every record shardwise
    /// can express and print MAPE, median error and bias by model × metric family × concurrency
    /// band, the worst records, and why the others were not compared.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["machine", "model", "measured", "calibration"])]
    pub records: Option<PathBuf>,
    /// With --records: for every record whose only obstacle is speculative decoding (MTP on),
    /// the acceptance length that makes its prediction match, by series (one model, box and
    /// engine flags), with the series' spread and every record's error at the series' median.
    #[arg(long, requires = "records")]
    pub implied_accept_length: bool,
    /// With --implied-accept-length: the acceptance the engine measured per record (JSON:
    /// `{"schema_version": 1, "records": [{"id": …, "accept_length": L}` or `"acceptance_rate": r,
    /// "num_speculative_tokens": k}]}`); each such record is also predicted with its own length.
    /// A record's own `accept_length` metric counts too.
    #[arg(long, value_name = "FILE", requires = "implied_accept_length")]
    pub acceptance: Option<PathBuf>,
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
        if args.implied_accept_length {
            return super::validate_accept::run(path, args.acceptance.as_deref(), args.format);
        }
        return run_records(path, args.engine.map(Engine::from), args.format);
    }
    let table_or_json = match args.format {
        ValidateFormat::Json => OutputFormat::Json,
        ValidateFormat::Table => OutputFormat::Table,
        ValidateFormat::Csv | ValidateFormat::Markdown => bail!(
            "`sim validate --measured/--server-log` prints table or json; csv and markdown are for --records"
        ),
    };
    let Some(machine) = &args.machine else {
        bail!(
            "`sim validate` needs --records FILE, or --machine (with --model) and --measured FILE or --server-log FILE"
        );
    };
    let target = Target {
        machine: MachineArg {
            machine: machine.clone(),
        },
        model: ModelArg {
            model: args.model.clone(),
        },
        server: args.server.clone(),
    };
    if let Some(path) = &args.measured.server_log {
        let report = super::server_log_cmd::report(&target, &args.calibration, path)?;
        return super::server_log_cmd::print(&report, table_or_json);
    }
    if args.measured.measured.is_empty() {
        bail!(
            "--measured FILE is required: a bench_serving JSONL, its printed summary, a CSV or user-box.json#run-id (or --server-log, or --records)"
        );
    }
    let setup = Setup::new(&target, &args.calibration)?;
    let layout = setup.one_layout(&target.server, "validate")?;
    let points = args.measured.load(setup.spec.max_context_tokens)?;
    bench_io::checks::check_speed(
        &points,
        &setup.machine,
        &setup.spec,
        &setup.opts_for(layout),
    )?;
    let model = setup.model(layout, setup.knobs)?;
    let rows = compare(&model, &setup.opts, &points)?;
    let rms = rms_log_error(&rows);
    match table_or_json {
        OutputFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&ValidateOutput {
                schema_version: 1,
                layout: layout.short_name(),
                knobs: setup.knobs,
                rms_log_error: rms,
                points: &rows,
            })?
        ),
        _ => {
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
    let mut t = crate::cli::tables::table();
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
