//! The two 8× RTX PRO 6000 Blackwell Server presets: bare metal with P2P (NCCL curves measured on
//! another owner's bare-metal box) and the user's Proxmox VM where P2P bounces through host memory
//! (synthesized: those bare-metal curves with each hop made a host-staged copy; nothing of it was
//! measured in the VM).

use super::{all_pairs, curve, devices, profile, round3};
use models::MachineProfile;
use models::profile::{
    CollectiveOp, Direction, LinkClass, PairClass, PairLink, SizePoint, Stat, TransferCurve,
    TransferMode,
};
use std::collections::BTreeMap;
use std::path::Path;

pub const GPU_NAME: &str = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
/// user-box.json: "97887 MiB each".
pub const GPU_MEMORY_MIB: u64 = 97887;
pub const GPU_PRESET: &str = "rtx-pro-6000-server";

/// Published P2P figures (observations/README.md): one way within a socket 53–56 GB/s, across 39–51.
const P2P_NODE_GB_PER_S: Stat = Stat {
    median: 54.5,
    p10: 53.0,
    p90: 56.0,
    samples: 1,
};
const P2P_SYS_GB_PER_S: Stat = Stat {
    median: 45.0,
    p10: 39.0,
    p90: 51.0,
    samples: 1,
};
/// Both ways at once within a socket: 103–111 GB/s.
const P2P_NODE_BIDIR_GB_PER_S: Stat = Stat {
    median: 107.0,
    p10: 103.0,
    p90: 111.0,
    samples: 1,
};
/// P2P latency 0.36–0.45 µs with P2P.
pub const P2P_LATENCY_US: Stat = Stat {
    median: 0.40,
    p10: 0.36,
    p90: 0.45,
    samples: 1,
};
/// Latency of a small GPU→GPU copy without P2P (staged through host memory): ~14 µs.
const STAGED_LATENCY_US: f64 = 14.0;
/// Host-staged copies one way: ~37 GB/s on Gen5 H100s (~20–22 on Gen4 cards); the RTX PRO 6000 is
/// Gen5 x16 too.
const STAGED_GB_PER_S: f64 = 37.0;
/// Size the single published link figures are put at (large enough to be bandwidth-bound).
const LINK_FIGURE_BYTES: u64 = 256 << 20;

/// nccl-tests times of the shared bare-metal file, fp16 ("half") rows, by (op, GPU count).
pub struct Measured {
    pub curves: BTreeMap<(CollectiveOp, u32), Vec<(u64, f64)>>,
}

impl Measured {
    pub fn time_us(&self, op: CollectiveOp, n: u32, bytes: u64) -> f64 {
        self.curves[&(op, n)]
            .iter()
            .find(|(b, _)| *b == bytes)
            .map(|(_, t)| *t)
            .unwrap_or_else(|| panic!("no {op:?} n={n} point at {bytes} B"))
    }

    /// Bus bandwidth at the largest measured size, GB/s.
    fn peak_busbw(&self, op: CollectiveOp, n: u32) -> f64 {
        let (b, t) = *self.curves[&(op, n)].last().expect("non-empty curve");
        b as f64 / (t * 1e-6) / 1e9 * op.busbw_factor(n)
    }
}

/// Reads the fp16 records of `nccl-rtx-pro-6000-baremetal.json`.
pub fn read_baremetal(path: &Path) -> anyhow::Result<Measured> {
    let text = std::fs::read_to_string(path)?;
    let v: serde_json::Value = serde_json::from_str(&text)?;
    let records = v["records"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("no `records` array"))?;
    let mut curves = BTreeMap::new();
    for r in records {
        let id = r["id"].as_str().unwrap_or_default();
        if !id.contains("-half-") {
            continue;
        }
        let op = match r["collective"].as_str() {
            Some("all_reduce") => CollectiveOp::AllReduce,
            Some("all_gather") => CollectiveOp::AllGather,
            Some("reduce_scatter") => CollectiveOp::ReduceScatter,
            Some("alltoall") => CollectiveOp::AllToAll,
            other => anyhow::bail!("record {id}: unknown collective {other:?}"),
        };
        let n = r["gpus"]["count"]
            .as_u64()
            .ok_or_else(|| anyhow::anyhow!("record {id}: no gpus.count"))? as u32;
        let mut pts = Vec::new();
        for p in r["points"].as_array().into_iter().flatten() {
            match (p["bytes"].as_u64(), p["time_us"].as_f64()) {
                (Some(b), Some(t)) if t > 0.0 => pts.push((b, t)),
                _ => anyhow::bail!("record {id}: a point lacks bytes or a positive time_us"),
            }
        }
        pts.sort_by_key(|p| p.0);
        curves.insert((op, n), pts);
    }
    anyhow::ensure!(!curves.is_empty(), "no fp16 (`-half-`) records found");
    Ok(Measured { curves })
}

fn same_socket(a: u32, b: u32) -> bool {
    (a < 4) == (b < 4)
}

fn topo(a: u32, b: u32) -> LinkClass {
    if same_socket(a, b) {
        LinkClass::NODE
    } else {
        LinkClass::SYS
    }
}

/// Group of the first `n` GPUs: within socket 0 up to 4 GPUs, across both sockets for 8.
fn group(n: u32) -> (Vec<u32>, LinkClass) {
    (
        (0..n).collect(),
        if n <= 4 {
            LinkClass::NODE
        } else {
            LinkClass::SYS
        },
    )
}

/// One-way P2P bandwidth on the worst hop of an `n`-GPU ring (GB/s).
fn ring_p2p_gb_per_s(n: u32) -> f64 {
    if n <= 4 {
        P2P_NODE_GB_PER_S.median
    } else {
        P2P_SYS_GB_PER_S.median
    }
}

/// The two send/recv pairs every preset carries: within a socket and across sockets.
const SENDRECV_PAIRS: [([u32; 2], LinkClass); 2] =
    [([0, 1], LinkClass::NODE), ([3, 4], LinkClass::SYS)];

fn p2p_gb_per_s(class: LinkClass) -> f64 {
    if class == LinkClass::NODE {
        P2P_NODE_GB_PER_S.median
    } else {
        P2P_SYS_GB_PER_S.median
    }
}

const SOURCES: [&str; 3] = [
    "collectives: data/observations/nccl-rtx-pro-6000-baremetal.json (NCCL 2.29.2 nccl-tests fp16 \
     out-of-place times on a bare-metal 8x RTX PRO 6000 Blackwell Server, collected by NVIDIA's \
     aiconfigurator: ai-dynamo/aiconfigurator rtx_pro_6000_server/comm/nccl/2.29.2/nccl_perf.parquet \
     @095f58a); algbw/busbw recomputed with the nccl-tests formulas",
    "links: published RTX PRO 6000 P2P figures quoted in data/observations/README.md (one way \
     53-56 GB/s within a socket, 103-111 GB/s both ways, 39-51 GB/s across sockets; latency \
     0.36-0.45 us with P2P, ~14 us without)",
    "topology: the user's nvidia-smi topo -m (data/observations/user-box.json): NODE within \
     GPUs 0-3 / 4-7, SYS across, NUMA 0 / 1; 97887 MiB per GPU; compute capability 12.0",
];

fn baremetal_link(s: u32, d: u32) -> PairLink {
    let class = topo(s, d);
    let one_way = if class == LinkClass::NODE {
        P2P_NODE_GB_PER_S
    } else {
        P2P_SYS_GB_PER_S
    };
    let mut curves = vec![figure_curve(
        TransferMode::CopyEngine,
        Direction::Unidirectional,
        one_way,
    )];
    if class == LinkClass::NODE {
        curves.push(figure_curve(
            TransferMode::CopyEngine,
            Direction::Bidirectional,
            P2P_NODE_BIDIR_GB_PER_S,
        ));
    }
    published_p2p_link((s, d, class), P2P_LATENCY_US, curves)
}

/// A pair with real peer access whose figures are published, not measured on the box: its
/// copy-engine latency and curves.
pub fn published_p2p_link(
    (src, dst, topology): (u32, u32, LinkClass),
    latency_us: Stat,
    curves: Vec<TransferCurve>,
) -> PairLink {
    PairLink {
        src,
        dst,
        topology,
        nvml_p2p_status: Some("OK".into()),
        can_access_peer: Some(true),
        classification: Some(PairClass::P2p),
        evidence: vec!["preset: published P2P figures, not measured on this box".into()],
        latency_us: BTreeMap::from([("copy-engine".to_string(), latency_us)]),
        curves,
    }
}

/// One published bandwidth figure as a one-point curve at [`LINK_FIGURE_BYTES`].
pub fn figure_curve(mode: TransferMode, direction: Direction, gb_per_s: Stat) -> TransferCurve {
    let t = |g: f64| LINK_FIGURE_BYTES as f64 / (g * 1e9) * 1e6;
    TransferCurve {
        mode,
        direction,
        points: vec![SizePoint {
            bytes: LINK_FIGURE_BYTES,
            time_us: Stat {
                median: t(gb_per_s.median),
                p10: t(gb_per_s.p90),
                p90: t(gb_per_s.p10),
                samples: 1,
            },
            gb_per_s,
        }],
        data_verified: None,
    }
}

/// Bare-metal send/recv time: one NCCL step's fixed cost (the measured 2-GPU all-gather at 512 B)
/// plus the bytes at the published one-way P2P bandwidth of that pair's link class.
pub fn baremetal_sendrecv_us(m: &Measured, class: LinkClass, bytes: u64) -> f64 {
    let step_us = m.time_us(CollectiveOp::AllGather, 2, 512);
    step_us + bytes as f64 / (p2p_gb_per_s(class) * 1e3)
}

/// The bare-metal 8× RTX PRO 6000 Server with P2P.
pub fn baremetal(m: &Measured) -> MachineProfile {
    let step_us = m.time_us(CollectiveOp::AllGather, 2, 512);
    let notes = vec![
        "Collective curves are the measured NCCL 2.29.2 fp16 rows (all_reduce, all_gather, \
         reduce_scatter, alltoall for 2, 4, 8 GPUs), converted; P2P state of that box was not recorded \
         (busbw ~24 GB/s at 8 GPUs is consistent with P2P on)."
            .to_string(),
        "The 2- and 4-GPU measurements' placement was not recorded: assumed within one socket \
         (devices 0-1 / 0-3, link class NODE); the 8-GPU group spans both sockets (SYS)."
            .to_string(),
        "Topology (NODE within a socket, SYS across, GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1) is the \
         user's box; the measured box's switch/NUMA layout was not recorded and is assumed the same."
            .to_string(),
        format!(
            "send_recv curves are derived, not measured: {step_us} us (the measured 2-GPU all_gather \
             at 512 B, one NCCL step) + bytes / the published one-way P2P bandwidth ({} GB/s within \
             a socket, {} GB/s across). NCCL's own 2-GPU all_gather reached only ~32 GB/s per \
             direction at 512 MiB, so large sends may be up to ~1.7x slower than these curves.",
            P2P_NODE_GB_PER_S.median, P2P_SYS_GB_PER_S.median
        ),
        "Link curves hold the published figures as one point at 256 MiB (the figures give no \
         size); latency is the published 0.36-0.45 us range for every pair."
            .to_string(),
    ];
    let mut p = profile(GPU_PRESET, &SOURCES, &notes);
    p.devices = devices(8, GPU_NAME, GPU_MEMORY_MIB, Some((5, 16)), [12, 0]);
    p.links = all_pairs(8, baremetal_link);
    for (&(op, n), pts) in &m.curves {
        let (devs, class) = group(n);
        p.collectives.push(curve(op, devs, class, |b| {
            pts.iter()
                .find(|(pb, _)| *pb == b)
                .map(|(_, t)| *t)
                .unwrap_or(f64::NAN)
        }));
    }
    for (pair, class) in SENDRECV_PAIRS {
        p.collectives
            .push(curve(CollectiveOp::SendRecv, pair.to_vec(), class, |b| {
                baremetal_sendrecv_us(m, class, b)
            }));
    }
    p
}

/// Host-bounce hops on an `n`-GPU collective's critical path: ring all-reduce 2(n−1) steps,
/// all-gather / reduce-scatter n−1; all-to-all sends to all peers at once (one hop).
fn hops(op: CollectiveOp, n: u32) -> f64 {
    match op {
        CollectiveOp::AllReduce => 2.0 * (n as f64 - 1.0),
        CollectiveOp::AllGather | CollectiveOp::ReduceScatter => n as f64 - 1.0,
        CollectiveOp::AllToAll | CollectiveOp::SendRecv => 1.0,
    }
}

fn vm_link(s: u32, d: u32) -> PairLink {
    let points = [4u64 << 10, 16 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20]
        .iter()
        .map(|&b| {
            let t = round3(STAGED_LATENCY_US + b as f64 / (STAGED_GB_PER_S * 1e3));
            SizePoint {
                bytes: b,
                time_us: Stat::exact(t),
                gb_per_s: Stat::exact(round3(b as f64 / (t * 1e3))),
            }
        })
        .collect();
    PairLink {
        src: s,
        dst: d,
        topology: topo(s, d),
        nvml_p2p_status: Some("NotSupported".into()),
        can_access_peer: Some(false),
        classification: Some(PairClass::HostBounce),
        evidence: vec!["preset: user's report of P2P bounced through host memory in the VM".into()],
        latency_us: BTreeMap::from([("host-staged".to_string(), Stat::exact(STAGED_LATENCY_US))]),
        curves: vec![TransferCurve {
            mode: TransferMode::HostStaged,
            direction: Direction::Unidirectional,
            points,
            data_verified: None,
        }],
    }
}

/// The same 8 cards in a Proxmox VM where every GPU↔GPU hop is staged through host memory.
pub fn vm_hostbounce(m: &Measured) -> MachineProfile {
    let extra_hop_us = STAGED_LATENCY_US - P2P_LATENCY_US.median;
    let notes = vec![
        "Synthesized, not measured: no collective or link curve of this preset was timed in the VM; \
         all are computed from the bare-metal box's NCCL curves (timed on other, bare-metal \
         hardware) and published host-staging figures. `probe run` inside the VM replaces them."
            .to_string(),
        "Built from transfer physics, not fitted to the user's serving numbers (~11 tok/s single \
         stream, ~225 tok/s at 64 concurrent for GLM-5-NVFP4 TP8 are validation targets, unused here)."
            .to_string(),
        format!(
            "Each collective is the bare-metal NCCL algorithm with every GPU->GPU hop made a \
             host-staged copy: t_vm(S) = t_bare(S) + hops * {extra_hop_us} us + f*S/busbw_bare * \
             (P2P/{STAGED_GB_PER_S} - 1), where t_bare and busbw_bare (at 512 MiB) are the bare-metal \
             box's nccl-tests curve, f the nccl-tests busbw factor, P2P the one-way P2P bandwidth of the \
             ring's worst hop ({} GB/s within a socket for 2/4 GPUs, {} GB/s across for 8)."
            ,
            P2P_NODE_GB_PER_S.median, P2P_SYS_GB_PER_S.median
        ),
        format!(
            "Per-hop extra latency {extra_hop_us} us = ~{STAGED_LATENCY_US} us GPU->GPU latency without \
             P2P minus {} us with P2P (published figures). Hops on the critical path: all_reduce \
             2(n-1) (ring), all_gather/reduce_scatter n-1, alltoall 1 (peers in parallel), send/recv 1. \
             NCCL may pick other algorithms for small sizes; ring is assumed.",
            P2P_LATENCY_US.median
        ),
        format!(
            "Staged bandwidth {STAGED_GB_PER_S} GB/s one way per GPU (published for Gen5 H100s without \
             P2P; RTX PRO 6000 is Gen5 x16 too); NCCL keeps the same protocol efficiency relative to \
             the link as on bare metal (busbw_bare / P2P)."
        ),
        "Shared host memory: with 4 GPUs per socket each writing and reading <= 37 GB/s, DRAM traffic \
         is <= 296 GB/s per socket, below a 12-channel DDR5-4800 EPYC socket's ~460 GB/s peak, so it \
         is not modelled as the limit; a busy host would make these curves optimistic."
            .to_string(),
        "Cross-check, not a fit: a 16 KiB host-staged copy at 14 us + 16 KiB/37 GB/s reaches ~1.1 GB/s, \
         matching the '~1 GB/s for small messages' the user saw."
            .to_string(),
        "Topology classes are the user's nvidia-smi topo -m; NVML P2P status NotSupported and \
         cuDeviceCanAccessPeer=false are assumed for a VM without P2P."
            .to_string(),
    ];
    let sources: Vec<&str> = std::iter::once(
        "synthesized, not measured in the VM, from the bare-metal inputs below and host-staging \
         physics",
    )
    .chain(SOURCES)
    .collect();
    let mut p = profile(GPU_PRESET, &sources, &notes);
    p.provenance.hypervisor = Some("KVM (Proxmox VE)".into());
    p.devices = devices(8, GPU_NAME, GPU_MEMORY_MIB, Some((5, 16)), [12, 0]);
    p.links = all_pairs(8, vm_link);
    for &(op, n) in m.curves.keys() {
        let (devs, class) = group(n);
        let slowdown = ring_p2p_gb_per_s(n) / STAGED_GB_PER_S - 1.0;
        let busbw = m.peak_busbw(op, n);
        let f = op.busbw_factor(n);
        p.collectives.push(curve(op, devs, class, |b| {
            let bw_extra_us = f * b as f64 / (busbw * 1e3) * slowdown;
            m.time_us(op, n, b) + hops(op, n) * extra_hop_us + bw_extra_us
        }));
    }
    for (pair, class) in SENDRECV_PAIRS {
        p.collectives
            .push(curve(CollectiveOp::SendRecv, pair.to_vec(), class, |b| {
                let bw_extra_us =
                    b as f64 / 1e3 * (1.0 / STAGED_GB_PER_S - 1.0 / p2p_gb_per_s(class));
                baremetal_sendrecv_us(m, class, b) + extra_hop_us + bw_extra_us
            }));
    }
    p
}
