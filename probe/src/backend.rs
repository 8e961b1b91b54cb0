//! The seam between "what to measure" and "where": the real GPUs (CUDA, NVML, NCCL) or a fake
//! machine read from a file (`crate::fake`), so the whole `probe run` path — plan, progress,
//! classification, summary, profile writing, several nodes over loopback — runs
//! deterministically on a CPU-only CI box (like hyperfine's mock executor).

use crate::error::{ProbeError, Result};
use crate::inventory::Inventory;
use crate::nccl::cross::CrossOutcome;
use crate::nccl::protocol::CrossHooks;
use crate::nccl::protocol::WorkerSpec;
use crate::nccl::runner::NcclOutcome;
use crate::plan::RunPlan;
use models::profile::{
    DeviceInfo, DeviceMemoryMeasurement, GemmMeasurement, HostDeviceMeasurement, HostRoundTrip,
    HostStagedCurve, LaunchMeasurement, LinkClass, NicInfo, PageableVariant, PairLink,
    Virtualization,
};

/// What the host-staging step measured: the no-P2P paths by size, and pageable copies by
/// kind of host buffer.
#[derive(Debug, Default)]
pub struct HostStaging {
    pub curves: Vec<HostStagedCurve>,
    pub pageable: Vec<PageableVariant>,
    /// Each GPU's dependent host load and store-to-poll hop (empty without NVRTC).
    pub round_trips: Vec<HostRoundTrip>,
}

/// Progress callback: a short message per unit of work.
pub type Tick<'a> = &'a mut dyn FnMut(String);

/// A machine the probe can measure.
pub trait Backend {
    /// Checks the requested GPUs exist and returns the indices to measure.
    fn select(&mut self, gpus: Option<&[u32]>) -> Result<Vec<u32>>;
    /// GPUs, links, versions.
    fn inventory(&mut self) -> Result<Inventory>;
    /// Hypervisor and IOMMU as the guest sees them (`peers` is filled by the run from the P2P
    /// step).
    fn virtualization(&self, devices: &[DeviceInfo]) -> Virtualization;
    /// The host-staged paths NCCL takes without P2P, and pageable copies by buffer kind.
    fn host_staging(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<HostStaging>;
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
    /// This node's network interfaces (multi-node runs).
    fn nics(&mut self) -> Vec<NicInfo>;
    /// A maker of fresh NCCL unique ids, made where this runs (node 0: one per cross-node
    /// group); independent of the backend's borrow, since ids are made during `nccl_cross`.
    fn unique_ids(&self) -> Box<dyn FnMut() -> Result<Vec<u8>>>;
    /// This node's ranks of every cross-node group of `spec`, in order, each group's start and
    /// results going through `hooks`.
    fn nccl_cross(&mut self, spec: &WorkerSpec, hooks: &mut dyn CrossHooks)
    -> Result<CrossOutcome>;
}

/// The loop link used to record a single GPU's D → H → D bounce.
pub fn self_link(gpu: u32) -> PairLink {
    PairLink::new(gpu, gpu, LinkClass::X)
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

    fn virtualization(&self, devices: &[DeviceInfo]) -> Virtualization {
        Virtualization {
            hypervisor: crate::hypervisor::HypervisorInfo::detect().facts(),
            iommu: crate::iommu::detect(std::path::Path::new("/"), devices),
            ..Virtualization::default()
        }
    }

    fn host_staging(
        &mut self,
        plan: &RunPlan,
        notes: &mut Vec<String>,
        tick: Tick,
    ) -> Result<HostStaging> {
        let ptx = crate::cuda::kernels::copy_ptx()
            .map_err(|e| notes.push(format!("host staging: no copy kernel: {e}")))
            .ok();
        let trips = crate::cuda::kernels::round_trip_ptx()
            .map_err(|e| notes.push(format!("host round trips: no kernels: {e}")))
            .ok();
        let mut out = HostStaging::default();
        for g in &self.gpus {
            tick(format!("host staging GPU {}", g.ordinal));
            let k = match &ptx {
                Some(p) => Some(crate::cuda::kernels::CopyKernel::load(g, p)?),
                None => None,
            };
            out.curves.extend(crate::cuda::staging::measure_staging(
                g,
                k.as_ref(),
                plan,
                notes,
            )?);
            if let Some(p) = &trips {
                match crate::cuda::staging::measure_round_trip(g, p, plan) {
                    Ok(t) => out.round_trips.push(t),
                    Err(e) => notes.push(format!("host round trips GPU {}: {e}", g.ordinal)),
                }
            }
        }
        if !out.round_trips.is_empty() {
            notes.push("host_round_trips: one thread's dependent 8-byte ld.volatile loads around 16 lines of one 4 KiB page of mapped pinned host memory, and half a ping-pong of two blocks through two host flags (st.release.sys / ld.acquire.sys), 5000 of each a launch, CUDA events: what one step of NCCL's SHM ring pays".into());
        }
        if let Some(g) = self.gpus.first() {
            tick(format!("pageable buffer kinds GPU {}", g.ordinal));
            out.pageable = crate::cuda::staging::measure_pageable_variants(g, plan)?;
            let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unreadable".into());
            notes.push(format!("pageable_variants: transparent huge pages setting `{thp}` (/sys/kernel/mm/transparent_hugepage/enabled); each variant is cuMemcpyHtoDAsync from that buffer, CUDA events"));
        }
        Ok(out)
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

    fn nics(&mut self) -> Vec<NicInfo> {
        crate::nic::sysfs_nics(std::path::Path::new("/sys"))
    }

    fn unique_ids(&self) -> Box<dyn FnMut() -> Result<Vec<u8>>> {
        Box::new(crate::nccl::cross::unique_id)
    }

    fn nccl_cross(
        &mut self,
        spec: &WorkerSpec,
        hooks: &mut dyn CrossHooks,
    ) -> Result<CrossOutcome> {
        crate::nccl::cross::measure_cross(spec, hooks)
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
