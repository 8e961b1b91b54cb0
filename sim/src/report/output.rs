//! `sim report --format json`: what was written and the summary of each machine, schema-versioned.

use serde::Serialize;

use super::simulate::MachineResults;
use crate::advise::Verdict;

/// Version of the `sim report --format json` layout (2: `engine`, and a layout's flags are
/// `flags`, in that engine's spelling; was `sglang_flags`).
pub const REPORT_SCHEMA_VERSION: u32 = 2;

/// The best layout of a machine at the report's concurrency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestLayout {
    /// Short name, e.g. `TP4xPP2`.
    pub layout: String,
    /// The flags that launch it, in the engine's own spelling.
    pub flags: String,
    /// bench_serving's `output_throughput`, tok/s.
    pub output_throughput: f64,
    /// bench_serving's `mean_ttft_ms`.
    pub mean_ttft_ms: f64,
    /// bench_serving's `mean_tpot_ms`.
    pub mean_tpot_ms: f64,
}

/// A layout the report does not draw: it does not fit or cannot run ([`super::fit`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotDrawn {
    /// Short name, e.g. `TP8+DPA`.
    pub layout: String,
    /// The flags that would launch it, in the engine's own spelling.
    pub flags: String,
    /// Why not: the memory budget against the need, or why the layout is impossible.
    pub why: String,
}

/// One machine's line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineSummary {
    /// Preset name or profile file stem.
    pub machine: String,
    /// Best layout at the report's concurrency, `None` when no layout fits.
    pub best: Option<BestLayout>,
    /// `yes`, `no`, `depends-on-concurrency`, or `n/a` when there is no EP answer.
    pub ep_verdict: String,
    /// Share of perturbed draws that agree with the verdict.
    pub ep_confidence: Option<f64>,
    /// The verdict's sentence, or why there is none.
    pub ep_sentence: Option<String>,
    /// Layouts that do not fit or cannot run, listed on the page instead of drawn.
    pub not_drawn: Vec<NotDrawn>,
    /// Every layout of the machine and the verdict on it (the one `predict`, `advise` and
    /// `sweep` give).
    pub layouts: Vec<LayoutVerdict>,
}

/// One layout of a report and the verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutVerdict {
    /// Short name, e.g. `TP8+DPA`.
    pub layout: String,
    /// Why it cannot run, `None` when it was simulated.
    pub rejected: Option<String>,
}

impl MachineSummary {
    /// The summary of `m` at concurrency `at`.
    pub fn of(m: &MachineResults, at: u32) -> Self {
        let best = m.ranking_at(at).first().map(|(l, r)| BestLayout {
            layout: l.name(),
            flags: r.flags.clone(),
            output_throughput: r.output_throughput,
            mean_ttft_ms: r.mean_ttft_ms,
            mean_tpot_ms: r.mean_tpot_ms,
        });
        let (ep_verdict, ep_confidence, ep_sentence) = match &m.ep {
            Ok(a) => {
                let v = match a.verdict {
                    Verdict::Yes => "yes",
                    Verdict::No => "no",
                    Verdict::DependsOnConcurrency => "depends on concurrency",
                };
                (
                    format!(
                        "{v} ({:.0}% of {} draws agree)",
                        a.confidence * 100.0,
                        a.draws
                    ),
                    Some(a.confidence),
                    Some(a.sentence.clone()),
                )
            }
            Err(why) => (
                "n/a".to_owned(),
                None,
                Some(format!("no EP verdict: {why}")),
            ),
        };
        MachineSummary {
            machine: m.label.clone(),
            best,
            ep_verdict,
            ep_confidence,
            ep_sentence,
            not_drawn: m
                .layouts
                .iter()
                .filter_map(|l| {
                    Some(NotDrawn {
                        layout: l.name(),
                        flags: l.layout.sglang_flags(),
                        why: l.rejected()?.to_owned(),
                    })
                })
                .collect(),
            layouts: m
                .layouts
                .iter()
                .map(|l| LayoutVerdict {
                    layout: l.name(),
                    rejected: l.rejected().map(str::to_owned),
                })
                .collect(),
        }
    }
}

/// `sim report --format json` on stdout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportOutput {
    /// Always [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The engine every layout was simulated under (the report's launch flags are SGLang's).
    pub engine: crate::engine::Engine,
    /// Folder the report was written to.
    pub out_dir: String,
    /// Files written, `index.html` last.
    pub files: Vec<String>,
    /// Charts not drawn and why.
    pub skipped: Vec<reports::profile::SkippedChart>,
    /// One entry per machine.
    pub machines: Vec<MachineSummary>,
}
