//! The 16× RTX PRO 6000 Blackwell box behind PCIe switches, as the rtx6kpro wiki publishes the one
//! community 16-GPU host it measured (`hardware/asrockrack-genoad24-epyc-cpayne-16gpu.md` @fec6939):
//! one AMD EPYC 9575F socket (one NUMA node), four Microchip Switchtec PM50100 Gen5 switches of
//! four GPUs each, every switch on its own CPU root complex by a Gen5 x16 uplink. nvidia-smi calls
//! GPUs on one switch PIX and GPUs on two switches NODE (the path crosses the CPU's root ports, as
//! the wiki's flat two-switch WRX90 page shows for the same switches).
//!
//! No NCCL run of this box is published: its collectives are the 8-GPU bare-metal box's measured
//! NCCL curves (same GPU, Gen5 x16 P2P at 53–56 GB/s per link, which this box's pairs also reach:
//! 56.3 GB/s within and across switches) put on the groups SGLang's placement gives a layout here
//! (2 and 4 GPUs on one switch, 8 on two); 16-GPU groups are left to the simulator, which scales
//! the 8-GPU curve and says so.

use super::pcie::{GPU_MEMORY_MIB, GPU_NAME, GPU_PRESET, Measured, figure_curve};
use super::{all_pairs, curve, devices, profile};
use models::MachineProfile;
use models::profile::{
    CollectiveOp, Direction, LinkClass, PairClass, PairLink, Stat, TransferMode,
};
use std::collections::BTreeMap;

/// GPUs per switch on the published host.
const GPUS_PER_SWITCH: u32 = 4;
const GPUS: u32 = 16;
/// One pair, within a switch or across two: 56.3 GB/s one way (CUDA `dst.copy_(src)`, 256 MB).
const P2P_GB_PER_S: Stat = Stat {
    median: 56.3,
    p10: 56.3,
    p90: 56.3,
    samples: 1,
};
/// CUDA P2P write latency on the same switches (the two-switch WRX90 page): 0.45–0.53 µs.
const P2P_LATENCY_US: Stat = Stat {
    median: 0.49,
    p10: 0.45,
    p90: 0.53,
    samples: 1,
};
/// Both ways at once on the same switches (the wiki's two-switch WRX90 page): 100–102 GB/s.
const P2P_BIDIR_GB_PER_S: Stat = Stat {
    median: 101.0,
    p10: 100.0,
    p90: 102.0,
    samples: 1,
};

const SOURCES: [&str; 3] = [
    "topology and links: voipmonitor/rtx6kpro hardware/asrockrack-genoad24-epyc-cpayne-16gpu.md \
     @fec6939 (16x RTX PRO 6000 Blackwell, ASRockRack GENOAD24QM32, 1x EPYC 9575F, 4x Microchip \
     Switchtec PM50100 Gen5 switches of 4 GPUs each, each on its own root complex by Gen5 x16; one \
     pair 56.3 GB/s within a switch and across switches; 16-GPU all-to-all 204 GB/s of 4 x 56 \
     uplinks) and hardware/wrx90-cpayne-2switch-flat.md @3634b44 (the same switches: PIX within, \
     NODE across through the CPU's root ports; 100-102 GB/s both ways; CUDA P2P write latency \
     0.45-0.53 us)",
    "collectives: data/observations/nccl-rtx-pro-6000-baremetal.json (NCCL 2.29.2 nccl-tests fp16 \
     on a bare-metal 8x RTX PRO 6000 Blackwell Server, ai-dynamo/aiconfigurator @095f58a), the \
     same curves as rtx-pro-6000-x8-baremetal, put on this box's groups",
    "devices: 97887 MiB per GPU, compute capability 12.0 (as rtx-pro-6000-x8-baremetal)",
];

fn switch_of(d: u32) -> u32 {
    d / GPUS_PER_SWITCH
}

fn class(a: u32, b: u32) -> LinkClass {
    if switch_of(a) == switch_of(b) {
        LinkClass::PIX
    } else {
        LinkClass::NODE
    }
}

fn link(s: u32, d: u32) -> PairLink {
    PairLink {
        src: s,
        dst: d,
        topology: class(s, d),
        nvml_p2p_status: Some("OK".into()),
        can_access_peer: Some(true),
        classification: Some(PairClass::P2p),
        evidence: vec!["preset: published P2P figures, not measured on this box".into()],
        latency_us: BTreeMap::from([("copy-engine".to_string(), P2P_LATENCY_US)]),
        curves: vec![
            figure_curve(
                TransferMode::CopyEngine,
                Direction::Unidirectional,
                P2P_GB_PER_S,
            ),
            figure_curve(
                TransferMode::CopyEngine,
                Direction::Bidirectional,
                P2P_BIDIR_GB_PER_S,
            ),
        ],
    }
}

/// The group of the first `n` GPUs and its worst link class.
fn group(n: u32) -> (Vec<u32>, LinkClass) {
    let devs: Vec<u32> = (0..n).collect();
    let c = if n <= GPUS_PER_SWITCH {
        LinkClass::PIX
    } else {
        LinkClass::NODE
    };
    (devs, c)
}

/// `rtx-pro-6000-x16-pcie-switch`.
pub fn x16_switches(m: &Measured) -> MachineProfile {
    let notes = vec![
        "Topology as published for the one 16-GPU community host: one socket, four switches of \
         four GPUs (GPUs 0-3, 4-7, 8-11, 12-15), PIX within a switch, NODE across; all GPUs on \
         NUMA node 0."
            .to_string(),
        "No NCCL run of this box is published: the collectives are the 8-GPU bare-metal box's \
         measured curves (2 and 4 GPUs put on one switch, PIX; 8 GPUs on two switches, NODE). Its \
         links reach what this box's do (53-56 GB/s one way). NCCL's rings keep each switch's four \
         GPUs contiguous, so a ring leaves and enters a switch once per direction per channel: the \
         x16 uplink carries one ring edge, as a GPU's own x16 link does (two pairs through one \
         uplink 56.4 GB/s, one pair 56.3 GB/s, the Turin host's page), and does not bound a ring \
         all-reduce; it does bound all-to-all (204 GB/s of 4 x 56 over 16 GPUs)."
            .to_string(),
        "16-GPU groups have no curve of their own: modelled, not measured (said in predictions' \
         notes), from the 8-GPU curve with the latency of NCCL's ring form (src/graph/tuning.cc: \
         base + 2(n-1) x per-step latency) fitted on the 2- and 4-GPU curves (3.0 us + 1.67 us a \
         step; the held-back 8-GPU curve within 10% up to 64 KiB) and the bandwidth part by NCCL's \
         bus factor 2(n-1)/n; send/recv is the bare-metal box's (one NCCL step + bytes at the \
         pair's bandwidth)."
            .to_string(),
        "NCCL's own default allows P2P only up to PXB on an AMD host of more than 2 GPUs \
         (src/graph/paths.cc ncclTopoCheckP2p): cross-switch (PHB) pairs use P2P with \
         NCCL_P2P_LEVEL=PHB or SYS, as the community's recipes set it; the preset assumes they do, \
         since no run states it."
            .to_string(),
        "CUDA caps peer access at 8 peers per GPU per process (the wiki page): NCCL over 16 GPUs \
         uses its IPC/P2P transports, as modelled; a custom all-reduce over all 16 is not."
            .to_string(),
    ];
    let mut p = profile(GPU_PRESET, &SOURCES, &notes);
    let mut devs = devices(GPUS, GPU_NAME, GPU_MEMORY_MIB, Some((5, 16)), [12, 0]);
    for d in &mut devs {
        d.numa_node = Some(0);
    }
    p.devices = devs;
    p.links = all_pairs(GPUS, link);
    for (&(op, n), pts) in &m.curves {
        let (devs, c) = group(n);
        p.collectives.push(curve(op, devs, c, |b| {
            pts.iter()
                .find(|(pb, _)| *pb == b)
                .map_or(f64::NAN, |(_, t)| *t)
        }));
    }
    for (pair, c) in [([0u32, 1u32], LinkClass::PIX), ([3, 4], LinkClass::NODE)] {
        p.collectives
            .push(curve(CollectiveOp::SendRecv, pair.to_vec(), c, |b| {
                super::pcie::baremetal_sendrecv_us(m, LinkClass::NODE, b)
            }));
    }
    p
}
