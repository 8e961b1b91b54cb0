//! Heat maps: a matrix of square cells with row and column labels and the value printed in each cell.
//! Numeric matrices (P2P bandwidth in GB/s, latency in µs) get a sequential colour scale with a
//! colour bar and unit; categorical matrices (p2p / host-bounce / broken) get one colour per
//! category and a legend. Both sit to the right of the matrix, outside it.
//!
//! Each cell carries one `<text>`: the formatted value, the category name (when it fits), or `–` for
//! a missing cell (the diagonal, a pair not measured).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use crate::axis::Ticked;
use crate::axis::{Scale, format_number, format_value};
use crate::error::ReportError;
use crate::labels::CategoryLabels;
use crate::legend::{self, Entry, Swatch};
use crate::style::{
    AXIS_TITLE_SIZE, LABEL_SIZE, MARGIN_PX, MISSING_FILL, Rgb, TITLE_SIZE, clean_text,
    palette_colour, render_svg, text_height_px, text_style, text_width_px, viridis,
};

/// A labelled matrix drawn as coloured cells; row 0 is the top row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeatMap {
    /// Chart title, e.g. "P2P read bandwidth, peer access on".
    pub title: String,
    /// What the columns are, e.g. "destination GPU".
    pub x_axis_title: String,
    /// What the rows are, e.g. "source GPU".
    pub y_axis_title: String,
    /// One label per row, top to bottom.
    pub row_labels: Vec<String>,
    /// One label per column, left to right.
    pub column_labels: Vec<String>,
    /// The cell contents.
    pub cells: HeatCells,
}

/// The values of a heat map, `values[row][column]`; `None` is a cell without data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HeatCells {
    /// Measured numbers on a sequential colour scale (dark = low, yellow = high).
    Numeric {
        /// Unit printed on the colour bar, e.g. "GB/s" or "µs".
        unit: String,
        /// `values[row][column]`, finite where present.
        values: Vec<Vec<Option<f64>>>,
    },
    /// A class per cell, drawn in the category's colour.
    Categorical {
        /// The classes, in legend order; cells refer to them by index.
        categories: Vec<Category>,
        /// `values[row][column]` = index into `categories`.
        values: Vec<Vec<Option<usize>>>,
    },
}

/// One class of a categorical heat map, e.g. "host-bounce".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Category {
    /// Legend and cell text.
    pub name: String,
    /// Fill; `None` uses the palette slot of the category's position.
    #[serde(default)]
    pub colour: Option<Rgb>,
}

/// Largest and smallest cell edge in pixels.
const CELL_MAX_PX: u32 = 78;
const CELL_MIN_PX: u32 = 16;
/// Pixels the matrix may take along its longer side before cells shrink.
const MATRIX_PX: u32 = 600;
/// Width of the colour bar.
const BAR_PX: i32 = 18;

/// A cell ready to draw: fill and text.
struct Cell {
    fill: Rgb,
    text: String,
}

/// Renders `map` as an SVG document.
///
/// Errors with [`ReportError::InvalidData`] when the matrix is empty or ragged, its size differs
/// from the label counts, a value is not finite, or a category index is out of range.
pub fn heat_map(map: &HeatMap) -> Result<String, ReportError> {
    let title = map.title.as_str();
    let (rows, cols) = (map.row_labels.len(), map.column_labels.len());
    let (cells, side) = prepare(map)?;
    let cell_px = (MATRIX_PX / rows.max(cols) as u32).clamp(CELL_MIN_PX, CELL_MAX_PX);

    let row_labels: Vec<String> = map.row_labels.iter().map(|l| clean_text(l)).collect();
    let col_labels: Vec<String> = map.column_labels.iter().map(|l| clean_text(l)).collect();
    let col_labels_fit = CategoryLabels::fit(&col_labels, f64::from(cell_px), 1);
    let y_area = row_labels
        .iter()
        .map(|l| text_width_px(l, LABEL_SIZE))
        .max()
        .unwrap_or(0)
        + text_height_px(AXIS_TITLE_SIZE)
        + 20;
    let x_area = col_labels_fit.height_px() + text_height_px(AXIS_TITLE_SIZE) + 14;
    let widest_cell = cells
        .iter()
        .map(|c| text_width_px(&c.text, LABEL_SIZE))
        .max();
    let cell_size = fit_size(widest_cell.unwrap_or(0), cell_px.saturating_sub(6));

    let matrix_w = cols as u32 * cell_px;
    let matrix_h = rows as u32 * cell_px;
    let side_w = side.width_px();
    let title_h = MARGIN_PX + text_height_px(TITLE_SIZE) + 6;
    let left_w = MARGIN_PX + y_area + matrix_w;
    let width = (left_w + side_w + MARGIN_PX).max(text_width_px(title, TITLE_SIZE) + 2 * MARGIN_PX);
    let height = (title_h + matrix_h + x_area + MARGIN_PX)
        .max(title_h + side.height_px() + x_area + MARGIN_PX);

    // Where the side legend lands is known only once the matrix is laid out.
    let legend_x = std::cell::Cell::new(0);
    let svg = render_svg(title, (width, height), |canvas, title_px| {
        let err = ReportError::draw(title);
        let area = canvas.margin(title_px, 0, MARGIN_PX, 0);
        let (left, _) = area.split_horizontally(y_area + matrix_w);
        let (left, _) = left.split_vertically(matrix_h + x_area);
        let mut ctx = ChartBuilder::on(&left)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(
                // Column labels are drawn by `CategoryLabels` (they may need rotating).
                Ticked::new(0.0, cols as f64, Vec::new()),
                Ticked::new(
                    0.0,
                    rows as f64,
                    (0..rows).map(|r| r as f64 + 0.5).collect(),
                ),
            )
            .map_err(&err)?;
        let index = |p: f64, n: usize| (p.floor().max(0.0) as usize).min(n - 1);
        ctx.configure_mesh()
            .disable_mesh()
            .x_desc(clean_text(&map.x_axis_title))
            .y_desc(clean_text(&map.y_axis_title))
            .y_label_formatter(&|p| row_labels[rows - 1 - index(*p, rows)].clone())
            .y_label_style(text_style(LABEL_SIZE, BLACK))
            .axis_desc_style(text_style(AXIS_TITLE_SIZE, BLACK))
            .draw()
            .map_err(&err)?;

        let at = |r: usize, c: usize| (c as f64, (rows - 1 - r) as f64);
        ctx.draw_series(cells.iter().enumerate().map(|(i, cell)| {
            let (x, y) = at(i / cols, i % cols);
            Rectangle::new([(x, y), (x + 1.0, y + 1.0)], cell.fill.colour().filled())
        }))
        .map_err(&err)?;
        ctx.draw_series(cells.iter().enumerate().map(|(i, _)| {
            let (x, y) = at(i / cols, i % cols);
            Rectangle::new([(x, y), (x + 1.0, y + 1.0)], WHITE.stroke_width(1))
        }))
        .map_err(&err)?;
        let centre = Pos::new(HPos::Center, VPos::Center);
        for (i, cell) in cells.iter().enumerate() {
            let (x, y) = at(i / cols, i % cols);
            let px = ctx.backend_coord(&(x + 0.5, y + 0.5));
            let style = text_style(cell_size, cell.fill.text_colour_over()).pos(centre);
            canvas.draw_text(&cell.text, &style, px).map_err(&err)?;
        }

        let anchors: Vec<(i32, i32)> = (0..cols)
            .map(|c| ctx.backend_coord(&(c as f64 + 0.5, 0.0)))
            .collect();
        col_labels_fit.draw(canvas, title, &anchors)?;

        let top_left = ctx.backend_coord(&(cols as f64, rows as f64));
        let bottom = ctx.backend_coord(&(cols as f64, 0.0)).1;
        legend_x.set(top_left.0 + 2 * MARGIN_PX as i32);
        side.draw(canvas, title, (legend_x.get(), top_left.1), bottom)
    })?;
    let rows = match &side {
        Side::Legend(entries) => entries.len(),
        Side::ColourBar { .. } => 0,
    };
    Ok(legend::annotate(svg, rows, legend_x.get()))
}

/// Plotters size that makes text `width_px` wide (at [`LABEL_SIZE`]) fit into `room_px`.
fn fit_size(width_px: u32, room_px: u32) -> f64 {
    if width_px <= room_px || width_px == 0 {
        LABEL_SIZE
    } else {
        (LABEL_SIZE * f64::from(room_px) / f64::from(width_px)).max(8.0)
    }
}

/// What is drawn to the right of the matrix.
enum Side {
    /// Colour bar from `min` to `max` with `unit` above it; `missing` adds a "no data" swatch.
    ColourBar {
        min: f64,
        max: f64,
        unit: String,
        missing: bool,
    },
    /// Category legend.
    Legend(Vec<Entry>),
}

impl Side {
    fn ticks(min: f64, max: f64) -> Vec<f64> {
        Scale::Linear.ticks(min, max, 6)
    }

    fn width_px(&self) -> u32 {
        match self {
            Side::ColourBar {
                min,
                max,
                unit,
                missing,
            } => {
                let ticks = Self::ticks(*min, *max);
                let step = ticks.get(1).map_or(1.0, |b| b - ticks[0]);
                let tick_w = ticks
                    .iter()
                    .map(|t| text_width_px(&format_number(*t, step), LABEL_SIZE))
                    .max()
                    .unwrap_or(0);
                let bar_w = BAR_PX as u32 + 8 + tick_w;
                let unit_w = text_width_px(unit, AXIS_TITLE_SIZE);
                let missing_w = if *missing {
                    26 + text_width_px("no data", LABEL_SIZE)
                } else {
                    0
                };
                2 * MARGIN_PX + bar_w.max(unit_w).max(missing_w)
            }
            Side::Legend(entries) => MARGIN_PX + legend::width_px(entries),
        }
    }

    fn height_px(&self) -> u32 {
        match self {
            Side::ColourBar { .. } => 160,
            Side::Legend(entries) => legend::height_px(entries) + 20,
        }
    }

    /// Draws at pixel `(x, top)`; the matrix spans `top..bottom`.
    fn draw(
        &self,
        canvas: &crate::style::Canvas<'_>,
        title: &str,
        (x, top): (i32, i32),
        bottom: i32,
    ) -> Result<(), ReportError> {
        let err = ReportError::draw(title);
        match self {
            Side::Legend(entries) => legend::draw(canvas, title, entries, (x, top)),
            Side::ColourBar {
                min,
                max,
                unit,
                missing,
            } => {
                let unit_h = text_height_px(AXIS_TITLE_SIZE) as i32 + 4;
                let left = Pos::new(HPos::Left, VPos::Top);
                canvas
                    .draw_text(
                        &clean_text(unit),
                        &text_style(AXIS_TITLE_SIZE, BLACK).pos(left),
                        (x, top),
                    )
                    .map_err(&err)?;
                let no_data_h = if *missing { 28 } else { 0 };
                let (y0, y1) = (top + unit_h + 8, bottom - no_data_h);
                let span = (max - min).max(f64::MIN_POSITIVE);
                let to_y = |v: f64| y1 - (((v - min) / span) * f64::from(y1 - y0)).round() as i32;
                // 64 strips approximate a gradient: plotters has no gradient fill.
                const STRIPS: i32 = 64;
                for s in 0..STRIPS {
                    let ya = y1 - (y1 - y0) * s / STRIPS;
                    let yb = y1 - (y1 - y0) * (s + 1) / STRIPS;
                    let colour = viridis((f64::from(s) + 0.5) / f64::from(STRIPS)).colour();
                    canvas
                        .draw(&Rectangle::new(
                            [(x, yb), (x + BAR_PX, ya)],
                            colour.filled(),
                        ))
                        .map_err(&err)?;
                }
                let ticks = Self::ticks(*min, *max);
                let step = ticks.get(1).map_or(1.0, |b| b - ticks[0]);
                let mid_left = Pos::new(HPos::Left, VPos::Center);
                for t in ticks {
                    let y = to_y(t);
                    canvas
                        .draw(&PathElement::new(
                            vec![(x + BAR_PX, y), (x + BAR_PX + 4, y)],
                            BLACK,
                        ))
                        .map_err(&err)?;
                    canvas
                        .draw_text(
                            &format_number(t, step),
                            &text_style(LABEL_SIZE, BLACK).pos(mid_left),
                            (x + BAR_PX + 8, y),
                        )
                        .map_err(&err)?;
                }
                if *missing {
                    let no_data = [Entry {
                        swatch: Swatch::Fill(MISSING_FILL),
                        label: "no data".to_owned(),
                    }];
                    legend::draw(canvas, title, &no_data, (x - 6, bottom - 22))?;
                }
                Ok(())
            }
        }
    }
}

/// Checks the matrix shape and values; returns the cells row-major and the side panel.
fn prepare(map: &HeatMap) -> Result<(Vec<Cell>, Side), ReportError> {
    let title = map.title.as_str();
    let (rows, cols) = (map.row_labels.len(), map.column_labels.len());
    if rows == 0 || cols == 0 {
        return Err(ReportError::invalid(
            title,
            "heat map needs at least one row and one column",
        ));
    }
    let check_shape = |lens: Vec<usize>| -> Result<(), ReportError> {
        if lens.len() != rows {
            return Err(ReportError::invalid(
                title,
                format!("{} rows of values for {rows} row labels", lens.len()),
            ));
        }
        match lens.iter().enumerate().find(|(_, l)| **l != cols) {
            Some((r, l)) => Err(ReportError::invalid(
                title,
                format!("row {r} has {l} values for {cols} column labels"),
            )),
            None => Ok(()),
        }
    };
    let missing = || Cell {
        fill: MISSING_FILL,
        text: "–".to_owned(),
    };
    match &map.cells {
        HeatCells::Numeric { unit, values } => {
            check_shape(values.iter().map(Vec::len).collect())?;
            let present = values.iter().flatten().flatten();
            if let Some(bad) = present.clone().find(|v| !v.is_finite()) {
                return Err(ReportError::invalid(
                    title,
                    format!("cell value {bad} is not finite"),
                ));
            }
            let min = present.clone().copied().fold(f64::INFINITY, f64::min);
            let max = present.copied().fold(f64::NEG_INFINITY, f64::max);
            let (min, max) = if min.is_finite() {
                (min, max)
            } else {
                (0.0, 1.0)
            };
            let span = max - min;
            let cells = values
                .iter()
                .flatten()
                .map(|v| match v {
                    Some(v) => Cell {
                        fill: viridis(if span > 0.0 { (v - min) / span } else { 0.5 }),
                        text: format_value(*v),
                    },
                    None => missing(),
                })
                .collect::<Vec<_>>();
            let missing = values.iter().flatten().any(Option::is_none);
            let side = Side::ColourBar {
                min,
                max: if span > 0.0 { max } else { min + 1.0 },
                unit: unit.clone(),
                missing,
            };
            Ok((cells, side))
        }
        HeatCells::Categorical { categories, values } => {
            check_shape(values.iter().map(Vec::len).collect())?;
            let colour = |i: usize| categories[i].colour.unwrap_or_else(|| palette_colour(i));
            let mut cells = Vec::with_capacity(rows * cols);
            for v in values.iter().flatten() {
                cells.push(match v {
                    Some(i) if *i < categories.len() => Cell {
                        fill: colour(*i),
                        text: clean_text(&categories[*i].name),
                    },
                    Some(i) => {
                        return Err(ReportError::invalid(
                            title,
                            format!(
                                "category index {i} but only {} categories",
                                categories.len()
                            ),
                        ));
                    }
                    None => missing(),
                });
            }
            let entries = categories
                .iter()
                .enumerate()
                .map(|(i, c)| Entry {
                    swatch: Swatch::Fill(colour(i)),
                    label: clean_text(&c.name),
                })
                .collect();
            Ok((cells, Side::Legend(entries)))
        }
    }
}
