//! Writing rendered charts and pages to disk atomically: a reader (or a crashed run) never sees a
//! half-written file.

use std::path::Path;

use crate::error::ReportError;

/// Writes `contents` to `path` through a temporary file in the same directory, renamed into place
/// ([`models::io::write_atomic`], the workspace's one implementation).
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), ReportError> {
    models::io::write_atomic(path, contents.as_bytes()).map_err(|e| match e {
        models::ModelsError::Write { path, source } | models::ModelsError::Io { path, source } => {
            ReportError::Write { path, source }
        }
        other => ReportError::Write {
            path: path.to_owned(),
            source: std::io::Error::other(other.to_string()),
        },
    })
}

/// Writes an SVG document (from any chart function) to `path` atomically.
pub fn write_svg(path: &Path, svg: &str) -> Result<(), ReportError> {
    write_atomic(path, svg)
}

/// Writes an HTML page (from [`crate::html::Page::render`]) to `path` atomically.
pub fn write_html(path: &Path, html: &str) -> Result<(), ReportError> {
    write_atomic(path, html)
}
