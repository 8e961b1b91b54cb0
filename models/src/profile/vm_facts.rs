//! Schema-3 sections of the machine profile: what a VM looks like from inside (hypervisor,
//! IOMMU, P2P reported against P2P working), which transport NCCL picked per peer, and the
//! host-staged paths NCCL falls back to without P2P. Split from `profile` to keep it short;
//! re-exported there.

use crate::profile::{HostDirection, SizePoint, Stat};
use serde::{Deserialize, Serialize};

/// What the guest sees of virtualization and of its devices' address translation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Virtualization {
    pub hypervisor: HypervisorFacts,
    pub iommu: IommuFacts,
    /// Per ordered GPU pair: P2P as the driver and NVML report it against a verified copy.
    #[serde(default)]
    pub peers: Vec<PeerCheck>,
    /// The machine's P2P state as `probe` classified it from the pairs ([`P2pState::of_links`]),
    /// with the rule that decided (`None`: no pair measured, e.g. one GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_state: Option<P2pState>,
    /// Why: the pairs of each state and the figures that set them apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub p2p_evidence: Vec<String>,
}

/// What GPU-to-GPU traffic really does on a machine or a pair: the state every engine's choice of
/// all-reduce depends on.
///
/// - `real`: peer access works and a peer copy is faster than staging through host memory (NCCL's
///   `P2P/…` transports; SGLang's and vLLM's custom all-reduce where they run).
/// - `off`: no peer access (driver reports none, `NCCL_P2P_DISABLE=1`, an `NCCL_P2P_LEVEL` below
///   the pair's path, or peer copies that corrupt data): NCCL falls back to `SHM` through pinned
///   host memory, the engines' custom all-reduce disables itself.
/// - `routed`: peer access reported and copies arrive intact, but each one crosses the host (a VM
///   without a GPUDirect clique, an ACS/IOMMU redirect): told from `real` by a peer copy no
///   faster than a host-staged one (peak within 10 %, small-copy latency at least half the staged
///   one). NCCL keeps its `P2P` transport and the custom all-reduce runs, each over that path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum P2pState {
    Real,
    Off,
    Routed,
}

impl P2pState {
    /// The state's name as written in profiles and printed (`real`, `off`, `routed`).
    pub fn name(self) -> &'static str {
        match self {
            P2pState::Real => "real",
            P2pState::Off => "off",
            P2pState::Routed => "routed",
        }
    }

    /// Reads `real` / `off` / `routed` (case-insensitive).
    pub fn parse(s: &str) -> Option<P2pState> {
        match s.trim().to_ascii_lowercase().as_str() {
            "real" => Some(P2pState::Real),
            "off" => Some(P2pState::Off),
            "routed" => Some(P2pState::Routed),
            _ => None,
        }
    }

    /// The state of one ordered pair from its classification and `cuDeviceCanAccessPeer`: a
    /// `p2p` pair is `real`; a `host-bounce` pair whose driver reports peer access and whose
    /// timed peer copies were no faster than the host is `routed`; without peer access, with it
    /// left unused (only host-staged copies timed), or with peer copies that corrupt data
    /// (`broken`: an engine must not use them), `off`. `None` when neither was measured.
    pub fn of_link(link: &crate::profile::PairLink) -> Option<P2pState> {
        use crate::profile::PairClass;
        if link.src == link.dst {
            return None;
        }
        // a peer copy was timed: the pair's traffic really took the peer path
        let peer_timed = link
            .curves
            .iter()
            .any(|c| c.mode != crate::profile::TransferMode::HostStaged);
        match (link.classification, link.can_access_peer) {
            (Some(PairClass::P2p), _) => Some(P2pState::Real),
            (Some(PairClass::Broken), _) | (_, Some(false)) => Some(P2pState::Off),
            (Some(PairClass::HostBounce), Some(true)) if peer_timed => Some(P2pState::Routed),
            // peer access left unused (`--no-peer-access`, `NCCL_P2P_DISABLE=1`): staged only
            (Some(PairClass::HostBounce), _) => Some(P2pState::Off),
            (None, Some(true)) => Some(P2pState::Real),
            (None, None) => None,
        }
    }

    /// The machine's state over `links`: `real` when every described pair is; else `routed` if
    /// any pair is (custom all-reduce and NCCL's P2P transport then cross the host there), else
    /// `off`. `None` when no pair is described.
    pub fn of_links(links: &[crate::profile::PairLink]) -> Option<P2pState> {
        links
            .iter()
            .filter_map(P2pState::of_link)
            .max_by_key(|s| match s {
                P2pState::Real => 0,
                P2pState::Off => 1,
                P2pState::Routed => 2,
            })
    }
}

impl std::fmt::Display for P2pState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The hypervisor witnesses, each as read (none of them alone is proof).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HypervisorFacts {
    /// CPUID leaf 1 ECX bit 31 (x86_64 only; `None` elsewhere).
    #[serde(default)]
    pub cpuid_hypervisor_bit: Option<bool>,
    /// CPUID leaf 0x40000000 vendor signature (`KVMKVMKVM`, `Microsoft Hv`, …), asked only when
    /// the bit is set.
    #[serde(default)]
    pub cpuid_vendor: Option<String>,
    /// `/sys/class/dmi/id/sys_vendor` (`QEMU`, `Proxmox`, a server maker on bare metal).
    #[serde(default)]
    pub dmi_sys_vendor: Option<String>,
    /// `/sys/class/dmi/id/product_name` (`Standard PC (Q35 + ICH9, 2009)`, …).
    #[serde(default)]
    pub dmi_product_name: Option<String>,
    /// One name (`KVM (QEMU)`), `None` when no witness says there is a hypervisor.
    #[serde(default)]
    pub name: Option<String>,
}

/// How the IOMMU translates device addresses, as the guest sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IommuMode {
    /// No IOMMU unit and no group: devices use physical addresses (or the hypervisor hides it).
    Off,
    /// Groups of type `DMA` / `DMA-FQ`: every device access is translated.
    Translated,
    /// Groups of type `identity`: passthrough, addresses are physical.
    Passthrough,
    /// Units or groups present but no type readable.
    #[default]
    Unknown,
}

/// The IOMMU facts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IommuFacts {
    pub mode: IommuMode,
    /// `/sys/class/iommu/*` entries (`dmar0`, `ivhd0`, `virtio-iommu…`).
    #[serde(default)]
    pub units: Vec<String>,
    /// Number of `/sys/kernel/iommu_groups/*`.
    #[serde(default)]
    pub groups: u32,
    /// Page sizes the IOMMU maps, bytes (4 KiB always; 2 MiB / 1 GiB where the VT-d capability
    /// register says so). Empty when unknown.
    #[serde(default)]
    pub page_sizes_bytes: Vec<u64>,
    /// `iommu=`, `intel_iommu=`, `amd_iommu=` tokens of the kernel command line.
    #[serde(default)]
    pub cmdline: Vec<String>,
    /// Each GPU's IOMMU group and its type.
    #[serde(default)]
    pub gpus: Vec<GpuIommu>,
}

/// One GPU's IOMMU group.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GpuIommu {
    pub device: u32,
    #[serde(default)]
    pub pci_bus_id: Option<String>,
    #[serde(default)]
    pub group: Option<u32>,
    /// `/sys/kernel/iommu_groups/N/type`: `DMA`, `DMA-FQ`, `identity`, …
    #[serde(default)]
    pub group_type: Option<String>,
}

/// P2P reported against P2P working, for one ordered pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerCheck {
    pub src: u32,
    pub dst: u32,
    /// `cuDeviceCanAccessPeer`.
    #[serde(default)]
    pub reported_by_driver: Option<bool>,
    /// NVML's P2P read/write status.
    #[serde(default)]
    pub nvml_status: Option<String>,
    /// A peer copy ran and its data arrived intact (`Some(false)`: tried and failed or wrong;
    /// `None`: never tried, e.g. `--no-peer-access` or peer access refused).
    #[serde(default)]
    pub copy_works: Option<bool>,
}

/// A transport NCCL's `NCCL_DEBUG=INFO` channel lines name (`via P2P/IPC`, `via SHM/direct/direct`,
/// `via NET/IB/0/GDRDMA`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NcclTransport {
    /// `P2P/IPC`: peer memory mapped through CUDA IPC handles.
    P2pIpc,
    /// `P2P/direct pointer`: both ranks in one process, peer pointer used directly.
    P2pDirect,
    /// `P2P/CUMEM`: peer memory mapped through cuMem handles (NCCL ≥ 2.19).
    P2pCuMem,
    /// Another `P2P/…` flavour.
    P2pOther,
    /// `SHM`: staged through host shared memory (no usable P2P).
    Shm,
    /// `NET/…`: the network transport (sockets, IB, RoCE), also between GPUs of one host.
    Net,
    /// `CollNet…`.
    CollNet,
}

/// What NCCL picked from one GPU to another (all channels of that direction), under one NCCL
/// environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcclPeerTransport {
    /// NCCL environment of the run that printed it (empty = defaults).
    #[serde(default)]
    pub nccl_env: std::collections::BTreeMap<String, String>,
    /// Device indices NCCL printed (`0[0] -> 1[1]`; `None` where it printed a bus id).
    #[serde(default)]
    pub from_device: Option<u32>,
    #[serde(default)]
    pub to_device: Option<u32>,
    pub transport: NcclTransport,
    /// The line's text after `via` (`P2P/CUMEM/read`, `SHM/direct/direct`).
    pub via: String,
    /// Channels that used it.
    pub channels: u32,
}

/// The two ways bytes reach host memory when P2P is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostStagePath {
    /// SM loads/stores into mapped pinned host memory (`cuMemHostAlloc` DEVICEMAP), what NCCL's
    /// SHM transport does by default.
    MappedKernel,
    /// The copy engine (`cuMemcpy{DtoH,HtoD}Async` on pinned memory), NCCL's
    /// `NCCL_SHM_USE_CUDA_MEMCPY=1` path.
    CopyEngine,
}

/// A kernel's own round trips through mapped pinned host memory on one GPU: what one step of
/// NCCL's SHM ring pays, which a one-shot copy kernel's time ([`HostStagedCurve`]) holds together
/// with the kernel's own start and finish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRoundTrip {
    pub device: u32,
    /// One dependent 8-byte load from host memory (a pointer chase, thousands in one launch), µs.
    pub load_us: Stat,
    /// A store into host memory seen by another block polling it (half a ping-pong between two
    /// blocks through two flags, `st.release.sys` / `ld.acquire.sys`), µs.
    pub hop_us: Stat,
}

/// Host-staged bandwidth by size on one GPU, one path and direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostStagedCurve {
    pub device: u32,
    pub path: HostStagePath,
    /// `host-to-device` or `device-to-host`.
    pub direction: HostDirection,
    pub points: Vec<SizePoint>,
    /// The data was checked after the copies.
    #[serde(default)]
    pub data_verified: Option<bool>,
}

/// Pageable host → device bandwidth from one kind of host buffer: why pageable copies read what
/// they read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageableVariant {
    /// The buffer and copy (`malloc, touched`, `2 MiB-aligned, MADV_HUGEPAGE, touched`,
    /// `malloc, fresh (first touch inside the copy)`, …).
    pub buffer: String,
    pub device: u32,
    pub bytes: u64,
    pub gb_per_s: Stat,
}

#[cfg(test)]
mod tests {
    use super::P2pState;
    use crate::profile::{LinkClass, MachineProfile, PairClass, PairLink};

    #[test]
    fn pair_states_follow_the_class_and_the_driver() {
        let peer_curve = crate::profile::TransferCurve {
            mode: crate::profile::TransferMode::CopyEngine,
            direction: crate::profile::Direction::Unidirectional,
            points: Vec::new(),
            data_verified: Some(true),
        };
        let link = |class, peer| PairLink {
            classification: class,
            can_access_peer: peer,
            curves: vec![peer_curve.clone()],
            ..PairLink::new(0, 1, LinkClass::SYS)
        };
        // peer access reported but only host-staged copies timed (`--no-peer-access`): off
        let unused = PairLink {
            classification: Some(PairClass::HostBounce),
            can_access_peer: Some(true),
            ..PairLink::new(0, 1, LinkClass::SYS)
        };
        assert_eq!(P2pState::of_link(&unused), Some(P2pState::Off));
        let state = |c, p| P2pState::of_link(&link(c, p));
        assert_eq!(
            state(Some(PairClass::P2p), Some(true)),
            Some(P2pState::Real)
        );
        assert_eq!(
            state(Some(PairClass::HostBounce), Some(true)),
            Some(P2pState::Routed)
        );
        assert_eq!(
            state(Some(PairClass::HostBounce), Some(false)),
            Some(P2pState::Off)
        );
        assert_eq!(
            state(Some(PairClass::Broken), Some(true)),
            Some(P2pState::Off)
        );
        assert_eq!(state(None, None), None);
        let mixed = [
            link(Some(PairClass::P2p), Some(true)),
            link(Some(PairClass::HostBounce), Some(false)),
        ];
        assert_eq!(P2pState::of_links(&mixed), Some(P2pState::Off));
        assert_eq!(P2pState::of_links(&[]), None);
        for s in [P2pState::Real, P2pState::Off, P2pState::Routed] {
            assert_eq!(P2pState::parse(s.name()), Some(s));
        }
        assert_eq!(P2pState::parse("on"), None);
    }

    #[test]
    fn a_v2_profile_reads_with_the_v3_fields_empty() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../probe/profiles/h200-x1.json"
        ));
        let p = MachineProfile::load(path).expect("the committed v2 profile reads");
        assert_eq!(p.schema_version, 2);
        assert!(p.virtualization.is_none() && p.nccl_transports.is_empty());
        assert!(p.host_staging.is_empty() && p.pageable_variants.is_empty());
    }
}
