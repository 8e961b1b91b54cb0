//! One block of a layer on one GPU, costed kernel by kernel: each weight GEMM is its own kernel
//! (`max(floor, roofline)`, tabulated into a monotone envelope), each small kernel costs the
//! machine's small-kernel floor or the activation bytes it streams, whichever is larger.

use super::TimeBreakdown;
use super::envelope::Envelope;
use super::kernel::{KernelCurve, OpTime};

/// A weight GEMM on one GPU: its bytes and parameters, in its own format.
#[derive(Debug, Clone)]
pub struct Gemm {
    /// What it is (`o_proj`, …), for breakdowns.
    pub name: &'static str,
    pub bytes: f64,
    pub params: f64,
    pub curve: KernelCurve,
    pub envelope: Envelope,
}

impl Gemm {
    /// Time of `tokens` rows without the envelope.
    pub fn raw(&self, tokens: f64) -> OpTime {
        self.curve
            .time(tokens, 2.0 * tokens * self.params, self.bytes)
    }

    /// Tabulates the envelope.
    pub fn fill_envelope(&mut self) {
        self.envelope = Envelope::of(&|t| self.raw(t));
    }
}

/// A block's kernels on one GPU (see `super::inventory`).
#[derive(Debug, Clone, Default)]
pub struct Block {
    pub gemms: Vec<Gemm>,
    /// Small kernels, one floor each.
    pub small: f64,
    /// Activation bytes the small kernels stream per token.
    pub small_bytes_per_token: f64,
    /// Kernels launched eagerly (GEMMs, small, core, collectives).
    pub launches: f64,
}

/// What costing a block needs from the machine.
#[derive(Debug, Clone, Copy)]
pub struct SmallKernelRates {
    /// GPU time of one small kernel, seconds.
    pub floor_s: f64,
    /// Bandwidth small elementwise kernels stream at, bytes/s.
    pub bytes_per_s: f64,
}

impl SmallKernelRates {
    /// Files kernels of `bytes` each into `b`, each at the small-kernel floor or its bytes at the
    /// elementwise bandwidth, whichever is longer (kernel by kernel; [`Block::cost`] takes its
    /// small kernels together).
    pub fn file_kernels(&self, bytes: &[f64], b: &mut TimeBreakdown) {
        for &x in bytes {
            let stream_s = x / self.bytes_per_s;
            if stream_s <= self.floor_s {
                b.kernel_floor_s += self.floor_s;
            } else {
                b.activation_s += stream_s;
            }
        }
    }
}

impl Block {
    /// Adds the block's GEMMs and small kernels at `tokens` to `b`: floors under
    /// `kernel_floor_s`, the rest under weight reads / compute and activations.
    pub fn cost(&self, tokens: f64, rates: SmallKernelRates, b: &mut TimeBreakdown) {
        self.cost_fewer_small(tokens, rates, 0.0, b);
    }

    /// [`Self::cost`] with `fewer` of the block's small kernels run inside another kernel (the
    /// add + RMSNorm after an all-reduce, inside a fused all-reduce kernel).
    pub fn cost_fewer_small(
        &self,
        tokens: f64,
        rates: SmallKernelRates,
        fewer: f64,
        b: &mut TimeBreakdown,
    ) {
        if tokens <= 0.0 {
            return;
        }
        for g in &self.gemms {
            add_weight_op(b, g.envelope.at(tokens), g.curve.floor_s());
        }
        // each small kernel costs max(floor, its bytes): the floor binds in decode, the
        // activation bytes in a long prefill
        let floors = (self.small - fewer).max(0.0) * rates.floor_s;
        let bytes_s = tokens * self.small_bytes_per_token / rates.bytes_per_s;
        if floors >= bytes_s {
            b.kernel_floor_s += floors;
        } else {
            b.activation_s += bytes_s;
        }
    }

    /// Σ of its GEMMs' bytes.
    pub fn weight_bytes(&self) -> f64 {
        self.gemms.iter().map(|g| g.bytes).sum()
    }

    pub fn fill_envelopes(&mut self) {
        for g in &mut self.gemms {
            g.fill_envelope();
        }
    }
}

/// Files a weight op: under `kernel_floor_s` when its latency floor binds, else under weight
/// reads when it is memory-bound, else compute.
pub fn add_weight_op(b: &mut TimeBreakdown, t: OpTime, floor_s: f64) {
    if t.s <= 0.0 {
        return;
    }
    if t.s <= floor_s * (1.0 + 1e-9) {
        b.kernel_floor_s += t.s;
    } else if t.memory_bound {
        b.weight_read_s += t.s;
    } else {
        b.compute_s += t.s;
    }
}
