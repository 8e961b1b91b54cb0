//! NCCL collectives: which groups to measure, how nccl-tests sizes each op's buffers, what the
//! right answer is, and (in `worker`, a child process per group and environment) the runs.

mod check;
mod child;
pub mod cross;
mod gate;
mod group;
pub mod libsearch;
pub mod protocol;
pub mod runner;
mod timing;
pub mod transport;
pub mod verdict;
pub mod worker;

use models::profile::{CollectiveOp, DeviceInfo, LinkClass, PairLink};

/// `K=V K2=V2`: an NCCL environment as a shell would write it, or `defaults` when empty.
pub fn env_label<'a>(env: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    let s = env
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    if s.is_empty() { "defaults".into() } else { s }
}

/// Every collective the probe measures, in nccl-tests' order.
pub const OPS: [CollectiveOp; 5] = [
    CollectiveOp::AllReduce,
    CollectiveOp::AllGather,
    CollectiveOp::ReduceScatter,
    CollectiveOp::AllToAll,
    CollectiveOp::SendRecv,
];

/// Element counts (float32) of one op at one nccl-tests `size` on `n` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Elements in each rank's send buffer.
    pub send: usize,
    /// Elements in each rank's receive buffer.
    pub recv: usize,
    /// Elements per rank per peer (all-gather's sendcount, reduce-scatter's recvcount, the
    /// all-to-all chunk); equals `send` for all-reduce and send/recv.
    pub chunk: usize,
    /// The size nccl-tests reports after rounding to whole elements per rank.
    pub bytes: u64,
}

/// Bytes per element (float32, nccl-tests' default `-d float`).
pub const ELEM_BYTES: u64 = 4;

/// Buffer counts the way nccl-tests sizes them: all-reduce and send/recv move `size` bytes per
/// rank; all-gather's `size` is the gathered output, reduce-scatter's the input, all-to-all's
/// each rank's whole send buffer.
pub fn counts(op: CollectiveOp, size: u64, n: usize) -> Counts {
    let n = n.max(1);
    let elems = (size / ELEM_BYTES).max(1) as usize;
    match op {
        CollectiveOp::AllReduce | CollectiveOp::SendRecv => Counts {
            send: elems,
            recv: elems,
            chunk: elems,
            bytes: elems as u64 * ELEM_BYTES,
        },
        CollectiveOp::AllGather => {
            let c = (elems / n).max(1);
            Counts {
                send: c,
                recv: c * n,
                chunk: c,
                bytes: (c * n) as u64 * ELEM_BYTES,
            }
        }
        CollectiveOp::ReduceScatter => {
            let c = (elems / n).max(1);
            Counts {
                send: c * n,
                recv: c,
                chunk: c,
                bytes: (c * n) as u64 * ELEM_BYTES,
            }
        }
        CollectiveOp::AllToAll => {
            let c = (elems / n).max(1);
            Counts {
                send: c * n,
                recv: c * n,
                chunk: c,
                bytes: (c * n) as u64 * ELEM_BYTES,
            }
        }
    }
}

/// The value rank `rank` puts at index `i` of its send buffer: small integers, so every sum
/// over up to hundreds of ranks is exact in float32.
pub fn fill_value(rank: usize, i: usize) -> f32 {
    ((i * 7 + rank * 3) % 251) as f32
}

/// The value rank `rank` must hold at index `i` of its receive buffer after `op`.
pub fn expected_value(op: CollectiveOp, n: usize, rank: usize, i: usize, c: &Counts) -> f32 {
    match op {
        CollectiveOp::AllReduce => (0..n).map(|r| fill_value(r, i)).sum(),
        CollectiveOp::AllGather => fill_value(i / c.chunk, i % c.chunk),
        CollectiveOp::ReduceScatter => (0..n).map(|q| fill_value(q, rank * c.chunk + i)).sum(),
        CollectiveOp::AllToAll => {
            let peer = i / c.chunk;
            fill_value(peer, rank * c.chunk + i % c.chunk)
        }
        CollectiveOp::SendRecv => fill_value((rank + n - 1) % n, i),
    }
}

/// Orders link classes from best to worst for group placement (NVLink best, unknown worst).
fn class_rank(c: LinkClass) -> u32 {
    match c {
        LinkClass::X | LinkClass::NV(_) => 0,
        LinkClass::PIX => 1,
        LinkClass::PXB => 2,
        LinkClass::PHB => 3,
        LinkClass::NODE => 4,
        LinkClass::SYS => 5,
        LinkClass::Unknown => 6,
        LinkClass::NET => 7,
    }
}

/// The worst link class inside `group`.
pub fn worst_class(group: &[u32], links: &[PairLink]) -> Option<LinkClass> {
    if group.len() < 2 {
        return Some(LinkClass::X);
    }
    links
        .iter()
        .filter(|l| group.contains(&l.src) && group.contains(&l.dst))
        .map(|l| l.topology)
        .max_by_key(|c| class_rank(*c))
}

/// GPU groups of 2, 4 and all GPUs, placed the way a TP4×PP2 server places its tensor-parallel
/// groups: GPUs ordered by NUMA node then index, cut into aligned blocks, and of those blocks
/// the one whose worst internal link is best (same switch / NUMA node first).
pub fn choose_groups(devices: &[DeviceInfo], links: &[PairLink]) -> Vec<Vec<u32>> {
    let mut order: Vec<&DeviceInfo> = devices.iter().collect();
    order.sort_by_key(|d| (d.numa_node.unwrap_or(0), d.index));
    let ids: Vec<u32> = order.iter().map(|d| d.index).collect();
    let n = ids.len();
    let mut sizes: Vec<usize> = [2, 4, n]
        .into_iter()
        .filter(|&k| k >= 1 && k <= n)
        .collect();
    sizes.dedup();
    if n == 1 {
        sizes = vec![1];
    }
    let mut out = Vec::new();
    for k in sizes {
        let best = ids
            .chunks(k)
            .filter(|c| c.len() == k)
            .min_by_key(|c| worst_class(c, links).map(class_rank).unwrap_or(6))
            .map(|c| c.to_vec());
        if let Some(g) = best
            && !out.contains(&g)
        {
            out.push(g);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testbox::dev;

    /// The user's box.
    fn user_box() -> (Vec<DeviceInfo>, Vec<PairLink>) {
        crate::testbox::sockets_of_four(8)
    }

    #[test]
    fn groups_follow_numa_like_tp4_pp2() {
        let (devs, links) = user_box();
        let g = choose_groups(&devs, &links);
        assert_eq!(
            g,
            vec![vec![0, 1], vec![0, 1, 2, 3], (0..8).collect::<Vec<_>>()]
        );
        assert_eq!(worst_class(&g[1], &links), Some(LinkClass::NODE));
        assert_eq!(worst_class(&g[2], &links), Some(LinkClass::SYS));
    }

    #[test]
    fn groups_prefer_the_better_block() {
        // GPUs 0,1 cross a socket boundary here; 2,3 share a switch.
        let devs: Vec<DeviceInfo> = (0..4).map(|i| dev(i, 0)).collect();
        let mut links = Vec::new();
        for a in 0..4u32 {
            for b in 0..4u32 {
                if a != b {
                    let c = if a >= 2 && b >= 2 {
                        LinkClass::PIX
                    } else {
                        LinkClass::SYS
                    };
                    links.push(PairLink::new(a, b, c));
                }
            }
        }
        let g = choose_groups(&devs, &links);
        assert_eq!(g[0], vec![2, 3]);
    }

    #[test]
    fn one_gpu_is_one_rank_group() {
        assert_eq!(choose_groups(&[dev(0, 0)], &[]), vec![vec![0]]);
    }

    #[test]
    fn counts_match_nccl_tests() {
        let c = counts(CollectiveOp::AllGather, 1 << 20, 8);
        assert_eq!((c.send, c.recv, c.bytes), (32768, 262144, 1 << 20));
        let c = counts(CollectiveOp::ReduceScatter, 1 << 20, 8);
        assert_eq!((c.send, c.recv), (262144, 32768));
        let c = counts(CollectiveOp::AllReduce, 8, 8);
        assert_eq!((c.send, c.bytes), (2, 8));
        // Too small to split over 8 ranks: rounded up to one element each, as nccl-tests does.
        assert_eq!(counts(CollectiveOp::AllGather, 8, 8).bytes, 32);
    }

    #[test]
    fn expected_values_describe_the_collectives() {
        let n = 4;
        let c = counts(CollectiveOp::AllToAll, 64, n);
        // Rank 2's chunk from peer 1 is peer 1's chunk addressed to rank 2.
        assert_eq!(
            expected_value(CollectiveOp::AllToAll, n, 2, c.chunk, &c),
            fill_value(1, 2 * c.chunk)
        );
        let c = counts(CollectiveOp::AllReduce, 64, n);
        assert_eq!(
            expected_value(CollectiveOp::AllReduce, n, 0, 3, &c),
            (0..4).map(|r| fill_value(r, 3)).sum::<f32>()
        );
        // One rank: everything is the identity.
        let c1 = counts(CollectiveOp::SendRecv, 64, 1);
        assert_eq!(
            expected_value(CollectiveOp::SendRecv, 1, 0, 5, &c1),
            fill_value(0, 5)
        );
    }
}
