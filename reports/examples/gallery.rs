//! Renders every chart kind with report-sized data into a folder, as SVG and (using whatever fonts
//! the system has) PNG, plus an HTML page embedding them: for looking at the charts by eye.
//!
//! `cargo run -p reports --example gallery -- /tmp/reports-gallery`

#[path = "../tests/fixtures/mod.rs"]
mod fixtures;

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "reports-gallery".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    opt.fontdb_mut().set_sans_serif_family("DejaVu Sans");
    let mut page = reports::html::Page::new("shardwise chart gallery")
        .paragraph("Every chart kind with report-sized data.")
        .table(
            "Layouts",
            vec!["layout".into(), "GPUs".into()],
            vec![vec!["TP8".into(), "8".into()]],
        );
    for (name, svg) in fixtures::render_full_set() {
        reports::write_svg(&dir.join(format!("{name}.svg")), &svg)?;
        let tree = resvg::usvg::Tree::from_str(&svg, &opt)?;
        let size = tree.size().to_int_size();
        let mut pixmap =
            resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("empty")?;
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::default(),
            &mut pixmap.as_mut(),
        );
        pixmap.save_png(dir.join(format!("{name}.png")))?;
        page = page.figure(svg, name);
    }
    for (name, svg) in stress()? {
        reports::write_svg(&dir.join(format!("{name}.svg")), &svg)?;
        let tree = resvg::usvg::Tree::from_str(&svg, &opt)?;
        let size = tree.size().to_int_size();
        let mut pixmap =
            resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("empty")?;
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::default(),
            &mut pixmap.as_mut(),
        );
        pixmap.save_png(dir.join(format!("{name}.png")))?;
    }
    reports::write_html(&dir.join("index.html"), &page.render()?)?;
    println!("wrote {}", dir.display());
    Ok(())
}

/// Awkward inputs: long labels, a 16×16 matrix, wide values, odd characters.
fn stress() -> Result<Vec<(&'static str, String)>, reports::ReportError> {
    let long: Vec<String> = (0..16).map(|g| format!("gpu-{g:02} <RTX & PRO>")).collect();
    let values = (0..16)
        .map(|a| {
            (0..16)
                .map(|b| (a != b).then(|| 1000.0 + (a * 37 + b * 11) as f64 * 13.7))
                .collect()
        })
        .collect();
    let heat = reports::HeatMap {
        title: "16×16 latency of host \"node-a\" <vm> & friends".into(),
        x_axis_title: "destination".into(),
        y_axis_title: "source".into(),
        row_labels: long.clone(),
        column_labels: long,
        cells: reports::HeatCells::Numeric {
            unit: "µs".into(),
            values,
        },
    };
    let mut bars = fixtures::step_breakdown();
    bars.categories = (0..12)
        .map(|i| {
            format!(
                "TP{} PP{} --enable-dp-attention-and-more {i}",
                8 >> (i % 4),
                1 << (i % 4)
            )
        })
        .collect();
    let mut lines = fixtures::throughput();
    lines.y_axis.scale = reports::Scale::Log10;
    lines.x_axis.scale = reports::Scale::Linear;
    Ok(vec![
        ("stress_heat", reports::heat_map(&heat)?),
        ("stress_bars", reports::stacked_bars(&bars)?),
        ("stress_lines", reports::line_chart(&lines)?),
    ])
}
