//! The P2P states of one machine side by side (issue 34): time per all-reduce over all its GPUs
//! by message size, on log-log axes, for `real` (the machine as profiled, where P2P works), `off`
//! (NCCL's SHM ring over the host path) and `routed` (NCCL's P2P ring through the host, and the
//! custom all-reduce's one-shot kernel over that path). Decode's messages are 10 KiB–1 MiB
//! (hidden size × 2 bytes × tokens in the step), where bus-bandwidth charts read as zero.

use crate::machine::{Machine, PeerPath};
use models::profile::{CollectiveOp, MachineProfile, P2pState};
use reports::profile::ChartSet;
use reports::{AnyChart, Axis, LineChart, Scale, Series};

/// Message sizes drawn: 4 KiB to 16 MiB, a point per power of two.
fn sizes_bytes() -> Vec<f64> {
    (12..=24).map(|e| f64::from(1u32 << e)).collect()
}

/// The machine `profile` put in `state`, `None` where it cannot be built.
fn in_state(label: &str, profile: &MachineProfile, state: P2pState) -> Option<Machine> {
    let p = crate::p2p_variant::with_state(profile, state, &|_, _| true, "report: P2P states");
    Machine::from_profile(&format!("{label}, P2P {state}"), p).ok()
}

/// Adds the chart of `label`'s machine (`profile`) to `set`, or says why it is not drawn.
pub fn all_reduce_by_state(label: &str, profile: &MachineProfile, set: &mut ChartSet) {
    let title = format!("All-reduce time by message size and P2P state — {label}");
    let Ok(own) = Machine::from_profile(label, profile.clone()) else {
        set.skip(title, "the profile does not build a machine");
        return;
    };
    let all = own.device_indices();
    if all.len() < 2 {
        set.skip(title, "one GPU: no all-reduce between GPUs");
        return;
    }
    let now = profile.p2p_state().unwrap_or(P2pState::Real);
    let curve = |m: &Machine| {
        let c = m.collective(CollectiveOp::AllReduce, &all);
        sizes_bytes()
            .into_iter()
            .map(|b| [b, c.time_s(b) * 1e6])
            .collect::<Vec<_>>()
    };
    let mut series = Vec::new();
    for (i, state) in [P2pState::Real, P2pState::Off, P2pState::Routed]
        .into_iter()
        .enumerate()
    {
        let m = if state == now {
            Some(own.clone())
        } else if state == P2pState::Real {
            None // working P2P cannot be made from a profile without it
        } else {
            in_state(label, profile, state)
        };
        let Some(m) = m else { continue };
        let mark = if state == now { " (this machine)" } else { "" };
        series.push(Series::new(format!("{state}: NCCL{mark}"), curve(&m)).with_colour_index(i));
        if let Some(PeerPath::Routed {
            latency_s,
            bytes_per_s,
        }) = m.engine_peer_path(&all)
        {
            let (l, b) =
                crate::cost::vllm_all_reduce::routed_one_shot(all.len(), latency_s, bytes_per_s);
            let pts = sizes_bytes()
                .into_iter()
                .map(|x| [x, (l + x / b) * 1e6])
                .collect();
            series
                .push(Series::new(format!("{state}: custom all-reduce"), pts).with_colour_index(3));
        }
    }
    let chart = AnyChart::LineChart(LineChart {
        title,
        x_axis: Axis::new("message size per rank", "", Scale::Log2Bytes),
        y_axis: Axis::new("time per all-reduce", "µs", Scale::Log10),
        series,
    });
    set.push(
        &format!("{label}-p2p-all-reduce"),
        format!(
            "All-reduce over all {} GPUs by message size in each P2P state (log-log): the machine \
             as profiled ({now}), and its pairs made `off` (NCCL's SHM ring over the host path) \
             and `routed` (peer access through the host: NCCL's P2P ring and the custom \
             all-reduce's one-shot kernel over it). Decode moves 10 KiB–1 MiB a message. {label}.",
            all.len()
        ),
        chart,
    );
}
