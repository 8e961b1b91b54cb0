//! Issue 35: a TP size that does not divide the attention heads. SGLang and stock vLLM refuse it
//! (one line naming the TP sizes that divide); the b12x vLLM fork (`--moe-backend b12x`, with
//! its B12X sparse-MLA attention) runs GLM-5.x at TP6 with its heads padded 64 -> 96, and the
//! padded heads are paid for: stored, read and computed.

use models::{Layout, ModelSpec};
use sim::cost::Knobs;
use sim::cost::report::{LayoutPrediction, PredictQuery, predict_layout};
use sim::engine::Engine;
use sim::machine::Machine;
use sim::options::ServerOptions;

fn vllm(attention: Option<&str>, moe: Option<&str>) -> ServerOptions {
    ServerOptions {
        engine: Engine::Vllm,
        attention_backend: attention.map(str::to_string),
        moe_runner_backend: moe.map(str::to_string),
        ..ServerOptions::default()
    }
}

fn predict(spec: &ModelSpec, opts: &ServerOptions, batch: u32, context: u32) -> LayoutPrediction {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let q = PredictQuery {
        batch,
        context_tokens: context,
        prefill_tokens: 0,
    };
    predict_layout(&machine, spec, Layout::tp(6), opts, Knobs::default(), &q).unwrap()
}

#[test]
fn stock_engines_refuse_tp6_naming_the_divisors() {
    let glm = ModelSpec::preset("glm-5.2-nvfp4").unwrap();
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let q = PredictQuery {
        batch: 1,
        context_tokens: 0,
        prefill_tokens: 0,
    };
    for opts in [
        ServerOptions::default(),
        vllm(None, None),
        vllm(
            Some("FLASHINFER_MLA_SPARSE_SM120"),
            Some("flashinfer_cutlass"),
        ),
    ] {
        let err = predict_layout(&machine, &glm, Layout::tp(6), &opts, Knobs::default(), &q)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--tp 6 does not divide the 64 attention heads")
                && err.contains("TP sizes that do: 1, 2, 4, 8, 16, 32, 64"),
            "{err}"
        );
    }
}

/// The padded model against a model of the same shapes with the fewest whole heads TP6 could
/// hold unpadded (66, 11 a GPU: what TP6 would cost if the heads divided): the fork's 16 heads a
/// GPU cost more per GPU, in the projections' weights and in the attention kernels, so more
/// per real head (64/6 a GPU) than the unpadded layout would.
#[test]
fn padded_tp6_pays_for_its_padded_heads() {
    let glm = ModelSpec::preset("glm-5.2-nvfp4").unwrap();
    let fork = vllm(Some("B12X_MLA_SPARSE"), Some("b12x"));
    let padding = glm.head_padding(6).unwrap();
    let mut unpadded = glm.with_head_padding(&padding);
    let models::spec::AttentionSpec::Mla { num_heads, .. } = &mut unpadded.attention else {
        panic!("GLM-5.2 is MLA")
    };
    *num_heads = 66;
    for (batch, context) in [(8, 8_192), (32, 32_768)] {
        let padded = predict(&glm, &fork, batch, context);
        let even = predict(&unpadded, &fork, batch, context);
        assert!(
            padded
                .notes
                .iter()
                .any(|n| n.contains("attention heads 64 -> 96")),
            "{:?}",
            padded.notes
        );
        let (p, e) = (padded.breakdown.unwrap(), even.breakdown.unwrap());
        assert!(p.weight_read_ms > e.weight_read_ms, "{p:?} vs {e:?}");
        let attention = |b: &sim::cost::report::BreakdownMs| b.compute_ms + b.kv_read_ms;
        // the kernels pay for every head they run: 16 a GPU cost more than 11
        assert!(
            attention(&p) > attention(&e),
            "batch {batch} context {context}: {} vs {} ms",
            attention(&p),
            attention(&e)
        );
        // per real head: 16 padded heads carry 64/6 real ones, 11 heads carry 11
        let per_head_padded = attention(&p) / (64.0 / 6.0);
        let per_head_even = attention(&e) / 11.0;
        assert!(
            per_head_padded > per_head_even,
            "batch {batch} context {context}: {per_head_padded} vs {per_head_even}"
        );
        assert!(padded.iteration_ms > even.iteration_ms);
        let (pm, em) = (padded.memory.unwrap(), even.memory.unwrap());
        assert!(pm.weights_gb_per_gpu > em.weights_gb_per_gpu);
    }
}

/// As a user runs it: the stock launch line exits 2 with one line naming the TP sizes that
/// divide; the fork's launch line predicts, and its notes say what was padded.
#[test]
fn the_cli_refuses_stock_tp6_and_prices_the_forks() {
    let line = |more: &str| {
        format!(
            "vllm serve lukealonso/GLM-5.2-NVFP4 --tensor-parallel-size 6 --kv-cache-dtype fp8 --max-model-len 128000{more}"
        )
    };
    let run = |server: String| {
        assert_cmd::Command::cargo_bin("sim")
            .unwrap()
            .env("COLUMNS", "1000") // notes matched whole, unwrapped
            .args([
                "predict",
                "--machine",
                "rtx-pro-6000-x8-baremetal",
                "--batch",
                "1",
                "--context",
                "0",
                "--server-args",
            ])
            .arg(server)
            .assert()
    };
    let out = run(line(" --attention-backend FLASHINFER_MLA"))
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("TP sizes that do: 1, 2, 4, 8, 16, 32, 64"),
        "{err}"
    );
    let out = run(line(
        " --attention-backend B12X_MLA_SPARSE --moe-backend b12x",
    ))
    .success()
    .get_output()
    .clone();
    let all = String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
    assert!(
        all.contains("attention heads 64 -> 96 (16 a GPU at TP6)"),
        "{all}"
    );
}
