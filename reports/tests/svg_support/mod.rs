//! Test helpers: parse an SVG as XML, list its texts, render it to pixels with resvg.
#![allow(dead_code)]

/// All `<text>` contents of `svg` (trimmed), after checking it parses as XML with an `<svg>` root.
pub fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("chart is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_owned())
        .collect()
}

/// How many elements named `tag` have attribute `attr` equal (ignoring case) to `value`.
pub fn count_with(svg: &str, tag: &str, attr: &str, value: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("chart is well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name(tag))
        .filter(|n| {
            n.attribute(attr)
                .is_some_and(|v| v.eq_ignore_ascii_case(value))
        })
        .count()
}

/// How many elements named `tag` the document has.
pub fn count(svg: &str, tag: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("chart is well-formed XML");
    doc.descendants().filter(|n| n.has_tag_name(tag)).count()
}

/// Renders `svg` with resvg (no fonts loaded: text is skipped, shapes are drawn) and returns
/// `(width, height, non-white pixel count)`. Panics when resvg rejects the document.
pub fn render(svg: &str) -> (u32, u32, usize) {
    let opt = resvg::usvg::Options::default();
    let tree = resvg::usvg::Tree::from_str(svg, &opt).expect("resvg parses the chart");
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("non-empty");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let inked = pixmap
        .pixels()
        .iter()
        .filter(|p| (p.red(), p.green(), p.blue()) != (255, 255, 255))
        .count();
    (size.width(), size.height(), inked)
}

/// `#RRGGBB` as plotters writes it.
pub fn hex(c: reports::Rgb) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}
