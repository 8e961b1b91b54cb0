//! `sim calibrate`: fit the physical knobs to measured runs or a server's own log, say what the
//! measurements pinned, and write a file that `--calibration` applies to any layout.

use super::args::{FormatArg, OutputFormat, TargetArgs};
use super::export::{Export, Format, export};
use super::measured_args::MeasuredArgs;
use super::setup::{CalibrationArg, Setup};
use super::workload_args::BenchCompatArgs;
use anyhow::{Result, bail};
use comfy_table::Table;
use sim::calibrate::{Calibration, CalibrationFit, KnobParam, Observations};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub measured: MeasuredArgs,
    /// bench_serving flags of a pasted bench_serving line (recorded: --measured has the runs).
    #[command(flatten)]
    pub bench: BenchCompatArgs,
    /// Knobs free to fit (the others keep their defaults or the starting calibration's values).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = KnobParam::ALL)]
    pub fit: Vec<KnobParam>,
    /// Keep the server-log rounds with these running requests out of the fit and only predict
    /// them (e.g. `--hold-out-running 64,128`): an honest check of the fit.
    #[arg(long, value_delimiter = ',', value_name = "N,…")]
    pub hold_out_running: Vec<u32>,
    /// Start from this calibration instead of the defaults.
    #[command(flatten)]
    pub start: CalibrationArg,
    /// Where to write the fitted calibration (JSON).
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,
    #[command(flatten)]
    pub format: FormatArg,
}

pub fn run(args: Args) -> Result<()> {
    if let Some(dir) = args.output.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        bail!(
            "--output {}: folder {} does not exist; create it first",
            args.output.display(),
            dir.display()
        );
    }
    let target = args.measured.with_recorded_flags(&args.target)?;
    let measured = args.measured.load_all(&target)?;
    let mut setup = Setup::with_logged(&target, &args.start, measured.launch.as_ref())?;
    let layout = setup.one_layout(&target.server, "calibrate")?;
    let obs = Observations {
        rounds: measured.rounds.clone(),
        runs: measured.points.clone(),
        hold_out_running: args.hold_out_running.clone(),
    };
    let spinner = indicatif::ProgressBar::new_spinner().with_message(format!(
        "fitting {} knob(s) to {} server round(s) and {} run(s)",
        args.fit.len(),
        obs.rounds.len(),
        obs.runs.len()
    ));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let fitted = setup.calibrate_to(layout, &obs, &args.fit, measured.sources.clone());
    spinner.finish_and_clear();
    let (cal, result) = fitted?;
    cal.save(&args.output)?;
    let server_log = match (&args.measured.server_log, args.format.format) {
        (Some(path), OutputFormat::Table) => {
            // every sample the fit used, and the memory plan beside the log, with the fitted knobs
            setup.knobs = cal.knobs;
            Some(super::server_log_cmd::report_with(&setup, path)?)
        }
        _ => None,
    };
    setup.print_notes_for(layout);
    super::bench_out::print_bench_flags(&args.bench.not_modelled());
    let shown = CalibrationShown {
        cal: &cal,
        fit: &result,
        output: &args.output,
        server_log,
    };
    export(args.format.format, &shown)
}

/// The calibration with what its tables show beside it: the fit, where the file went, and the
/// server log's samples with the fitted knobs.
struct CalibrationShown<'a> {
    cal: &'a Calibration,
    fit: &'a CalibrationFit,
    output: &'a std::path::Path,
    server_log: Option<super::server_log_cmd::ServerLogReport>,
}

impl Export for CalibrationShown<'_> {
    type Json = Calibration;
    const WHAT: &'static str = "`sim calibrate`";

    fn json(&self) -> &Calibration {
        self.cal
    }

    fn print_table(&self) -> Result<()> {
        if let Some(report) = &self.server_log {
            export(Format::Table, report)?;
            println!();
        }
        print_tables(self.cal, self.fit, self.output);
        Ok(())
    }
}

fn print_tables(cal: &Calibration, result: &CalibrationFit, output: &std::path::Path) {
    println!(
        "fitted {} on {} ({} evaluations); written to {}",
        cal.layout,
        cal.machine,
        result.outcome.evaluations,
        output.display()
    );
    let mut knobs = crate::cli::tables::table();
    knobs.set_header(["knob", "value", "bounds", "pinned?", "pinned by", "meaning"]);
    for r in &cal.knob_reports {
        let status = match (r.fitted, r.pinned) {
            (false, _) => "not fitted".to_string(),
            (true, true) if r.at_bound => "pinned, at a bound".to_string(),
            (true, true) => format!("pinned (data/prior info {:.0}×)", r.information_ratio),
            (true, false) => format!(
                "stayed at prior (data/prior info {:.2}×)",
                r.information_ratio
            ),
        };
        let by = match r.pinned_by.len() {
            0 => "—".to_string(),
            1..=3 => r.pinned_by.join("; "),
            n => format!("{}; … ({n} observations)", r.pinned_by[..2].join("; ")),
        };
        knobs.add_row([
            format!("{:?}", r.knob).to_lowercase(),
            format!("×{:.3}", r.value),
            format!("[{:.2}, {:.2}]", r.bounds.0, r.bounds.1),
            status,
            by,
            r.meaning.clone(),
        ]);
    }
    println!("{knobs}");
    println!("{}", observation_table(&cal.observations));
    println!(
        "RMS of ln(predicted/measured) over fitted observations: {:.3} before, {:.3} after; median |error| {:.1}%",
        cal.rms_log_error_before, cal.rms_log_error_after, cal.median_abs_error_pct
    );
}

/// Every observation before and after the fit, with its leave-one-out error.
pub fn observation_table(rows: &[sim::calibrate::ObservationFit]) -> Table {
    let mut t = crate::cli::tables::table();
    t.set_header([
        "observation",
        "measured",
        "before",
        "after",
        "error",
        "leave-one-out",
    ]);
    for o in rows {
        let unit_ms = o.label.starts_with("server log");
        let v = |x: f64| {
            if unit_ms {
                format!("{:.1} ms", x * 1e3)
            } else {
                format!("{x:.1}")
            }
        };
        t.add_row([
            if o.held_out {
                format!("{} [held out]", o.label)
            } else {
                o.label.clone()
            },
            v(o.measured),
            v(o.predicted_before),
            v(o.predicted_after),
            format!("{:+.1}%", o.error_pct),
            o.leave_one_out_error_pct
                .map_or_else(|| "—".to_string(), |e| format!("{e:+.1}%")),
        ]);
    }
    t
}
