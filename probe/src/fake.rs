//! The fake machine behind the hidden `--fake-machine FILE` (or `PROBE_FAKE_MACHINE`): a
//! profile file whose measured sections are served back as if measured, so the whole `probe
//! run` path — one node or several over loopback — runs deterministically on a CPU-only CI box.
//! Sections the file lacks (launch floors, cross-node NCCL) are synthesized, plausibly and with a
//! note.

use crate::backend::{Backend, Tick, first_per_numa_node, self_link};
use crate::error::{ProbeError, Result};
use crate::inventory::Inventory;
use crate::nccl::counts;
use crate::nccl::cross::CrossOutcome;
use crate::nccl::protocol::{CrossHooks, Directive};
use crate::nccl::protocol::{GroupReport, GroupSpec, WorkerSpec};
use crate::nccl::runner::NcclOutcome;
use crate::nccl::worker::{blank_report, skipped};
use crate::plan::RunPlan;
use models::profile::{
    CollectivePoint, CollectiveStatus, DeviceMemoryMeasurement, GemmMeasurement,
    HostDeviceMeasurement, LaunchKernel, LaunchKind, LaunchMeasurement, MachineProfile, NicInfo,
    PairLink, Stat, TransferMode,
};

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

    fn virtualization(&self, _: &[models::profile::DeviceInfo]) -> models::profile::Virtualization {
        // A fake file without the section still names its hypervisor (older fixtures).
        self.machine.virtualization.clone().map_or_else(
            || models::profile::Virtualization {
                hypervisor: models::profile::HypervisorFacts {
                    name: self.machine.provenance.hypervisor.clone(),
                    ..Default::default()
                },
                ..Default::default()
            },
            // what the run measures and classifies is not served back
            |v| models::profile::Virtualization {
                peers: Vec::new(),
                p2p_state: None,
                p2p_evidence: Vec::new(),
                ..v
            },
        )
    }

    fn host_staging(
        &mut self,
        _: &RunPlan,
        _: &mut Vec<String>,
        tick: Tick,
    ) -> Result<crate::backend::HostStaging> {
        tick("host staging (fake)".into());
        let m = &self.machine;
        Ok(crate::backend::HostStaging {
            curves: m
                .host_staging
                .iter()
                .filter(|c| self.has(&[c.device]))
                .cloned()
                .collect(),
            pageable: m
                .pageable_variants
                .iter()
                .filter(|c| self.has(&[c.device]))
                .cloned()
                .collect(),
            round_trips: m
                .host_round_trips
                .iter()
                .filter(|c| self.has(&[c.device]))
                .cloned()
                .collect(),
        })
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
            // Only pairs inside a measured group: NCCL connects no one else.
            transports: self
                .machine
                .nccl_transports
                .iter()
                .filter(|t| {
                    groups.iter().any(|g| {
                        t.from_device.is_some_and(|d| g.contains(&d))
                            && t.to_device.is_some_and(|d| g.contains(&d))
                    })
                })
                .cloned()
                .collect(),
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

    fn nics(&mut self) -> Vec<NicInfo> {
        // The file's first node's NICs if it has nodes, else the loopback a one-host test uses.
        match self.machine.nodes.first() {
            Some(n) if !n.nics.is_empty() => n.nics.clone(),
            _ => vec![NicInfo {
                name: "lo".into(),
                kind: Some("loopback".into()),
                speed_gbit_per_s: None,
                used_by_nccl: false,
            }],
        }
    }

    fn unique_ids(&self) -> Box<dyn FnMut() -> Result<Vec<u8>>> {
        let mut made = 0u32;
        Box::new(move || {
            made += 1;
            Ok((0..128u32).map(|i| (i * 31 + made * 7) as u8).collect())
        })
    }

    fn nccl_cross(
        &mut self,
        spec: &WorkerSpec,
        hooks: &mut dyn CrossHooks,
    ) -> Result<CrossOutcome> {
        for group in &spec.groups {
            let Some(cross) = &group.cross else { continue };
            let rep = match hooks.ready(cross.group_id)? {
                Directive::Go(_) => fake_cross_report(spec, group),
                Directive::Skip(why) => skipped(spec, group, why),
            };
            hooks.report(cross.group_id, rep)?;
        }
        Ok(CrossOutcome {
            // What NCCL prints for sockets over loopback, so the parsing path runs too.
            net_lines: vec![
                "fake:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>".into(),
                "fake:1:1 [0] NCCL INFO Using network Socket".into(),
                "fake:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0".into(),
            ],
            notes: vec!["fake machine: cross-node NCCL synthesized (25 µs + bytes at 12 GB/s busbw, slower by 2 % per global rank of this node's first GPU)".into()],
        })
    }
}

/// A cross-node group's report from this fake node: every op and size from a latency plus a
/// bus bandwidth (sockets over a 100 Gb/s link, roughly), with raw samples as a real worker
/// reports them, and this node's figure depending on its ranks so node 0's merge shows.
fn fake_cross_report(spec: &WorkerSpec, group: &GroupSpec) -> GroupReport {
    let cross = group.cross.as_ref().expect("a cross-node group");
    let n = cross.nranks;
    let mut rep = blank_report(spec, group, CollectiveStatus::Ok);
    let slow = 1.0 + 0.02 * cross.ranks.iter().min().copied().unwrap_or(0) as f64;
    for curve in &mut rep.curves {
        let factor = curve.op.busbw_factor(n);
        let mut raw = Vec::new();
        for p in &mut curve.points {
            let bytes = counts(curve.op, p.bytes, n as usize).bytes;
            let us = (25.0 + bytes as f64 * factor.max(0.5) / 12e9 * 1e6) * slow;
            let samples: Vec<f64> = (0..spec.samples.max(1))
                .map(|i| us * (1.0 + 0.01 * (i % 3) as f64))
                .collect();
            let time_us = crate::stats::summarize(&samples);
            let algbw = bytes as f64 / (time_us.median * 1e-6) / 1e9;
            *p = CollectivePoint {
                bytes,
                time_us,
                algbw_gb_per_s: algbw,
                busbw_gb_per_s: algbw * factor,
                status: CollectiveStatus::Ok,
            };
            raw.push(samples);
        }
        rep.samples_us.push(raw);
    }
    rep.notes.push(format!(
        "fake cross-node group {:?}: this node's ranks {:?}",
        cross.global_devices, cross.ranks
    ));
    rep
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
