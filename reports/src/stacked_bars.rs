//! Stacked bars: one bar per category (e.g. per parallel layout), split into named parts (compute,
//! weight reads, KV reads, all-reduce, all-to-all, P2P, bubble), total printed above each bar.
//! [`crate::memory_bars`] reuses this renderer and adds a reference line.
//!
//! Each part of each bar is one filled `<rect>` (zero-height parts included), so the number of
//! rectangles in a part's colour equals the number of categories.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use crate::axis::Ticked;
use crate::axis::{Scale, format_number, format_value};
use crate::error::ReportError;
use crate::labels::CategoryLabels;
use crate::legend::{self, Entry, Swatch};
use crate::style::Canvas;
use crate::style::{
    AXIS_TITLE_SIZE, LABEL_SIZE, MARGIN_PX, PLOT_HEIGHT_PX, PLOT_WIDTH_PX, Rgb, TITLE_SIZE,
    clean_text, palette_colour, render_svg, text_height_px, text_style, text_width_px, with_unit,
};

/// Stacked bars: categories along x, parts stacked bottom-up in the order given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackedBars {
    /// Chart title, e.g. "decode step time by component, GLM-5 @ 64 concurrent".
    pub title: String,
    /// What the categories are, e.g. "layout".
    pub category_title: String,
    /// What the bar heights measure, e.g. "time per decode step".
    pub value_title: String,
    /// Unit of the bar heights, e.g. "ms".
    pub unit: String,
    /// One label per bar, e.g. "TP8", "TP4 PP2", "EP8".
    pub categories: Vec<String>,
    /// Bar segments, bottom first; each has one value per category.
    pub parts: Vec<BarPart>,
}

/// One named segment of every bar, e.g. "all-reduce".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BarPart {
    /// Legend text.
    pub name: String,
    /// Height of this part in each bar, in the chart's unit; one per category, non-negative.
    pub values: Vec<f64>,
    /// Palette slot; `None` uses the part's position.
    #[serde(default)]
    pub colour_index: Option<usize>,
}

impl BarPart {
    /// A part with automatic colour.
    pub fn new(name: impl Into<String>, values: Vec<f64>) -> Self {
        Self {
            name: name.into(),
            values,
            colour_index: None,
        }
    }

    fn colour(&self, position: usize) -> Rgb {
        palette_colour(self.colour_index.unwrap_or(position))
    }
}

/// Renders `bars` as an SVG document.
///
/// Errors with [`ReportError::InvalidData`] when there are no categories or parts, a part's value
/// count differs from the category count, or a value is negative or not finite.
pub fn stacked_bars(bars: &StackedBars) -> Result<String, ReportError> {
    render(bars, None)
}

/// A horizontal line across the plot at `value_units` with `label` beside it.
pub(crate) struct Reference<'a> {
    pub value_units: f64,
    pub label: &'a str,
}

/// Shared renderer of stacked and memory bars.
pub(crate) fn render(
    bars: &StackedBars,
    reference: Option<Reference<'_>>,
) -> Result<String, ReportError> {
    let title = bars.title.as_str();
    let totals = validate(bars)?;
    let n = bars.categories.len();
    let top = totals
        .iter()
        .copied()
        .chain(reference.as_ref().map(|r| r.value_units))
        .fold(0.0f64, f64::max);
    let y_hi = if top > 0.0 { top * 1.12 } else { 1.0 };
    let y_ticks = Scale::Linear.ticks(0.0, y_hi, 8);
    let y_step = y_ticks.get(1).copied().unwrap_or(1.0);
    let y_tick_w = y_ticks
        .iter()
        .map(|t| text_width_px(&format_number(*t, y_step), LABEL_SIZE))
        .max()
        .unwrap_or(0);
    let y_area = y_tick_w + text_height_px(AXIS_TITLE_SIZE) + 18;
    let ref_label = reference.as_ref().map(|r| clean_text(r.label));
    let right_px = MARGIN_PX
        + ref_label
            .as_deref()
            .map_or(0, |l| text_width_px(l, LABEL_SIZE) + 10);

    let slot_px = f64::from(PLOT_WIDTH_PX - MARGIN_PX - right_px - y_area) / n as f64;
    let cleaned: Vec<String> = bars.categories.iter().map(|c| clean_text(c)).collect();
    let labels = CategoryLabels::fit(&cleaned, slot_px, 3);
    let x_area = labels.height_px() + text_height_px(AXIS_TITLE_SIZE) + 14;

    let entries: Vec<Entry> = bars
        .parts
        .iter()
        .enumerate()
        .rev() // legend top-down matches the stack top-down
        .map(|(i, p)| Entry {
            swatch: Swatch::Fill(p.colour(i)),
            label: clean_text(&p.name),
        })
        .collect();
    let legend_w = legend::width_px(&entries);
    let title_reserve = 2 * MARGIN_PX + text_height_px(TITLE_SIZE) + 6;
    let height = (PLOT_HEIGHT_PX + x_area.saturating_sub(120))
        .max(title_reserve + legend::height_px(&entries) + MARGIN_PX);
    let width = PLOT_WIDTH_PX + legend_w;

    let legend_x = PLOT_WIDTH_PX as i32 + MARGIN_PX as i32;
    let svg = render_svg(title, (width, height), |canvas, title_px| {
        let err = ReportError::draw(title);
        let (plot_area, _) = canvas.split_horizontally(PLOT_WIDTH_PX);
        let plot_area = plot_area.margin(title_px, MARGIN_PX, MARGIN_PX, right_px);
        let mut ctx = ChartBuilder::on(&plot_area)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(
                Ticked::new(0.0, n as f64, vec![]),
                Ticked::new(0.0, y_hi, y_ticks.clone()),
            )
            .map_err(&err)?;
        ctx.configure_mesh()
            .disable_x_mesh()
            .x_desc(clean_text(&bars.category_title))
            .y_desc(with_unit(&bars.value_title, &bars.unit))
            .y_label_formatter(&|v| format_number(*v, y_step))
            .label_style(text_style(LABEL_SIZE, BLACK))
            .axis_desc_style(text_style(AXIS_TITLE_SIZE, BLACK))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(&err)?;

        let mut base = vec![0.0f64; n];
        for (pi, part) in bars.parts.iter().enumerate() {
            let fill = part.colour(pi).colour().filled();
            ctx.draw_series(part.values.iter().enumerate().map(|(ci, v)| {
                let (x0, x1) = (ci as f64 + 0.15, ci as f64 + 0.85);
                Rectangle::new([(x0, base[ci]), (x1, base[ci] + v)], fill)
            }))
            .map_err(&err)?;
            for (b, v) in base.iter_mut().zip(&part.values) {
                *b += v;
            }
        }

        let anchors: Vec<(i32, i32)> = (0..n)
            .map(|ci| ctx.backend_coord(&(ci as f64 + 0.5, 0.0)))
            .collect();
        labels.draw(canvas, title, &anchors)?;

        if let (Some(r), Some(label)) = (&reference, &ref_label) {
            draw_reference(canvas, &ctx, r.value_units, label, n, title)?;
        }
        // Totals last, on a white backing, so the reference line never runs through them.
        draw_totals(canvas, &ctx, &totals, title)?;
        legend::draw(canvas, title, &entries, (legend_x, title_px as i32 + 10))
    })?;
    Ok(legend::annotate(svg, entries.len(), legend_x))
}

/// The plot's coordinates: categories across, values up.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// A dashed red line across the plot at `value_units`, `label` at its right end.
fn draw_reference(
    canvas: &Canvas<'_>,
    ctx: &Plot<'_, '_>,
    value_units: f64,
    label: &str,
    n: usize,
    title: &str,
) -> Result<(), ReportError> {
    let err = ReportError::draw(title);
    let line = RGBColor(0xc0, 0x00, 0x00);
    let (x0, y) = ctx.backend_coord(&(0.0, value_units));
    let (x1, _) = ctx.backend_coord(&(n as f64, value_units));
    crate::style::draw_dashed_segment(
        canvas,
        (x0, y),
        (x1, y),
        line,
        crate::style::Dash::Dashed,
        2,
    )
    .map_err(&err)?;
    canvas
        .draw_text(
            label,
            &text_style(LABEL_SIZE, line).pos(Pos::new(HPos::Left, VPos::Center)),
            (x1 + 6, y),
        )
        .map_err(&err)?;
    Ok(())
}

/// Each bar's total above it, on a white backing.
fn draw_totals(
    canvas: &Canvas<'_>,
    ctx: &Plot<'_, '_>,
    totals: &[f64],
    title: &str,
) -> Result<(), ReportError> {
    let err = ReportError::draw(title);
    for (ci, total) in totals.iter().enumerate() {
        let (x, y_top) = ctx.backend_coord(&(ci as f64 + 0.5, *total));
        let text = format_value(*total);
        let half_w = text_width_px(&text, LABEL_SIZE) as i32 / 2 + 2;
        let h = text_height_px(LABEL_SIZE) as i32;
        canvas
            .draw(&Rectangle::new(
                [(x - half_w, y_top - 3 - h), (x + half_w, y_top - 2)],
                WHITE.filled(),
            ))
            .map_err(&err)?;
        canvas
            .draw_text(
                &text,
                &text_style(LABEL_SIZE, BLACK).pos(Pos::new(HPos::Center, VPos::Bottom)),
                (x, y_top - 3),
            )
            .map_err(&err)?;
    }
    Ok(())
}

/// Checks shapes and values; returns the bar totals.
fn validate(bars: &StackedBars) -> Result<Vec<f64>, ReportError> {
    let title = bars.title.as_str();
    let n = bars.categories.len();
    if n == 0 || bars.parts.is_empty() {
        return Err(ReportError::invalid(
            title,
            "stacked bars need at least one category and one part",
        ));
    }
    let mut totals = vec![0.0; n];
    for part in &bars.parts {
        if part.values.len() != n {
            return Err(ReportError::invalid(
                title,
                format!(
                    "part \"{}\" has {} values for {n} categories",
                    part.name,
                    part.values.len()
                ),
            ));
        }
        for (ci, v) in part.values.iter().enumerate() {
            if !(v.is_finite() && *v >= 0.0) {
                return Err(ReportError::invalid(
                    title,
                    format!(
                        "part \"{}\" of \"{}\" is {v}; bar parts must be finite and non-negative",
                        part.name, bars.categories[ci]
                    ),
                ));
            }
            totals[ci] += v;
        }
    }
    Ok(totals)
}
