//! Which node each GPU sits on and the link class of every GPU pair, resolved once per machine.
//!
//! A one-node profile (schema 1, or schema 2 with `nodes` empty) is one node; a multi-node profile
//! names each node's GPUs in `nodes[].devices` (global indices) and each GPU's node in
//! `devices[].node`, which must agree. GPUs on different nodes are `NET` apart whatever `links`
//! says; inside a node the class is the profile's `nvidia-smi topo -m` class, else NODE or SYS from
//! the NUMA nodes, else Unknown.

use models::profile::{LinkClass, MachineProfile};
use std::collections::BTreeMap;

/// The nodes of a machine and the link class of every pair of its GPUs.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Device index → position in `node_of` and the rows of `classes`.
    pos: BTreeMap<u32, usize>,
    /// Node rank of each position.
    node_of: Vec<u32>,
    /// Link class of every ordered pair of positions, row-major.
    classes: Vec<LinkClass>,
    /// Each node's GPUs (ascending), by node rank.
    nodes: BTreeMap<u32, Vec<u32>>,
}

impl Topology {
    /// The topology of a profile; `Err` names the field that is inconsistent.
    pub fn from_profile(p: &MachineProfile) -> Result<Topology, String> {
        let mut pos = BTreeMap::new();
        for (i, d) in p.devices.iter().enumerate() {
            if pos.insert(d.index, i).is_some() {
                return Err(format!(
                    "`devices[{i}].index` {} appears twice; every GPU needs its own index",
                    d.index
                ));
            }
        }
        let mut node_of: Vec<u32> = p.devices.iter().map(|d| d.node).collect();
        if !p.nodes.is_empty() {
            for (n, node) in p.nodes.iter().enumerate() {
                if p.nodes[..n].iter().any(|o| o.rank == node.rank) {
                    return Err(format!(
                        "`nodes[{n}].rank` {} is used by another entry; node ranks must differ",
                        node.rank
                    ));
                }
            }
            let mut seen = vec![false; p.devices.len()];
            for (n, node) in p.nodes.iter().enumerate() {
                for &d in &node.devices {
                    let Some(&i) = pos.get(&d) else {
                        return Err(format!(
                            "`nodes[{n}].devices` lists GPU {d}, which `devices` does not describe"
                        ));
                    };
                    if std::mem::replace(&mut seen[i], true) {
                        return Err(format!(
                            "GPU {d} is listed by two entries of `nodes`; each GPU sits on one node"
                        ));
                    }
                    if p.devices[i].node != node.rank {
                        return Err(format!(
                            "`devices[{i}].node` is {} but `nodes[{n}]` (rank {}) lists GPU {d}; \
                             re-run `probe run` on every node",
                            p.devices[i].node, node.rank
                        ));
                    }
                    node_of[i] = node.rank;
                }
            }
            if let Some(i) = seen.iter().position(|s| !s) {
                return Err(format!(
                    "GPU {} is in `devices` but in no entry of `nodes`",
                    p.devices[i].index
                ));
            }
        }
        let mut nodes: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (d, &i) in &pos {
            nodes.entry(node_of[i]).or_default().push(*d);
        }
        let n = p.devices.len();
        let mut classes = vec![LinkClass::X; n * n];
        for (a, &i) in &pos {
            for (b, &j) in &pos {
                classes[i * n + j] = if a == b {
                    LinkClass::X
                } else if node_of[i] != node_of[j] {
                    LinkClass::NET
                } else {
                    intra_class(p, *a, *b)
                };
            }
        }
        Ok(Topology {
            pos,
            node_of,
            classes,
            nodes,
        })
    }

    /// Link class between two GPUs of the machine (`None` when either is not one of them).
    pub fn class(&self, a: u32, b: u32) -> Option<LinkClass> {
        let (i, j) = (*self.pos.get(&a)?, *self.pos.get(&b)?);
        Some(self.classes[i * self.node_of.len() + j])
    }

    /// Node rank of a GPU.
    pub fn node_of(&self, d: u32) -> Option<u32> {
        self.pos.get(&d).map(|&i| self.node_of[i])
    }

    /// Number of nodes.
    pub fn node_count(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// GPUs of the smallest node (what one box of the machine holds).
    pub fn gpus_per_node(&self) -> u32 {
        self.nodes
            .values()
            .map(|v| v.len() as u32)
            .min()
            .unwrap_or(0)
    }

    /// Each node's GPUs, by node rank.
    pub fn nodes(&self) -> impl Iterator<Item = (u32, &[u32])> {
        self.nodes.iter().map(|(r, v)| (*r, v.as_slice()))
    }

    /// `devices` split by node, nodes in rank order, each part in the order given.
    pub fn split_by_node(&self, devices: &[u32]) -> Vec<(u32, Vec<u32>)> {
        let mut parts: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &d in devices {
            parts
                .entry(self.node_of(d).unwrap_or(0))
                .or_default()
                .push(d);
        }
        parts.into_iter().collect()
    }

    /// How many nodes `devices` touch.
    pub fn nodes_spanned(&self, devices: &[u32]) -> u32 {
        self.split_by_node(devices).len() as u32
    }
}

/// Class of two GPUs of one node: the profile's link, else from NUMA nodes.
pub(super) fn intra_class(p: &MachineProfile, a: u32, b: u32) -> LinkClass {
    if let Some(l) = p
        .links
        .iter()
        .find(|l| (l.src, l.dst) == (a, b) || (l.src, l.dst) == (b, a))
    {
        return l.topology;
    }
    let numa = |d: u32| {
        p.devices
            .iter()
            .find(|x| x.index == d)
            .and_then(|x| x.numa_node)
    };
    match (numa(a), numa(b)) {
        (Some(x), Some(y)) if x == y => LinkClass::NODE,
        (Some(_), Some(_)) => LinkClass::SYS,
        _ => LinkClass::Unknown,
    }
}
