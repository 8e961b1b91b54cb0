//! Assembling `sim report`: chart sections in reading order (verdict first, then layouts, then the
//! measurements behind them), the summary tables, and the HTML page that inlines every chart.

use std::path::{Path, PathBuf};

use reports::ReportError;
use reports::html::Page;
use reports::profile::{self, ChartSet, RenderedChart, SkippedChart};

use super::charts::layout_charts;
use super::measured::MeasuredRuns;
use super::output::MachineSummary;
use super::scoreboard::{PageTable, scoreboard_section};
use super::simulate::{MachineResults, ReportPlan};
use crate::scoreboard::Scoreboard;

/// What the report is about: the model's name, what was simulated, and the machines' results.
pub struct ReportInputs<'a> {
    /// Model name as `sim models` prints it.
    pub model: &'a str,
    /// The simulated workload and concurrencies.
    pub plan: &'a ReportPlan,
    /// One entry per `--machine`, in flag order.
    pub machines: &'a [MachineResults],
    /// The scoreboard of `--records`, drawn after the summary.
    pub scoreboard: Option<&'a Scoreboard>,
    /// The user's measured runs (`--measured`), drawn on their machine's charts.
    pub measured: Option<&'a MeasuredRuns>,
    /// The model path of the launch lines (the user's, else the checkpoint's HF repository).
    pub model_path: &'a str,
    /// The engine every layout was simulated under, whose command the launch lines are.
    pub engine: crate::engine::Engine,
}

/// A report rendered in memory: every SVG, the skipped charts and the page. Nothing is on disk yet.
pub struct BuiltReport {
    /// Charts in page order.
    pub rendered: Vec<RenderedChart>,
    /// Charts not drawn, with why.
    pub skipped: Vec<SkippedChart>,
    /// The HTML page.
    pub page: Page,
    /// One summary row per machine.
    pub summary: Vec<MachineSummary>,
}

/// A headed part of the page.
struct Section {
    heading: String,
    text: Vec<String>,
    set: ChartSet,
    /// Tables after the charts.
    tables: Vec<PageTable>,
    /// Layouts listed before the charts instead of drawn in them: (layout, flags, why).
    not_drawn: Vec<[String; 3]>,
    /// The figures' group on the page (the machine's label), which `not_drawn` is checked against.
    group: Option<String>,
}

/// Builds and renders the whole report. Fails only on chart data that cannot be drawn (a bug or a
/// profile with non-finite numbers), before anything is written.
pub fn build_report(inputs: &ReportInputs<'_>) -> Result<BuiltReport, ReportError> {
    let plan = inputs.plan;
    let w = &plan.workload;
    let sections = sections(inputs);

    let summary: Vec<MachineSummary> = inputs
        .machines
        .iter()
        .map(|m| MachineSummary::of(m, plan.at_concurrency))
        .collect();
    let names: Vec<&str> = inputs.machines.iter().map(|m| m.label.as_str()).collect();
    let mut page = launch_lines(
        Page::new(format!(
            "shardwise report: {} on {}",
            inputs.model,
            names.join(" vs ")
        )),
        &summary,
        &inputs.engine.rules().launch_command(inputs.model_path),
        plan.at_concurrency,
    )
    .paragraph(format!(
        "Workload (bench_serving random dataset): --random-input-len {} --random-output-len {} \
         --random-range-ratio {} --num-prompts {}, --max-concurrency {}. Verdicts, ranking and \
         the decode breakdown are at {} concurrent requests. All numbers are simulated from the \
         machine profiles; measure before you commit.",
        w.random_input_len,
        w.random_output_len,
        w.random_range_ratio,
        w.num_prompts,
        plan.concurrencies
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
        plan.at_concurrency
    ));
    if let Some(&top) = plan.concurrencies.last()
        && top > w.num_prompts
    {
        page = page.paragraph(format!(
            "Note: --num-prompts {} is below --max-concurrency {top}: runs above {} concurrent \
             never have more requests in flight than there are prompts, so their lines flatten.",
            w.num_prompts, w.num_prompts
        ));
    }
    page = summary_tables(page, inputs.machines, &summary, plan.at_concurrency);

    let (mut page, rendered, skipped) = render_sections(page, sections)?;
    page = assumptions(page, inputs.machines);
    Ok(BuiltReport {
        rendered,
        skipped,
        page,
        summary,
    })
}

/// The chart sections in page order: layouts per machine, the scoreboard, NCCL collectives, GPU
/// pairs per machine.
fn sections(inputs: &ReportInputs<'_>) -> Vec<Section> {
    let mut sections = Vec::new();

    for m in inputs.machines {
        let mut set = ChartSet::default();
        let measured = inputs.measured.filter(|r| r.machine == m.label);
        layout_charts(m, inputs.model, inputs.plan, measured, &mut set);
        super::p2p_chart::all_reduce_by_state(&m.label, &m.profile, &mut set);
        sections.push(Section {
            heading: format!("Layouts on {}", m.label),
            text: vec![format!(
                "{}× {}, {:.1} GB per card.",
                m.gpu_count,
                m.profile
                    .devices
                    .first()
                    .map_or(m.gpu_name.as_str(), |d| d.name.as_str()),
                m.gpu_memory_bytes as f64 / 1e9
            )],
            set,
            tables: Vec::new(),
            not_drawn: MachineSummary::of(m, inputs.plan.at_concurrency)
                .not_drawn
                .into_iter()
                .map(|n| [n.layout, n.flags, n.why])
                .collect(),
            group: Some(m.label.clone()),
        });
    }
    if let Some(board) = inputs.scoreboard {
        let part = scoreboard_section(board);
        sections.push(Section {
            heading: "Against public measurements".to_owned(),
            text: part.text,
            set: part.charts,
            tables: part.tables,
            not_drawn: Vec::new(),
            group: None,
        });
    }
    let profiles: Vec<(&str, &models::MachineProfile)> = inputs
        .machines
        .iter()
        .map(|m| (m.label.as_str(), &m.profile))
        .collect();
    let mut coll = ChartSet::default();
    profile::collective_charts(&profiles, &mut coll);
    sections.push(Section {
        heading: "NCCL collectives".to_owned(),
        text: vec![
            "Bus bandwidth as nccl-tests reports it (busbw = algbw × 2(n−1)/n for all_reduce, \
             (n−1)/n for all_gather, reduce_scatter and alltoall)."
                .to_owned(),
        ],
        set: coll,
        tables: Vec::new(),
        not_drawn: Vec::new(),
        group: None,
    });
    for m in inputs.machines {
        let mut set = ChartSet::default();
        profile::pair_charts(&m.label, &m.profile, &mut set);
        sections.push(Section {
            heading: format!("GPU pairs on {}", m.label),
            text: vec![profile::machine_line(&m.profile)],
            set,
            tables: Vec::new(),
            not_drawn: Vec::new(),
            group: None,
        });
    }
    sections
}

/// Each section's heading, text, list of layouts not drawn, charts (rendered here), skipped charts
/// and tables, appended to `page`.
fn render_sections(
    mut page: Page,
    sections: Vec<Section>,
) -> Result<(Page, Vec<RenderedChart>, Vec<SkippedChart>), ReportError> {
    let mut rendered = Vec::new();
    let mut skipped = Vec::new();
    for s in sections {
        let charts = s.set.render()?;
        page = page.heading(s.heading);
        for t in s.text {
            page = page.paragraph(t);
        }
        if let (false, Some(g)) = (s.not_drawn.is_empty(), &s.group) {
            page = page.not_plotted_table(
                format!("Layouts not drawn on {g}: they do not fit or cannot run"),
                ["layout", "SGLang flags", "why"]
                    .iter()
                    .map(|h| (*h).to_owned())
                    .collect(),
                s.not_drawn.iter().map(|r| r.to_vec()).collect(),
                g.clone(),
            );
        }
        for r in &charts {
            page = page.figure_in(
                r.svg.clone(),
                format!("{} ({})", r.caption, r.file_name),
                s.group.clone(),
            );
        }
        for k in &s.set.skipped {
            page = page.paragraph(format!("Not drawn: {}, because {}.", k.title, k.reason));
        }
        for (caption, header, rows) in s.tables {
            page = page.table(caption, header, rows);
        }
        rendered.extend(charts);
        skipped.extend(s.set.skipped);
    }
    Ok((page, rendered, skipped))
}

/// The command that starts the best layout of each machine (`command`: the engine's, serving
/// the model), first on the page.
fn launch_lines(mut page: Page, summary: &[MachineSummary], command: &str, at: u32) -> Page {
    page = page.heading(format!(
        "Launch the best layout (at {at} concurrent requests)"
    ));
    for s in summary {
        match &s.best {
            Some(b) => {
                page = page
                    .paragraph(format!("{}: {}", s.machine, b.layout))
                    .code(format!("{command} {}", b.flags));
            }
            None => {
                page = page.paragraph(format!(
                    "{}: no layout of the model fits; nothing to launch",
                    s.machine
                ));
            }
        }
    }
    page
}

fn summary_tables(
    mut page: Page,
    machines: &[MachineResults],
    summary: &[MachineSummary],
    at: u32,
) -> Page {
    page = page.heading("Summary");
    let header = [
        "machine",
        "best layout",
        "SGLang flags",
        "output tok/s",
        "mean TTFT ms",
        "mean TPOT ms",
        "should we try EP?",
    ];
    let rows = summary
        .iter()
        .map(|s| {
            let (flags, tok, ttft, tpot) = match &s.best {
                Some(b) => (
                    b.flags.clone(),
                    format!("{:.0}", b.output_throughput),
                    format!("{:.0}", b.mean_ttft_ms),
                    format!("{:.1}", b.mean_tpot_ms),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            vec![
                s.machine.clone(),
                s.best
                    .as_ref()
                    .map_or("none fits".into(), |b| b.layout.clone()),
                flags,
                tok,
                ttft,
                tpot,
                s.ep_verdict.clone(),
            ]
        })
        .collect();
    page = page.table(
        format!("Best layout at {at} concurrent requests and the EP verdict"),
        header.iter().map(|h| (*h).to_owned()).collect(),
        rows,
    );
    for (m, s) in machines.iter().zip(summary) {
        if let Some(sentence) = &s.ep_sentence {
            page = page.paragraph(format!("{}: {sentence}", m.label));
        }
    }
    // Headline measurements: one row per figure, one column per machine.
    let heads: Vec<Vec<profile::Headline>> = machines
        .iter()
        .map(|m| profile::headlines(&m.profile))
        .collect();
    let mut all: Vec<&profile::Headline> = heads.iter().flatten().collect();
    all.sort_by_key(|h| h.order);
    let mut whats: Vec<String> = Vec::new();
    for h in all {
        if !whats.contains(&h.what) {
            whats.push(h.what.clone());
        }
    }
    if !whats.is_empty() {
        let mut header = vec!["measurement".to_owned()];
        header.extend(machines.iter().map(|m| m.label.clone()));
        let rows = whats
            .iter()
            .map(|w| {
                let mut row = vec![w.clone()];
                row.extend(heads.iter().map(|hs| {
                    hs.iter()
                        .find(|h| &h.what == w)
                        .map_or("not measured".to_owned(), |h| h.value.clone())
                }));
                row
            })
            .collect();
        page = page.table("Headline bandwidths from the profiles", header, rows);
    }
    page
}

fn assumptions(mut page: Page, machines: &[MachineResults]) -> Page {
    let any = machines
        .iter()
        .any(|m| !m.notes.is_empty() || !m.profile.provenance.notes.is_empty());
    if !any {
        return page;
    }
    page = page.heading("Assumptions and sources");
    for m in machines {
        let prov = &m.profile.provenance;
        if let Some(src) = &prov.source {
            page = page.paragraph(format!("{} source: {src}", m.label));
        }
        for n in prov.notes.iter().chain(&m.notes) {
            page = page.paragraph(format!("{}: {n}", m.label));
        }
    }
    page
}

/// Writes the report's SVGs and `index.html` into `dir` (see [`profile::write_dir`]).
pub fn write_report(dir: &Path, report: &BuiltReport) -> Result<Vec<PathBuf>, ReportError> {
    profile::write_dir(dir, &report.rendered, &report.page)
}
