//! b12x's MoE against the CUTLASS path (`sim::cost::moe::MoeRunner::B12x`), by the b12x build.
//!
//! The dev set's GLM-5-NVFP4 TP8 A/B runs (`validation/public-records.json`, carried in
//! `data/observations/b12x-glm5-moe-ab.csv`: the same box and SGLang March 2026 image, only
//! `--moe-runner-backend` changed) share everything but the MoE kernels at one context, so the
//! ratio of their throughputs is the runner's effect alone: b12x 0–11% ahead below 128 routed
//! pairs per GPU (its compact static kernel), 1.3–1.7× behind from there (that build's dynamic
//! kernel). `B12X_STATIC_SAVING_PER_EXPERT_S` and `B12X_DYNAMIC_PEAK_FRACTION` were pinned on
//! these pairs; `cargo test -p sim --test suite b12x_moe:: -- --nocapture` prints them.

use crate::common;

use std::collections::BTreeMap;

/// Pairs priced as the static kernel: mean |predicted / measured − 1| of the b12x/cutlass
/// throughput ratio (2.1% at the pinned 0.55 µs on the launch the page printed, read so since the
/// thirty-second session; 2.0% on the summary read before; 3.5% with no saving at all).
const STATIC_MEAN_TOLERANCE: f64 = 0.03;
/// Pairs priced as the dynamic kernel: |mean error| (−1.1% at the pinned rate, 0.34 of peak,
/// +3.3% on the summary read before; +47.6% with no dynamic term) and the largest single error
/// (+14.3% at MTP-on 16 streams, the deepest measured gap, +19.7% before; +61% before the
/// dynamic kernel was priced by its tasks).
const DYNAMIC_BIAS_TOLERANCE: f64 = 0.05;
const DYNAMIC_ROW_TOLERANCE: f64 = 0.25;

/// A b12x/cutlass pair of the dev set: (b12x record, cutlass record) comparisons.
type Pair = (serde_json::Value, serde_json::Value);

/// The dev set's GLM-5 SGLang TP8 comparisons (primary figures), by record id.
fn glm5_comparisons() -> BTreeMap<String, serde_json::Value> {
    let v = common::sim_json(&[
        "validate",
        "--records",
        "../validation/public-records.json",
        "--format",
        "json",
    ]);
    v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["primary"] != false)
        .filter_map(|c| {
            let id = c["id"].as_str()?;
            id.starts_with("rtx-glm5-sglang-tp8-")
                .then(|| (id.to_string(), c.clone()))
        })
        .collect()
}

fn glm5_pairs() -> Vec<Pair> {
    let mut by_group: BTreeMap<String, (Option<_>, Option<_>)> = BTreeMap::new();
    for (id, c) in glm5_comparisons() {
        let slot = by_group
            .entry(c["comparison_group"].as_str().unwrap().to_string())
            .or_default();
        if id.contains("-b12x-") {
            slot.0 = Some(c);
        } else if id.contains("-cutlass-") {
            slot.1 = Some(c);
        }
    }
    by_group
        .into_values()
        .filter_map(|(b, c)| Some((b?, c?)))
        .collect()
}

/// Tokens a step carries per stream in the dev runs: 1, or the 5 an MTP verify step checks (the
/// page's launch: NEXTN 4 steps, 6 draft tokens asked, 5 verified under topk 1; read so since the
/// thirty-second session, 4 before).
fn tokens_per_stream(id: &str) -> u64 {
    if id.contains("-mtp1-") { 5 } else { 1 }
}

fn throughput_ratio(p: &Pair, key: &str) -> f64 {
    p.0[key].as_f64().unwrap() / p.1[key].as_f64().unwrap()
}

#[test]
fn b12x_over_cutlass_follows_the_march_runs() {
    let pairs = glm5_pairs();
    assert_eq!(pairs.len(), 21, "the MTP-off and MTP-on tables' pairs");
    let (mut statics, mut dynamics) = (Vec::new(), Vec::new());
    for p in &pairs {
        let id = p.0["id"].as_str().unwrap();
        let measured = throughput_ratio(p, "measured");
        let predicted = throughput_ratio(p, "predicted");
        let error = predicted / measured - 1.0;
        let tokens = p.0["concurrency"].as_u64().unwrap() * tokens_per_stream(id);
        println!(
            "{id:48} measured {measured:.3} predicted {predicted:.3} {:+5.1}%",
            100.0 * error
        );
        // GLM-5 routes each token to 8 experts: 128 pairs from 16 tokens a step
        if tokens * 8 < 128 {
            assert!(
                predicted > 1.0,
                "{id}: b12x's static kernel ahead of cutlass"
            );
            statics.push(error);
        } else {
            assert!(
                predicted < 0.9,
                "{id}: the March build's dynamic kernel behind"
            );
            assert!(
                error.abs() <= DYNAMIC_ROW_TOLERANCE,
                "{id}: {:+.1}%",
                100.0 * error
            );
            dynamics.push(error);
        }
    }
    let mean =
        |xs: &[f64], f: fn(f64) -> f64| xs.iter().map(|x| f(*x)).sum::<f64>() / xs.len() as f64;
    assert_eq!((statics.len(), dynamics.len()), (14, 7));
    let static_mean = mean(&statics, f64::abs);
    assert!(
        static_mean <= STATIC_MEAN_TOLERANCE,
        "static mean |error| {static_mean:.3}"
    );
    let dynamic_bias = mean(&dynamics, |x| x);
    assert!(
        dynamic_bias.abs() <= DYNAMIC_BIAS_TOLERANCE,
        "dynamic bias {dynamic_bias:+.3}"
    );
}

/// The records are read as the March build their engine words name; a launch line names no
/// build and is priced as the newest, whose static kernel runs up to 640 routed pairs: at 16
/// streams (128 pairs) it is ahead of cutlass, where the March runs fell behind.
#[test]
fn a_launch_line_is_priced_as_the_newest_build() {
    let step_ms = |backend: &str| step_ms("glm-5-nvfp4", "8", "16", backend);
    assert!(step_ms("b12x") < step_ms("cutlass"));
}

/// The carried table is the dev records' figures (MTP off and on, context 0).
#[test]
fn the_carried_table_is_the_dev_records() {
    // an empty cell: not run (MTP on, 64 streams, cutlass)
    let rows = common::data_csv_rows("b12x-glm5-moe-ab.csv", |f, n| {
        (f[0].to_string(), n(2) as u64, n(3), f[4].parse().ok())
    });
    assert_eq!(rows.len(), 14);
    let measured: BTreeMap<String, f64> = glm5_comparisons()
        .into_iter()
        .map(|(id, c)| (id, c["measured"].as_f64().unwrap()))
        .collect();
    for (mtp, conc, b12x, cutlass) in rows {
        let mtp = if mtp == "on" { 1 } else { 0 };
        let id = |b: &str| format!("rtx-glm5-sglang-tp8-{b}-mtp{mtp}-ctx0-c{conc}");
        assert_eq!(measured.get(&id("b12x")), Some(&b12x), "{}", id("b12x"));
        let cutlass_measured = measured.get(&id("cutlass")).copied();
        assert_eq!(cutlass_measured, cutlass, "{}", id("cutlass"));
    }
}

/// Qwen3.5-397B NVFP4 at TP4, one token: b12x is priced from the same CUTLASS rows the cutlass
/// runner reads (`cost::moe_shape_table`: 74.8 µs a layer for 10 touched experts), at the newest
/// build's published share of it (0.44): 41.9 µs a layer under cutlass, ≈ 2.5 ms over the 60
/// MoE layers (1.0 ms when the March build's saving per touched expert priced every build).
#[test]
fn b12x_reads_the_cutlass_rows_where_they_price_the_shape() {
    let step_ms = |backend: &str| step_ms("qwen3.5-397b-a17b-nvfp4", "4", "1", backend);
    let saved_ms = step_ms("cutlass") - step_ms("b12x");
    assert!((2.3..2.6).contains(&saved_ms), "{saved_ms:.3} ms");
}

/// b12x's micro / static kernels at the shape and batches of its own benchmark (Qwen3.5-397B
/// NVFP4 TP4, 1, 2, 4 and 8 tokens, balanced: 10 experts a token), against the CUTLASS rows of
/// that shape: the geomean of the priced ratios is the published one
/// (`b12x-public-kernel-geomeans.csv`, fast math: 0.52 before ba2b9679, 0.44 from 0.8.2) where
/// the touched experts stream faster than that from DRAM, and above it only by the DRAM floor
/// the benchmark's one replayed layer, partly in L2, does not meet (8 tokens: 80 experts, 142
/// MB, 92 µs at 86% of the datasheet bandwidth where 0.44 of the row's 160 µs is 70 µs).
#[test]
fn b12x_static_kernel_meets_its_published_geomean() {
    use sim::b12x_build::B12xBuild;
    // the row's batch column is quoted ("1,2,4,8"): its ratios follow the quote's close
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/observations/b12x-public-kernel-geomeans.csv"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("moe micro/static (fast math),"))
        .unwrap();
    let after_quote: Vec<&str> = line.split('"').nth(2).unwrap().split(',').collect();
    let ratio = |i: usize| after_quote[i].parse::<f64>().unwrap();
    let (before, after) = (ratio(3), ratio(4));
    let machine = sim::machine::Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let qwen = models::ModelSpec::preset("qwen3.5-397b-a17b-nvfp4").unwrap();
    let model = |backend: &str, build| {
        let opts = sim::options::ServerOptions {
            moe_runner_backend: Some(backend.into()),
            b12x_build: build,
            ..Default::default()
        };
        let knobs = sim::cost::Knobs::default();
        sim::cost::CostModel::new(&machine, &qwen, models::Layout::tp(4), &opts, knobs).unwrap()
    };
    let cutlass = model("cutlass", None);
    let geomean = |build| {
        let b12x = model("b12x", Some(build));
        let logs: Vec<f64> = [1.0, 2.0, 4.0, 8.0]
            .iter()
            .map(|t: &f64| {
                let (touched, pairs) = (10.0 * t, 10.0 * t);
                let r = b12x.routed_experts_s(touched, pairs).unwrap()
                    / cutlass.routed_experts_s(touched, pairs).unwrap();
                println!("{build:?} {t} tokens: b12x / cutlass {r:.3}");
                r.ln()
            })
            .collect();
        (logs.iter().sum::<f64>() / logs.len() as f64).exp()
    };
    let (g_before, g_after) = (
        geomean(B12xBuild::Static640),
        geomean(B12xBuild::UnderfillTiles),
    );
    assert!((before..before * 1.1).contains(&g_before), "{g_before:.3}");
    assert!((after..after * 1.1).contains(&g_after), "{g_after:.3}");
    // the March build's saving per touched expert leaves 0.82 of the rows (geomean)
    assert!(geomean(B12xBuild::March2026) > 0.8);
}

/// One decode step's time (ms) of `model` at TP `tp`, `batch` streams at context 0 on the bare-metal
/// 8-GPU box, with `backend` as SGLang's MoE runner.
fn step_ms(model: &str, tp: &str, batch: &str, backend: &str) -> f64 {
    let v = common::sim_json(&[
        "predict",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        model,
        "--tp",
        tp,
        "--batch",
        batch,
        "--context",
        "0",
        "--moe-runner-backend",
        backend,
        "--format",
        "json",
    ]);
    v["layouts"][0]["iteration_ms"].as_f64().unwrap()
}

/// One decode step's time (ms) of GLM-5.2 NVFP4 at TP8, `batch` streams at context 0 on the
/// bare-metal 8-GPU box, under a vLLM launch with `env` before `vllm serve` and b12x's MoE.
fn vllm_step_ms(env: &str, batch: &str) -> f64 {
    let line = format!(
        "{env} vllm serve lukealonso/GLM-5.2-NVFP4 --tensor-parallel-size 8 \
         --quantization modelopt_fp4 --kv-cache-dtype fp8 --moe-backend b12x"
    );
    let v = common::predict_line_json(&line, batch, "0", &[]);
    v["layouts"][0]["iteration_ms"].as_f64().unwrap()
}

/// b12x's W4A16 MoE (`B12X_MOE_FORCE_A16=1`) with its tensor-core decode kernel
/// (`B12X_W4A16_TC_DECODE=1`, the June–July 2026 GLM-5.2 launches) streams the same 4-bit
/// weights as the W4A4 kernels: up to 8 tokens a call it is priced as them, never as the tables
/// (without the kernel, the May builds' W4A16 runs); past 8 tokens both W4A16 runs take the
/// tables again.
#[test]
fn the_w4a16_tensor_core_decode_kernel_is_priced_as_the_w4a4_kernels() {
    let (a4, tc, no_tc) = (
        "",
        "B12X_MOE_FORCE_A16=1 B12X_W4A16_TC_DECODE=1",
        "B12X_MOE_FORCE_A16=1",
    );
    for batch in ["1", "8"] {
        let (w4a4, w4a16_tc) = (vllm_step_ms(a4, batch), vllm_step_ms(tc, batch));
        assert!(
            (w4a16_tc / w4a4 - 1.0).abs() < 1e-9,
            "{batch}: {w4a16_tc} vs {w4a4}"
        );
        assert!(vllm_step_ms(no_tc, batch) > 1.05 * w4a4, "{batch}");
    }
    let (w4a16_tc, w4a16) = (vllm_step_ms(tc, "16"), vllm_step_ms(no_tc, "16"));
    assert!(
        (w4a16_tc / w4a16 - 1.0).abs() < 1e-9,
        "{w4a16_tc} vs {w4a16}"
    );
}
