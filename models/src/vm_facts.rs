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
    use crate::profile::MachineProfile;

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
