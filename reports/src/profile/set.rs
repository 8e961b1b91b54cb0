//! A set of named charts (and the ones that were skipped, with why), rendered and written to a
//! folder together with an HTML page that shows them. Shared by `probe charts` and `sim report`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::chart::{AnyChart, Chart};
use crate::error::ReportError;
use crate::html::Page;
use crate::output::write_atomic;

/// One chart to draw: the file it goes to (`<file_stem>.svg`), its caption on the page and the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedChart {
    /// File name without `.svg`; ASCII letters, digits, `-` and `_` only (see [`file_stem`]).
    pub file_stem: String,
    /// Caption under the chart on the HTML page.
    pub caption: String,
    /// The chart.
    pub chart: AnyChart,
}

/// A chart that was not drawn because its data is missing, and the one-line reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedChart {
    /// What the chart would have shown, e.g. "P2P latency heat map (rtx-pro-6000-x8-baremetal)".
    pub title: String,
    /// Why it was skipped, e.g. "the profile has no per-pair latency".
    pub reason: String,
}

/// Charts to draw, and charts skipped for lack of data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartSet {
    /// Charts in page order.
    pub charts: Vec<NamedChart>,
    /// Charts not drawn, with the reason (shown on the page).
    pub skipped: Vec<SkippedChart>,
}

/// A chart rendered to SVG, ready to be written and inlined.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedChart {
    /// File name of the SVG (`<stem>.svg`).
    pub file_name: String,
    /// Caption under the chart.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

impl ChartSet {
    /// Adds a chart.
    pub fn push(&mut self, file_stem: &str, caption: impl Into<String>, chart: AnyChart) {
        self.charts.push(NamedChart {
            file_stem: file_stem.to_owned(),
            caption: caption.into(),
            chart,
        });
    }

    /// Records a skipped chart.
    pub fn skip(&mut self, title: impl Into<String>, reason: impl Into<String>) {
        self.skipped.push(SkippedChart {
            title: title.into(),
            reason: reason.into(),
        });
    }

    /// Appends another set's charts and skips.
    pub fn extend(&mut self, other: ChartSet) {
        self.charts.extend(other.charts);
        self.skipped.extend(other.skipped);
    }

    /// Renders every chart. File names are made unique (a `-2` suffix on repeats) so two charts
    /// never overwrite each other.
    pub fn render(&self) -> Result<Vec<RenderedChart>, ReportError> {
        let mut seen = std::collections::BTreeSet::new();
        self.charts
            .iter()
            .map(|c| {
                let base = file_stem(&c.file_stem);
                let mut stem = base.clone();
                let mut n = 2;
                while !seen.insert(stem.clone()) {
                    stem = format!("{base}-{n}");
                    n += 1;
                }
                Ok(RenderedChart {
                    file_name: format!("{stem}.svg"),
                    caption: c.caption.clone(),
                    svg: c.chart.render_svg()?,
                })
            })
            .collect()
    }
}

/// Adds the rendered charts to `page` as figures, then a "Charts not drawn" list of the skips.
pub fn add_figures(mut page: Page, rendered: &[RenderedChart], skipped: &[SkippedChart]) -> Page {
    for r in rendered {
        page = page.figure(r.svg.clone(), format!("{} ({})", r.caption, r.file_name));
    }
    if !skipped.is_empty() {
        page = page.heading("Charts not drawn");
        for s in skipped {
            page = page.paragraph(format!("{}: skipped, {}.", s.title, s.reason));
        }
    }
    page
}

/// Writes every rendered SVG and the page (as `index.html`) into `dir`, creating it if needed.
/// Everything is rendered before this is called, so a bad datum never leaves a half-written
/// folder; each file is written to a temporary name and renamed into place. Returns the paths
/// written, `index.html` last.
pub fn write_dir(
    dir: &Path,
    rendered: &[RenderedChart],
    page: &Page,
) -> Result<Vec<PathBuf>, ReportError> {
    let html = page.render()?;
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let mut written = Vec::with_capacity(rendered.len() + 1);
    for r in rendered {
        let path = dir.join(&r.file_name);
        write_atomic(&path, &r.svg)?;
        written.push(path);
    }
    let index = dir.join("index.html");
    write_atomic(&index, &html)?;
    written.push(index);
    Ok(written)
}

/// `text` as a safe file-name stem: ASCII letters and digits kept (lower-cased), everything
/// else one `-`; never empty.
pub fn file_stem(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        "chart".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(
            file_stem("<script>alert(1)</script>"),
            "script-alert-1-script"
        );
        assert_eq!(file_stem("../../etc"), "etc");
        assert_eq!(file_stem("///"), "chart");
        assert_eq!(file_stem("p2p_bw TP4xPP2"), "p2p_bw-tp4xpp2");
    }
}
