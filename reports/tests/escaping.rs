//! Caller text (host, GPU and model names) is shown as text, never interpreted as markup, in SVG
//! and HTML; output files are written atomically.

use crate::fixtures;
use crate::svg_support;

use reports::html::Page;
use reports::{HeatCells, Series};
use svg_support::texts;

const EVIL: &str = "<script>alert(1)</script> & \"q\" 'a'";

fn no_script(doc: &roxmltree::Document<'_>) {
    assert!(
        !doc.descendants().any(|n| n.has_tag_name("script")),
        "script element injected"
    );
}

#[test]
fn svg_shows_markup_as_text() {
    let mut map = fixtures::pair_classes();
    map.title = EVIL.into();
    map.row_labels[0] = EVIL.into();
    if let HeatCells::Categorical { categories, .. } = &mut map.cells {
        categories[2].name = EVIL.into();
    }
    let mut chart = fixtures::throughput();
    chart.x_axis.title = EVIL.into();
    chart
        .series
        .push(Series::new(EVIL, vec![[1.0, 1.0], [2.0, 3.0]]));
    let mut bars = fixtures::memory();
    bars.reference_label = format!("{EVIL}\u{1}");
    bars.bars.categories[0] = EVIL.into();
    for svg in [
        reports::heat_map(&map).unwrap(),
        reports::line_chart(&chart).unwrap(),
        reports::memory_bars(&bars).unwrap(),
    ] {
        no_script(&roxmltree::Document::parse(&svg).unwrap());
        assert!(svg.contains("&lt;script&gt;"));
        let t = texts(&svg);
        assert!(t.iter().any(|x| x.contains("alert(1)")), "{t:?}");
    }
    let t = texts(&reports::heat_map(&map).unwrap());
    assert!(
        t.iter().filter(|x| *x == EVIL).count() >= 3,
        "title, row label, legend"
    );
    let t = texts(&reports::line_chart(&chart).unwrap());
    assert!(t.contains(&format!("{EVIL} (requests)")));
    assert!(t.contains(&EVIL.to_owned()));
    // The control character became a space instead of making the XML invalid.
    let t = texts(&reports::memory_bars(&bars).unwrap());
    assert!(t.contains(&EVIL.to_owned()));
}

#[test]
fn html_page_is_self_contained_and_escaped() {
    let mut chart = fixtures::throughput();
    chart.title = EVIL.into();
    let svg = reports::line_chart(&chart).unwrap();
    let html = Page::new(EVIL)
        .heading(EVIL)
        .paragraph(EVIL)
        .table(
            EVIL,
            vec![EVIL.into(), "b".into()],
            vec![vec!["1".into(), EVIL.into()]],
        )
        .figure(svg, EVIL)
        .render()
        .unwrap();
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true, // `<!DOCTYPE html>`
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&html, opt).expect("page is well-formed XML");
    assert!(html.starts_with("<!DOCTYPE html>"));
    no_script(&doc);
    for tag in [
        "title",
        "h1",
        "h2",
        "p",
        "caption",
        "th",
        "td",
        "figcaption",
    ] {
        let node = doc
            .descendants()
            .filter(|n| n.has_tag_name(tag))
            .find(|n| n.text() == Some(EVIL));
        assert!(node.is_some(), "<{tag}> shows the label as text");
    }
    assert!(
        doc.descendants().any(|n| n.has_tag_name("svg")),
        "figure inlined"
    );
    for forbidden in ["http://", "https://", "src=", "<link", "@import"] {
        let outside_svg_ns = html.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !outside_svg_ns.contains(forbidden),
            "page fetches {forbidden}"
        );
    }
}

#[test]
fn html_rejects_bad_tables_and_foreign_figures() {
    let e = Page::new("t")
        .table("", vec!["a".into(), "b".into()], vec![vec!["1".into()]])
        .render()
        .unwrap_err();
    assert!(
        e.to_string().contains("1 cells for 2 header columns"),
        "{e}"
    );
    let e = Page::new("t")
        .figure("<b>not svg</b>", "c")
        .render()
        .unwrap_err();
    assert!(e.to_string().contains("not a single <svg>"), "{e}");
    let e = Page::new("t")
        .figure("<svg><script>x</script></svg>", "c")
        .render()
        .unwrap_err();
    assert!(matches!(e, reports::ReportError::InvalidData { .. }));
}

#[test]
fn write_svg_is_atomic_and_reports_bad_paths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chart.svg");
    let svg = reports::memory_bars(&fixtures::memory()).unwrap();
    reports::write_svg(&path, &svg).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), svg);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    let e = reports::write_svg(&dir.path().join("missing/chart.svg"), &svg).unwrap_err();
    assert!(matches!(e, reports::ReportError::Write { .. }));
    assert!(e.to_string().contains("missing/chart.svg"), "{e}");
}
