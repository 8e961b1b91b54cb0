//! What an answer rests on: which inputs were measured and which modelled from published
//! figures, the model's own error where it is known, and what an all-to-all backend needs from
//! the machine.

use crate::engine::{Engine, Knob};
use crate::machine::Machine;
use serde::{Deserialize, Serialize};

/// The model's own error where it is known: a calibration's residual on the user's measured
/// runs, or the records scoreboard's error for the model family. Carried into the confidence
/// line, beside the spread of the perturbed draws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnownModelError {
    /// Where the figure comes from (`calibration cal.json over 4 measured points`, `scoreboard:
    /// GLM-5 family, 12 records`).
    pub source: String,
    /// Typical relative error of a predicted throughput (0.3 = predictions ±30% off).
    pub relative_error: f64,
}

impl KnownModelError {
    /// From an RMS of ln(predicted / measured): e^rms − 1.
    pub fn from_rms_log_error(source: impl Into<String>, rms_log_error: f64) -> Self {
        KnownModelError {
            source: source.into(),
            relative_error: rms_log_error.abs().exp() - 1.0,
        }
    }
}

/// One line on where the machine's numbers come from.
pub fn machine_provenance(m: &Machine) -> String {
    let p = &m.profile.provenance;
    let what = match p.tool.as_str() {
        "preset" => {
            let synthesized = p.notes.iter().any(|n| n.starts_with("Synthesized"))
                || p.source
                    .as_deref()
                    .is_some_and(|s| s.starts_with("synthesized"));
            if synthesized {
                "a built-in preset, synthesized from published transfer figures and another box's \
                 measurements (nothing in it was measured on this machine)"
                    .to_string()
            } else {
                "a built-in preset, modelled from published figures and other boxes' measurements, \
                 not measured on this machine"
                    .to_string()
            }
        }
        "probe run" => format!(
            "measured by `probe run`{}{}",
            p.hostname
                .as_deref()
                .map_or(String::new(), |h| format!(" on {h}")),
            if p.created_utc.is_empty() {
                String::new()
            } else {
                format!(" at {}", p.created_utc)
            }
        ),
        t if t.starts_with("probe import") => format!(
            "imported by `{t}` from another tool's measurements ({})",
            p.source.as_deref().unwrap_or("source not recorded")
        ),
        other => format!("from `{other}`"),
    };
    format!("machine {}: {what}", m.name())
}

/// What the all-to-all backend needs and whether this machine has it, one line each; empty when
/// there is nothing to say. In `engine`'s words: SGLang's `--moe-a2a-backend` with its
/// `--deepep-mode`, vLLM's `--all2all-backend` whose value names the DeepEP mode.
pub fn a2a_notes(
    m: &Machine,
    engine: Engine,
    backend: &str,
    deepep_mode: Option<&str>,
) -> Vec<String> {
    let a2a = engine.flag(Knob::AllToAllBackend);
    if !backend.starts_with("deepep") {
        return vec![format!(
            "{a2a} {backend}: its dispatch/combine are costed from this machine's all-to-all curve; its own transport requirements are not checked"
        )];
    }
    let (given, low_latency) = match engine.rules().flag(Knob::DeepEpMode) {
        Some(mode_flag) => {
            let mode = deepep_mode.unwrap_or("auto");
            (
                format!("{a2a} {backend} ({mode_flag} {mode})"),
                format!(
                    "its low-latency mode (decode batches under `{mode_flag} auto`) needs an \
                     InfiniBand or RoCE NIC with GPUDirect RDMA (NVSHMEM IBGDA) for every GPU"
                ),
            )
        }
        None => (
            format!("{a2a} {backend}"),
            "its low-latency kernels need an InfiniBand or RoCE NIC with GPUDirect RDMA \
             (NVSHMEM IBGDA) for every GPU"
                .to_string(),
        ),
    };
    let devices: Vec<u32> = m.profile.devices.iter().map(|d| d.index).collect();
    if !m.p2p_ok(&devices) {
        vec![
            format!(
                "{given} needs P2P: on {} GPU pairs bounce through host memory. DeepEP's normal mode (prefill batches under `auto`) moves tokens between a node's GPUs over NVLink/P2P and will not run; {low_latency}, and GPUDirect RDMA needs the PCIe peer-to-peer this machine lacks",
                m.name()
            ),
            "the DeepEP rows are costed with this machine's all-to-all curve as if DeepEP ran; fix P2P (bare metal, or a VM with P2P passthrough) before trying it".into(),
        ]
    } else if !m.has_nvlink() {
        vec![
            format!(
                "{given}: {} has PCIe P2P but no NVLink; DeepEP's normal mode (prefill batches under `auto`) needs NVLink between a node's GPUs, and {low_latency}",
                m.name()
            ),
            "the DeepEP rows are costed with this machine's all-to-all curve as if DeepEP ran; check that the box has an RDMA NIC per GPU before trying it".into(),
        ]
    } else {
        Vec::new()
    }
}
