//! Helpers shared by the integration tests: paths into `data/hf-configs/`.
#![allow(dead_code)]

use models::ModelSpec;
use std::path::PathBuf;

/// `data/hf-configs/` in the repository (copies of public configs, sources in its README).
pub fn configs_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/hf-configs"))
}

/// Loads `data/hf-configs/<file>`.
pub fn load(file: &str) -> ModelSpec {
    ModelSpec::from_hf_config(&configs_dir().join(file))
        .unwrap_or_else(|e| panic!("{file} should load: {e}"))
}

/// Relative difference |a-b|/b.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}

/// Asserts `actual` is within `tol` (fraction) of `expected`, printing both.
pub fn assert_within(what: &str, actual: f64, expected: f64, tol: f64) {
    let r = rel(actual, expected);
    println!(
        "{what}: {actual:.4e} vs {expected:.4e} ({:+.2}%)",
        (actual / expected - 1.0) * 100.0
    );
    assert!(
        r <= tol,
        "{what}: {actual} is {:.2}% from {expected} (allowed {:.1}%)",
        r * 100.0,
        tol * 100.0
    );
}
