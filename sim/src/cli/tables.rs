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
        let mut out = String::new();
        for (i, text) in self.0.iter().enumerate() {
            out.push_str(&wrap(&format!("[{}] ", i + 1), text));
            out.push('\n');
        }
        out
    }
}

/// `prefix` then `text`, word-wrapped at [`terminal_columns`]: the prose printed around the
/// tables (`note: `, `warning: `, verdicts) fits the same width as they do. No trailing newline.
pub fn wrap(prefix: &str, text: &str) -> String {
    wrap_at(prefix, text, usize::from(terminal_columns()))
}

/// [`wrap`] at `width` columns. Lines break only between words, so a flag such as
/// `--max-concurrency` or a path stays whole (a flag with its value), and a word longer than the width gets a line of
/// its own rather than being cut; continuation lines are indented under the text after
/// `prefix`, so the prefix still marks where one note ends. A newline in `text` starts a new
/// (indented) line.
pub fn wrap_at(prefix: &str, text: &str, width: usize) -> String {
    hang_at(prefix, &" ".repeat(prefix.chars().count()), text, width)
}

/// [`wrap`] with continuation lines indented by `indent` rather than under the text: list items
/// (`  item`) whose continuation sits deeper than the next item's start.
pub fn wrap_hanging(prefix: &str, indent: &str, text: &str) -> String {
    hang_at(prefix, indent, text, usize::from(terminal_columns()))
}

fn hang_at(prefix: &str, indent: &str, text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for (p, paragraph) in text.split('\n').enumerate() {
        let lead = if p == 0 { prefix } else { indent };
        let mut line = lead.to_string();
        // whether `line` holds a unit yet: before that the unit goes on whatever its length
        let mut has_word = false;
        for word in units(paragraph) {
            let word = word.as_str();
            let gap = usize::from(has_word);
            if has_word && line.chars().count() + gap + word.chars().count() > width {
                lines.push(std::mem::replace(&mut line, indent.to_string()));
                has_word = false;
            }
            if has_word {
                line.push(' ');
            }
            line.push_str(word);
            has_word = true;
        }
        lines.push(line.trim_end().to_string());
    }
    lines.join("\n")
}

/// The words of `paragraph`, a flag kept with its value (`--tp 8`, `--mem-fraction-static
/// 0.848`) so that a wrapped line never leaves a value stranded from its flag.
fn units(paragraph: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut words = paragraph.split_whitespace().peekable();
    while let Some(w) = words.next() {
        let is_flag = w.len() > 2 && w.starts_with("--") && !w.ends_with([',', ';', ')']);
        match words.peek() {
            Some(v) if is_flag && !v.starts_with("--") => {
                out.push(format!("{w} {v}"));
                words.next();
            }
            _ => out.push(w.to_string()),
        }
    }
    out
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
    fn prose_wraps_between_words_under_its_prefix() {
        let text = "pass --max-concurrency 64 to bench_serving so that the load matches";
        let w = wrap_at("note: ", text, 30);
        assert_eq!(
            w,
            "note: pass\n      --max-concurrency 64 to\n      bench_serving so that\n      the load matches"
        );
        // a word wider than the line stays whole on a line of its own
        let long = "x".repeat(40);
        assert_eq!(
            wrap_at("warning: ", &format!("a {long} b"), 30),
            format!("warning: a\n         {long}\n         b")
        );
        assert_eq!(wrap_at("note: ", "", 30), "note:");
        assert_eq!(
            units("--tp 8 --pp-size 2 --enable-dp-attention, then --x"),
            [
                "--tp 8",
                "--pp-size 2",
                "--enable-dp-attention,",
                "then",
                "--x"
            ]
        );
        assert_eq!(wrap_at("", "one\ntwo", 30), "one\ntwo");
    }

    proptest::proptest! {
        /// Wrapping loses, adds and reorders no word, and a line is wider than the width only
        /// when it holds a single word, or a flag with its value (after its prefix or indent).
        #[test]
        fn wrapping_keeps_the_words_and_the_width(
            words in proptest::collection::vec("(--)?[a-z0-9=,.-]{1,30}", 0..40),
            prefix in "(note: |warning: |\\[12\\] |)",
            width in 20usize..120,
        ) {
            let text = words.join(" ");
            let out = wrap_at(&prefix, &text, width);
            let mut expected: Vec<&str> = prefix.split_whitespace().collect();
            expected.extend(words.iter().map(String::as_str));
            let joined = out.lines().collect::<Vec<_>>().join(" ");
            proptest::prop_assert_eq!(joined.split_whitespace().collect::<Vec<_>>(), expected);
            let indent = prefix.chars().count();
            for (i, line) in out.lines().enumerate() {
                let body = if i == 0 { &line[prefix.trim_end().len()..] } else { line };
                proptest::prop_assert!(i == 0 || line.chars().take(indent).all(|c| c == ' '));
                proptest::prop_assert!(
                    line.chars().count() <= width || units(body).len() == 1,
                    "line {i} of width {width}: {line:?}"
                );
            }
        }
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
