//! Two-box presets: a one-box preset twice, joined by a network modelled from published NIC
//! figures. Node 1's GPUs are 8–15 (global indices, as a multi-node `probe run` writes them); the
//! inter-node curves are ordinary collectives over GPUs on both nodes with `link_class: NET`:
//! all-reduce, all-gather, reduce-scatter and all-to-all over one GPU per node (GPUs 0 and 8) and
//! send/recv between the node pair. Groups of several GPUs per node are left to the simulator's
//! hierarchical model (it says so in its notes), as they would be for a probe profile lacking them.

use super::curve;
use models::MachineProfile;
use models::profile::{CollectiveOp, LinkClass, NicInfo, NodeInfo};

/// A network between boxes, as published.
pub struct Network {
    /// NCCL's transport, as `nodes[].net_transport` names it (`IB`, `RoCE`).
    pub transport: &'static str,
    /// `nodes[].nics[].kind`.
    pub nic_kind: &'static str,
    pub nics_per_node: u32,
    /// Line rate per NIC, Gbit/s.
    pub nic_gbit_per_s: f64,
    /// Bandwidth NCCL reaches per NIC at large sizes, GB/s.
    pub achieved_gb_per_s: f64,
    /// Latency of one step across nodes with NCCL's LL protocol, µs.
    pub step_latency_us: f64,
    pub sources: &'static [&'static str],
    pub notes: &'static [&'static str],
}

const NCCL_NET_SOURCES: &str = "NCCL over a 400 Gb/s NIC: 46-48 GB/s per NIC for NDR 400 \
    (NVIDIA's AddyLaddy in github.com/NVIDIA/nccl-tests/issues/290, 2025-03-03); NCCL's peak is \
    ~24 GB/s per 200G NIC, i.e. ~96% of line rate (sjeaugey, github.com/NVIDIA/nccl-tests/issues/119); \
    2 nodes x 1 H100 over NDR: all_reduce 2 MiB 113 us, 16 MiB 420 us, 32 MiB 812 us \
    (github.com/NVIDIA/nccl-tests/issues/232); 2 nodes x 1 A100 over HDR: 8 B all_reduce 19-20 us \
    (github.com/NVIDIA/nccl-tests/issues/150)";

/// 8x H200 HGX boxes with 8x ConnectX-7 NDR 400 each (one per GPU, rail-optimised).
pub const IB_NDR_X8: Network = Network {
    transport: "IB",
    nic_kind: "infiniband",
    nics_per_node: 8,
    nic_gbit_per_s: 400.0,
    achieved_gb_per_s: 47.0,
    step_latency_us: 10.0,
    sources: &[
        "network: 8x NVIDIA ConnectX-7 NDR 400 Gb/s InfiniBand HCAs per HGX H200 box, one per GPU \
         (NVIDIA HGX H200 / DGX H200 reference configuration, ConnectX-7 datasheet: 400 Gb/s per \
         port)",
        NCCL_NET_SOURCES,
        "2 HGX H100 hosts x 8 GPU-NIC pairs reach ~470 GB/s all_reduce busbw (NCCL's tree / NVLS \
         tree on two nodes goes beyond the network bound): github.com/NVIDIA/nccl-tests/issues/309, \
         github.com/NVIDIA/nccl-tests/issues/196",
    ],
    notes: &[
        "Per NIC 47 GB/s (middle of NVIDIA's 46-48 GB/s for NDR 400); step latency 10 us (a 2-node \
         8 B all_reduce is two steps, 19-20 us on HDR).",
    ],
};

/// Two bare-metal 8x RTX PRO 6000 boxes, one ConnectX-7 400 GbE port each, RoCE v2.
pub const ROCE_400GBE_X1: Network = Network {
    transport: "RoCE",
    nic_kind: "roce",
    nics_per_node: 1,
    nic_gbit_per_s: 400.0,
    achieved_gb_per_s: 46.0,
    step_latency_us: 12.0,
    sources: &[
        "network: one NVIDIA ConnectX-7 400GbE port per box (ConnectX-7 datasheet: up to 400 Gb/s \
         Ethernet per port, RoCE v2), a lossless (PFC/ECN) switch between the boxes",
        NCCL_NET_SOURCES,
        "RoCE can reach line rate: 392 of 400 Gb/s in perftest on 8x400G RoCE H100 boxes, while NCCL \
         got far less on that fabric until tuned (github.com/NVIDIA/nccl/issues/2409)",
    ],
    notes: &[
        "Per NIC 46 GB/s, the low end of NVIDIA's 46-48 GB/s NDR figure (assumed to carry over to \
         400GbE RoCE on a lossless fabric); step latency 12 us, assumed 20% above InfiniBand's \
         10 us for Ethernet switching and RoCE congestion control (no published NCCL figure used).",
        "GPUDirect RDMA assumed (the NIC reads GPU memory through the PCIe switches); GPUs on the \
         NIC's far socket cross the inter-socket link first. Without GPUDirect RDMA NCCL stages \
         through host memory and the network curves are optimistic.",
        "One NIC per box: all 8 GPUs' inter-node traffic shares it. A box with more NICs has \
         proportionally more inter-node bandwidth: probe it (`probe run` on both boxes) rather \
         than trust this preset.",
    ],
};

/// NCCL protocols over the network: (latency multiple of LL's, share of the NIC bandwidth). LL
/// for small messages; Simple pays ~2.5x LL's latency for its pipeline start (fitted to the
/// nccl-tests#232 points: ~45-50 us + S / 43-47 GB/s for a 2-rank all-reduce).
const NET_PROTOCOLS: [(f64, f64); 2] = [(1.0, 0.25), (2.5, 1.0)];

/// Steps on the critical path of an op over `n` ranks (all-to-all and send/recv: one).
fn steps(op: CollectiveOp, n: u32) -> f64 {
    match op {
        CollectiveOp::AllReduce => 2.0 * (n as f64 - 1.0),
        CollectiveOp::AllGather | CollectiveOp::ReduceScatter => n as f64 - 1.0,
        CollectiveOp::AllToAll | CollectiveOp::SendRecv => 1.0,
    }
}

/// Time of `op` over `n` ranks, one per node, at `bytes` (nccl-tests' size), µs.
pub fn net_time_us(net: &Network, op: CollectiveOp, n: u32, bytes: u64) -> f64 {
    let f = op.busbw_factor(n);
    let lat = steps(op, n) * net.step_latency_us;
    NET_PROTOCOLS
        .iter()
        .map(|(l, share)| lat * l + f * bytes as f64 / (share * net.achieved_gb_per_s * 1e3))
        .fold(f64::INFINITY, f64::min)
}

/// `base` (one box) twice, joined by `net`.
pub fn two_boxes(base: &MachineProfile, net: &Network) -> MachineProfile {
    let per = base.devices.len() as u32;
    let mut p = base.clone();
    p.devices.extend(base.devices.iter().map(|d| {
        let mut d = d.clone();
        d.index += per;
        d.node = 1;
        d
    }));
    p.links.extend(base.links.iter().map(|l| {
        let mut l = l.clone();
        l.src += per;
        l.dst += per;
        l
    }));
    p.nodes = (0..2u32)
        .map(|r| NodeInfo {
            rank: r,
            hostname: Some(format!("node{r}")),
            devices: (r * per..(r + 1) * per).collect(),
            launcher: None,
            net_transport: Some(net.transport.into()),
            nics: (0..net.nics_per_node)
                .map(|i| NicInfo {
                    name: format!("mlx5_{i}"),
                    kind: Some(net.nic_kind.into()),
                    speed_gbit_per_s: Some(net.nic_gbit_per_s),
                    used_by_nccl: true,
                })
                .collect(),
            notes: vec!["preset: modelled, not measured".into()],
        })
        .collect();
    let rail = vec![0, per];
    for op in [
        CollectiveOp::AllReduce,
        CollectiveOp::AllGather,
        CollectiveOp::ReduceScatter,
        CollectiveOp::AllToAll,
        CollectiveOp::SendRecv,
    ] {
        p.collectives
            .push(curve(op, rail.clone(), LinkClass::NET, |b| {
                net_time_us(net, op, 2, b)
            }));
    }
    let mut source: Vec<String> = p.provenance.source.take().into_iter().collect();
    source.extend(net.sources.iter().map(|s| s.to_string()));
    p.provenance.source = Some(source.join(" | "));
    let mut notes: Vec<String> = vec![
        format!(
            "Two boxes (node 0: GPUs 0-{}, node 1: GPUs {}-{}); inside each box everything is the \
             one-box preset's (its notes follow), intra-node curves listed once for node 0.",
            per - 1,
            per,
            2 * per - 1
        ),
        format!(
            "Inter-node curves are modelled from published NIC figures, not measured: {} x {} Gb/s \
             {} NIC{} per box, NCCL's LL protocol as {} us per step + bytes / (25% of {} GB/s), \
             Simple as 2.5x that latency + bytes / {} GB/s, the faster taken; curves over one GPU \
             per node (GPUs 0 and {per}) and send/recv between them.",
            net.nics_per_node,
            net.nic_gbit_per_s,
            net.transport,
            if net.nics_per_node == 1 { "" } else { "s" },
            net.step_latency_us,
            net.achieved_gb_per_s,
            net.achieved_gb_per_s
        ),
    ];
    notes.extend(net.notes.iter().map(|s| s.to_string()));
    notes.extend(base.provenance.notes.iter().cloned());
    p.provenance.notes = notes;
    p
}
