//! The cross-node NCCL groups and the global device numbering. Node `r`'s GPUs follow node
//! `r − 1`'s, in each node's own device order. Groups, ranks in node-major order as SGLang
//! numbers a TP group spanning boxes:
//! - every node pair: its nodes' first GPUs, send/recv only (bandwidth and latency by size);
//! - one GPU per node: every collective;
//! - a TP group per node × nodes: each node's best block of the largest local group size below
//!   its GPU count (4 on 8-GPU nodes, 2 on 4-GPU ones; placed like `nccl::choose_groups`);
//! - all GPUs.
//!
//! Identical groups are measured once (with one GPU per node they all coincide; with two nodes
//! the pair is the one-GPU-per-node group).

use crate::nccl::{OPS, choose_groups};
use models::profile::{CollectiveOp, DeviceInfo, PairLink};
use serde::{Deserialize, Serialize};

/// Where one rank of a cross-node group lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankPlace {
    pub node: u32,
    /// CUDA device index on that node.
    pub device: u32,
}

/// One group whose ranks live on several nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossGroup {
    /// Position in the plan; messages name groups by it.
    pub id: u32,
    /// What it is, for notes (`node pair 0-1`, `one GPU per node`, …).
    pub what: String,
    /// Ranks in order.
    pub ranks: Vec<RankPlace>,
    /// Global device index of each rank.
    pub global_devices: Vec<u32>,
    pub ops: Vec<CollectiveOp>,
}

impl CrossGroup {
    /// The nodes with a rank in the group, ascending.
    pub fn nodes(&self) -> Vec<u32> {
        let mut n: Vec<u32> = self.ranks.iter().map(|r| r.node).collect();
        n.sort();
        n.dedup();
        n
    }
}

/// The cross-node step of a run: its groups in measurement order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CrossPlan {
    pub groups: Vec<CrossGroup>,
    /// Global index of each node's first GPU, by node rank (so every node can number its own
    /// part as the merged profile does).
    #[serde(default)]
    pub first_global: Vec<u32>,
}

/// One node's devices and links as its part reported them (local CUDA indices).
pub struct NodeDevices<'a> {
    pub rank: u32,
    pub devices: &'a [DeviceInfo],
    pub links: &'a [PairLink],
}

/// Global index of every (node, CUDA index), in node-rank order.
pub fn global_index(nodes: &[NodeDevices]) -> Vec<(RankPlace, u32)> {
    let mut out = Vec::new();
    let mut next = 0;
    for n in nodes {
        for d in n.devices {
            out.push((
                RankPlace {
                    node: n.rank,
                    device: d.index,
                },
                next,
            ));
            next += 1;
        }
    }
    out
}

/// The cross-node groups over `nodes` (in node-rank order).
pub fn cross_plan(nodes: &[NodeDevices]) -> CrossPlan {
    let index = global_index(nodes);
    let global = |p: &RankPlace| {
        index
            .iter()
            .find(|(q, _)| q == p)
            .map(|(_, g)| *g)
            .expect("every place is a listed device")
    };
    // Each node's devices in placement order, and its proper local groups by size.
    let local: Vec<(u32, Vec<Vec<u32>>)> = nodes
        .iter()
        .map(|n| (n.rank, choose_groups(n.devices, n.links)))
        .collect();
    let first = |rank: u32| -> Option<u32> {
        local
            .iter()
            .find(|(r, _)| *r == rank)
            .and_then(|(_, g)| g.first())
            .and_then(|g| g.first().copied())
    };
    let mut candidates: Vec<(String, Vec<RankPlace>, Vec<CollectiveOp>)> = Vec::new();
    let place = |node: u32, device: u32| RankPlace { node, device };
    for (i, a) in nodes.iter().enumerate() {
        for b in &nodes[i + 1..] {
            if let (Some(x), Some(y)) = (first(a.rank), first(b.rank)) {
                candidates.push((
                    format!("node pair {}-{}", a.rank, b.rank),
                    vec![place(a.rank, x), place(b.rank, y)],
                    vec![CollectiveOp::SendRecv],
                ));
            }
        }
    }
    let one: Vec<RankPlace> = nodes
        .iter()
        .filter_map(|n| first(n.rank).map(|d| place(n.rank, d)))
        .collect();
    candidates.push(("one GPU per node".into(), one, OPS.to_vec()));
    let min_gpus = nodes.iter().map(|n| n.devices.len()).min().unwrap_or(0);
    if let Some(k) = [4usize, 2].into_iter().find(|&k| k < min_gpus) {
        let mut ranks = Vec::new();
        for (rank, groups) in &local {
            if let Some(g) = groups.iter().find(|g| g.len() == k) {
                ranks.extend(g.iter().map(|&d| place(*rank, d)));
            }
        }
        candidates.push((
            format!("TP{k} per node x {} nodes", nodes.len()),
            ranks,
            OPS.to_vec(),
        ));
    }
    let all: Vec<RankPlace> = local
        .iter()
        .flat_map(|(rank, groups)| {
            let order = groups
                .iter()
                .max_by_key(|g| g.len())
                .cloned()
                .unwrap_or_default();
            order.into_iter().map(move |d| place(*rank, d))
        })
        .collect();
    candidates.push(("all GPUs".into(), all, OPS.to_vec()));
    let mut plan = CrossPlan::default();
    for (what, ranks, ops) in candidates {
        if ranks.len() < 2 {
            continue;
        }
        if let Some(same) = plan.groups.iter_mut().find(|g| g.ranks == ranks) {
            // The pair of a two-node run is its one-GPU-per-node group: measure it once, fully.
            for op in ops {
                if !same.ops.contains(&op) {
                    same.ops.push(op);
                }
            }
            same.ops.sort();
            same.what = format!("{}, {what}", same.what);
            continue;
        }
        plan.groups.push(CrossGroup {
            id: plan.groups.len() as u32,
            what,
            global_devices: ranks.iter().map(global).collect(),
            ranks,
            ops,
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(gpus: u32) -> (Vec<DeviceInfo>, Vec<PairLink>) {
        crate::testbox::sockets_of_four(gpus)
    }

    fn plan_of(shape: &[u32]) -> CrossPlan {
        let nodes: Vec<(Vec<DeviceInfo>, Vec<PairLink>)> = shape.iter().map(|&g| node(g)).collect();
        let views: Vec<NodeDevices> = nodes
            .iter()
            .enumerate()
            .map(|(r, (d, l))| NodeDevices {
                rank: r as u32,
                devices: d,
                links: l,
            })
            .collect();
        cross_plan(&views)
    }

    #[test]
    fn two_one_gpu_nodes_are_one_group_of_every_op() {
        let p = plan_of(&[1, 1]);
        assert_eq!(p.groups.len(), 1, "{p:?}");
        let g = &p.groups[0];
        assert_eq!(g.global_devices, vec![0, 1]);
        assert_eq!(g.ops, OPS.to_vec());
        assert!(g.what.contains("node pair 0-1") && g.what.contains("one GPU per node"));
    }

    #[test]
    fn four_nodes_get_six_pairs_then_the_spanning_groups() {
        let p = plan_of(&[1, 1, 1, 1]);
        let pairs: Vec<Vec<u32>> = p.groups[..6]
            .iter()
            .map(|g| g.global_devices.clone())
            .collect();
        assert_eq!(
            pairs,
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![0, 3],
                vec![1, 2],
                vec![1, 3],
                vec![2, 3]
            ]
        );
        assert!(
            p.groups[..6]
                .iter()
                .all(|g| g.ops == vec![CollectiveOp::SendRecv])
        );
        assert_eq!(p.groups.len(), 7);
        assert_eq!(p.groups[6].global_devices, vec![0, 1, 2, 3]);
        assert_eq!(p.groups[6].nodes(), vec![0, 1, 2, 3]);
        assert!(p.groups.iter().enumerate().all(|(i, g)| g.id == i as u32));
    }

    #[test]
    fn two_eight_gpu_boxes_span_tp4_and_all_sixteen() {
        let p = plan_of(&[8, 8]);
        let what: Vec<&str> = p.groups.iter().map(|g| g.what.as_str()).collect();
        assert_eq!(
            what,
            vec![
                "node pair 0-1, one GPU per node",
                "TP4 per node x 2 nodes",
                "all GPUs"
            ]
        );
        // Node 1's GPUs follow node 0's: its GPU 0 is global 8.
        assert_eq!(p.groups[0].global_devices, vec![0, 8]);
        assert_eq!(p.groups[1].global_devices, vec![0, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(p.groups[2].global_devices, (0..16).collect::<Vec<u32>>());
        assert_eq!(p.groups[1].ranks[4], RankPlace { node: 1, device: 0 });
    }
}
