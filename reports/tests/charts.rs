//! Every chart kind: well-formed SVG with its title, axis titles, legend entries and one mark per
//! datum; renders to pixels; bad data is a typed error, not a panic.

use crate::fixtures;
use crate::svg_support;

use reports::{HeatCells, ReportError, format_value, palette_colour};
use svg_support::{count, count_with, hex, render, texts};

fn assert_renders(svg: &str) {
    let (w, h, inked) = render(svg);
    assert!(w >= 600 && h >= 400, "canvas {w}×{h}");
    assert!(
        inked > (w * h / 50) as usize,
        "only {inked} non-white pixels"
    );
}

#[test]
fn numeric_heat_map_prints_every_cell_and_unit() {
    let map = fixtures::p2p_bandwidth();
    let svg = reports::heat_map(&map).unwrap();
    let t = texts(&svg);
    for s in [&map.title, "destination GPU", "source GPU", "GB/s"] {
        assert!(t.iter().any(|x| x == s), "missing {s:?}");
    }
    let HeatCells::Numeric { values, .. } = &map.cells else {
        unreachable!()
    };
    // Each value is printed as often as it occurs (colour-bar ticks are whole numbers, cells have
    // one decimal, so they never collide).
    for v in values.iter().flatten().flatten() {
        let want = values
            .iter()
            .flatten()
            .flatten()
            .filter(|w| format_value(**w) == format_value(*v))
            .count();
        let got = t.iter().filter(|x| **x == format_value(*v)).count();
        assert_eq!(got, want, "cell text {}", format_value(*v));
    }
    assert_eq!(t.iter().filter(|x| *x == "–").count(), 8, "diagonal cells");
    for g in fixtures::gpus() {
        assert_eq!(
            t.iter().filter(|x| **x == g).count(),
            2,
            "row and column label {g}"
        );
    }
    assert_renders(&svg);
}

#[test]
fn categorical_heat_map_has_legend_and_category_cells() {
    let map = fixtures::pair_classes();
    let svg = reports::heat_map(&map).unwrap();
    let t = texts(&svg);
    let HeatCells::Categorical { categories, values } = &map.cells else {
        unreachable!()
    };
    for (i, c) in categories.iter().enumerate() {
        let cells = values.iter().flatten().filter(|v| **v == Some(i)).count();
        assert_eq!(
            t.iter().filter(|x| **x == c.name).count(),
            cells + 1,
            "{}",
            c.name
        );
        let fill = hex(c.colour.unwrap());
        assert_eq!(
            count_with(&svg, "rect", "fill", &fill),
            cells + 1,
            "{} fills",
            c.name
        );
    }
    assert_renders(&svg);
}

#[test]
fn size_line_chart_has_binary_ticks_series_and_points() {
    let chart = fixtures::bus_bandwidth();
    let svg = reports::line_chart(&chart).unwrap();
    let t = texts(&svg);
    for s in [
        &chart.title,
        "message size",
        "bus bandwidth (GB/s)",
        "1 KiB",
        "1 MiB",
        "1 GiB",
    ] {
        assert!(t.iter().any(|x| x == s), "missing {s:?} in {t:?}");
    }
    for s in &chart.series {
        assert_eq!(
            t.iter().filter(|x| **x == s.name).count(),
            1,
            "legend entry {}",
            s.name
        );
    }
    let points: usize = chart.series.iter().map(|s| s.points.len()).sum();
    assert_eq!(points, 20 * 28);
    // One marker per point plus one per legend entry.
    assert_eq!(count(&svg, "circle"), points + chart.series.len());
    assert_renders(&svg);
}

#[test]
fn concurrency_lines_on_log_x() {
    let chart = fixtures::throughput();
    let svg = reports::line_chart(&chart).unwrap();
    let t = texts(&svg);
    for s in [
        "--max-concurrency (requests)",
        "output_throughput (tok/s)",
        "1",
        "10",
        "100",
    ] {
        assert!(t.iter().any(|x| x == s), "missing {s:?} in {t:?}");
    }
    for (i, s) in chart.series.iter().enumerate() {
        assert!(t.contains(&s.name));
        let stroke = hex(palette_colour(i));
        // Each series' markers are filled circles in its own colour (legend marker included).
        assert_eq!(
            count_with(&svg, "circle", "fill", &stroke),
            s.points.len() + 1,
            "{}",
            s.name
        );
    }
    assert_renders(&svg);
}

#[test]
fn stacked_bars_draw_every_part_of_every_bar() {
    let bars = fixtures::step_breakdown();
    let svg = reports::stacked_bars(&bars).unwrap();
    let t = texts(&svg);
    for s in [&bars.title, "layout", "time per decode step (ms)"] {
        assert!(t.iter().any(|x| x == s), "missing {s:?}");
    }
    for (i, p) in bars.parts.iter().enumerate() {
        assert!(t.contains(&p.name), "legend {}", p.name);
        let fill = hex(palette_colour(i));
        assert_eq!(
            count_with(&svg, "rect", "fill", &fill),
            bars.categories.len() + 1,
            "{}",
            p.name
        );
    }
    // Category labels may wrap onto several lines: every word is there, in order.
    let all = t.join(" ");
    for c in &bars.categories {
        for w in c.split_whitespace() {
            assert!(all.contains(w), "label word {w}");
        }
    }
    assert_renders(&svg);
}

#[test]
fn memory_bars_show_reference_line_and_label() {
    let chart = fixtures::memory();
    let svg = reports::memory_bars(&chart).unwrap();
    let t = texts(&svg);
    assert!(t.contains(&chart.reference_label));
    assert!(t.contains(&"memory per GPU (GB)".to_owned()));
    assert!(
        count_with(&svg, "polyline", "stroke", "#C00000") > 5,
        "dashed reference line"
    );
    assert_renders(&svg);
}

#[test]
fn scatter_draws_every_point_the_identity_line_and_the_band() {
    let chart = fixtures::predicted_vs_measured();
    let svg = reports::scatter_chart(&chart).unwrap();
    let t = texts(&svg);
    for s in [
        &chart.title,
        "measured (tok/s)",
        "predicted (tok/s)",
        "y = x",
        "±20%",
        "100",
        "1000",
    ] {
        assert!(t.iter().any(|x| x == s), "missing {s:?} in {t:?}");
    }
    for (i, s) in chart.series.iter().enumerate() {
        assert!(t.contains(&s.name));
        // one filled marker per point, plus the legend's
        assert_eq!(
            count_with(&svg, "circle", "fill", &hex(palette_colour(i))),
            s.points.len() + 1,
            "{}",
            s.name
        );
    }
    let points: usize = chart.series.iter().map(|s| s.points.len()).sum();
    assert_eq!(count(&svg, "circle"), points + chart.series.len());
    // the band is one polygon; y = x is a solid line, the band's edges dashed segments
    assert_eq!(count(&svg, "polygon"), 1);
    assert!(count_with(&svg, "polyline", "stroke", "#555555") >= 3);
    assert_renders(&svg);

    // without the identity line: no band, no legend rows for it, axes fitted separately
    let mut plain = chart.clone();
    plain.identity = None;
    let svg = reports::scatter_chart(&plain).unwrap();
    assert_eq!(count(&svg, "polygon"), 0);
    assert!(!texts(&svg).contains(&"y = x".to_owned()));
}

#[test]
fn bad_data_is_a_typed_error() {
    let mut ragged = fixtures::p2p_bandwidth();
    if let HeatCells::Numeric { values, .. } = &mut ragged.cells {
        values[3].pop();
    }
    let e = reports::heat_map(&ragged).unwrap_err();
    assert!(matches!(e, ReportError::InvalidData { .. }));
    assert!(e.to_string().contains("row 3 has 7 values"), "{e}");

    let mut nan = fixtures::p2p_latency();
    if let HeatCells::Numeric { values, .. } = &mut nan.cells {
        values[0][1] = Some(f64::NAN);
    }
    assert!(reports::heat_map(&nan).is_err());

    let mut zero = fixtures::bus_bandwidth();
    zero.series[0].points[0][0] = 0.0;
    let e = reports::line_chart(&zero).unwrap_err();
    assert!(e.to_string().contains("positive on log axes"), "{e}");

    let mut short = fixtures::step_breakdown();
    short.parts[2].values.pop();
    assert!(
        reports::stacked_bars(&short)
            .unwrap_err()
            .to_string()
            .contains("11 values for 12")
    );

    let mut neg = fixtures::memory();
    neg.reference_value = f64::INFINITY;
    assert!(reports::memory_bars(&neg).is_err());

    let mut neg = fixtures::predicted_vs_measured();
    neg.series[1].points[2][1] = -1.0;
    let e = reports::scatter_chart(&neg).unwrap_err();
    assert!(e.to_string().contains("positive on log axes"), "{e}");
    let mut band = fixtures::predicted_vs_measured();
    band.identity.as_mut().unwrap().band = 1.5;
    assert!(
        reports::scatter_chart(&band)
            .unwrap_err()
            .to_string()
            .contains("(0, 1)")
    );
    let mut mixed = fixtures::predicted_vs_measured();
    mixed.y_axis.scale = reports::Scale::Linear;
    assert!(reports::scatter_chart(&mixed).is_err());

    let mut cat = fixtures::pair_classes();
    if let HeatCells::Categorical { values, .. } = &mut cat.cells {
        values[0][1] = Some(9);
    }
    assert!(
        reports::heat_map(&cat)
            .unwrap_err()
            .to_string()
            .contains("category index 9")
    );
}

#[test]
fn chart_inputs_round_trip_through_json() {
    let mut chart = fixtures::bus_bandwidth();
    // serde_json's default float parsing is not bit-exact for 17-digit values; round to 1/1024.
    for s in &mut chart.series {
        for p in &mut s.points {
            p[1] = (p[1] * 1024.0).round() / 1024.0;
        }
    }
    let json = serde_json::to_string(&chart).unwrap();
    assert_eq!(
        serde_json::from_str::<reports::LineChart>(&json).unwrap(),
        chart
    );
    let map = fixtures::pair_classes();
    let json = serde_json::to_string(&map).unwrap();
    assert!(json.contains("\"kind\":\"categorical\""));
    assert_eq!(
        serde_json::from_str::<reports::HeatMap>(&json).unwrap(),
        map
    );
    let mem = fixtures::memory();
    let json = serde_json::to_string(&mem).unwrap();
    assert_eq!(
        serde_json::from_str::<reports::MemoryBars>(&json).unwrap(),
        mem
    );
    let mut scatter = fixtures::predicted_vs_measured();
    for s in &mut scatter.series {
        for p in &mut s.points {
            *p = p.map(|v| (v * 1024.0).round() / 1024.0);
        }
    }
    let json = serde_json::to_string(&scatter).unwrap();
    assert_eq!(
        serde_json::from_str::<reports::ScatterChart>(&json).unwrap(),
        scatter
    );
}

#[test]
fn any_chart_renders_like_its_kind() {
    use reports::{AnyChart, Chart};
    let charts = vec![
        AnyChart::HeatMap(fixtures::pair_classes()),
        AnyChart::LineChart(fixtures::throughput()),
        AnyChart::StackedBars(fixtures::step_breakdown()),
        AnyChart::MemoryBars(fixtures::memory()),
        AnyChart::ScatterChart(fixtures::predicted_vs_measured()),
    ];
    let json = serde_json::to_string(&charts).unwrap();
    assert!(json.contains("\"kind\":\"memory_bars\""));
    let back: Vec<AnyChart> = serde_json::from_str(&json).unwrap();
    assert_eq!(
        back[0].render_svg().unwrap(),
        reports::heat_map(&fixtures::pair_classes()).unwrap()
    );
    assert_eq!(
        back[2].render_svg().unwrap(),
        reports::stacked_bars(&fixtures::step_breakdown()).unwrap()
    );
    assert_eq!(back[3].title(), "Memory per GPU by layout");
    assert!(json.contains("\"kind\":\"scatter_chart\""));
    assert_eq!(
        back[4].render_svg().unwrap(),
        reports::scatter_chart(&fixtures::predicted_vs_measured()).unwrap()
    );
}

#[test]
fn a_series_band_is_one_shaded_polygon_inside_the_axes() {
    let plain = fixtures::throughput();
    let mut banded = plain.clone();
    let s = banded.series.remove(0);
    let band: Vec<[f64; 2]> = s.points.iter().map(|[_, y]| [y * 0.8, y * 1.3]).collect();
    banded.series.insert(0, s.with_band(band));
    let (a, b) = (
        reports::line_chart(&plain).unwrap(),
        reports::line_chart(&banded).unwrap(),
    );
    assert_eq!(count(&b, "polygon"), count(&a, "polygon") + 1);
    assert_renders(&b);
    // a band of the wrong length is dropped, not drawn misaligned
    let short = plain.series[0].clone().with_band(vec![[1.0, 2.0]]);
    assert!(short.band.is_none());
}
