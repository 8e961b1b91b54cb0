//! MoE efficiency keyed by shape (`sim::efficiency::ShapeKnots`): the expert slice one GPU
//! streams (`hidden × moe_inter / tp`) reads its own measured rows back, slices between measured
//! ones interpolate, and slices outside them say so.

use models::GpuSpec;
use sim::efficiency::{EfficiencyModel, KernelKind, observations, peak_tflops};

/// Median |predicted / measured − 1| of the Kimi-K2 TP8 NVFP4 rows on the RTX PRO 6000, with
/// the fractions at `slice` (`None` = pooled over every shape).
fn kimi_tp8_error(slice: Option<f64>) -> f64 {
    let rows = observations::load_kernel_rows(&observations::default_dir()).unwrap();
    let eff = EfficiencyModel::builtin();
    let gpu = GpuSpec::preset("rtx-pro-6000-server").unwrap();
    let (kind, dtype) = (KernelKind::MoeGrouped, "nvfp4");
    let mut errs: Vec<f64> = rows
        .iter()
        .filter(|r| r.system == "rtx_pro_6000_server" && r.kind == kind && r.dtype == dtype)
        .filter(|r| r.shape.starts_with("Kimi-K2 tp8 ep1 "))
        .map(|r| {
            let mf = eff.memory_fraction_of_slice(&gpu, kind, dtype, r.tokens, slice);
            let cf = eff.compute_fraction_of_slice(&gpu, kind, dtype, r.tokens, slice);
            let t = (r.bytes / (gpu.memory_gb_per_s * 1e9 * mf))
                .max(r.flops / (peak_tflops(&gpu, kind, dtype) * 1e12 * cf));
            (t / r.time_s - 1.0).abs()
        })
        .collect();
    assert!(errs.len() >= 10, "{} Kimi-K2 TP8 rows", errs.len());
    errs.sort_by(f64::total_cmp);
    errs[errs.len() / 2]
}

/// Kimi-K2 at TP8: 7168 × 2048 / 8 elements per expert slice.
const KIMI_TP8_SLICE: f64 = 7168.0 * 2048.0 / 8.0;

#[test]
fn the_kimi_tp8_rows_come_back_from_their_own_shape() {
    let keyed = kimi_tp8_error(Some(KIMI_TP8_SLICE));
    let pooled = kimi_tp8_error(None);
    println!("Kimi-K2 TP8 NVFP4 median |err|: keyed {keyed:.3}, pooled {pooled:.3}");
    assert!(keyed <= 0.03, "keyed {keyed}");
    assert!(pooled > 2.0 * keyed, "pooled {pooled} vs keyed {keyed}");
}

#[test]
fn a_slice_between_two_measured_ones_lies_between_them() {
    let eff = EfficiencyModel::builtin();
    let gpu = GpuSpec::preset("rtx-pro-6000-server").unwrap();
    let glm5_tp8 = 6144.0 * 2048.0 / 8.0;
    let mid = (glm5_tp8 * KIMI_TP8_SLICE).sqrt();
    for tokens in [1u64, 2, 4, 16, 64] {
        let at = |s: f64| {
            eff.memory_fraction_of_slice(&gpu, KernelKind::MoeGrouped, "nvfp4", tokens, Some(s))
        };
        let (a, b, m) = (at(glm5_tp8), at(KIMI_TP8_SLICE), at(mid));
        assert!(
            m >= a.min(b) - 1e-12 && m <= a.max(b) + 1e-12,
            "{tokens}: {a} {m} {b}"
        );
        assert!(((a + b) / 2.0 - m).abs() < 1e-9, "log-linear midpoint");
    }
}

#[test]
fn slices_outside_the_measured_ones_are_flagged() {
    let eff = EfficiencyModel::builtin();
    let gpu = GpuSpec::preset("rtx-pro-6000-server").unwrap();
    assert!(eff.moe_shape_note(&gpu, "nvfp4", KIMI_TP8_SLICE).is_none());
    // GLM-4.7 at TP8: 5120 × 1536 / 8, below the smallest fp8 slice measured (1.57M)
    let note = eff
        .moe_shape_note(&gpu, "fp8", 5120.0 * 1536.0 / 8.0)
        .unwrap();
    assert!(note.contains("below the smallest fp8 slice"), "{note}");
    assert!(
        eff.moe_shape_note(&gpu, "nvfp4", 1e9)
            .unwrap()
            .contains("above")
    );
}
