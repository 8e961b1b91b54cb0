//! Host ↔ device copies (pinned and pageable, each direction and both at once, per GPU and all
//! GPUs together) and on-device copy bandwidth.

use super::{Gpu, PinnedBuf, dtod, dtoh, htod, pattern, time_on_streams, time_wall};
use crate::error::{ProbeError, Result};
use crate::plan::RunPlan;
use crate::stats::{gb_per_s, summarize};
use models::profile::{DeviceMemoryMeasurement, HostDeviceMeasurement, HostDirection, HostMemory};

/// Host memory of either kind, behind one interface.
enum HostBuf {
    Pinned(PinnedBuf),
    Pageable(Vec<u8>),
}

impl HostBuf {
    fn new(kind: HostMemory, bytes: usize) -> Result<HostBuf> {
        Ok(match kind {
            HostMemory::Pinned => HostBuf::Pinned(PinnedBuf::new(bytes)?),
            HostMemory::Pageable => HostBuf::Pageable(vec![0u8; bytes]),
        })
    }
    fn slice(&self) -> &[u8] {
        match self {
            HostBuf::Pinned(p) => p.as_slice(),
            HostBuf::Pageable(v) => v,
        }
    }
    fn slice_mut(&mut self) -> &mut [u8] {
        match self {
            HostBuf::Pinned(p) => p.as_mut_slice(),
            HostBuf::Pageable(v) => v,
        }
    }
}

/// Host memory for one GPU's copies: two buffers, so both directions can run at once without
/// sharing memory. Pinned memory is portable (usable from every context), so one `HostSide` of
/// each kind serves every GPU in turn instead of being pinned again per GPU.
struct HostSide {
    up: HostBuf,
    down: HostBuf,
}

/// Device memory for one GPU's host copies.
struct DevSide {
    up: super::DeviceBuf,
    down: super::DeviceBuf,
}

impl HostSide {
    fn new(kind: HostMemory, bytes: usize) -> Result<HostSide> {
        Ok(HostSide {
            up: HostBuf::new(kind, bytes)?,
            down: HostBuf::new(kind, bytes)?,
        })
    }

    /// Enqueues one copy (or two, for `Both`) between these buffers and `dev` on the streams.
    fn enqueue(
        &mut self,
        dev: &DevSide,
        dir: HostDirection,
        s1: cudarc::driver::sys::CUstream,
        s2: cudarc::driver::sys::CUstream,
    ) -> Result<()> {
        let n = dev.up.bytes;
        if matches!(dir, HostDirection::HostToDevice | HostDirection::Both) {
            htod(dev.up.ptr, self.up.slice().as_ptr(), n, s1)?;
        }
        if matches!(dir, HostDirection::DeviceToHost | HostDirection::Both) {
            let s = if dir == HostDirection::Both { s2 } else { s1 };
            dtoh(self.down.slice_mut().as_mut_ptr(), dev.down.ptr, n, s)?;
        }
        Ok(())
    }

    /// Round-trips a fresh pattern host → device → host through `dev` and checks it.
    fn verify(&mut self, dev: &DevSide, gpu: &Gpu) -> Result<bool> {
        let seed = pattern::fresh_seed();
        pattern::fill(self.up.slice_mut(), seed);
        let n = dev.up.bytes;
        htod(dev.up.ptr, self.up.slice().as_ptr(), n, gpu.stream)?;
        dtoh(
            self.down.slice_mut().as_mut_ptr(),
            dev.up.ptr,
            n,
            gpu.stream,
        )?;
        gpu.sync()?;
        Ok(pattern::first_mismatch(self.down.slice(), seed).is_none())
    }
}

impl DevSide {
    fn new(gpu: &Gpu, bytes: usize) -> Result<DevSide> {
        Ok(DevSide {
            up: gpu.alloc(bytes)?,
            down: gpu.alloc(bytes)?,
        })
    }
}

/// One GPU's three directions through `host` (with its round-trip check).
fn measure_one(
    gpu: &Gpu,
    host: &mut HostSide,
    kind: HostMemory,
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<HostDeviceMeasurement>> {
    let bytes = plan.host_bytes;
    let r = plan.repeats;
    tick(format!("host {kind:?} GPU {}", gpu.ordinal));
    let dev = DevSide::new(gpu, bytes as usize)?;
    if !host.verify(&dev, gpu)? {
        notes.push(format!(
            "GPU {}: {kind:?} host round trip returned wrong data",
            gpu.ordinal
        ));
    }
    let mut out = Vec::new();
    for dir in DIRECTIONS {
        let secs = time_on_streams(gpu, r.warmup, r.samples, 1, |s1, s2| {
            host.enqueue(&dev, dir, s1, s2)
        })?;
        let bw: Vec<f64> = secs
            .iter()
            .map(|&s| gb_per_s(bytes_moved(dir, bytes), s))
            .collect();
        out.push(HostDeviceMeasurement {
            devices: vec![gpu.ordinal],
            memory: kind,
            direction: dir,
            bytes,
            gb_per_s: summarize(&bw),
        });
    }
    Ok(out)
}

const DIRECTIONS: [HostDirection; 3] = [
    HostDirection::HostToDevice,
    HostDirection::DeviceToHost,
    HostDirection::Both,
];

fn bytes_moved(dir: HostDirection, bytes: u64) -> u64 {
    if dir == HostDirection::Both {
        2 * bytes
    } else {
        bytes
    }
}

/// Measures host↔device bandwidth per GPU (pageable copies only on the GPUs in
/// `pageable_on`) and, with several GPUs, pinned copies on all at once. Host buffers for a GPU
/// are allocated by a thread bound to its NUMA node (`numa`: ordinal → node; see `crate::numa`).
pub fn measure_host(
    gpus: &[Gpu],
    numa: &[(u32, Option<i32>)],
    pageable_on: &[u32],
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<HostDeviceMeasurement>> {
    let node_of = |g: &Gpu| {
        numa.iter()
            .find(|(o, _)| *o == g.ordinal)
            .and_then(|(_, n)| *n)
    };
    let mut nodes: Vec<Option<i32>> = Vec::new();
    for g in gpus {
        if !nodes.contains(&node_of(g)) {
            nodes.push(node_of(g));
        }
    }
    // `spent`: seconds per kind (pinned, pageable) over all GPUs, then all at once: --quick evidence.
    let (mut out, mut spent, bound_nodes) =
        measure_each_gpu(gpus, &nodes, &node_of, pageable_on, plan, notes, tick)?;
    notes.push(if bound_nodes.is_empty() {
        "host buffers: the GPUs' NUMA nodes are unknown (sysfs says -1, e.g. a VM hiding its topology), so pinned and pageable buffers sit wherever the OS put them".into()
    } else {
        format!("host buffers for each GPU allocated by a thread bound to that GPU's NUMA node (nodes {bound_nodes:?}), so the figures are socket-local")
    });
    if gpus.len() > 1 {
        let clock = std::time::Instant::now();
        out.extend(measure_all_at_once(gpus, &node_of, plan, notes, tick)?);
        spent.push(format!(
            "all {} GPUs at once {:.3} s",
            gpus.len(),
            clock.elapsed().as_secs_f64()
        ));
    }
    notes.push(format!("host step timing: {}", spent.join(", ")));
    Ok(out)
}

/// Pinned copies on every GPU, then pageable ones on `pageable_on`, one NUMA node at a time with
/// the host buffer allocated by a thread bound to that node. Returns the measurements, the
/// seconds per GPU of each kind, and the nodes a thread could be bound to.
fn measure_each_gpu(
    gpus: &[Gpu],
    nodes: &[Option<i32>],
    node_of: &dyn Fn(&Gpu) -> Option<i32>,
    pageable_on: &[u32],
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<(Vec<HostDeviceMeasurement>, Vec<String>, Vec<i32>)> {
    let bytes = plan.host_bytes;
    let (mut out, mut spent) = (Vec::new(), Vec::new());
    let mut bound_nodes: Vec<i32> = Vec::new();
    for kind in [HostMemory::Pinned, HostMemory::Pageable] {
        let clock = std::time::Instant::now();
        let mut measured = 0;
        for &node in nodes {
            let these: Vec<&Gpu> = gpus
                .iter()
                .filter(|g| node_of(g) == node)
                .filter(|g| kind == HostMemory::Pinned || pageable_on.contains(&g.ordinal))
                .collect();
            if these.is_empty() {
                continue;
            }
            // Pages land on the node of the thread that first touches them: bind, then allocate.
            let binding = crate::numa::NodeBinding::bind(node);
            if let (Some(_), Some(n)) = (&binding, node)
                && !bound_nodes.contains(&n)
            {
                bound_nodes.push(n);
            }
            let mut host = HostSide::new(kind, bytes as usize)?;
            for &gpu in &these {
                out.extend(measure_one(gpu, &mut host, kind, plan, notes, tick)?);
            }
            measured += these.len();
        }
        spent.push(format!(
            "{kind:?} {:.3} s per GPU",
            clock.elapsed().as_secs_f64() / measured.max(1) as f64
        ));
    }
    Ok((out, spent, bound_nodes))
}

/// Pinned copies on all GPUs at once, each with its own host buffer (they compete for host DRAM
/// and the root complex, not for one buffer), timed with the host clock.
fn measure_all_at_once(
    gpus: &[Gpu],
    node_of: &dyn Fn(&Gpu) -> Option<i32>,
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<HostDeviceMeasurement>> {
    let bytes = plan.host_bytes;
    let r = plan.repeats;
    let mut out = Vec::new();
    tick("host: all GPUs at once".into());
    // Separate host memory per GPU: they compete for host DRAM bandwidth, not for one buffer.
    let mut bufs: Vec<(HostSide, DevSide)> = gpus
        .iter()
        .map(|g| {
            let _binding = crate::numa::NodeBinding::bind(node_of(g));
            Ok((
                HostSide::new(HostMemory::Pinned, bytes as usize)?,
                DevSide::new(g, bytes as usize)?,
            ))
        })
        .collect::<Result<_>>()?;
    let refs: Vec<&Gpu> = gpus.iter().collect();
    for dir in DIRECTIONS {
        let secs = time_wall(&refs, r.warmup, r.samples, || {
            for (g, (host, dev)) in gpus.iter().zip(bufs.iter_mut()) {
                g.bind()?;
                host.enqueue(dev, dir, g.stream, g.stream2)?;
            }
            Ok(())
        })?;
        let total = bytes_moved(dir, bytes) * gpus.len() as u64;
        let bw: Vec<f64> = secs.iter().map(|&s| gb_per_s(total, s)).collect();
        out.push(HostDeviceMeasurement {
            devices: gpus.iter().map(|g| g.ordinal).collect(),
            memory: HostMemory::Pinned,
            direction: dir,
            bytes,
            gb_per_s: summarize(&bw),
        });
    }
    notes.push(
        "host all-GPU figures are timed with the host clock around synchronized copies".into(),
    );
    Ok(out)
}

/// Measures device-to-device copy bandwidth on each GPU. The figure counts bytes copied once;
/// the memory traffic is twice that (each byte read and written).
pub fn measure_device_memory(
    gpus: &[Gpu],
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<DeviceMemoryMeasurement>> {
    let bytes = plan.device_copy_bytes as usize;
    let r = plan.repeats;
    let mut out = Vec::new();
    // One host staging buffer for every GPU (pinned: its copies are fast and asynchronous).
    let mut stage = PinnedBuf::new(bytes)?;
    for gpu in gpus {
        tick(format!("device copy GPU {}", gpu.ordinal));
        let src = gpu.alloc(bytes)?;
        let dst = gpu.alloc(bytes)?;
        // Real data in the source (never time on zeros).
        let seed = pattern::fresh_seed();
        let host = stage.as_mut_slice();
        pattern::fill(host, seed);
        htod(src.ptr, host.as_ptr(), bytes, gpu.stream)?;
        gpu.sync()?;
        let secs = time_on_streams(gpu, r.warmup, r.samples, 1, |s1, _| {
            dtod(dst.ptr, src.ptr, bytes, s1)
        })?;
        host.fill(0);
        dtoh(host.as_mut_ptr(), dst.ptr, bytes, gpu.stream)?;
        gpu.sync()?;
        if let Some(at) = pattern::first_mismatch(host, seed) {
            return Err(ProbeError::Cuda {
                what: format!("device copy on GPU {}", gpu.ordinal),
                message: format!("destination differs from source at byte {at}"),
            });
        }
        let bw: Vec<f64> = secs.iter().map(|&s| gb_per_s(bytes as u64, s)).collect();
        out.push(DeviceMemoryMeasurement {
            device: gpu.ordinal,
            bytes: bytes as u64,
            copy_gb_per_s: summarize(&bw),
        });
    }
    notes.push(
        "device_memory.copy_gb_per_s counts bytes copied once; DRAM traffic is twice that (read + write)"
            .into(),
    );
    Ok(out)
}
