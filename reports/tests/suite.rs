//! The `reports` crate's integration tests, one module a concern, in one test binary
//! (`cargo test -p reports --test suite <module>::` runs one module).

mod fixtures;
mod svg_support;

mod any_text;
mod charts;
mod escaping;
mod markers_legend;
