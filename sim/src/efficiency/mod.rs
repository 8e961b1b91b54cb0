//! How close real SGLang kernels get to a GPU's datasheet peaks, as a function of the work's size.
//!
//! A kernel's time is modelled as a roofline with size-dependent ceilings:
//!
//! ```text
//! time_s = max( flops / (peak_flops(dtype) · compute_fraction(kind, dtype, tokens)),
//!               bytes / (peak_bandwidth   · memory_fraction(kind, dtype, tokens)) )
//! ```
//!
//! Both fractions are piecewise-linear in log2(tokens) between knots at powers of two, one curve per
//! GPU family × kernel kind × dtype, clamped to the first/last knot outside the measured range. The
//! curves are fitted ([`curve_fit`]) to SGLang 0.5.14 kernel timings measured on an RTX PRO 6000 Blackwell
//! Server Edition and an H200 SXM (`data/observations/*-kernels-sglang-0.5.14.csv`, read by
//! [`observations`]) and embedded from `sim/data/efficiency.json`, which `examples/fit_efficiency.rs`
//! regenerates.
//!
//! What `flops`, `bytes` and `tokens` mean per kind (the fit used exactly these, so callers must too):
//! - [`KernelKind::DenseGemm`]: tokens = M rows; flops = 2·M·N·K; bytes = the weight matrix only
//!   (N·K × bytes per value of the weight format, scales included).
//! - [`KernelKind::MoeGrouped`]: tokens = tokens per active expert on this GPU, the rows of each
//!   expert's GEMMs (the CSVs' `num_tokens·topk/ep` pairs of balanced routing over
//!   `gpu_active_experts`, at least 1, rounded to the nearest power of two): what sets a grouped
//!   GEMM's efficiency, comparable across models with 128, 256 or 384 experts; flops =
//!   2·num_tokens·top_k·3·hidden·moe_inter / (tp·ep) (this GPU's share); bytes = weights of the
//!   experts this GPU actually touches (3·hidden·moe_inter/tp each).
//! - [`KernelKind::MlaDecode`]: tokens = decode batch; flops = 2·batch·heads_per_gpu·context·(576+512)
//!   for DeepSeek-style MLA (kv_lora_rank + rope dims for QK, kv_lora_rank for PV); bytes = KV cache
//!   read (batch·context·576 × KV bytes per value). The dtype is the KV-cache dtype.
//! - [`KernelKind::GqaDecode`]: no measured kernel; uses the bf16-KV MLA decode curve whatever the
//!   KV dtype (both stream the KV cache once per step; MLA's is the closest measured kernel, and its
//!   fp8-KV variant on H200, ~6% of bandwidth, is a quirk of that one kernel).
//! - [`KernelKind::Prefill`] (attention core of a prefill): no measured kernel; uses the dense GEMM
//!   curve of the same dtype with tokens = prefill tokens (same tensor cores, M grows with tokens).
//!
//! Which peak a fraction refers to: memory → `GpuSpec::memory_gb_per_s`; compute → bf16 for `bf16`
//! and `int4` (weight-only int4 computes in bf16), fp8 for `fp8`, fp4 for `nvfp4` (falling back to fp8
//! then bf16 where the GPU lacks the unit). See [`peak_tflops`]. The fit divides by the measured
//! cards' own `models::GpuSpec` presets (`rtx-pro-6000-server`, `h200`), so fractions are of
//! datasheet peaks everywhere; the CSVs' `pct_peak_*` columns used the same bandwidths (1792 and
//! 4800 GB/s) and H200 TFLOP/s, but RTX PRO 6000 TFLOP/s ~7% below the datasheet (467.8 vs 503.8
//! bf16); both sets are recorded in the JSON.
//!
//! MoE curves are also keyed by shape ([`ShapeKnots`]): the expert slice one GPU streams,
//! `hidden × moe_inter / tp` elements, sets the grouped GEMM's N and K and so how well its tiles
//! fill the SMs. Each measured slice has its own knots, fitted to its rows alone; a caller that
//! gives a slice ([`EfficiencyModel::memory_fraction_of_slice`]) gets the two measured slices
//! around it interpolated in log(slice), and the nearest one's knots flat outside them
//! ([`EfficiencyModel::moe_shape_note`] says so). The pooled knots stay for callers without one.
//!
//! Known limits (stated, not tuned away):
//! - Rows whose weights fit in L2 were trimmed from the measurements, so the smallest kernels (e.g.
//!   GLM-5 TP8 expert slices at 1–2 tokens) are extrapolated flat from the smallest measured size and
//!   may be optimistic: the smallest NVFP4 MoE rows on RTX PRO 6000 (2–4 tokens) reach 64–72% of
//!   bandwidth, not the ~15–20% quoted for 1 token.
//! - MLA decode efficiency also depends on context length, which the API does not take: the H200
//!   bf16 curve's p90 error is ~47% (median ~10%).
//! - The H200 family has no nvfp4 data (Hopper has no fp4): B200 nvfp4 uses its int4 (MoE) or fp8
//!   (GEMM) curves; GQA decode and prefill attention are proxies (above).
//!
//! GPU families: the RTX PRO 6000 curves serve PCIe workstation/consumer cards (RTX, L40/L4, Ada and
//! Blackwell GeForce/RTX PRO); the H200 curves serve datacenter Hopper/Blackwell/Ampere cards (A100,
//! H100, H200, H20, B200, GB200…). Matched by name, else by NVLink presence (see [`family_key_for`]).

pub mod curve_fit;
pub mod observations;
mod shape;

pub use shape::{ShapeCoverage, ShapeKnots};

use models::GpuSpec;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Version of the `efficiency.json` layout this build reads.
pub const EFFICIENCY_SCHEMA_VERSION: u32 = 1;

/// The committed fit, embedded at build time.
const BUILTIN_JSON: &str = include_str!("../../data/efficiency.json");

/// Family key of the RTX PRO 6000 Blackwell Server curves (PCIe workstation / consumer cards).
pub const FAMILY_WORKSTATION: &str = "rtx_pro_6000_server";
/// Family key of the H200 SXM curves (datacenter Hopper / Blackwell cards).
pub const FAMILY_DATACENTER: &str = "h200_sxm";

/// The kind of GPU kernel whose efficiency is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    /// A dense GEMM: attention projections, dense MLPs, shared experts, lm_head.
    DenseGemm,
    /// SGLang's fused MoE (grouped GEMM over the routed experts, gate/up and down).
    MoeGrouped,
    /// MLA decode attention (reads the latent KV cache).
    MlaDecode,
    /// GQA/MHA decode attention (reads K and V caches).
    GqaDecode,
    /// Attention core of a prefill (QKᵀ and PV over the prompt).
    Prefill,
}

impl KernelKind {
    /// The measured kind whose curve this kind uses (itself when measured).
    pub fn measured_proxy(self) -> KernelKind {
        match self {
            KernelKind::GqaDecode => KernelKind::MlaDecode,
            KernelKind::Prefill => KernelKind::DenseGemm,
            k => k,
        }
    }
}

/// One knot of a curve: the fractions reached at exactly `tokens` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Knot {
    /// Work size (see the module docs for what a token is per kind).
    pub tokens: u64,
    /// Fraction (0..1] of peak memory bandwidth.
    pub memory_fraction: f64,
    /// Fraction (0..1] of peak dense FLOP/s for the dtype.
    pub compute_fraction: f64,
    /// Measured rows the knot was fitted to.
    pub rows: u32,
    /// Median |predicted/measured − 1| of those rows.
    pub median_abs_error: f64,
}

/// The fitted curve of one kernel kind and dtype on one GPU family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EfficiencyCurve {
    pub kind: KernelKind,
    /// Normalized dtype: `bf16`, `fp8`, `nvfp4`, `int4`.
    pub dtype: String,
    /// The CSV dtype labels pooled into this curve (e.g. `fp8` and `fp8_block`).
    pub source_dtypes: Vec<String>,
    /// Latency floor of one call, µs ([`curve_fit::latency_floor_s`]; 0 where the tables show none).
    #[serde(default)]
    pub floor_us: f64,
    /// Bandwidth of the line that pinned `floor_us` (`time = floor + bytes / bandwidth` over the
    /// rows at ≤ 8 tokens), as a fraction of the family's peak; 0 where no line was pinned.
    #[serde(default)]
    pub floor_line_memory_fraction: f64,
    /// Knots sorted by tokens.
    pub knots: Vec<Knot>,
    /// Measured rows behind the curve.
    pub rows: u32,
    /// Median |predicted/measured − 1| over all rows with these knots.
    pub median_abs_error: f64,
    /// MoE only: the knots fitted to each measured expert slice alone, sorted by slice
    /// ([`ShapeKnots`]); the pooled `knots` above serve callers that give no shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<ShapeKnots>,
}

/// All curves measured on one reference GPU, and the peaks the fractions are relative to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyCurves {
    /// Family key: the CSVs' `system` value (`rtx_pro_6000_server`, `h200_sxm`).
    pub family: String,
    /// `models::GpuSpec` preset key of the card that was measured.
    pub reference_gpu: String,
    /// Which GPUs use these curves.
    pub applies_to: String,
    /// Peak bandwidth the fractions are relative to: the reference card's `models::GpuSpec` preset, GB/s.
    pub peak_memory_gb_per_s: f64,
    /// Peak dense TFLOP/s per compute dtype (`bf16`, `fp8`, `fp4`) the fractions are relative to:
    /// the reference card's GPU preset.
    pub peak_tflops: std::collections::BTreeMap<String, f64>,
    /// Peak bandwidth the CSVs' own `pct_peak_bw` column assumed (achieved / pct), GB/s.
    pub csv_peak_memory_gb_per_s: f64,
    /// Peak TFLOP/s the CSVs' `pct_peak_flops` column assumed, per compute dtype.
    pub csv_peak_tflops: std::collections::BTreeMap<String, f64>,
    pub curves: Vec<EfficiencyCurve>,
}

/// The fitted efficiency curves of every GPU family (the content of `sim/data/efficiency.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EfficiencyModel {
    /// Always [`EFFICIENCY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The measured files and their origin.
    pub source: String,
    /// The curve form and how it was fitted.
    pub form: String,
    /// What flops, bytes and tokens mean per kind, as the fit computed them.
    pub conventions: Vec<String>,
    pub families: Vec<FamilyCurves>,
}

/// Errors reading efficiency data.
#[derive(Debug, thiserror::Error)]
pub enum EfficiencyError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {problem}")]
    Csv {
        path: std::path::PathBuf,
        line: usize,
        problem: String,
    },
    #[error("GPU preset `{name}` of the measured card is unavailable: {message}")]
    Gpu { name: String, message: String },
    #[error(
        "efficiency data is not valid: {0}; regenerate it with `cargo run -p sim --example fit_efficiency`"
    )]
    Json(String),
}

/// Whether a fraction lies in (0, 1].
fn in_unit(v: f64) -> bool {
    v > 0.0 && v <= 1.0
}

/// Whether `haystack` contains the lower-case ASCII `needle`, ignoring ASCII case.
fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Whether `s` starts with the lower-case ASCII `prefix`, ignoring ASCII case.
fn starts_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Normalizes a dtype name to `bf16`, `fp8`, `nvfp4` or `int4`; accepts `models::WeightFormat::name()`
/// (`int4-g32`), the CSVs' labels (`bfloat16`, `fp8_block`, `int4_wo`) and `fp16`. `None` if unknown.
pub fn normalize_dtype(dtype: &str) -> Option<&'static str> {
    let d = dtype.trim();
    let starts = |p: &[&str]| p.iter().any(|p| starts_ignore_case(d, p));
    if starts(&["bf16", "bfloat16", "fp16", "float16", "half", "auto"]) {
        Some("bf16")
    } else if starts(&["fp8", "float8", "e4m3", "e5m2", "w8a8", "mxfp8"]) {
        Some("fp8")
    } else if starts(&["nvfp4", "fp4", "mxfp4"]) {
        Some("nvfp4")
    } else if starts(&["int4", "w4a16", "awq", "gptq"]) {
        Some("int4")
    } else {
        None
    }
}

/// The compute dtype whose peak a `kind` kernel in `dtype` runs at: `bf16`, `fp8` or `fp4`. Decode
/// attention computes in bf16 whatever the KV-cache dtype.
pub fn compute_class(kind: KernelKind, dtype: &str) -> &'static str {
    if matches!(kind, KernelKind::MlaDecode | KernelKind::GqaDecode) {
        return "bf16";
    }
    match normalize_dtype(dtype) {
        Some("fp8") => "fp8",
        Some("nvfp4") => "fp4",
        _ => "bf16",
    }
}

/// Peak dense TFLOP/s of `gpu` that a `kind` kernel's compute fraction in `dtype` refers to: bf16 for
/// `bf16`, weight-only `int4` and decode attention, fp8 for `fp8`, fp4 for `nvfp4` (falling back to
/// fp8, then bf16, where the GPU has no such tensor cores).
pub fn peak_tflops(gpu: &GpuSpec, kind: KernelKind, dtype: &str) -> f64 {
    match compute_class(kind, dtype) {
        "fp8" => gpu.fp8_tflops.unwrap_or(gpu.bf16_tflops),
        "fp4" => gpu.fp4_tflops.or(gpu.fp8_tflops).unwrap_or(gpu.bf16_tflops),
        _ => gpu.bf16_tflops,
    }
}

/// Which family's curves a GPU uses: [`FAMILY_DATACENTER`] for datacenter parts (A100/H100/H200/H20/
/// B100/B200/GB200/B300, matched by name), [`FAMILY_WORKSTATION`] for RTX / L40 / L4 / GeForce cards;
/// otherwise datacenter if the spec lists NVLink, workstation if not.
pub fn family_key_for(gpu: &GpuSpec) -> &'static str {
    const DATACENTER: &[&str] = &[
        "a100", "h100", "h200", "h20", "h800", "b100", "b200", "b300",
    ];
    const WORKSTATION: &[&str] = &["rtx", "l40", "l4", "geforce", "a6000", "a40"];
    // Allocation-free: the cost model asks once per kernel of every iteration it costs.
    let named = |keys: &[&str]| {
        keys.iter().any(|k| {
            contains_ignore_case(&gpu.name, k) || contains_ignore_case(&gpu.display_name, k)
        })
    };
    if named(DATACENTER) {
        FAMILY_DATACENTER
    } else if named(WORKSTATION) {
        FAMILY_WORKSTATION
    } else if gpu.nvlink_gb_per_s.is_some() {
        FAMILY_DATACENTER
    } else {
        FAMILY_WORKSTATION
    }
}

/// Dtypes tried, in order, when a family has no curve for the asked one: the other 4-bit format, then
/// fp8, then bf16.
fn dtype_fallbacks(dtype: &'static str) -> [&'static str; 4] {
    match dtype {
        "nvfp4" => ["nvfp4", "int4", "fp8", "bf16"],
        "int4" => ["int4", "nvfp4", "fp8", "bf16"],
        "fp8" => ["fp8", "bf16", "bf16", "bf16"],
        _ => ["bf16", "fp8", "fp8", "fp8"],
    }
}

impl FamilyCurves {
    /// The curve for a (measured) kind and dtype, falling back to the other 4-bit format, then fp8,
    /// then bf16 when the family has no curve for the dtype.
    pub fn curve(&self, kind: KernelKind, dtype: &str) -> Option<&EfficiencyCurve> {
        // GQA decode borrows the bf16-KV MLA curve whatever its KV dtype: the fp8-KV MLA kernel
        // measured on H200 reaches ~6% of bandwidth, a quirk of that kernel, not of decode attention.
        let d = match kind {
            KernelKind::GqaDecode => "bf16",
            _ => normalize_dtype(dtype).unwrap_or("bf16"),
        };
        let kind = kind.measured_proxy();
        let of_kind = || self.curves.iter().filter(|c| c.kind == kind);
        dtype_fallbacks(d)
            .iter()
            .find_map(|want| of_kind().find(|c| c.dtype == *want))
            .or_else(|| of_kind().next())
    }
}

impl EfficiencyModel {
    /// The committed fit (`sim/data/efficiency.json`), parsed once.
    pub fn builtin() -> &'static EfficiencyModel {
        static MODEL: OnceLock<EfficiencyModel> = OnceLock::new();
        MODEL.get_or_init(|| {
            EfficiencyModel::from_json_str(BUILTIN_JSON)
                .expect("embedded sim/data/efficiency.json is valid (checked by tests)")
        })
    }

    /// Parses and checks an efficiency JSON (schema version, non-empty sorted knots, fractions in (0, 1]).
    pub fn from_json_str(text: &str) -> Result<EfficiencyModel, EfficiencyError> {
        let m: EfficiencyModel =
            serde_json::from_str(text).map_err(|e| EfficiencyError::Json(e.to_string()))?;
        if m.schema_version != EFFICIENCY_SCHEMA_VERSION {
            return Err(EfficiencyError::Json(format!(
                "schema_version {} (this build reads {EFFICIENCY_SCHEMA_VERSION})",
                m.schema_version
            )));
        }
        for fam in &m.families {
            for c in &fam.curves {
                let bad = c.knots.is_empty()
                    || c.knots.windows(2).any(|w| w[0].tokens >= w[1].tokens)
                    || c.knots
                        .iter()
                        .any(|k| !(in_unit(k.memory_fraction) && in_unit(k.compute_fraction)));
                if bad {
                    return Err(EfficiencyError::Json(format!(
                        "{} {:?} {}: knots must be non-empty, sorted by tokens, fractions in (0, 1]",
                        fam.family, c.kind, c.dtype
                    )));
                }
            }
        }
        Ok(m)
    }

    /// The family fitted for `gpu` and its curve for (kind, dtype), if both exist.
    fn family_curve(
        &self,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
    ) -> Option<(&FamilyCurves, &EfficiencyCurve)> {
        let fam = self.family_for(gpu)?;
        Some((fam, fam.curve(kind, dtype)?))
    }

    /// The family curves `gpu` uses (see [`family_key_for`]); the first family if that one is absent.
    pub fn family_for(&self, gpu: &GpuSpec) -> Option<&FamilyCurves> {
        let key = family_key_for(gpu);
        self.families
            .iter()
            .find(|f| f.family == key)
            .or(self.families.first())
    }

    /// When `gpu` is the very card a family was measured on but its spec quotes other peaks than the
    /// fit used (an edited preset, a probe-measured spec), fractions are rescaled so the achieved
    /// absolute rate stays the measured one.
    fn peak_rescale(fam: &FamilyCurves, gpu: &GpuSpec, fit_peak: f64, gpu_peak: f64) -> f64 {
        if gpu.name == fam.reference_gpu && fit_peak > 0.0 && gpu_peak > 0.0 {
            fit_peak / gpu_peak
        } else {
            1.0
        }
    }

    /// Fraction (0..1] of the GPU's peak memory bandwidth a kernel of `kind` in `dtype` reaches when it
    /// processes `tokens` tokens. Tokens per kind (as the fit used them, see the module docs): dense
    /// GEMM and prefill = rows M; MoE = tokens per active expert on this GPU (pairs routed to it ÷
    /// experts it touches); decode attention = batch.
    pub fn memory_fraction(
        &self,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
        tokens: u64,
    ) -> f64 {
        self.memory_fraction_of_slice(gpu, kind, dtype, tokens, None)
    }

    /// [`Self::memory_fraction`] of an MoE whose expert slice on this GPU has `slice` elements
    /// (`hidden × moe_inter / tp`, see [`ShapeKnots`]); `None` = the pooled curve.
    pub fn memory_fraction_of_slice(
        &self,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
        tokens: u64,
        slice: Option<f64>,
    ) -> f64 {
        let Some((fam, curve)) = self.family_curve(gpu, kind, dtype) else {
            return 1.0;
        };
        let scale = Self::peak_rescale(fam, gpu, fam.peak_memory_gb_per_s, gpu.memory_gb_per_s);
        (curve.at(tokens, slice, |k| k.memory_fraction) * scale).clamp(1e-6, 1.0)
    }

    /// Fraction (0..1] of the GPU's peak dense FLOP/s for that dtype (see [`peak_tflops`]) reached at
    /// that size.
    pub fn compute_fraction(
        &self,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
        tokens: u64,
    ) -> f64 {
        self.compute_fraction_of_slice(gpu, kind, dtype, tokens, None)
    }

    /// [`Self::compute_fraction`] of an MoE expert slice of `slice` elements (see
    /// [`Self::memory_fraction_of_slice`]).
    pub fn compute_fraction_of_slice(
        &self,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
        tokens: u64,
        slice: Option<f64>,
    ) -> f64 {
        let Some((fam, curve)) = self.family_curve(gpu, kind, dtype) else {
            return 1.0;
        };
        let fit_peak = fam
            .peak_tflops
            .get(compute_class(kind, dtype))
            .copied()
            .unwrap_or(0.0);
        let scale = Self::peak_rescale(fam, gpu, fit_peak, peak_tflops(gpu, kind, dtype));
        (curve.at(tokens, slice, |k| k.compute_fraction) * scale).clamp(1e-6, 1.0)
    }

    /// A note when an MoE expert slice of `slice` elements lies outside the slices measured for
    /// `dtype` on `gpu`'s family (its efficiency is then the nearest measured slice's, flat).
    pub fn moe_shape_note(&self, gpu: &GpuSpec, dtype: &str, slice: f64) -> Option<String> {
        let (fam, curve) = self.family_curve(gpu, KernelKind::MoeGrouped, dtype)?;
        let m = |v: f64| format!("{:.2}M", v / 1e6);
        let (side, edge, measured) = match curve.shape_coverage(slice) {
            ShapeCoverage::Pooled | ShapeCoverage::Inside => return None,
            ShapeCoverage::BelowSmallest { smallest, measured } => ("below", smallest, measured),
            ShapeCoverage::AboveLargest { largest, measured } => ("above", largest, measured),
        };
        let end = if side == "below" {
            "smallest"
        } else {
            "largest"
        };
        Some(format!(
            "MoE efficiency extrapolated: the expert slice per GPU ({} elements = hidden x moe_inter / tp) is {side} the {end} {} slice measured on {} ({}: {measured}), whose curve is used flat",
            m(slice),
            curve.dtype,
            fam.family,
            m(edge),
        ))
    }

    /// Latency floor of one call of `kind` in `dtype` on `gpu`'s family, seconds (0 when the
    /// tables show none).
    pub fn floor_s(&self, gpu: &GpuSpec, kind: KernelKind, dtype: &str) -> f64 {
        self.family_curve(gpu, kind, dtype)
            .map_or(0.0, |(_, c)| c.floor_us * 1e-6)
    }

    /// The streaming bandwidth of the latency line behind [`Self::floor_s`], as a fraction of
    /// `gpu`'s peak (rescaled like [`Self::memory_fraction`]); 0 when the tables pinned none.
    pub fn floor_line_fraction(&self, gpu: &GpuSpec, kind: KernelKind, dtype: &str) -> f64 {
        let Some((fam, curve)) = self.family_curve(gpu, kind, dtype) else {
            return 0.0;
        };
        if curve.floor_line_memory_fraction <= 0.0 {
            return 0.0;
        }
        let scale = Self::peak_rescale(fam, gpu, fam.peak_memory_gb_per_s, gpu.memory_gb_per_s);
        (curve.floor_line_memory_fraction * scale).clamp(1e-6, 1.0)
    }

    /// Seconds a kernel takes under the roofline with these fractions:
    /// `max(flops / (peak_flops · compute_fraction), bytes / (peak_bw · memory_fraction))`.
    pub fn kernel_time_s(
        &self,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
        tokens: u64,
        flops: f64,
        bytes: f64,
    ) -> f64 {
        let flop_s =
            peak_tflops(gpu, kind, dtype) * 1e12 * self.compute_fraction(gpu, kind, dtype, tokens);
        let byte_s = gpu.memory_gb_per_s * 1e9 * self.memory_fraction(gpu, kind, dtype, tokens);
        (flops / flop_s).max(bytes / byte_s)
    }
}
