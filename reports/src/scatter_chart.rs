//! Scatter charts: points of several series on two axes (linear or log10), optionally over the
//! line y = x and a relative band around it, as a predicted-against-measured chart wants
//! (`y = x·(1 ± band)`, e.g. ±20%). With the identity line both axes share one range, so the
//! line runs at 45° and distances from it read the same everywhere.
//!
//! Every data point is one `<circle>`; the legend adds one marker per series.

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::axis::{Axis, Scale};
use crate::error::ReportError;
use crate::legend::{Entry, Swatch};
use crate::style::{Dash, Rgb, clean_text, palette_colour};
use crate::xy_frame::{XyContext, XyFrame};

/// A scatter chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScatterChart {
    /// Chart title.
    pub title: String,
    /// Horizontal axis (e.g. measured tok/s, log10).
    pub x_axis: Axis,
    /// Vertical axis (e.g. predicted tok/s, log10).
    pub y_axis: Axis,
    /// Point sets, drawn in order (later ones on top).
    pub series: Vec<PointSeries>,
    /// Draw y = x and a band around it; both axes then share one range and must share a scale.
    #[serde(default)]
    pub identity: Option<IdentityBand>,
}

/// One set of points with a legend name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointSeries {
    /// Legend text.
    pub name: String,
    /// `[x, y]` points.
    pub points: Vec<[f64; 2]>,
    /// Palette slot; `None` uses the series' position.
    #[serde(default)]
    pub colour_index: Option<usize>,
}

/// The y = x line and the band `y = x·(1 − band) … x·(1 + band)` around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentityBand {
    /// Relative half-width, in (0, 1): 0.2 draws ±20%.
    pub band: f64,
    /// Legend text of the band, e.g. "±20%".
    pub label: String,
}

/// Legend text of the identity line.
pub const IDENTITY_LABEL: &str = "y = x";
/// Grey of the identity line and band.
const IDENTITY_GREY: Rgb = Rgb(0x55, 0x55, 0x55);
/// Fill of the band (light grey).
const BAND_FILL: Rgb = Rgb(0xdd, 0xdd, 0xdd);
/// Samples along the band's edges (straight on log-log, curved nowhere, but a linear axis
/// pair needs only two; more keep the polygon exact under any scale).
const EDGE_SAMPLES: usize = 32;

impl PointSeries {
    /// A series with automatic colour.
    pub fn new(name: impl Into<String>, points: Vec<[f64; 2]>) -> Self {
        Self {
            name: name.into(),
            points,
            colour_index: None,
        }
    }

    fn colour(&self, position: usize) -> Rgb {
        palette_colour(self.colour_index.unwrap_or(position))
    }
}

/// Renders `chart` as an SVG document.
///
/// Errors with [`ReportError::InvalidData`] when there is no series, a series has no point, a
/// value cannot sit on its axis (not finite, or not positive on a log axis), the band is not in
/// (0, 1), or an identity line is asked for on axes of different scales.
pub fn scatter_chart(chart: &ScatterChart) -> Result<String, ReportError> {
    let title = chart.title.as_str();
    let (xs, ys) = (chart.x_axis.scale, chart.y_axis.scale);
    let (bounds, ranges) = identity_bounds(chart, bounds(chart)?)?;
    let frame = XyFrame::new(&chart.x_axis, &chart.y_axis, bounds, ranges, 11);
    frame.render(title, &legend(chart), |ctx| {
        let err = ReportError::draw(title);
        if let Some(id) = &chart.identity {
            draw_identity(ctx, title, id, (xs, ys), (frame.x, frame.y))?;
        }
        for (i, s) in chart.series.iter().enumerate() {
            let colour = s.colour(i).colour();
            ctx.draw_series(
                s.points.iter().map(|[x, y]| {
                    Circle::new((xs.forward(*x), ys.forward(*y)), 4, colour.filled())
                }),
            )
            .map_err(&err)?;
        }
        Ok(())
    })
}

/// Data bounds `(x_min, x_max, y_min, y_max)` and the axes' fixed ranges as drawn.
type Bounds = ((f64, f64, f64, f64), (Option<[f64; 2]>, Option<[f64; 2]>));

/// With an identity line both axes share one span (the line is y = x), so the bounds and any fixed
/// range are unified; the band and the scales are checked first.
fn identity_bounds(
    chart: &ScatterChart,
    (x_min, x_max, y_min, y_max): (f64, f64, f64, f64),
) -> Result<Bounds, ReportError> {
    let title = chart.title.as_str();
    let ranges = (chart.x_axis.range, chart.y_axis.range);
    let Some(id) = &chart.identity else {
        return Ok(((x_min, x_max, y_min, y_max), ranges));
    };
    if !(id.band > 0.0 && id.band < 1.0) {
        return Err(ReportError::invalid(
            title,
            format!(
                "identity band {} must be in (0, 1), e.g. 0.2 for ±20%",
                id.band
            ),
        ));
    }
    if chart.x_axis.scale != chart.y_axis.scale {
        return Err(ReportError::invalid(
            title,
            "an identity line needs both axes on the same scale",
        ));
    }
    let (lo, hi) = (x_min.min(y_min), x_max.max(y_max));
    let shared = ranges.0.or(ranges.1);
    Ok(((lo, hi, lo, hi), (shared, shared)))
}

/// One legend entry per series, then the identity line and its band when drawn.
fn legend(chart: &ScatterChart) -> Vec<Entry> {
    let mut entries: Vec<Entry> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Entry {
            swatch: Swatch::Marker(s.colour(i), crate::style::Marker::Circle),
            label: clean_text(&s.name),
        })
        .collect();
    if let Some(id) = &chart.identity {
        entries.push(Entry {
            swatch: Swatch::Stroke(IDENTITY_GREY, Dash::Solid),
            label: IDENTITY_LABEL.to_owned(),
        });
        entries.push(Entry {
            swatch: Swatch::Fill(BAND_FILL),
            label: clean_text(&id.label),
        });
    }
    entries
}

/// The y = x line with its ±band shaded and dashed edges, clipped to the drawn y range.
fn draw_identity(
    ctx: &mut XyContext<'_, '_>,
    title: &str,
    id: &IdentityBand,
    (xs, ys): (Scale, Scale),
    ((x_lo, x_hi), (y_lo, y_hi)): ((f64, f64), (f64, f64)),
) -> Result<(), ReportError> {
    let err = ReportError::draw(title);
    // edges sampled in data space between the drawn range's ends
    let (a, b) = (xs.inverse(x_lo), xs.inverse(x_hi));
    let along = |k: f64| -> Vec<(f64, f64)> {
        (0..=EDGE_SAMPLES)
            .map(|i| {
                let t = i as f64 / EDGE_SAMPLES as f64;
                let x = xs.inverse(xs.forward(a) + t * (xs.forward(b) - xs.forward(a)));
                (xs.forward(x), ys.forward(x * k))
            })
            .collect()
    };
    let upper = along(1.0 + id.band);
    let lower = along(1.0 - id.band);
    let mut band: Vec<(f64, f64)> = upper.clone();
    band.extend(lower.iter().rev().copied());
    let clip = |p: (f64, f64)| (p.0, p.1.clamp(y_lo, y_hi));
    ctx.draw_series(std::iter::once(Polygon::new(
        band.into_iter().map(clip).collect::<Vec<_>>(),
        BAND_FILL.colour().mix(0.6).filled(),
    )))
    .map_err(&err)?;
    for edge in [upper, lower] {
        ctx.draw_series(DashedLineSeries::new(
            edge.into_iter().map(clip),
            6,
            4,
            IDENTITY_GREY.colour().stroke_width(1),
        ))
        .map_err(&err)?;
    }
    ctx.draw_series(LineSeries::new(
        along(1.0).into_iter().map(clip),
        IDENTITY_GREY.colour().stroke_width(2),
    ))
    .map_err(&err)?;
    Ok(())
}

/// Smallest and largest x and y over all series, after checking every point fits its axis.
fn bounds(chart: &ScatterChart) -> Result<(f64, f64, f64, f64), ReportError> {
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
