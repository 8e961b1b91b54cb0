//! The scoreboard in `sim report --records`: one predicted-against-measured scatter per compared
//! quantity (log–log, one colour per model, y = x and the ±20% band), the headline statistics,
//! the worst records with where their predicted step goes, and why the other records were not
//! compared.

use reports::profile::ChartSet;
use reports::{AnyChart, Axis, IdentityBand, PointSeries, Scale, ScatterChart};

use crate::records::Quantity;
use crate::scoreboard::text::{
    GROUP_HEADER, REASON_HEADER, SPEC_HEADER, WORST_HEADER, group_row, headline, intro,
    reason_rows, spec_rows, worst_rows,
};
use crate::scoreboard::{RecordComparison, Scoreboard};

/// Half-width of the band drawn around y = x.
pub const BAND: f64 = 0.2;

/// A table for the page: caption, header, rows.
pub type PageTable = (String, Vec<String>, Vec<Vec<String>>);

/// The scoreboard's part of the report.
pub struct ScoreboardSection {
    pub text: Vec<String>,
    pub charts: ChartSet,
    pub tables: Vec<PageTable>,
}

/// The unit of a quantity on an axis.
fn unit(q: Quantity) -> &'static str {
    match q {
        Quantity::OutputTokPerS | Quantity::TotalTokPerS => "tok/s",
        Quantity::ItlMeanMs
        | Quantity::TpotMeanMs
        | Quantity::TtftMeanMs
        | Quantity::TpotMedianMs
        | Quantity::TtftMedianMs => "ms",
    }
}

/// The axis title of a quantity (its name without the unit).
fn what(q: Quantity) -> &'static str {
    match q {
        Quantity::OutputTokPerS => "output throughput",
        Quantity::TotalTokPerS => "total throughput",
        Quantity::ItlMeanMs => "mean ITL",
        Quantity::TpotMeanMs => "mean TPOT",
        Quantity::TtftMeanMs => "mean TTFT",
        Quantity::TpotMedianMs => "median TPOT",
        Quantity::TtftMedianMs => "median TTFT",
    }
}

/// The palette's grey, for the models merged into one series.
const OTHER_GREY: usize = 7;

/// One scatter per quantity of the headline figures.
fn scatters(board: &Scoreboard, set: &mut ChartSet) {
    let head: Vec<&RecordComparison> = board
        .comparisons
        .iter()
        .filter(|c| c.primary && !c.flagged)
        .collect();
    let mut models: Vec<&str> = head.iter().map(|c| c.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    // The legend also holds y = x and the band: beyond this many models the ones with the fewest
    // records share one grey "other models" series.
    let max_models = reports::MAX_LEGEND_ENTRIES - 2;
    let others: Vec<&str> = if models.len() > max_models {
        let count = |m: &str| head.iter().filter(|c| c.model == m).count();
        let mut by_count = models.clone();
        by_count.sort_by_key(|m| std::cmp::Reverse(count(m)));
        let rest = by_count.split_off(max_models - 1);
        models.retain(|m| !rest.contains(m));
        rest
    } else {
        Vec::new()
    };
    let mut quantities: Vec<Quantity> = head.iter().map(|c| c.quantity).collect();
    quantities.sort();
    quantities.dedup();
    if quantities.is_empty() {
        set.skip(
            "Predicted against measured",
            "no record of the file could be expressed",
        );
    }
    for q in quantities {
        let points_of = |ms: &[&str]| -> Vec<[f64; 2]> {
            head.iter()
                .filter(|c| c.quantity == q && ms.contains(&c.model.as_str()) && c.predicted > 0.0)
                .map(|c| [c.measured, c.predicted])
                .collect()
        };
        let mut series: Vec<PointSeries> = models
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let points = points_of(&[m]);
                (!points.is_empty()).then(|| PointSeries {
                    name: (*m).to_string(),
                    points,
                    // one colour per model across charts
                    colour_index: Some(i),
                })
            })
            .collect();
        let rest = points_of(&others);
        if !rest.is_empty() {
            series.push(PointSeries {
                name: format!("other models ({})", others.len()),
                points: rest,
                colour_index: Some(OTHER_GREY),
            });
        }
        if series.is_empty() {
            continue;
        }
        let n: usize = series.iter().map(|s| s.points.len()).sum();
        let chart = ScatterChart {
            title: format!("Predicted against measured {} ({n} records)", what(q)),
            x_axis: Axis::new(format!("measured {}", what(q)), unit(q), Scale::Log10),
            y_axis: Axis::new(format!("predicted {}", what(q)), unit(q), Scale::Log10),
            series,
            identity: Some(IdentityBand {
                band: BAND,
                label: format!("±{:.0}%", BAND * 100.0),
            }),
        };
        set.push(
            &format!("scoreboard-{}", what(q).replace(' ', "-")),
            format!(
                "{} of the records' headline figures, one colour per model; the grey band is ±{:.0}% of y = x",
                what(q),
                BAND * 100.0
            ),
            AnyChart::ScatterChart(chart),
        );
    }
}

/// Charts, text and tables of `board`.
pub fn scoreboard_section(board: &Scoreboard) -> ScoreboardSection {
    let mut charts = ChartSet::default();
    scatters(board, &mut charts);
    let strings = |h: &[&str]| h.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    ScoreboardSection {
        text: vec![intro(board), headline(board)],
        charts,
        tables: vec![
            (
                "By model and family (headline figures)".into(),
                strings(&GROUP_HEADER),
                board.families.iter().map(group_row).collect(),
            ),
            (
                "Speculative decoding off and on (headline figures)".into(),
                strings(&SPEC_HEADER),
                spec_rows(board),
            ),
            (
                "By concurrency band, all models (headline figures)".into(),
                strings(&GROUP_HEADER),
                board.bands.iter().map(group_row).collect(),
            ),
            (
                format!("The {} worst headline figures", board.worst.len()),
                strings(&WORST_HEADER),
                worst_rows(&board.worst),
            ),
            (
                "Records not compared, by their first reason".into(),
                strings(&REASON_HEADER),
                reason_rows(board),
            ),
        ],
    }
}
