//! `sim calibrate`: fit knobs to measured runs of one layout and write them to a file that
//! `--calibration` applies to any layout.

use super::args::{FormatArg, OutputFormat, Target};
use super::run::{CalibrationArg, Setup};
use super::validate::{MeasuredArgs, comparison_table};
use super::workload_args::BenchCompatArgs;
use anyhow::{Result, bail};
use sim::calibrate::{CALIBRATION_SCHEMA_VERSION, Calibration, KnobParam, compare, fit};
use sim::cost::IterationModel;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub measured: MeasuredArgs,
    /// bench_serving flags of a pasted bench_serving line (recorded: --measured has the runs).
    #[command(flatten)]
    pub bench: BenchCompatArgs,
    /// Knobs to fit (the others keep their defaults or the starting calibration's values).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = KnobParam::ALL)]
    pub fit: Vec<KnobParam>,
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
    let setup = Setup::new(&args.target, &args.start)?;
    let layout = setup.one_layout(&args.target.server, "calibrate")?;
    let points = args.measured.load(setup.max_context_tokens())?;
    // Fail early, with the cost model's own message, on a layout that cannot run.
    setup.model(layout, setup.knobs)?;
    let spinner = indicatif::ProgressBar::new_spinner().with_message(format!(
        "fitting {} knob(s) to {} point(s)",
        args.fit.len(),
        points.len()
    ));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let build = |k| {
        setup
            .model(layout, k)
            .map(|m| Box::new(m) as Box<dyn IterationModel>)
    };
    let result = fit(build, &setup.opts, &points, &args.fit, setup.knobs)?;
    spinner.finish_and_clear();
    let cal = Calibration {
        schema_version: CALIBRATION_SCHEMA_VERSION,
        knobs: result.knobs,
        fitted: args.fit.clone(),
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        layout: layout.short_name(),
        server: setup.opts.clone(),
        measured: points.iter().map(|p| p.source.clone()).collect(),
        rms_log_error_before: result.rms_before,
        rms_log_error_after: result.rms_after,
    };
    cal.save(&args.output)?;
    let fitted = setup.model(layout, result.knobs)?;
    let rows = compare(&fitted, &setup.opts, &points)?;
    setup.print_notes();
    super::run::print_bench_flags(&args.bench.not_modelled());
    match args.format.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&cal)?),
        _ => {
            let k = result.knobs;
            println!(
                "fitted {} on {} ({} evaluations): compute ×{:.3}, memory ×{:.3}, comm ×{:.3}, overhead {:.2} ms/iteration, cpu ×{:.3}",
                layout.short_name(),
                setup.machine.name(),
                result.evaluations,
                k.compute_scale,
                k.memory_scale,
                k.comm_time_scale,
                k.iteration_overhead_s * 1e3,
                k.cpu_scale
            );
            println!(
                "RMS of ln(predicted/measured): {:.3} before, {:.3} after; written to {}",
                result.rms_before,
                result.rms_after,
                args.output.display()
            );
            println!("{}", comparison_table(&rows));
        }
    }
    Ok(())
}
