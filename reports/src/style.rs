//! Shared look of every chart: palette, dash patterns, font sizes, text measurement and the SVG
//! canvas every chart kind draws on.
//!
//! plotters' SVG backend writes `<text>` elements and lets the viewer pick the font, so nothing here
//! needs a font file. Layout decisions (legend width, label area sizes, wrapping) use
//! [`text_width_px`], a deliberately generous per-character estimate, so that labels still fit when
//! the viewer's sans-serif font is wide (DejaVu Sans is about 0.55–0.64 em per character).

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::ReportError;

/// Font family written into every `<text>`: a generic family, so any viewer has it.
pub(crate) const FONT: &str = "sans-serif";
/// plotters writes `font-size = size / 1.24`; sizes below are plotters sizes.
pub(crate) const PLOTTERS_SIZE_PER_PX: f64 = 1.24;
/// Chart title.
pub(crate) const TITLE_SIZE: f64 = 24.0;
/// Axis titles ("message size", "bus bandwidth (GB/s)").
pub(crate) const AXIS_TITLE_SIZE: f64 = 18.0;
/// Tick labels, legend entries, cell values.
pub(crate) const LABEL_SIZE: f64 = 16.0;
/// Height of one legend row in pixels.
pub(crate) const LEGEND_ROW_PX: u32 = 20;
/// Default canvas of line and bar charts, before the legend column is added.
pub(crate) const PLOT_WIDTH_PX: u32 = 900;
/// Default canvas height of line and bar charts.
pub(crate) const PLOT_HEIGHT_PX: u32 = 560;
/// Outer margin around everything.
pub(crate) const MARGIN_PX: u32 = 12;

/// A colour as red, green, blue bytes (serialises as `[r, g, b]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// The plotters colour.
    pub(crate) fn colour(self) -> RGBColor {
        RGBColor(self.0, self.1, self.2)
    }

    /// Relative luminance in 0..=1 (sRGB weights), used to pick black or white text over a fill.
    pub(crate) fn luminance(self) -> f64 {
        (0.2126 * f64::from(self.0) + 0.7152 * f64::from(self.1) + 0.0722 * f64::from(self.2))
            / 255.0
    }

    /// Black on light fills, white on dark fills.
    pub(crate) fn text_colour_over(self) -> RGBColor {
        if self.luminance() > 0.5 { BLACK } else { WHITE }
    }
}

/// Twelve colours that stay distinct from each other on white (tab10 plus navy and magenta).
/// Series beyond twelve reuse colours with a different [`Dash`].
pub const PALETTE: [Rgb; 12] = [
    Rgb(0x1f, 0x77, 0xb4),
    Rgb(0xff, 0x7f, 0x0e),
    Rgb(0x2c, 0xa0, 0x2c),
    Rgb(0xd6, 0x27, 0x28),
    Rgb(0x94, 0x67, 0xbd),
    Rgb(0x8c, 0x56, 0x4b),
    Rgb(0xe3, 0x77, 0xc2),
    Rgb(0x7f, 0x7f, 0x7f),
    Rgb(0xbc, 0xbd, 0x22),
    Rgb(0x17, 0xbe, 0xcf),
    Rgb(0x39, 0x3b, 0x79),
    Rgb(0xad, 0x14, 0x57),
];

/// Most legend entries (lines, bar parts) one chart carries: beyond six a reader cannot tell the
/// colours apart at a glance. Callers with more split their data over several charts.
pub const MAX_LEGEND_ENTRIES: usize = 6;

/// Palette colour number `index`, wrapping around.
pub fn palette_colour(index: usize) -> Rgb {
    PALETTE[index % PALETTE.len()]
}

/// Fill of cells that have no value (diagonal of a P2P matrix, pair not measured).
pub(crate) const MISSING_FILL: Rgb = Rgb(0xe6, 0xe6, 0xe6);

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dash {
    /// Continuous line.
    #[default]
    Solid,
    /// Long dashes (e.g. the VM profile against a solid bare-metal one).
    Dashed,
    /// Short dots.
    Dotted,
}

impl Dash {
    /// Dash length and gap in pixels; `None` for a solid line.
    pub(crate) fn pattern_px(self) -> Option<(u32, u32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((9, 5)),
            Dash::Dotted => Some((2, 4)),
        }
    }

    /// Dash chosen automatically for series number `index` when the caller gave none: solid for the
    /// first palette round, then dashed, then dotted, so 36 series stay tellable apart.
    pub(crate) fn auto(index: usize) -> Dash {
        [Dash::Solid, Dash::Dashed, Dash::Dotted][(index / PALETTE.len()) % 3]
    }
}

/// The shape of a line chart's point markers. Several series on one chart get different shapes as
/// well as colours, so they stay tellable apart in greyscale and for colour-blind readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Marker {
    /// Filled circle (`<circle>`).
    #[default]
    Circle,
    /// Filled square (`<rect>`).
    Square,
    /// Filled triangle pointing up (`<polygon>`).
    Triangle,
    /// Filled diamond (`<polygon>`).
    Diamond,
    /// An upright cross of two strokes, unfilled (`<polyline>`s): for points drawn over lines.
    Cross,
}

impl Marker {
    /// Shapes in the order [`Marker::nth`] hands them out.
    pub const ORDER: [Marker; 4] = [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
    ];

    /// Marker of series number `index` (circle, square, triangle, diamond, then again).
    pub fn nth(index: usize) -> Marker {
        Self::ORDER[index % Self::ORDER.len()]
    }
}

/// Draws `marker` centred on pixel `(x, y)` of `canvas`, `radius_px` from centre to edge.
pub(crate) fn draw_marker(
    canvas: &Canvas<'_>,
    (x, y): (i32, i32),
    marker: Marker,
    colour: RGBColor,
    radius_px: i32,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let r = radius_px;
    let fill = colour.filled();
    match marker {
        Marker::Circle => canvas.draw(&Circle::new((x, y), r, fill)),
        Marker::Square => canvas.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], fill)),
        Marker::Triangle => canvas.draw(&Polygon::new(
            vec![(x, y - r - 1), (x + r + 1, y + r), (x - r - 1, y + r)],
            fill,
        )),
        Marker::Diamond => canvas.draw(&Polygon::new(
            vec![
                (x, y - r - 1),
                (x + r + 1, y),
                (x, y + r + 1),
                (x - r - 1, y),
            ],
            fill,
        )),
        Marker::Cross => {
            let style = colour.stroke_width(3);
            canvas.draw(&PathElement::new(vec![(x - r, y), (x + r, y)], style))?;
            canvas.draw(&PathElement::new(vec![(x, y - r), (x, y + r)], style))
        }
    }
}

/// Sequential colour scale (viridis anchors), `t` in 0..=1; dark = low, yellow = high.
pub(crate) fn viridis(t: f64) -> Rgb {
    const ANCHORS: [Rgb; 10] = [
        Rgb(0x44, 0x01, 0x54),
        Rgb(0x48, 0x28, 0x78),
        Rgb(0x3e, 0x49, 0x89),
        Rgb(0x31, 0x68, 0x8e),
        Rgb(0x26, 0x82, 0x8e),
        Rgb(0x1f, 0x9e, 0x89),
        Rgb(0x35, 0xb7, 0x79),
        Rgb(0x6e, 0xce, 0x58),
        Rgb(0xb5, 0xde, 0x2b),
        Rgb(0xfd, 0xe7, 0x25),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pos = t * (ANCHORS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(ANCHORS.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (ANCHORS[i], ANCHORS[i + 1]);
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * f).round() as u8;
    Rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A plotters text style of plotters size `size` in `colour`.
pub(crate) fn text_style(size: f64, colour: RGBColor) -> TextStyle<'static> {
    let mut style = TextStyle::from((FONT, size).into_font());
    style.color = colour.to_backend_color();
    style
}

/// Estimated rendered width in pixels of `text` at plotters size `size`: 0.62 em per character,
/// a little wider than DejaVu Sans digits so that estimates err towards more room.
pub(crate) fn text_width_px(text: &str, size: f64) -> u32 {
    let em_px = size / PLOTTERS_SIZE_PER_PX;
    (text.chars().count() as f64 * 0.62 * em_px).ceil() as u32
}

/// Rendered line height in pixels of text at plotters size `size`.
pub(crate) fn text_height_px(size: f64) -> u32 {
    (size / PLOTTERS_SIZE_PER_PX * 1.25).ceil() as u32
}

/// Caller text made safe for XML: control characters and the noncharacters U+FFFE/U+FFFF (invalid
/// in XML 1.0 and meaningless in a label) become spaces. Markup characters are left alone: plotters' SVG backend escapes `<`, `>`,
/// `&`, `"` and `'` itself, and the HTML builder escapes on output.
pub fn clean_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// `title (unit)`, or just `title` when the unit is empty.
pub(crate) fn with_unit(title: &str, unit: &str) -> String {
    if unit.trim().is_empty() {
        clean_text(title)
    } else {
        clean_text(&format!("{title} ({unit})"))
    }
}

/// The root drawing area every chart draws on.
pub(crate) type Canvas<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Renders an SVG document of `size_px` by running `draw` on a white canvas that already carries the
/// chart title; `draw` gets the whole canvas and the height taken by the title.
pub(crate) fn render_svg(
    title: &str,
    size_px: (u32, u32),
    draw: impl FnOnce(&Canvas<'_>, u32) -> Result<(), ReportError>,
) -> Result<String, ReportError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size_px).into_drawing_area();
        root.fill(&WHITE).map_err(ReportError::draw(title))?;
        let title_style =
            text_style(TITLE_SIZE, BLACK).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ));
        root.draw_text(
            &clean_text(title),
            &title_style,
            ((size_px.0 / 2) as i32, MARGIN_PX as i32),
        )
        .map_err(ReportError::draw(title))?;
        let title_px = MARGIN_PX + text_height_px(TITLE_SIZE) + 6;
        draw(&root, title_px)?;
        root.present().map_err(ReportError::draw(title))?;
    }
    Ok(buf)
}

/// Draws a line from `from` to `to` (pixels) in `colour`, stroked per `dash`, `width_px` wide.
pub(crate) fn draw_dashed_segment(
    canvas: &Canvas<'_>,
    from: (i32, i32),
    to: (i32, i32),
    colour: RGBColor,
    dash: Dash,
    width_px: u32,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let style = colour.stroke_width(width_px);
    match dash.pattern_px() {
        None => canvas.draw(&PathElement::new(vec![from, to], style)),
        Some((on, off)) => canvas.draw(&plotters::element::DashedPathElement::new(
            vec![from, to],
            on,
            off,
            style,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_drops_what_xml_cannot_hold() {
        assert_eq!(clean_text("a\u{1}b\u{FFFE}c\td"), "a b c d");
        assert_eq!(clean_text("<&>\"'"), "<&>\"'");
    }

    #[test]
    fn palette_colours_are_distinct_and_viridis_spans_dark_to_light() {
        for (i, a) in PALETTE.iter().enumerate() {
            for b in &PALETTE[i + 1..] {
                let d = (i32::from(a.0) - i32::from(b.0)).abs()
                    + (i32::from(a.1) - i32::from(b.1)).abs()
                    + (i32::from(a.2) - i32::from(b.2)).abs();
                assert!(d > 60, "{a:?} vs {b:?}");
            }
        }
        assert!(viridis(0.0).luminance() < 0.2 && viridis(1.0).luminance() > 0.8);
    }
}
