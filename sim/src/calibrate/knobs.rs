//! The knobs a calibration may move: what each means physically, its bounds and its prior.
//!
//! Every knob scales a quantity the cost model already has; none adds time that no kernel,
//! collective or CPU does. Bounds come from physics (bandwidth and FLOP/s never above the
//! datasheet, communication never below half the measured curve, a launch never cheaper than a
//! raw `cudaLaunchKernel`); priors say how far the built-in figures (the SGLang kernel tables, the
//! measured NCCL curves, PyTorch's per-op overhead) are believed to be off.

use crate::cost::{CostModel, Knobs};
use serde::{Deserialize, Serialize};

/// A knob the fit may move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum KnobParam {
    /// `compute_scale`: achieved FLOP/s against the kernel tables'.
    Compute,
    /// `memory_scale`: achieved bandwidth against the kernel tables'.
    Memory,
    /// `comm_time_scale`: collective time against the machine's curves.
    Comm,
    /// `cpu_scale`: host time per eagerly launched kernel against the prior.
    Cpu,
}

impl KnobParam {
    /// Every knob.
    pub const ALL: [KnobParam; 4] = [
        KnobParam::Compute,
        KnobParam::Memory,
        KnobParam::Comm,
        KnobParam::Cpu,
    ];

    /// The knob's value in `k`.
    pub fn get(self, k: &Knobs) -> f64 {
        match self {
            KnobParam::Compute => k.compute_scale,
            KnobParam::Memory => k.memory_scale,
            KnobParam::Comm => k.comm_time_scale,
            KnobParam::Cpu => k.cpu_scale,
        }
    }

    /// Sets the knob's value in `k`.
    pub fn set(self, k: &mut Knobs, v: f64) {
        match self {
            KnobParam::Compute => k.compute_scale = v,
            KnobParam::Memory => k.memory_scale = v,
            KnobParam::Comm => k.comm_time_scale = v,
            KnobParam::Cpu => k.cpu_scale = v,
        }
    }

    /// The knob's field in [`Knobs`] and in calibration files (`memory_scale`).
    pub fn field(self) -> &'static str {
        match self {
            KnobParam::Compute => "compute_scale",
            KnobParam::Memory => "memory_scale",
            KnobParam::Comm => "comm_time_scale",
            KnobParam::Cpu => "cpu_scale",
        }
    }

    /// What the knob means, for reports.
    pub fn meaning(self) -> &'static str {
        match self {
            KnobParam::Compute => "achieved FLOP/s ÷ the kernel tables'",
            KnobParam::Memory => "achieved memory bandwidth ÷ the kernel tables'",
            KnobParam::Comm => "collective time ÷ the machine profile's curves",
            KnobParam::Cpu => {
                "host time per eager kernel launch ÷ the prior (raw launch + PyTorch op)"
            }
        }
    }

    /// Prior width: one standard deviation of ln(knob).
    pub fn prior_sigma(self) -> f64 {
        match self {
            // the kernel tables were measured on the same GPU models: within ~30%
            KnobParam::Compute | KnobParam::Memory => 0.3_f64.ln_1p(),
            // a curve measured on another box of the same kind: within ~50%
            KnobParam::Comm => 0.5_f64.ln_1p(),
            // SGLang's Python per layer is unknown a priori: a factor of 4 either way
            KnobParam::Cpu => 4.0_f64.ln(),
        }
    }
}

/// The physical bounds of every knob for one cost model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KnobBounds {
    pub compute: (f64, f64),
    pub memory: (f64, f64),
    pub comm: (f64, f64),
    pub cpu: (f64, f64),
}

/// Most host time one eager launch is believed to take, seconds (a Python layer doing real work
/// per op; beyond it a server log is not describing launches).
pub const MAX_PER_LAUNCH_S: f64 = 200e-6;

impl KnobBounds {
    /// Bounds for `model` (built with default knobs): the highest fitted efficiency fraction may
    /// reach but not pass 1 (the datasheet), collectives may be up to 2× faster (a better-tuned
    /// NCCL) or 3× slower than the curves, a launch costs between a raw `cudaLaunchKernel` and
    /// [`MAX_PER_LAUNCH_S`].
    pub fn of(model: &CostModel) -> KnobBounds {
        let (max_mf, max_cf) = model.max_fractions();
        let cpu = model.cpu_costs();
        KnobBounds {
            compute: (0.25, (1.0 / max_cf.max(1e-3)).max(1.0)),
            memory: (0.25, (1.0 / max_mf.max(1e-3)).max(1.0)),
            comm: (0.5, 3.0),
            cpu: (
                (cpu.raw_launch_s() / cpu.per_launch_s).min(1.0),
                (MAX_PER_LAUNCH_S / cpu.per_launch_s).max(1.0),
            ),
        }
    }

    /// (low, high) of one knob.
    pub fn of_knob(&self, p: KnobParam) -> (f64, f64) {
        match p {
            KnobParam::Compute => self.compute,
            KnobParam::Memory => self.memory,
            KnobParam::Comm => self.comm,
            KnobParam::Cpu => self.cpu,
        }
    }
}
