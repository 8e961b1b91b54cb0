//! Which GPU pairs a `--quick` run measures in full. On 8 GPUs there are 56 ordered pairs, and
//! measuring each over every size was the largest term of the quick budget; pairs of the same
//! link class between the same NUMA nodes are expected to behave alike, so one of each gets the
//! whole quick size list while every other pair still gets its own small-copy latency, data
//! check and bandwidth at the largest quick size (so a bad or host-bounced pair is still caught
//! and classified from its own numbers).

use models::profile::{DeviceInfo, LinkClass, PairLink};

/// The key pairs are grouped by: NVML link class, source NUMA node, destination NUMA node.
pub type SampleKey = (LinkClass, Option<i32>, Option<i32>);

/// For each link (same order), whether it is the first ordered pair of its [`SampleKey`] and so
/// measured over every size. Loop links (one GPU's host bounce) are always sampled.
pub fn sampled_pairs(devices: &[DeviceInfo], links: &[PairLink]) -> Vec<bool> {
    let numa = |gpu: u32| {
        devices
            .iter()
            .find(|d| d.index == gpu)
            .and_then(|d| d.numa_node)
    };
    let mut seen: Vec<SampleKey> = Vec::new();
    links
        .iter()
        .map(|l| {
            let key = (l.topology, numa(l.src), numa(l.dst));
            if l.src == l.dst || !seen.contains(&key) {
                seen.push(key);
                true
            } else {
                false
            }
        })
        .collect()
}

/// Writes into each unsampled link's evidence which pair stood in for it, and returns the
/// profile note listing the sampled pairs.
pub fn annotate(devices: &[DeviceInfo], links: &mut [PairLink], sampled: &[bool]) -> String {
    let numa = |gpu: u32| {
        devices
            .iter()
            .find(|d| d.index == gpu)
            .and_then(|d| d.numa_node)
    };
    let key = |l: &PairLink| (l.topology, numa(l.src), numa(l.dst));
    let reps: Vec<(SampleKey, u32, u32)> = links
        .iter()
        .zip(sampled)
        .filter(|(_, s)| **s)
        .map(|(l, _)| (key(l), l.src, l.dst))
        .collect();
    for (l, _) in links.iter_mut().zip(sampled).filter(|(_, s)| !**s) {
        if let Some((_, s, d)) = reps.iter().find(|(k, _, _)| *k == key(l)) {
            l.evidence.push(format!(
                "--quick: bandwidth measured at the largest quick size only; GPU {s}→{d} (same link class and NUMA nodes) was measured over every quick size"
            ));
        }
    }
    let list: Vec<String> = reps
        .iter()
        .map(|((class, ns, nd), s, d)| {
            let n = |x: &Option<i32>| x.map_or("?".to_string(), |v| v.to_string());
            format!("{s}→{d} ({class:?}, NUMA {}→{})", n(ns), n(nd))
        })
        .collect();
    format!(
        "--quick P2P: every pair got latency, a data check and bandwidth at the largest quick size; these pairs, one per (link class, NUMA pair), got every quick size: {}",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testbox::dev;

    /// The user's box: 8 GPUs, 0–3 on NUMA 0, 4–7 on NUMA 1; NODE inside a socket, SYS across.
    #[test]
    fn eight_gpu_two_socket_box_samples_four_of_56_pairs() {
        let (devices, mut links) = crate::testbox::sockets_of_four(8);
        let sampled = sampled_pairs(&devices, &links);
        let picked: Vec<(u32, u32)> = links
            .iter()
            .zip(&sampled)
            .filter(|(_, s)| **s)
            .map(|(l, _)| (l.src, l.dst))
            .collect();
        assert_eq!(picked, vec![(0, 1), (0, 4), (4, 0), (4, 5)]);
        let note = annotate(&devices, &mut links, &sampled);
        assert!(note.contains("0→4 (SYS, NUMA 0→1)"), "{note}");
        let l73 = links.iter().find(|l| l.src == 7 && l.dst == 3).unwrap();
        assert!(l73.evidence[0].contains("GPU 4→0"), "{:?}", l73.evidence);
        assert!(links[0].evidence.is_empty());
    }

    #[test]
    fn loop_link_is_always_sampled() {
        let devices = vec![dev(0, 0)];
        assert_eq!(
            sampled_pairs(&devices, &[PairLink::new(0, 0, LinkClass::NODE)]),
            vec![true]
        );
    }
}
