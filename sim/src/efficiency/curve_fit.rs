//! Fits [`EfficiencyModel`] curves to measured kernel rows.
//!
//! Every measured row sits at a power-of-two size, so each knot is fitted on its own rows: the pair
//! (memory_fraction, compute_fraction) minimizing Σ |ln(predicted / measured)| under the roofline of
//! [`super`], found by a log-spaced grid search (coarse 1e-4…1 in 41 steps, then a 21×21 refinement
//! around the best), each fraction at least half the best value at smaller sizes
//! (`FLOOR_SHARE`). Among equally good pairs the smallest is taken (the fraction the data proves),
//! then each fraction is raised as far toward the previous knot's value as costs under 1% of the
//! knot's error, so curves do not dip where a bound is not binding (a kernel that is compute-bound at 8192
//! tokens still streams weights as fast as it did at 512).

use super::observations::KernelRow;
use models::GpuSpec;

use super::{
    EFFICIENCY_SCHEMA_VERSION, EfficiencyCurve, EfficiencyError, EfficiencyModel,
    FAMILY_DATACENTER, FAMILY_WORKSTATION, FamilyCurves, KernelKind, Knot, ShapeKnots,
};
use models::stats::median_or_nan;
use std::collections::BTreeMap;

/// What the fit knows about each measured system beyond the CSVs.
struct SystemInfo {
    family: &'static str,
    reference_gpu: &'static str,
    applies_to: &'static str,
}

const SYSTEMS: [SystemInfo; 2] = [
    SystemInfo {
        family: FAMILY_WORKSTATION,
        reference_gpu: "rtx-pro-6000-server",
        applies_to: "PCIe workstation and consumer cards without NVLink: RTX PRO 6000 Blackwell \
                     (Server, Workstation), RTX 5090/4090, L40S, L4 and other Ada/Blackwell RTX parts",
    },
    SystemInfo {
        family: FAMILY_DATACENTER,
        reference_gpu: "h200",
        applies_to: "datacenter HBM parts: A100, H100 (SXM/PCIe), H200, H20, B100/B200/B300, GB200",
    },
];

/// Where the rows come from, written into the JSON's `source`.
pub const SOURCE: &str = "data/observations/gemm-kernels-sglang-0.5.14.csv, \
    moe-kernels-sglang-0.5.14.csv, mla-decode-kernels-sglang-0.5.14.csv: SGLang 0.5.14 kernel \
    timings (one GPU, time per call) measured by NVIDIA's aiconfigurator collector \
    (github.com/ai-dynamo/aiconfigurator) on an RTX PRO 6000 Blackwell Server Edition and an H200 \
    SXM, converted and trimmed to rows without L2-cache effects (data/observations/README.md). \
    Fitted by sim/examples/fit_efficiency.rs.";

const FORM: &str = "time_s = max(flops / (peak_tflops(dtype)*1e12 * compute_fraction), \
    bytes / (peak_memory_gb_per_s*1e9 * memory_fraction)) with the GPU preset's datasheet peaks; \
    each fraction piecewise-linear in log2(tokens) between knots at the measured powers of two, \
    clamped outside; per knot the pair minimizing sum |ln(pred/measured)| over that knot's rows \
    (log grid search) with each fraction >= 0.5 x its best value at smaller sizes, smallest of \
    equal pairs, then each raised as far toward the previous knot's value as costs < 1% of the \
    knot's error. floor_us per weight-kernel curve = the intercept of time = floor + bytes / \
    bandwidth over the rows at <= 8 tokens entering, kept when that line has R^2 >= 0.95, and \
    floor_line_memory_fraction its slope's bandwidth over the reference peak; the cost model \
    takes max(roofline, floor + bytes / (peak * floor_line_memory_fraction)): a call's fixed \
    cost plus its streaming, which below the tables' smallest shapes the knots alone would \
    under-count (max(floor, roofline) where no line was pinned).";

/// The flops/bytes/tokens conventions the rows were converted with.
const CONVENTIONS: [&str; 4] = [
    "dense_gemm: tokens = M; flops = 2*M*N*K; bytes = weight matrix only (N*K*bytes per value \
     incl. scales)",
    "moe_grouped: tokens = tokens per active expert on this GPU (the CSVs' num_tokens*topk/ep \
     (balanced routing) / gpu_active_experts, at least 1, rounded to the nearest power of two); \
     flops = 2*num_tokens*top_k*3*hidden*moe_inter/(tp*ep) (this GPU's share); bytes = weights \
     of the experts this GPU touches (3*hidden*moe_inter/tp each); moe curves also carry \
     `shapes`: the same knots fitted to each expert slice (hidden*moe_inter/tp elements) alone, \
     which callers giving a slice interpolate linearly in log(slice), clamped to the nearest \
     measured slice outside them",
    "mla_decode: tokens = decode batch; flops = 2*batch*heads_per_gpu*context*(576+512); bytes = \
     batch*context*576*kv bytes per value; dtype = KV-cache dtype; compute peak bf16",
    "compute peak per dtype: bf16 and weight-only int4 -> bf16, fp8 -> fp8, nvfp4 -> fp4",
];

fn compute_class(row: &KernelRow) -> &'static str {
    super::compute_class(row.kind, row.dtype)
}

/// The peak a CSV assumed: median of achieved / (percent / 100) over rows with a positive percent.
fn implied_peak(pairs: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    let v: Vec<f64> = pairs
        .filter(|(_, pct)| *pct > 0.0)
        .map(|(achieved, pct)| achieved / (pct / 100.0))
        .collect();
    (!v.is_empty()).then(|| median_or_nan(v))
}

/// A fraction never falls below this share of the best value at smaller sizes: without the floor a
/// knot where one bound is slack could "explain" shape-to-shape scatter with a nonsense ceiling (e.g. 1%
/// of bandwidth for a 16384-row GEMM), which would blow up any caller that adds bytes the fit left out.
const FLOOR_SHARE: f64 = 0.5;

/// One row scaled to a knot fit: seconds at 100% of each peak, and the measured seconds.
#[derive(Clone, Copy)]
struct Point {
    mem_s: f64,
    compute_s: f64,
    time_s: f64,
}

fn cost(points: &[Point], mf: f64, cf: f64) -> f64 {
    points
        .iter()
        .map(|p| ((p.mem_s / mf).max(p.compute_s / cf) / p.time_s).ln().abs())
        .sum()
}

/// Smallest-first log grid search over (mf, cf) in `[lo, hi]²` with `steps` values per axis.
fn grid(points: &[Point], lo: (f64, f64), hi: (f64, f64), steps: usize) -> (f64, f64, f64) {
    let at = |lo: f64, hi: f64, i: usize| lo * (hi / lo).powf(i as f64 / (steps - 1) as f64);
    let mut best = (f64::INFINITY, 1.0, 1.0);
    for i in 0..steps {
        let mf = at(lo.0, hi.0, i);
        for j in 0..steps {
            let cf = at(lo.1, hi.1, j);
            let c = cost(points, mf, cf);
            if c < best.0 - 1e-12 {
                best = (c, mf, cf);
            }
        }
    }
    best
}

/// Best (cost, mf, cf) for one knot with each fraction at least its `floor`.
fn fit_knot(points: &[Point], floor: (f64, f64)) -> (f64, f64, f64) {
    let (lo, hi, steps) = (1e-4_f64, 1.0_f64, 41);
    let lo = (floor.0.max(lo), floor.1.max(lo));
    let (_, mf, cf) = grid(points, lo, (hi, hi), steps);
    let step = |l: f64| (hi / l).powf(1.0 / (steps - 1) as f64);
    let (s0, s1) = (step(lo.0), step(lo.1));
    grid(
        points,
        ((mf / s0).max(lo.0), (cf / s1).max(lo.1)),
        ((mf * s0).min(hi), (cf * s1).min(hi)),
        21,
    )
}

/// The largest value in `[value, target]` (scanned from `target` down in 64 log steps) that `ok`
/// accepts; `value` itself when `target` is not above it or nothing else passes.
fn raise_toward(value: f64, target: f64, ok: impl Fn(f64) -> bool) -> f64 {
    if target <= value {
        return value;
    }
    (0..64)
        .map(|i| target * (value / target).powf(i as f64 / 63.0))
        .find(|v| ok(*v))
        .unwrap_or(value)
}

fn round5(v: f64) -> f64 {
    (v * 1e5).round() / 1e5
}

fn abs_errors(points: &[Point], mf: f64, cf: f64) -> Vec<f64> {
    points
        .iter()
        .map(|p| ((p.mem_s / mf).max(p.compute_s / cf) / p.time_s - 1.0).abs())
        .collect()
}

/// Largest token count whose rows pin a latency floor: below it the tables' weight kernels are
/// memory-bound, so time grows linearly with bytes from a fixed start-up cost.
pub const FLOOR_MAX_TOKENS: u64 = 8;
/// The least R² of `time = floor + bytes / bandwidth` over those rows for the intercept to count
/// as a floor: where shapes scatter the times (the RTX fp8 GEMMs, R² 0.88) the intercept is not a
/// latency.
pub const FLOOR_MIN_R2: f64 = 0.95;

/// The latency floor of one group's kernel call, seconds: the intercept of the least-squares
/// line `time = floor + bytes / bandwidth` over its rows at ≤ [`FLOOR_MAX_TOKENS`] tokens (the
/// launch, ramp-up and tail no size removes; a fused MoE's several kernels), when that line
/// explains the rows (R² ≥ [`FLOOR_MIN_R2`]); 0 otherwise. Weight kernels only (dense GEMM,
/// fused MoE): the MLA table holds no short-context rows to extrapolate from. The curves'
/// fractions are fitted to the whole times as before; the cost model takes `max(roofline, floor +
/// bytes / line bandwidth)` ([`latency_line`]): at the tables' shapes the two agree, below them
/// the line keeps both the call's fixed cost and its streaming (`max(floor, roofline)` would
/// drop one of them where they are of a size).
pub fn latency_floor_s(rows: &[&KernelRow]) -> f64 {
    latency_line(rows).map_or(0.0, |(floor_s, _)| floor_s)
}

/// The line behind [`latency_floor_s`]: (floor seconds, bytes per second of its slope), when the
/// rows pin one.
pub fn latency_line(rows: &[&KernelRow]) -> Option<(f64, f64)> {
    if !rows
        .iter()
        .all(|r| matches!(r.kind, KernelKind::DenseGemm | KernelKind::MoeGrouped))
    {
        return None;
    }
    // MoE rows are keyed by tokens per expert; the floor rows are those of ≤ 8 tokens entering
    let small: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.entering_tokens <= FLOOR_MAX_TOKENS)
        .map(|r| (r.bytes, r.time_s))
        .collect();
    if small.len() < 3 {
        return None;
    }
    let n = small.len() as f64;
    let mx = small.iter().map(|p| p.0).sum::<f64>() / n;
    let my = small.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = small.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = small.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    let sxy: f64 = small.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    let r2 = sxy * sxy / (sxx * syy);
    let floor = my - slope * mx;
    if slope <= 0.0 || r2 < FLOOR_MIN_R2 || !floor.is_finite() || floor <= 0.0 {
        return None;
    }
    let fastest = small.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    Some((floor.min(fastest), 1.0 / slope))
}

fn fit_curve(
    rows: &[&KernelRow],
    peak_gb_per_s: f64,
    peaks: &BTreeMap<String, f64>,
) -> EfficiencyCurve {
    let mut by_tokens: BTreeMap<u64, Vec<Point>> = BTreeMap::new();
    for r in rows {
        let peak_flops = peaks.get(compute_class(r)).copied().unwrap_or(f64::NAN) * 1e12;
        by_tokens.entry(r.tokens).or_default().push(Point {
            mem_s: r.bytes / (peak_gb_per_s * 1e9),
            compute_s: r.flops / peak_flops,
            time_s: r.time_s,
        });
    }
    let mut knots: Vec<Knot> = Vec::new();
    let mut all_errors = Vec::new();
    let mut best_so_far = (0.0_f64, 0.0_f64);
    for (tokens, pts) in &by_tokens {
        let floor = (FLOOR_SHARE * best_so_far.0, FLOOR_SHARE * best_so_far.1);
        let (best, mut mf, mut cf) = fit_knot(pts, floor);
        if let Some(prev) = knots.last() {
            let ok = |m: f64, c: f64| cost(pts, m, c) <= best * 1.01 + 1e-9;
            mf = raise_toward(mf, prev.memory_fraction, |v| ok(v, cf));
            cf = raise_toward(cf, prev.compute_fraction, |v| ok(mf, v));
        }
        let (mf, cf) = (round5(mf).max(1e-5), round5(cf).max(1e-5));
        best_so_far = (best_so_far.0.max(mf), best_so_far.1.max(cf));
        let errs = abs_errors(pts, mf, cf);
        all_errors.extend_from_slice(&errs);
        knots.push(Knot {
            tokens: *tokens,
            memory_fraction: mf,
            compute_fraction: cf,
            rows: pts.len() as u32,
            median_abs_error: round5(median_or_nan(errs)),
        });
    }
    let mut source_dtypes: Vec<String> = rows.iter().map(|r| r.source_dtype.clone()).collect();
    source_dtypes.sort();
    source_dtypes.dedup();
    EfficiencyCurve {
        kind: rows[0].kind,
        dtype: rows[0].dtype.to_string(),
        source_dtypes,
        // rounded to 1 ns so the JSON reads back exactly
        floor_us: (latency_floor_s(rows) * 1e9).round() / 1e3,
        floor_line_memory_fraction: latency_line(rows)
            .map_or(0.0, |(_, byte_s)| round5(byte_s / (peak_gb_per_s * 1e9))),
        knots,
        rows: rows.len() as u32,
        median_abs_error: round5(median_or_nan(all_errors)),
        shapes: Vec::new(),
    }
}

/// The MoE knots of each measured expert slice ([`super::ShapeKnots`]), fitted to that slice's
/// rows alone exactly as the pooled curve is, sorted by slice.
fn fit_shapes(
    rows: &[&KernelRow],
    peak_gb_per_s: f64,
    peaks: &BTreeMap<String, f64>,
) -> Vec<ShapeKnots> {
    // slices are products of integers: key them exactly
    let mut by_slice: BTreeMap<u64, Vec<&KernelRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.slice_elements > 0.0) {
        by_slice
            .entry(r.slice_elements.round() as u64)
            .or_default()
            .push(r);
    }
    by_slice
        .into_iter()
        .map(|(slice, group)| {
            let c = fit_curve(&group, peak_gb_per_s, peaks);
            let mut measured: Vec<String> = group
                .iter()
                .map(|r| r.shape.rsplit_once(" T").map_or(&r.shape[..], |(s, _)| s))
                .map(str::to_string)
                .collect();
            measured.sort();
            measured.dedup();
            ShapeKnots {
                slice_elements: slice as f64,
                measured,
                knots: c.knots,
                rows: c.rows,
                median_abs_error: c.median_abs_error,
            }
        })
        .collect()
}

/// Fits every (system, kind, dtype) group of `rows` into an [`EfficiencyModel`], with fractions
/// relative to the measured cards' `models::GpuSpec` preset peaks (what callers multiply by).
pub fn fit(rows: &[KernelRow]) -> Result<EfficiencyModel, EfficiencyError> {
    let mut families = Vec::new();
    for sys in &SYSTEMS {
        let mine: Vec<&KernelRow> = rows.iter().filter(|r| r.system == sys.family).collect();
        if mine.is_empty() {
            continue;
        }
        let gpu = GpuSpec::preset(sys.reference_gpu).map_err(|e| EfficiencyError::Gpu {
            name: sys.reference_gpu.to_string(),
            message: e.to_string(),
        })?;
        let peak_memory_gb_per_s = gpu.memory_gb_per_s;
        let peak_tflops: BTreeMap<String, f64> = [
            ("bf16", Some(gpu.bf16_tflops)),
            ("fp8", gpu.fp8_tflops),
            ("fp4", gpu.fp4_tflops),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect();
        let csv_peak_memory_gb_per_s =
            implied_peak(mine.iter().map(|r| (r.achieved_gb_per_s, r.pct_peak_bw)))
                .map(|v| v.round())
                .unwrap_or(f64::NAN);
        let mut csv_peak_tflops = BTreeMap::new();
        for class in ["bf16", "fp8", "fp4"] {
            let pairs = mine
                .iter()
                .filter(|r| r.kind == KernelKind::DenseGemm && compute_class(r) == class)
                .filter_map(|r| Some((r.achieved_tflops?, r.pct_peak_flops?)));
            if let Some(p) = implied_peak(pairs) {
                csv_peak_tflops.insert(class.to_string(), (p * 10.0).round() / 10.0);
            }
        }
        let mut groups: BTreeMap<(KernelKind, &str), Vec<&KernelRow>> = BTreeMap::new();
        for r in &mine {
            groups.entry((r.kind, r.dtype)).or_default().push(r);
        }
        let curves = groups
            .values()
            .map(|g| {
                let mut c = fit_curve(g, peak_memory_gb_per_s, &peak_tflops);
                if c.kind == KernelKind::MoeGrouped {
                    c.shapes = fit_shapes(g, peak_memory_gb_per_s, &peak_tflops);
                }
                c
            })
            .collect();
        families.push(FamilyCurves {
            family: sys.family.to_string(),
            reference_gpu: sys.reference_gpu.to_string(),
            applies_to: sys.applies_to.to_string(),
            peak_memory_gb_per_s,
            peak_tflops,
            csv_peak_memory_gb_per_s,
            csv_peak_tflops,
            curves,
        });
    }
    Ok(EfficiencyModel {
        schema_version: EFFICIENCY_SCHEMA_VERSION,
        source: SOURCE.to_string(),
        form: FORM.to_string(),
        conventions: CONVENTIONS.iter().map(|s| s.to_string()).collect(),
        families,
    })
}
