//! Marker shapes, series drawn as markers alone, and the legend every chart declares on its root
//! element (what `scripts/check-report-html.sh` counts in Chromium).

use crate::fixtures;
use crate::svg_support;

use reports::{Axis, LineChart, Marker, Rgb, Scale, Series, palette_colour};
use svg_support::{count_with, hex, texts};

fn points(n: usize, scale: f64) -> Vec<[f64; 2]> {
    (1..=n).map(|i| [i as f64, scale * i as f64]).collect()
}

/// `(data-legend-entries, texts drawn at data-legend-label-x)` of `svg`.
fn legend(svg: &str) -> (usize, usize) {
    let doc = roxmltree::Document::parse(svg).expect("well-formed");
    let root = doc.root_element();
    let declared: usize = root
        .attribute("data-legend-entries")
        .expect("legend declared")
        .parse()
        .unwrap();
    let x = root.attribute("data-legend-label-x").expect("label x");
    let drawn = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("x") == Some(x))
        .count();
    (declared, drawn)
}

#[test]
fn markers_take_their_shape_and_measured_points_have_no_line() {
    let measured = Rgb(0, 0, 0);
    let chart = LineChart {
        title: "shapes".into(),
        x_axis: Axis::new("concurrent requests", "", Scale::Log10),
        y_axis: Axis::new("output throughput", "tok/s", Scale::Linear),
        series: vec![
            Series::new("a", points(3, 1.0)).with_marker(Marker::nth(0)),
            Series::new("b", points(4, 2.0)).with_marker(Marker::nth(1)),
            Series::new("c", points(5, 3.0)).with_marker(Marker::nth(2)),
            Series::new("d", points(2, 4.0)).with_marker(Marker::nth(3)),
            Series::new("measured", points(6, 5.0))
                .points_only(measured)
                .with_marker(Marker::Cross),
        ],
    };
    let svg = reports::line_chart(&chart).unwrap();
    let c = |i| hex(palette_colour(i));
    // One marker per point and one in the legend, in the series' colour and shape.
    assert_eq!(count_with(&svg, "circle", "fill", &c(0)), 3 + 1);
    assert_eq!(count_with(&svg, "rect", "fill", &c(1)), 4 + 1);
    assert_eq!(count_with(&svg, "polygon", "fill", &c(2)), 5 + 1);
    assert_eq!(count_with(&svg, "polygon", "fill", &c(3)), 2 + 1);
    // Lines: one polyline per line series plus its legend stroke.
    for i in 0..4 {
        assert_eq!(
            count_with(&svg, "polyline", "stroke", &c(i)),
            2,
            "series {i}"
        );
    }
    // The measured series: two strokes per cross (points and legend), no line joining them.
    // (Crosses are 3 px strokes; the axes and ticks, also black, are 1 px.)
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let crosses = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter(|n| n.attribute("stroke") == Some(hex(measured).as_str()))
        .filter(|n| n.attribute("stroke-width") == Some("3"))
        .count();
    assert_eq!(crosses, 2 * (6 + 1));
    assert!(texts(&svg).iter().any(|t| t == "measured"));
    assert_eq!(legend(&svg), (5, 5));
}

#[test]
fn every_chart_kind_declares_the_legend_it_draws() {
    let line = reports::line_chart(&fixtures::throughput()).unwrap();
    let n = fixtures::throughput().series.len();
    assert_eq!(legend(&line), (n, n));
    let bars = fixtures::step_breakdown();
    let svg = reports::stacked_bars(&bars).unwrap();
    assert_eq!(legend(&svg), (bars.parts.len(), bars.parts.len()));
    let mem = fixtures::memory();
    let svg = reports::memory_bars(&mem).unwrap();
    assert_eq!(legend(&svg), (mem.bars.parts.len(), mem.bars.parts.len()));
    let scatter = fixtures::predicted_vs_measured();
    let svg = reports::scatter_chart(&scatter).unwrap();
    let entries = scatter.series.len() + 2 * usize::from(scatter.identity.is_some());
    assert_eq!(legend(&svg), (entries, entries));
    let classes = fixtures::pair_classes();
    let svg = reports::heat_map(&classes).unwrap();
    let (declared, drawn) = legend(&svg);
    assert!(declared > 0 && declared == drawn, "{declared} vs {drawn}");
    // A colour bar is not a legend of entries.
    let svg = reports::heat_map(&fixtures::p2p_bandwidth()).unwrap();
    assert_eq!(legend(&svg).0, 0);
}
