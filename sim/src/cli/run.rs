//! `sim run`: simulate one bench_serving run of a workload on one layout.

use super::args::{FormatArg, TargetArgs};
use super::bench_out::{print_bench_flags, write_bench_line};
use super::export::{Export, export};
use super::layouts::idle_note;
use super::setup::{CalibrationArg, Setup};
use super::workload_args::WorkloadArgs;
use crate::cli::tables::wrap;
use anyhow::Result;
use comfy_table::Table;
use sim::serving::{RunOutput, RunReport};
use sim::uncertainty::{FigureRange, with_range};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    #[command(flatten)]
    pub format: FormatArg,
}

pub fn run(mut args: Args) -> Result<()> {
    args.workload.bench.check_output_file()?;
    // `--dp-size N` without DP attention: N engines, replayed one by one
    args.target.server.layout.replicas_allowed = true;
    let mut setup = Setup::new(&args.target, &args.calibration)?;
    let layout = setup.one_layout(&args.target.server, "run")?;
    let workload = args.workload.one(setup.max_context_tokens())?;
    setup.set_prompt_kind(args.workload.prompt_kind(&workload));
    let replicas = setup.layout_args.replicas();
    let bench = setup.run_bench(layout, &workload, replicas)?;
    if let Some(path) = &args.workload.bench.output_file {
        write_bench_line(path, &setup, &args.workload, &bench.run, &workload, layout)?;
    }
    setup.print_notes_for(layout);
    for n in &bench.notes {
        eprintln!("{}", wrap("note: ", n));
    }
    for w in &bench.warnings {
        eprintln!("{}", wrap("warning: ", w));
    }
    let bench_flags = args.workload.not_modelled();
    print_bench_flags(&bench_flags);
    let mut flags_not_modelled = setup.flags_not_modelled();
    flags_not_modelled.extend(bench_flags);
    let out = RunOutput {
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        knobs: setup.knobs,
        flags_not_modelled,
        provenance: setup.provenance(&args.workload.lengths_provenance()),
        idle_gpus: bench.idle_gpus,
        run: bench.run,
    };
    export(
        args.format.format,
        &RunShown {
            out,
            ranges: bench.ranges,
        },
    )
}

/// `sim run`'s output with an 80% interval on each throughput and latency figure.
#[derive(serde::Serialize)]
struct RunShown {
    #[serde(flatten)]
    out: RunOutput,
    /// Each throughput and mean latency with its 80% interval (`validation/error-model.json`).
    ranges: Vec<FigureRange>,
}

impl Export for RunShown {
    type Json = RunShown;
    const WHAT: &'static str = "`sim run`";

    fn json(&self) -> &RunShown {
        self
    }

    fn print_table(&self) -> Result<()> {
        println!("{}", table(&self.out, &self.ranges));
        Ok(())
    }
}

/// `value (lo–hi)` of figure `key` with `decimals`, or the value alone when it has no range.
fn ranged(ranges: &[FigureRange], key: &str, value: f64, decimals: usize) -> String {
    ranges.iter().find(|r| r.figure == key).map_or_else(
        || format!("{value:.decimals$}"),
        |r| with_range(value, r.range, decimals),
    )
}

/// The run as bench_serving's summary would show it, plus the engine's view.
fn table(o: &RunOutput, ranges: &[FigureRange]) -> Table {
    let r: &RunReport = &o.run;
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        format!("{} on {}", o.model, o.machine),
        format!("{} ({})", r.layout, r.flags),
    ]);
    let mut rows = bench_rows(r, ranges);
    if r.replicas > 1 {
        rows.insert(
            0,
            (
                "Engines",
                format!(
                    "{} behind SGLang's router (round-robin): figures for the whole box, peaks and KV pools summed",
                    r.layout
                ),
            ),
        );
    } else if o.idle_gpus > 0 {
        rows.insert(
            0,
            ("GPUs", format!("one replica; {}", idle_note(o.idle_gpus))),
        );
    }
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), v]);
    }
    add_provenance_rows(&mut t, o, ranges);
    t
}

/// bench_serving's summary rows, each throughput and mean latency with its 80% interval.
fn bench_rows(r: &RunReport, ranges: &[FigureRange]) -> Vec<(&'static str, String)> {
    let conc = match (r.max_concurrency, r.closed_rounds) {
        (Some(c), true) => {
            format!("{c} (closed rounds: {c} sent at once, the next round when all finished)")
        }
        (Some(c), false) => c.to_string(),
        (None, _) => "unlimited".to_string(),
    };
    vec![
        ("Maximum request concurrency", conc),
        (
            "Input / output length",
            format!(
                "{} / {} (range ratio {})",
                r.random_input_len, r.random_output_len, r.random_range_ratio
            ),
        ),
        ("Successful requests", r.completed.to_string()),
        ("Benchmark duration (s)", format!("{:.2}", r.duration)),
        (
            "Request throughput (req/s)",
            ranged(ranges, "request_throughput", r.request_throughput, 2),
        ),
        (
            "Input token throughput (tok/s)",
            format!("{:.2}", r.input_throughput),
        ),
        (
            "Output token throughput (tok/s)",
            ranged(ranges, "output_throughput", r.output_throughput, 2),
        ),
        (
            "Total token throughput (tok/s)",
            ranged(ranges, "total_throughput", r.total_throughput, 2),
        ),
        (
            "TTFT mean / median / p99 (ms)",
            format!(
                "{} / {:.1} / {:.1}",
                ranged(ranges, "mean_ttft_ms", r.mean_ttft_ms, 1),
                r.median_ttft_ms,
                r.p99_ttft_ms
            ),
        ),
        (
            "TPOT mean / median / p99 (ms)",
            format!(
                "{} / {:.2} / {:.2}",
                ranged(ranges, "mean_tpot_ms", r.mean_tpot_ms, 2),
                r.median_tpot_ms,
                r.p99_tpot_ms
            ),
        ),
        (
            "ITL mean / median / p99 (ms)",
            format!(
                "{} / {:.2} / {:.2}",
                ranged(ranges, "mean_itl_ms", r.mean_itl_ms, 2),
                r.median_itl_ms,
                r.p99_itl_ms
            ),
        ),
        ("Peak running requests", r.peak_running_requests.to_string()),
        (
            "Peak KV use",
            format!(
                "{} of {} tokens ({:.1}%)",
                r.peak_kv_tokens,
                r.kv_capacity_tokens,
                r.peak_kv_usage * 100.0
            ),
        ),
        (
            "Time: prefill / decode / idle (s)",
            format!(
                "{:.2} / {:.2} / {:.2} ({} prefill, {} decode batches; {} CPU-bound)",
                r.breakdown.prefill_s,
                r.breakdown.decode_s,
                r.breakdown.idle_s,
                r.breakdown.prefill_batches,
                r.breakdown.decode_batches,
                r.breakdown.cpu_bound_turns
            ),
        ),
        (
            "GPU time by part (s, summed over batches)",
            parts(&r.breakdown.cost_parts),
        ),
    ]
}

/// What the run rests on, where its 80% intervals come from, and the micro-batches at the peak.
fn add_provenance_rows(t: &mut Table, o: &RunOutput, ranges: &[FigureRange]) {
    let r: &RunReport = &o.run;
    for (i, p) in o.provenance.iter().enumerate() {
        let k = if i == 0 { "Based on" } else { "" };
        t.add_row(vec![k.to_string(), p.clone()]);
    }
    if let Some(r) = ranges.first() {
        let widened = if r.widened_by.is_empty() {
            String::new()
        } else {
            format!("; widened for {}", r.widened_by.join(", "))
        };
        t.add_row(vec![
            "80% intervals".to_string(),
            format!(
                "from the error model measured on public runs (validation/error-model.json): width set by {}{widened}",
                r.set_by
            ),
        ]);
        // what a figure's own ground adds beyond the run's (the time to first token's)
        for f in ranges.iter().skip(1) {
            let own: Vec<&str> = f
                .widened_by
                .iter()
                .filter(|w| !r.widened_by.contains(w))
                .map(String::as_str)
                .collect();
            if !own.is_empty() {
                t.add_row(vec![
                    String::new(),
                    format!("{}: also {}", f.figure, own.join(", ")),
                ]);
            }
        }
    }
    if let Some(s) = r
        .micro_batch_samples
        .iter()
        .max_by_key(|s| s.sizes.iter().sum::<u32>())
        && s.sizes.len() > 1
    {
        t.add_row(vec![
            "Micro-batch sizes at peak".to_string(),
            format!("{:?} at {:.1} s", s.sizes, s.t_s),
        ]);
    }
}

/// The non-zero parts of a breakdown, largest first.
pub fn parts(b: &sim::cost::TimeBreakdown) -> String {
    b.largest_parts(0.0)
        .iter()
        .map(|(k, x)| format!("{k} {x:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}
