//! Line charts: several series of `(x, y)` points over a linear, log10 or binary-size (log2) x axis,
//! each solid, dashed or dotted. Used for bus bandwidth vs message size (per collective and group,
//! VM dashed against bare metal solid) and for throughput/TTFT/TPOT vs concurrency per layout.
//!
//! Every data point is drawn as one marker on top of its line (a `<circle>` unless the series
//! picks another [`Marker`]), so readers (and tests) can count points; the legend adds one more
//! marker per series. A series may be drawn as markers alone (measurements beside predicted
//! lines).

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::axis::Axis;
use crate::error::ReportError;
use crate::legend::{Entry, Swatch};
use crate::style::{Dash, Marker, Rgb, clean_text, draw_marker, palette_colour};
use crate::xy_frame::XyFrame;

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
    /// Exact colour, overriding the palette (e.g. black for measured points).
    #[serde(default)]
    pub colour: Option<Rgb>,
    /// Point marker; `None` is a circle.
    #[serde(default)]
    pub marker: Option<Marker>,
    /// Draw the markers only, no line between them.
    #[serde(default)]
    pub points_only: bool,
    /// `[lo, hi]` at each point (same order as `points`): a shaded band in the series' colour
    /// behind the line, e.g. a prediction's 80% interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<Vec<[f64; 2]>>,
}

impl Series {
    /// A series with automatic colour and dash.
    pub fn new(name: impl Into<String>, points: Vec<[f64; 2]>) -> Self {
        Self {
            name: name.into(),
            points,
            dash: None,
            colour_index: None,
            colour: None,
            marker: None,
            points_only: false,
            band: None,
        }
    }

    /// The same series with a shaded band `[lo, hi]` at each point; ignored unless it has one
    /// pair per point.
    pub fn with_band(mut self, band: Vec<[f64; 2]>) -> Self {
        self.band = (band.len() == self.points.len()).then_some(band);
        self
    }

    /// The band's outline: along the upper edge and back along the lower, in data units.
    fn band_outline(&self) -> Vec<[f64; 2]> {
        let Some(b) = &self.band else {
            return Vec::new();
        };
        let upper = self.points.iter().zip(b).map(|(p, r)| [p[0], r[1]]);
        let lower = self.points.iter().zip(b).rev().map(|(p, r)| [p[0], r[0]]);
        upper.chain(lower).collect()
    }

    /// The same series with point marker `marker`.
    pub fn with_marker(mut self, marker: Marker) -> Self {
        self.marker = Some(marker);
        self
    }

    /// The same series as markers in `colour` with no line between them.
    pub fn points_only(mut self, colour: Rgb) -> Self {
        self.points_only = true;
        self.colour = Some(colour);
        self
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
        self.colour
            .unwrap_or_else(|| palette_colour(self.colour_index.unwrap_or(position)))
    }

    fn shape(&self) -> Marker {
        self.marker.unwrap_or_default()
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
    let frame = XyFrame::new(
        &chart.x_axis,
        &chart.y_axis,
        data_bounds(chart)?,
        (chart.x_axis.range, chart.y_axis.range),
        MAX_TICKS,
    );
    let (xs, ys) = (frame.xs(), frame.ys());
    let entries: Vec<Entry> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Entry {
            swatch: if s.points_only {
                Swatch::Marker(s.colour(i), s.shape())
            } else {
                Swatch::Line(s.colour(i), s.stroke(i), s.shape())
            },
            label: clean_text(&s.name),
        })
        .collect();
    frame.render(&chart.title, &entries, |ctx| {
        let err = ReportError::draw(&chart.title);
        // bands first, under every line
        for (i, s) in chart.series.iter().enumerate() {
            let outline: Vec<(f64, f64)> = s
                .band_outline()
                .iter()
                .map(|[x, y]| (xs.forward(*x), ys.forward(*y)))
                .collect();
            if outline.len() >= 3 {
                let fill = s.colour(i).colour().mix(0.15).filled();
                ctx.draw_series(std::iter::once(Polygon::new(outline, fill)))
                    .map_err(&err)?;
            }
        }
        for (i, s) in chart.series.iter().enumerate() {
            let colour = s.colour(i).colour();
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|[x, y]| (xs.forward(*x), ys.forward(*y)))
                .collect();
            let style = colour.stroke_width(2);
            if !s.points_only {
                match s.stroke(i).pattern_px() {
                    None => ctx.draw_series(LineSeries::new(pts.clone(), style)),
                    Some((on, off)) => {
                        ctx.draw_series(DashedLineSeries::new(pts.clone(), on, off, style))
                    }
                }
                .map_err(&err)?;
            }
            // Markers in pixels on the plot area, so every shape is drawn the same way as in
            // the legend.
            let area = ctx.plotting_area().strip_coord_spec();
            let (bx, by) = area.get_base_pixel();
            let radius = if s.points_only { 5 } else { 3 };
            for p in &pts {
                let (px, py) = ctx.backend_coord(p);
                draw_marker(&area, (px - bx, py - by), s.shape(), colour, radius).map_err(&err)?;
            }
        }
        Ok(())
    })
}

/// Smallest and largest x and y over all series, after checking every point fits its axis.
fn data_bounds(chart: &LineChart) -> Result<(f64, f64, f64, f64), ReportError> {
    let outlines: Vec<(&str, Vec<[f64; 2]>)> = chart
        .series
        .iter()
        .map(|s| (s.name.as_str(), s.band_outline()))
        .collect();
    let all: Vec<(&str, &[[f64; 2]])> = chart
        .series
        .iter()
        .map(|s| (s.name.as_str(), s.points.as_slice()))
        .chain(
            outlines
                .iter()
                .filter(|(_, o)| !o.is_empty())
                .map(|(n, o)| (*n, o.as_slice())),
        )
        .collect();
    crate::axis::series_bounds(
        &chart.title,
        all.into_iter(),
        chart.x_axis.scale,
        chart.y_axis.scale,
    )
}
