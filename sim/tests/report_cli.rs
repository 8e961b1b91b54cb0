//! `sim report` as a user runs it: the built-in presets give a full report in one command, every
//! SVG parses as XML and carries the data it claims (64 cells for 8 GPUs, one legend entry per
//! layout, one point per concurrency), the page is self-contained, hostile names are text, and bad
//! input exits 2 with one line and no output folder.

use crate::common;

use models::profile::{Direction, TransferMode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const VM: &str = "rtx-pro-6000-x8-vm-hostbounce";
const METAL: &str = "rtx-pro-6000-x8-baremetal";
const FAKE_4GPU: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../probe/tests/fixtures/fake-4gpu-vm.json"
);
/// A small, quick report: two concurrencies, few prompts and draws (the debug build is slow).
const QUICK: [&str; 8] = [
    "--num-prompts",
    "24",
    "--max-concurrency",
    "1,8",
    "--at-concurrency",
    "8",
    "--draws",
    "8",
];

use common::sim_cmd as sim;

/// Every `*.svg` in `dir`, parsed: file name → texts, circles, point markers, legend.
struct Svg {
    texts: Vec<String>,
    circles: usize,
    /// Filled point markers of any shape (circles, squares, triangles, diamonds) in a palette
    /// colour: not the white background, grid or bars' outlines.
    markers: usize,
    /// Shaded bands (translucent polygons: a prediction's 80% interval).
    bands: usize,
    /// `data-legend-entries` of the root element.
    legend_entries: usize,
}

/// A translucent polygon: the shaded 80% band behind a line.
fn is_band(n: &roxmltree::Node) -> bool {
    n.has_tag_name("polygon")
        && n.attribute("opacity")
            .and_then(|o| o.parse::<f64>().ok())
            .is_some_and(|o| o < 1.0)
}

fn parse_svg(text: &str) -> Svg {
    let doc = roxmltree::Document::parse(text).expect("chart is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    assert!(
        !doc.descendants().any(|n| n.has_tag_name("script")),
        "no script in a chart"
    );
    Svg {
        texts: doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.text().unwrap_or("").trim().to_owned())
            .collect(),
        circles: doc
            .descendants()
            .filter(|n| n.has_tag_name("circle"))
            .count(),
        markers: doc
            .descendants()
            .filter(|n| {
                n.has_tag_name("circle")
                    || n.has_tag_name("polygon")
                    || (n.has_tag_name("rect")
                        && n.attribute("width").and_then(|w| w.parse::<f64>().ok()) < Some(12.0))
            })
            .filter(|n| {
                n.attribute("fill")
                    .is_some_and(|f| f != "#FFFFFF" && f != "none")
                    && !is_band(n)
            })
            .count(),
        bands: doc.descendants().filter(is_band).count(),
        legend_entries: doc
            .root_element()
            .attribute("data-legend-entries")
            .expect("every chart declares its legend")
            .parse()
            .unwrap(),
    }
}

fn svgs(dir: &Path) -> BTreeMap<String, Svg> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, parse_svg(&std::fs::read_to_string(&p).unwrap()))
        })
        .collect()
}

/// The report page parsed as XML (it is XHTML-compatible; the doctype is allowed).
fn parse_html(html: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(html, opts).expect("index.html is well-formed XML")
}

fn has(svg: &Svg, text: &str) -> bool {
    svg.texts.iter().any(|t| t == text)
}

fn run_json(args: &[&str]) -> Value {
    let out = sim().arg("report").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "sim report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn presets_give_a_full_report_with_the_right_data() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let mut args = vec![
        "--machine",
        VM,
        "--machine",
        METAL,
        "--model",
        "glm-5-nvfp4",
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend(QUICK);
    let summary = run_json(&args);
    assert_eq!(summary["schema_version"], 2);
    assert_eq!(summary["engine"], "sglang");
    let machines = summary["machines"].as_array().unwrap();
    assert_eq!(machines.len(), 2);
    for m in machines {
        assert!(m["best"]["layout"].is_string(), "{m}");
        assert!(m["best"]["output_throughput"].as_f64().unwrap() > 0.0);
        assert!(m["ep_verdict"].as_str().unwrap() != "n/a", "GLM-5 is MoE");
    }
    let charts = svgs(&out);
    let files = summary["files"].as_array().unwrap();
    assert_eq!(
        files.len(),
        charts.len() + 1,
        "every SVG and index.html listed"
    );

    // Bare metal P2P heat map: 8×8 = 64 cells, 56 pair values and 8 empty diagonal cells.
    let metal = sim::presets::machine_preset(METAL).unwrap();
    let bw = &charts[&format!("{METAL}-p2p-bandwidth-copy-engine-uni.svg")];
    assert!(has(bw, "destination GPU") && has(bw, "source GPU") && has(bw, "GB/s"));
    assert!(
        bw.texts
            .iter()
            .any(|t| t.starts_with("P2P bandwidth, copy engine"))
    );
    let mut cells: BTreeMap<String, usize> = BTreeMap::new();
    for l in metal.links.iter().filter(|l| l.src != l.dst) {
        let c = l
            .curves
            .iter()
            .find(|c| {
                c.mode == TransferMode::CopyEngine && c.direction == Direction::Unidirectional
            })
            .unwrap();
        let v = c
            .points
            .iter()
            .max_by_key(|p| p.bytes)
            .unwrap()
            .gb_per_s
            .median;
        *cells.entry(reports::format_value(v)).or_default() += 1;
    }
    assert_eq!(cells.values().sum::<usize>(), 56);
    for (value, n) in &cells {
        assert_eq!(
            bw.texts.iter().filter(|t| *t == value).count(),
            *n,
            "cells showing {value}"
        );
    }
    assert_eq!(bw.texts.iter().filter(|t| *t == "–").count(), 8, "diagonal");
    for g in 0..8 {
        let label = format!("GPU{g}");
        assert_eq!(
            bw.texts.iter().filter(|t| **t == label).count(),
            2,
            "{label}"
        );
    }

    // The VM preset has host-staged pairs only: no copy-engine map, and the page says why not.
    assert!(!charts.contains_key(&format!("{VM}-p2p-bandwidth-copy-engine-uni.svg")));
    let classes = &charts[&format!("{VM}-pair-classification.svg")];
    assert_eq!(
        classes.texts.iter().filter(|t| *t == "host-bounce").count(),
        56 + 1,
        "56 host-bounce cells and one legend entry"
    );

    // all_reduce overlay: one legend entry per (group, machine), VM and bare metal.
    let ar = &charts[&format!("{VM}-vs-{METAL}-all_reduce-busbw.svg")];
    assert!(has(ar, "message size") && has(ar, "bus bandwidth (GB/s)"));
    let groups = metal
        .collectives
        .iter()
        .filter(|c| c.op == models::profile::CollectiveOp::AllReduce && c.devices.len() >= 2)
        .count();
    for who in [VM, METAL] {
        let entries = ar
            .texts
            .iter()
            .filter(|t| t.ends_with(&format!("({who})")))
            .count();
        assert_eq!(entries, groups, "legend entries of {who}");
    }

    // Lines vs concurrency: one legend entry per drawn layout (at most six, TP8 and EP8 among
    // them), one marker per concurrency, axis titles in words with units.
    for m in [VM, METAL] {
        let tput = &charts[&format!("{m}-output-throughput.svg")];
        assert!(has(tput, "concurrent requests (--max-concurrency)"));
        assert!(has(tput, "output throughput (tok/s)"));
        assert!(has(&charts[&format!("{m}-ttft.svg")], "mean TTFT (ms)"));
        assert!(has(&charts[&format!("{m}-tpot.svg")], "mean TPOT (ms)"));
        let layouts: Vec<&String> = tput
            .texts
            .iter()
            .filter(|t| t.starts_with("TP") || t.starts_with("EP"))
            .collect();
        assert!(!layouts.is_empty() && layouts.len() <= reports::MAX_LEGEND_ENTRIES);
        assert!(layouts.iter().any(|t| *t == "TP8") && layouts.iter().any(|t| *t == "EP8"));
        // Two concurrencies per line, plus one legend marker per line, in one shape per line.
        assert_eq!(tput.markers, layouts.len() * 3, "{m}");
        // every predicted line with its 80% band
        assert_eq!(tput.bands, layouts.len(), "{m}");
        assert!(tput.circles < tput.markers, "several marker shapes");
        for key in ["ttft", "tpot", "decode-breakdown", "memory"] {
            assert!(charts.contains_key(&format!("{m}-{key}.svg")), "{m}-{key}");
        }
        let mem = &charts[&format!("{m}-memory.svg")];
        for part in ["weights", "KV cache pool", "runtime reserve"] {
            assert!(has(mem, part), "memory legend {part}");
        }
        assert!(mem.texts.iter().any(|t| t.starts_with("card: ")));
        let dec = &charts[&format!("{m}-decode-breakdown.svg")];
        assert!(has(dec, "time per decode step (ms)") && has(dec, "weight reads"));
        // GLM-5 ships an MTP layer: throughput with and without speculation is drawn
        let spec = &charts[&format!("{m}-speculation.svg")];
        assert!(
            spec.texts.iter().any(|t| t.contains("with EAGLE")),
            "{:?}",
            spec.texts
        );
        assert!(spec.texts.iter().any(|t| t.contains("without")));
    }

    // The page: well-formed, self-contained, one figure per SVG, the verdict in the summary.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let doc = parse_html(&html);
    let figures = doc
        .descendants()
        .filter(|n| n.has_tag_name("figure"))
        .count();
    assert_eq!(figures, charts.len());
    for n in doc.descendants().filter(|n| n.is_element()) {
        assert!(
            !["script", "link", "img", "iframe", "object"].contains(&n.tag_name().name()),
            "self-contained page has no <{}>",
            n.tag_name().name()
        );
        for a in ["src", "href"] {
            assert!(
                n.attribute(a).is_none(),
                "no {a} attribute in a self-contained page"
            );
        }
    }
    // Every chart holds at most six legend entries.
    for (name, svg) in &charts {
        assert!(
            svg.legend_entries <= reports::MAX_LEGEND_ENTRIES,
            "{name}: {} legend entries",
            svg.legend_entries
        );
    }
    // A launch line per machine, first on the page, for its best layout.
    let first_figure = html.find("<figure").unwrap();
    for m in machines {
        let line = format!(
            "<pre><code>python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 {}</code></pre>",
            m["best"]["flags"].as_str().unwrap()
        );
        let at = html
            .find(&line)
            .unwrap_or_else(|| panic!("no launch line {line}"));
        assert!(at < first_figure);
    }
    // Layouts that do not fit: listed with budget and need, drawn nowhere on their machine, and
    // the memory chart draws exactly the others.
    let gpus = sim::presets::machine_preset(METAL).unwrap().devices.len() as u32;
    let spec = models::ModelSpec::preset("glm-5-nvfp4").unwrap();
    let all: Vec<String> = sim::layout::enumerate_layouts(gpus, &spec)
        .iter()
        .map(|c| c.layout.short_name())
        .collect();
    for m in [VM, METAL] {
        let table = doc
            .descendants()
            .find(|n| n.attribute("data-not-plotted-in") == Some(m))
            .unwrap_or_else(|| panic!("{m}: TP8+DPA does not fit and is listed"));
        let rows: Vec<Vec<String>> = table
            .descendants()
            .filter(|n| n.has_tag_name("tr"))
            .skip(1)
            .map(|r| {
                r.children()
                    .filter(|c| c.has_tag_name("td"))
                    .map(|c| c.text().unwrap_or("").to_owned())
                    .collect()
            })
            .collect();
        let rejected: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert!(rejected.contains(&"TP8+DPA"), "{rejected:?}");
        // `--format json` lists the same layouts.
        let json = machines.iter().find(|j| j["machine"] == m).unwrap();
        let listed: Vec<&str> = json["not_drawn"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["layout"].as_str().unwrap())
            .collect();
        assert_eq!(listed, rejected, "{m}");
        for r in &rows {
            assert!(
                r[2].contains(" GB") && r[2].contains("--mem-fraction-static"),
                "{r:?}"
            );
        }
        for (name, svg) in charts
            .iter()
            .filter(|(n, _)| n.starts_with(&format!("{m}-")))
        {
            for t in &svg.texts {
                assert!(!rejected.contains(&t.as_str()), "{name} draws rejected {t}");
            }
        }
        let mem = &charts[&format!("{m}-memory.svg")];
        for l in &all {
            assert_ne!(
                has(mem, l),
                rejected.contains(&l.as_str()),
                "{m}: {l} is either drawn in the memory chart or listed as not fitting"
            );
        }
    }
    assert!(html.contains("should we try EP?"));
    assert!(html.contains("Headline bandwidths from the profiles"));
    assert!(
        html.contains("Not drawn:"),
        "the VM's missing copy-engine data is explained"
    );
    assert!(
        !out.read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
}

#[test]
fn hostile_names_are_text_not_markup() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p: Value = serde_json::from_str(&std::fs::read_to_string(FAKE_4GPU).unwrap()).unwrap();
    let evil = "<script>alert(1)</script>";
    p["provenance"]["hostname"] = evil.into();
    p["devices"][0]["name"] = "RTX PRO 6000 Blackwell Server <b>&amp;".into();
    let profile = tmp.path().join("<img src=x onerror=alert(1)>.json");
    std::fs::write(&profile, serde_json::to_string(&p).unwrap()).unwrap();
    let out = tmp.path().join("r");
    let mut args = vec![
        "--machine",
        profile.to_str().unwrap(),
        "--model",
        "qwen3-30b-a3b",
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend(QUICK);
    run_json(&args);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let doc = parse_html(&html);
    for tag in ["script", "img", "b"] {
        assert!(
            !doc.descendants().any(|n| n.has_tag_name(tag)),
            "<{tag}> from a profile became markup"
        );
    }
    let text: String = doc
        .descendants()
        .filter(|n| n.is_text())
        .map(|n| n.text().unwrap())
        .collect();
    assert!(text.contains(evil), "host name shown as text");
    assert!(
        text.contains("<img src=x onerror=alert(1)>"),
        "file stem shown as text"
    );
    let charts = svgs(&out);
    assert!(!charts.is_empty());
    let titled = charts
        .values()
        .filter(|s| {
            s.texts
                .iter()
                .any(|t| t.contains("<img src=x onerror=alert(1)>"))
        })
        .count();
    assert_eq!(
        titled,
        charts.len(),
        "every chart title names the machine, as text"
    );
    for name in charts.keys() {
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "file name {name:?} is sanitised"
        );
    }
}

/// Bad input: exit 2, one line on stderr saying what is wrong, and no output folder.
fn assert_bad_input(args: &[&str], out: &Path, needle: &str) {
    let o = sim().arg("report").args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "args {args:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err:?} should mention {needle:?}");
    assert!(!out.exists(), "no output written for bad input");
}

#[test]
fn bad_input_is_one_line_exit_2_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = out.to_str().unwrap();
    assert_bad_input(
        &["--machine", "no-such-box", "--out", o],
        &out,
        "no-such-box",
    );
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    assert_bad_input(
        &["--machine", bad.to_str().unwrap(), "--out", o],
        &out,
        "bad.json",
    );
    assert_bad_input(
        &["--machine", VM, "--model", "no-such-model", "--out", o],
        &out,
        "no-such-model",
    );
    assert_bad_input(
        &["--machine", VM, "--tp", "4", "--out", o],
        &out,
        "every layout",
    );
    assert_bad_input(
        &["--machine", VM, "--mem-fraction-static", "1.5", "--out", o],
        &out,
        "--mem-fraction-static",
    );
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let o2 = sim()
        .arg("report")
        .args(["--machine", VM, "--out", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o2.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o2.stderr).contains("is a file"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

const USER_BOX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/user-box.json"
);

#[test]
fn measured_runs_are_drawn_beside_the_prediction() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let measured = format!("{USER_BOX}#glm47-fp8-tp8-sweep");
    let mut args = vec![
        "--machine",
        METAL,
        "--model",
        "glm-4.7-fp8",
        "--measured",
        &measured,
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend(QUICK);
    run_json(&args);
    let charts = svgs(&out);
    let tput = std::fs::read_to_string(out.join(format!("{METAL}-output-throughput.svg"))).unwrap();
    let doc = roxmltree::Document::parse(&tput).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::trim))
        .collect();
    assert!(texts.contains(&"measured"), "{texts:?}");
    // Four measured points (2, 16, 64, 128 requests in flight) and the legend's: two black 3 px
    // strokes each.
    let crosses = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter(|n| n.attribute("stroke") == Some("#000000"))
        .filter(|n| n.attribute("stroke-width") == Some("3"))
        .count();
    assert_eq!(crosses, 2 * (4 + 1));
    let t = &charts[&format!("{METAL}-output-throughput.svg")];
    assert!(t.legend_entries <= reports::MAX_LEGEND_ENTRIES);
    // The runs have no TTFT: nothing measured on that chart, and its caption says so.
    assert!(!has(&charts[&format!("{METAL}-ttft.svg")], "measured"));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("have no `mean_ttft_ms` to draw here"));
    assert!(html.contains("4 measured points from"));
    assert!(html.contains("input/output lengths 61/100 tokens"));

    let o = sim()
        .arg("report")
        .args(["--machine", METAL, "--measured", "/no/such/runs.jsonl"])
        .args(["--out", tmp.path().join("r2").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/no/such/runs.jsonl"), "{err}");
    assert!(!tmp.path().join("r2").exists());
}

#[test]
fn three_machines_split_collectives_to_six_lines_a_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let mut args = vec![
        "--machine",
        VM,
        "--machine",
        METAL,
        "--machine",
        "rtx-pro-6000-x8-baremetal-nccl-tuned",
        "--model",
        "qwen3-30b-a3b",
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ];
    args.extend(QUICK);
    run_json(&args);
    let charts = svgs(&out);
    let all_reduce: Vec<&String> = charts
        .keys()
        .filter(|k| k.contains("-all_reduce-busbw"))
        .collect();
    assert!(all_reduce.len() >= 2, "{all_reduce:?}");
    for (name, svg) in &charts {
        assert!(
            svg.legend_entries <= reports::MAX_LEGEND_ENTRIES,
            "{name}: {}",
            svg.legend_entries
        );
    }
}
