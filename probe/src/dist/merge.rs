//! Node 0's merge: every node's one-node profile renumbered to global device indices (node `r`'s
//! GPUs after node `r − 1`'s, `DeviceInfo::node = r`), links between GPUs of different nodes
//! added as `NET`, and each cross-node group's curves put together from its member nodes'
//! reports — per sample the slowest node (each node timed its own ranks), the worst status of
//! any node per point, a node without a report counting as `hang`.

use super::groups::{CrossGroup, NodeDevices, RankPlace, global_index};
use super::wire::NodePart;
use crate::nccl::protocol::{GroupReport, empty_points};
use crate::stats::summarize;
use models::profile::{
    CollectiveCurve, CollectivePoint, CollectiveStatus, LinkClass, MachineProfile, PairLink,
    Provenance,
};
use std::collections::BTreeMap;

/// One cross-node group's results: each member node's report, or why it has none.
pub struct CrossResult {
    pub group: CrossGroup,
    pub parts: BTreeMap<u32, Result<GroupReport, String>>,
}

fn severity(s: CollectiveStatus) -> u8 {
    match s {
        CollectiveStatus::Ok => 0,
        CollectiveStatus::WrongResult => 1,
        CollectiveStatus::Error => 2,
        CollectiveStatus::Hang => 3,
    }
}

/// One point from every node's view of it: `(point, raw samples µs if reported)`.
fn merge_point(views: &[(CollectivePoint, Option<&Vec<f64>>)], factor: f64) -> CollectivePoint {
    let worst = views
        .iter()
        .map(|(p, _)| p.status)
        .max_by_key(|s| severity(*s))
        .unwrap_or(CollectiveStatus::Hang);
    let first = views[0].0;
    if worst != CollectiveStatus::Ok && worst != CollectiveStatus::WrongResult {
        return CollectivePoint {
            time_us: crate::stats::missing(),
            algbw_gb_per_s: 0.0,
            busbw_gb_per_s: 0.0,
            status: worst,
            ..first
        };
    }
    let raw: Option<Vec<&Vec<f64>>> = views.iter().map(|(_, r)| *r).collect();
    let time_us = match raw.filter(|r| r.iter().all(|v| !v.is_empty())) {
        Some(r) => {
            let k = r.iter().map(|v| v.len()).min().unwrap_or(0);
            let slowest: Vec<f64> = (0..k)
                .map(|i| r.iter().map(|v| v[i]).fold(0.0, f64::max))
                .collect();
            summarize(&slowest)
        }
        // No raw samples (an older worker): the node whose median is slowest.
        None => views
            .iter()
            .map(|(p, _)| p.time_us)
            .max_by(|a, b| a.median.total_cmp(&b.median))
            .expect("at least one view"),
    };
    let algbw = first.bytes as f64 / (time_us.median * 1e-6) / 1e9;
    CollectivePoint {
        bytes: first.bytes,
        time_us,
        algbw_gb_per_s: algbw,
        busbw_gb_per_s: algbw * factor,
        status: worst,
    }
}

/// The curves of one cross-node group, and notes (each node's, prefixed, and what is missing).
pub fn merge_cross(r: &CrossResult, sizes: &[u64]) -> (Vec<CollectiveCurve>, Vec<String>) {
    let g = &r.group;
    let n = g.ranks.len();
    let mut notes = Vec::new();
    let mut ok: Vec<&GroupReport> = Vec::new();
    for node in g.nodes() {
        match r.parts.get(&node) {
            Some(Ok(rep)) => {
                notes.extend(rep.notes.iter().map(|x| format!("node {node}: {x}")));
                ok.push(rep);
            }
            Some(Err(why)) => notes.push(format!(
                "cross-node {} {:?}: node {node} has no results ({why}); recorded as hang",
                g.what, g.global_devices
            )),
            None => notes.push(format!(
                "cross-node {} {:?}: node {node} never reported; recorded as hang",
                g.what, g.global_devices
            )),
        }
    }
    let missing = ok.len() < g.nodes().len();
    let curves = g
        .ops
        .iter()
        .enumerate()
        .map(|(i, &op)| {
            let blank = empty_points(sizes, op, n, CollectiveStatus::Hang);
            let points = if ok.is_empty() {
                blank
            } else {
                (0..blank.len())
                    .map(|j| {
                        let mut views: Vec<(CollectivePoint, Option<&Vec<f64>>)> = ok
                            .iter()
                            .map(|rep| {
                                let p = rep
                                    .curves
                                    .get(i)
                                    .filter(|c| c.op == op)
                                    .and_then(|c| c.points.get(j))
                                    .copied()
                                    .unwrap_or(blank[j]);
                                (p, rep.samples_us.get(i).and_then(|s| s.get(j)))
                            })
                            .collect();
                        if missing {
                            views.push((blank[j], None));
                        }
                        merge_point(&views, op.busbw_factor(n as u32))
                    })
                    .collect()
            };
            CollectiveCurve {
                op,
                devices: g.global_devices.clone(),
                link_class: Some(LinkClass::NET),
                nccl_env: BTreeMap::new(),
                points,
            }
        })
        .collect();
    (curves, notes)
}

/// `profile` (node `rank`'s own) with every device index through `map` and its devices on
/// node `rank`.
pub fn renumber(profile: &MachineProfile, rank: u32, map: &dyn Fn(u32) -> u32) -> MachineProfile {
    let mut p = profile.clone();
    for d in &mut p.devices {
        d.index = map(d.index);
        d.node = rank;
    }
    for l in &mut p.links {
        l.src = map(l.src);
        l.dst = map(l.dst);
    }
    for h in &mut p.host_device {
        h.devices = h.devices.iter().map(|&d| map(d)).collect();
    }
    for d in &mut p.device_memory {
        d.device = map(d.device);
    }
    for c in &mut p.collectives {
        c.devices = c.devices.iter().map(|&d| map(d)).collect();
    }
    for g in &mut p.compute {
        g.device = map(g.device);
    }
    for m in &mut p.launch {
        m.device = map(m.device);
    }
    p
}

/// Each part's devices and links, as the group planners take them.
pub fn device_views(parts: &[NodePart]) -> Vec<NodeDevices<'_>> {
    parts
        .iter()
        .map(|p| NodeDevices {
            rank: p.node.rank,
            devices: &p.profile.devices,
            links: &p.profile.links,
        })
        .collect()
}

/// The global index of each (node, CUDA index) of `parts`.
pub fn index_of(parts: &[NodePart]) -> Vec<(RankPlace, u32)> {
    global_index(&device_views(parts))
}

/// Node `part`'s own profile in global numbering, with its node entry (a peer's `--out`).
pub fn node_profile(part: &NodePart, index: &[(RankPlace, u32)]) -> MachineProfile {
    let rank = part.node.rank;
    let map = |d: u32| global(index, rank, d);
    let mut p = renumber(&part.profile, rank, &map);
    let mut node = part.node.clone();
    node.devices = p.devices.iter().map(|d| d.index).collect();
    p.nodes = vec![node];
    p
}

fn global(index: &[(RankPlace, u32)], node: u32, device: u32) -> u32 {
    index
        .iter()
        .find(|(p, _)| p.node == node && p.device == device)
        .map(|(_, g)| *g)
        .unwrap_or(device)
}

/// One profile of every node (`parts` in node-rank order, node 0 first) with the cross-node
/// curves; `notes` are the run's own (how it was merged, the cross-node step).
pub fn merge(
    parts: &[NodePart],
    cross: Vec<CollectiveCurve>,
    mut notes: Vec<String>,
) -> MachineProfile {
    let index = index_of(parts);
    let head = &parts[0].profile;
    let mut out = MachineProfile::empty(Provenance {
        notes: Vec::new(),
        ..head.provenance.clone()
    });
    out.gpu_preset = head.gpu_preset.clone();
    for part in parts {
        let p = node_profile(part, &index);
        let mut node = p.nodes[0].clone();
        node.notes = part
            .profile
            .provenance
            .notes
            .iter()
            .chain(&part.node.notes)
            .cloned()
            .collect();
        let pv = &part.profile.provenance;
        for (what, here, there) in [
            (
                "driver",
                &head.provenance.driver_version,
                &pv.driver_version,
            ),
            ("CUDA", &head.provenance.cuda_version, &pv.cuda_version),
            ("NCCL", &head.provenance.nccl_version, &pv.nccl_version),
        ] {
            if here != there && there.is_some() {
                notes.push(format!(
                    "node {} has {what} {} where node 0 has {}",
                    node.rank,
                    there.as_deref().unwrap_or("?"),
                    here.as_deref().unwrap_or("?")
                ));
            }
        }
        if part.profile.gpu_preset != head.gpu_preset {
            out.gpu_preset = None;
            notes.push(format!(
                "node {} has other GPUs ({:?}) than node 0 ({:?}): no single GPU preset",
                node.rank, part.profile.gpu_preset, head.gpu_preset
            ));
        }
        out.devices.extend(p.devices);
        out.links.extend(p.links);
        out.host_device.extend(p.host_device);
        out.device_memory.extend(p.device_memory);
        out.collectives.extend(p.collectives);
        out.compute.extend(p.compute);
        out.launch.extend(p.launch);
        out.nodes.push(node);
    }
    for a in &out.devices {
        for b in out.devices.iter().filter(|b| b.node != a.node) {
            let mut l = PairLink::new(a.index, b.index, LinkClass::NET);
            l.evidence.push(format!(
                "GPU {} is on node {}, GPU {} on node {}: across the network (see the NET collectives)",
                a.index, a.node, b.index, b.node
            ));
            out.links.push(l);
        }
    }
    out.collectives.extend(cross);
    notes.insert(
        0,
        format!(
            "merged profile of {} nodes ({} GPUs): node r's GPUs follow node r-1's; each node's own notes are in nodes[].notes",
            parts.len(),
            out.devices.len()
        ),
    );
    out.provenance.notes = notes;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::profile::{CollectiveOp, DeviceInfo, NodeInfo, Stat};

    fn point(bytes: u64, us: f64, status: CollectiveStatus) -> CollectivePoint {
        CollectivePoint {
            bytes,
            time_us: Stat::exact(us),
            algbw_gb_per_s: 0.0,
            busbw_gb_per_s: 0.0,
            status,
        }
    }

    fn report(samples: Vec<f64>, status: CollectiveStatus) -> GroupReport {
        GroupReport {
            devices: vec![0],
            nccl_version: None,
            library_path: None,
            curves: vec![CollectiveCurve {
                op: CollectiveOp::AllReduce,
                devices: vec![0, 1],
                link_class: Some(LinkClass::NET),
                nccl_env: BTreeMap::new(),
                points: vec![point(1 << 20, samples[0], status)],
            }],
            notes: vec!["ok".into()],
            aborted: false,
            cross_group: Some(0),
            samples_us: vec![vec![samples]],
        }
    }

    fn group() -> CrossGroup {
        CrossGroup {
            id: 0,
            what: "one GPU per node".into(),
            ranks: vec![
                RankPlace { node: 0, device: 0 },
                RankPlace { node: 1, device: 0 },
            ],
            global_devices: vec![0, 1],
            ops: vec![CollectiveOp::AllReduce],
        }
    }

    #[test]
    fn the_slowest_node_per_sample_and_the_worst_status() {
        let mut parts = BTreeMap::new();
        parts.insert(
            0,
            Ok(report(vec![100.0, 300.0, 100.0], CollectiveStatus::Ok)),
        );
        parts.insert(
            1,
            Ok(report(vec![200.0, 100.0, 200.0], CollectiveStatus::Ok)),
        );
        let r = CrossResult {
            group: group(),
            parts,
        };
        let (curves, notes) = merge_cross(&r, &[1 << 20]);
        let p = curves[0].points[0];
        // Per sample max: 200, 300, 200 → median 200 µs; busbw = algbw × 2(n-1)/n = algbw.
        assert_eq!(p.time_us.median, 200.0);
        assert!((p.algbw_gb_per_s - (1u64 << 20) as f64 / 200e-6 / 1e9).abs() < 1e-9);
        assert_eq!(p.busbw_gb_per_s, p.algbw_gb_per_s);
        assert_eq!(curves[0].link_class, Some(LinkClass::NET));
        assert!(notes.contains(&"node 1: ok".to_string()));
        // One node hung: the point is a hang; a node without results: hang, and said.
        let mut parts = BTreeMap::new();
        parts.insert(0, Ok(report(vec![100.0], CollectiveStatus::Hang)));
        parts.insert(1, Err("worker killed".into()));
        let (curves, notes) = merge_cross(
            &CrossResult {
                group: group(),
                parts,
            },
            &[1 << 20],
        );
        assert_eq!(curves[0].points[0].status, CollectiveStatus::Hang);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("node 1 has no results (worker killed)"))
        );
        let (curves, _) = merge_cross(
            &CrossResult {
                group: group(),
                parts: BTreeMap::new(),
            },
            &[8, 1 << 20],
        );
        assert_eq!(curves[0].points.len(), 2);
        assert!(
            curves[0]
                .points
                .iter()
                .all(|p| p.status == CollectiveStatus::Hang)
        );
    }

    fn part(rank: u32, gpus: u32) -> NodePart {
        let mut p = MachineProfile::empty(Provenance {
            tool: "probe run".into(),
            notes: vec![format!("node {rank} note")],
            driver_version: Some(if rank == 0 { "580" } else { "575" }.into()),
            ..Default::default()
        });
        p.devices = (0..gpus)
            .map(|i| DeviceInfo {
                index: i,
                name: "H200".into(),
                memory_bytes: 1,
                ..Default::default()
            })
            .collect();
        p.links = if gpus > 1 {
            vec![
                PairLink::new(0, 1, LinkClass::NV(18)),
                PairLink::new(1, 0, LinkClass::NV(18)),
            ]
        } else {
            vec![]
        };
        p.launch = vec![models::profile::LaunchMeasurement {
            device: gpus - 1,
            kind: models::profile::LaunchKind::GraphNode,
            kernel: models::profile::LaunchKernel::Empty,
            shape: None,
            chain_length: 512,
            per_kernel_us: Stat::exact(0.5),
            gpu_per_kernel_us: None,
        }];
        NodePart {
            profile: p,
            node: NodeInfo {
                rank,
                hostname: Some(format!("h{rank}")),
                devices: (0..gpus).collect(),
                launcher: Some("flags".into()),
                ..Default::default()
            },
        }
    }

    #[test]
    fn nodes_are_renumbered_and_joined_by_net_links() {
        let parts = vec![part(0, 2), part(1, 2)];
        let m = merge(&parts, Vec::new(), vec!["run note".into()]);
        let idx: Vec<(u32, u32)> = m.devices.iter().map(|d| (d.index, d.node)).collect();
        assert_eq!(idx, vec![(0, 0), (1, 0), (2, 1), (3, 1)]);
        assert_eq!(m.nodes[1].devices, vec![2, 3]);
        assert!(
            m.links
                .iter()
                .any(|l| (l.src, l.dst, l.topology) == (2, 3, LinkClass::NV(18)))
        );
        // 2 × 2 ordered pairs across the nodes each way.
        assert_eq!(
            m.links
                .iter()
                .filter(|l| l.topology == LinkClass::NET)
                .count(),
            8
        );
        assert_eq!(
            m.launch.iter().map(|l| l.device).collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert!(m.nodes[1].notes.contains(&"node 1 note".to_string()));
        assert!(m.provenance.notes[0].starts_with("merged profile of 2 nodes (4 GPUs)"));
        assert!(
            m.provenance
                .notes
                .iter()
                .any(|n| n.contains("node 1 has driver 575"))
        );
        // A peer's own part keeps its node entry and global indices.
        let own = node_profile(&parts[1], &index_of(&parts));
        assert_eq!(own.devices[0].index, 2);
        assert_eq!(own.nodes.len(), 1);
        let back = MachineProfile::from_json_str(
            &serde_json::to_string(&m).unwrap(),
            std::path::Path::new("m.json"),
        )
        .unwrap();
        assert_eq!(back, m);
    }
}
