//! Communication of one layout: which collective runs on which GPU group, over which curve, and how
//! many bytes each moves (nccl-tests' `size` convention: the full buffer per rank for all-reduce,
//! the gathered output for all-gather, the input for reduce-scatter, the send buffer per rank for
//! all-to-all).
//!
//! - TP: each layer all-reduces its attention output and its MLP output, `T·h·2` bytes each (bf16).
//!   The vocab-parallel embedding adds one all-reduce on the first stage, the lm_head an
//!   all-gather of `tokens_head·vocab·2` logits bytes on the last.
//! - EP without `--moe-a2a-backend`: SGLang still ends the MoE in an all-reduce over the TP group,
//!   same bytes as TP.
//! - EP with `--moe-a2a-backend`: dispatch `T·k·h` bytes (fp8) and combine `T·k·h·2` bytes
//!   (bf16) over the EP group, i.e. per-rank buffers of `T·k·h/ep` and `T·k·h·2/ep`; without DP
//!   attention the combined tokens are all-gathered back (`T·h·2`) for the TP attention.
//! - Attention-DP: tokens are all-gathered before the MLP (`T·h·2`) and reduce-scattered after
//!   (`T·h·2`) instead of the MLP all-reduce; attention itself needs no collective.
//! - PP: SGLang hands `hidden_states` and `residual` (`2·T·h·2` bytes) to the next stage; each TP
//!   rank sends its `1/tp` slice to its peer and the receiving stage all-gathers them.
//! - Custom all-reduce: SGLang uses its own all-reduce for messages up to 8 MiB on 2, 4, 6 or 8
//!   GPUs when they have P2P and either NVLink or only 2 GPUs (it disables it on >2 PCIe-only
//!   GPUs), unless `--disable-custom-all-reduce`. On the HGX B200 / H200 / H100 boxes it is the
//!   kernel as measured ([`super::custom_ar_table`]); elsewhere modelled as a one-shot kernel: 5 µs (NVLink) or
//!   7.4 µs (PCIe, [`super::vllm_all_reduce::PCIE_LATENCY_S`]) plus bytes at the NCCL curve's large-message bandwidth (over PCIe on more than
//!   two GPUs `n − 1` times the bytes: every rank loads its peers' messages through its one
//!   link, [`super::vllm_all_reduce::real_one_shot_bytes_per_s`]), used when faster. A
//!   PCIe one-shot all-reduce on more GPUs (`ServerOptions::pcie_custom_all_reduce_max_bytes`,
//!   community builds) is the same kernel up to its own size cutoff. Where peer access is
//!   reported but routed through the host (`P2pState::Routed`) the engines' P2P check still
//!   passes, so the kernel runs, costed over that path ([`super::vllm_all_reduce::routed_one_shot`]) and taken even where
//!   NCCL would be faster; without peer access it is off, as SGLang turns it off.

use crate::engine::AllReduceRules;
use crate::machine::curve::CommCurve;
use crate::machine::placement::Placement;
use crate::machine::{Machine, PeerPath};
use crate::options::ServerOptions;
use models::Layout;
use models::profile::CollectiveOp;

/// Largest message SGLang's custom all-reduce takes (its default `max_size`, 8 MiB).
const CUSTOM_AR_MAX_BYTES: f64 = 8.0 * 1024.0 * 1024.0;

/// SGLang's custom all-reduce, when it is in use on a group.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CustomAllReduce {
    latency_s: f64,
    bytes_per_s: f64,
    max_bytes: f64,
    /// Over routed peer access: SGLang runs it whatever it costs (its P2P check passes).
    routed: bool,
    /// The kernel as measured on this GPU kind and group size over NVLink, in place of
    /// `latency_s` and `bytes_per_s` ([`super::custom_ar_table`]).
    measured: Option<&'static super::custom_ar_table::CustomArCurve>,
}

/// The collectives of one pipeline stage's TP group.
#[derive(Debug, Clone)]
pub struct StageComm {
    /// NCCL all-reduce over the stage's TP group.
    pub all_reduce: CommCurve,
    /// All-gather over the group (DP attention, logits, a2a without DP attention).
    pub all_gather: CommCurve,
    /// Reduce-scatter over the group (DP attention).
    pub reduce_scatter: CommCurve,
    /// All-to-all over the group (EP dispatch / combine).
    pub all_to_all: CommCurve,
    custom: Option<CustomAllReduce>,
    /// vLLM's custom all-reduce instead, for a vLLM server ([`super::vllm_all_reduce`]).
    vllm_custom: Option<super::vllm_all_reduce::VllmCustomAllReduce>,
    /// Send/recv between one GPU of this stage and its peer in the next stage.
    pub hop_send: CommCurve,
}

impl StageComm {
    /// All-reduce of `bytes` over the stage's TP group (custom all-reduce where SGLang uses it).
    pub fn all_reduce_s(&self, bytes: f64) -> f64 {
        let nccl = self.all_reduce.time_s(bytes);
        if let Some(v) = self.vllm_custom {
            return v.time_s(bytes, nccl);
        }
        match self.custom {
            Some(c) if bytes > 0.0 && bytes <= c.max_bytes => {
                let custom = match c.measured {
                    Some(t) => t.time_s(bytes),
                    None => c.latency_s + bytes / c.bytes_per_s,
                };
                if c.routed { custom } else { nccl.min(custom) }
            }
            _ => nccl,
        }
    }
}

/// The communication curves of every stage of a placed layout, plus notes on where they came from.
#[derive(Debug, Clone)]
pub struct LayoutComm {
    /// One entry per pipeline stage.
    pub stages: Vec<StageComm>,
    /// One line per distinct curve source (measured, derived, assumed).
    pub notes: Vec<String>,
}

impl LayoutComm {
    /// Resolves the curves of `layout` placed as `placement` on `machine`.
    pub fn new(
        machine: &Machine,
        layout: &Layout,
        placement: &Placement,
        opts: &ServerOptions,
    ) -> Self {
        let mut notes: Vec<String> = Vec::new();
        let mut note = |kind: &str, c: &CommCurve| {
            let line = format!("{kind}: {}", c.source);
            if !notes.contains(&line) {
                notes.push(line);
            }
        };
        let mut stages = Vec::with_capacity(placement.stages.len());
        for (s, group) in placement.stages.iter().enumerate() {
            let all_reduce = machine.collective(CollectiveOp::AllReduce, group);
            let all_gather = machine.collective(CollectiveOp::AllGather, group);
            let reduce_scatter = machine.collective(CollectiveOp::ReduceScatter, group);
            let all_to_all = machine.collective(CollectiveOp::AllToAll, group);
            let hop_send = match placement.stages.get(s + 1) {
                Some(next) => machine.stage_hop(group, next),
                None => CommCurve::free(),
            };
            if group.len() > 1 {
                note("all-reduce", &all_reduce);
                if layout.dp_attention || opts.moe_a2a_backend.is_some() {
                    note("all-gather", &all_gather);
                }
                if layout.dp_attention {
                    note("reduce-scatter", &reduce_scatter);
                }
                if opts.moe_a2a_backend.is_some() {
                    note("all-to-all", &all_to_all);
                }
            }
            if s + 1 < placement.stages.len() {
                note("pp send/recv", &hop_send);
            }
            let (custom, vllm_custom) = match opts.engine.rules().custom_all_reduce() {
                AllReduceRules::Vllm => {
                    let v = super::vllm_all_reduce::VllmCustomAllReduce::on(
                        machine,
                        group,
                        opts,
                        &all_reduce,
                    );
                    (None, v)
                }
                AllReduceRules::Sglang => {
                    (custom_all_reduce(machine, group, opts, &all_reduce), None)
                }
            };
            stages.push(StageComm {
                all_reduce,
                all_gather,
                reduce_scatter,
                all_to_all,
                custom,
                vllm_custom,
                hop_send,
            });
        }
        if stages.iter().any(|s| s.custom.is_some()) {
            let max = stages
                .iter()
                .filter_map(|s| s.custom.map(|c| c.max_bytes))
                .fold(0.0, f64::max);
            notes.push(if max < CUSTOM_AR_MAX_BYTES {
                format!(
                    "PCIe one-shot custom all-reduce in use for messages ≤ {:.0} KiB",
                    max / 1024.0
                )
            } else {
                "custom all-reduce in use for messages ≤ 8 MiB (SGLang default on this topology)"
                    .into()
            });
        }
        if let Some(t) = stages
            .iter()
            .find_map(|s| s.custom.and_then(|c| c.measured))
        {
            notes.push(t.note());
        }
        LayoutComm { stages, notes }
    }
}

/// Whether SGLang would run its custom all-reduce on `group`, and its cost model.
fn custom_all_reduce(
    machine: &Machine,
    group: &[u32],
    opts: &ServerOptions,
    nccl: &CommCurve,
) -> Option<CustomAllReduce> {
    let n = group.len();
    let nvlink = machine.has_nvlink();
    let max_bytes = match opts.pcie_custom_all_reduce_max_bytes {
        Some(cutoff) if !nvlink && n > 2 => cutoff as f64,
        None if !nvlink && n > 2 => 0.0,
        _ => CUSTOM_AR_MAX_BYTES,
    };
    let path = machine.engine_peer_path(group)?;
    let eligible = !opts.disable_custom_all_reduce && matches!(n, 2 | 4 | 6 | 8) && max_bytes > 0.0;
    eligible.then(|| match path {
        PeerPath::Real => CustomAllReduce {
            latency_s: if nvlink {
                5e-6
            } else {
                super::vllm_all_reduce::PCIE_LATENCY_S
            },
            bytes_per_s: super::vllm_all_reduce::real_one_shot_bytes_per_s(
                n,
                nvlink,
                nccl.bandwidth_bytes_per_s(),
            ),
            max_bytes,
            routed: false,
            measured: nvlink
                .then(|| super::custom_ar_table::CustomArCurve::find(&machine.gpu.name, n))
                .flatten(),
        },
        PeerPath::Routed {
            latency_s,
            bytes_per_s,
        } => {
            let (latency_s, bytes_per_s) =
                super::vllm_all_reduce::routed_one_shot(n, latency_s, bytes_per_s);
            CustomAllReduce {
                latency_s,
                bytes_per_s,
                max_bytes,
                routed: true,
                measured: None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_reduce_us(machine: &str, engine: crate::engine::Engine, bytes: f64) -> f64 {
        let m = Machine::resolve(machine).unwrap();
        let layout = Layout::tp(8);
        let opts = ServerOptions {
            engine,
            ..ServerOptions::default()
        };
        let c = LayoutComm::new(&m, &layout, &m.place(&layout).unwrap(), &opts);
        c.stages[0].all_reduce_s(bytes) * 1e6
    }

    /// SGLang's custom all-reduce on an HGX box is the kernel as measured: on 8 B200s a 64-token
    /// step's 786 KiB (hidden 6,144) takes 11.6–15 µs where the one-shot model gave ~6.7, and a
    /// one-token step's 12 KiB on 8 H200s ~3.7 µs where it gave 5.
    #[test]
    fn sglangs_custom_all_reduce_on_hgx_boxes_is_the_measured_kernel() {
        use crate::engine::Engine;
        let b200 = all_reduce_us("b200-x8", Engine::Sglang, 786_432.0);
        assert!((11.6..15.0).contains(&b200), "{b200}");
        let h200 = all_reduce_us("h200-x8", Engine::Sglang, 12_288.0);
        assert!((3.0..4.5).contains(&h200), "{h200}");
    }
}
