//! The machine a server runs on: GPU spec, GPU count and interconnect, from a probe profile or a
//! built-in preset (`sim::presets`).
//!
//! Communication comes from the profile's measured collective curves for the group size and link
//! class actually used ([`interconnect`]); GPUs are placed by topology ([`placement`]). A machine
//! is nodes × GPUs per node ([`nodes`]): a one-node profile or preset is one box, a multi-node
//! profile (schema 2 `nodes`) or a `…x8x2…` preset several, and a group that spans nodes uses the
//! inter-node curves, hierarchically where nothing was measured on that group ([`network`]). Compute
//! ceilings are the GPU datasheet's, unless the profile measured them: a measured device copy
//! bandwidth or GEMM throughput rescales the datasheet peak (see [`Machine::memory_peak_scale`]).

pub mod curve;
pub mod interconnect;
pub mod nccl_env;
pub mod nccl_model;
pub mod network;
pub mod nodes;
pub mod placement;
pub mod shm_figures;
pub mod shm_ring;
mod subset;

use crate::error::{Result, SimError};
use curve::CommCurve;
use interconnect::Interconnect;
use models::profile::{CollectiveCurve, CollectiveOp, LinkClass, MachineProfile, PairClass};
use models::{GpuSpec, Layout};
use network::{Network, Nics};
use nodes::Topology;
use placement::Placement;
use std::path::Path;

/// What a device-to-device copy typically reaches of the datasheet memory bandwidth (read + write
/// traffic): ~90% (e.g. H100 SXM copies ≈ 3.0 of 3.35 TB/s). A measured copy bandwidth is compared
/// with this to rescale the efficiency curves, which are fitted against datasheet peaks.
const TYPICAL_COPY_FRACTION: f64 = 0.90;

/// A machine: what it has and how its GPUs talk.
#[derive(Debug, Clone)]
pub struct Machine {
    /// The GPU model (datasheet figures).
    pub gpu: GpuSpec,
    /// GPUs in the machine.
    pub gpu_count: u32,
    /// The profile it was built from (measured, or a preset).
    pub profile: MachineProfile,
    name: String,
    /// Devices in topology order (nearest-neighbour chain), see [`placement`].
    order: Vec<u32>,
    /// Device memory per GPU, bytes (the profile's, else the datasheet's).
    memory_bytes: u64,
    memory_peak_scale: f64,
    /// Where numbers were assumed or derived rather than measured.
    notes: Vec<String>,
    /// Nodes, and the link class of every GPU pair.
    topology: Topology,
    /// Curves measured inside one node.
    intra: Vec<CollectiveCurve>,
    /// Curves measured on groups that span nodes, and those of them with one GPU per node.
    spanning: Vec<CollectiveCurve>,
    rails: Vec<CollectiveCurve>,
    nics: Nics,
    /// The pairs as the engines' own P2P check sees them (`cudaDeviceCanAccessPeer` and a test
    /// copy): the profile's links, kept when only NCCL is told not to use P2P.
    peer_links: Vec<models::profile::PairLink>,
}

/// The path an engine's custom all-reduce takes between a group's GPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PeerPath {
    /// Peer access works: loads and stores go straight to the peer.
    Real,
    /// Peer access reported but every access crosses the host: the group's slowest pair's
    /// small peer-copy latency (s) and peak one-way bandwidth (bytes/s).
    Routed { latency_s: f64, bytes_per_s: f64 },
}

impl Machine {
    /// A machine from a preset name (`sim::presets`) or the path of a probe profile JSON file.
    pub fn resolve(name_or_path: &str) -> Result<Machine> {
        if let Some(profile) = crate::presets::machine_preset(name_or_path) {
            return Machine::from_profile(name_or_path, profile);
        }
        let path = Path::new(name_or_path);
        if path.exists() {
            let profile = MachineProfile::load(path)?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| name_or_path.to_string());
            return Machine::from_profile(&name, profile).map_err(|e| match e {
                SimError::Profile { problem, .. } => SimError::Profile {
                    path: path.to_path_buf(),
                    problem,
                },
                other => other,
            });
        }
        Err(SimError::UnknownMachine {
            name: name_or_path.to_string(),
            known: crate::presets::machine_preset_names().join(", "),
        })
    }

    /// A machine from an already loaded profile, named `name`.
    pub fn from_profile(name: &str, profile: MachineProfile) -> Result<Machine> {
        let problem = |p: String| SimError::Profile {
            path: name.into(),
            problem: p,
        };
        if profile.devices.is_empty() {
            return Err(problem(
                "lists no GPUs (`devices` is empty); re-run `probe run` on the machine".into(),
            ));
        }
        let gpu = resolve_gpu(&profile).map_err(problem)?;
        let topology = Topology::from_profile(&profile).map_err(problem)?;
        let mut notes = Vec::new();
        let memory_bytes = profile
            .devices
            .iter()
            .map(|d| d.memory_bytes)
            .filter(|&m| m > 0)
            .min()
            .unwrap_or(gpu.memory_bytes);
        let memory_peak_scale = measured_memory_scale(&profile, &gpu, &mut notes);
        let devices: Vec<u32> = profile.devices.iter().map(|d| d.index).collect();
        let (spanning, intra): (Vec<_>, Vec<_>) = profile
            .collectives
            .iter()
            .cloned()
            .partition(|c| topology.nodes_spanned(&c.devices) > 1);
        let rails: Vec<CollectiveCurve> = spanning
            .iter()
            .filter(|c| {
                let parts = topology.split_by_node(&c.devices);
                parts.iter().all(|(_, p)| p.len() == 1)
            })
            .cloned()
            .collect();
        let nics = Nics::from_profile(&profile, &mut notes);
        if topology.node_count() > 1 {
            notes.push(multi_node_note(&topology, &spanning, &profile));
        }
        let mut m = Machine {
            peer_links: profile.links.clone(),
            gpu_count: devices.len() as u32,
            gpu,
            name: name.to_string(),
            order: Vec::new(),
            memory_bytes,
            memory_peak_scale,
            notes,
            profile,
            topology,
            intra,
            spanning,
            rails,
            nics,
        };
        m.order = placement::topology_order(&devices, |a, b| m.link_class(a, b));
        Ok(m)
    }

    /// Nodes of the machine (1 for a single box).
    pub fn node_count(&self) -> u32 {
        self.topology.node_count()
    }

    /// GPUs in one node (the smallest, if they differ).
    pub fn gpus_per_node(&self) -> u32 {
        self.topology.gpus_per_node()
    }

    /// Which node each GPU sits on.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The preset name or the profile's file stem.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Assumptions made while building the machine (derived curves, missing measurements).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Device memory of one GPU, bytes (the smallest if the profile's devices differ).
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    /// Peak memory bandwidth of one GPU, bytes/s: the datasheet figure × [`Self::memory_peak_scale`].
    pub fn peak_memory_bytes_per_s(&self) -> f64 {
        self.gpu.memory_gb_per_s * 1e9 * self.memory_peak_scale
    }

    /// Measured device copy bandwidth ÷ what a healthy card of this model copies (90% of its
    /// datasheet bandwidth), clamped to 0.5–1.1; 1.0 when the profile measured none.
    pub fn memory_peak_scale(&self) -> f64 {
        self.memory_peak_scale
    }

    /// Measured GEMM throughput ÷ what the efficiency curves predict for that GEMM on the
    /// datasheet peak, for the compute class (`bf16`, `fp8`, `fp4`) of `kind` in `dtype`; clamped
    /// to 0.5–1.5, and 1.0 when the profile measured no GEMM of that class. The best measured
    /// shape of the class is used (the largest achieved TFLOP/s, the least disturbed run).
    pub fn compute_peak_scale(&self, kind: crate::efficiency::KernelKind, dtype: &str) -> f64 {
        use crate::efficiency::{EfficiencyModel, KernelKind, compute_class, normalize_dtype};
        let class = compute_class(kind, dtype);
        let best = self
            .profile
            .compute
            .iter()
            .filter(|g| {
                normalize_dtype(&g.dtype)
                    .is_some_and(|d| compute_class(KernelKind::DenseGemm, d) == class)
            })
            .filter(|g| g.tflops.median.is_finite() && g.tflops.median > 0.0)
            .max_by(|a, b| a.tflops.median.total_cmp(&b.tflops.median));
        let Some(g) = best else {
            return 1.0;
        };
        let eff = EfficiencyModel::builtin();
        let dt = normalize_dtype(&g.dtype).unwrap_or("bf16");
        let expected = crate::efficiency::peak_tflops(&self.gpu, KernelKind::DenseGemm, dt)
            * eff.compute_fraction(&self.gpu, KernelKind::DenseGemm, dt, g.m.max(1));
        if expected <= 0.0 {
            return 1.0;
        }
        (g.tflops.median / expected).clamp(0.5, 1.5)
    }

    /// Peak dense tensor FLOP/s for a weight format name (`bf16`, `fp8`, `nvfp4`, `int4-g32`):
    /// fp4 formats use fp4 tensor cores where the GPU has them, int4 weights compute in bf16
    /// (W4A16), a format without its own tensor cores falls back to the next wider one.
    pub fn peak_flops_per_s(&self, dtype: &str) -> f64 {
        let g = &self.gpu;
        let tflops = if dtype.starts_with("nvfp4") || dtype.starts_with("fp4") {
            g.fp4_tflops.or(g.fp8_tflops).unwrap_or(g.bf16_tflops)
        } else if dtype.starts_with("fp8") {
            g.fp8_tflops.unwrap_or(g.bf16_tflops)
        } else {
            g.bf16_tflops
        };
        tflops * 1e12
    }

    /// True when GPUs talk over NVLink (the GPU has NVLink or a profile link says NV#).
    pub fn has_nvlink(&self) -> bool {
        self.gpu.nvlink_gb_per_s.is_some()
            || self
                .profile
                .links
                .iter()
                .any(|l| matches!(l.topology, LinkClass::NV(_)))
    }

    /// True when every pair of `devices` can do direct P2P (no host bounce, nothing broken, all
    /// on one node); pairs the profile does not describe count as P2P-capable.
    pub fn p2p_ok(&self, devices: &[u32]) -> bool {
        self.topology.nodes_spanned(devices) <= 1
            && self.profile.links.iter().all(|l| {
                !(devices.contains(&l.src) && devices.contains(&l.dst))
                    || (!matches!(
                        l.classification,
                        Some(PairClass::HostBounce) | Some(PairClass::Broken)
                    ) && l.can_access_peer != Some(false))
            })
    }

    /// The machine's P2P state over `devices` as NCCL sees it (`None`: no pair described).
    pub fn p2p_state(&self, devices: &[u32]) -> Option<models::profile::P2pState> {
        let inside: Vec<_> = self
            .profile
            .links
            .iter()
            .filter(|l| devices.contains(&l.src) && devices.contains(&l.dst))
            .cloned()
            .collect();
        models::profile::P2pState::of_links(&inside)
    }

    /// The path the engines' custom all-reduce takes over `devices` (their P2P check passes on
    /// `real` and `routed` pairs: the data arrives), `None` when a pair has no peer access or
    /// the group spans nodes.
    pub fn engine_peer_path(&self, devices: &[u32]) -> Option<PeerPath> {
        use models::profile::P2pState;
        if self.topology.nodes_spanned(devices) > 1 {
            return None;
        }
        let mut path = PeerPath::Real;
        for l in self
            .peer_links
            .iter()
            .filter(|l| l.src != l.dst && devices.contains(&l.src) && devices.contains(&l.dst))
        {
            match P2pState::of_link(l) {
                Some(P2pState::Off) => return None,
                Some(P2pState::Routed) => {
                    // the figures `probe`'s summary prints as its `host path: peer copy` line
                    let f = models::profile::host_path::peer_copy(l)?;
                    let (lat, bw) = (f.latency_us * 1e-6, f.gb_per_s * 1e9);
                    path = match path {
                        PeerPath::Routed {
                            latency_s,
                            bytes_per_s,
                        } => PeerPath::Routed {
                            latency_s: latency_s.max(lat),
                            bytes_per_s: bytes_per_s.min(bw),
                        },
                        PeerPath::Real => PeerPath::Routed {
                            latency_s: lat,
                            bytes_per_s: bw,
                        },
                    };
                }
                _ => {}
            }
        }
        Some(path)
    }

    /// The machine with the pairs `changed(src, dst)` in P2P `state` for NCCL only (the engines'
    /// own P2P check still sees the profile's pairs: `NCCL_P2P_DISABLE` and `NCCL_P2P_LEVEL` are
    /// NCCL's), named `name`.
    pub fn with_nccl_p2p(
        &self,
        state: models::profile::P2pState,
        changed: &dyn Fn(u32, u32) -> bool,
        why: &str,
    ) -> Result<Machine> {
        let p = crate::p2p_variant::with_state(&self.profile, state, changed, why);
        let mut m = Machine::from_profile(&self.name, p)?;
        m.peer_links = self.peer_links.clone();
        m.notes.push(format!("NCCL P2P {state}: {why}"));
        Ok(m)
    }

    /// Link class between two GPUs: NET across nodes; inside a node the profile's
    /// `nvidia-smi topo -m` class, else from NUMA nodes (same node → NODE, different → SYS), else
    /// Unknown.
    pub fn link_class(&self, a: u32, b: u32) -> LinkClass {
        if a == b {
            return LinkClass::X;
        }
        self.topology
            .class(a, b)
            .unwrap_or_else(|| nodes::intra_class(&self.profile, a, b))
    }

    /// The GPUs each stage of `layout` runs on (topology-aware, see [`placement`]); a layout of
    /// fewer GPUs than the machine gets the best-placed ones and leaves the rest idle.
    pub fn place(&self, layout: &Layout) -> Result<Placement> {
        let needed = layout.tp * layout.pp;
        if needed > self.gpu_count || needed == 0 {
            return Err(SimError::NotEnoughGpus {
                layout: layout.short_name(),
                machine: self.name.clone(),
                needed,
                available: self.gpu_count,
            });
        }
        let mut p = if needed == self.gpu_count {
            placement::place(&self.order, layout.tp, layout.pp)
        } else {
            placement::place_best(
                &self.order,
                layout.tp,
                layout.pp,
                |a, b| self.link_class(a, b),
                |d| self.topology.node_of(d).unwrap_or(0),
            )
        };
        let used: Vec<u32> = p.stages.iter().flatten().copied().collect();
        p.nodes = self.topology.nodes_spanned(&used);
        p.idle_gpus = self.gpu_count - needed;
        Ok(p)
    }

    /// Resolves curves inside one node, with `class_of` giving link classes.
    fn intra<'a>(&'a self, class_of: &'a dyn Fn(u32, u32) -> LinkClass) -> Interconnect<'a> {
        Interconnect {
            collectives: &self.intra,
            links: &self.profile.links,
            gpu: &self.gpu,
            class_of,
            staging: Some(&self.profile),
        }
    }

    /// Time vs bytes of collective `op` over `devices`, measured or derived (the curve's `source`
    /// says which). A group that spans nodes uses the inter-node curves ([`network`]).
    pub fn collective(&self, op: CollectiveOp, devices: &[u32]) -> CommCurve {
        let class_of = |a: u32, b: u32| self.link_class(a, b);
        let intra = self.intra(&class_of);
        if self.topology.nodes_spanned(devices) <= 1 {
            return intra.curve(op, devices);
        }
        Network {
            topology: &self.topology,
            spanning: &self.spanning,
            rails: &self.rails,
            intra: &intra,
            nics: &self.nics,
        }
        .curve(op, devices)
    }

    /// Send/recv of one TP rank's slice from pipeline stage `from` to `to` while every rank of the
    /// stage sends its own: across nodes the ranks share the NICs between the two nodes, so each
    /// gets `NICs / ranks` of them; inside a node the pair's curve as it is.
    pub fn stage_hop(&self, from: &[u32], to: &[u32]) -> CommCurve {
        let pair = [from[0], to[0]];
        let c = self.collective(CollectiveOp::SendRecv, &pair);
        let (Some(a), Some(b)) = (
            self.topology.node_of(pair[0]),
            self.topology.node_of(pair[1]),
        ) else {
            return c;
        };
        if a == b {
            return c;
        }
        let ranks = from.len() as u32;
        let nics = self.nics.rails_between(a, b).min(ranks);
        if ranks <= nics {
            return c;
        }
        let share = ranks as f64 / nics as f64;
        let source = format!(
            "{}; the {ranks} TP ranks send at once over {nics} NIC{}",
            c.source,
            if nics == 1 { "" } else { "s" }
        );
        c.at_scaled_bytes(share, source)
    }

    /// The worst link class inside a group of GPUs.
    pub fn worst_link_class(&self, devices: &[u32]) -> LinkClass {
        let class_of = |a: u32, b: u32| self.link_class(a, b);
        self.intra(&class_of).worst_class(devices)
    }
}

/// One line on how a multi-node machine's network is known.
fn multi_node_note(t: &Topology, spanning: &[CollectiveCurve], p: &MachineProfile) -> String {
    let per: Vec<String> = t.nodes().map(|(_, d)| d.len().to_string()).collect();
    let transport = p
        .nodes
        .iter()
        .find_map(|n| n.net_transport.clone())
        .unwrap_or_else(|| "an unnamed transport".into());
    let how = if p.provenance.tool == "preset" {
        "modelled from published NIC figures, not measured"
    } else {
        "measured"
    };
    format!(
        "{} nodes × {} GPUs over {transport}: {} inter-node curves ({how}); groups that span nodes with no curve of their own are costed hierarchically",
        t.node_count(),
        per.join("/"),
        spanning.len()
    )
}

/// The GPU spec: the profile's `gpu_preset`, else the first device's name matched loosely.
fn resolve_gpu(profile: &MachineProfile) -> std::result::Result<GpuSpec, String> {
    if let Some(key) = &profile.gpu_preset {
        return GpuSpec::preset(key).map_err(|e| e.to_string());
    }
    let name = &profile.devices[0].name;
    GpuSpec::find_by_display_name(name).ok_or_else(|| {
        format!(
            "GPU `{name}` matches no GPU preset; set `gpu_preset` to one of: {}",
            GpuSpec::preset_names().join(", ")
        )
    })
}

/// Rescaling of the datasheet memory bandwidth from a measured device copy, if any.
fn measured_memory_scale(profile: &MachineProfile, gpu: &GpuSpec, notes: &mut Vec<String>) -> f64 {
    let copies: Vec<f64> = profile
        .device_memory
        .iter()
        .map(|d| d.copy_gb_per_s.median)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if copies.is_empty() {
        return 1.0;
    }
    let copy = copies.iter().copied().fold(f64::INFINITY, f64::min);
    // a copy reads and writes every byte: traffic is twice the copied bytes
    let traffic = 2.0 * copy;
    let scale = (traffic / (gpu.memory_gb_per_s * TYPICAL_COPY_FRACTION)).clamp(0.5, 1.1);
    notes.push(format!(
        "memory bandwidth scaled ×{scale:.2}: measured copy {copy:.0} GB/s ({traffic:.0} GB/s traffic) vs {:.0} GB/s expected",
        gpu.memory_gb_per_s * TYPICAL_COPY_FRACTION
    ));
    scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::efficiency::{EfficiencyModel, KernelKind};
    use models::profile::{DeviceMemoryMeasurement, GemmMeasurement, Stat};

    fn vm() -> MachineProfile {
        crate::presets::machine_preset("rtx-pro-6000-x8-vm-hostbounce").unwrap()
    }

    #[test]
    fn measured_ceilings_rescale_the_datasheet() {
        let base = Machine::from_profile("vm", vm()).unwrap();
        assert_eq!(base.memory_peak_scale(), 1.0);
        assert_eq!(base.compute_peak_scale(KernelKind::DenseGemm, "fp8"), 1.0);
        let mut p = vm();
        // a copy at 0.9 × 0.9 × datasheet: a card 10% slower than a healthy one
        let copy = 0.5 * 0.9 * 0.9 * base.gpu.memory_gb_per_s;
        p.device_memory.push(DeviceMemoryMeasurement {
            device: 0,
            bytes: 1 << 30,
            copy_gb_per_s: Stat::exact(copy),
        });
        let (m, k) = (8192u64, 8192u64);
        let want = crate::efficiency::peak_tflops(&base.gpu, KernelKind::DenseGemm, "fp8")
            * EfficiencyModel::builtin().compute_fraction(
                &base.gpu,
                KernelKind::DenseGemm,
                "fp8",
                m,
            );
        p.compute.push(GemmMeasurement {
            device: 0,
            dtype: "fp8".into(),
            m,
            n: k,
            k,
            time_us: Stat::exact(1.0),
            tflops: Stat::exact(0.8 * want),
        });
        let measured = Machine::from_profile("vm-measured", p).unwrap();
        assert!((measured.memory_peak_scale() - 0.9).abs() < 1e-9);
        assert!((measured.compute_peak_scale(KernelKind::DenseGemm, "fp8") - 0.8).abs() < 1e-9);
        // other compute classes keep the datasheet
        assert_eq!(
            measured.compute_peak_scale(KernelKind::DenseGemm, "bf16"),
            1.0
        );
        assert!(!measured.notes().is_empty());
    }

    #[test]
    fn user_box_topology_places_tp4_stages_on_sockets() {
        let m = Machine::from_profile("vm", vm()).unwrap();
        let tp4pp2 = Layout {
            tp: 4,
            pp: 2,
            ep: 1,
            dp_attention: false,
        };
        let p = m.place(&tp4pp2).unwrap();
        assert_eq!(p.stages, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(m.worst_link_class(&p.stages[0]), LinkClass::NODE);
        assert_eq!(m.link_class(3, 4), LinkClass::SYS);
        // a 4-GPU all-reduce inside a socket uses the 4-GPU curve, the 8-GPU one the SYS curve
        let ar4 = m.collective(CollectiveOp::AllReduce, &p.stages[1]);
        let ar8 = m.collective(CollectiveOp::AllReduce, &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(ar4.source.contains("measured"), "{}", ar4.source);
        assert!(ar8.time_s(1e6) > ar4.time_s(1e6));
        assert!(m.place(&Layout::tp(16)).is_err());
    }

    #[test]
    fn missing_ops_are_derived_and_say_so() {
        let mut p = vm();
        p.collectives
            .retain(|c| c.op == CollectiveOp::AllReduce && c.devices.len() == 8);
        p.links.clear();
        let m = Machine::from_profile("sparse", p).unwrap();
        let ag = m.collective(CollectiveOp::AllGather, &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(ag.source.starts_with("derived"), "{}", ag.source);
        let ar2 = m.collective(CollectiveOp::AllReduce, &[0, 1]);
        assert!(ar2.source.contains("rescaled"), "{}", ar2.source);
        let sr = m.collective(CollectiveOp::SendRecv, &[3, 4]);
        assert!(sr.source.starts_with("derived"), "{}", sr.source);
        assert!(sr.time_s(1e6) > 0.0);
        let empty = MachineProfile {
            collectives: Vec::new(),
            ..m.profile.clone()
        };
        let bare = Machine::from_profile("none", empty).unwrap();
        let guess = bare.collective(CollectiveOp::AllReduce, &[0, 1, 2, 3]);
        assert!(guess.source.starts_with("assumed"), "{}", guess.source);
    }
}
