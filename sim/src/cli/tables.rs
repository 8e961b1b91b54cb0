//! Terminal tables that fit the terminal (`COLUMNS`, else 100 columns): cells wrap instead of
//! growing a row past the width, and long notes go under the table, numbered, instead of into a
//! 300-column cell.

use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width};

/// Width the tables are laid out for when `COLUMNS` says nothing usable: output is often piped
/// (where no terminal reports a width), and 100 columns reads on a laptop's half screen.
pub const DEFAULT_COLUMNS: u16 = 100;
/// Narrower than this and a ranked table's flag column wraps every word: the width is clamped.
const MIN_COLUMNS: u16 = 60;
/// Wider than this is a typo, not a terminal.
const MAX_COLUMNS: u16 = 1000;

/// The terminal's width in columns: `COLUMNS` (as shells set it) within 60–1000, else 100.
pub fn terminal_columns() -> u16 {
    columns_from(std::env::var("COLUMNS").ok().as_deref())
}

fn columns_from(value: Option<&str>) -> u16 {
    value
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&c| c > 0)
        .map_or(DEFAULT_COLUMNS, |c| {
            c.clamp(u32::from(MIN_COLUMNS), u32::from(MAX_COLUMNS)) as u16
        })
}

/// A table whose cells wrap so that it fits [`terminal_columns`].
pub fn table() -> Table {
    let mut t = Table::new();
    t.set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(terminal_columns());
    t
}

/// Keeps `columns` (names a user copies: presets, layouts) unwrapped; the other columns wrap.
/// Call after the header is set.
pub fn keep_whole(t: &mut Table, columns: &[usize]) {
    for &i in columns {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

/// Gives column `i` at least `columns` of width, so that it wraps between its words (flag
/// lists) rather than inside them.
pub fn at_least(t: &mut Table, i: usize, columns: u16) {
    if let Some(c) = t.column_mut(i) {
        c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(columns)));
    }
}

/// Notes that table cells refer to as `[n]`, printed under the table; the same text is one note.
#[derive(Debug, Default)]
pub struct Notes(Vec<String>);

impl Notes {
    /// The cell for `text`: `[n]` of its note, empty for no text.
    pub fn mark(&mut self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        let i = match self.0.iter().position(|n| n == text) {
            Some(i) => i,
            None => {
                self.0.push(text.to_string());
                self.0.len() - 1
            }
        };
        format!("[{}]", i + 1)
    }

    /// `[n] text` lines, each wrapped at [`terminal_columns`] with its continuation indented;
    /// empty when there are no notes.
    pub fn render(&self) -> String {
        let width = usize::from(terminal_columns());
        let mut out = String::new();
        for (i, text) in self.0.iter().enumerate() {
            let mark = format!("[{}] ", i + 1);
            let indent = " ".repeat(mark.chars().count());
            let mut line = mark.clone();
            for word in text.split_whitespace() {
                let fits = line.chars().count() + word.chars().count() < width;
                if !fits && line.trim_end().len() > mark.trim_end().len() {
                    out.push_str(line.trim_end());
                    out.push('\n');
                    line = indent.clone();
                }
                line.push_str(word);
                line.push(' ');
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_numbered_once_and_wrapped() {
        let mut n = Notes::default();
        assert_eq!(n.mark(""), "");
        assert_eq!(n.mark("a"), "[1]");
        let long = "word ".repeat(60);
        assert_eq!(n.mark(&long), "[2]");
        assert_eq!(n.mark("a"), "[1]");
        let text = n.render();
        assert!(text.starts_with("[1] a\n[2] word"));
        let width = usize::from(terminal_columns());
        assert!(text.lines().all(|l| l.chars().count() <= width));
        assert!(text.lines().nth(2).unwrap().starts_with("    word"));
    }

    #[test]
    fn a_wide_table_wraps_to_the_terminal() {
        let mut t = table();
        t.set_header(vec!["a", "b"]);
        t.add_row(vec!["x".repeat(200), "y".repeat(50)]);
        let s = t.to_string();
        let width = usize::from(terminal_columns());
        assert!(s.lines().all(|l| l.chars().count() <= width), "{s}");
    }

    #[test]
    fn the_width_is_columns_within_bounds_else_100() {
        assert_eq!(columns_from(None), 100);
        assert_eq!(columns_from(Some("")), 100);
        assert_eq!(columns_from(Some("wide")), 100);
        assert_eq!(columns_from(Some("0")), 100);
        assert_eq!(columns_from(Some("132")), 132);
        assert_eq!(columns_from(Some(" 80 ")), 80);
        assert_eq!(columns_from(Some("20")), 60);
        assert_eq!(columns_from(Some("99999")), 1000);
    }
}
