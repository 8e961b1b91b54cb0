//! The load replay of `models::load_replay` against the H200's: SGLang's NVFP4 and Marlin INT4
//! MoE load sequences run through PyTorch's caching allocator on the device
//! (`probe/bench/nvfp4_load_replay.py`, `probe/bench/marlin_moe_load_replay.py`; profiles in
//! `probe/profiles/`), and the same sequences through `models::alloc_model`.

use models::ModelSpec;
use models::layout::Layout;
use models::load_replay::{LoadReplay, replay_stage};
use serde_json::Value;

fn whole_model_tp8(model: &str) -> LoadReplay {
    let spec = ModelSpec::preset(model).unwrap();
    replay_stage(&spec, &Layout::tp(8), 0..spec.num_layers, true, true).unwrap()
}

fn profile(name: &str) -> Value {
    let path = format!("{}/../probe/profiles/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path} (a committed replay profile) is missing: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn result<'a>(p: &'a Value, model: &str, variant: &str) -> &'a Value {
    p["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == model && r["variant"] == variant)
        .unwrap_or_else(|| panic!("{model} {variant} in the replay profile"))
}

fn field(r: &Value, key: &str) -> u64 {
    r[key].as_u64().unwrap_or_else(|| panic!("{key} in {r}"))
}

/// The first replay in a fresh process also pays memory outside the allocator (CUDA loading the
/// kernels it launches first): the NVFP4 profile's first result shows it as free-before-minus-
/// after above the allocator's reserved bytes; every later result shows none.
fn first_replay_outside_allocator_bytes() -> u64 {
    let p = profile("nvfp4-load-replay-h200.json");
    let first = &p["results"][0];
    let outside =
        field(first, "free_before_minus_after_bytes") - field(first, "allocator_reserved_bytes");
    for r in p["results"].as_array().unwrap().iter().skip(1) {
        assert_eq!(
            field(r, "free_before_minus_after_bytes"),
            field(r, "allocator_reserved_bytes")
        );
    }
    outside
}

/// Kimi-K2.5 TP8 (the Marlin W4A16 sequence; the replay's tensor list is the one
/// `load_replay` builds). Two device runs: the first, an inline copy of the sequence that ran
/// first in its process, reserved exactly what the model reserves once the first-replay
/// kernel-loading memory is taken out; the committed script (kernels warmed up first) reserved
/// 40 MiB more (0.05% of the weights, 6% of the hole): the model is held to the first to the
/// byte and to the second within 0.1%, and the difference is reported, not tuned away.
#[test]
fn marlin_int4_replay_reserves_what_the_h200_reserved() {
    let p = profile("marlin-moe-load-replay-h200.json");
    let r = whole_model_tp8("kimi-k2.5");
    let inline = &p["earlier_inline_copy"];
    let first = result(inline, "kimi-k2.5", "register_new");
    let reserved =
        field(first, "free_before_minus_after_bytes") - first_replay_outside_allocator_bytes();
    assert_eq!(r.reserved_bytes, reserved);
    // the device's live set held one more 512-byte index tensor (the scale permutation)
    assert_eq!(r.live_bytes + 512, field(first, "live_tensor_bytes"));
    let script = result(&p, "kimi-k2.5", "register_new");
    let used = field(script, "free_before_minus_after_bytes") as f64;
    let err = r.reserved_bytes as f64 / used - 1.0;
    println!(
        "kimi-k2.5 Marlin: model reserves {} B, the committed script's run {used} B ({:+.3}%); holes {:.3} vs {:.3} GiB",
        r.reserved_bytes,
        err * 100.0,
        r.hole_bytes() as f64 / (1u64 << 30) as f64,
        field(script, "hole_bytes") as f64 / (1u64 << 30) as f64
    );
    assert!(err.abs() < 0.001, "{err}");
    let hole_gib = r.hole_bytes() as f64 / (1u64 << 30) as f64;
    assert!((0.60..0.62).contains(&hole_gib), "{hole_gib}");
}

/// NVFP4 (GLM-5, Kimi-K2-Thinking TP8): the replay's device holes (allocator reserved minus
/// live) within 3%; the device script's tensor list differs slightly from SGLang's module order
/// that `load_replay` follows (shared experts before the router, no embedding or head, the
/// dense/shared MLP of GLM-5 in BF16).
#[test]
fn nvfp4_replay_holes_match_the_h200_replay() {
    let p = profile("nvfp4-load-replay-h200.json");
    for model in ["glm-5-nvfp4", "kimi-k2-thinking-nvfp4"] {
        let d = result(&p, model, "swizzle_at_create");
        let device = (field(d, "allocator_reserved_bytes") - field(d, "live_tensor_bytes")) as f64;
        let modelled = whole_model_tp8(model).hole_bytes() as f64;
        let err = modelled / device - 1.0;
        println!(
            "{model}: hole {modelled} vs device {device} ({:+.1}%)",
            err * 100.0
        );
        assert!(err.abs() < 0.03, "{model}: {err}");
    }
}

/// A checkpoint whose experts SGLang keeps as loaded (GLM-4.7-FP8, per-channel FP8): the replay
/// holds the same tensors the footprint counts (within 0.1%: norms and the attention's scales are
/// not replayed), and what it leaves beside them is only the allocator's rounding and segment
/// tails, well under the 1.9 GiB NVFP4's processing leaves on GLM-5.
#[test]
fn plain_experts_replay_only_rounding() {
    let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let r = whole_model_tp8("glm-4.7-fp8");
    let fp = models::footprint::footprint(&spec, &Layout::tp(8)).unwrap();
    let g = &fp.per_gpu[0];
    // beside the holes, the one RoPE cache (202,752 positions × 64 rotated dims × 4 B)
    let overhead = g.weight_bytes_by_part[&models::ModelPart::LoadOverhead];
    assert_eq!(overhead, r.hole_bytes() + 202_752 * 64 * 4);
    let counted = (g.total_weight_bytes - overhead) as f64;
    let err = r.live_bytes as f64 / counted - 1.0;
    assert!(
        err.abs() < 1e-3,
        "live {} vs counted {counted}: {err:+.5}",
        r.live_bytes
    );
    let hole_gib = r.hole_bytes() as f64 / (1u64 << 30) as f64;
    assert!((0.01..0.15).contains(&hole_gib), "{hole_gib:.3} GiB");
}
