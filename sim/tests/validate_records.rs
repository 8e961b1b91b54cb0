//! The records reader, the mapping and the scoreboard on synthetic records (one of every kind),
//! and `sim validate --records` / `sim report --records` as a user runs them, bad input included.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use sim::engine::Engine;
use sim::records::{MetricFamily, Quantity, RecordSet, UnexpressibleKind, express};
use sim::scoreboard::{ScoreOptions, Scoreboard, score};
use std::path::Path;

const SYNTHETIC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/records_synthetic.json"
);

fn set() -> RecordSet {
    RecordSet::load(Path::new(SYNTHETIC)).expect("fixture parses")
}

fn board(engine: Option<Engine>) -> Scoreboard {
    score(&set(), &ScoreOptions { engine })
}

fn sim() -> Command {
    Command::cargo_bin("sim").unwrap()
}

#[test]
fn every_record_is_compared_or_has_its_reason() {
    let b = board(None);
    assert_eq!(b.records, 11);
    assert_eq!(b.expressible, 5, "{:#?}", b.unexpressible);
    let reason = |id: &str| {
        b.unexpressible
            .iter()
            .find(|u| u.id == id)
            .map(|u| u.reason)
            .unwrap_or_else(|| panic!("{id} not among the unexpressible"))
    };
    assert_eq!(reason("syn-mtp-on"), UnexpressibleKind::MtpOn);
    assert_eq!(reason("syn-dcp"), UnexpressibleKind::Dcp);
    assert_eq!(reason("syn-six-gpus"), UnexpressibleKind::UnknownMachine);
    assert_eq!(reason("syn-unknown-model"), UnexpressibleKind::UnknownModel);
    assert_eq!(reason("syn-multi-node"), UnexpressibleKind::MultiNode);
    assert_eq!(
        reason("syn-power-only"),
        UnexpressibleKind::MetricNotModelled
    );
    // DCP is modelled (syn-mtp-on's DCP 4 is no reason); a DCP that does not divide TP is
    // (syn-dcp: DCP 3 of TP 8), as vLLM refuses it
    let mtp = b
        .unexpressible
        .iter()
        .find(|u| u.id == "syn-mtp-on")
        .unwrap();
    assert!(
        mtp.reasons
            .iter()
            .all(|r| r.kind == UnexpressibleKind::MtpOn)
    );
    let counted: usize = b.reasons.iter().map(|r| r.count).sum();
    assert_eq!(counted, b.records - b.expressible);
    // one headline figure per compared record; the flagged TTFT is shown, not counted
    assert_eq!(b.summary.n, 5);
    let ttft = b
        .comparisons
        .iter()
        .find(|c| c.quantity == Quantity::TtftMeanMs)
        .unwrap();
    assert!(ttft.flagged && !ttft.primary);
    assert!(b.groups.iter().all(|g| g.quantity != Quantity::TtftMeanMs));
    assert!(b.worst.len() <= 10 && b.worst.iter().all(|c| c.primary));
    for c in &b.comparisons {
        assert!(c.predicted.is_finite() && c.predicted > 0.0, "{}", c.id);
        let e = (c.predicted - c.measured) / c.measured * 100.0;
        assert!((e - c.error_pct).abs() < 1e-9);
    }
}

#[test]
fn records_map_onto_presets_layouts_and_knobs() {
    let s = set();
    let get = |id: &str| {
        let r = s.records.iter().find(|r| r.id == id).unwrap();
        express(r).unwrap_or_else(|e| panic!("{id}: {e:?}"))
    };
    let glm = get("syn-glm5-sglang-tp8-ctx0-c1");
    assert_eq!(
        (glm.machine.as_str(), glm.model.as_str()),
        ("rtx-pro-6000-x8-baremetal", "glm-5-nvfp4")
    );
    assert_eq!(glm.family, MetricFamily::LlmDecodeBench);
    assert_eq!(glm.knobs.kv_cache_dtype, Some(models::KvDtype::Bf16));
    assert_eq!(glm.knobs.moe_runner_backend.as_deref(), Some("b12x"));
    assert!(glm.assumptions.iter().any(|a| a.contains("bare metal")));
    assert!(glm.targets[0].approximate);
    let kimi = get("syn-kimi-vllm-tp8-ctx0-c2");
    assert_eq!(kimi.model, "kimi-k2-thinking-int4");
    assert_eq!(kimi.engine, Engine::Vllm);
    assert_eq!(kimi.not_compared, vec!["pcie_rx_tx_nvml".to_string()]);
    let ds = get("syn-dsr1-fp4-b200-inferencex-c8");
    assert_eq!(
        (ds.machine.as_str(), ds.model.as_str()),
        ("b200-x8", "deepseek-r1-fp4")
    );
    assert_eq!((ds.layout.tp, ds.layout.ep), (8, 8));
    let w = ds.workload.as_ref().unwrap();
    assert_eq!((w.num_prompts, w.max_concurrency), (80, Some(8)));
    assert_eq!(w.random_range_ratio, 0.8);
    let out = ds.targets.iter().find(|t| t.primary).unwrap();
    assert_eq!(
        (out.quantity, out.measured),
        (Quantity::OutputTokPerS, 800.0)
    );
    let own = get("syn-user-own-box");
    assert_eq!(
        (own.machine.as_str(), own.model.as_str()),
        ("h200-x8", "deepseek-v3-fp8")
    );
}

#[test]
fn engines_differ_where_the_record_says_they_do() {
    let own = board(None);
    let sglang = board(Some(Engine::Sglang));
    let pred = |b: &Scoreboard, id: &str| {
        b.comparisons
            .iter()
            .find(|c| c.id == id && c.primary)
            .map(|c| (c.predicted, c.engine, c.notes.clone()))
            .unwrap()
    };
    // the vLLM record's PCIe all-reduce is a vLLM knob: SGLang runs NCCL, a slower step at 2 streams
    let (v, ev, notes) = pred(&own, "syn-kimi-vllm-tp8-ctx0-c2");
    let (s, es, snotes) = pred(&sglang, "syn-kimi-vllm-tp8-ctx0-c2");
    assert_eq!((ev, es), (Engine::Vllm, Engine::Sglang));
    assert!(v > s, "vLLM with its PCIe all-reduce {v} vs SGLang {s}");
    assert!(notes.iter().any(|n| n.contains("56 KiB")), "{notes:?}");
    assert!(snotes.iter().any(|n| n.contains("vllm knob")), "{snotes:?}");
    // an SGLang record is the same under --engine sglang
    let g = pred(&own, "syn-glm5-sglang-tp8-ctx0-c1").0;
    assert_eq!(g, pred(&sglang, "syn-glm5-sglang-tp8-ctx0-c1").0);
}

#[test]
fn streamed_chunks_make_the_itl_the_client_sees() {
    // InferenceX runs SGLang with --stream-interval 10: bench_serving's ITL spans 10 steps
    let b = board(None);
    let q = |q: Quantity| {
        b.comparisons
            .iter()
            .find(|c| c.id == "syn-dsr1-fp4-b200-inferencex-c8" && c.quantity == q)
            .unwrap()
            .clone()
    };
    let itl = q(Quantity::ItlMeanMs);
    let per_stream_tok_s = q(Quantity::OutputTokPerS).predicted / 8.0;
    let ratio = itl.predicted / (1e3 / per_stream_tok_s);
    assert!(
        (6.0..=12.0).contains(&ratio),
        "ITL {} ms is {ratio:.1} token gaps",
        itl.predicted
    );
}

#[test]
fn validate_records_prints_tables_json_markdown_and_csv() {
    let out = sim()
        .args(["validate", "--records", SYNTHETIC, "--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["expressible"], 5);
    assert_eq!(v["engine"], "each record's own");
    assert!(v["worst"][0]["breakdown"]["weight_read_s"].is_number());
    assert_eq!(v["reasons"].as_array().unwrap().len(), 6);
    sim()
        .args(["validate", "--records", SYNTHETIC])
        .assert()
        .success()
        .stdout(predicate::str::contains("MAPE").and(predicate::str::contains("mtp-on")));
    sim()
        .args([
            "validate",
            "--records",
            SYNTHETIC,
            "--format",
            "markdown",
            "--engine",
            "vllm",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("| model | family | metric |")
                .and(predicate::str::contains("engine simulated: vllm")),
        );
    let out = sim()
        .args(["validate", "--records", SYNTHETIC, "--format", "csv"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 1 + 8, "{text}");
}

#[test]
fn bad_records_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"records\": [{\"id\": 3}]}").unwrap();
    for (args, needle) in [
        (
            vec!["validate", "--records", bad.to_str().unwrap()],
            "records file",
        ),
        (
            vec!["validate", "--records", "/no/such/records.json"],
            "records file: cannot read /no/such/records.json",
        ),
        (vec!["validate"], "needs --records FILE"),
        (
            vec!["validate", "--engine", "vllm", "--machine", "h200-x8"],
            "--records",
        ),
        (
            vec!["validate", "--records", SYNTHETIC, "--machine", "h200-x8"],
            "cannot be used with",
        ),
    ] {
        let out = sim().args(&args).assert().code(2);
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(err.contains(needle), "{args:?}: {err}");
        if needle.starts_with("records") {
            assert_eq!(err.trim().lines().count(), 1, "{err}");
        }
    }
}

#[test]
fn report_draws_the_scoreboard() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    sim()
        .args([
            "report",
            "--machine",
            "rtx-pro-6000-x8-baremetal",
            "--num-prompts",
            "16",
        ])
        .args([
            "--max-concurrency",
            "1,8",
            "--at-concurrency",
            "8",
            "--draws",
            "4",
        ])
        .args(["--records", SYNTHETIC, "--out", out.to_str().unwrap()])
        .assert()
        .success();
    let svg = std::fs::read_to_string(out.join("scoreboard-output-throughput.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let circles = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .count();
    // 5 records with a throughput headline (GLM ×2, Kimi, DeepSeek-R1 on B200, the user's H200
    // record) of 4 models: 5 points + 4 legend markers
    assert_eq!(circles, 5 + 4, "{svg}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Against public measurements"));
    assert!(html.contains("syn-glm5-sglang-tp8-ctx0-c1"));
}
