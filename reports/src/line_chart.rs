//! Line charts: several series of `(x, y)` points over a linear, log10 or binary-size (log2) x axis,
//! each solid, dashed or dotted. Used for bus bandwidth vs message size (per collective and group,
//! VM dashed against bare metal solid) and for throughput/TTFT/TPOT vs concurrency per layout.
//!
//! Every data point is drawn as one `<circle>` marker on top of its line, so readers (and tests) can
//! count points; the legend adds one more marker per series.

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::axis::Axis;
use crate::axis::Ticked;
use crate::error::ReportError;
use crate::legend::{self, Entry, Swatch};
use crate::style::{
    AXIS_TITLE_SIZE, Dash, LABEL_SIZE, MARGIN_PX, PLOT_HEIGHT_PX, PLOT_WIDTH_PX, Rgb, clean_text,
    palette_colour, render_svg, text_height_px, text_style, text_width_px, with_unit,
};

/// A line chart: title, two axes and the series drawn on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineChart {
    /// Chart title, e.g. "all_reduce bus bandwidth, 8× RTX PRO 6000 (VM)".
    pub title: String,
    /// Horizontal axis, e.g. message size on [`Scale::Log2Bytes`].
    pub x_axis: Axis,
    /// Vertical axis, e.g. bus bandwidth in GB/s.
    pub y_axis: Axis,
    /// Lines, drawn in order (later ones on top).
    pub series: Vec<Series>,
}

/// One line: a name for the legend and its points in data units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend text, e.g. "all_reduce n=8 (VM)".
    pub name: String,
    /// `[x, y]` points in drawing order (usually ascending x).
    pub points: Vec<[f64; 2]>,
    /// Stroke; `None` picks solid for the first twelve series, then dashed, then dotted.
    #[serde(default)]
    pub dash: Option<Dash>,
    /// Palette slot; `None` uses the series' position. Give two series the same slot to pair them
    /// (same collective, VM dashed vs bare metal solid).
    #[serde(default)]
    pub colour_index: Option<usize>,
}

impl Series {
    /// A series with automatic colour and dash.
    pub fn new(name: impl Into<String>, points: Vec<[f64; 2]>) -> Self {
        Self {
            name: name.into(),
            points,
            dash: None,
            colour_index: None,
        }
    }

    /// The same series stroked with `dash`.
    pub fn with_dash(mut self, dash: Dash) -> Self {
        self.dash = Some(dash);
        self
    }

    /// The same series in palette slot `index`.
    pub fn with_colour_index(mut self, index: usize) -> Self {
        self.colour_index = Some(index);
        self
    }

    fn colour(&self, position: usize) -> Rgb {
        palette_colour(self.colour_index.unwrap_or(position))
    }

    fn stroke(&self, position: usize) -> Dash {
        self.dash.unwrap_or_else(|| Dash::auto(position))
    }
}

/// Most ticks an axis gets.
const MAX_TICKS: usize = 11;

/// Renders `chart` as an SVG document.
///
/// Errors with [`ReportError::InvalidData`] when there is no series, a series has no point, a value
/// is not finite, or a value is not positive on a log axis.
pub fn line_chart(chart: &LineChart) -> Result<String, ReportError> {
    let title = chart.title.as_str();
    let (x_min, x_max, y_min, y_max) = data_bounds(chart)?;
    let (xs, ys) = (chart.x_axis.scale, chart.y_axis.scale);
    let (x_lo, x_hi) = xs.fitted_range(x_min, x_max, chart.x_axis.range);
    let (y_lo, y_hi) = ys.fitted_range(y_min, y_max, chart.y_axis.range);
    let x_ticks = xs.ticks(x_lo, x_hi, MAX_TICKS);
    let y_ticks = ys.ticks(y_lo, y_hi, 8);
    let x_step = tick_step(&x_ticks);
    let y_step = tick_step(&y_ticks);
    let y_tick_w = y_ticks
        .iter()
        .map(|t| text_width_px(&ys.tick_label(*t, y_step), LABEL_SIZE))
        .max()
        .unwrap_or(0);

    let entries: Vec<Entry> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Entry {
            swatch: Swatch::Line(s.colour(i), s.stroke(i)),
            label: clean_text(&s.name),
        })
        .collect();
    let legend_w = legend::width_px(&entries);
    let title_reserve = 2 * MARGIN_PX + text_height_px(crate::style::TITLE_SIZE) + 6;
    let height = PLOT_HEIGHT_PX.max(title_reserve + legend::height_px(&entries) + MARGIN_PX);
    let width = PLOT_WIDTH_PX + legend_w;

    render_svg(title, (width, height), |canvas, title_px| {
        let err = ReportError::draw(title);
        let (plot_area, _) = canvas.split_horizontally(PLOT_WIDTH_PX);
        let plot_area = plot_area.margin(title_px, MARGIN_PX, MARGIN_PX, MARGIN_PX);
        let mut ctx = ChartBuilder::on(&plot_area)
            .x_label_area_size(text_height_px(LABEL_SIZE) + text_height_px(AXIS_TITLE_SIZE) + 16)
            .y_label_area_size(y_tick_w + text_height_px(AXIS_TITLE_SIZE) + 18)
            .build_cartesian_2d(
                Ticked::new(x_lo, x_hi, x_ticks.clone()),
                Ticked::new(y_lo, y_hi, y_ticks.clone()),
            )
            .map_err(&err)?;
        let x_desc = with_unit(&chart.x_axis.title, &chart.x_axis.unit);
        let y_desc = with_unit(&chart.y_axis.title, &chart.y_axis.unit);
        ctx.configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|p| xs.tick_label(*p, x_step))
            .y_label_formatter(&|p| ys.tick_label(*p, y_step))
            .label_style(text_style(LABEL_SIZE, BLACK))
            .axis_desc_style(text_style(AXIS_TITLE_SIZE, BLACK))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(&err)?;

        for (i, s) in chart.series.iter().enumerate() {
            let colour = s.colour(i).colour();
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|[x, y]| (xs.forward(*x), ys.forward(*y)))
                .collect();
            let style = colour.stroke_width(2);
            match s.stroke(i).pattern_px() {
                None => ctx.draw_series(LineSeries::new(pts.clone(), style)),
                Some((on, off)) => {
                    ctx.draw_series(DashedLineSeries::new(pts.clone(), on, off, style))
                }
            }
            .map_err(&err)?;
            ctx.draw_series(pts.iter().map(|p| Circle::new(*p, 3, colour.filled())))
                .map_err(&err)?;
        }

        legend::draw(
            canvas,
            title,
            &entries,
            (
                PLOT_WIDTH_PX as i32 + MARGIN_PX as i32,
                title_px as i32 + 10,
            ),
        )
    })
}

/// Distance between the first two ticks (1 when there are fewer than two).
fn tick_step(ticks: &[f64]) -> f64 {
    match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    }
}

/// Smallest and largest x and y over all series, after checking every point fits its axis.
fn data_bounds(chart: &LineChart) -> Result<(f64, f64, f64, f64), ReportError> {
    crate::axis::series_bounds(
        &chart.title,
        chart
            .series
            .iter()
            .map(|s| (s.name.as_str(), s.points.as_slice())),
        chart.x_axis.scale,
        chart.y_axis.scale,
    )
}
