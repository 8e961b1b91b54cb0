//! The legend column drawn to the right of the plot area, outside the data, so that it can never
//! cover a line or a bar.

use plotters::prelude::*;

use crate::error::ReportError;
use crate::style::{
    self, Canvas, Dash, LABEL_SIZE, LEGEND_ROW_PX, MARGIN_PX, Marker, Rgb, text_style,
    text_width_px,
};

/// What a legend entry shows before its label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Swatch {
    /// A short stroke with the series' colour and dash, and its point marker.
    Line(Rgb, Dash, Marker),
    /// A filled square (bar parts, heat-map categories).
    Fill(Rgb),
    /// A point marker alone (scatter series, points drawn without a line).
    Marker(Rgb, Marker),
    /// A short stroke alone (a reference line).
    Stroke(Rgb, Dash),
}

/// One row of the legend.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub swatch: Swatch,
    pub label: String,
}

/// Width of the swatch plus the gap before the label.
const SWATCH_PX: u32 = 34;

/// Pixel width the legend column needs for `entries` (0 when there are none).
pub(crate) fn width_px(entries: &[Entry]) -> u32 {
    entries
        .iter()
        .map(|e| SWATCH_PX + text_width_px(&e.label, LABEL_SIZE))
        .max()
        .map_or(0, |w| w + 2 * MARGIN_PX)
}

/// Pixel height the legend column needs for `entries`.
pub(crate) fn height_px(entries: &[Entry]) -> u32 {
    entries.len() as u32 * LEGEND_ROW_PX
}

/// `svg` (a whole document) with its legend declared on the root element, for checks that read
/// the page: `data-legend-entries` (rows drawn) and `data-legend-label-x` (the `x` of every
/// legend label's `<text>`), so a checker can count the labels actually drawn at that x.
pub(crate) fn annotate(svg: String, entries: usize, legend_x: i32) -> String {
    let label_x = legend_x + SWATCH_PX as i32;
    match svg.strip_prefix("<svg ") {
        Some(rest) => format!(
            "<svg data-legend-entries=\"{entries}\" data-legend-label-x=\"{label_x}\" {rest}"
        ),
        None => svg,
    }
}

/// Draws `entries` top-down starting at pixel `(x, y)` of the canvas.
pub(crate) fn draw(
    canvas: &Canvas<'_>,
    chart: &str,
    entries: &[Entry],
    (x, y): (i32, i32),
) -> Result<(), ReportError> {
    let err = ReportError::draw(chart);
    for (i, entry) in entries.iter().enumerate() {
        let mid = y + (i as i32) * LEGEND_ROW_PX as i32 + LEGEND_ROW_PX as i32 / 2;
        match entry.swatch {
            Swatch::Line(colour, dash, marker) => {
                style::draw_dashed_segment(
                    canvas,
                    (x, mid),
                    (x + 26, mid),
                    colour.colour(),
                    dash,
                    2,
                )
                .map_err(&err)?;
                style::draw_marker(canvas, (x + 13, mid), marker, colour.colour(), 3)
                    .map_err(&err)?;
            }
            Swatch::Stroke(colour, dash) => {
                style::draw_dashed_segment(
                    canvas,
                    (x, mid),
                    (x + 26, mid),
                    colour.colour(),
                    dash,
                    2,
                )
                .map_err(&err)?;
            }
            Swatch::Marker(colour, marker) => {
                style::draw_marker(canvas, (x + 13, mid), marker, colour.colour(), 4)
                    .map_err(&err)?;
            }
            Swatch::Fill(colour) => {
                canvas
                    .draw(&Rectangle::new(
                        [(x + 6, mid - 7), (x + 20, mid + 7)],
                        colour.colour().filled(),
                    ))
                    .map_err(&err)?;
                canvas
                    .draw(&Rectangle::new(
                        [(x + 6, mid - 7), (x + 20, mid + 7)],
                        BLACK.mix(0.4).stroke_width(1),
                    ))
                    .map_err(&err)?;
            }
        }
        let label_style =
            text_style(LABEL_SIZE, BLACK).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            ));
        canvas
            .draw_text(&entry.label, &label_style, (x + SWATCH_PX as i32, mid))
            .map_err(&err)?;
    }
    Ok(())
}
