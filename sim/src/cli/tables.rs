//! Terminal tables that fit a 120-column terminal: cells wrap instead of growing a row past the
//! width, and long notes go under the table, numbered, instead of into a 300-column cell.

use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width};

/// Width of the terminal the tables are laid out for, in columns.
pub const TERMINAL_COLUMNS: u16 = 120;

/// A table whose cells wrap so that it fits [`TERMINAL_COLUMNS`].
pub fn table() -> Table {
    let mut t = Table::new();
    t.set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(TERMINAL_COLUMNS);
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

    /// `[n] text` lines, each wrapped at [`TERMINAL_COLUMNS`] with its continuation indented;
    /// empty when there are no notes.
    pub fn render(&self) -> String {
        let width = TERMINAL_COLUMNS as usize;
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
        assert!(
            text.lines()
                .all(|l| l.chars().count() <= TERMINAL_COLUMNS as usize)
        );
        assert!(text.lines().nth(2).unwrap().starts_with("    word"));
    }

    #[test]
    fn a_wide_table_wraps_to_the_terminal() {
        let mut t = table();
        t.set_header(vec!["a", "b"]);
        t.add_row(vec!["x".repeat(200), "y".repeat(50)]);
        let s = t.to_string();
        assert!(
            s.lines()
                .all(|l| l.chars().count() <= TERMINAL_COLUMNS as usize),
            "{s}"
        );
    }
}
