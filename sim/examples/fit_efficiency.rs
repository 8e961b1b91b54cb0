//! Fits the kernel-efficiency curves to the measured SGLang kernel timings and writes
//! `sim/data/efficiency.json` (embedded by `sim::efficiency`).
//!
//! Usage: `cargo run -p sim --example fit_efficiency [-- OBSERVATIONS_DIR [OUTPUT_JSON]]`
//! (defaults: `data/observations` beside the repo, `sim/data/efficiency.json`). Exit 2 on bad input.

use anyhow::Context;
use sim::efficiency::{curve_fit, observations};
use std::path::PathBuf;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

fn run() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(observations::default_dir);
    let out = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/efficiency.json"))
    });
    let rows = observations::load_kernel_rows(&dir)
        .with_context(|| format!("reading kernel timings from {}", dir.display()))?;
    let model = curve_fit::fit(&rows)?;
    let mut table = comfy_table::Table::new();
    table.set_header(["family", "kind", "dtype", "rows", "median |err|"]);
    for fam in &model.families {
        for c in &fam.curves {
            table.add_row([
                fam.family.clone(),
                format!("{:?}", c.kind),
                c.dtype.clone(),
                c.rows.to_string(),
                format!("{:.1}%", 100.0 * c.median_abs_error),
            ]);
            for sh in &c.shapes {
                table.add_row([
                    String::new(),
                    format!("  slice {:.2}M", sh.slice_elements / 1e6),
                    sh.measured.join(", "),
                    sh.rows.to_string(),
                    format!("{:.1}%", 100.0 * sh.median_abs_error),
                ]);
            }
        }
    }
    println!("{table}");
    let text = serde_json::to_string_pretty(&model)? + "\n";
    models::io::write_atomic(&out, text.as_bytes())
        .with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {} ({} rows fitted)", out.display(), rows.len());
    Ok(())
}
