//! One node's whole multi-node run: join, measure itself, hand its part to node 0, take part in
//! the cross-node groups, and (node 0) merge and write, then release the others. Any failure on
//! any node after the join is told to the others (`abort`), so every node ends with one line.

use super::coordinator::{Coordinator, PeerHooks};
use super::groups::{CrossPlan, RankPlace, cross_plan};
use super::launcher::DistSpec;
use super::merge::{CrossResult, device_views, merge, merge_cross, node_profile};
use super::rendezvous::{Session, Timeouts, join};
use super::wire::{Hello, Msg, NodePart};
use crate::backend::Backend;
use crate::error::{ProbeError, Result};
use crate::nccl::cross::cross_worker_spec;
use crate::nccl::protocol::{CrossRanks, GroupSpec};
use crate::nic::{NetObservation, mark_used, parse_nccl_net};
use crate::plan::{RunPlan, Step};
use models::profile::{LinkClass, MachineProfile, NodeInfo};

/// What a node's run produced.
pub enum NodeOutcome {
    /// Node 0: the merged profile (already written by the `write` callback).
    Merged(MachineProfile),
    /// Another node: its own part in global numbering; node 0 wrote the merged profile to
    /// `merged_path` on its host.
    Part {
        profile: MachineProfile,
        merged_path: String,
    },
}

/// The plan as the hello states it: what every node must measure alike.
pub fn plan_key(plan: &RunPlan) -> String {
    let steps: Vec<&str> = plan.steps.iter().map(|s| s.name()).collect();
    format!(
        "steps {}{}, nccl sizes {}..{} B x{}, {} samples{}",
        steps.join(","),
        if plan.quick { ", --quick" } else { "" },
        plan.nccl_sizes.first().copied().unwrap_or(0),
        plan.nccl_sizes.last().copied().unwrap_or(0),
        plan.nccl_sizes.len(),
        plan.repeats.samples,
        if plan.no_peer_access {
            ", --no-peer-access"
        } else {
            ""
        }
    )
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
}

/// What a node's run reports as it goes: `progress` replaces the status line, `log` keeps a
/// line (a connection node 0 turned away, the join token it drew).
pub struct Output<'a> {
    pub progress: &'a mut dyn FnMut(String),
    pub log: &'a mut dyn FnMut(String),
}

/// Runs this node's part of the multi-node run `dist`. Node 0 calls `write` with the merged
/// profile before it lets the others go.
pub fn run_node(
    backend: &mut dyn Backend,
    plan: &RunPlan,
    dist: &DistSpec,
    timeouts: Timeouts,
    out: Output,
    write: &mut dyn FnMut(&MachineProfile) -> Result<String>,
) -> Result<NodeOutcome> {
    let Output { progress, log } = out;
    let hello = Hello {
        probe_version: env!("CARGO_PKG_VERSION").into(),
        schema_version: models::profile::PROFILE_SCHEMA_VERSION,
        node_rank: dist.node_rank,
        nnodes: dist.nnodes,
        hostname: hostname(),
        plan: plan_key(plan),
        // Filled in by the join: the job, this node's nonce, the proof for node 0's challenge.
        job: String::new(),
        nonce: String::new(),
        proof: String::new(),
    };
    progress(if dist.node_rank == 0 {
        format!(
            "node 0: waiting for {} more node(s) on port {}",
            dist.nnodes - 1,
            dist.init_addr.port
        )
    } else {
        format!(
            "node {}: joining node 0 at {}",
            dist.node_rank, dist.init_addr
        )
    });
    if dist.node_rank == 0
        && let Some(line) = dist.key.notice()
    {
        log(line);
    }
    let mut session = join(dist, &hello, timeouts, log)?;
    let result = if dist.node_rank == 0 {
        head(&mut session, backend, plan, dist, progress, write)
    } else {
        member(&mut session, backend, plan, dist, progress)
    };
    if let Err(e) = &result {
        session.tell_all(&Msg::Abort {
            reason: format!("node {}: {e}", dist.node_rank),
        });
    }
    result
}

/// Measures this node and describes it.
fn own_part(
    backend: &mut dyn Backend,
    plan: &RunPlan,
    dist: &DistSpec,
    progress: &mut dyn FnMut(String),
) -> Result<NodePart> {
    let profile = crate::run::run_probe(backend, plan, progress)?;
    let node = NodeInfo {
        rank: dist.node_rank,
        hostname: profile.provenance.hostname.clone(),
        devices: profile.devices.iter().map(|d| d.index).collect(),
        launcher: Some(dist.launcher.name().into()),
        net_transport: None,
        nics: backend.nics(),
        notes: dist.notes.clone(),
    };
    Ok(NodePart { profile, node })
}

/// This node's worker spec for the cross-node groups it has ranks in.
fn my_groups(plan: &RunPlan, cross: &CrossPlan, me: u32) -> crate::nccl::protocol::WorkerSpec {
    let groups = cross
        .groups
        .iter()
        .filter(|g| g.ranks.iter().any(|r| r.node == me))
        .map(|g| {
            let mine: Vec<(usize, u32)> = g
                .ranks
                .iter()
                .enumerate()
                .filter(|(_, r)| r.node == me)
                .map(|(i, r)| (i, r.device))
                .collect();
            GroupSpec {
                devices: mine.iter().map(|(_, d)| *d).collect(),
                link_class: Some(LinkClass::NET),
                cross: Some(CrossRanks {
                    group_id: g.id,
                    nranks: g.ranks.len() as u32,
                    ranks: mine.iter().map(|(i, _)| *i as u32).collect(),
                    global_devices: g.global_devices.clone(),
                    ops: g.ops.clone(),
                }),
            }
        })
        .collect();
    cross_worker_spec(plan, groups)
}

/// Node 0.
fn head(
    session: &mut Session,
    backend: &mut dyn Backend,
    plan: &RunPlan,
    dist: &DistSpec,
    progress: &mut dyn FnMut(String),
    write: &mut dyn FnMut(&MachineProfile) -> Result<String>,
) -> Result<NodeOutcome> {
    let mut parts = vec![own_part(backend, plan, dist, progress)?];
    progress("node 0: waiting for the other nodes' measurements".into());
    collect_parts(session, &mut parts)?;
    parts.sort_by_key(|p| p.node.rank);
    let mut cross = if plan.has(Step::Nccl) {
        cross_plan(&device_views(&parts))
    } else {
        CrossPlan::default()
    };
    cross.first_global = parts
        .iter()
        .scan(0u32, |next, p| {
            let first = *next;
            *next += p.profile.devices.len() as u32;
            Some(first)
        })
        .collect();
    session.tell_all(&Msg::Plan(cross.clone()));
    let spec = my_groups(plan, &cross, 0);
    let mut notes = Vec::new();
    let mut results = Vec::new();
    let mut net = std::collections::BTreeMap::new();
    if !cross.groups.is_empty() {
        let mut unique = backend.unique_ids();
        let mut coord_tick = |m: String| progress(m);
        let mut coord = Coordinator::new(session, &cross, &mut *unique, &mut coord_tick);
        let outcome = if spec.groups.is_empty() {
            crate::nccl::cross::CrossOutcome::default()
        } else {
            backend.nccl_cross(&spec, &mut coord)?
        };
        coord.finish_all()?;
        net.insert(0u32, (parse_nccl_net(&outcome.net_lines), outcome.notes));
        net.extend(std::mem::take(&mut coord.cross_done));
        for (g, parts) in cross.groups.iter().zip(std::mem::take(&mut coord.results)) {
            results.push(CrossResult {
                group: g.clone(),
                parts,
            });
        }
    }
    let mut curves = Vec::new();
    for r in &results {
        let (c, n) = merge_cross(r, &plan.nccl_sizes);
        curves.extend(c);
        notes.extend(n);
    }
    annotate_nets(&mut parts, &net, !cross.groups.is_empty());
    notes.extend(cross_notes(&cross, &parts));
    let merged = merge(&parts, curves, notes);
    let path = write(&merged)?;
    session.tell_all(&Msg::Done { profile_path: path });
    Ok(NodeOutcome::Merged(merged))
}

/// Node 0 waits for every other node's part; an abort or a stray message ends the run with who
/// sent it.
fn collect_parts(session: &mut Session, parts: &mut Vec<NodePart>) -> Result<()> {
    while (parts.len() as u32) < session.nnodes {
        match session.inbox.next(None)? {
            Some((from, Msg::Part(p))) if p.node.rank == from => parts.push(*p),
            Some((from, Msg::Abort { reason })) => {
                return Err(ProbeError::Dist(format!(
                    "{} stopped: {reason}",
                    session.inbox.label(from)
                )));
            }
            Some((from, other)) => {
                return Err(ProbeError::Dist(format!(
                    "{} sent {other:?} instead of its measurements",
                    session.inbox.label(from)
                )));
            }
            None => {}
        }
    }
    Ok(())
}

/// What NCCL's net lines said on each node (by rank), with the notes its run left.
type NetByNode = std::collections::BTreeMap<u32, (NetObservation, Vec<String>)>;

/// Each node's record of the network NCCL used (transport, NICs, its lines), or why unknown.
fn annotate_nets(parts: &mut [NodePart], net: &NetByNode, measured_cross: bool) {
    for part in parts {
        if let Some((obs, extra)) = net.get(&part.node.rank) {
            part.node.net_transport = obs.transport.clone();
            mark_used(&mut part.node.nics, obs);
            part.node.notes.extend(extra.iter().cloned());
            if !obs.lines.is_empty() {
                part.node
                    .notes
                    .push(format!("NCCL net lines: {}", obs.lines.join(" | ")));
            } else if measured_cross {
                part.node.notes.push("no NCCL net lines seen (NCCL_DEBUG_FILE set?): transport and NICs used unknown".into());
            }
        }
    }
}

/// The merged profile's notes on how the cross-node groups were run and each node's launcher.
fn cross_notes(cross: &CrossPlan, parts: &[NodePart]) -> Vec<String> {
    let mut notes = Vec::new();
    if !cross.groups.is_empty() {
        notes.push(format!(
            "cross-node NCCL: {} groups ({}), one at a time, ranks node-major; every timed batch after an aligning all-reduce, each sample's time the slowest node's; nccl-tests formulas over the whole group",
            cross.groups.len(),
            cross
                .groups
                .iter()
                .map(|g| format!("{} {:?}", g.what, g.global_devices))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    notes.extend(parts.iter().map(|p| {
        format!(
            "node {}: launcher {}",
            p.node.rank,
            p.node.launcher.as_deref().unwrap_or("?")
        )
    }));
    notes
}

/// Every other node.
fn member(
    session: &mut Session,
    backend: &mut dyn Backend,
    plan: &RunPlan,
    dist: &DistSpec,
    progress: &mut dyn FnMut(String),
) -> Result<NodeOutcome> {
    let me = dist.node_rank;
    let part = own_part(backend, plan, dist, progress)?;
    session.peer(0)?.send(&Msg::Part(Box::new(part.clone())))?;
    progress(format!("node {me}: waiting for node 0's cross-node plan"));
    let cross = match expect_from_head(session)? {
        Msg::Plan(p) => p,
        other => return Err(unexpected(&other, "the cross-node plan")),
    };
    let spec = my_groups(plan, &cross, me);
    let outcome = if spec.groups.is_empty() {
        crate::nccl::cross::CrossOutcome::default()
    } else {
        backend.nccl_cross(&spec, &mut PeerHooks { session })?
    };
    session.peer(0)?.send(&Msg::CrossDone {
        net: parse_nccl_net(&outcome.net_lines),
        notes: outcome.notes,
    })?;
    progress(format!(
        "node {me}: waiting for node 0 to write the profile"
    ));
    let merged_path = loop {
        match expect_from_head(session)? {
            Msg::Done { profile_path } => break profile_path,
            // Directives for a group this node's worker no longer waits for.
            Msg::Go { .. } | Msg::Skip { .. } => {}
            other => return Err(unexpected(&other, "the end")),
        }
    };
    // Node 0 is done with this node: its closing the connection is no longer an error.
    session.inbox.forget(0);
    let first = cross.first_global.get(me as usize).copied().unwrap_or(0);
    let index: Vec<(RankPlace, u32)> = part
        .profile
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            (
                RankPlace {
                    node: me,
                    device: d.index,
                },
                first + i as u32,
            )
        })
        .collect();
    Ok(NodeOutcome::Part {
        profile: node_profile(&part, &index),
        merged_path,
    })
}

/// The next message from node 0 (`Abort` as an error).
fn expect_from_head(session: &mut Session) -> Result<Msg> {
    loop {
        match session.inbox.next(None)? {
            Some((_, Msg::Abort { reason })) => {
                return Err(ProbeError::Dist(format!("node 0 stopped: {reason}")));
            }
            Some((_, m)) => return Ok(m),
            None => {}
        }
    }
}

fn unexpected(m: &Msg, waiting_for: &str) -> ProbeError {
    ProbeError::Dist(format!(
        "node 0 sent {m:?} while this node waited for {waiting_for}"
    ))
}
