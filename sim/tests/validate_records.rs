//! The records reader, the mapping and the scoreboard on synthetic records (one of every kind),
//! and `sim validate --records` / `sim report --records` as a user runs them, bad input included.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use sim::engine::Engine;
use sim::records::speculation::AcceptOrigin;
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
    assert_eq!(b.records, 13);
    assert_eq!(b.expressible, 8, "{:#?}", b.unexpressible);
    let reason = |id: &str| {
        b.unexpressible
            .iter()
            .find(|u| u.id == id)
            .map(|u| u.reason)
            .unwrap_or_else(|| panic!("{id} not among the unexpressible"))
    };
    assert_eq!(reason("syn-dcp"), UnexpressibleKind::Dcp);
    // six GPUs run on six of the 8-GPU preset; that record states no context
    assert_eq!(reason("syn-six-gpus"), UnexpressibleKind::MissingWorkload);
    assert_eq!(reason("syn-unknown-model"), UnexpressibleKind::UnknownModel);
    assert_eq!(reason("syn-multi-node"), UnexpressibleKind::MultiNode);
    assert_eq!(
        reason("syn-power-only"),
        UnexpressibleKind::MetricNotModelled
    );
    // MTP on and DCP are both modelled: syn-mtp-on (DCP 4 of TP 8, MTP on) is compared, with
    // its speculation; a DCP that does not divide TP is refused (syn-dcp: DCP 3 of TP 8), as
    // vLLM refuses it
    let mtp = b
        .comparisons
        .iter()
        .find(|c| c.id == "syn-mtp-on")
        .expect("syn-mtp-on is compared");
    assert!(mtp.speculation.is_some());
    let counted: usize = b.reasons.iter().map(|r| r.count).sum();
    assert_eq!(counted, b.records - b.expressible);
    // one headline figure per compared record; the flagged TTFT is shown, not counted
    assert_eq!(b.summary.n, 8);
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
    assert_eq!(kimi.model, "kimi-k2.5");
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
fn mtp_on_records_are_predicted_with_the_measured_or_an_assumed_acceptance() {
    let b = board(None);
    let row = |id: &str| {
        b.comparisons
            .iter()
            .find(|c| c.id == id && c.primary)
            .unwrap_or_else(|| panic!("{id} not compared"))
            .clone()
    };
    let assumed = row("syn-glm5-mtp-assumed");
    let measured = row("syn-glm5-mtp-measured");
    let plain = row("syn-glm5-sglang-tp8-ctx0-c1");
    let (a, m) = (assumed.speculation.unwrap(), measured.speculation.unwrap());
    assert_eq!(
        (a.accept, m.accept),
        (AcceptOrigin::Assumed, AcceptOrigin::Measured)
    );
    assert_eq!(m.accept_length, 2.0);
    // the MTP default chain at 3 draft steps, inside [1, draft tokens]
    assert!(a.accept_length > 2.0 && a.accept_length <= 4.0, "{a:?}");
    assert!(plain.speculation.is_none());
    // a record that does not say whether a draft ran is predicted without one, and says so; one
    // that says MTP off does not carry the note
    let unstated = row("syn-dsr1-fp4-b200-inferencex-c8");
    assert!(unstated.speculation.is_none());
    let said = |c: &sim::scoreboard::RecordComparison| {
        c.notes
            .iter()
            .any(|n| n == sim::records::mapping::SPECULATION_NOT_STATED)
    };
    assert!(said(&unstated), "{:?}", unstated.notes);
    assert!(!said(&plain), "{:?}", plain.notes);
    // the same server: more accepted tokens per step decode faster, both beat MTP off at 1 stream
    assert!(assumed.predicted > measured.predicted && measured.predicted > plain.predicted);
    assert!(
        assumed.notes.iter().any(|n| n.contains("assumed")),
        "{:?}",
        assumed.notes
    );
    let on = b
        .speculation
        .iter()
        .find(|f| f.speculation == "MTP on")
        .unwrap();
    let off = b
        .speculation
        .iter()
        .find(|f| f.speculation == "MTP off")
        .unwrap();
    // MTP on: the GLM-5 pair and the Kimi DCP 4 record (assumed: its source gives none)
    assert_eq!((on.stats.n, on.assumed_accept, off.stats.n), (3, 2, 5));
}

#[test]
fn an_acceptance_file_scores_the_records_it_names_with_their_measured_length() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("acc.json");
    std::fs::write(
        &file,
        r#"{"schema_version": 1, "records": [{"id": "syn-glm5-mtp-assumed", "accept_length": 1.5}]}"#,
    )
    .unwrap();
    let out = sim()
        .args(["validate", "--records", SYNTHETIC, "--format", "json"])
        .args(["--acceptance", file.to_str().unwrap()])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let row = v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "syn-glm5-mtp-assumed")
        .unwrap()
        .clone();
    assert_eq!(row["speculation"]["accept"], "measured");
    assert_eq!(row["speculation"]["accept_length"], 1.5);
    // the other MTP-on record (syn-mtp-on) is still assumed
    assert_eq!(v["speculation"][1]["assumed_accept"], 1);
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
    assert_eq!(v["expressible"], 8);
    assert_eq!(v["engine"], "each record's own");
    assert!(v["worst"][0]["breakdown"]["weight_read_s"].is_number());
    assert_eq!(v["reasons"].as_array().unwrap().len(), 5);
    assert_eq!(v["speculation"][1]["speculation"], "MTP on");
    let measured = v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "syn-glm5-mtp-measured")
        .unwrap();
    assert_eq!(measured["speculation"]["accept"], "measured");
    sim()
        .args(["validate", "--records", SYNTHETIC])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("MAPE")
                .and(predicate::str::contains("dcp"))
                .and(predicate::str::contains("MTP on")),
        );
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
    // a header and one row per compared figure (8 records; the bench_serving one has four)
    assert_eq!(text.lines().count(), 1 + 11, "{text}");
}

#[test]
fn bad_records_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    // a file that is no records file is refused whole; one entry that is no record (issue 38)
    // is skipped with its reason, the rest compared
    std::fs::write(&bad, "{\"records\": 3}").unwrap();
    let one_bad = dir.path().join("one_bad.json");
    std::fs::write(&one_bad, "{\"records\": [{\"id\": 3}]}").unwrap();
    sim()
        .args(["validate", "--records", one_bad.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("is no record"));
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
    // 8 records with a throughput headline (GLM ×2 and ×2 with MTP, Kimi ×2 (one DCP 4 with
    // MTP), DeepSeek-R1 on B200, the user's H200 record) of 4 models: 8 points + 4 legend markers
    assert_eq!(circles, 8 + 4, "{svg}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Against public measurements"));
    assert!(html.contains("syn-glm5-sglang-tp8-ctx0-c1"));
}

#[test]
fn a_record_of_half_a_box_runs_on_the_presets_first_gpus() {
    let text = r#"{"records": [
        {"id": "four", "hardware": {"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "count": 4, "p2p": "enabled", "virtualized": false},
         "engine": {"name": "sglang", "flags": "--tp 4"}, "model": "qwen3-235b-a22b-nvfp4",
         "parallel": {"tp": 4, "pp": 1},
         "workload": {"input_len": 0, "concurrency": 4, "dataset": "llm_decode_bench.py"},
         "metrics": {"output_tok_s": "200"}},
        {"id": "tp4-of-8", "hardware": {"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "count": 8, "p2p": "enabled", "virtualized": false},
         "engine": {"name": "sglang", "flags": "--tp 4"}, "model": "qwen3-235b-a22b-nvfp4",
         "parallel": {"tp": 4, "pp": 1},
         "workload": {"input_len": 0, "concurrency": 4, "dataset": "llm_decode_bench.py"},
         "metrics": {"output_tok_s": "200"}},
        {"id": "tp8-of-4", "hardware": {"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "count": 4, "p2p": "enabled", "virtualized": false},
         "engine": {"name": "sglang", "flags": "--tp 8"}, "model": "qwen3-235b-a22b-nvfp4",
         "parallel": {"tp": 8, "pp": 1},
         "workload": {"input_len": 0, "concurrency": 4, "dataset": "llm_decode_bench.py"},
         "metrics": {"output_tok_s": "200"}}]}"#;
    let set = RecordSet::parse(text.as_bytes(), Path::new("half.json")).unwrap();
    let four = express(&set.records[0]).unwrap();
    assert_eq!(four.machine, "rtx-pro-6000-x8-baremetal");
    assert!(
        four.assumptions.iter().any(|a| a.contains("first 4 GPUs")),
        "{:?}",
        four.assumptions
    );
    let of8 = express(&set.records[1]).unwrap();
    assert!(
        of8.assumptions.iter().any(|a| a.contains("first 4 of 8")),
        "{:?}",
        of8.assumptions
    );
    let why = express(&set.records[2]).unwrap_err();
    assert_eq!(why[0].kind, UnexpressibleKind::MissingLayout);
    let b = score(&set, &ScoreOptions::default());
    assert_eq!(b.expressible, 2, "{:?}", b.unexpressible);
    for c in &b.comparisons {
        assert!(c.machine.ends_with("GPUs 0,1,2,3"), "{}", c.machine);
    }
    // the same server on the same GPUs: one prediction
    assert_eq!(b.comparisons[0].predicted, b.comparisons[1].predicted);
}

#[test]
fn a_record_of_sixteen_rtx_gpus_runs_on_the_sixteen_gpu_box() {
    let record = |id: &str, count: u32, tp: u32, virtualized: bool, extra: &str| {
        format!(
            r#"{{"id": "{id}", "hardware": {{"gpu": "NVIDIA RTX PRO 6000 Blackwell",
             "count": {count}, "p2p": "unknown", "virtualized": {virtualized}}},
             "engine": {{"name": "vllm", "flags": "TP={tp}{extra}"}}, "model": "moonshotai/Kimi-K2.6",
             "quant": "int4 native (W4A16)", "parallel": {{"tp": {tp}, "pp": 1}},
             "workload": {{"input_len": 0, "concurrency": 16, "dataset": "llm_decode_bench.py"}},
             "metrics": {{"output_tok_s": "780"}}}}"#
        )
    };
    let text = format!(
        r#"{{"records": [{}, {}, {}, {}]}}"#,
        record("tp16", 16, 16, false, "; NCCL graph file not used"),
        record("tp8-of-12", 12, 8, false, ""),
        record("vm16", 16, 16, true, ""),
        record(
            "tp8-graph",
            16,
            8,
            false,
            "; NCCL_GRAPH_FILE=/mnt/nccl_graph_opt.xml (the 8-rank graph file)"
        )
    );
    let set = RecordSet::parse(text.as_bytes(), Path::new("sixteen.json")).unwrap();
    let tp16 = express(&set.records[0]).unwrap();
    assert_eq!(tp16.machine, "rtx-pro-6000-x16-pcie-switch");
    assert_eq!(tp16.model, "kimi-k2.5");
    assert!(
        tp16.assumptions
            .iter()
            .any(|a| a.contains("16-GPU box") && a.contains("P2P assumed")),
        "{:?}",
        tp16.assumptions
    );
    let twelve = express(&set.records[1]).unwrap();
    assert_eq!(twelve.machine, "rtx-pro-6000-x16-pcie-switch");
    assert!(
        twelve
            .assumptions
            .iter()
            .any(|a| a.contains("its first GPUs"))
    );
    // a VM of 16 has no preset: refused, saying so
    let why = express(&set.records[2]).unwrap_err();
    assert_eq!(why[0].kind, UnexpressibleKind::UnknownMachine);
    // issue 36: the 8-rank graph file: the rings NCCL finds itself on this one-socket box
    let graph = express(&set.records[3]).unwrap();
    assert_eq!(graph.machine, sim::presets::NCCL_GRAPH_VARIANT);
    assert!(
        graph
            .assumptions
            .iter()
            .any(|a| a.contains("NCCL_GRAPH_FILE")),
        "{:?}",
        graph.assumptions
    );
    let b = score(&set, &ScoreOptions::default());
    assert_eq!(b.expressible, 3, "{:?}", b.unexpressible);
    // TP16 has no curve of its own: its predictions say the all-reduce is modelled
    let tp16 = b.comparisons.iter().find(|c| c.id == "tp16").unwrap();
    assert!(
        tp16.notes
            .iter()
            .any(|n| n.contains("modelled, not measured")),
        "{:?}",
        tp16.notes
    );
}

/// A records file with one InferenceX-style record (DeepSeek-R1 FP4 on 8× B200, 1k/1k at 8
/// streams) whose metrics are `metrics` (a JSON object).
fn one_bench_serving_record(metrics: &str) -> RecordSet {
    let text = format!(
        r#"{{"about": "medians", "records": [{{"id": "med", "source": "synthetic",
        "hardware": {{"gpu": "NVIDIA B200", "count": 8, "interconnect": "NVLink/NVSwitch",
        "p2p": "enabled", "virtualized": "unknown"}},
        "engine": {{"name": "sglang", "version": "v0.5.6", "flags": "TP=8 EP=8"}},
        "model": "nvidia/DeepSeek-R1-0528-FP4-V2", "quant": "nvfp4",
        "parallel": {{"tp": 8, "pp": 1, "ep": 8, "dp": 1, "attn_dp": null}},
        "workload": {{"input_len": 1024, "output_len": 1024, "concurrency": 8,
        "num_prompts": null, "dataset": "InferenceX random 1k/1k"}},
        "metrics": {metrics}}}]}}"#
    );
    RecordSet::parse(text.as_bytes(), Path::new("medians.json")).expect("parses")
}

/// The medians bench_serving prints (`median_tpot_ms`, `median_ttft_ms`) and InferenceX carries
/// (`tpot_ms_median`, `ttft_ms_median`) are compared with the simulated run's medians, under
/// their own names; a record's throughput stays its headline, and a record of medians alone is
/// headed by its TPOT.
#[test]
fn medians_are_compared_as_medians_and_never_displace_a_mean_or_a_throughput() {
    let opts = ScoreOptions { engine: None };
    let with_tput = score(
        &one_bench_serving_record(
            r#"{"output_tok_s_per_gpu": "100.0", "tpot_ms_median": "9.5", "ttft_ms_median": "120"}"#,
        ),
        &opts,
    );
    let fig = |b: &Scoreboard, q: Quantity| {
        b.comparisons
            .iter()
            .find(|c| c.quantity == q)
            .unwrap_or_else(|| panic!("{} not compared: {:#?}", q.name(), b.unexpressible))
            .clone()
    };
    let tpot = fig(&with_tput, Quantity::TpotMedianMs);
    let ttft = fig(&with_tput, Quantity::TtftMedianMs);
    assert_eq!((tpot.key.as_str(), tpot.measured), ("tpot_ms_median", 9.5));
    assert_eq!(
        (ttft.key.as_str(), ttft.measured),
        ("ttft_ms_median", 120.0)
    );
    assert!(!tpot.primary && !ttft.primary);
    assert!(fig(&with_tput, Quantity::OutputTokPerS).primary);
    assert!(tpot.predicted.is_finite() && tpot.predicted > 0.0);
    assert!(ttft.predicted.is_finite() && ttft.predicted > 0.0);

    // bench_serving's own spellings, and no throughput: the median TPOT heads the record
    let alone = score(
        &one_bench_serving_record(r#"{"median_ttft_ms": 120, "median_tpot_ms": 9.5}"#),
        &opts,
    );
    let head: Vec<_> = alone.comparisons.iter().filter(|c| c.primary).collect();
    assert_eq!(head.len(), 1);
    assert_eq!(head[0].quantity, Quantity::TpotMedianMs);
    assert_eq!(head[0].key, "median_tpot_ms");
    // the same run's mean and median TPOT come from one simulation: with a mean beside it the
    // mean heads the record, and the two predictions are of one run (close, not equal by rule)
    let both = score(
        &one_bench_serving_record(r#"{"tpot_ms_mean": "10.0", "tpot_ms_median": "9.5"}"#),
        &opts,
    );
    let mean = fig(&both, Quantity::TpotMeanMs);
    let median = fig(&both, Quantity::TpotMedianMs);
    assert!(mean.primary && !median.primary);
    let r = median.predicted / mean.predicted;
    assert!((0.5..=1.5).contains(&r), "median/mean TPOT {r}");
}
