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

/// Buffers for one GPU's host copies: two host and two device buffers, so both directions can
/// run at once without sharing memory.
struct HostPair {
    up: HostBuf,
    down: HostBuf,
    dev_up: super::DeviceBuf,
    dev_down: super::DeviceBuf,
}

impl HostPair {
    fn new(gpu: &Gpu, kind: HostMemory, bytes: usize) -> Result<HostPair> {
        Ok(HostPair {
            up: HostBuf::new(kind, bytes)?,
            down: HostBuf::new(kind, bytes)?,
            dev_up: gpu.alloc(bytes)?,
            dev_down: gpu.alloc(bytes)?,
        })
    }

    /// Enqueues one copy (or two, for `Both`) on the given streams.
    fn enqueue(
        &mut self,
        dir: HostDirection,
        s1: cudarc::driver::sys::CUstream,
        s2: cudarc::driver::sys::CUstream,
    ) -> Result<()> {
        let n = self.dev_up.bytes;
        if matches!(dir, HostDirection::HostToDevice | HostDirection::Both) {
            htod(self.dev_up.ptr, self.up.slice().as_ptr(), n, s1)?;
        }
        if matches!(dir, HostDirection::DeviceToHost | HostDirection::Both) {
            let s = if dir == HostDirection::Both { s2 } else { s1 };
            dtoh(self.down.slice_mut().as_mut_ptr(), self.dev_down.ptr, n, s)?;
        }
        Ok(())
    }

    /// Round-trips a fresh pattern host → device → host and checks it.
    fn verify(&mut self, gpu: &Gpu) -> Result<bool> {
        let seed = pattern::fresh_seed();
        pattern::fill(self.up.slice_mut(), seed);
        let n = self.dev_up.bytes;
        htod(self.dev_up.ptr, self.up.slice().as_ptr(), n, gpu.stream)?;
        dtoh(
            self.down.slice_mut().as_mut_ptr(),
            self.dev_up.ptr,
            n,
            gpu.stream,
        )?;
        gpu.sync()?;
        Ok(pattern::first_mismatch(self.down.slice(), seed).is_none())
    }
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

/// Measures host↔device bandwidth per GPU and, with several GPUs, all at once.
pub fn measure_host(
    gpus: &[Gpu],
    plan: &RunPlan,
    notes: &mut Vec<String>,
    tick: &mut dyn FnMut(String),
) -> Result<Vec<HostDeviceMeasurement>> {
    let bytes = plan.host_bytes;
    let r = plan.repeats;
    let mut out = Vec::new();
    for kind in [HostMemory::Pinned, HostMemory::Pageable] {
        for gpu in gpus {
            tick(format!("host {kind:?} GPU {}", gpu.ordinal));
            let mut bufs = HostPair::new(gpu, kind, bytes as usize)?;
            if !bufs.verify(gpu)? {
                notes.push(format!(
                    "GPU {}: {kind:?} host round trip returned wrong data",
                    gpu.ordinal
                ));
            }
            for dir in DIRECTIONS {
                let secs = time_on_streams(gpu, r.warmup, r.samples, 1, |s1, s2| {
                    bufs.enqueue(dir, s1, s2)
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
        }
    }
    if gpus.len() > 1 {
        tick("host: all GPUs at once".into());
        let mut bufs: Vec<HostPair> = gpus
            .iter()
            .map(|g| HostPair::new(g, HostMemory::Pinned, bytes as usize))
            .collect::<Result<_>>()?;
        let refs: Vec<&Gpu> = gpus.iter().collect();
        for dir in DIRECTIONS {
            let secs = time_wall(&refs, r.warmup, r.samples, || {
                for (g, b) in gpus.iter().zip(bufs.iter_mut()) {
                    g.bind()?;
                    b.enqueue(dir, g.stream, g.stream2)?;
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
    }
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
    for gpu in gpus {
        tick(format!("device copy GPU {}", gpu.ordinal));
        let src = gpu.alloc(bytes)?;
        let dst = gpu.alloc(bytes)?;
        // Real data in the source (never time on zeros).
        let seed = pattern::fresh_seed();
        let mut host = vec![0u8; bytes];
        pattern::fill(&mut host, seed);
        htod(src.ptr, host.as_ptr(), bytes, gpu.stream)?;
        gpu.sync()?;
        let secs = time_on_streams(gpu, r.warmup, r.samples, 1, |s1, _| {
            dtod(dst.ptr, src.ptr, bytes, s1)
        })?;
        host.fill(0);
        dtoh(host.as_mut_ptr(), dst.ptr, bytes, gpu.stream)?;
        gpu.sync()?;
        if let Some(at) = pattern::first_mismatch(&host, seed) {
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
