//! The machine profile: what `probe` measured on a box (or what an importer or preset says),
//! versioned, in the units nccl-tests and p2pBandwidthLatencyTest print (GB/s = 1e9 B/s, µs).
//!
//! `probe` writes it, `sim` reads it, `reports` draws it. Readers must check `schema_version`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema version this build writes.
///
/// - 1: one node; devices, links, host↔device, device memory, collectives, GEMM ceilings.
/// - 2: adds `launch` (kernel-launch floors per GPU, `probe run --only launch`), `nodes` (one
///   entry per node of a multi-node profile; empty for one node), `DeviceInfo::node`, and the
///   link class `NET` for paths that leave a node. A v1 profile reads as a v2 profile with
///   those fields empty.
/// - 3: adds `virtualization` (hypervisor, IOMMU, P2P reported vs working), `nccl_transports`
///   (what NCCL picked per peer), `host_staging` (the host-staged paths by size) and
///   `pageable_variants`. A v1 or v2 profile reads with those empty.
pub const PROFILE_SCHEMA_VERSION: u32 = 3;

/// Every schema version this build reads.
pub const PROFILE_SCHEMA_VERSIONS_READ: &[u32] = &[1, 2, 3];

pub mod host_path;
pub mod vm_facts;

pub use vm_facts::{
    GpuIommu, HostRoundTrip, HostStagePath, HostStagedCurve, HypervisorFacts, IommuFacts,
    IommuMode, NcclPeerTransport, NcclTransport, P2pState, PageableVariant, PeerCheck,
    Virtualization,
};

/// Everything known about one machine's GPUs and the paths between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineProfile {
    /// Always [`PROFILE_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Who measured what, where, with which software.
    pub provenance: Provenance,
    /// Key of the GPU preset (`models::gpu`) these devices are, if known (e.g. `h200`).
    #[serde(default)]
    pub gpu_preset: Option<String>,
    /// The GPUs, by CUDA device index.
    #[serde(default)]
    pub devices: Vec<DeviceInfo>,
    /// Ordered GPU pairs: topology, P2P status and measured transfers.
    #[serde(default)]
    pub links: Vec<PairLink>,
    /// Host ↔ device copy bandwidths.
    #[serde(default)]
    pub host_device: Vec<HostDeviceMeasurement>,
    /// On-device copy bandwidth per GPU.
    #[serde(default)]
    pub device_memory: Vec<DeviceMemoryMeasurement>,
    /// NCCL collective curves per op and GPU group.
    #[serde(default)]
    pub collectives: Vec<CollectiveCurve>,
    /// Measured GEMM throughput.
    #[serde(default)]
    pub compute: Vec<GemmMeasurement>,
    /// Kernel-launch floors per GPU (schema 2; empty when not measured).
    #[serde(default)]
    pub launch: Vec<LaunchMeasurement>,
    /// The nodes of a multi-node profile, in node-rank order (schema 2; empty for one node).
    /// Device indices are then global: node `r`'s GPUs follow node `r − 1`'s, and every
    /// `DeviceInfo::node` names its node.
    #[serde(default)]
    pub nodes: Vec<NodeInfo>,
    /// Hypervisor, IOMMU and P2P reported vs working (schema 3; `None` when not probed).
    #[serde(default)]
    pub virtualization: Option<Virtualization>,
    /// The transport NCCL picked per peer of each measured group (schema 3).
    #[serde(default)]
    pub nccl_transports: Vec<NcclPeerTransport>,
    /// Host-staged copies by size: the path NCCL takes without P2P (schema 3).
    #[serde(default)]
    pub host_staging: Vec<HostStagedCurve>,
    /// Pageable host → device bandwidth by kind of host buffer (schema 3).
    #[serde(default)]
    pub pageable_variants: Vec<PageableVariant>,
    /// A kernel's dependent load and store-to-poll hop through host memory per GPU (schema 3,
    /// written by probe since the thirteenth session; absent in older profiles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_round_trips: Vec<HostRoundTrip>,
}

/// Provenance of a profile.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// What produced it: `probe run`, `probe import nccl-tests`, `preset`, …
    pub tool: String,
    /// Version of that tool.
    #[serde(default)]
    pub tool_version: String,
    /// RFC 3339 UTC time of the measurement.
    #[serde(default)]
    pub created_utc: String,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub driver_version: Option<String>,
    /// CUDA driver API version, e.g. `13.0`.
    #[serde(default)]
    pub cuda_version: Option<String>,
    #[serde(default)]
    pub nccl_version: Option<String>,
    /// Path of the libnccl actually loaded.
    #[serde(default)]
    pub nccl_library_path: Option<String>,
    /// Hypervisor the probe ran under (`KVM`, `Microsoft Hv`, …), `None` on bare metal.
    #[serde(default)]
    pub hypervisor: Option<String>,
    /// Environment that shaped the run (e.g. `NCCL_P2P_DISABLE=1`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// For presets and imports: where the numbers come from.
    #[serde(default)]
    pub source: Option<String>,
    /// Assumptions and remarks a reader should know.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// CUDA device index.
    pub index: u32,
    pub name: String,
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default)]
    pub pci_bus_id: Option<String>,
    #[serde(default)]
    pub numa_node: Option<i32>,
    #[serde(default)]
    pub pcie_gen_current: Option<u32>,
    #[serde(default)]
    pub pcie_gen_max: Option<u32>,
    #[serde(default)]
    pub pcie_width_current: Option<u32>,
    #[serde(default)]
    pub pcie_width_max: Option<u32>,
    pub memory_bytes: u64,
    /// e.g. `[9, 0]`.
    #[serde(default)]
    pub compute_capability: Option<[u32; 2]>,
    /// Node rank this GPU sits on (schema 2; 0 in one-node profiles).
    #[serde(default)]
    pub node: u32,
}

/// Link class between two GPUs, as `nvidia-smi topo -m` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LinkClass {
    /// Same device.
    X,
    /// At most one PCIe bridge.
    PIX,
    /// Several PCIe bridges, no host bridge.
    PXB,
    /// Through a PCIe host bridge (the CPU).
    PHB,
    /// Across host bridges within one NUMA node.
    NODE,
    /// Across NUMA nodes (the SMP interconnect between sockets).
    SYS,
    /// NVLink with this many links.
    NV(u32),
    /// Across nodes, over the network (NCCL's NET transport: InfiniBand, RoCE or sockets);
    /// `nvidia-smi topo -m` does not print it, NCCL's topology does (schema 2).
    NET,
    Unknown,
}

/// Verdict on a GPU pair's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairClass {
    /// Direct peer-to-peer works and data arrives intact.
    P2p,
    /// Copies work but go through host memory (no usable P2P).
    HostBounce,
    /// Copies report success but data does not arrive (or peer access fails outright).
    Broken,
}

/// How bytes were moved between two GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransferMode {
    /// Peer access enabled, copy engine (`cuMemcpyPeerAsync`).
    CopyEngine,
    /// Peer access enabled, an SM kernel reading/writing peer memory.
    SmKernel,
    /// Peer access disabled: staged through pinned host memory.
    HostStaged,
}

/// One direction or both at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// src → dst only.
    Unidirectional,
    /// src → dst and dst → src at once; bandwidth is the sum of both.
    Bidirectional,
}

/// Summary of repeated samples: median with p10 / p90.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    /// Samples the summary is over (1 for imported single figures).
    pub samples: u32,
}

impl Stat {
    /// A single figure with no spread (imports, presets).
    pub fn exact(v: f64) -> Self {
        Stat {
            median: v,
            p10: v,
            p90: v,
            samples: 1,
        }
    }
}

/// One message size's result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizePoint {
    pub bytes: u64,
    pub time_us: Stat,
    pub gb_per_s: Stat,
}

/// Bandwidth vs message size for one transfer mode and direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransferCurve {
    pub mode: TransferMode,
    pub direction: Direction,
    pub points: Vec<SizePoint>,
    /// Whether every transfer's data was verified at the destination.
    #[serde(default)]
    pub data_verified: Option<bool>,
}

/// An ordered GPU pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairLink {
    pub src: u32,
    pub dst: u32,
    pub topology: LinkClass,
    /// NVML's P2P status for read/write (`OK`, `NotSupported`, `ChipsetNotSupported`, …).
    #[serde(default)]
    pub nvml_p2p_status: Option<String>,
    /// `cuDeviceCanAccessPeer`.
    #[serde(default)]
    pub can_access_peer: Option<bool>,
    #[serde(default)]
    pub classification: Option<PairClass>,
    /// Why it was classified so (measured facts, one per line).
    #[serde(default)]
    pub evidence: Vec<String>,
    /// Latency of a small copy, µs, by mode.
    #[serde(default)]
    pub latency_us: BTreeMap<String, Stat>,
    #[serde(default)]
    pub curves: Vec<TransferCurve>,
}

impl PairLink {
    /// The ordered pair `src → dst` over a `topology` link, nothing measured or classified yet.
    pub fn new(src: u32, dst: u32, topology: LinkClass) -> PairLink {
        PairLink {
            src,
            dst,
            topology,
            nvml_p2p_status: None,
            can_access_peer: None,
            classification: None,
            evidence: Vec::new(),
            latency_us: BTreeMap::new(),
            curves: Vec::new(),
        }
    }
}

/// Host memory kind for host↔device copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostMemory {
    Pinned,
    Pageable,
}

/// Direction of a host↔device copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostDirection {
    HostToDevice,
    DeviceToHost,
    /// Both at once; bandwidth is the sum.
    Both,
}

/// Host↔device bandwidth on one GPU, or on all GPUs at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostDeviceMeasurement {
    /// The GPUs copying at once (one for a per-GPU figure, all for the shared-host figure).
    pub devices: Vec<u32>,
    pub memory: HostMemory,
    pub direction: HostDirection,
    pub bytes: u64,
    /// Aggregate bandwidth over `devices`.
    pub gb_per_s: Stat,
}

/// On-device copy bandwidth of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemoryMeasurement {
    pub device: u32,
    pub bytes: u64,
    /// Copy bandwidth counting bytes copied once (read + write is twice this much traffic).
    pub copy_gb_per_s: Stat,
}

/// NCCL collectives, nccl-tests' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    SendRecv,
}

impl CollectiveOp {
    /// nccl-tests' bus-bandwidth factor for `n` ranks: busbw = algbw × factor.
    pub fn busbw_factor(&self, n: u32) -> f64 {
        let n = n.max(1) as f64;
        match self {
            CollectiveOp::AllReduce => 2.0 * (n - 1.0) / n,
            CollectiveOp::AllGather | CollectiveOp::ReduceScatter | CollectiveOp::AllToAll => {
                (n - 1.0) / n
            }
            CollectiveOp::SendRecv => 1.0,
        }
    }
}

/// Outcome of one collective size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollectiveStatus {
    Ok,
    /// Did not finish before the watchdog; the communicator was aborted.
    Hang,
    /// Finished with a wrong result.
    WrongResult,
    /// NCCL returned an error.
    Error,
}

/// One message size of a collective (nccl-tests' `size` column is `bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CollectivePoint {
    /// Message size as nccl-tests counts it (total buffer size per rank for all-reduce, the
    /// gathered output size for all-gather, …).
    pub bytes: u64,
    pub time_us: Stat,
    pub algbw_gb_per_s: f64,
    pub busbw_gb_per_s: f64,
    pub status: CollectiveStatus,
}

/// Time vs size for one collective over one GPU group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveCurve {
    pub op: CollectiveOp,
    /// CUDA device indices of the group.
    pub devices: Vec<u32>,
    /// The worst link class inside the group (what the collective has to cross).
    #[serde(default)]
    pub link_class: Option<LinkClass>,
    /// NCCL environment in force (`NCCL_P2P_DISABLE`, `NCCL_P2P_LEVEL`, …); empty = defaults.
    #[serde(default)]
    pub nccl_env: BTreeMap<String, String>,
    pub points: Vec<CollectivePoint>,
}

/// GEMM throughput at one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GemmMeasurement {
    pub device: u32,
    /// `bf16`, `fp8`, …
    pub dtype: String,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub time_us: Stat,
    pub tflops: Stat,
}

/// What a launch-floor sample times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchKind {
    /// A chain of kernels captured in a CUDA graph and replayed: GPU time per graph node, the
    /// floor every kernel of a graph-mode decode step pays.
    GraphNode,
    /// The same chain launched one kernel at a time from the probe's thread: host (CPU) time
    /// per launch, what an eager (`--disable-cuda-graph`) step pays per kernel on the CPU.
    EagerLaunch,
}

/// The kernel a launch-floor chain is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchKernel {
    /// An empty kernel (one block, no work).
    Empty,
    /// A tiny GEMM (one token row against a small weight tile; see `shape`).
    TinyGemm,
}

/// Kernel-launch floor of one GPU for one kind and kernel (schema 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchMeasurement {
    pub device: u32,
    pub kind: LaunchKind,
    pub kernel: LaunchKernel,
    /// The kernel's shape where it has one, e.g. `m=1 n=256 k=256 bf16`.
    #[serde(default)]
    pub shape: Option<String>,
    /// Kernels in one timed chain.
    pub chain_length: u32,
    /// Time per kernel: GPU µs per node for `graph-node`, host µs per launch for `eager-launch`.
    pub per_kernel_us: Stat,
    /// For `eager-launch`: GPU µs per kernel of the eagerly launched chain (launch-bound when
    /// it is close to `per_kernel_us`).
    #[serde(default)]
    pub gpu_per_kernel_us: Option<Stat>,
}

/// A network interface of a node (schema 2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NicInfo {
    /// Interface or HCA name (`eth0`, `mlx5_0`).
    pub name: String,
    /// `infiniband`, `roce`, `ethernet`, `loopback`, …
    #[serde(default)]
    pub kind: Option<String>,
    /// Link speed, Gbit/s, where the system reports it.
    #[serde(default)]
    pub speed_gbit_per_s: Option<f64>,
    /// Whether NCCL's `NCCL_DEBUG=INFO` net lines show NCCL using it.
    #[serde(default)]
    pub used_by_nccl: bool,
}

/// One node of a multi-node profile (schema 2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Node rank (0 wrote the merged profile).
    pub rank: u32,
    #[serde(default)]
    pub hostname: Option<String>,
    /// Global indices (into `devices`) of this node's GPUs.
    pub devices: Vec<u32>,
    /// Where rank and world size came from: `flags`, `slurm`, `openmpi`, `mpich`, `pmi`,
    /// `torchrun`.
    #[serde(default)]
    pub launcher: Option<String>,
    /// NCCL's network transport between nodes: `IB`, `RoCE`, `Socket`.
    #[serde(default)]
    pub net_transport: Option<String>,
    #[serde(default)]
    pub nics: Vec<NicInfo>,
    /// Facts about how this node was measured (its own provenance notes, env).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl MachineProfile {
    /// A profile of the current schema with `provenance` and nothing measured yet.
    pub fn empty(provenance: Provenance) -> MachineProfile {
        MachineProfile {
            schema_version: PROFILE_SCHEMA_VERSION,
            provenance,
            gpu_preset: None,
            devices: Vec::new(),
            links: Vec::new(),
            host_device: Vec::new(),
            device_memory: Vec::new(),
            collectives: Vec::new(),
            compute: Vec::new(),
            launch: Vec::new(),
            nodes: Vec::new(),
            virtualization: None,
            nccl_transports: Vec::new(),
            host_staging: Vec::new(),
            pageable_variants: Vec::new(),
            host_round_trips: Vec::new(),
        }
    }

    /// The machine's P2P state: what `probe` classified (`virtualization.p2p_state`), else the
    /// state of its described pairs ([`P2pState::of_links`]); `None` when nothing says.
    pub fn p2p_state(&self) -> Option<P2pState> {
        self.virtualization
            .as_ref()
            .and_then(|v| v.p2p_state)
            .or_else(|| P2pState::of_links(&self.links))
    }

    /// Writes the profile as pretty JSON atomically: a temp file beside `path`, then a rename, so a
    /// failure never leaves a partial file.
    pub fn save_atomic(&self, path: &std::path::Path) -> crate::error::Result<()> {
        let text = serde_json::to_string_pretty(self).expect("profile serializes");
        write_atomic(path, text.as_bytes())
    }
}

/// Moved to [`crate::io::write_atomic`]; kept here so callers of the old path still build.
pub use crate::io::write_atomic;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_profile_reads_with_the_v2_fields_empty() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../probe/profiles/h200-x2.json"
        ));
        let p = MachineProfile::load(path).expect("the committed v1 profile reads");
        assert_eq!(p.schema_version, 1);
        assert_eq!(p.devices.len(), 2);
        assert!(p.launch.is_empty() && p.nodes.is_empty());
        assert!(p.devices.iter().all(|d| d.node == 0));
    }

    #[test]
    fn an_unknown_schema_version_is_refused() {
        let err = MachineProfile::from_json_str(
            r#"{"schema_version": 99, "provenance": {"tool": "x"}}"#,
            std::path::Path::new("p.json"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("99"), "{err}");
    }
}
