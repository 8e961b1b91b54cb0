//! The protocol between the NCCL step's parent and its worker children: the spec a worker is
//! started with (JSON on its command line), the lines it prints back (a group report, a "ready"
//! line before a cross-node group) and the directive the parent answers a ready line with. Both
//! sides import it; neither imports the other for it.

use super::{OPS, counts};
use crate::error::Result;
use models::profile::{
    CollectiveCurve, CollectiveOp, CollectivePoint, CollectiveStatus, LinkClass,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Prefix of the worker's "ready for group ID" line.
pub const READY_PREFIX: &str = "@probe-nccl-ready ";

/// This process's place in one cross-node group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossRanks {
    /// The group's id in the run's cross-node plan.
    pub group_id: u32,
    /// Ranks of the whole communicator.
    pub nranks: u32,
    /// Global rank of each of this process's devices (`GroupSpec::devices`, same order).
    pub ranks: Vec<u32>,
    /// Global device index of every rank of the group, in rank order (the curves' `devices`).
    pub global_devices: Vec<u32>,
    /// The collectives measured on it.
    pub ops: Vec<CollectiveOp>,
}

/// What the parent tells a worker waiting at a group's start.
#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    /// Start, with this unique id (128 bytes).
    Go(Vec<u8>),
    /// Record the group as not measured, for this reason.
    Skip(String),
}

impl Directive {
    /// The stdin line for the worker.
    pub fn line(&self) -> String {
        match self {
            Directive::Go(id) => format!("go {}\n", crate::hex::hex(id)),
            Directive::Skip(why) => format!("skip {}\n", why.replace('\n', " ")),
        }
    }

    /// Parses a stdin line (`None`: end of input or not a directive: stop).
    pub fn parse(line: &str) -> Option<Directive> {
        let line = line.trim_end_matches(['\n', '\r']);
        if let Some(h) = line.strip_prefix("go ") {
            crate::hex::unhex(h.trim())
                .filter(|b| b.len() == 128)
                .map(Directive::Go)
        } else {
            line.strip_prefix("skip ")
                .map(|r| Directive::Skip(r.to_string()))
        }
    }
}

/// The node-level side of the cross-node step: the rendezvous behind each group's start, and
/// where each group's results go.
pub trait CrossHooks {
    /// This node's worker waits at group `group`'s start; blocks until every member node does.
    fn ready(&mut self, group: u32) -> Result<Directive>;
    /// This node's ranks' results for `group`.
    fn report(&mut self, group: u32, report: GroupReport) -> Result<()>;
    /// This node has no results for `group` (its worker died or was killed on it).
    fn failed(&mut self, group: u32, why: String) -> Result<()>;
}

/// Prefix of a group report line on the worker's stdout (NCCL_DEBUG output shares the stream).
pub const REPORT_PREFIX: &str = "@probe-nccl-group ";

/// One GPU group a worker measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSpec {
    /// CUDA device indices of the group (rank = position), or this process's devices of a
    /// cross-node group.
    pub devices: Vec<u32>,
    /// Worst link class inside the group, copied into the curves.
    pub link_class: Option<LinkClass>,
    /// For a cross-node group: the global ranks and the whole group.
    #[serde(default)]
    pub cross: Option<CrossRanks>,
}

impl GroupSpec {
    /// Ranks of the whole communicator.
    pub fn nranks(&self) -> usize {
        self.cross
            .as_ref()
            .map_or(self.devices.len(), |c| c.nranks as usize)
    }

    /// The devices the curves name (global indices for a cross-node group).
    pub fn output_devices(&self) -> Vec<u32> {
        self.cross
            .as_ref()
            .map_or_else(|| self.devices.clone(), |c| c.global_devices.clone())
    }

    /// The collectives measured on it.
    pub fn ops(&self) -> Vec<CollectiveOp> {
        self.cross
            .as_ref()
            .map_or_else(|| OPS.to_vec(), |c| c.ops.clone())
    }
}

/// What the parent asks one worker to measure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// The groups, measured in this order.
    pub groups: Vec<GroupSpec>,
    /// nccl-tests sizes in bytes.
    pub sizes: Vec<u64>,
    /// Untimed runs per size.
    pub warmup: u32,
    /// Timed samples per size.
    pub samples: u32,
    /// Bytes a sample should move at least (small sizes are batched).
    pub min_bytes_per_sample: u64,
    /// Most operations per sample.
    pub max_reps: u32,
    /// Seconds any single wait may take before the group is declared hung.
    pub timeout_s: f64,
    /// Queue each timed batch behind a gate so it runs back to back (see `gate`); `false`
    /// times the batch as the one host thread enqueues it (a diagnostic comparison).
    pub gated: bool,
    /// NCCL environment variables this worker was started with, copied into the curves.
    pub nccl_env: BTreeMap<String, String>,
}

/// What a worker prints for one group (one prefixed JSON line on stdout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupReport {
    /// The group's devices, as in its [`GroupSpec`].
    pub devices: Vec<u32>,
    /// `2.28.3`.
    pub nccl_version: Option<String>,
    /// The libnccl file actually mapped into the worker.
    pub library_path: Option<String>,
    /// One curve per op.
    pub curves: Vec<CollectiveCurve>,
    /// Remarks (hangs, wrong results, one-rank caveats, seconds spent).
    pub notes: Vec<String>,
    /// Whether the communicators were aborted (a hang or a failed call): the worker stops
    /// after this report.
    pub aborted: bool,
    /// The cross-node group this reports on.
    #[serde(default)]
    pub cross_group: Option<u32>,
    /// Cross-node groups: per curve, per point, this process's slowest-rank µs of each sample
    /// (node 0 takes the slowest node per sample).
    #[serde(default)]
    pub samples_us: Vec<Vec<Vec<f64>>>,
}

/// Points of every size of `op` with no measurement and `status`.
pub fn empty_points(
    sizes: &[u64],
    op: CollectiveOp,
    n: usize,
    status: CollectiveStatus,
) -> Vec<CollectivePoint> {
    sizes
        .iter()
        .map(|&s| CollectivePoint {
            bytes: counts(op, s, n).bytes,
            time_us: crate::stats::missing(),
            algbw_gb_per_s: 0.0,
            busbw_gb_per_s: 0.0,
            status,
        })
        .collect()
}

/// A curve of `group` under `spec`'s environment.
pub fn curve(
    spec: &WorkerSpec,
    group: &GroupSpec,
    op: CollectiveOp,
    points: Vec<CollectivePoint>,
) -> CollectiveCurve {
    CollectiveCurve {
        op,
        devices: group.output_devices(),
        link_class: group.link_class,
        nccl_env: spec.nccl_env.clone(),
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_round_trip_through_the_stdin_line() {
        let id: Vec<u8> = (0..128).map(|i| i as u8).collect();
        for d in [Directive::Go(id), Directive::Skip("node 2 failed".into())] {
            assert_eq!(Directive::parse(&d.line()), Some(d.clone()));
        }
        assert_eq!(Directive::parse("go 00ff"), None, "an id is 128 bytes");
        assert_eq!(Directive::parse(""), None);
    }
}
