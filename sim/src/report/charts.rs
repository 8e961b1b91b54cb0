//! Layout charts of one machine: the decode step by part (stacked bars), output throughput / TTFT /
//! TPOT vs concurrency (one line per layout, the user's measured runs as markers beside them), and
//! memory per GPU (weights, KV pool, reserve, free against the card's size). Only layouts that fit
//! ([`super::fit`]) are drawn. At most [`MAX_LEGEND_ENTRIES`] entries per chart; the drawn layouts
//! keep one colour and marker across a machine's charts.

use crate::uncertainty::{ErrorModel, FigureKind};
use reports::profile::ChartSet;
use reports::{
    AnyChart, Axis, BarPart, LineChart, MAX_LEGEND_ENTRIES, Marker, MemoryBars, Rgb, Scale, Series,
    StackedBars,
};

use super::measured::MeasuredRuns;
use super::simulate::{LayoutResult, MachineResults, ReportPlan};
use crate::cost::BREAKDOWN_PARTS;
use crate::cost::report::BreakdownMs;
use crate::serving::RunReport;

/// Adds every layout chart of `m` to `set`. `model` names the model in titles; `measured` are the
/// user's runs on this machine, drawn beside the predicted lines.
pub fn layout_charts(
    m: &MachineResults,
    model: &str,
    plan: &ReportPlan,
    measured: Option<&MeasuredRuns>,
    set: &mut ChartSet,
) {
    let at = plan.at_concurrency;
    let w = &plan.workload;
    decode_breakdown(
        m,
        model,
        at,
        w.random_input_len + w.random_output_len / 2,
        set,
    );
    speculation_chart(m, model, set);
    // The measured runs take one legend entry where they are drawn.
    let max_lines = MAX_LEGEND_ENTRIES - usize::from(measured.is_some());
    let drawn = line_layouts(m, at, max_lines);
    for metric in &METRICS {
        let points = measured.map(|r| (r, r.points(metric.measured)));
        metric_lines(m, model, metric, &drawn, points, plan, set);
    }
    memory_chart(m, model, set);
}

/// The x axis of every chart against concurrency.
fn concurrency_axis() -> Axis {
    Axis::new("concurrent requests (--max-concurrency)", "", Scale::Log10)
}

fn decode_breakdown(m: &MachineResults, model: &str, at: u32, context: u32, set: &mut ChartSet) {
    let label = &m.label;
    let rows: Vec<(&LayoutResult, &BreakdownMs)> = m
        .layouts
        .iter()
        .filter_map(|l| l.decode_step.as_ref().map(|b| (l, b)))
        .collect();
    let title = format!("Decode step time by part, {model}, {at} concurrent — {label}");
    if rows.is_empty() {
        set.skip(title, "no layout of the model fits this machine");
        return;
    }
    let parts: Vec<BarPart> = BREAKDOWN_PARTS
        .iter()
        .enumerate()
        .map(|(i, (_, name))| BarPart {
            name: (*name).to_owned(),
            values: rows.iter().map(|(_, b)| b.parts_ms()[i].max(0.0)).collect(),
            colour_index: Some(i),
        })
        // A part no layout has only lengthens the legend.
        .filter(|p| p.values.iter().any(|v| *v > 0.0))
        .collect();
    // Colours by position among the parts drawn: the first palette slots stay apart best.
    let parts: Vec<BarPart> = at_most_legend_parts(parts)
        .into_iter()
        .enumerate()
        .map(|(i, p)| BarPart {
            colour_index: Some(i),
            ..p
        })
        .collect();
    let chart = AnyChart::StackedBars(StackedBars {
        title,
        category_title: "layout".to_owned(),
        value_title: "time per decode step".to_owned(),
        unit: "ms".to_owned(),
        categories: rows.iter().map(|(l, _)| l.name()).collect(),
        parts,
    });
    set.push(
        &format!("{label}-decode-breakdown"),
        format!(
            "One decode iteration of {at} running requests at {context} tokens of context (input \
             + half the output), critical path through all pipeline stages, by part (`sim \
             predict`). Layouts that do not fit are left out. {label}."
        ),
        chart,
    );
}

/// More bar parts than a legend holds: the largest (summed over the bars) kept, the rest summed
/// into one "other" part that names them.
fn at_most_legend_parts(mut parts: Vec<BarPart>) -> Vec<BarPart> {
    if parts.len() <= MAX_LEGEND_ENTRIES {
        return parts;
    }
    let total = |p: &BarPart| p.values.iter().sum::<f64>();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| total(&parts[b]).total_cmp(&total(&parts[a])));
    let rest: Vec<usize> = order[MAX_LEGEND_ENTRIES - 1..].to_vec();
    let mut values = vec![0.0; parts[0].values.len()];
    let mut names = Vec::new();
    for &i in &rest {
        for (v, x) in values.iter_mut().zip(&parts[i].values) {
            *v += x;
        }
        // The short name: "activation reads (small kernels)" → "activation reads".
        let name = &parts[i].name;
        names.push(name.split(" (").next().unwrap_or(name).to_owned());
    }
    let colour = parts[rest[0]].colour_index;
    let mut i = 0;
    parts.retain(|_| {
        i += 1;
        !rest.contains(&(i - 1))
    });
    parts.push(BarPart {
        name: format!("other: {}", names.join(", ")),
        values,
        colour_index: colour,
    });
    parts
}

/// A bench_serving metric drawn against concurrency.
struct Metric {
    key: &'static str,
    title: &'static str,
    /// The y axis in words, and its unit.
    axis: &'static str,
    unit: &'static str,
    /// bench_serving's key, for the caption.
    bench_key: &'static str,
    get: fn(&RunReport) -> f64,
    /// A throughput, a per-token latency or a time to first token: how its 80% band is read.
    kind: FigureKind,
    measured: fn(&crate::bench_serving::read::MeasuredMetrics) -> Option<f64>,
}

const METRICS: [Metric; 3] = [
    Metric {
        key: "output-throughput",
        title: "Output throughput",
        axis: "output throughput",
        unit: "tok/s",
        bench_key: "output_throughput",
        get: |r| r.output_throughput,
        kind: FigureKind::Throughput,
        measured: |m| m.output_throughput,
    },
    Metric {
        key: "ttft",
        title: "Mean time to first token",
        axis: "mean TTFT",
        unit: "ms",
        bench_key: "mean_ttft_ms",
        get: |r| r.mean_ttft_ms,
        kind: FigureKind::FirstToken,
        measured: |m| m.mean_ttft_ms,
    },
    Metric {
        key: "tpot",
        title: "Mean time per output token",
        axis: "mean TPOT",
        unit: "ms",
        bench_key: "mean_tpot_ms",
        get: |r| r.mean_tpot_ms,
        kind: FigureKind::Latency,
        measured: |m| m.mean_tpot_ms,
    },
];

/// Most layouts drawn as lines: more than this many lines on one chart cannot be told apart.
pub const MAX_LINES: usize = MAX_LEGEND_ENTRIES;

/// Indices (into `m.layouts`) of the layouts drawn as lines: TP and EP over all GPUs (the layouts
/// a reader compares against), then the best by output throughput at concurrency `at`, at most
/// `max_lines`, in enumeration order.
pub fn line_layouts(m: &MachineResults, at: u32, max_lines: usize) -> Vec<usize> {
    let ran: Vec<usize> = (0..m.layouts.len())
        .filter(|&i| m.layouts[i].fit.fits() && !m.layouts[i].runs.is_empty())
        .collect();
    if ran.len() <= max_lines {
        return ran;
    }
    let all = m.gpu_count;
    let anchor = |l: &LayoutResult| {
        l.layout.pp == 1
            && !l.layout.dp_attention
            && l.layout.tp == all
            && (l.layout.ep == 1 || l.layout.ep == all)
    };
    let mut chosen: Vec<usize> = ran
        .iter()
        .copied()
        .filter(|&i| anchor(&m.layouts[i]))
        .collect();
    let mut by_rate = ran.clone();
    let rate = |i: usize| {
        m.layouts[i]
            .run_at(at)
            .map_or(-1.0, |r| r.output_throughput)
    };
    by_rate.sort_by(|&a, &b| rate(b).total_cmp(&rate(a)));
    // The best first, so that it always has a place.
    if let Some(&best) = by_rate.first()
        && !chosen.contains(&best)
    {
        chosen.insert(0, best);
    }
    chosen.truncate(max_lines);
    for i in by_rate {
        if chosen.len() >= max_lines {
            break;
        }
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    chosen
}

fn metric_lines(
    m: &MachineResults,
    model: &str,
    metric: &Metric,
    drawn: &[usize],
    measured: Option<(&MeasuredRuns, Vec<[f64; 2]>)>,
    plan: &ReportPlan,
    set: &mut ChartSet,
) {
    let label = &m.label;
    let at = plan.at_concurrency;
    let title = format!("{} vs concurrency, {model} — {label}", metric.title);
    let ran = m
        .layouts
        .iter()
        .filter(|l| l.fit.fits() && !l.runs.is_empty())
        .count();
    let mut series: Vec<Series> = drawn
        .iter()
        .map(|&i| &m.layouts[i])
        .enumerate()
        .map(|(pos, l)| {
            let mut points: Vec<[f64; 2]> = l
                .runs
                .iter()
                .filter_map(|r| Some([f64::from(r.max_concurrency?), (metric.get)(r)]))
                .filter(|[_, y]| y.is_finite())
                .collect();
            points.sort_by(|a, b| a[0].total_cmp(&b[0]));
            // each point's 80% interval from the error model, shaded behind the line
            let band: Vec<[f64; 2]> = points
                .iter()
                .map(|[c, y]| {
                    let r = l.regime.at_concurrency(*c as u32);
                    ErrorModel::builtin()
                        .figure_range(*y, metric.kind, &r)
                        .range
                })
                .collect();
            // Colour and marker by position among the drawn layouts: the first six palette
            // colours, which stay apart, and the same pair on every chart of this machine.
            Series::new(l.name(), points)
                .with_band(band)
                .with_colour_index(pos)
                .with_marker(Marker::nth(pos))
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        set.skip(title, "no layout of the model fits this machine");
        return;
    }
    let mut measured_note = String::new();
    if let Some((runs, points)) = measured {
        measured_note = runs.caption(metric.bench_key, points.len(), &plan.workload);
        if !points.is_empty() {
            series.push(
                Series::new("measured", points)
                    .points_only(MEASURED_COLOUR)
                    .with_marker(Marker::Cross),
            );
        }
    }
    // a calibration fitted on this machine and model sets the box's part of the width
    let calibrated = drawn
        .iter()
        .find_map(|&i| m.layouts[i].regime.calibrated_sigma_ln)
        .map_or_else(String::new, |s| {
            format!(
                "; this box's part from the --calibration's out-of-sample spread, ±{:.1}% at one sigma",
                s.exp_m1() * 100.0
            )
        });
    let chart = AnyChart::LineChart(LineChart {
        title,
        x_axis: concurrency_axis(),
        y_axis: Axis::new(metric.axis, metric.unit, Scale::Linear),
        series,
    });
    set.push(
        &format!("{label}-{}", metric.key),
        format!(
            "Simulated bench_serving `{}` per layout at each --max-concurrency{}; shaded, each \
             prediction's 80% interval (validation/error-model.json{calibrated}).{measured_note} \
             Layouts that do not fit are listed above, not drawn. {label}.",
            metric.bench_key,
            if drawn.len() < ran {
                format!(
                    "; {} of {ran} layouts that fit: TP and EP over all GPUs and the best at \
                     {at} concurrent (`sim sweep --layout all` lists every one)",
                    drawn.len()
                )
            } else {
                String::new()
            }
        ),
        chart,
    );
}

/// Measured points: black, so they stand apart from every layout's colour.
const MEASURED_COLOUR: Rgb = Rgb(0, 0, 0);

/// Decode throughput against concurrency with and without speculative decoding.
fn speculation_chart(m: &MachineResults, model: &str, set: &mut ChartSet) {
    let label = &m.label;
    let title = format!("Speculative decoding vs concurrency, {model} — {label}");
    let c = match &m.speculation {
        Ok(c) => c,
        Err(why) => {
            set.skip(title, why);
            return;
        }
    };
    let line = |name: &str, f: &dyn Fn(&crate::advise::mtp::MtpPoint) -> f64, i: usize| {
        Series::new(
            name,
            c.points
                .iter()
                .map(|p| [f64::from(p.concurrency), f(p)])
                .filter(|[_, y]| y.is_finite() && *y > 0.0)
                .collect(),
        )
        .with_colour_index(i)
    };
    let p = &c.plan;
    let chart = AnyChart::LineChart(LineChart {
        title,
        x_axis: concurrency_axis(),
        y_axis: Axis::new("decode throughput", "tok/s", Scale::Linear),
        series: vec![
            line(
                &format!("{} with {}", c.layout, p.algorithm),
                &|p| p.with_tok_s,
                0,
            ),
            line(&format!("{} without", c.layout), &|p| p.without_tok_s, 1),
        ],
    });
    set.push(
        &format!("{label}-speculation"),
        format!(
            "Steady decode throughput (prefill excluded) at {} tokens of context, with {} ({} steps, topk {}, {} draft tokens, accept length {:.2}{}) and without. {label}.",
            c.context_tokens,
            p.algorithm,
            p.num_steps,
            p.eagle_topk,
            p.num_draft_tokens,
            p.accept_length,
            match p.accept_source {
                crate::cost::spec::AcceptSource::Prior => ", the published prior: not measured",
                _ => "",
            }
        ),
        chart,
    );
}

const GB: f64 = 1e9;
/// The palette's grey.
const FREE_GREY: usize = 7;

fn memory_chart(m: &MachineResults, model: &str, set: &mut ChartSet) {
    let label = &m.label;
    let card_gb = m.gpu_memory_bytes as f64 / GB;
    let title = format!("Memory per GPU by layout, {model} — {label}");
    // Layouts the verdict rejects (the cost model's, from the same plan) are listed, not drawn.
    let rows: Vec<(String, [f64; 4])> = m
        .layouts
        .iter()
        .filter(|l| l.fit.fits())
        .filter_map(|l| {
            let p = l.memory.as_ref()?;
            let w = p.weight_bytes_per_gpu as f64 / GB;
            let r = p.reserve_bytes_per_gpu as f64 / GB;
            let kv = p.kv_pool_bytes_per_gpu as f64 / GB;
            let free = (card_gb - w - r - kv).max(0.0);
            Some((l.name(), [w, kv, r, free]))
        })
        .collect();
    if rows.is_empty() {
        set.skip(title, "no layout of the model fits this machine");
        return;
    }
    // the engine whose sizing the plans are, and its memory-share flag
    let engine = m
        .layouts
        .iter()
        .find_map(|l| l.memory.as_ref())
        .map_or_else(Default::default, |p| p.engine)
        .rules();
    let flag = engine.memory_fraction_flag();
    let free = format!("free (outside {flag})");
    let names = ["weights", "KV cache pool", "runtime reserve", free.as_str()];
    let parts = names
        .iter()
        .enumerate()
        .map(|(i, n)| BarPart {
            // What is free is not a use of memory: neutral grey, not a fourth colour.
            colour_index: Some(if i == 3 { FREE_GREY } else { i }),
            ..BarPart::new(*n, rows.iter().map(|(_, v)| v[i]).collect())
        })
        .collect();
    let chart = AnyChart::MemoryBars(MemoryBars {
        bars: StackedBars {
            title,
            category_title: "layout".to_owned(),
            value_title: "memory per GPU".to_owned(),
            unit: "GB".to_owned(),
            categories: rows.into_iter().map(|(n, _)| n).collect(),
            parts,
        },
        reference_value: card_gb,
        reference_label: format!("card: {card_gb:.1} GB"),
    });
    set.push(
        &format!("{label}-memory"),
        format!(
            "Fullest GPU of each layout: weights, the KV pool {} sizes from \
             {flag}, the runtime reserve held back before it, and what is left of \
             the card (GB = 1e9 bytes). Layouts that do not fit are listed above with what they \
             need, not drawn. {label}.",
            engine.display_name()
        ),
        chart,
    );
}
