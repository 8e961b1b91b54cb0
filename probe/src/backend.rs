//! The seam between "what to measure" and "where": the real GPUs (CUDA, NVML, NCCL) or a fake
//! machine read from a file, so the whole `probe run` path — plan, progress, classification,
//! summary, profile writing — runs deterministically on a CPU-only CI box (like hyperfine's mock
//! executor).

use crate::error::{ProbeError, Result};
use crate::nccl::runner::NcclOutcome;
use crate::plan::RunPlan;
use models::profile::{
    DeviceInfo, DeviceMemoryMeasurement, GemmMeasurement, HostDeviceMeasurement, LaunchKernel,
    LaunchKind, LaunchMeasurement, LinkClass, MachineProfile, PairLink, Stat, TransferMode,
};

/// What the inventory step found.
#[derive(Debug, Default)]
pub struct Inventory {
    /// The GPUs.
    pub devices: Vec<DeviceInfo>,
    /// Ordered pairs with topology and P2P status (no measurements yet).
    pub links: Vec<PairLink>,
    /// NVIDIA driver version (`580.159.04`).
    pub driver_version: Option<String>,
    /// CUDA driver API version (`13.0`).
    pub cuda_version: Option<String>,
    /// Remarks (e.g. NVML missing).
    pub notes: Vec<String>,
}

/// Progress callback: a short message per unit of work.
pub type Tick<'a> = &'a mut dyn FnMut(String);

/// A machine the probe can measure.
pub trait Backend {
    /// Checks the requested GPUs exist and returns the indices to measure.
    fn select(&mut self, gpus: Option<&[u32]>) -> Result<Vec<u32>>;
    /// GPUs, links, versions.
    fn inventory(&mut self) -> Result<Inventory>;
    /// Hypervisor name, `None` on bare metal.
    fn hypervisor(&self) -> Option<String>;
    /// Host ↔ device copies.
    fn host(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<HostDeviceMeasurement>>;
    /// On-device copies.
    fn device_memory(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<DeviceMemoryMeasurement>>;
    /// Fills every link's curves and latency; with one GPU adds its host-bounce loop link.
    /// `sampled[i]` says whether `links[i]` gets every P2P size (see [`RunPlan::p2p_sizes_for`]);
    /// links beyond its end (the loop link added here) are sampled.
    fn p2p(
        &mut self,
        plan: &RunPlan,
        links: &mut Vec<PairLink>,
        sampled: &[bool],
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<()>;
    /// NCCL collectives over `groups`.
    fn nccl(
        &mut self,
        plan: &RunPlan,
        groups: &[Vec<u32>],
        links: &[PairLink],
        tick: Tick,
    ) -> Result<NcclOutcome>;
    /// GEMM ceilings.
    fn gemm(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<GemmMeasurement>>;
    /// Kernel-launch floors per GPU.
    fn launch(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<LaunchMeasurement>>;
}

/// The loop link used to record a single GPU's D → H → D bounce.
pub fn self_link(gpu: u32) -> PairLink {
    PairLink::new(gpu, gpu, LinkClass::X)
}

/// A fake machine: a profile file whose measured sections are served back as if measured.
/// Selecting more GPUs than its `devices` fails exactly like the real backend; a file with no
/// devices behaves like a machine without GPUs.
pub struct FakeBackend {
    machine: MachineProfile,
    selected: Vec<u32>,
}

impl FakeBackend {
    /// Loads a fake machine description (a machine-profile JSON file).
    pub fn load(path: &std::path::Path) -> Result<FakeBackend> {
        Ok(FakeBackend {
            machine: MachineProfile::load(path)?,
            selected: Vec::new(),
        })
    }

    fn has(&self, devices: &[u32]) -> bool {
        devices.iter().all(|d| self.selected.contains(d))
    }
}

impl Backend for FakeBackend {
    fn select(&mut self, gpus: Option<&[u32]>) -> Result<Vec<u32>> {
        let all: Vec<u32> = self.machine.devices.iter().map(|d| d.index).collect();
        if all.is_empty() {
            return Err(ProbeError::NoGpu);
        }
        let want = gpus.map(|g| g.to_vec()).unwrap_or_else(|| all.clone());
        if let Some(&bad) = want.iter().find(|g| !all.contains(g)) {
            return Err(ProbeError::TooFewGpus {
                asked: bad,
                available: all.len() as u32,
            });
        }
        self.selected = want.clone();
        Ok(want)
    }

    fn inventory(&mut self) -> Result<Inventory> {
        let m = &self.machine;
        Ok(Inventory {
            devices: m
                .devices
                .iter()
                .filter(|d| self.selected.contains(&d.index))
                .cloned()
                .collect(),
            links: m
                .links
                .iter()
                .filter(|l| l.src != l.dst && self.has(&[l.src, l.dst]))
                // What an inventory knows of the pair; measurements come later.
                .map(|l| PairLink {
                    nvml_p2p_status: l.nvml_p2p_status.clone(),
                    can_access_peer: l.can_access_peer,
                    ..PairLink::new(l.src, l.dst, l.topology)
                })
                .collect(),
            driver_version: m.provenance.driver_version.clone(),
            cuda_version: m.provenance.cuda_version.clone(),
            notes: vec!["fake machine: figures come from the --fake-machine file".into()],
        })
    }

    fn hypervisor(&self) -> Option<String> {
        self.machine.provenance.hypervisor.clone()
    }

    fn host(
        &mut self,
        plan: &RunPlan,
        _: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<HostDeviceMeasurement>> {
        tick("host (fake)".into());
        // Like the real backend: --quick measures pageable copies once per NUMA node.
        let numa: Vec<(u32, Option<i32>)> = self
            .machine
            .devices
            .iter()
            .filter(|d| self.selected.contains(&d.index))
            .map(|d| (d.index, d.numa_node))
            .collect();
        let pageable_on = first_per_numa_node(&numa);
        Ok(self
            .machine
            .host_device
            .iter()
            .filter(|h| self.has(&h.devices))
            .filter(|h| {
                plan.host_pageable_all_gpus
                    || h.memory != models::profile::HostMemory::Pageable
                    || h.devices.iter().all(|d| pageable_on.contains(d))
            })
            .cloned()
            .collect())
    }

    fn device_memory(
        &mut self,
        _: &RunPlan,
        _: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<DeviceMemoryMeasurement>> {
        tick("device (fake)".into());
        Ok(self
            .machine
            .device_memory
            .iter()
            .filter(|d| self.has(&[d.device]))
            .cloned()
            .collect())
    }

    fn p2p(
        &mut self,
        plan: &RunPlan,
        links: &mut Vec<PairLink>,
        sampled: &[bool],
        _: &mut Vec<String>,
        tick: Tick,
    ) -> Result<()> {
        tick("p2p (fake)".into());
        if self.selected.len() == 1 && links.is_empty() {
            links.push(self_link(self.selected[0]));
        }
        for (i, l) in links.iter_mut().enumerate() {
            let full = sampled.get(i).copied().unwrap_or(true);
            if let Some(src) = self
                .machine
                .links
                .iter()
                .find(|m| m.src == l.src && m.dst == l.dst)
            {
                l.curves = src.curves.clone();
                l.latency_us = src.latency_us.clone();
                // Like the real backend: an unsampled --quick pair keeps its largest size only.
                if plan.p2p_sizes_for(full).len() < plan.p2p_sizes.len() {
                    for c in &mut l.curves {
                        let max = c.points.iter().map(|p| p.bytes).max();
                        c.points.retain(|p| Some(p.bytes) == max);
                    }
                }
                if l.can_access_peer.is_none() {
                    l.can_access_peer = src.can_access_peer;
                }
                // Like the real backend: with peer access kept off only staging is measured.
                if plan.no_peer_access && l.src != l.dst {
                    l.curves.retain(|c| c.mode == TransferMode::HostStaged);
                    let key = crate::cuda::p2p::mode_key(TransferMode::HostStaged);
                    l.latency_us.retain(|k, _| k == key);
                    l.evidence.push(crate::plan::NO_PEER_ACCESS_EVIDENCE.into());
                }
            }
        }
        Ok(())
    }

    fn nccl(
        &mut self,
        _: &RunPlan,
        groups: &[Vec<u32>],
        _: &[PairLink],
        tick: Tick,
    ) -> Result<NcclOutcome> {
        tick("nccl (fake)".into());
        Ok(NcclOutcome {
            curves: self
                .machine
                .collectives
                .iter()
                .filter(|c| groups.contains(&c.devices))
                .cloned()
                .collect(),
            version: self.machine.provenance.nccl_version.clone(),
            library_path: self.machine.provenance.nccl_library_path.clone(),
            notes: Vec::new(),
        })
    }

    fn gemm(
        &mut self,
        _: &RunPlan,
        _: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<GemmMeasurement>> {
        tick("gemm (fake)".into());
        Ok(self
            .machine
            .compute
            .iter()
            .filter(|g| self.has(&[g.device]))
            .cloned()
            .collect())
    }

    fn launch(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<LaunchMeasurement>> {
        tick("launch (fake)".into());
        if !self.machine.launch.is_empty() {
            return Ok(self
                .machine
                .launch
                .iter()
                .filter(|m| self.has(&[m.device]))
                .cloned()
                .collect());
        }
        notes.push("fake machine: launch floors synthesized (the file has no `launch` section): H200 figures from probe/profiles/h200-x1-launch*.json".into());
        Ok(self
            .selected
            .iter()
            .flat_map(|&d| fake_launch(d, plan))
            .collect())
    }
}

/// Plausible launch floors of one GPU for a fake machine without a `launch` section: what the
/// lent H200 measured (`profiles/h200-x1-launch.json` and the second run in its device log).
fn fake_launch(device: u32, plan: &RunPlan) -> Vec<LaunchMeasurement> {
    let stat = |median: f64| Stat {
        median,
        p10: median * 0.97,
        p90: median * 1.05,
        samples: plan.repeats.samples,
    };
    let (tokens, n, k) = plan.launch_gemm;
    let shape = format!("m={tokens} n={n} k={k} bf16");
    // (kernel, shape, graph µs per node, eager host µs per launch, eager GPU µs per kernel)
    let figures = [
        (LaunchKernel::Empty, None, 0.52, 3.7, 3.7),
        (LaunchKernel::TinyGemm, Some(shape), 2.37, 6.9, 6.9),
    ];
    figures
        .into_iter()
        .flat_map(|(kernel, shape, graph, host, eager_gpu)| {
            let m = |kind, per: f64, gpu: Option<f64>| LaunchMeasurement {
                device,
                kind,
                kernel,
                shape: shape.clone(),
                chain_length: plan.launch_chain_length,
                per_kernel_us: stat(per),
                gpu_per_kernel_us: gpu.map(stat),
            };
            [
                m(LaunchKind::GraphNode, graph, None),
                m(LaunchKind::EagerLaunch, host, Some(eager_gpu)),
            ]
        })
        .collect()
}

/// The real machine.
pub struct RealBackend {
    gpus: Vec<crate::cuda::Gpu>,
    /// NUMA node of each opened GPU (ordinal, node), from the inventory.
    numa: Vec<(u32, Option<i32>)>,
}

impl RealBackend {
    /// A backend that has not opened any GPU yet.
    pub fn new() -> RealBackend {
        RealBackend {
            gpus: Vec::new(),
            numa: Vec::new(),
        }
    }
}

/// The first GPU (in `numa` order) of each NUMA node; GPUs of unknown node count as one node.
pub fn first_per_numa_node(numa: &[(u32, Option<i32>)]) -> Vec<u32> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for &(gpu, node) in numa {
        if !seen.contains(&node) {
            seen.push(node);
            out.push(gpu);
        }
    }
    out
}

impl Default for RealBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend for RealBackend {
    fn select(&mut self, gpus: Option<&[u32]>) -> Result<Vec<u32>> {
        let n = crate::cuda::device_count()?;
        if n == 0 {
            return Err(ProbeError::NoGpu);
        }
        let want: Vec<u32> = gpus.map(|g| g.to_vec()).unwrap_or_else(|| (0..n).collect());
        self.gpus = crate::cuda::open_all(&want)?;
        Ok(want)
    }

    fn inventory(&mut self) -> Result<Inventory> {
        let inv = crate::cuda::inventory::inventory(&self.gpus)?;
        self.numa = inv.devices.iter().map(|d| (d.index, d.numa_node)).collect();
        Ok(inv)
    }

    fn hypervisor(&self) -> Option<String> {
        crate::hypervisor::HypervisorInfo::detect().name()
    }

    fn host(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<HostDeviceMeasurement>> {
        let pageable_on = if plan.host_pageable_all_gpus {
            self.gpus.iter().map(|g| g.ordinal).collect()
        } else {
            notes.push("--quick: pageable host copies measured on the first GPU of each NUMA node only (the CPU's staging copy, shared by a node's GPUs, limits them)".into());
            first_per_numa_node(&self.numa)
        };
        crate::cuda::host::measure_host(&self.gpus, &self.numa, &pageable_on, plan, notes, tick)
    }

    fn device_memory(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<DeviceMemoryMeasurement>> {
        crate::cuda::host::measure_device_memory(&self.gpus, plan, notes, tick)
    }

    fn p2p(
        &mut self,
        plan: &RunPlan,
        links: &mut Vec<PairLink>,
        sampled: &[bool],
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<()> {
        let setup = std::time::Instant::now();
        let ptx = match crate::cuda::kernels::copy_ptx() {
            Ok(p) => Some(p),
            Err(e) => {
                notes.push(format!("SM-kernel P2P copies skipped: {e}"));
                None
            }
        };
        if self.gpus.len() == 1 && links.is_empty() {
            links.push(self_link(self.gpus[0].ordinal));
        }
        // One kernel module per GPU, not per pair: loading it JIT-compiles the PTX.
        let mut kernels = Vec::new();
        if let Some(ptx) = ptx.as_ref().filter(|_| self.gpus.len() > 1) {
            for g in &self.gpus {
                kernels.push((g.ordinal, crate::cuda::kernels::CopyKernel::load(g, ptx)?));
            }
        }
        let largest = plan.p2p_sizes.iter().copied().max().unwrap_or(1 << 20);
        let mut bufs =
            crate::cuda::p2p::P2pBuffers::new(&self.gpus, largest, plan.p2p_check_bytes)?;
        let setup_s = setup.elapsed().as_secs_f64();
        let total = links.len();
        // Seconds per pair, split by sampled (every size) or not: the --quick budget's evidence.
        let (mut full_s, mut subset_s) = (Vec::new(), Vec::new());
        for (i, link) in links.iter_mut().enumerate() {
            let full = sampled.get(i).copied().unwrap_or(true);
            let pair_clock = std::time::Instant::now();
            tick(format!(
                "p2p {} -> {} ({}/{total})",
                link.src,
                link.dst,
                i + 1
            ));
            let a = self
                .gpus
                .iter()
                .find(|g| g.ordinal == link.src)
                .expect("selected GPU");
            let b = self
                .gpus
                .iter()
                .find(|g| g.ordinal == link.dst)
                .expect("selected GPU");
            let k = kernels
                .iter()
                .find(|(o, _)| *o == a.ordinal)
                .map(|(_, k)| k);
            crate::cuda::p2p::measure_pair(
                a,
                b,
                k,
                &mut bufs,
                plan,
                &plan.p2p_sizes_for(full),
                link,
            )?;
            let secs = pair_clock.elapsed().as_secs_f64();
            if full { &mut full_s } else { &mut subset_s }.push(secs);
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let mut timing = format!(
            "P2P timing: setup (NVRTC compile, module loads, buffers) {setup_s:.2} s; {} pairs over every size {:.3} s each",
            full_s.len(),
            mean(&full_s)
        );
        if !subset_s.is_empty() {
            timing += &format!(
                "; {} pairs at the largest size only {:.3} s each",
                subset_s.len(),
                mean(&subset_s)
            );
        }
        notes.push(timing);
        notes.push("P2P: SM-kernel copies use an NVRTC-compiled kernel (GPU A pushes into B's memory; for both directions it also pulls); host-staged copies are D2H into pinned memory then H2D, not pipelined, timed with the host clock".into());
        Ok(())
    }

    fn nccl(
        &mut self,
        plan: &RunPlan,
        groups: &[Vec<u32>],
        links: &[PairLink],
        tick: Tick,
    ) -> Result<NcclOutcome> {
        crate::nccl::runner::measure_nccl(plan, groups, links, tick)
    }

    fn gemm(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<GemmMeasurement>> {
        crate::cuda::gemm::measure_gemm(&self.gpus, plan, notes, tick)
    }

    fn launch(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<Vec<LaunchMeasurement>> {
        crate::cuda::launch::measure_launch(&self.gpus, plan, notes, tick)
    }
}

#[cfg(test)]
mod tests {
    use super::first_per_numa_node;

    #[test]
    fn one_gpu_per_numa_node_in_order() {
        let numa = [
            (0, Some(0)),
            (1, Some(0)),
            (4, Some(1)),
            (5, Some(1)),
            (7, None),
        ];
        assert_eq!(first_per_numa_node(&numa), vec![0, 4, 7]);
        assert_eq!(first_per_numa_node(&[]), Vec::<u32>::new());
    }
}
