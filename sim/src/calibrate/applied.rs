//! A calibration applied to a prediction (`--calibration FILE`): its knobs must lie inside their
//! own physical bounds ([`KnobBounds`]) for the machine and model they are applied to, else the
//! file is refused naming the knob and the bounds (a `memory_scale` of 0 would make every
//! weight read free, a negative `cpu_scale` every launch); and a calibration fitted on another
//! machine, model or graph mode (eager vs CUDA graphs: the CPU knob is fitted to eager launches)
//! is said to be applied there.

use super::{CalibrateError, Calibration, KnobBounds, KnobParam};
use crate::engine::Knob;
use crate::options::ServerOptions;
use std::path::Path;

/// The graph mode of server options, in words.
pub fn graph_mode(opts: &ServerOptions) -> String {
    if opts.disable_cuda_graph {
        format!("eager mode ({})", opts.engine.flag(Knob::DisableCudaGraph))
    } else {
        "CUDA-graph mode".into()
    }
}

impl Calibration {
    /// Refuses a knob that is not a positive finite number, or lies outside `bounds` (the
    /// physical bounds of the cost model it is applied to, when it could be built).
    pub fn check_knobs(
        &self,
        path: &Path,
        bounds: Option<&KnobBounds>,
    ) -> Result<(), CalibrateError> {
        for p in KnobParam::ALL {
            let value = p.get(&self.knobs);
            let (low, high) = bounds.map_or((0.0, f64::INFINITY), |b| b.of_knob(p));
            let positive = value.is_finite() && value > 0.0;
            // a little slack: a fit that ended on a bound, then printed and read back
            let inside = value >= low * (1.0 - 1e-9) && value <= high * (1.0 + 1e-9);
            if !(positive && inside) {
                return Err(CalibrateError::KnobOutOfBounds {
                    path: path.display().to_string(),
                    knob: p.field(),
                    value: crate::plausible::shown(value),
                    low,
                    high,
                    meaning: p.meaning(),
                });
            }
        }
        Ok(())
    }

    /// One line when this calibration was fitted on another machine, model or graph mode than
    /// the prediction it is applied to; `None` when they match.
    pub fn mismatch(&self, machine: &str, model: &str, opts: &ServerOptions) -> Option<String> {
        let mut differs = Vec::new();
        if self.server.disable_cuda_graph != opts.disable_cuda_graph {
            differs.push(format!(
                "fitted in {}, applied in {}",
                graph_mode(&self.server),
                graph_mode(opts)
            ));
        }
        if self.model != model {
            differs.push(format!("fitted on {}, applied to {model}", self.model));
        }
        if self.machine != machine {
            differs.push(format!("fitted on {}, applied to {machine}", self.machine));
        }
        (!differs.is_empty()).then(|| {
            format!(
                "the calibration was {}: its knobs describe the box, model and mode it was fitted on, and may not hold here",
                differs.join("; ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Knobs;

    fn cal(knobs: Knobs) -> Calibration {
        Calibration {
            schema_version: super::super::CALIBRATION_SCHEMA_VERSION,
            engine: crate::engine::Engine::Sglang,
            knobs,
            fitted: vec![KnobParam::Cpu],
            knob_reports: Vec::new(),
            machine: "rtx-pro-6000-x8-baremetal".into(),
            model: "glm-4.7-fp8".into(),
            layout: "TP8".into(),
            server: ServerOptions {
                disable_cuda_graph: true,
                ..ServerOptions::default()
            },
            measured: Vec::new(),
            observations: Vec::new(),
            rms_log_error_before: 0.0,
            rms_log_error_after: 0.0,
            median_abs_error_pct: 0.0,
        }
    }

    #[test]
    fn knobs_outside_their_bounds_are_named() {
        let bounds = KnobBounds {
            compute: (0.25, 1.5),
            memory: (0.25, 1.4),
            comm: (0.5, 3.0),
            cpu: (0.1, 5.0),
        };
        let path = Path::new("cal.json");
        assert!(
            cal(Knobs::default())
                .check_knobs(path, Some(&bounds))
                .is_ok()
        );
        for (knobs, name) in [
            (
                Knobs {
                    memory_scale: 0.0,
                    ..Knobs::default()
                },
                "memory_scale = 0 ",
            ),
            (
                Knobs {
                    comm_time_scale: 1e300,
                    ..Knobs::default()
                },
                "comm_time_scale = 1.000e300 ",
            ),
            (
                Knobs {
                    cpu_scale: -3.0,
                    ..Knobs::default()
                },
                "cpu_scale = -3 ",
            ),
            (
                Knobs {
                    compute_scale: f64::NAN,
                    ..Knobs::default()
                },
                "compute_scale = NaN ",
            ),
        ] {
            let e = cal(knobs)
                .check_knobs(path, Some(&bounds))
                .unwrap_err()
                .to_string();
            assert!(e.contains(name) && e.contains("cal.json"), "{e}");
        }
        let e = cal(Knobs {
            cpu_scale: -3.0,
            ..Knobs::default()
        })
        .check_knobs(path, None)
        .unwrap_err()
        .to_string();
        assert!(e.contains("[0.000, inf]"), "{e}");
    }

    #[test]
    fn another_mode_model_or_machine_is_said() {
        let c = cal(Knobs::default());
        let eager = c.server.clone();
        assert_eq!(
            c.mismatch("rtx-pro-6000-x8-baremetal", "glm-4.7-fp8", &eager),
            None
        );
        let graphs = ServerOptions::default();
        let m = c.mismatch("b200-x8", "glm-5-nvfp4", &graphs).unwrap();
        for s in [
            "eager mode",
            "CUDA-graph mode",
            "glm-4.7-fp8",
            "glm-5-nvfp4",
            "b200-x8",
        ] {
            assert!(m.contains(s), "{m}");
        }
    }
}
