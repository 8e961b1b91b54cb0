//! `sim advise --question p2p` (issue 34): what the GPUs' P2P state costs at the user's load, and
//! what to change. The layout is simulated on the machine in each state — `real` (peer access
//! works), `off` (NCCL's SHM ring over the host path), `routed` (peer access reported, every
//! transfer through the host) — each with NCCL alone and with the engine's custom all-reduce (the
//! community builds' PCIe one-shot kernel where the group is more than two PCIe GPUs), so the user
//! sees the order before choosing flags or fixing the hypervisor.

use crate::cost::{CostModel, Knobs};
use crate::machine::Machine;
use crate::options::ServerOptions;
use crate::workload::Workload;
use models::profile::P2pState;
use models::{Layout, ModelSpec};
use serde::{Deserialize, Serialize};

/// One state and all-reduce path, simulated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct P2pRow {
    pub state: P2pState,
    /// `NCCL` or `custom all-reduce` (with the flag that turns it on).
    pub all_reduce: String,
    /// The machine it ran on (the preset or profile in that state).
    pub machine: String,
    /// Output tok/s at the workload, `None` when it could not run (`why_not`).
    pub output_tok_s: Option<f64>,
    pub mean_tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// The row the machine and flags as given run.
    pub current: bool,
}

/// The answer: the machine's state, every row, one sentence and what to change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct P2pAnswer {
    pub layout: String,
    pub machine_state: Option<P2pState>,
    pub rows: Vec<P2pRow>,
    pub sentence: String,
    /// What to change to reach the best row (driver / hypervisor, flags), one line each.
    pub changes: Vec<String>,
    /// The layout's flags in the engine's spelling, for the `try:` line.
    #[serde(default)]
    pub launch_flags: String,
    /// What turns the custom all-reduce's one-shot PCIe kernel on, in the engine's words: an
    /// environment assignment before the command (vLLM's `VLLM_ENABLE_PCIE_ALLREDUCE=1`) or a
    /// flag (SGLang's `--enable-pcie-oneshot-allreduce`); the other empty.
    #[serde(default)]
    pub oneshot_env: String,
    #[serde(default)]
    pub oneshot_flag: String,
    /// The verdict as odds from the two rows' 80% intervals
    /// ([`crate::uncertainty::verdict::odds`]): the row the changes lead to against the one the
    /// machine runs now (or, with nothing to change, the fastest other row); "Depends: measure
    /// both" below the bar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub odds: Option<crate::uncertainty::verdict::Odds>,
    /// On a machine without working P2P (or with `--observed`): every state and path over the
    /// swept host paths, what brackets the observations and the probe line that decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_path_sweep: Option<super::host_path::HostPathSweep>,
}

impl P2pAnswer {
    /// The row the machine runs now and the row to weigh it against: the one the changes lead
    /// to, else the fastest other row that ran.
    pub fn contenders(&self) -> Option<(&P2pRow, &P2pRow)> {
        let tok = |r: &P2pRow| r.output_tok_s.unwrap_or(0.0);
        let cur = self
            .rows
            .iter()
            .find(|r| r.current && r.output_tok_s.is_some())?;
        let other = self
            .rows
            .iter()
            .filter(|r| !std::ptr::eq(*r, cur) && r.output_tok_s.is_some())
            .max_by(|a, b| tok(a).total_cmp(&tok(b)))?;
        Some((cur, other))
    }
}

/// The machines of the three states: the one given in its own state; `real` from `real_base`
/// where the machine lacks working P2P (a preset of the same box), else not simulated.
fn state_machines(
    machine: &Machine,
    real_base: Option<&Machine>,
) -> Vec<(P2pState, Result<Machine, String>)> {
    let own = machine.profile.p2p_state().unwrap_or(P2pState::Real);
    let base = if own == P2pState::Real {
        Some(machine)
    } else {
        real_base
    };
    [P2pState::Real, P2pState::Off, P2pState::Routed]
        .into_iter()
        .map(|s| {
            let m = if s == own {
                Ok(machine.clone())
            } else if s == P2pState::Real {
                base.cloned().ok_or_else(|| {
                    "no profile of this box with working P2P: probe it once P2P works".to_string()
                })
            } else {
                let from = base.unwrap_or(machine);
                let p = crate::p2p_variant::with_state(
                    &from.profile,
                    s,
                    &|_, _| true,
                    "sim advise --question p2p",
                );
                Machine::from_profile(&format!("{}, P2P {s}", from.name()), p)
                    .map_err(|e| e.to_string())
            };
            (s, m)
        })
        .collect()
}

/// What `--question p2p` is asked about: the machine, the layout and flags, the load.
pub struct P2pQuestion<'a> {
    pub machine: &'a Machine,
    /// The same box with working P2P, where `machine` lacks it (a preset), for the `real` row.
    pub real_base: Option<&'a Machine>,
    pub spec: &'a ModelSpec,
    pub layout: Layout,
    pub opts: &'a ServerOptions,
    pub knobs: Knobs,
    pub workload: &'a Workload,
    /// How the engine turns on the one-shot kernel for a PCIe group of more than two GPUs, and
    /// its cutoff.
    pub oneshot: crate::engine::PcieOneshotSwitch,
    /// Throughputs the user measured (`--observed`), for the host-path sweep's brackets.
    pub observed: &'a [super::host_path::Observed],
}

/// Simulates the layout on the machine in each P2P state, with NCCL and with the custom
/// all-reduce.
pub fn answer(q: &P2pQuestion<'_>) -> P2pAnswer {
    let P2pQuestion {
        machine,
        real_base,
        spec,
        layout,
        opts,
        knobs,
        workload,
        oneshot,
        observed,
    } = *q;
    let oneshot_bytes = oneshot.max_bytes;
    let own = machine.profile.p2p_state();
    let custom_now = !opts.disable_custom_all_reduce
        && (machine.has_nvlink()
            || layout.tp <= 2
            || opts.pcie_custom_all_reduce_max_bytes.is_some());
    let nccl_opts = ServerOptions {
        disable_custom_all_reduce: true,
        pcie_custom_all_reduce_max_bytes: None,
        ..opts.clone()
    };
    let custom_opts = ServerOptions {
        disable_custom_all_reduce: false,
        pcie_custom_all_reduce_max_bytes: Some(oneshot_bytes),
        ..opts.clone()
    };
    let mut rows = Vec::new();
    let custom_path = format!("custom all-reduce ({})", oneshot.words());
    for (state, m) in state_machines(machine, real_base) {
        for (custom, o) in [(false, &nccl_opts), (true, &custom_opts)] {
            let path = if custom {
                custom_path.as_str()
            } else {
                "NCCL (--disable-custom-all-reduce)"
            };
            let mut row = P2pRow {
                state,
                all_reduce: path.into(),
                machine: m.as_ref().map_or("—".into(), |m| m.name().to_string()),
                output_tok_s: None,
                mean_tpot_ms: None,
                why_not: None,
                current: Some(state) == own.or(Some(P2pState::Real)) && custom == custom_now,
            };
            let run = m.clone().and_then(|m| {
                let cm = CostModel::new(&m, spec, layout, o, knobs).map_err(|e| e.to_string())?;
                crate::serving::simulate(&cm, o, workload).map_err(|e| e.to_string())
            });
            match run {
                Ok(r) => {
                    row.output_tok_s = Some(r.output_throughput);
                    row.mean_tpot_ms = Some(r.mean_tpot_ms);
                }
                Err(e) => row.why_not = Some(e),
            }
            rows.push(row);
        }
    }
    let (sentence, changes) = verdict(&rows, own);
    // the VM question: which host path the machine's numbers need, and the probe line that says
    let unexplained = own.is_some_and(|s| s != P2pState::Real) || !observed.is_empty();
    let host_path_sweep = unexplained.then(|| {
        super::host_path::sweep(&super::host_path::SweepQuestion {
            base: real_base.unwrap_or(machine),
            spec,
            layout,
            opts,
            knobs,
            workload,
            oneshot_bytes,
            observed,
        })
    });
    P2pAnswer {
        layout: layout.short_name(),
        machine_state: own,
        rows,
        sentence,
        changes,
        launch_flags: String::new(),
        oneshot_env: oneshot.env.to_string(),
        oneshot_flag: oneshot.flag.to_string(),
        odds: None,
        host_path_sweep,
    }
}

/// One sentence on the current row against the best, and what to change to get there.
fn verdict(rows: &[P2pRow], own: Option<P2pState>) -> (String, Vec<String>) {
    let tok = |r: &P2pRow| r.output_tok_s.unwrap_or(0.0);
    let ran = |r: &&P2pRow| r.output_tok_s.is_some();
    let best = rows
        .iter()
        .filter(ran)
        .max_by(|a, b| tok(a).total_cmp(&tok(b)));
    let current = rows.iter().find(|r| r.current).filter(ran);
    let (Some(best), Some(cur)) = (best, current) else {
        return (
            "no state could be simulated at this load".into(),
            Vec::new(),
        );
    };
    let (b, c) = (tok(best), tok(cur));
    let mut changes = Vec::new();
    // within 1% is no reason to change anything: the model is not that sure
    let best = if b <= 1.01 * c { cur } else { best };
    if best.state != cur.state {
        changes.push(match (cur.state, best.state) {
            (_, P2pState::Real) => "make P2P work: on bare metal, IOMMU off or in passthrough (`iommu=pt`) and ACS off on the GPUs' switches; in a VM, give the GPUs a GPUDirect clique (QEMU `x-nv-gpudirect-clique`) or run on the host".into(),
            (_, P2pState::Off) => "turn NCCL's P2P off (`NCCL_P2P_DISABLE=1`): its SHM transport beats the routed peer path here".into(),
            (_, P2pState::Routed) => "peer access through the host beats NCCL's SHM here: leave NCCL_P2P_DISABLE unset".into(),
        });
    }
    if best.all_reduce != cur.all_reduce {
        changes.push(format!("all-reduce: {}", best.all_reduce));
    }
    let state = own.map_or("not classified (assumed real)".to_string(), |s| {
        s.to_string()
    });
    let sentence = if changes.is_empty() {
        format!("P2P {state}: already the fastest of the states and paths here ({c:.0} tok/s)")
    } else {
        format!(
            "P2P {state} with {}: {c:.0} tok/s; P2P {} with {}: {b:.0} tok/s ({:+.0}%)",
            cur.all_reduce,
            best.state,
            best.all_reduce,
            (b / c.max(1e-9) - 1.0) * 100.0
        )
    };
    (sentence, changes)
}
