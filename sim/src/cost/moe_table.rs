//! vLLM's fused MoE by backend on SM120, from the carried kernel table
//! (`data/observations/moe-vllm-0.24-rtx-pro-6000.csv`: aiconfigurator 0.12.0's vLLM 0.24 rows
//! on the RTX PRO 6000, Kimi-K2's shape, balanced routing, TP 1–8): where the engine runs a
//! backend the table measured and the fused-MoE curves (fitted to SGLang 0.5.14's kernels) do
//! not, the curves' bandwidth is scaled to it.
//!
//! The one such backend today is Marlin W4A16: vLLM serves compressed-tensors INT4 experts
//! (Kimi-K2's native format) with `CompressedTensorsWNA16MarlinMoEMethod` (`fused_marlin_moe`)
//! when no other MoE backend is asked for, where the int4 curve was fitted to SGLang's int4
//! kernel. On the table's cold rows (touched weights ≥ 2× the 128 MB L2) of a decode step's
//! shapes (8–512 tokens at TP8) the pooled int4 curve the cost model prices int4 with is slower
//! than Marlin (+2% to +15%, median +7% at TP8): Marlin streams the same bytes at that much
//! more bandwidth. The rate is the median of curve ÷ table over those rows of the table's
//! tensor slice nearest the model's. (`sim/tests/moe_backend_table.rs` compares the by-slice
//! curve over all rows: +10% at TP8.)
//!
//! At decode and verify sizes Marlin now has its own price ([`super::marlin_moe`]: the curve's
//! roofline is flat once the touched experts are streamed, Marlin's time keeps a cost per
//! routed row); the scaled curve prices what is past that form's domain (prefill chunks).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::kernel::KernelCurve;
use crate::efficiency::{EfficiencyModel, KernelKind, normalize_dtype};
use models::GpuSpec;

const TABLE: &str = include_str!("../../../data/observations/moe-vllm-0.24-rtx-pro-6000.csv");
/// The table's GPU's L2: rows whose touched weights are under 2× it are read from L2 by the
/// collector's repeated call, which a serving step (every layer its own weights) does not see.
const L2_BYTES: f64 = 128.0 * 1024.0 * 1024.0;
/// The largest batch a decode step runs under vLLM's CUDA graphs by default
/// (`max_cudagraph_capture_size`, 512): the rows the rate is taken on are the shapes a decode or
/// verify pass runs (past them the table's rows are prefill chunks, where Marlin's bandwidth
/// falls below the curve's: −11% to −25% at 768–1,536 tokens at TP8).
const DECODE_TOKENS_MAX: f64 = 512.0;
/// Bytes per INT4 weight with its bf16 scale per 32 values (compressed-tensors W4A16, g32).
const INT4_BYTES_PER_VALUE: f64 = 0.5 + 2.0 / 32.0;

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    backend: String,
    dtype: String,
    /// `hidden × moe_inter / tp` elements of one expert on a GPU.
    slice: f64,
    experts: f64,
    topk: f64,
    tokens: f64,
    time_s: f64,
}

fn rows() -> &'static [Row] {
    static R: OnceLock<Vec<Row>> = OnceLock::new();
    R.get_or_init(|| {
        super::moe_shape_table::parse_rows(TABLE)
            .into_iter()
            .map(|r| Row {
                slice: r.hidden as f64 * r.inter as f64 / r.tp as f64,
                backend: r.backend,
                dtype: r.dtype,
                experts: r.experts as f64,
                topk: r.topk as f64,
                tokens: r.tokens,
                time_s: r.time_s,
            })
            .collect()
    })
}

/// Rates already found, by backend, format and slice.
type RateCache = BTreeMap<String, Option<(f64, f64)>>;

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The backend's bandwidth against the fused-MoE curve of `dtype` (> 1: the backend is faster),
/// on `backend`'s cold rows of the tensor slice nearest `slice` elements (log distance), and the
/// slice used; `None` when the table has no such rows.
pub fn rate_against_curve(backend: &str, dtype: &str, slice: f64) -> Option<(f64, f64)> {
    static CACHE: OnceLock<std::sync::Mutex<RateCache>> = OnceLock::new();
    let key = format!("{backend}/{dtype}/{slice:.0}");
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(&key).copied()) {
        return v;
    }
    let v = compute_rate(backend, dtype, slice);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, v);
    }
    v
}

fn compute_rate(backend: &str, dtype: &str, slice: f64) -> Option<(f64, f64)> {
    let mine: Vec<&Row> = rows()
        .iter()
        .filter(|r| r.backend == backend && normalize_dtype(&r.dtype) == normalize_dtype(dtype))
        .collect();
    let nearest = mine
        .iter()
        .map(|r| r.slice)
        .min_by(|a, b| (a / slice).ln().abs().total_cmp(&(b / slice).ln().abs()))?;
    let gpu = GpuSpec::preset("rtx-pro-6000-server").ok()?;
    let eff = EfficiencyModel::builtin();
    // the int4 curve is the pooled one (`super::moe::efficiency_slice`); others by slice
    let curve_slice = (normalize_dtype(dtype) != Some("int4")).then_some(nearest);
    let curve = KernelCurve::of_slice(
        eff,
        &gpu,
        KernelKind::MoeGrouped,
        dtype,
        curve_slice,
        gpu.memory_gb_per_s * 1e9,
        1.0,
    );
    let ratios = mine
        .iter()
        .filter(|r| r.slice == nearest)
        .filter_map(|r| {
            // balanced routing: the collector spreads tokens × top-k over min(E, that) experts
            let touched = r.experts.min(r.tokens * r.topk);
            let bytes = touched * 3.0 * r.slice * INT4_BYTES_PER_VALUE;
            let flops = 2.0 * r.tokens * r.topk * 3.0 * r.slice;
            (bytes >= 2.0 * L2_BYTES && r.tokens <= DECODE_TOKENS_MAX)
                .then(|| curve.time(r.tokens * r.topk / touched, flops, bytes).s / r.time_s)
        })
        .collect();
    median(ratios).map(|m| (m, nearest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kimi-K2 at TP8 (7168 × 2048 / 8 a GPU): Marlin streams a decode step's shapes faster
    /// than the pooled int4 curve (+7% at TP8); any TP finds its rows; a backend without rows
    /// has no rate.
    #[test]
    fn marlin_runs_faster_than_the_int4_curve() {
        let (tp8, s8) = rate_against_curve("marlin", "int4", 7168.0 * 256.0).unwrap();
        assert_eq!(s8, 7168.0 * 256.0);
        assert!(tp8 > 1.03 && tp8 < 1.15, "{tp8}");
        let (tp1, s1) = rate_against_curve("marlin", "int4-g32", 7168.0 * 2048.0).unwrap();
        assert_eq!(s1, 7168.0 * 2048.0);
        assert!(tp1 > 0.9 && tp1 < 1.4, "{tp1}");
        assert!(rate_against_curve("b12x", "nvfp4", 1e6).is_none());
    }
}
