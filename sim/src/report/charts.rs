//! Layout charts of one machine: the decode step by part (stacked bars), output throughput / TTFT /
//! TPOT vs concurrency (one line per layout), and memory per GPU (weights, KV pool, reserve, free
//! against the card's size). Colours follow the layout's position in the machine's enumeration,
//! so one layout keeps its colour across charts.

use reports::profile::ChartSet;
use reports::{AnyChart, Axis, BarPart, LineChart, MemoryBars, Scale, Series, StackedBars};

use super::simulate::{LayoutResult, MachineResults};
use crate::cost::BREAKDOWN_PARTS;
use crate::cost::report::BreakdownMs;
use crate::serving::RunReport;

/// Adds every layout chart of `m` to `set`. `model` names the model in titles; `at` is the
/// concurrency of the decode breakdown.
pub fn layout_charts(m: &MachineResults, model: &str, at: u32, context: u32, set: &mut ChartSet) {
    decode_breakdown(m, model, at, context, set);
    speculation_chart(m, model, set);
    let drawn = line_layouts(m, at);
    for metric in &METRICS {
        metric_lines(m, model, metric, &drawn, at, set);
    }
    memory_chart(m, model, set);
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

/// A bench_serving metric drawn against concurrency.
struct Metric {
    key: &'static str,
    title: &'static str,
    axis: &'static str,
    unit: &'static str,
    get: fn(&RunReport) -> f64,
}

const METRICS: [Metric; 3] = [
    Metric {
        key: "output-throughput",
        title: "Output throughput",
        axis: "output_throughput",
        unit: "tok/s",
        get: |r| r.output_throughput,
    },
    Metric {
        key: "ttft",
        title: "Mean time to first token",
        axis: "mean_ttft_ms",
        // The bench_serving key already names the unit.
        unit: "",
        get: |r| r.mean_ttft_ms,
    },
    Metric {
        key: "tpot",
        title: "Mean time per output token",
        axis: "mean_tpot_ms",
        unit: "",
        get: |r| r.mean_tpot_ms,
    },
];

/// Most layouts drawn as lines: more than this many lines on one chart cannot be told apart.
pub const MAX_LINES: usize = 8;

/// Indices (into `m.layouts`) of the layouts drawn as lines: the best by output throughput at
/// concurrency `at`, plus TP and EP over all GPUs (the layouts a reader compares against), at most
/// [`MAX_LINES`], in enumeration order so colours stay put.
pub fn line_layouts(m: &MachineResults, at: u32) -> Vec<usize> {
    let ran: Vec<usize> = (0..m.layouts.len())
        .filter(|&i| !m.layouts[i].runs.is_empty())
        .collect();
    if ran.len() <= MAX_LINES {
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
    for i in by_rate {
        if chosen.len() >= MAX_LINES {
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
    at: u32,
    set: &mut ChartSet,
) {
    let label = &m.label;
    let title = format!("{} vs concurrency, {model} — {label}", metric.title);
    let ran = m.layouts.iter().filter(|l| !l.runs.is_empty()).count();
    let series: Vec<Series> = m
        .layouts
        .iter()
        .enumerate()
        .filter(|(i, _)| drawn.contains(i))
        .map(|(i, l)| {
            let mut points: Vec<[f64; 2]> = l
                .runs
                .iter()
                .filter_map(|r| Some([f64::from(r.max_concurrency?), (metric.get)(r)]))
                .filter(|[_, y]| y.is_finite())
                .collect();
            points.sort_by(|a, b| a[0].total_cmp(&b[0]));
            Series::new(l.name(), points).with_colour_index(i)
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        set.skip(
            title,
            "no layout of the model could be simulated on this machine",
        );
        return;
    }
    let chart = AnyChart::LineChart(LineChart {
        title,
        x_axis: Axis::new("--max-concurrency", "requests", Scale::Log10),
        y_axis: Axis::new(metric.axis, metric.unit, Scale::Linear),
        series,
    });
    set.push(
        &format!("{label}-{}", metric.key),
        format!(
            "Simulated bench_serving `{}` per layout at each --max-concurrency{}. {label}.",
            metric.axis,
            if drawn.len() < ran {
                format!(
                    "; {} of {ran} layouts that run: the best at {at} concurrent plus TP and EP \
                     over all GPUs (`sim sweep --layout all` lists every one)",
                    drawn.len()
                )
            } else {
                String::new()
            }
        ),
        chart,
    );
}

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
        x_axis: Axis::new("concurrency", "requests", Scale::Log10),
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
                crate::cost::spec::AcceptSource::Default => ", the stated default: not measured",
                _ => "",
            }
        ),
        chart,
    );
}

const GB: f64 = 1e9;

fn memory_chart(m: &MachineResults, model: &str, set: &mut ChartSet) {
    let label = &m.label;
    let card_gb = m.gpu_memory_bytes as f64 / GB;
    let title = format!("Memory per GPU by layout, {model} — {label}");
    // Layouts the verdict rejects (the cost model's, from the same plan) are listed, not drawn.
    let rows: Vec<(String, [f64; 4])> = m
        .layouts
        .iter()
        .filter(|l| l.rejected.is_none())
        .filter_map(|l| {
            let p = l.memory.as_ref()?;
            let w = p.weight_bytes_per_gpu as f64 / GB;
            let r = p.reserve_bytes_per_gpu as f64 / GB;
            let kv = p.kv_pool_bytes_per_gpu as f64 / GB;
            let free = (card_gb - w - r - kv).max(0.0);
            Some((l.name(), [w, kv, r, free]))
        })
        .collect();
    let not_fitting: Vec<String> = m
        .layouts
        .iter()
        .filter(|l| l.rejected.is_some())
        .filter_map(|l| {
            let p = l.memory.as_ref().filter(|p| !p.fits)?;
            Some(format!(
                "{} (weights {:.1} GB > static budget {:.1} GB at --mem-fraction-static {})",
                l.name(),
                p.weight_bytes_per_gpu as f64 / GB,
                p.static_budget_bytes as f64 / GB,
                crate::cost::memory::shown_fraction(p.mem_fraction_static)
            ))
        })
        .collect();
    if rows.is_empty() {
        set.skip(title, "no layout of the model fits this machine");
        return;
    }
    let rejected_note = if not_fitting.is_empty() {
        String::new()
    } else {
        format!(" Not drawn, do not fit: {}.", not_fitting.join("; "))
    };
    let names = [
        "weights",
        "KV cache pool",
        "runtime reserve",
        "free (outside --mem-fraction-static)",
    ];
    let parts = names
        .iter()
        .enumerate()
        .map(|(i, n)| BarPart::new(*n, rows.iter().map(|(_, v)| v[i]).collect()))
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
            "Fullest GPU of each layout: weights, the KV pool SGLang sizes from \
             --mem-fraction-static, the runtime reserve held back before it, and what is left of \
             the card (GB = 1e9 bytes).{rejected_note} {label}."
        ),
        chart,
    );
}
