//! Eight GeForce cards (RTX 3090, 4090 or 5090) on one host's PCIe root ports, in the two P2P
//! states such boxes run: the stock driver, which gives GeForce cards no peer access (NCCL's SHM
//! ring and every copy through host memory), and the open kernel module patched for P2P
//! (tinygrad/open-gpu-kernel-modules and its forks), which gives every pair real peer access
//! over PCIe. Nothing of these boxes is measured by shardwise: the links are the public
//! `p2pBandwidthLatencyTest` figures cited below, and NCCL's collectives are costed from them at
//! load time (the ring over the links, `machine::interconnect`; without P2P the SHM ring over
//! the host path, `machine::shm_ring`), as for any profile without collective curves.

// P2P write latency: the bare-metal RTX PRO 6000 box's published 0.36–0.45 µs stands in (no
// consumer card's is cited here); a ring step's fixed cost is NCCL's, not this
use super::pcie::{P2P_LATENCY_US, figure_curve, published_p2p_link};
use super::{all_pairs, devices, profile};
use models::MachineProfile;
use models::profile::host_path::HostPathFigures;
use models::profile::{Direction, LinkClass, P2pState, PairLink, Stat, TransferMode};

/// One GeForce card and its PCIe figures.
pub struct Card {
    /// The machine presets' prefix (`rtx-4090` → `rtx-4090-x8-pcie`, `…-pcie-p2p`).
    pub key: &'static str,
    pub gpu_preset: &'static str,
    /// NVML's name of the card.
    pub name: &'static str,
    pub memory_mib: u64,
    pub compute_capability: [u32; 2],
    pub pcie_gen: u32,
    /// One way while the other way runs too (a ring step: every GPU sends and receives at
    /// once), with peer access, GB/s.
    pub p2p_gb_per_s: f64,
    /// Both ways at once with peer access, GB/s.
    pub p2p_bidir_gb_per_s: f64,
    /// The host path without peer access: the SHM ring's round trip and the host-staged rate one
    /// way while the other way runs too.
    pub staged: HostPathFigures,
    /// Where the link figures come from.
    pub source: &'static str,
}

/// `p2pBandwidthLatencyTest` on three RTX 4090 at PCIe Gen4 x16 with the P2P-patched open kernel
/// module 550.54.15-p2p (tinygrad/open-gpu-kernel-modules issue #6, 2024-04-23, the bidirectional
/// matrices): 25.6–26.2 GB/s both ways at once with P2P disabled (copies staged through host
/// memory), 41.4 GB/s with P2P enabled. Per direction under both-way load: 12.9 and 20.7 GB/s.
const GEN4_SOURCE: &str = "tinygrad/open-gpu-kernel-modules issue #6 (3x RTX 4090, PCIe Gen4 x16, \
     550.54.15-p2p, p2pBandwidthLatencyTest bidirectional matrices: P2P disabled 25.6-26.2 GB/s, \
     P2P enabled 41.4 GB/s)";
const GEN4_P2P_BIDIR_GB_PER_S: f64 = 41.4;
const GEN4_STAGED_BIDIR_GB_PER_S: f64 = 25.8;
/// The SHM ring's host round trip: a one-shot 4 KiB mapped-kernel load through host memory, as
/// `probe run --quick` measured it on the lent H200 KVM guest (3.18 µs,
/// `probe/profiles/h200-x1.vm-fields.json`; what `sim::p2p_variant` assumes for any box without
/// P2P whose host path was not measured). A PCIe round trip, which the link generation does not
/// set.
const SHM_LATENCY_US: f64 = 3.18;

pub const RTX_3090: Card = Card {
    key: "rtx-3090",
    gpu_preset: "rtx-3090",
    name: "NVIDIA GeForce RTX 3090",
    memory_mib: 24576,
    compute_capability: [8, 6],
    pcie_gen: 4,
    p2p_gb_per_s: GEN4_P2P_BIDIR_GB_PER_S / 2.0,
    p2p_bidir_gb_per_s: GEN4_P2P_BIDIR_GB_PER_S,
    staged: HostPathFigures {
        latency_us: SHM_LATENCY_US,
        gb_per_s: GEN4_STAGED_BIDIR_GB_PER_S / 2.0,
    },
    source: GEN4_SOURCE,
};

pub const RTX_4090: Card = Card {
    key: "rtx-4090",
    gpu_preset: "rtx-4090",
    name: "NVIDIA GeForce RTX 4090",
    memory_mib: 24564,
    compute_capability: [8, 9],
    ..RTX_3090
};

/// Gen5 x16, as the RTX PRO 6000: that box's published P2P figures (one way 53–56 GB/s within a
/// socket, both ways 103–111; `pcie.rs`) and Gen5 host-staged copies (~37 GB/s one way, halved
/// under both-way load as the Gen4 cards' are).
pub const RTX_5090: Card = Card {
    key: "rtx-5090",
    gpu_preset: "rtx-5090",
    name: "NVIDIA GeForce RTX 5090",
    memory_mib: 32607,
    compute_capability: [12, 0],
    pcie_gen: 5,
    p2p_gb_per_s: 107.0 / 2.0,
    p2p_bidir_gb_per_s: 107.0,
    staged: HostPathFigures {
        latency_us: SHM_LATENCY_US,
        gb_per_s: 37.0 / 2.0,
    },
    source: "the bare-metal 8x RTX PRO 6000 preset's published PCIe Gen5 x16 P2P figures \
             (one way 53-56 GB/s, both ways 103-111 GB/s; host-staged ~37 GB/s one way), the same \
             link as the RTX 5090's",
};

/// The cards the presets are built for.
pub const CARDS: [Card; 3] = [RTX_3090, RTX_4090, RTX_5090];

fn link(card: &Card) -> impl Fn(u32, u32) -> PairLink + '_ {
    move |s, d| {
        let curve =
            |direction, g: f64| figure_curve(TransferMode::CopyEngine, direction, Stat::exact(g));
        published_p2p_link(
            (s, d, LinkClass::NODE),
            P2P_LATENCY_US,
            vec![
                curve(Direction::Unidirectional, card.p2p_gb_per_s),
                curve(Direction::Bidirectional, card.p2p_bidir_gb_per_s),
            ],
        )
    }
}

/// Eight `card`s on one socket's root ports, with peer access (`p2p`: the patched open kernel
/// module) or without it (the stock driver).
pub fn preset(card: &Card, p2p: bool) -> MachineProfile {
    let notes = vec![
        format!(
            "Eight {} on one CPU socket's PCIe Gen{} x16 root ports (no PCIe switch, no NVLink; \
             `nvidia-smi topo -m` NODE between every pair, one NUMA node), as consumer 8-GPU \
             boxes are built; no such box is measured here.",
            card.name, card.pcie_gen
        ),
        format!(
            "Links with peer access (the P2P-patched open kernel module): {:.1} GB/s one way while \
             the other way runs too (every ring step sends and receives at once), {:.1} GB/s both \
             ways; latency the RTX PRO 6000 box's published 0.36-0.45 us. Without (the stock \
             driver): the host path at {:.2} GB/s one way under both-way load and a {:.2} us round \
             trip. No collective curve: NCCL's ring (P2P) or SHM ring (no P2P) is costed from \
             them at load time.",
            card.p2p_gb_per_s,
            card.p2p_bidir_gb_per_s,
            card.staged.gb_per_s,
            card.staged.latency_us
        ),
        "2-way NVLink bridges (RTX 3090 pairs) are not modelled.".to_string(),
    ];
    let mut p = profile(card.gpu_preset, &[card.source], &notes);
    p.devices = devices(
        8,
        card.name,
        card.memory_mib,
        Some((card.pcie_gen, 16)),
        card.compute_capability,
    );
    for d in &mut p.devices {
        d.numa_node = Some(0);
    }
    p.links = all_pairs(8, link(card));
    if p2p {
        return p;
    }
    sim::p2p_variant::with_host_path(
        &p,
        P2pState::Off,
        card.staged,
        "the stock driver gives GeForce cards no peer access over PCIe: NCCL runs its SHM ring \
         through host memory, at the host-staged copy's rate one way under both-way load",
    )
}
