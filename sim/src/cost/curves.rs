//! [`Curves`]: the [`KernelCurve`]s of one machine with the knobs in force, and the [`Block`]s
//! of GEMMs built from them. Its own module so that the cost model and the attention core both
//! build curves without importing each other.

use super::Knobs;
use super::block::{Block, Gemm};
use super::envelope::Envelope;
use super::inventory::BlockKernels;
use super::kernel::KernelCurve;
use crate::efficiency::{EfficiencyModel, KernelKind};
use crate::machine::Machine;
use models::ModelSpec;
use models::spec::ModelPart;

/// Builds the [`KernelCurve`]s of one machine with the knobs in force.
pub(super) struct Curves<'a> {
    machine: &'a Machine,
    peak_byte_s: f64,
    compute_scale: f64,
    /// The machine's small-kernel floor: every GEMM costs at least this.
    pub(super) floor_s: f64,
}

impl<'a> Curves<'a> {
    /// The curves of `machine` with the memory and compute knobs of `knobs`; every GEMM costs
    /// at least `floor_s`.
    pub(super) fn new(machine: &'a Machine, knobs: &Knobs, floor_s: f64) -> Self {
        Curves {
            machine,
            peak_byte_s: machine.peak_memory_bytes_per_s() * knobs.memory_scale,
            compute_scale: knobs.compute_scale,
            floor_s,
        }
    }

    pub(super) fn of(&self, kind: KernelKind, dtype: &str) -> KernelCurve {
        self.of_moe_slice(kind, dtype, None)
    }

    /// [`Self::of`] keyed by an MoE expert slice of `slice` elements (`hidden × moe_inter / tp`).
    pub(super) fn of_moe_slice(
        &self,
        kind: KernelKind,
        dtype: &str,
        slice: Option<f64>,
    ) -> KernelCurve {
        self.of_moe_backend(kind, dtype, slice, 1.0)
    }

    /// [`Self::of_moe_slice`] for a backend that streams at `bandwidth_rate` × the curve's
    /// bandwidth ([`super::moe_table`]).
    pub(super) fn of_moe_backend(
        &self,
        kind: KernelKind,
        dtype: &str,
        slice: Option<f64>,
        bandwidth_rate: f64,
    ) -> KernelCurve {
        KernelCurve::of_slice(
            EfficiencyModel::builtin(),
            &self.machine.gpu,
            kind,
            dtype,
            slice,
            self.peak_byte_s * bandwidth_rate,
            self.compute_scale * self.machine.compute_peak_scale(kind, dtype),
        )
    }

    /// The block's GEMMs with their share of the footprint's bytes of each part (the part's
    /// bytes per layer spread over its GEMMs by parameters, so quantization scales stay in).
    pub(super) fn block(
        &self,
        k: &BlockKernels,
        spec: &ModelSpec,
        part_bytes: &dyn Fn(ModelPart) -> f64,
    ) -> Block {
        let mut gemms = Vec::with_capacity(k.gemms.len());
        for g in &k.gemms {
            let same_part: f64 = k
                .gemms
                .iter()
                .filter(|o| o.part == g.part)
                .map(|o| o.params)
                .sum();
            let f = spec.format_of(g.part);
            let bytes = match part_bytes(g.part) {
                b if b > 0.0 && same_part > 0.0 => b * g.params / same_part,
                _ => g.params * f.bytes_per_value(),
            };
            gemms.push(Gemm {
                name: g.name,
                bytes,
                params: g.params,
                curve: self
                    .of(KernelKind::DenseGemm, &f.name())
                    .with_floor(self.floor_s),
                envelope: Envelope::empty(),
            });
        }
        let mut b = Block {
            gemms,
            small: k.small,
            small_bytes_per_token: k.small_bytes_per_token,
            launches: k.launches(),
        };
        b.fill_envelopes();
        b
    }
}
