//! Writing rendered charts and pages to disk atomically: a reader (or a crashed run) never sees a
//! half-written file.

use std::io::Write;
use std::path::Path;

use crate::error::ReportError;

/// Writes `contents` to `path` through a temporary file in the same directory, renamed into place.
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), ReportError> {
    let wrap = |source| ReportError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".reports-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(wrap)?;
    tmp.write_all(contents.as_bytes()).map_err(wrap)?;
    tmp.as_file().sync_all().map_err(wrap)?;
    tmp.persist(path).map_err(|e| wrap(e.error))?;
    Ok(())
}

/// Writes an SVG document (from any chart function) to `path` atomically.
pub fn write_svg(path: &Path, svg: &str) -> Result<(), ReportError> {
    write_atomic(path, svg)
}

/// Writes an HTML page (from [`crate::html::Page::render`]) to `path` atomically.
pub fn write_html(path: &Path, html: &str) -> Result<(), ReportError> {
    write_atomic(path, html)
}
