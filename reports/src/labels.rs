//! Category labels under a row of slots (bars, heat-map columns): wrapped at spaces and shrunk a
//! little when that fits, otherwise turned to read bottom-up so long names never overlap.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::ReportError;
use crate::style::{
    Canvas, LABEL_SIZE, PLOTTERS_SIZE_PER_PX, text_height_px, text_style, text_width_px,
};

/// Smallest plotters size a label is shrunk to before it is rotated instead.
const MIN_SIZE: f64 = 11.0;

/// How the labels are laid out.
enum Mode {
    /// Each label as lines, centred under its slot.
    Wrapped(Vec<Vec<String>>),
    /// Each label on one line, rotated to read bottom-up, hanging below the axis.
    Rotated(Vec<String>),
}

/// Labels fitted to slots of one width.
pub(crate) struct CategoryLabels {
    size: f64,
    mode: Mode,
}

impl CategoryLabels {
    /// Lays out `labels` (already cleaned) for slots `slot_px` wide, wrapping into at most
    /// `max_lines` lines before rotating instead.
    pub(crate) fn fit(labels: &[String], slot_px: f64, max_lines: usize) -> Self {
        let room = (slot_px - 4.0).max(1.0);
        let widest_word = labels
            .iter()
            .flat_map(|c| c.split_whitespace())
            .map(|w| f64::from(text_width_px(w, LABEL_SIZE)))
            .fold(0.0, f64::max);
        let size = if widest_word > room {
            LABEL_SIZE * room / widest_word
        } else {
            LABEL_SIZE
        };
        if size >= MIN_SIZE {
            let wrapped: Vec<Vec<String>> = labels.iter().map(|l| wrap(l, room, size)).collect();
            if wrapped.iter().all(|l| l.len() <= max_lines) {
                return Self {
                    size,
                    mode: Mode::Wrapped(wrapped),
                };
            }
        }
        // Rotated: the line height must fit across the slot.
        let size = LABEL_SIZE
            .min(slot_px * PLOTTERS_SIZE_PER_PX / 1.3)
            .max(6.0);
        Self {
            size,
            mode: Mode::Rotated(labels.to_vec()),
        }
    }

    /// Pixels needed below the axis.
    pub(crate) fn height_px(&self) -> u32 {
        match &self.mode {
            Mode::Wrapped(lines) => {
                let n = lines.iter().map(Vec::len).max().unwrap_or(1) as u32;
                n * text_height_px(self.size) + 8
            }
            Mode::Rotated(labels) => {
                labels
                    .iter()
                    .map(|l| text_width_px(l, self.size))
                    .max()
                    .unwrap_or(0)
                    + 10
            }
        }
    }

    /// Draws label `i` under pixel `anchors[i]` = (slot centre x, axis y).
    pub(crate) fn draw(
        &self,
        canvas: &Canvas<'_>,
        chart: &str,
        anchors: &[(i32, i32)],
    ) -> Result<(), ReportError> {
        let err = ReportError::draw(chart);
        match &self.mode {
            Mode::Wrapped(labels) => {
                let style = text_style(self.size, BLACK).pos(Pos::new(HPos::Center, VPos::Top));
                let line_px = text_height_px(self.size) as i32;
                for (lines, (x, y)) in labels.iter().zip(anchors) {
                    for (li, line) in lines.iter().enumerate() {
                        canvas
                            .draw_text(line, &style, (*x, y + 6 + li as i32 * line_px))
                            .map_err(&err)?;
                    }
                }
            }
            Mode::Rotated(labels) => {
                let style = text_style(self.size, BLACK)
                    .transform(FontTransform::Rotate270)
                    .pos(Pos::new(HPos::Right, VPos::Center));
                for (label, (x, y)) in labels.iter().zip(anchors) {
                    canvas.draw_text(label, &style, (*x, y + 6)).map_err(&err)?;
                }
            }
        }
        Ok(())
    }
}

/// Greedy word wrap of `text` into lines no wider than `max_px` at plotters size `size` (a single
/// word wider than that stays whole on its own line).
fn wrap(text: &str, max_px: f64, size: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if f64::from(text_width_px(&format!("{line} {word}"), size)) <= max_px => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_words_and_fits() {
        assert_eq!(wrap("TP4 PP2 EP4", 40.0, 16.0), vec!["TP4", "PP2", "EP4"]);
        assert_eq!(wrap("TP8", 10.0, 16.0), vec!["TP8"]);
        assert_eq!(wrap("a b", 500.0, 16.0), vec!["a b"]);
    }

    #[test]
    fn long_words_rotate_short_ones_wrap() {
        let short = CategoryLabels::fit(&["TP4 PP2".to_owned()], 40.0, 3);
        assert!(matches!(short.mode, Mode::Wrapped(_)));
        let long = CategoryLabels::fit(&["--enable-dp-attention".to_owned()], 40.0, 3);
        assert!(matches!(long.mode, Mode::Rotated(_)));
        assert!(long.height_px() > short.height_px());
    }
}
