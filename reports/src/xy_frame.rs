//! The frame the x–y charts (line, scatter) share: axis ranges fitted to the data, ticks and their
//! labels, the plot area left of a legend, the mesh with axis titles, and the legend itself. A
//! chart computes its data bounds and legend entries and draws only its own marks.

use plotters::prelude::*;

use crate::axis::{Axis, Scale, Ticked};
use crate::error::ReportError;
use crate::legend::{self, Entry};
use crate::style::{
    AXIS_TITLE_SIZE, LABEL_SIZE, MARGIN_PX, PLOT_HEIGHT_PX, PLOT_WIDTH_PX, render_svg,
    text_height_px, text_style, text_width_px, with_unit,
};

/// The drawing context an x–y chart draws its marks into (coordinates already on the axes'
/// drawing scale: `Scale::forward` of data values).
pub(crate) type XyContext<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// Fitted ranges and ticks of both axes.
pub(crate) struct XyFrame<'c> {
    x_axis: &'c Axis,
    y_axis: &'c Axis,
    /// Drawing-space range of x, `[lo, hi)`.
    pub x: (f64, f64),
    /// Drawing-space range of y.
    pub y: (f64, f64),
    x_ticks: Vec<f64>,
    y_ticks: Vec<f64>,
}

/// Distance between the first two ticks (1 when there are fewer than two).
fn tick_step(ticks: &[f64]) -> f64 {
    match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    }
}

impl<'c> XyFrame<'c> {
    /// Fits both axes to the data `(x_min, x_max, y_min, y_max)`; `ranges` override the axes'
    /// own fixed ranges (a scatter's identity line shares one range on both).
    pub fn new(
        x_axis: &'c Axis,
        y_axis: &'c Axis,
        (x_min, x_max, y_min, y_max): (f64, f64, f64, f64),
        ranges: (Option<[f64; 2]>, Option<[f64; 2]>),
        max_x_ticks: usize,
    ) -> Self {
        let x = x_axis.scale.fitted_range(x_min, x_max, ranges.0);
        let y = y_axis.scale.fitted_range(y_min, y_max, ranges.1);
        XyFrame {
            x_axis,
            y_axis,
            x,
            y,
            x_ticks: x_axis.scale.ticks(x.0, x.1, max_x_ticks),
            y_ticks: y_axis.scale.ticks(y.0, y.1, 8),
        }
    }

    pub fn xs(&self) -> Scale {
        self.x_axis.scale
    }

    pub fn ys(&self) -> Scale {
        self.y_axis.scale
    }

    /// The SVG: title, mesh, `marks` drawn by the chart, then the legend of `entries`.
    pub fn render(
        &self,
        title: &str,
        entries: &[Entry],
        marks: impl FnOnce(&mut XyContext<'_, '_>) -> Result<(), ReportError>,
    ) -> Result<String, ReportError> {
        let (xs, ys) = (self.xs(), self.ys());
        let (x_step, y_step) = (tick_step(&self.x_ticks), tick_step(&self.y_ticks));
        let y_tick_w = self
            .y_ticks
            .iter()
            .map(|t| text_width_px(&ys.tick_label(*t, y_step), LABEL_SIZE))
            .max()
            .unwrap_or(0);
        let title_reserve = 2 * MARGIN_PX + text_height_px(crate::style::TITLE_SIZE) + 6;
        let height = PLOT_HEIGHT_PX.max(title_reserve + legend::height_px(entries) + MARGIN_PX);
        let width = PLOT_WIDTH_PX + legend::width_px(entries);

        let legend_x = PLOT_WIDTH_PX as i32 + MARGIN_PX as i32;
        let svg = render_svg(title, (width, height), |canvas, title_px| {
            let err = ReportError::draw(title);
            let (plot_area, _) = canvas.split_horizontally(PLOT_WIDTH_PX);
            let plot_area = plot_area.margin(title_px, MARGIN_PX, MARGIN_PX, MARGIN_PX);
            let mut ctx = ChartBuilder::on(&plot_area)
                .x_label_area_size(
                    text_height_px(LABEL_SIZE) + text_height_px(AXIS_TITLE_SIZE) + 16,
                )
                .y_label_area_size(y_tick_w + text_height_px(AXIS_TITLE_SIZE) + 18)
                .build_cartesian_2d(
                    Ticked::new(self.x.0, self.x.1, self.x_ticks.clone()),
                    Ticked::new(self.y.0, self.y.1, self.y_ticks.clone()),
                )
                .map_err(&err)?;
            ctx.configure_mesh()
                .x_desc(with_unit(&self.x_axis.title, &self.x_axis.unit))
                .y_desc(with_unit(&self.y_axis.title, &self.y_axis.unit))
                .x_label_formatter(&|p| xs.tick_label(*p, x_step))
                .y_label_formatter(&|p| ys.tick_label(*p, y_step))
                .label_style(text_style(LABEL_SIZE, BLACK))
                .axis_desc_style(text_style(AXIS_TITLE_SIZE, BLACK))
                .bold_line_style(BLACK.mix(0.12))
                .light_line_style(TRANSPARENT)
                .draw()
                .map_err(&err)?;
            marks(&mut ctx)?;
            legend::draw(canvas, title, entries, (legend_x, title_px as i32 + 10))
        })?;
        Ok(legend::annotate(svg, entries.len(), legend_x))
    }
}
