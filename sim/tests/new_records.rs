//! Issue 35: records that could not be expressed before — a GLM-5.2 run at TP6 under the b12x
//! vLLM fork (heads padded), a box of RTX PRO 6000 Max-Q cards, an HGX H20, MiniMax-M2.5 AWQ
//! INT4 — map onto presets and are compared; the same records without what makes them runnable
//! still say why not.

use sim::records::{RecordSet, UnexpressibleKind, express};
use sim::scoreboard::{ScoreOptions, score};
use std::path::Path;

fn set(records: &[String]) -> RecordSet {
    let text = format!(r#"{{"records": [{}]}}"#, records.join(","));
    RecordSet::parse(text.as_bytes(), Path::new("issue35.json")).unwrap()
}

fn decode_record(id: &str, gpu: &str, p2p: &str, engine: &str, flags: &str, model: &str) -> String {
    let tp = if flags.contains("-tp 6") || flags.contains("--tensor-parallel-size 6") {
        6
    } else {
        8
    };
    format!(
        r#"{{"id": "{id}", "hardware": {{"gpu": "{gpu}", "count": {tp}, "p2p": "{p2p}",
         "virtualized": false}}, "engine": {{"name": "{engine}", "flags": "{flags}"}},
         "model": "{model}", "quant": "nvfp4", "parallel": {{"tp": {tp}, "pp": 1}},
         "workload": {{"input_len": 0, "concurrency": 1, "dataset": "llm_decode_bench.py"}},
         "metrics": {{"output_tok_s": "50"}}}}"#
    )
}

#[test]
fn a_max_q_box_is_the_300_w_cards_with_p2p() {
    let maxq = "NVIDIA RTX 6000 Pro Max-Q";
    let server = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
    let s = set(&[
        decode_record("maxq", maxq, "enabled", "sglang", "--tp 8", "glm-5-nvfp4"),
        decode_record(
            "server",
            server,
            "enabled",
            "sglang",
            "--tp 8",
            "glm-5-nvfp4",
        ),
        decode_record(
            "maxq-off",
            maxq,
            "disabled",
            "sglang",
            "--tp 8",
            "glm-5-nvfp4",
        ),
    ]);
    assert_eq!(
        express(&s.records[0]).unwrap().machine,
        "rtx-pro-6000-maxq-x8"
    );
    let off = express(&s.records[2]).unwrap_err();
    assert_eq!(off[0].kind, UnexpressibleKind::UnknownMachine);
    let b = score(&s, &ScoreOptions::default());
    assert_eq!(b.expressible, 2, "{:?}", b.unexpressible);
    let predicted = |id: &str| {
        b.comparisons
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.predicted)
            .unwrap()
    };
    // the same memory, lower tensor peaks: never faster than the 600 W card
    assert!(predicted("maxq") <= predicted("server"));
}

#[test]
fn glm52_at_tp6_runs_under_the_b12x_fork_only() {
    let gpu = "NVIDIA RTX PRO 6000 Blackwell";
    let fork = "vllm serve lukealonso/GLM-5.2-NVFP4 --tensor-parallel-size 6 --attention-backend B12X_MLA_SPARSE --moe-backend b12x --kv-cache-dtype fp8 --max-model-len 128000";
    let stock = "vllm serve lukealonso/GLM-5.2-NVFP4 --tensor-parallel-size 6 --kv-cache-dtype fp8 --max-model-len 128000";
    let model = "lukealonso/GLM-5.2-NVFP4";
    let s = set(&[
        decode_record("fork", gpu, "enabled", "vllm", fork, model),
        decode_record("stock", gpu, "enabled", "vllm", stock, model),
    ]);
    assert_eq!(express(&s.records[0]).unwrap().model, "glm-5.2-nvfp4");
    let b = score(&s, &ScoreOptions::default());
    assert_eq!(b.expressible, 1, "{:?}", b.unexpressible);
    let fork = &b.comparisons[0];
    assert_eq!(fork.id, "fork");
    assert!(
        fork.notes
            .iter()
            .any(|n| n.contains("attention heads 64 -> 96")),
        "{:?}",
        fork.notes
    );
    let stock = &b.unexpressible[0];
    assert_eq!(stock.reason, UnexpressibleKind::SimulationFailed);
    assert!(
        stock.reasons[0]
            .detail
            .contains("TP sizes that do: 1, 2, 4, 8"),
        "{:?}",
        stock.reasons
    );
}

#[test]
fn minimax_awq_expresses_where_its_workload_is_stated() {
    let record = |id: &str, workload: &str| {
        format!(
            r#"{{"id": "{id}", "hardware": {{"gpu": "NVIDIA RTX PRO 6000 Blackwell", "count": 2,
             "p2p": "unknown", "virtualized": "unknown"}},
             "engine": {{"name": "vllm", "flags": "vllm serve mratsim/Minimax-M2.5-BF16-INT4-AWQ --tensor-parallel-size 2 --max-num-seqs 64"}},
             "model": "mratsim/Minimax-M2.5-BF16-INT4-AWQ", "quant": "awq int4 (W4A16)",
             "parallel": {{"tp": 2, "pp": 1}}, "workload": {workload},
             "metrics": {{"output_tok_s": "930.12"}}}}"#
        )
    };
    let s = set(&[
        record(
            "stated",
            r#"{"input_len": 1000, "output_len": 1000, "concurrency": 64, "dataset": "random"}"#,
        ),
        record(
            "unstated",
            r#"{"input_len": null, "output_len": null, "concurrency": 64, "dataset": "bench_serving-style"}"#,
        ),
    ]);
    let e = express(&s.records[0]).unwrap();
    assert_eq!(e.model, "minimax-m2.5-int4-awq");
    let b = score(&s, &ScoreOptions::default());
    assert_eq!(b.expressible, 1, "{:?}", b.unexpressible);
    // the model resolves; what is left unstated is the workload
    assert_eq!(
        b.unexpressible[0].reason,
        UnexpressibleKind::MissingWorkload
    );
}

/// Issue 35: a record on "NVIDIA H20" runs on the `h20-x8` preset (H200's fabric, the H20 card),
/// and is slower than the same record on H200s (less memory bandwidth, a sixth of the tensor peak).
#[test]
fn an_h20_record_runs_on_the_hgx_h20() {
    let s = set(&[
        decode_record(
            "h20",
            "NVIDIA H20",
            "enabled",
            "sglang",
            "--tp 8",
            "glm-4.7-fp8",
        ),
        decode_record(
            "h200",
            "NVIDIA H200",
            "enabled",
            "sglang",
            "--tp 8",
            "glm-4.7-fp8",
        ),
    ]);
    assert_eq!(express(&s.records[0]).unwrap().machine, "h20-x8");
    assert_eq!(express(&s.records[1]).unwrap().machine, "h200-x8");
    let b = score(&s, &ScoreOptions::default());
    assert_eq!(b.expressible, 2, "{:?}", b.unexpressible);
    let predicted = |id: &str| {
        b.comparisons
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.predicted)
            .unwrap()
    };
    assert!(predicted("h20") < predicted("h200"));
}
