//! `sim validate --records FILE --implied-accept-length [--acceptance FILE]`: the implied
//! acceptance lengths by series, modelled and anchored on the off runs, as tables or JSON.

use super::args::ValidateFormat;
use super::export::{Export, export};
use anyhow::Result;
use comfy_table::Table;
use sim::records::RecordSet;
use sim::records::acceptance::MeasuredAcceptance;
use sim::scoreboard::accept::{
    AcceptReport, LengthStats, Series, Sweep, SweepAxis, implied_accept_lengths,
};
use std::path::{Path, PathBuf};

/// Loads, analyses and prints.
pub fn run(path: &Path, acceptance: &[PathBuf], format: ValidateFormat) -> Result<()> {
    let set = RecordSet::load(path)?;
    let measured = MeasuredAcceptance::load_all(acceptance)?;
    if let Some(w) = measured.unmatched_warning(&set) {
        eprintln!("{}", crate::cli::tables::wrap("warning: ", &w));
    }
    let report = implied_accept_lengths(&set, &measured);
    export(format, &report)
}

impl Export for AcceptReport {
    type Json = AcceptReport;
    const WHAT: &'static str = "--implied-accept-length";

    fn json(&self) -> &AcceptReport {
        self
    }

    fn print_table(&self) -> Result<()> {
        print_tables(self);
        Ok(())
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// "2.35 (1.65–2.92, 77%)": median, range and spread.
fn lengths(median: f64, min: f64, max: f64, spread: f64) -> String {
    format!("{median:.2} ({min:.2}–{max:.2}, {})", pct(spread))
}

fn stats(l: &LengthStats) -> String {
    lengths(l.median_accept_length, l.min, l.max, l.spread)
}

fn series_row(i: usize, s: &Series) -> Vec<String> {
    vec![
        format!("#{}", i + 1),
        s.key.clone(),
        s.records.len().to_string(),
        stats(&s.lengths),
        format!("{} of {}", s.lengths.out_of_range, s.records.len()),
        format!("{:.1}%", s.lengths.mape_with_median_pct),
        s.anchored.as_ref().map_or("no off runs".into(), |a| {
            format!(
                "{} of {}: {}, {} outside; MAPE {:.1}%",
                a.n,
                s.records.len(),
                stats(&a.lengths),
                a.lengths.out_of_range,
                a.lengths.mape_with_median_pct
            )
        }),
        match (s.mape_with_measured_pct, s.bias_with_measured_pct) {
            (Some(m), Some(b)) => format!(
                "{m:.1}% ({b:+.1}%), {} records{}",
                s.with_measured,
                s.measured_spread
                    .map_or(String::new(), |x| format!("; measured L spread {}", pct(x)))
            ),
            _ => match s.published_range {
                Some((lo, hi)) => format!(
                    "only a range published for the series: {lo:.2}–{hi:.2}; implied median {}",
                    if (lo..=hi).contains(&s.lengths.median_accept_length) {
                        "inside"
                    } else {
                        "outside"
                    }
                ),
                None => "not published".into(),
            },
        },
    ]
}

fn print_tables(report: &AcceptReport) {
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "#",
        "series",
        "n",
        "implied L: median (range, spread)",
        "outside [1, draft tokens]",
        "MAPE at median L",
        "anchored on the off runs",
        "MAPE (bias) at measured L",
    ]);
    for (i, s) in report.series.iter().enumerate() {
        t.add_row(series_row(i, s));
    }
    println!("{t}");
    print_sweeps(report);
    for (i, s) in report.series.iter().enumerate() {
        println!("\n#{} {} — draft assumed: {}", i + 1, s.key, s.draft);
        println!("{}", records_table(s));
    }
    if !report.skipped.is_empty() {
        println!(
            "{} MTP-on record(s) not analysed (another obstacle besides MTP, e.g. DCP > 1)",
            report.skipped.len()
        );
    }
}

fn records_table(s: &Series) -> Table {
    let mut r = crate::cli::tables::table();
    r.set_header(vec![
        "record",
        "conc",
        "context",
        "measured tok/s",
        "implied L",
        "error at median L",
        "anchored L",
        "error at its median",
        "anchor (verify × k)",
        "measured L",
        "error at measured L",
    ]);
    for x in &s.records {
        let a = x.anchored.as_ref();
        r.add_row(vec![
            x.id.clone(),
            x.concurrency.to_string(),
            x.context_tokens.to_string(),
            format!("{:.1}", x.measured_tok_s),
            format!(
                "{:.2}{}",
                x.implied_accept_length,
                if x.in_range { "" } else { " (out of range)" }
            ),
            format!("{:+.1}%", x.error_with_median_pct),
            a.map_or("—".into(), |a| {
                format!(
                    "{:.2}{}",
                    a.implied_accept_length,
                    if a.in_range { "" } else { " (out of range)" }
                )
            }),
            a.map_or("—".into(), |a| {
                format!("{:+.1}%", a.error_with_median_pct)
            }),
            a.map_or("no bracketing off runs".into(), |a| {
                format!("{:.3}: {}", a.anchor.verify_scale, a.anchor.pinned_by)
            }),
            x.measured_accept_length
                .map_or("—".into(), |l| format!("{l:.2}")),
            x.error_with_measured_pct
                .map_or("—".into(), |e| format!("{e:+.1}%")),
        ]);
    }
    r
}

fn sweep_row(series: usize, kind: &str, w: &Sweep) -> Vec<String> {
    vec![
        format!("#{}", series + 1),
        kind.to_string(),
        match w.axis {
            SweepAxis::Concurrency => format!("concurrency at context {}", w.fixed),
            SweepAxis::Context => format!("context at {} streams", w.fixed),
        },
        w.n.to_string(),
        lengths(w.median_accept_length, w.min, w.max, w.spread),
        w.measured_spread.map_or("—".into(), pct),
    ]
}

/// The series cut into one-knob sweeps (a row or a column of each concurrency × context table),
/// modelled and anchored.
fn print_sweeps(report: &AcceptReport) {
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "series",
        "implied L",
        "sweep",
        "n",
        "median (range, spread)",
        "measured L spread",
    ]);
    let mut any = false;
    for (i, s) in report.series.iter().enumerate() {
        let anchored = s.anchored.iter().flat_map(|a| a.sweeps.iter());
        for (kind, w) in s
            .sweeps
            .iter()
            .map(|w| ("modelled", w))
            .chain(anchored.map(|w| ("anchored", w)))
        {
            any = true;
            t.add_row(sweep_row(i, kind, w));
        }
    }
    if any {
        println!("\nOne-knob sweeps:\n{t}");
    }
}
