//! NCCL bus bandwidth vs message size, one chart per collective, one line per GPU group; with
//! several profiles the same group keeps its colour and each later profile is dashed (then dotted),
//! so "VM vs bare metal" reads as solid vs dashed of one colour.

use models::profile::{CollectiveCurve, CollectiveOp, CollectiveStatus, MachineProfile};

use crate::axis::{Axis, Scale};
use crate::chart::AnyChart;
use crate::line_chart::{LineChart, Series};
use crate::profile::set::ChartSet;
use crate::style::{Dash, MAX_LEGEND_ENTRIES};

/// Every collective nccl-tests measures, in chart order.
const OPS: [CollectiveOp; 5] = [
    CollectiveOp::AllReduce,
    CollectiveOp::AllGather,
    CollectiveOp::ReduceScatter,
    CollectiveOp::AllToAll,
    CollectiveOp::SendRecv,
];

/// nccl-tests' name of a collective (`all_reduce`, …).
pub fn op_name(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::AllReduce => "all_reduce",
        CollectiveOp::AllGather => "all_gather",
        CollectiveOp::ReduceScatter => "reduce_scatter",
        CollectiveOp::AllToAll => "alltoall",
        CollectiveOp::SendRecv => "sendrecv",
    }
}

/// What tells two curves of one op apart: group size, GPUs, NCCL environment.
fn group_key(c: &CollectiveCurve) -> String {
    let mut key = format!("n={} GPUs {}", c.devices.len(), gpu_ranges(&c.devices));
    for (k, v) in &c.nccl_env {
        key.push_str(&format!(" {k}={v}"));
    }
    key
}

/// GPU indices with consecutive runs shortened: `[0,1,2,3,6]` → `0-3,6`.
pub fn gpu_ranges(devices: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < devices.len() {
        let mut j = i;
        while j + 1 < devices.len() && devices[j + 1] == devices[j] + 1 {
            j += 1;
        }
        parts.push(if j >= i + 2 {
            format!("{}-{}", devices[i], devices[j])
        } else if j == i + 1 {
            format!("{},{}", devices[i], devices[j])
        } else {
            devices[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Points that finished with a correct result, as `[bytes, busbw GB/s]`.
fn ok_points(c: &CollectiveCurve) -> Vec<[f64; 2]> {
    c.points
        .iter()
        .filter(|p| p.status == CollectiveStatus::Ok && p.bytes > 0)
        .filter(|p| p.busbw_gb_per_s.is_finite() && p.busbw_gb_per_s >= 0.0)
        .map(|p| [p.bytes as f64, p.busbw_gb_per_s])
        .collect()
}

/// Adds one bus-bandwidth chart per collective over `profiles` (`(label, profile)`; the first
/// solid, the second dashed, the third dotted) to `set`, or says why a chart is missing. Groups of
/// one GPU are left out: their bus bandwidth is zero by nccl-tests' formula.
pub fn collective_charts(profiles: &[(&str, &MachineProfile)], set: &mut ChartSet) {
    let labels: Vec<&str> = profiles.iter().map(|(l, _)| *l).collect();
    let who = labels.join(" vs ");
    for op in OPS {
        let curves: Vec<(usize, &CollectiveCurve)> = profiles
            .iter()
            .enumerate()
            .flat_map(|(i, (_, p))| p.collectives.iter().map(move |c| (i, c)))
            .filter(|(_, c)| c.op == op && c.devices.len() >= 2)
            .collect();
        let mut keys: Vec<String> = Vec::new();
        let mut series = Vec::new();
        for (i, c) in &curves {
            let points = ok_points(c);
            if points.is_empty() {
                continue;
            }
            let key = group_key(c);
            let colour = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key.clone());
                keys.len() - 1
            });
            let name = if profiles.len() > 1 {
                format!("{key} ({})", labels[*i])
            } else {
                key
            };
            let dash = [Dash::Solid, Dash::Dashed, Dash::Dotted][(*i).min(2)];
            series.push((
                colour,
                *i,
                Series::new(name, points)
                    .with_dash(dash)
                    .with_colour_index(colour),
            ));
        }
        let name = op_name(op);
        if series.is_empty() {
            set.skip(
                format!("{name} bus bandwidth ({who})"),
                "no group of 2 or more GPUs has a successful measurement of it",
            );
            continue;
        }
        // Group by colour so a group's solid and dashed lines sit together in the legend.
        series.sort_by_key(|(colour, profile, _)| (*colour, *profile));
        // More lines than a legend can hold: one chart per few groups, each group's lines of
        // every profile kept together.
        let groups_per_chart = (MAX_LEGEND_ENTRIES / profiles.len().max(1)).max(1);
        let chunks: Vec<Vec<Series>> = if series.len() <= MAX_LEGEND_ENTRIES {
            vec![series.into_iter().map(|(_, _, s)| s).collect()]
        } else {
            let mut chunks: Vec<Vec<Series>> = Vec::new();
            for (colour, _, s) in series {
                let k = colour / groups_per_chart;
                if chunks.len() <= k {
                    chunks.resize_with(k + 1, Vec::new);
                }
                // Colours restart in each chart.
                chunks[k].push(s.with_colour_index(colour % groups_per_chart));
            }
            chunks
        };
        let parts = chunks.len();
        for (k, series) in chunks.into_iter().enumerate() {
            let (title_part, stem_part) = if parts > 1 {
                (format!(" ({} of {parts})", k + 1), format!("-{}", k + 1))
            } else {
                (String::new(), String::new())
            };
            push_chart(set, &labels, name, &who, (&title_part, &stem_part), series);
        }
    }
}

/// Adds one bus-bandwidth chart of `series` (one op) to `set`.
fn push_chart(
    set: &mut ChartSet,
    labels: &[&str],
    name: &str,
    who: &str,
    (title_part, stem_part): (&str, &str),
    series: Vec<Series>,
) {
    let chart = AnyChart::LineChart(LineChart {
        title: format!("{name} bus bandwidth vs message size{title_part} — {who}"),
        x_axis: Axis::new("message size", "", Scale::Log2Bytes),
        y_axis: Axis::new("bus bandwidth", "GB/s", Scale::Linear),
        series,
    });
    let dashes = if labels.len() > 1 {
        format!(
            " {} solid, {} dashed{}.",
            labels[0],
            labels[1],
            if labels.len() > 2 {
                format!(", {} dotted", labels[2])
            } else {
                String::new()
            }
        )
    } else {
        String::new()
    };
    set.push(
        &format!("{}-{name}-busbw{stem_part}", labels.join("-vs-")),
        format!(
            "NCCL {name} bus bandwidth (nccl-tests busbw, GB = 1e9 bytes) per GPU group.{dashes}"
        ),
        chart,
    );
}

#[cfg(test)]
mod tests {
    use super::gpu_ranges;

    #[test]
    fn gpu_ranges_shorten_runs() {
        assert_eq!(gpu_ranges(&[0, 1, 2, 3, 4, 5, 6, 7]), "0-7");
        assert_eq!(gpu_ranges(&[0, 1]), "0,1");
        assert_eq!(gpu_ranges(&[3, 4, 0, 1, 2, 6]), "3,4,0-2,6");
        assert_eq!(gpu_ranges(&[]), "");
    }
}
