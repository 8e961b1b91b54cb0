//! The 16× RTX PRO 6000 Blackwell box behind PCIe switches, as the rtx6kpro wiki publishes the one
//! community 16-GPU host it measured (`hardware/asrockrack-genoad24-epyc-cpayne-16gpu.md` @fec6939):
//! one AMD EPYC 9575F socket (one NUMA node), four Microchip Switchtec PM50100 Gen5 switches of
//! four GPUs each, every switch on its own CPU root complex by a Gen5 x16 uplink. nvidia-smi calls
//! GPUs on one switch PIX and GPUs on two switches NODE (the path crosses the CPU's root ports, as
//! the wiki's flat two-switch WRX90 page shows for the same switches).
//!
//! No NCCL run of this box is published. Its 8-GPU ring collectives (GPUs 0–7, two switches) are
//! the all-reduce the same wiki measured on two of the same switches under one AMD socket (the
//! WRX90 rig's "Group A": each switch on its own root complex, as GPUs 0–7 are here;
//! `data/observations/nccl-rtx-pro-6000-cpayne-switch-8gpu.csv`), all-gather and reduce-scatter
//! derived from it by NCCL's ring relation; its 2- and 4-GPU curves are the 8-GPU bare-metal box's
//! measured NCCL curves (same GPU, Gen5 x16 P2P at 53–56 GB/s per link, which this box's pairs also
//! reach: 56.3 GB/s within and across switches) put on one switch; 16-GPU groups are left to the
//! simulator, which scales the 8-GPU curve and says so.

use super::pcie::{GPU_MEMORY_MIB, GPU_NAME, GPU_PRESET, Measured, figure_curve};
use super::pcie_tuned::ring_half_us;
use super::{all_pairs, curve, devices, profile};
use anyhow::Context;
use models::MachineProfile;
use models::profile::{CollectiveOp, Direction, LinkClass, PairLink, Stat, TransferMode};

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
    "collectives on 8 GPUs (two switches): data/observations/nccl-rtx-pro-6000-cpayne-switch-8gpu.csv \
     (voipmonitor/rtx6kpro hardware/wrx90-cpayne-8gpu-root-topology-comparison.md @e01f16b, \
     tables 6 and 7, Group A: NCCL 2.27.5 ring all-reduce, NCCL_P2P_LEVEL=SYS, 8x RTX PRO 6000 on \
     two c-payne Microchip Gen5 switches on separate root complexes of one Threadripper PRO 7955WX) \
     | collectives on 2 and 4 GPUs: data/observations/nccl-rtx-pro-6000-baremetal.json (NCCL 2.29.2 \
     nccl-tests fp16 on a bare-metal 8x RTX PRO 6000 Blackwell Server, ai-dynamo/aiconfigurator \
     @095f58a), the same curves as rtx-pro-6000-x8-baremetal, put on one switch",
    "devices: 97887 MiB per GPU, compute capability 12.0 (as rtx-pro-6000-x8-baremetal)",
];

/// The 8-GPU all-reduce measured on two of these switches under one AMD socket, as carried:
/// `bytes,time_us,table,row` after `#` comment lines.
const SWITCH_8GPU_ALL_REDUCE_CSV: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/nccl-rtx-pro-6000-cpayne-switch-8gpu.csv"
));

/// The carried 8-GPU all-reduce as `(bytes, µs)`, sizes increasing.
pub fn switch_8gpu_all_reduce() -> anyhow::Result<Vec<(u64, f64)>> {
    let mut pts = Vec::new();
    for line in SWITCH_8GPU_ALL_REDUCE_CSV
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("bytes,") && !l.trim().is_empty())
    {
        let mut f = line.split(',');
        let (b, t) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
        let bytes: u64 = b
            .trim()
            .parse()
            .with_context(|| format!("bytes in {line:?}"))?;
        let us: f64 = t
            .trim()
            .parse()
            .with_context(|| format!("time_us in {line:?}"))?;
        pts.push((bytes, us));
    }
    anyhow::ensure!(
        pts.windows(2).all(|w| w[0].0 < w[1].0) && !pts.is_empty(),
        "switch all-reduce sizes must increase"
    );
    Ok(pts)
}

/// Log–log interpolation of `(bytes, µs)` points at `bytes`: the first point's time below the
/// first size (latency-bound there), the last point's bandwidth above the last.
fn interpolated_us(points: &[(u64, f64)], bytes: u64) -> f64 {
    let x = bytes as f64;
    let (b0, t0) = points[0];
    let (bn, tn) = points[points.len() - 1];
    if x <= b0 as f64 {
        return t0;
    }
    if x >= bn as f64 {
        return tn * x / bn as f64;
    }
    let i = points.partition_point(|p| (p.0 as f64) <= x);
    let ((xa, ya), (xb, yb)) = (points[i - 1], points[i]);
    let w = (x / xa as f64).ln() / (xb as f64 / xa as f64).ln();
    (ya.ln() + w * (yb / ya).ln()).exp()
}

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
    super::pcie::published_p2p_link(
        (s, d, class(s, d)),
        P2P_LATENCY_US,
        vec![
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
    )
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
pub fn x16_switches(m: &Measured) -> anyhow::Result<MachineProfile> {
    let notes = vec![
        "Topology as published for the one 16-GPU community host: one socket, four switches of \
         four GPUs (GPUs 0-3, 4-7, 8-11, 12-15), PIX within a switch, NODE across; all GPUs on \
         NUMA node 0."
            .to_string(),
        "No NCCL run of this box is published. 8 GPUs on two switches (GPUs 0-7, NODE): the \
         all-reduce measured on two of the same c-payne switches, each on its own root complex of \
         one AMD socket (the wiki's WRX90 rig, Group A; NCCL 2.27.5, NCCL_P2P_LEVEL=SYS, \
         torch.distributed timing; 18-25 us up to 256 KiB, 81 us at 1 MiB, 46 GB/s busbw at 1 GiB), \
         log-log interpolated, its first point's time below 4 KiB; all_gather and reduce_scatter \
         derived from it by NCCL's ring relation (t = (t_all_reduce + 6.6 us) / 2). Not the \
         bare-metal aiconfigurator box's 8-GPU curve (26-85 us up to 256 KiB, 24 GB/s busbw): that \
         box's layout was not recorded, and the switch rig's single-socket ring is measured 1.3-3x \
         faster from 16 KiB to 4 MiB (1.4-3.4x). The host CPU differs (EPYC 9575F here): the Turin page measures \
         the same 56.3 GB/s a pair and more aggregate bandwidth, not a slower hop. 2 and 4 GPUs (one \
         switch, PIX): the 8-GPU bare-metal box's measured curves. Links reach 53-56 GB/s one way \
         on both boxes. NCCL's rings keep each switch's four \
         GPUs contiguous, so a ring leaves and enters a switch once per direction per channel: the \
         x16 uplink carries one ring edge, as a GPU's own x16 link does (two pairs through one \
         uplink 56.4 GB/s, one pair 56.3 GB/s, the Turin host's page), and does not bound a ring \
         all-reduce; it does bound all-to-all (204 GB/s of 4 x 56 over 16 GPUs)."
            .to_string(),
        "16-GPU groups have no curve of their own: modelled, not measured (said in predictions' \
         notes), from the switch rig's 8-GPU curve with the latency of NCCL's ring form \
         (src/graph/tuning.cc: base + 2(n-1) x per-step latency) fitted on the 2- and 4-GPU curves \
         (3.0 us + 1.67 us a step; on the bare-metal box the held-back 8-GPU curve within 10% up to \
         64 KiB) and the bandwidth part by NCCL's bus factor 2(n-1)/n; send/recv is the bare-metal \
         box's (one NCCL step + bytes at the pair's bandwidth). Without a graph file NCCL's search \
         here (src/graph/search.cc, sm100 speeds, Gen5 x16 = 48 GB/s in topo.cc) settles on the \
         rtx6kpro 8-rank file's own ring, 2 channels at 24 GB/s through each switch once, PHB: a \
         16-GPU ring is the same rings, 30 steps instead of 14."
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
    let switch_ar = switch_8gpu_all_reduce()?;
    for (&(op, n), pts) in &m.curves {
        let (devs, c) = group(n);
        let ring = matches!(
            op,
            CollectiveOp::AllReduce | CollectiveOp::AllGather | CollectiveOp::ReduceScatter
        );
        p.collectives.push(if ring && n == 2 * GPUS_PER_SWITCH {
            // two switches: the switch rig's measured all-reduce and its ring halves
            curve(op, devs, c, |b| {
                let ar = interpolated_us(&switch_ar, b);
                if op == CollectiveOp::AllReduce {
                    ar
                } else {
                    ring_half_us(ar)
                }
            })
        } else {
            curve(op, devs, c, |b| {
                pts.iter()
                    .find(|(pb, _)| *pb == b)
                    .map_or(f64::NAN, |(_, t)| *t)
            })
        });
    }
    for (pair, c) in [([0u32, 1u32], LinkClass::PIX), ([3, 4], LinkClass::NODE)] {
        p.collectives
            .push(curve(CollectiveOp::SendRecv, pair.to_vec(), c, |b| {
                super::pcie::baremetal_sendrecv_us(m, LinkClass::NODE, b)
            }));
    }
    Ok(p)
}
