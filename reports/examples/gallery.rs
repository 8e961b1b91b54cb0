//! Renders every chart kind with report-sized data into a folder, as SVG and (using whatever fonts
//! the system has) PNG, plus an HTML page embedding them: for looking at the charts by eye.
//!
//! `cargo run -p reports --example gallery -- /tmp/reports-gallery`

#[path = "../tests/fixtures/mod.rs"]
mod fixtures;

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "reports-gallery".into()));
    std::fs::create_dir_all(&dir)?;
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    opt.fontdb_mut().set_sans_serif_family("DejaVu Sans");
    let mut page = reports::html::Page::new("shardwise chart gallery")
        .paragraph("Every chart kind with report-sized data.")
        .table("Layouts", vec!["layout".into(), "GPUs".into()], vec![vec!["TP8".into(), "8".into()]]);
    for (name, svg) in fixtures::render_full_set() {
        reports::write_svg(&dir.join(format!("{name}.svg")), &svg)?;
        let tree = resvg::usvg::Tree::from_str(&svg, &opt)?;
        let size = tree.size().to_int_size();
        let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("empty")?;
        resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
        pixmap.save_png(dir.join(format!("{name}.png")))?;
        page = page.figure(svg, name);
    }
    reports::write_html(&dir.join("index.html"), &page.render()?)?;
    println!("wrote {}", dir.display());
    Ok(())
}
