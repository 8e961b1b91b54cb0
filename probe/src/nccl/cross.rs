//! Cross-node groups in the NCCL worker: a group whose ranks live in several processes (one
//! per node), measured by the same one-worker-for-all-groups process with the same
//! non-blocking communicators, gate and checks as a node's own groups. What changes:
//! - the ranks are global and the unique id comes from node 0 through the rendezvous;
//! - before each group the worker says it is ready (`@probe-nccl-ready ID` on stdout) and waits
//!   for the parent's word on stdin (`go HEX-ID`, or `skip REASON` when a member node cannot
//!   take part), so every node starts a group together however long the others took with the
//!   previous one;
//! - every timed batch is preceded by an aligning all-reduce (see `group`), and each sample's
//!   time is reported raw, so node 0 can take the slowest node per sample when it merges;
//! - the worker runs with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`, and the parent keeps
//!   NCCL's net lines (which NICs, which transport).

use super::child::{ChildRun, run_child};
use super::protocol::{CrossHooks, GroupSpec, WorkerSpec};
use super::runner::collect_groups;
use crate::error::{ProbeError, Result};
use crate::plan::RunPlan;
use cudarc::nccl::sys as nc;
use std::collections::BTreeMap;
use std::time::Duration;

/// What the cross-node step left besides the reports (which went to the hooks).
#[derive(Debug, Default)]
pub struct CrossOutcome {
    /// NCCL's `NCCL_DEBUG=INFO` net lines from the workers.
    pub net_lines: Vec<String>,
    pub notes: Vec<String>,
}

/// A fresh NCCL unique id made in this process (node 0's probe): its bootstrap root listens here
/// until the group's ranks have connected.
pub fn unique_id() -> Result<Vec<u8>> {
    if !unsafe { nc::is_culib_present() } {
        return Err(ProbeError::MissingLibrary {
            library: "libnccl".into(),
            hint: "node 0 needs NCCL for the cross-node unique ids (pip install nvidia-nccl-cu13, or apt install libnccl2)".into(),
        });
    }
    let mut id = std::mem::MaybeUninit::<nc::ncclUniqueId>::uninit();
    let r = unsafe { nc::ncclGetUniqueId(id.as_mut_ptr()) };
    if r != nc::ncclResult_t::ncclSuccess {
        return Err(ProbeError::cuda("ncclGetUniqueId", r));
    }
    let id = unsafe { id.assume_init() };
    Ok(id.internal.iter().map(|&c| c as u8).collect())
}

/// The unique id from its bytes.
pub(super) fn to_nccl_id(bytes: &[u8]) -> nc::ncclUniqueId {
    let mut id = nc::ncclUniqueId { internal: [0; 128] };
    for (d, s) in id.internal.iter_mut().zip(bytes) {
        *d = *s as std::ffi::c_char;
    }
    id
}

/// The worker spec of this node's cross-node groups (defaults environment only: the network
/// path is what is measured, not NCCL's in-box variants).
pub fn cross_worker_spec(plan: &RunPlan, groups: Vec<GroupSpec>) -> WorkerSpec {
    WorkerSpec {
        groups,
        sizes: plan.nccl_sizes.clone(),
        warmup: plan.repeats.warmup,
        samples: plan.repeats.samples,
        min_bytes_per_sample: plan.repeats.min_bytes_per_sample,
        max_reps: plan.repeats.max_reps,
        timeout_s: plan.nccl_timeout_s,
        gated: plan.nccl_gated,
        nccl_env: BTreeMap::new(),
    }
}

/// Variables the cross-node workers run with so NCCL prints its net lines.
fn debug_env() -> Vec<(String, String)> {
    let mut env = vec![("NCCL_DEBUG".to_string(), "INFO".to_string())];
    if std::env::var_os("NCCL_DEBUG_SUBSYS").is_none() {
        env.push(("NCCL_DEBUG_SUBSYS".into(), "INIT,NET".into()));
    }
    env
}

/// The group id of the first group of `sub` without a report in `run` — the one a dead worker
/// was on (the rule `collect_groups` applies).
fn lost_group(sub: &WorkerSpec, run: &ChildRun) -> Option<u32> {
    let mut reported = run
        .reports
        .iter()
        .map(|r| r.cross_group)
        .collect::<Vec<_>>();
    sub.groups
        .iter()
        .filter_map(|g| g.cross.as_ref().map(|c| c.group_id))
        .find(|id| {
            let pos = reported.iter().position(|r| *r == Some(*id));
            pos.map(|p| reported.remove(p)).is_none()
        })
}

/// Runs this node's part of every cross-node group of `spec`, one worker for all of them
/// (restarted for the rest after one aborts, as for a node's own groups).
pub fn measure_cross(spec: &WorkerSpec, hooks: &mut dyn CrossHooks) -> Result<CrossOutcome> {
    let mut out = CrossOutcome::default();
    let env = debug_env();
    let per_group = Duration::from_secs_f64(spec.timeout_s * 2.0 + 600.0);
    let done = collect_groups(spec, |sub| {
        let run = run_child(sub, per_group, Some(&mut *hooks), &env)?;
        out.net_lines.extend(run.net_lines.iter().cloned());
        let lost = run.died.is_some() || run.reports.is_empty();
        if lost && let Some(id) = lost_group(sub, &run) {
            let why = run
                .died
                .clone()
                .unwrap_or_else(|| "worker exited without a report".into());
            hooks.failed(id, why)?;
        }
        Ok(run)
    })?;
    for (g, res) in done {
        if let Err(why) = res {
            out.notes.push(format!(
                "cross-node NCCL group on local GPUs {:?}: {why}; recorded as hang",
                g.devices
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_id_becomes_nccls_own_type_byte_for_byte() {
        let nccl = to_nccl_id(&[7u8; 128]);
        assert!(nccl.internal.iter().all(|&c| c as u8 == 7));
    }
}
