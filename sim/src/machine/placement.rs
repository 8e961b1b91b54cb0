//! Which GPUs each pipeline stage's TP group gets, following the topology.
//!
//! GPUs are put in a chain where each next GPU is the closest unused one (by `nvidia-smi topo -m`
//! link class, then index), starting at GPU 0; consecutive runs of `tp` GPUs form the stages. On
//! the user's box (GPUs 0–3 NUMA 0, 4–7 NUMA 1) TP4×PP2 gets stages {0,1,2,3} and {4,5,6,7}: the
//! all-reduces stay inside a socket and only the one stage boundary crosses sockets.
//!
//! Across nodes the chain fills one node before it leaves it (NET is the farthest class), so TP
//! groups stay inside a box whenever the TP size divides the GPUs per node and pipeline stages
//! are what crosses boxes, as SGLang places `--tp 8 --pp-size 2 --nnodes 2` (node r runs stage r).
//! A layout of fewer GPUs than the machine ([`place_best`]) takes the best-placed run of the chain
//! started from any GPU: one replica, the other GPUs idle.

use models::profile::LinkClass;

/// Closeness rank of a link class: lower is closer (NVLink before any PCIe path, SYS last inside a node, NET across nodes).
pub fn link_rank(class: LinkClass) -> u32 {
    match class {
        LinkClass::X => 0,
        LinkClass::NV(_) => 1,
        LinkClass::PIX => 2,
        LinkClass::PXB => 3,
        LinkClass::PHB => 4,
        LinkClass::NODE => 5,
        LinkClass::Unknown => 6,
        LinkClass::SYS => 7,
        LinkClass::NET => 8,
    }
}

/// GPU groups of a layout: `stages[s]` lists the CUDA devices of stage `s`, TP rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// CUDA devices of each stage, TP rank order.
    pub stages: Vec<Vec<u32>>,
    /// Nodes the layout runs on (SGLang's `--nnodes`).
    pub nodes: u32,
    /// GPUs of the machine the layout leaves unused.
    pub idle_gpus: u32,
}

impl Placement {
    /// GPUs the layout runs on.
    pub fn gpus_used(&self) -> u32 {
        self.stages.iter().map(|s| s.len() as u32).sum()
    }

    /// The SGLang flags of `layout` placed so (`--nnodes` when it spans nodes).
    pub fn sglang_flags(&self, layout: &models::Layout) -> String {
        layout.sglang_flags_on_nodes(self.nodes)
    }

    /// The device pairs that hand activations from stage `s` to `s + 1` (TP rank to TP rank).
    pub fn hop_pairs(&self, s: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.stages[s]
            .iter()
            .copied()
            .zip(self.stages[s + 1].iter().copied())
    }
}

/// Orders `devices` into a nearest-neighbour chain under `class_of(a, b)`, from the lowest index.
pub fn topology_order(devices: &[u32], class_of: impl Fn(u32, u32) -> LinkClass) -> Vec<u32> {
    match devices.iter().min() {
        Some(&first) => topology_order_from(devices, first, class_of),
        None => Vec::new(),
    }
}

/// [`topology_order`] starting from `start` (one of `devices`).
pub fn topology_order_from(
    devices: &[u32],
    start: u32,
    class_of: impl Fn(u32, u32) -> LinkClass,
) -> Vec<u32> {
    let mut left: Vec<u32> = devices.to_vec();
    left.sort_unstable();
    let mut order = Vec::with_capacity(left.len());
    let Some(at) = left.iter().position(|&d| d == start) else {
        return order;
    };
    let mut cur = left.remove(at);
    order.push(cur);
    while !left.is_empty() {
        let anchor = order[0];
        let (pos, _) = left
            .iter()
            .enumerate()
            .min_by_key(|&(_, &d)| {
                (
                    link_rank(class_of(cur, d)),
                    link_rank(class_of(anchor, d)),
                    d,
                )
            })
            .expect("non-empty");
        cur = left.remove(pos);
        order.push(cur);
    }
    order
}

/// Splits the first `tp × pp` GPUs of `order` into `pp` stages of `tp` GPUs (`nodes` 1, no GPU
/// idle: the caller fills those in).
pub fn place(order: &[u32], tp: u32, pp: u32) -> Placement {
    let tp = tp as usize;
    Placement {
        stages: (0..pp as usize)
            .map(|s| order[s * tp..(s + 1) * tp].to_vec())
            .collect(),
        nodes: 1,
        idle_gpus: 0,
    }
}

/// The best `tp × pp` GPUs of `devices` for a layout that leaves some idle: of the chains started
/// from every GPU, the first `tp × pp` GPUs whose worst TP-group link is closest, then the closest
/// stage hand-offs, then the fewest nodes, then the lowest starting GPU.
pub fn place_best(
    devices: &[u32],
    tp: u32,
    pp: u32,
    class_of: impl Fn(u32, u32) -> LinkClass + Copy,
    node_of: impl Fn(u32) -> u32,
) -> Placement {
    let worst = |g: &[u32]| {
        let mut w = 0;
        for (i, &a) in g.iter().enumerate() {
            for &b in &g[i + 1..] {
                w = w.max(link_rank(class_of(a, b)));
            }
        }
        w
    };
    let mut starts: Vec<u32> = devices.to_vec();
    starts.sort_unstable();
    starts
        .iter()
        .map(|&s| place(&topology_order_from(devices, s, class_of), tp, pp))
        .min_by_key(|p| {
            let groups = p.stages.iter().map(|g| worst(g)).max().unwrap_or(0);
            let hops = (0..p.stages.len().saturating_sub(1))
                .flat_map(|s| p.hop_pairs(s).map(|(a, b)| link_rank(class_of(a, b))))
                .max()
                .unwrap_or(0);
            let mut nodes: Vec<u32> = p.stages.iter().flatten().map(|&d| node_of(d)).collect();
            nodes.sort_unstable();
            nodes.dedup();
            (groups, hops, nodes.len(), p.stages[0][0])
        })
        .expect("at least one GPU")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_sockets(a: u32, b: u32) -> LinkClass {
        if a == b {
            LinkClass::X
        } else if (a < 4) == (b < 4) {
            LinkClass::NODE
        } else {
            LinkClass::SYS
        }
    }

    #[test]
    fn two_socket_box_keeps_stages_inside_sockets() {
        let order = topology_order(&[0, 1, 2, 3, 4, 5, 6, 7], two_sockets);
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 6, 7]);
        let p = place(&order, 4, 2);
        assert_eq!(p.stages, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(p.hop_pairs(0).next(), Some((0, 4)));
    }

    #[test]
    fn interleaved_numbering_is_regrouped_by_socket() {
        // even GPUs on socket 0, odd on socket 1
        let cls = |a: u32, b: u32| match (a == b, a % 2 == b % 2) {
            (true, _) => LinkClass::X,
            (false, true) => LinkClass::NODE,
            (false, false) => LinkClass::SYS,
        };
        let order = topology_order(&[0, 1, 2, 3, 4, 5, 6, 7], cls);
        assert_eq!(order, vec![0, 2, 4, 6, 1, 3, 5, 7]);
    }
}
