//! A self-contained HTML report page: title, summary paragraphs, tables of plain strings and figures
//! with inline SVG and a caption. No scripts, no external stylesheet, no network fetch: the file can
//! be mailed or opened from disk on an air-gapped box.
//!
//! Figures are inlined (not `<img src=…>`) so the page is one file and its chart text stays
//! searchable. Caller text is escaped here; SVG must come from this crate's chart functions, which
//! escape their own text (checked: a figure must be a single `<svg>` element).
//!
//! The output is well-formed XML as well as HTML5 (`<meta … />`, quoted attributes), so tests and
//! tools can parse it with an XML parser.

use serde::{Deserialize, Serialize};

use crate::error::ReportError;
use crate::style::clean_text;

/// A report page, rendered with [`Page::render`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Page {
    /// Page title (`<title>` and the top heading).
    pub title: String,
    /// Content in order.
    pub blocks: Vec<Block>,
}

/// One piece of page content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Block {
    /// A section heading.
    Heading {
        /// Heading text.
        text: String,
    },
    /// A paragraph of plain text (a verdict, a caveat).
    Paragraph {
        /// Paragraph text.
        text: String,
    },
    /// A line to copy as it is (a command), shown in a monospaced block.
    Code {
        /// The text, one or more lines.
        text: String,
    },
    /// A summary table.
    Table(Table),
    /// A chart with a caption.
    Figure(Figure),
}

/// A table of plain strings; every row has as many cells as the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Caption above the table; empty for none.
    #[serde(default)]
    pub caption: String,
    /// Column headings.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
    /// When set: the table lists, in its first column, items left out of the figures of this
    /// [`Figure::group`] (written as `data-not-plotted-in`, so a checker can assert that none of
    /// them is drawn there).
    #[serde(default)]
    pub not_plotted_in: Option<String>,
}

/// A chart and its caption.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// SVG document from one of this crate's chart functions.
    pub svg: String,
    /// Caption under the chart.
    pub caption: String,
    /// Which group of figures it belongs to (written as `data-group`), e.g. one machine's charts.
    #[serde(default)]
    pub group: Option<String>,
}

impl Page {
    /// An empty page titled `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    /// Adds a section heading.
    pub fn heading(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Heading { text: text.into() });
        self
    }

    /// Adds a paragraph.
    pub fn paragraph(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Paragraph { text: text.into() });
        self
    }

    /// Adds a table.
    pub fn table(
        mut self,
        caption: impl Into<String>,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    ) -> Self {
        self.blocks.push(Block::Table(Table {
            caption: caption.into(),
            header,
            rows,
            not_plotted_in: None,
        }));
        self
    }

    /// Adds a table whose first column names items that the figures of `group` leave out.
    pub fn not_plotted_table(
        mut self,
        caption: impl Into<String>,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
        group: impl Into<String>,
    ) -> Self {
        self.blocks.push(Block::Table(Table {
            caption: caption.into(),
            header,
            rows,
            not_plotted_in: Some(group.into()),
        }));
        self
    }

    /// Adds a block of text to copy as it is (a command line).
    pub fn code(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Code { text: text.into() });
        self
    }

    /// Adds a figure.
    pub fn figure(self, svg: impl Into<String>, caption: impl Into<String>) -> Self {
        self.figure_in(svg, caption, None)
    }

    /// Adds a figure of `group` (see [`Figure::group`]).
    pub fn figure_in(
        mut self,
        svg: impl Into<String>,
        caption: impl Into<String>,
        group: Option<String>,
    ) -> Self {
        self.blocks.push(Block::Figure(Figure {
            svg: svg.into(),
            caption: caption.into(),
            group,
        }));
        self
    }

    /// The page as one HTML document.
    ///
    /// Errors with [`ReportError::InvalidData`] when a table row's length differs from its header's,
    /// or a figure is not a single `<svg>` element.
    pub fn render(&self) -> Result<String, ReportError> {
        let mut out = String::with_capacity(4096);
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n");
        out.push_str(
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n",
        );
        push_element(&mut out, "title", &self.title);
        out.push_str("<style>");
        out.push_str(STYLE);
        out.push_str("</style>\n</head>\n<body>\n");
        push_element(&mut out, "h1", &self.title);
        for (i, block) in self.blocks.iter().enumerate() {
            match block {
                Block::Heading { text } => push_element(&mut out, "h2", text),
                Block::Paragraph { text } => push_element(&mut out, "p", text),
                Block::Code { text } => {
                    out.push_str("<pre><code>");
                    out.push_str(&escape(text));
                    out.push_str("</code></pre>\n");
                }
                Block::Table(t) => self.push_table(&mut out, i, t)?,
                Block::Figure(f) => self.push_figure(&mut out, i, f)?,
            }
        }
        out.push_str("</body>\n</html>\n");
        Ok(out)
    }

    fn push_table(&self, out: &mut String, index: usize, t: &Table) -> Result<(), ReportError> {
        if let Some((r, row)) = t
            .rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != t.header.len())
        {
            return Err(ReportError::invalid(
                &self.title,
                format!(
                    "table {index} row {r} has {} cells for {} header columns",
                    row.len(),
                    t.header.len()
                ),
            ));
        }
        match &t.not_plotted_in {
            Some(g) => {
                out.push_str("<table data-not-plotted-in=\"");
                out.push_str(&escape(g));
                out.push_str("\">\n");
            }
            None => out.push_str("<table>\n"),
        }
        if !t.caption.is_empty() {
            push_element(out, "caption", &t.caption);
        }
        out.push_str("<thead><tr>");
        for h in &t.header {
            push_element(out, "th", h);
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &t.rows {
            out.push_str("<tr>");
            for cell in row {
                push_element(out, "td", cell);
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        Ok(())
    }

    fn push_figure(&self, out: &mut String, index: usize, f: &Figure) -> Result<(), ReportError> {
        let svg = f.svg.trim();
        // A single element: starts with <svg and ends with its closing tag, nothing after.
        let single = svg.starts_with("<svg")
            && svg.ends_with("</svg>")
            && svg.matches("</svg>").count() == 1;
        if !single || svg.contains("<script") || svg.contains("<foreignObject") {
            return Err(ReportError::invalid(
                &self.title,
                format!("figure {index} is not a single <svg> element from a reports chart"),
            ));
        }
        match &f.group {
            Some(g) => {
                out.push_str("<figure data-group=\"");
                out.push_str(&escape(g));
                out.push_str("\">\n");
            }
            None => out.push_str("<figure>\n"),
        }
        out.push_str(svg);
        out.push('\n');
        push_element(out, "figcaption", &f.caption);
        out.push_str("</figure>\n");
        Ok(())
    }
}

/// Appends `<tag>escaped text</tag>` and a newline.
fn push_element(out: &mut String, tag: &str, text: &str) {
    out.push('<');
    out.push_str(tag);
    out.push('>');
    out.push_str(&escape(text));
    out.push_str("</");
    out.push_str(tag);
    out.push_str(">\n");
}

/// Escapes text for HTML element content and attribute values; control characters become spaces.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in clean_text(text).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Page style: readable tables and figures that scale down on narrow screens.
const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0}\
caption{text-align:left;font-weight:bold;padding:.3em 0}\
th,td{border:1px solid #ccc;padding:.3em .7em;text-align:left}\
th{background:#f3f3f3}\
tbody tr:nth-child(even){background:#fafafa}\
figure{margin:1.5em 0}\
figure svg{max-width:100%;height:auto}\
figcaption{color:#555;margin-top:.3em}\
pre{background:#f6f6f6;border:1px solid #ddd;padding:.5em .7em;overflow-x:auto;white-space:pre-wrap}";
