//! One kernel's roofline time with size-dependent efficiency, resolved once per layout.
//!
//! `sim::efficiency` curves are piecewise-linear in log2(tokens) between knots at powers of two,
//! clamped outside. [`KernelCurve`] samples the fractions at 2^0 … 2^17 through the public API when
//! the cost model is built and interpolates the same way, so the hot path does no name matching
//! or allocation; a test checks it agrees with `EfficiencyModel` at arbitrary sizes.

use crate::efficiency::{EfficiencyModel, KernelKind, peak_tflops};
use models::GpuSpec;

/// Knots sampled: token counts 2^0 … 2^(KNOTS−1).
const KNOTS: usize = 18;

/// Below the kernel tables' shapes a weight kernel's time bends: its fixed cost is about half the
/// intercept of the tables' line and it streams at about three quarters of the line's bandwidth
/// (a partial wave of CTAs has less tail and less memory parallelism). Measured on the lent H200
/// (`probe/profiles/h200-x1.weight-streaming.torch.json`: torch GEMMs of 1–8 rows, one kernel and
/// a chain of three, 4–40 MB against the line over ≥ 64 MB): fixed 0.43–0.59 of the intercept,
/// bandwidth 0.72–0.89 of the line's; the medians, rounded, are taken here for every GPU. The
/// time is the smaller of the two lines (the bend), so the tables' own shapes stay on the line.
pub const SMALL_SHAPE_FIXED_SHARE: f64 = 0.5;
/// See [`SMALL_SHAPE_FIXED_SHARE`].
pub const SMALL_SHAPE_BANDWIDTH_SHARE: f64 = 0.75;

/// Time of one op and whether it sits on the memory side of the roofline (at peak rates).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpTime {
    pub s: f64,
    pub memory_bound: bool,
}

/// Achievable FLOP/s and bytes/s of one kernel kind in one dtype on one GPU, by work size.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelCurve {
    memory_fraction: [f64; KNOTS],
    compute_fraction: [f64; KNOTS],
    /// Peak FLOP/s the compute fraction refers to (× the compute knob).
    peak_flop_s: f64,
    /// Peak bytes/s the memory fraction refers to (× machine scale × memory knob).
    peak_byte_s: f64,
    /// Latency floor of one call: the kernel tables' intercept, or the machine's small-kernel
    /// floor × the call's kernels, whichever is higher; seconds.
    floor_s: f64,
    /// The machine's small-kernel floor × the call's kernels alone ([`Self::with_floor`]): what a
    /// small shape's fixed cost never goes below.
    launch_floor_s: f64,
    /// Bandwidth fraction of the tables' latency line (`time = floor + bytes / bandwidth`) where
    /// they pinned one (weight GEMMs, fused MoE); 0 = none: then `max(floor, roofline)`.
    line_fraction: f64,
}

impl KernelCurve {
    /// Samples the efficiency of `kind` in `dtype` on `gpu`; `peak_byte_s` is the bandwidth the
    /// fractions multiply (datasheet × machine and knob scales), `compute_scale` multiplies FLOP/s.
    pub fn new(
        eff: &EfficiencyModel,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
        peak_byte_s: f64,
        compute_scale: f64,
    ) -> Self {
        Self::of_slice(eff, gpu, kind, dtype, None, peak_byte_s, compute_scale)
    }

    /// [`Self::new`] for an MoE whose expert slice on this GPU has `slice` elements
    /// (`hidden × moe_inter / tp`): the efficiency of the measured shapes around it.
    pub fn of_slice(
        eff: &EfficiencyModel,
        gpu: &GpuSpec,
        kind: KernelKind,
        dtype: &str,
        slice: Option<f64>,
        peak_byte_s: f64,
        compute_scale: f64,
    ) -> Self {
        let mut c = KernelCurve {
            memory_fraction: [0.0; KNOTS],
            compute_fraction: [0.0; KNOTS],
            peak_flop_s: peak_tflops(gpu, kind, dtype) * 1e12 * compute_scale,
            peak_byte_s,
            floor_s: eff.floor_s(gpu, kind, dtype),
            launch_floor_s: 0.0,
            line_fraction: eff.floor_line_fraction(gpu, kind, dtype),
        };
        for k in 0..KNOTS {
            c.memory_fraction[k] = eff.memory_fraction_of_slice(gpu, kind, dtype, 1 << k, slice);
            c.compute_fraction[k] = eff.compute_fraction_of_slice(gpu, kind, dtype, 1 << k, slice);
        }
        c
    }

    /// (memory, compute) fractions at `tokens` (at least 1), linear in log2(tokens) between the
    /// knots. A fractional count is read where it lies, not rounded: an MoE's tokens per touched
    /// expert is an average (1.44 at Qwen3.5-397B's 32 streams), and its flops grow with it while
    /// rounding it down to 1 kept the compute fraction of 1 token, so the compute side priced
    /// the layer 1.44× over its bytes (41.9 ms of the step where streaming every touched expert
    /// takes 22 ms).
    pub fn fractions(&self, tokens: f64) -> (f64, f64) {
        let x = tokens.max(1.0).log2();
        let k = (x.floor() as usize).min(KNOTS - 1);
        if k + 1 >= KNOTS {
            return (self.memory_fraction[k], self.compute_fraction[k]);
        }
        let w = x - k as f64;
        let lerp = |a: &[f64; KNOTS]| a[k] + w * (a[k + 1] - a[k]);
        (lerp(&self.memory_fraction), lerp(&self.compute_fraction))
    }

    /// The same curve with a latency floor of at least `floor_s` per call (the kernel tables'
    /// own floor stays where it is higher).
    pub fn with_floor(mut self, floor_s: f64) -> Self {
        self.floor_s = self.floor_s.max(floor_s);
        self.launch_floor_s = self.launch_floor_s.max(floor_s);
        self
    }

    /// The machine's small-kernel floor × the call's kernels ([`Self::with_floor`]), seconds.
    pub fn launch_floor_s(&self) -> f64 {
        self.launch_floor_s
    }

    /// The latency floor of one call, seconds.
    pub fn floor_s(&self) -> f64 {
        self.floor_s
    }

    /// Seconds `flops` take at the best compute fraction anywhere on the curve: the compute a
    /// kernel cannot beat at any size (the compute term of [`super::moe_bound`]'s bound).
    pub fn best_compute_s(&self, flops: f64) -> f64 {
        let best = self.max_fractions().1;
        if best > 0.0 {
            flops / (self.peak_flop_s * best)
        } else {
            0.0
        }
    }

    /// The highest (memory, compute) fractions anywhere on the curve.
    pub fn max_fractions(&self) -> (f64, f64) {
        let m = self.memory_fraction.iter().copied().fold(0.0, f64::max);
        let c = self.compute_fraction.iter().copied().fold(0.0, f64::max);
        (m, c)
    }

    /// Kernel time: `max(floor [+ bytes / (bandwidth·line_fraction)], flops / (peak·compute_fraction),
    /// bytes / (bandwidth·memory_fraction))`,
    /// filed as memory-bound when bytes dominate at peak rates (which side of the ridge point).
    pub fn time(&self, tokens: f64, flops: f64, bytes: f64) -> OpTime {
        if flops <= 0.0 && bytes <= 0.0 {
            return OpTime {
                s: 0.0,
                memory_bound: true,
            };
        }
        // A weight kernel's fixed cost and its streaming add up (the tables' own line below 8
        // tokens); the knots, fitted to whole times of large shapes, take over above it.
        let fixed_s = if self.line_fraction > 0.0 {
            let line_byte_s = self.peak_byte_s * self.line_fraction;
            let full = self.floor_s + bytes / line_byte_s;
            let small = (SMALL_SHAPE_FIXED_SHARE * self.floor_s).max(self.launch_floor_s)
                + bytes / (SMALL_SHAPE_BANDWIDTH_SHARE * line_byte_s);
            full.min(small)
        } else {
            self.floor_s
        };
        OpTime {
            s: fixed_s.max(self.streaming_s(tokens, flops, bytes)),
            memory_bound: bytes / self.peak_byte_s >= flops / self.peak_flop_s,
        }
    }

    /// Seconds to stream `bytes` at the memory fraction reached at `tokens` (no compute side,
    /// no floor): bytes a kernel reads on top of those the curve's measurements covered.
    pub fn stream_s(&self, tokens: f64, bytes: f64) -> f64 {
        bytes / (self.peak_byte_s * self.fractions(tokens).0)
    }

    /// The roofline alone (no floor).
    fn streaming_s(&self, tokens: f64, flops: f64, bytes: f64) -> f64 {
        let (mf, cf) = self.fractions(tokens);
        (flops / (self.peak_flop_s * cf)).max(bytes / (self.peak_byte_s * mf))
    }

    /// [`Self::time`] for work that grows at least linearly with tokens (attention core, DSA
    /// indexer), kept non-decreasing in tokens: never cheaper than the same work per token done
    /// by fewer tokens at any power of two below (a steeply rising efficiency curve would
    /// otherwise predict a bigger batch faster than a smaller one).
    pub fn time_monotone(&self, tokens: f64, flops: f64, bytes: f64) -> OpTime {
        let mut out = self.time(tokens, flops, bytes);
        let mut k = 1.0;
        while k < tokens {
            let r = k / tokens;
            out.s = out.s.max(self.streaming_s(k, flops * r, bytes * r));
            k *= 2.0;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kimi-K2's int4 experts at TP8 on the RTX PRO 6000 (2.84 MB per expert on a GPU, the
    /// table's own bytes): one token's 8 experts cost more than the call's fixed ~29 µs alone (the
    /// streaming adds on), less than the tables' full line (the small-shape bend), and the table's
    /// 16-token row (128 experts, 363 MB) comes back.
    #[test]
    fn weight_kernels_pay_their_fixed_cost_and_their_streaming() {
        let eff = EfficiencyModel::builtin();
        let gpu = GpuSpec::preset("rtx-pro-6000-server").unwrap();
        let c = KernelCurve::new(
            eff,
            &gpu,
            KernelKind::MoeGrouped,
            "int4",
            gpu.memory_gb_per_s * 1e9,
            1.0,
        );
        let per_expert = 3.633e8 / 128.0;
        let bytes = 8.0 * per_expert;
        let one = c.time(1.0, 0.0, bytes).s;
        let floor = c.floor_s();
        let line_byte_s = gpu.memory_gb_per_s * 1e9 * c.line_fraction;
        assert!(one > floor * 1.15, "{one} vs floor {floor}");
        assert!(one < floor + bytes / line_byte_s, "{one}");
        let row = c.time(1.0, 0.0, 3.633e8).s;
        assert!((row / 286.2e-6 - 1.0).abs() < 0.05, "{row}");
    }

    #[test]
    fn sampled_curves_agree_with_the_efficiency_model() {
        let eff = EfficiencyModel::builtin();
        for gpu in ["rtx-pro-6000-server", "h200", "b200", "l40s"] {
            let gpu = GpuSpec::preset(gpu).unwrap();
            for kind in [
                KernelKind::DenseGemm,
                KernelKind::MoeGrouped,
                KernelKind::MlaDecode,
                KernelKind::GqaDecode,
                KernelKind::Prefill,
            ] {
                for dtype in ["bf16", "fp8", "nvfp4", "int4-g32"] {
                    let c = KernelCurve::new(eff, &gpu, kind, dtype, 1.0, 1.0);
                    for t in [1u64, 2, 3, 5, 7, 12, 100, 129, 1000, 5000, 70_000, 300_000] {
                        let (m, k) = c.fractions(t as f64);
                        let want_m = eff.memory_fraction(&gpu, kind, dtype, t);
                        let want_k = eff.compute_fraction(&gpu, kind, dtype, t);
                        assert!(
                            (m - want_m).abs() < 1e-9,
                            "{kind:?} {dtype} {t}: {m} vs {want_m}"
                        );
                        assert!(
                            (k - want_k).abs() < 1e-9,
                            "{kind:?} {dtype} {t}: {k} vs {want_k}"
                        );
                    }
                }
            }
        }
    }
}
