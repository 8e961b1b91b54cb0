//! NVLink/NVSwitch 8-GPU presets (HGX/DGX H100, H200, H20, B200) from published figures.
//!
//! NCCL switches protocol with size (LL for small messages, LL128, then Simple); each is modelled as
//! latency + bytes / (its share of peak bus bandwidth), and the fastest is taken:
//! `t(S) = min_p (alpha_p(op, n) + f·S / (eta_p · busbw_peak))`.

use super::{all_pairs, curve, devices, profile};
use models::MachineProfile;
use models::profile::{CollectiveOp, LinkClass, PairClass, PairLink};

/// One NVLink box's published figures.
pub struct NvlinkBox {
    pub gpu_preset: &'static str,
    pub gpu_name: &'static str,
    pub memory_mib: u64,
    pub pcie: Option<(u32, u32)>,
    pub compute_capability: [u32; 2],
    /// NVLink line rate per GPU, GB/s per direction.
    pub nvlink_gb_per_s: f64,
    /// Peak busbw of ring-style collectives (all-gather, reduce-scatter, all-to-all, send/recv, and
    /// all-reduce on 2 or 4 GPUs), GB/s.
    pub ring_busbw_gb_per_s: f64,
    /// Peak all-reduce busbw on 8 GPUs (NVLink SHARP on NVSwitch), GB/s.
    pub allreduce8_busbw_gb_per_s: f64,
    pub sources: &'static [&'static str],
    pub figure_notes: &'static [&'static str],
}

/// NCCL's protocol efficiency at ~20% overhead: 370 of 450 GB/s on NVLink4 (sjeaugey, nccl-tests#212).
const RING_EFFICIENCY: f64 = 370.0 / 450.0;

const LATENCY_SOURCES: &str = "small-message latency: ~6 us for a 2-GPU all-reduce on HGX H100 \
    (NVIDIA/nccl#1259, NCCL 2.20.5, CUDA graphs); 8-GPU small all-reduce assumed 11 us, inside the \
    10-20 us usually reported for NVSwitch boxes";

pub const H100: NvlinkBox = NvlinkBox {
    gpu_preset: "h100-sxm",
    gpu_name: "NVIDIA H100 80GB HBM3",
    memory_mib: 81559,
    pcie: Some((5, 16)),
    compute_capability: [9, 0],
    nvlink_gb_per_s: 450.0,
    ring_busbw_gb_per_s: 370.0,
    allreduce8_busbw_gb_per_s: 480.0,
    sources: &[
        "NVLink4 450 GB/s per direction per GPU, NCCL effective ~370 GB/s busbw for non-allreduce \
         ops / ring, ~480 GB/s all-reduce busbw on 8 GPUs with NVLink SHARP at large sizes: NVIDIA's \
         Sylvain Jeaugey in github.com/NVIDIA/nccl-tests/issues/212 (2024-05-06)",
        LATENCY_SOURCES,
        "8x H100 SXM with NVSwitch: DGX H100 / HGX H100 (NV18 between every pair, GPUs 0-3 NUMA 0, \
         4-7 NUMA 1 as in github.com/NVIDIA/nccl/issues/1357's topo -m); 81559 MiB per GPU as \
         nvidia-smi reports an H100 80GB HBM3",
    ],
    figure_notes: &[],
};

pub const H200: NvlinkBox = NvlinkBox {
    gpu_preset: "h200",
    gpu_name: "NVIDIA H200",
    memory_mib: 143771,
    pcie: Some((5, 16)),
    compute_capability: [9, 0],
    nvlink_gb_per_s: 450.0,
    ring_busbw_gb_per_s: 370.0,
    allreduce8_busbw_gb_per_s: 475.0,
    sources: &[
        "8x H200 all_reduce_perf peak busbw 475 GB/s (NCCL 2.20.3): github.com/NVIDIA/nccl-tests/\
         issues/272 (2024-11-27); NVLink4 450 GB/s per direction and NCCL's ~370 GB/s effective ring \
         busbw as for H100 (github.com/NVIDIA/nccl-tests/issues/212)",
        LATENCY_SOURCES,
        "HGX H200: NVSwitch, NV18 between every pair; 143771 MiB per GPU as nvidia-smi reports an \
         H200 (seen on this workplace's H200 machines)",
    ],
    figure_notes: &[],
};

/// HGX H20: the H200 box's NVLink4/NVSwitch fabric at the same stated 900 GB/s per GPU, so H200's
/// NCCL figures scaled by 450/450 (no H20 NCCL run is published).
pub const H20: NvlinkBox = NvlinkBox {
    gpu_preset: "h20",
    gpu_name: "NVIDIA H20",
    memory_mib: 97871,
    pcie: Some((5, 16)),
    compute_capability: [9, 0],
    nvlink_gb_per_s: 450.0,
    ring_busbw_gb_per_s: H200.ring_busbw_gb_per_s * 450.0 / H200.nvlink_gb_per_s,
    allreduce8_busbw_gb_per_s: H200.allreduce8_busbw_gb_per_s * 450.0 / H200.nvlink_gb_per_s,
    sources: &[
        "NVIDIA H20: NVLink 4.0 900 GB/s bidirectional (450 per direction) as H100/H200, 96 GB \
         HBM3 at 4.0 TB/s, BF16 148 / INT8 296 dense (NVIDIA's partner spec sheet as reproduced at \
         willitrunai.com/gpus/h20-96gb)",
        "8x H200 all_reduce_perf peak busbw 475 GB/s (NCCL 2.20.3): github.com/NVIDIA/nccl-tests/\
         issues/272; NCCL's ~370 GB/s effective NVLink4 ring busbw (github.com/NVIDIA/nccl-tests/\
         issues/212)",
        LATENCY_SOURCES,
        "HGX H20: NVSwitch, NV18 between every pair as HGX H100/H200; 97871 MiB per GPU as \
         nvidia-smi reports an H20 (public nvidia-smi listings of 8x NVIDIA H20 hosts)",
    ],
    figure_notes: &[
        "No H20 NCCL figures are published: the H200 box's peak busbw (370 ring, 475 all-reduce on \
         8) scaled by the ratio of stated NVLink rates, 450/450 = 1; the H20's lower SM count (78) \
         may lower NCCL's reachable busbw and is not modelled.",
    ],
};

pub const B200: NvlinkBox = NvlinkBox {
    gpu_preset: "b200",
    gpu_name: "NVIDIA B200",
    memory_mib: 183359,
    pcie: Some((5, 16)),
    compute_capability: [10, 0],
    nvlink_gb_per_s: 900.0,
    ring_busbw_gb_per_s: 900.0 * RING_EFFICIENCY,
    allreduce8_busbw_gb_per_s: 800.0,
    sources: &[
        "NVLink5 1.8 TB/s per GPU (900 GB/s per direction), 18 links: NVIDIA DGX B200 / Blackwell \
         datasheets",
        "8-GPU NVLink5 all-reduce busbw ~811 GB/s measured on GB200 NVL72 (2 trays x 4 GPUs over \
         MNNVL): lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test; taken as ~800 GB/s for HGX B200",
        LATENCY_SOURCES,
        "HGX/DGX B200: NVSwitch, NV18 between every pair, host link PCIe Gen5 x16 (NVIDIA HGX \
         specifications); 183359 MiB per GPU (the '180 GB' B200 as nvidia-smi reports it)",
    ],
    figure_notes: &[
        "Ring busbw = 900 GB/s x (370/450), NCCL's NVLink4 protocol efficiency assumed to carry over \
         to NVLink5 (not measured).",
    ],
};

/// Critical-path steps of an `n`-GPU ring collective (all-to-all and send/recv: peers in parallel).
fn steps(op: CollectiveOp, n: u32) -> f64 {
    match op {
        CollectiveOp::AllReduce => 2.0 * (n as f64 - 1.0),
        CollectiveOp::AllGather | CollectiveOp::ReduceScatter | CollectiveOp::AllToAll => {
            n as f64 - 1.0
        }
        CollectiveOp::SendRecv => 1.0,
    }
}

/// LL-protocol latency: 6 µs at 2 steps (2-GPU all-reduce) growing to 11 µs at 14 steps (8-GPU
/// all-reduce), linear in steps.
fn ll_latency_us(op: CollectiveOp, n: u32) -> f64 {
    let per_step = (11.0 - 6.0) / (14.0 - 2.0);
    6.0 + (steps(op, n) - 2.0) * per_step
}

/// NCCL protocols: (latency multiple of LL's, share of peak busbw).
const PROTOCOLS: [(f64, f64); 3] = [(1.0, 0.25), (1.5, 0.75), (3.0, 1.0)];

fn time_us(b: &NvlinkBox, op: CollectiveOp, n: u32, bytes: u64) -> f64 {
    let peak = if op == CollectiveOp::AllReduce && n == 8 {
        b.allreduce8_busbw_gb_per_s
    } else {
        b.ring_busbw_gb_per_s
    };
    let f = op.busbw_factor(n);
    let alpha = ll_latency_us(op, n);
    PROTOCOLS
        .iter()
        .map(|(lat, eta)| alpha * lat + f * bytes as f64 / (eta * peak * 1e3))
        .fold(f64::INFINITY, f64::min)
}

fn link(s: u32, d: u32) -> PairLink {
    PairLink {
        src: s,
        dst: d,
        topology: LinkClass::NV(18),
        nvml_p2p_status: Some("OK".into()),
        can_access_peer: Some(true),
        classification: Some(PairClass::P2p),
        evidence: vec!["preset: NVSwitch box, every pair NV18".into()],
        latency_us: Default::default(),
        curves: Vec::new(),
    }
}

/// Builds the preset of one NVLink box.
pub fn preset(b: &NvlinkBox) -> MachineProfile {
    let mut notes = vec![
        "Collective curves are a model of published figures, not measurements: NCCL's LL / LL128 / \
         Simple protocols as latency + bytes/(share of peak busbw), fastest taken; LL latency 6 us \
         for 2-GPU all-reduce rising linearly with ring steps to 11 us for 8-GPU all-reduce; LL128 \
         1.5x and Simple 3x that latency; LL 25%, LL128 75%, Simple 100% of peak busbw."
            .to_string(),
        format!(
            "Peak busbw: {} GB/s for all-reduce on 8 GPUs (NVLink SHARP), {:.0} GB/s for every other \
             op and for all-reduce on 2/4 GPUs (ring at NCCL's ~20% protocol overhead on the \
             {} GB/s line rate; NVLS gains on partial groups not assumed).",
            b.allreduce8_busbw_gb_per_s, b.ring_busbw_gb_per_s, b.nvlink_gb_per_s
        ),
        "Published NCCL runs reach peak only at >= 256 MiB (nccl-tests#212); at 1-64 MiB this \
         model is likely optimistic by up to ~1.3-1.5x (a public NVLink all-reduce table in \
         kvcache-ai/Mooncake PR #3484 shows ~66 GB/s busbw at 1 MiB and ~242 GB/s at 16 MiB, this \
         model ~85 and ~310 for H100/H200)."
            .to_string(),
        "SGLang's custom all-reduce (used on NVLink for small messages unless \
         --disable-custom-all-reduce) is not in these NCCL curves."
            .to_string(),
        "Groups: 2 GPUs = devices 0-1, 4 GPUs = 0-3, 8 GPUs = 0-7 (NVSwitch: placement does not \
         matter); send/recv between devices 0 and 1."
            .to_string(),
    ];
    notes.extend(b.figure_notes.iter().map(|s| s.to_string()));
    let mut p = profile(b.gpu_preset, b.sources, &notes);
    p.devices = devices(8, b.gpu_name, b.memory_mib, b.pcie, b.compute_capability);
    p.links = all_pairs(8, link);
    for op in [
        CollectiveOp::AllReduce,
        CollectiveOp::AllGather,
        CollectiveOp::ReduceScatter,
        CollectiveOp::AllToAll,
    ] {
        for n in [2u32, 4, 8] {
            p.collectives
                .push(curve(op, (0..n).collect(), LinkClass::NV(18), |bytes| {
                    time_us(b, op, n, bytes)
                }));
        }
    }
    p.collectives.push(curve(
        CollectiveOp::SendRecv,
        vec![0, 1],
        LinkClass::NV(18),
        |bytes| time_us(b, CollectiveOp::SendRecv, 2, bytes),
    ));
    p
}
