//! `sim validate`: predicted vs measured, point by point (with or without a calibration), for
//! one layout's measured runs (`--measured`), a server's own log (`--server-log`), or the
//! scoreboard of a records file (`--records`, [`sim::scoreboard`]).

use super::args::{
    EngineArg, MachineArg, ModelArg, OutputFormat, ServerArgs, TargetArgs, ValidateFormat,
};
use super::export::{Export, export};
use super::measured_args::MeasuredArgs;
use super::scoreboard;
use super::setup::{CalibrationArg, Setup};
use anyhow::{Result, bail};
use comfy_table::Table;
use sim::calibrate::PointComparison;
use sim::engine::Engine;
use sim::records::RecordSet;
use sim::scenario::Validation;
use sim::scoreboard::{ScoreOptions, Scoreboard, score_with};
use std::path::PathBuf;

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
    /// A record's own `accept_length` metric counts too. With --records alone: the MTP-on records
    /// it names are scored with their measured length (the rest with the draft kind's default).
    /// `{"id": …, "accept_length_range": [lo, hi]}`: the source published only the range its runs
    /// spanned; the record is predicted at its middle. Repeat the flag for several files.
    #[arg(long, value_name = "FILE", requires = "records")]
    pub acceptance: Vec<PathBuf>,
    /// With --records: fit the error model (80% intervals by regime, leave one source out) on this
    /// file's headline residuals and write it to OUT.json (`validation/error-model.json` is the
    /// stored one, fitted on validation/public-records.json; never fit it on the held-out
    /// validation/further-records.json).
    #[arg(long, value_name = "OUT.json", requires = "records")]
    pub fit_error_model: Option<PathBuf>,
    /// With --fit-error-model: a records file the cost model was never tuned on, scored as it
    /// is (no acceptance file); its sources' spread is what a new source's offset is taken to
    /// be where it is wider than the dev set's own (`validation/glm52-records.json`,
    /// `validation/spec-records.json`, `validation/new-sources-records.json`,
    /// `validation/first-contact-2-records.json`, `validation/first-contact-3-records.json`).
    /// Repeat for several. Never further-records.json.
    #[arg(long, value_name = "FILE", requires = "fit_error_model")]
    pub first_contact: Vec<PathBuf>,
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

pub fn run(args: Args) -> Result<()> {
    if let Some(path) = &args.records {
        if args.implied_accept_length {
            return super::validate_accept::run(path, &args.acceptance, args.format);
        }
        return run_records(
            path,
            &args.acceptance,
            args.engine.map(Engine::from),
            args.format,
            args.fit_error_model
                .as_deref()
                .map(|out| (out, args.first_contact.as_slice())),
        );
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
    let target = TargetArgs {
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
        return export(table_or_json, &report);
    }
    if args.measured.measured.is_empty() {
        bail!(
            "--measured FILE is required: a bench_serving JSONL, its printed summary, a CSV or user-box.json#run-id (or --server-log, or --records)"
        );
    }
    let target = args.measured.with_recorded_flags(&target)?;
    let setup = Setup::new(&target, &args.calibration)?;
    let layout = setup.one_layout(&target.server, "validate")?;
    let points = args.measured.load(setup.spec.max_context_tokens)?;
    let shown = ValidationShown {
        out: setup.validate_against(layout, &points)?,
        model: &setup.spec.name,
        machine: setup.machine.name(),
    };
    export(table_or_json, &shown)
}

/// The comparison with the names its summary line gives.
struct ValidationShown<'a> {
    out: Validation,
    model: &'a str,
    machine: &'a str,
}

impl<'a> Export for ValidationShown<'a> {
    type Json = Validation;
    const WHAT: &'static str = "`sim validate --measured`";

    fn json(&self) -> &Validation {
        &self.out
    }

    fn print_table(&self) -> Result<()> {
        let o = &self.out;
        println!("{}", comparison_table(&o.points));
        println!(
            "{} on {}, {}: RMS of ln(predicted/measured) = {:.3} over {} values",
            self.model,
            self.machine,
            o.layout,
            o.rms_log_error,
            o.points.len()
        );
        Ok(())
    }
}

/// `sim validate --records FILE`.
fn run_records(
    path: &std::path::Path,
    acceptance: &[PathBuf],
    engine: Option<Engine>,
    format: ValidateFormat,
    fit_out: Option<(&std::path::Path, &[PathBuf])>,
) -> Result<()> {
    // the held-out files must never shape the intervals they are the check of
    let held_out = [
        "further-records.json",
        "glm52-records.json",
        "spec-records.json",
        "new-sources-records.json",
    ];
    if fit_out.is_some() && held_out.iter().any(|h| path.ends_with(h)) {
        bail!(
            "--fit-error-model on {}: that file is held out, the error model is never fitted on it; fit on validation/public-records.json",
            path.display()
        );
    }
    let set = RecordSet::load(path)?;
    let measured = sim::records::acceptance::MeasuredAcceptance::load_all(acceptance)?;
    if let Some(w) = measured.unmatched_warning(&set) {
        eprintln!("{}", crate::cli::tables::wrap("warning: ", &w));
    }
    let board = score_with(&set, &ScoreOptions { engine }, &measured);
    if let Some((out, first)) = fit_out {
        if let Some(f) = first.iter().find(|f| f.ends_with("further-records.json")) {
            bail!(
                "--first-contact {}: that file is the held-out check of the intervals, never fitted; name files the cost model was not tuned on (glm52-records.json, spec-records.json, new-sources-records.json, first-contact-2-records.json, first-contact-3-records.json)",
                f.display()
            );
        }
        let first = first_contact_sets(first)?;
        write_error_model(path, acceptance, &board, out, &first)?;
    }
    export(format, &board)
}

/// `--first-contact FILE…`: each file as the error model's first contact.
fn first_contact_sets(
    files: &[PathBuf],
) -> Result<Vec<sim::uncertainty::error_fit::FirstContactSet>> {
    files
        .iter()
        .map(|f| {
            let set = RecordSet::load(f)?;
            Ok(sim::scoreboard::first_contact_set(
                &set,
                &f.display().to_string(),
            ))
        })
        .collect()
}

/// `--fit-error-model OUT.json`: the error model of this file's headline residuals, paths as
/// given (relative to the repository root when run there, as the stored table's provenance is).
fn write_error_model(
    path: &std::path::Path,
    acceptance: &[PathBuf],
    board: &Scoreboard,
    out: &std::path::Path,
    first: &[sim::uncertainty::error_fit::FirstContactSet],
) -> Result<()> {
    let rs = sim::scoreboard::headline_residuals(board);
    if rs.is_empty() {
        bail!(
            "{}: no record compared, nothing to fit the error model on",
            path.display()
        );
    }
    let acc: Vec<String> = acceptance.iter().map(|a| a.display().to_string()).collect();
    let m = sim::uncertainty::error_fit::fit_with_first_token(
        &rs,
        &path.display().to_string(),
        &acc,
        first,
        &sim::scoreboard::first_token_residuals(board),
    );
    let text = serde_json::to_string_pretty(&m)? + "\n";
    std::fs::write(out, text)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    eprintln!(
        "error model: {} residuals from {} sources, {} cells; leave one source out: coverage {:.1}%, median half-width {:.1}%; written to {}",
        m.provenance.residuals,
        m.provenance.sources.len(),
        m.cells.len(),
        m.loso.coverage_pct,
        m.loso.median_half_width_pct,
        out.display()
    );
    Ok(())
}

impl Export for Scoreboard {
    type Json = Scoreboard;
    const WHAT: &'static str = "`sim validate --records`";

    fn json(&self) -> &Scoreboard {
        self
    }

    fn print_table(&self) -> Result<()> {
        scoreboard::print_table(self);
        Ok(())
    }

    fn csv(&self) -> Option<String> {
        Some(sim::scoreboard::text::csv(self))
    }

    fn markdown(&self) -> Option<String> {
        Some(sim::scoreboard::text::markdown(self))
    }
}

/// Predicted vs measured, one row per metric of each point.
pub fn comparison_table(rows: &[PointComparison]) -> Table {
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
