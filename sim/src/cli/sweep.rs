//! `sim sweep`: every layout × concurrency × workload, in parallel, as a table, CSV or JSON.

use super::args::{CsvFormatArg, TargetArgs};
use super::bench_out::{print_bench_flags, write_bench_line};
use super::export::{Export, export};
use super::layouts::{idle_note, layouts};
use super::setup::{CalibrationArg, Setup};
use super::workload_args::WorkloadArgs;
use anyhow::{Context, Result, bail};
use comfy_table::Table;
use sim::sweep::{DEFAULT_CONCURRENCIES, SweepRow, sweep};
use sim::uncertainty::{ErrorModel, FigureRange, with_range};
use sim::workload::Workload;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Extra workloads as INPUT:OUTPUT token lengths, comma-separated (e.g. 1024:1024,128:2048);
    /// they replace --random-input-len/--random-output-len.
    #[arg(long, value_delimiter = ',', value_name = "IN:OUT")]
    pub workloads: Vec<String>,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    #[command(flatten)]
    pub format: CsvFormatArg,
}

fn workloads(args: &Args, max_context: u64) -> Result<Vec<Workload>> {
    let base = args.workload.workloads(max_context)?.remove(0);
    if args.workloads.is_empty() {
        return Ok(vec![base]);
    }
    args.workloads
        .iter()
        .map(|s| {
            let (i, o) = s.split_once(':').with_context(|| {
                format!("--workloads `{s}`: expected INPUT:OUTPUT, e.g. 1024:1024")
            })?;
            let w = Workload {
                random_input_len: i
                    .trim()
                    .parse()
                    .with_context(|| format!("--workloads `{s}`"))?,
                random_output_len: o
                    .trim()
                    .parse()
                    .with_context(|| format!("--workloads `{s}`"))?,
                ..base.clone()
            };
            w.validate(max_context)?;
            Ok(w)
        })
        .collect()
}

pub fn run(args: Args) -> Result<()> {
    args.workload.bench.check_output_file()?;
    let mut setup = Setup::new(&args.target, &args.calibration)?;
    let wls = workloads(&args, setup.max_context_tokens())?;
    // one dataset for every workload of a sweep: the acceptance prior's prompt kind
    if let Some(w) = wls.first() {
        setup.set_prompt_kind(args.workload.prompt_kind(w));
    }
    let concs: Vec<u32> = if args.workload.max_concurrency.is_empty() {
        DEFAULT_CONCURRENCIES.to_vec()
    } else {
        args.workload.max_concurrency.clone()
    };
    let ls = layouts(&setup, &args.target.server)?;
    let bar = indicatif::ProgressBar::new((ls.len() * wls.len() * concs.len()) as u64);
    let mut rows = sweep(&ls, &setup.opts, &wls, &concs, &|| bar.inc(1));
    bar.finish_and_clear();
    if let Some(path) = &args.workload.bench.output_file {
        for r in &rows {
            let (Some(run), Some(l)) = (
                &r.run,
                ls.iter().find(|l| l.layout.short_name() == r.layout),
            ) else {
                continue;
            };
            let w = wls
                .iter()
                .find(|w| {
                    (w.random_input_len, w.random_output_len)
                        == (r.random_input_len, r.random_output_len)
                })
                .map(|w| Workload {
                    max_concurrency: r.max_concurrency,
                    ..w.clone()
                })
                .expect("every row comes from one of the workloads");
            write_bench_line(path, &setup, &args.workload, run, &w, l.layout)?;
        }
    }
    setup.label_rows(&ls, rows.iter_mut().map(|r| (&mut r.layout, &mut r.flags)));
    if rows.iter().all(|r| r.run.is_none()) {
        let why = rows
            .first()
            .and_then(|r| r.rejected.clone())
            .unwrap_or_default();
        bail!("no layout could be simulated (first reason: {why})");
    }
    setup.print_notes();
    print_bench_flags(&args.workload.not_modelled());
    let errors = ErrorModel::builtin();
    let ranged: Vec<RangedRow> = rows
        .into_iter()
        .map(|row| {
            let layout = ls
                .iter()
                .find(|l| setup.ranked_label(l.layout).0 == row.layout)
                .map(|l| l.layout);
            let ranges = row.run.as_ref().map_or_else(Vec::new, |run| {
                let regime = setup.regime(
                    &setup.opts,
                    layout,
                    sim::uncertainty::Load {
                        family: "bench_serving",
                        concurrency: row.max_concurrency.unwrap_or(u32::MAX),
                        context_tokens: row.random_input_len,
                    },
                );
                errors.figure_ranges(&regime, &sim::uncertainty::run_figures(run))
            });
            RangedRow { row, ranges }
        })
        .collect();
    let out = SweepOutput {
        schema_version: sim::sweep::SWEEP_SCHEMA_VERSION,
        engine: setup.opts.engine,
        rows: ranged,
    };
    export(args.format.format, &out)
}

/// A sweep row with an 80% interval on each throughput and latency figure.
#[derive(serde::Serialize)]
pub struct RangedRow {
    #[serde(flatten)]
    row: SweepRow,
    /// `validation/error-model.json`'s interval of each figure (none for a rejected layout).
    ranges: Vec<FigureRange>,
}

impl RangedRow {
    /// The figure `key` with its range, or alone.
    fn cell(&self, key: &str, value: f64, decimals: usize) -> String {
        self.ranges.iter().find(|r| r.figure == key).map_or_else(
            || format!("{value:.decimals$}"),
            |r| with_range(value, r.range, decimals),
        )
    }
}

/// `sim sweep --format json`: the rows with the schema and the engine every layout was
/// simulated as.
#[derive(serde::Serialize)]
pub struct SweepOutput {
    /// Always [`sim::sweep::SWEEP_SCHEMA_VERSION`].
    schema_version: u32,
    /// The engine whose behaviour was simulated (the launch's, or `--engine`'s).
    engine: sim::engine::Engine,
    rows: Vec<RangedRow>,
}

impl Export for SweepOutput {
    type Json = SweepOutput;
    const WHAT: &'static str = "`sim sweep`";

    fn json(&self) -> &SweepOutput {
        self
    }

    fn print_table(&self) -> Result<()> {
        let (t, notes) = table(&self.rows);
        println!("{t}");
        print!("{}", notes.render());
        Ok(())
    }

    fn csv(&self) -> Option<String> {
        Some(csv(&self.rows))
    }
}

const CSV_HEADER: &str = "layout,flags,max_concurrency,random_input_len,random_output_len,output_throughput,total_throughput,request_throughput,mean_ttft_ms,median_ttft_ms,p99_ttft_ms,mean_tpot_ms,median_tpot_ms,p99_tpot_ms,mean_itl_ms,peak_running_requests,peak_kv_usage,rejected";

fn csv(rows: &[RangedRow]) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in rows.iter().map(|r| &r.row) {
        let c = r.max_concurrency.map_or(String::new(), |c| c.to_string());
        let metrics = match &r.run {
            Some(x) => format!(
                "{:.3},{:.3},{:.4},{:.2},{:.2},{:.2},{:.3},{:.3},{:.3},{:.3},{},{:.4},",
                x.output_throughput,
                x.total_throughput,
                x.request_throughput,
                x.mean_ttft_ms,
                x.median_ttft_ms,
                x.p99_ttft_ms,
                x.mean_tpot_ms,
                x.median_tpot_ms,
                x.p99_tpot_ms,
                x.mean_itl_ms,
                x.peak_running_requests,
                x.peak_kv_usage
            ),
            None => format!(
                ",,,,,,,,,,,,\"{}\"",
                r.rejected.clone().unwrap_or_default().replace('"', "'")
            ),
        };
        s.push_str(&format!(
            "{},\"{}\",{c},{},{},{metrics}\n",
            r.layout, r.flags, r.random_input_len, r.random_output_len
        ));
    }
    s
}

/// The rows, and the notes their `[n]` cells refer to (printed under the table).
fn table(rows: &[RangedRow]) -> (Table, crate::cli::tables::Notes) {
    let mut notes = crate::cli::tables::Notes::default();
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "layout",
        "conc",
        "in/out",
        "output tok/s",
        "total tok/s",
        "TTFT ms",
        "TPOT ms",
        "peak running",
        "note",
    ]);
    crate::cli::tables::keep_whole(&mut t, &[0]);
    for ranged in rows {
        let r = &ranged.row;
        let c = r.max_concurrency.map_or("-".into(), |c| c.to_string());
        let io = format!("{}/{}", r.random_input_len, r.random_output_len);
        match &r.run {
            Some(x) => t.add_row(vec![
                r.layout.clone(),
                c,
                io,
                ranged.cell("output_throughput", x.output_throughput, 1),
                ranged.cell("total_throughput", x.total_throughput, 1),
                ranged.cell("mean_ttft_ms", x.mean_ttft_ms, 0),
                ranged.cell("mean_tpot_ms", x.mean_tpot_ms, 2),
                x.peak_running_requests.to_string(),
                notes.mark(&idle_note(r.idle_gpus)),
            ]),
            None => t.add_row(vec![
                r.layout.clone(),
                c,
                io,
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                notes.mark(r.rejected.as_deref().unwrap_or_default()),
            ]),
        };
    }
    (t, notes)
}
