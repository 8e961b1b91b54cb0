//! A physical upper bound on one MoE layer's decode time: the touched experts' weights (their
//! block scales included) streamed once at an achievable bandwidth, plus a fixed cost per call and
//! per touched expert, fitted per weight format on vLLM 0.24's fused MoE by shape on the RTX PRO
//! 6000 (`data/observations/moe-vllm-0.24-rtx-pro-6000-shapes.csv`, aiconfigurator 0.12.0: 21
//! model shapes, TP 1–32, balanced routing, at most 2 tokens per touched expert; distilled and
//! fitted by `scripts/distill-vllm-moe-shapes.py`).
//!
//! ```text
//! line_s  = t0 + touched · (bytes_per_expert / (eta · peak_bandwidth) + c · hidden / 1024)
//! bound_s = margin · line_s + flops / (peak_flops · best compute fraction of the curve)
//! ```
//!
//! `c` is the per-expert cost beyond the bytes: it grows with the GEMMs' K loop (hidden), not
//! with the slice (0.10 µs per 1024 hidden for NVFP4 CUTLASS: 0.2–0.7 µs per expert over the
//! table's hidden 2048–7168), which is why small slices (a few MB per expert) stream at a lower
//! share of bandwidth than large ones. At decode shapes (at most
//! [`LINE_MAX_TOKENS_PER_EXPERT`] tokens per touched expert, the rows the line was fitted on) the
//! cost model prices a layer with the kernel curves ([`super::kernel::KernelCurve`], keyed by
//! tokens per expert and slice) and never above this bound (its t0 raised to the machine's own
//! launch floor where that is slower: a VM); prefill chunks keep the curves: outside the curves' measured slices, or between their knots, a curve's compute side
//! can otherwise price more than streaming every touched expert takes.
//!
//! Held out by shape (`sim/tests/moe_bound_table.rs`): the CUTLASS formats are fitted on every
//! shape but hidden 4096 (Qwen3.5-397B's 4096 × 1024 × 512 experts among those held back),
//! Marlin on its one shape at TP 1, 2, 8, 32 (TP 4 and 16 held back).

/// Tokens per touched expert up to which the line holds: the table rows it was fitted on (decode
/// and verify shapes; past them the grouped GEMMs' compute and tile choice take over).
pub const LINE_MAX_TOKENS_PER_EXPERT: f64 = 2.0;

/// The fitted line of one weight format and its margin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeLine {
    /// Fixed cost of the layer's fused-MoE call (launches, routing sort, the activation
    /// quantise), µs.
    pub t0_us: f64,
    /// Achievable share of the datasheet bandwidth the touched weights stream at.
    pub eta: f64,
    /// Cost per touched expert beyond its bytes, µs per 1024 of hidden size.
    pub c_us_per_khidden: f64,
    /// The largest measured / line ratio over the fitted rows whose touched weights exceed the
    /// 128 MB L2 (rounded up): the bound is the line times this.
    pub margin: f64,
}

/// Fitted lines (grid search of `scripts/distill-vllm-moe-shapes.py --fit`; bounds of the grid:
/// t0 0–100 µs, eta 0.60–1.00, c 0–0.30 µs). NVFP4 (FlashInfer CUTLASS): t0 55, eta 0.86, c
/// 0.10; median |error| 5.9% fitted (478 rows), 6.4% held back (146); cold rows at most 1.27× the
/// line. Marlin W4A16 INT4: t0 25, eta 0.85, c 0.01; 1.2% / 2.2%; at most 1.25×. FP8 CUTLASS: t0
/// 40, eta 0.83, c 0.02; 8.5% / 6.1%; at most 1.68×. BF16 CUTLASS: t0 35, eta 0.84, c 0.01; 4.2% /
/// 4.8%; at most 1.83× (the FP8 / BF16 tables bend up at 2 tokens per expert on large slices,
/// hence their wider margins). The per-expert cost `c` each shape alone asks for (t0 and eta held;
/// cold rows): NVFP4 quartiles 0.07 / 0.10 / 0.14 µs per 1024 hidden over 70 shapes (0.3–1.0 µs
/// an expert at hidden 2048–7168), Marlin 0.01 on all 6, FP8 −0.02 / 0.01 / 0.04, BF16 −0.04 /
/// 0.00 / 0.05 (the tails come from large slices, where a point of eta moves c by more).
/// Checked against SGLang 0.5.14's fused MoE on the same card, never fitted here (median |error|
/// 1.6% NVFP4, 8.9% INT4, 1.9% FP8, 3.1% BF16; `moe_bound_table`).
pub fn line_of(format: &str) -> Option<MoeLine> {
    let l = |t0_us, eta, c_us_per_khidden, margin| MoeLine {
        t0_us,
        eta,
        c_us_per_khidden,
        margin,
    };
    match crate::efficiency::normalize_dtype(format)? {
        "nvfp4" => Some(l(55.0, 0.86, 0.10, 1.3)),
        "int4" => Some(l(25.0, 0.85, 0.01, 1.3)),
        "fp8" => Some(l(40.0, 0.83, 0.02, 1.7)),
        "bf16" => Some(l(35.0, 0.84, 0.01, 1.85)),
        _ => None,
    }
}

impl MoeLine {
    /// The line's time of one layer, seconds: `touched` experts of `bytes_per_expert` each (scales
    /// included) on a GPU of `peak_byte_s` bandwidth, hidden size `hidden`.
    pub fn line_s(
        &self,
        touched: f64,
        bytes_per_expert: f64,
        hidden: f64,
        peak_byte_s: f64,
    ) -> f64 {
        self.t0_us * 1e-6
            + touched
                * (bytes_per_expert / (self.eta * peak_byte_s)
                    + self.c_us_per_khidden * 1e-6 * hidden / 1024.0)
    }

    /// The bound: [`Self::line_s`] times the margin.
    pub fn bound_s(
        &self,
        touched: f64,
        bytes_per_expert: f64,
        hidden: f64,
        peak_byte_s: f64,
    ) -> f64 {
        self.margin * self.line_s(touched, bytes_per_expert, hidden, peak_byte_s)
    }
}

/// The bound of one GPU's MoE layer, resolved when the cost model is built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerBound {
    pub line: MoeLine,
    /// Model hidden size.
    pub hidden: f64,
    /// Datasheet bandwidth × machine and knob scales, bytes/s (the line's `eta` refers to it).
    pub peak_byte_s: f64,
    /// The expert slice lies outside the slices the kernel curves measured
    /// ([`super::moe::shape_note`]): the curve is then the nearest measured slice's, flat, and
    /// the layer is priced no faster than the line, which the vLLM table measured across slices
    /// (a flat curve reads a small slice at a large one's efficiency: at Qwen3.5-397B's TP8
    /// slice, 0.52 M elements, the table streams at 50% of bandwidth where the smallest measured
    /// slice's curve, 1.57 M, reaches 59%).
    pub extrapolated: bool,
}

impl LayerBound {
    /// The bound for `format`'s experts, `None` where no line was fitted.
    pub fn of(
        format: &str,
        hidden: f64,
        peak_byte_s: f64,
        extrapolated: bool,
    ) -> Option<LayerBound> {
        Some(LayerBound {
            line: line_of(format)?,
            hidden,
            peak_byte_s,
            extrapolated,
        })
    }

    /// The line's time of the layer, seconds ([`MoeLine::line_s`]).
    pub fn line_s(&self, touched: f64, bytes_per_expert: f64) -> f64 {
        self.line
            .line_s(touched, bytes_per_expert, self.hidden, self.peak_byte_s)
    }

    /// The least time the layer can take with its touched experts in DRAM, seconds: the call's
    /// fixed cost and the touched bytes at the line's achievable bandwidth, without the line's
    /// per-expert cost (a measured row of the shape has its own). What a measured row whose
    /// weights the collector's repeated call left in L2 is never taken below
    /// ([`super::moe_shape_table`]).
    pub fn dram_floor_s(&self, touched: f64, bytes_per_expert: f64) -> f64 {
        self.line.t0_us * 1e-6 + touched * bytes_per_expert / (self.line.eta * self.peak_byte_s)
    }

    /// Bound on the layer's streaming time, seconds, for `touched` experts of `bytes_per_expert`,
    /// on a machine whose launches of the call's kernels take at least `launch_floor_s`: the
    /// line's t0 was the table's bare-metal box's, so a machine with slower launches (a VM, a
    /// calibrated floor) keeps its own fixed cost under the bound.
    pub fn s(&self, touched: f64, bytes_per_expert: f64, launch_floor_s: f64) -> f64 {
        let extra_fixed_s = (launch_floor_s - self.line.t0_us * 1e-6).max(0.0);
        self.line
            .bound_s(touched, bytes_per_expert, self.hidden, self.peak_byte_s)
            + self.line.margin * extra_fixed_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen3.5-397B NVFP4 at TP4 (4096 × 1024 / 4 per GPU, 1.77 MB an expert with scales), a
    /// held-back shape: 160 touched experts (16 tokens, balanced) come to the table's 290 µs
    /// within 5%; at 320 (32 tokens) the line says 550 µs for the table's 483 (+14%: CUTLASS
    /// picks other tiles by token count, and 48 tokens run 480 experts in 590 µs), under the bound.
    #[test]
    fn the_nvfp4_line_meets_a_held_back_row() {
        let l = line_of("nvfp4").unwrap();
        let bytes = 3.0 * 4096.0 * 1024.0 / 4.0 * 0.5625;
        let t = l.line_s(160.0, bytes, 4096.0, 1792e9);
        assert!((t / 290.0e-6 - 1.0).abs() < 0.05, "{t}");
        let t = l.line_s(320.0, bytes, 4096.0, 1792e9);
        assert!((t / 483.0e-6 - 1.0).abs() < 0.15, "{t}");
        assert!(l.bound_s(320.0, bytes, 4096.0, 1792e9) > 483.0e-6);
        assert!(line_of("nf3-unknown").is_none());
    }
}
