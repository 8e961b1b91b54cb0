//! The MoE layer bound's lines (`sim::cost::moe_bound`) against vLLM 0.24's fused MoE by shape on
//! the RTX PRO 6000 (`data/observations/moe-vllm-0.24-rtx-pro-6000-shapes.csv`, aiconfigurator
//! 0.12.0, balanced routing, ≤ 2 tokens per touched expert), held out by shape: the CUTLASS
//! formats were fitted on every shape but hidden 4096 (Qwen3.5-397B's 4096 × 1024 × 512 experts,
//! Qwen3-235B's, Mixtral-like 8-expert and a 256-expert shape held back), Marlin INT4 on its one
//! shape at TP 1, 2, 8, 32 (TP 4 and 16 held back). Per format: the median |error| of the line on
//! fitted and on held-back rows, and that no row whose touched weights exceed the 128 MB L2 (what
//! a serving step reads; smaller layers come from L2 in the collector's repeated call) is slower
//! than the bound. `cargo test -p sim --test suite moe_bound_table:: -- --nocapture` prints the table.

use crate::common;

use sim::cost::moe_bound::line_of;

const L2_BYTES: f64 = 128.0 * 1024.0 * 1024.0;
const PEAK_BYTE_S: f64 = 1792e9;

struct Row {
    dtype: String,
    hidden: f64,
    tp: f64,
    touched: f64,
    bytes_per_expert: f64,
    time_s: f64,
}

fn bytes_per_value(dtype: &str) -> f64 {
    match dtype {
        "nvfp4" => 0.5 + 1.0 / 16.0,
        "int4" => 0.5 + 2.0 / 32.0,
        "fp8" => 1.0,
        _ => 2.0,
    }
}

fn rows() -> Vec<Row> {
    common::data_csv_rows("moe-vllm-0.24-rtx-pro-6000-shapes.csv", |f, n| Row {
        dtype: f[1].into(),
        hidden: n(2),
        tp: n(6),
        touched: n(4).min(n(7) * n(5)),
        bytes_per_expert: 3.0 * n(2) * n(3) / n(6) * bytes_per_value(f[1]),
        time_s: n(8) * 1e-6,
    })
}

fn held_back(r: &Row) -> bool {
    if r.dtype == "int4" {
        r.tp == 4.0 || r.tp == 16.0
    } else {
        r.hidden == 4096.0
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn lines_hold_on_shapes_they_were_not_fitted_on() {
    let rows = rows();
    println!(
        "format  fitted: n median|err|   held back: n median|err|   worst cold measured/bound"
    );
    for dtype in ["nvfp4", "int4", "fp8", "bf16"] {
        let line = line_of(dtype).unwrap();
        let pred = |r: &Row| line.line_s(r.touched, r.bytes_per_expert, r.hidden, PEAK_BYTE_S);
        let err = |held: bool| {
            let e: Vec<f64> = rows
                .iter()
                .filter(|r| r.dtype == dtype && held_back(r) == held)
                .map(|r| (pred(r) / r.time_s - 1.0).abs())
                .collect();
            (e.len(), median(e))
        };
        let ((nf, ef), (nh, eh)) = (err(false), err(true));
        let worst = rows
            .iter()
            .filter(|r| r.dtype == dtype && r.touched * r.bytes_per_expert >= L2_BYTES)
            .map(|r| r.time_s / line.bound_s(r.touched, r.bytes_per_expert, r.hidden, PEAK_BYTE_S))
            .fold(0.0, f64::max);
        println!(
            "{dtype:6}  {nf:4} {:5.1}%            {nh:4} {:5.1}%            {worst:.2}",
            100.0 * ef,
            100.0 * eh
        );
        assert!(nf >= 40 && nh >= 20, "{dtype}: {nf} fitted, {nh} held back");
        // the fitted line's medians: 5.9 / 6.4% NVFP4, 1.2 / 2.2% INT4, 8.5 / 6.1% FP8, 4.2 /
        // 4.8% BF16 (scripts/distill-vllm-moe-shapes.py --fit)
        assert!(ef < 0.10, "{dtype}: fitted median |error| {ef}");
        assert!(eh < 0.10, "{dtype}: held-back median |error| {eh}");
        assert!(worst <= 1.0, "{dtype}: a cold row {worst:.2}× the bound");
    }
}

/// The lines, fitted on vLLM's kernels, against SGLang 0.5.14's fused MoE on the same card
/// (`data/observations/moe-kernels-sglang-0.5.14.csv`, the rows the kernel curves were fitted
/// on, ≤ 2 routed pairs per touched expert on a GPU, EP shards included): another engine's
/// kernels, never fitted by the lines. Medians 1.6% NVFP4, 8.8% INT4 (SGLang's int4 kernel 5–14%
/// slower than Marlin), 1.9% FP8, 3.0% BF16; no row above the bound.
#[test]
fn lines_price_sglang_kernels_of_the_same_card() {
    struct S {
        dtype: &'static str,
        hidden: f64,
        touched: f64,
        pairs: f64,
        bytes: f64,
        time_s: f64,
    }
    let rows = common::data_csv_rows("moe-kernels-sglang-0.5.14.csv", |f, n| S {
        dtype: match (f[0], f[8]) {
            ("rtx_pro_6000_server", "nvfp4") => "nvfp4",
            ("rtx_pro_6000_server", "int4_wo") => "int4",
            ("rtx_pro_6000_server", "fp8_block") => "fp8",
            ("rtx_pro_6000_server", "bfloat16") => "bf16",
            _ => "",
        },
        hidden: n(2),
        pairs: n(9) * n(5) / n(7),
        touched: n(11),
        bytes: n(12),
        time_s: n(10) * 1e-6,
    });
    for dtype in ["nvfp4", "int4", "fp8", "bf16"] {
        let line = line_of(dtype).unwrap();
        let mine: Vec<&S> = rows
            .iter()
            .filter(|r| r.dtype == dtype && r.pairs <= 2.0 * r.touched)
            .collect();
        let pred = |r: &S| line.line_s(r.touched, r.bytes / r.touched, r.hidden, PEAK_BYTE_S);
        let err = median(
            mine.iter()
                .map(|r| (pred(r) / r.time_s - 1.0).abs())
                .collect(),
        );
        let worst = mine
            .iter()
            .map(|r| r.time_s / line.bound_s(r.touched, r.bytes / r.touched, r.hidden, PEAK_BYTE_S))
            .fold(0.0, f64::max);
        println!(
            "SGLang 0.5.14 {dtype}: {} rows, median |error| {:.1}%, worst measured/bound {worst:.2}",
            mine.len(),
            100.0 * err
        );
        assert!(mine.len() >= 40, "{dtype}: {}", mine.len());
        assert!(err < 0.10, "{dtype}: {err}");
        assert!(worst <= 1.0, "{dtype}: {worst}");
    }
}

fn qwen35_tp4(batch: u32) -> serde_json::Value {
    let batch = batch.to_string();
    common::sim_json(&[
        "predict",
        "--format",
        "json",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "qwen3.5-397b-a17b-nvfp4",
        "--tp",
        "4",
        "--context",
        "0",
        "--batch",
        &batch,
    ])
}

/// Qwen3.5-397B NVFP4 at TP4 (512 experts top-10, a 4096 × 256 slice per GPU, below the kernel
/// curves' smallest measured slice): at 8–64 streams the step's weight reads grow by no more than
/// the bound of the touched experts (60 MoE layers; the non-expert weights taken from one stream).
/// Before the bound and the fractional tokens per expert, 32 streams read 41.9 ms of weights
/// (b12x), more than streaming every expert of the model once.
#[test]
fn qwen35_decode_moe_stays_under_the_bound() {
    let nvfp4 = line_of("nvfp4").unwrap();
    let field = |v: &serde_json::Value, k: &str| v["layouts"][0]["traffic"][k].as_f64().unwrap();
    let wr = |v: &serde_json::Value| {
        v["layouts"][0]["breakdown"]["weight_read_ms"]
            .as_f64()
            .unwrap()
    };
    let one = qwen35_tp4(1);
    for batch in [8, 16, 32, 64] {
        let v = qwen35_tp4(batch);
        let touched = field(&v, "experts_touched_per_layer");
        let bytes_per_expert = field(&v, "expert_read_bytes") / (60.0 * touched);
        let bound_ms = 60.0 * nvfp4.bound_s(touched, bytes_per_expert, 4096.0, PEAK_BYTE_S) * 1e3;
        let moe_ms = wr(&v) - wr(&one);
        println!(
            "{batch} streams: {touched:.0} experts touched, MoE {moe_ms:.1} ms ≤ bound {bound_ms:.1} ms"
        );
        assert!(moe_ms <= bound_ms, "{batch}: {moe_ms} > {bound_ms}");
    }
}

/// Qwen3.5-397B NVFP4 at TP4 under FlashInfer CUTLASS: the vLLM 0.24 table measured this very
/// shape (4096 × 1024, 512 experts top-10, moe_tp 4), so decode MoE is priced from its rows and
/// the prediction says so instead of flagging an extrapolated slice; from one stream to 64 the
/// routed experts add what the rows say for the touched experts (the other GEMMs grow a little
/// with the batch: at most 10% more).
#[test]
fn qwen35_decode_moe_reads_its_own_table_rows() {
    let one = qwen35_tp4(1);
    let notes = one["layouts"][0]["notes"].to_string();
    assert!(notes.contains("MoE decode: kernel table"), "{notes}");
    assert!(notes.contains("512 experts top-10, moe_tp 4"), "{notes}");
    assert!(!notes.contains("MoE efficiency extrapolated"), "{notes}");
    let v = qwen35_tp4(64);
    let wr = |v: &serde_json::Value| {
        v["layouts"][0]["breakdown"]["weight_read_ms"]
            .as_f64()
            .unwrap()
    };
    let touched = v["layouts"][0]["traffic"]["experts_touched_per_layer"]
        .as_f64()
        .unwrap();
    let table = sim::cost::moe_shape_table::ShapeTable::of(sim::cost::moe_shape_table::MoeShape {
        backend: "cutlass",
        dtype: "nvfp4",
        hidden: 4096,
        inter: 1024,
        experts: 512,
        topk: 10,
        tp: 4,
    })
    .unwrap();
    let rows_ms = 60.0 * (table.time_s(touched, 640.0) - table.time_s(10.0, 10.0)) * 1e3;
    let grew_ms = wr(&v) - wr(&one);
    println!("64 streams: {touched:.0} touched, weights +{grew_ms:.2} ms, rows +{rows_ms:.2} ms");
    assert!(
        grew_ms >= rows_ms && grew_ms <= 1.1 * rows_ms,
        "{grew_ms} vs {rows_ms}"
    );
}
