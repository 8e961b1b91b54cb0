//! The engine's default fused-MoE Triton config, priced where measured
//! ([`sim::cost::moe_config`]): Qwen3-Next-80B-A3B (bf16, 512 experts) on the H200 preset at
//! TP4, the routed experts of one layer with and without `moe_default_config`, against the
//! carried measurement (`data/observations/fused-moe-default-config-h200.csv`), and the places
//! where it is not priced.

use models::{Layout, ModelSpec};
use sim::cost::moe_config::measured_shapes;
use sim::cost::{CostModel, Knobs};
use sim::machine::Machine;
use sim::options::{Engine, ServerOptions};

fn qwen3_next(machine: &str, opts: &ServerOptions) -> CostModel {
    let machine = Machine::resolve(machine).unwrap();
    let model = ModelSpec::preset("qwen3-next-80b-a3b").unwrap();
    CostModel::new(&machine, &model, Layout::tp(4), opts, Knobs::default()).unwrap()
}

/// Each measured token count's ratio comes back as the priced routed experts' ratio at that
/// count (the pairs of `t` tokens at top-10 over one TP4 rank), and a tuned run is the tables'.
#[test]
fn the_default_config_prices_the_measured_ratio_at_each_token_count() {
    let tuned = ServerOptions::default();
    let default = ServerOptions {
        moe_default_config: true,
        ..ServerOptions::default()
    };
    let (a, b) = (
        qwen3_next("h200-x8", &tuned),
        qwen3_next("h200-x8", &default),
    );
    let shape = measured_shapes()
        .iter()
        .find(|s| s.name == "qwen3next-tp4")
        .unwrap();
    for &(tokens, ratio) in &shape.ratios {
        let touched = (tokens * 10.0).min(512.0);
        let priced = b.routed_experts_s(touched, tokens * 10.0).unwrap()
            / a.routed_experts_s(touched, tokens * 10.0).unwrap();
        assert!(
            (priced / ratio - 1.0).abs() < 1e-9,
            "{tokens}: {priced} vs {ratio}"
        );
    }
    // said beside the prediction, with where it was measured
    let note = b.default_config_note().unwrap();
    assert!(
        note.contains("measured in bf16 at this shape (qwen3next-tp4)"),
        "{note}"
    );
    assert!(a.default_config_note().is_none());
}

/// DeepSeek-V3 (fp8, 128 × 128 blocks) at TP8 on the H200: priced from the measured fp8 rows of
/// its own shape, never the bf16 ones.
#[test]
fn fp8_experts_price_from_the_fp8_rows_of_their_shape() {
    let machine = Machine::resolve("h200-x8").unwrap();
    let model = ModelSpec::preset("deepseek-v3-fp8").unwrap();
    let opts = |default| ServerOptions {
        moe_default_config: default,
        ..ServerOptions::default()
    };
    let cm = |o: &ServerOptions| {
        CostModel::new(&machine, &model, Layout::tp(8), o, Knobs::default()).unwrap()
    };
    let (a, b) = (cm(&opts(false)), cm(&opts(true)));
    let shape = measured_shapes()
        .iter()
        .find(|s| s.dtype == "fp8" && s.name == "deepseek-v3-fp8-tp8")
        .unwrap();
    let priced = b.routed_experts_s(8.0, 8.0).unwrap() / a.routed_experts_s(8.0, 8.0).unwrap();
    assert!((priced / shape.ratio(1.0) - 1.0).abs() < 1e-9, "{priced}");
    let note = b.default_config_note().unwrap();
    assert!(
        note.contains("measured in fp8, with 128 × 128 block scales at this shape"),
        "{note}"
    );
}

/// Off the measured ground (an fp8 or NVFP4 model, another runner, a GPU of another
/// architecture) the default config is not priced and the note says why.
#[test]
fn not_priced_off_the_measured_ground_and_the_note_says_why() {
    let opts = ServerOptions {
        moe_default_config: true,
        engine: Engine::Sglang,
        ..ServerOptions::default()
    };
    let tuned = ServerOptions {
        engine: Engine::Sglang,
        ..ServerOptions::default()
    };
    let (a, b) = (
        qwen3_next("rtx-pro-6000-x8-baremetal", &tuned),
        qwen3_next("rtx-pro-6000-x8-baremetal", &opts),
    );
    assert_eq!(
        a.routed_experts_s(10.0, 10.0),
        b.routed_experts_s(10.0, 10.0)
    );
    let note = b.default_config_note().unwrap();
    assert!(
        note.contains("not priced (measured on Hopper (H200) only)"),
        "{note}"
    );
    let cutlass = ServerOptions {
        moe_runner_backend: Some("flashinfer_cutlass".into()),
        ..opts.clone()
    };
    let c = qwen3_next("h200-x8", &cutlass);
    assert!(
        c.default_config_note()
            .unwrap()
            .contains("not the Triton fused MoE")
    );
}
