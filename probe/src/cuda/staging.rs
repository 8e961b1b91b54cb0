//! The paths bytes take through host memory when two GPUs have no P2P, each by size and in both
//! directions, as NCCL's SHM transport runs them: SM loads/stores into mapped pinned host memory
//! (its default) and the copy engine on pinned memory (`NCCL_SHM_USE_CUDA_MEMCPY=1`). And the
//! pageable host → device copy from several kinds of host buffer, to say why pageable copies
//! read what they read.

use super::kernels::{CHASE_KERNEL, CopyKernel, LoadedKernel, PINGPONG_KERNEL};
use super::{Gpu, check, dtoh, htod, pattern, time_on_streams};
use crate::error::{ProbeError, Result};
use crate::plan::RunPlan;
use crate::stats::{gb_per_s, summarize};
use cudarc::driver::{result, sys};
use models::profile::{
    HostDirection, HostRoundTrip, HostStagePath, HostStagedCurve, PageableVariant, SizePoint,
};
use std::ffi::c_void;

/// Pinned host memory mapped into the device's address space (`CU_MEMHOSTALLOC_PORTABLE |
/// CU_MEMHOSTALLOC_DEVICEMAP`), what NCCL's SHM buffers are.
struct MappedBuf {
    host: *mut u8,
    dev: sys::CUdeviceptr,
    bytes: usize,
}

impl MappedBuf {
    fn new(bytes: usize) -> Result<MappedBuf> {
        let host = check(unsafe { result::malloc_host(bytes, 1 | 2) }, || {
            "cuMemHostAlloc (mapped)".into()
        })? as *mut u8;
        let mut dev: sys::CUdeviceptr = 0;
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host as *mut _, 0) };
        if let Err(e) = super::check_raw(r, || "cuMemHostGetDevicePointer".into()) {
            unsafe {
                let _ = result::free_host(host as *mut std::ffi::c_void);
            }
            return Err(e);
        }
        Ok(MappedBuf { host, dev, bytes })
    }
    fn slice_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.host, self.bytes) }
    }
}

impl Drop for MappedBuf {
    fn drop(&mut self) {
        unsafe {
            let _ = result::free_host(self.host as *mut std::ffi::c_void);
        }
    }
}

/// Sizes of the host-staged curves: NCCL's SHM chunks and a decode step's messages (4 KiB to
/// 64 MiB, ×4).
pub fn staging_sizes(quick: bool) -> Vec<u64> {
    let top = if quick { 16 << 20 } else { 64 << 20 };
    std::iter::successors(Some(4096u64), |s| Some(s * 4))
        .take_while(|s| *s <= top)
        .collect()
}

/// Both paths, both directions, by size, on `gpu`; the largest size's data is checked.
pub fn measure_staging(
    gpu: &Gpu,
    kernel: Option<&CopyKernel>,
    plan: &RunPlan,
    notes: &mut Vec<String>,
) -> Result<Vec<HostStagedCurve>> {
    let sizes = staging_sizes(plan.quick);
    let top = *sizes.last().expect("sizes") as usize;
    gpu.bind()?;
    let mut host = MappedBuf::new(top)?;
    let dev = gpu.alloc(top)?;
    let mut out = Vec::new();
    for path in [HostStagePath::MappedKernel, HostStagePath::CopyEngine] {
        if path == HostStagePath::MappedKernel && kernel.is_none() {
            notes.push(
                "host staging: mapped-memory kernel path skipped (no NVRTC copy kernel)".into(),
            );
            continue;
        }
        for dir in [HostDirection::DeviceToHost, HostDirection::HostToDevice] {
            let copy = |n: usize, s: sys::CUstream, host: &mut MappedBuf| -> Result<()> {
                match (path, dir) {
                    (HostStagePath::CopyEngine, HostDirection::DeviceToHost) => {
                        dtoh(host.host, dev.ptr, n, s)
                    }
                    (HostStagePath::CopyEngine, _) => htod(dev.ptr, host.host, n, s),
                    (_, HostDirection::DeviceToHost) => {
                        kernel.expect("checked").launch(host.dev, dev.ptr, n, s)
                    }
                    _ => kernel.expect("checked").launch(dev.ptr, host.dev, n, s),
                }
            };
            let mut points = Vec::new();
            for &bytes in &sizes {
                let n = bytes as usize;
                // Small copies are batched so one sample lasts well past the event resolution.
                let reps = ((8u64 << 20) / bytes).clamp(1, 256) as u32;
                let secs = time_on_streams(
                    gpu,
                    plan.repeats.warmup,
                    plan.repeats.samples,
                    reps,
                    |s, _| copy(n, s, &mut host),
                )?;
                let bw: Vec<f64> = secs.iter().map(|&t| gb_per_s(bytes, t)).collect();
                let us: Vec<f64> = secs.iter().map(|&t| t * 1e6).collect();
                points.push(SizePoint {
                    bytes,
                    time_us: summarize(&us),
                    gb_per_s: summarize(&bw),
                });
            }
            let verified = verify(gpu, &mut host, &dev, top, dir, |n, s, h| copy(n, s, h))?;
            out.push(HostStagedCurve {
                device: gpu.ordinal,
                path,
                direction: dir,
                points,
                data_verified: Some(verified),
            });
        }
    }
    notes.push("host staging: mapped-kernel = the NVRTC copy kernel loading/storing mapped pinned host memory (cuMemHostAlloc DEVICEMAP), as NCCL's SHM transport does; copy-engine = cuMemcpy{DtoH,HtoD}Async on the same pinned memory (NCCL_SHM_USE_CUDA_MEMCPY=1); CUDA events, small sizes batched per sample; one GPU at a time".into());
    Ok(out)
}

/// Dependent loads (and ping-pong round trips) one launch of the round-trip kernels times: enough
/// that the launch is a small part of it (~1.2 µs a load, ~4.5 µs a round trip on a PCIe guest).
const ROUND_TRIP_OPS: i32 = 5000;
/// The pointer ring's lines: 16, 256 bytes apart, in one 4 KiB page (what NCCL's SHM ring polls
/// over and over: its translations stay warm).
const CHASE_LINES: usize = 16;
const CHASE_STRIDE_WORDS: usize = 256 / 8;

/// A kernel's own round trips through mapped pinned host memory on `gpu` ([`HostRoundTrip`]):
/// a dependent load (a pointer chase) and a store seen by a poll (half a ping-pong between two
/// blocks), each the median of the plan's samples of one launch of [`ROUND_TRIP_OPS`].
pub fn measure_round_trip(
    gpu: &Gpu,
    ptx: &std::ffi::CString,
    plan: &RunPlan,
) -> Result<HostRoundTrip> {
    gpu.bind()?;
    let chase = LoadedKernel::load(gpu, ptx, CHASE_KERNEL)?;
    let ping = LoadedKernel::load(gpu, ptx, PINGPONG_KERNEL)?;
    // the pointer ring in the first 4 KiB page, the ping-pong's two flags in the second
    let mut host = MappedBuf::new(8192)?;
    {
        let words = host.slice_mut();
        words.fill(0);
        let ring = |j: usize| ((j % CHASE_LINES) * CHASE_STRIDE_WORDS) as u64;
        for j in 0..CHASE_LINES {
            let at = ring(j) as usize * 8;
            words[at..at + 8].copy_from_slice(&ring(j + 1).to_le_bytes());
        }
    }
    let out = gpu.alloc(16)?;
    // both kernels take (host buffer, a 64-bit start, ops, out)
    let launch = |k: &LoadedKernel, grid: u32, buf: sys::CUdeviceptr, first: u64, s| {
        let (mut buf, mut first, mut n, mut out_ptr) = (buf, first, ROUND_TRIP_OPS, out.ptr);
        let mut params: [*mut c_void; 4] = [
            &mut buf as *mut _ as *mut c_void,
            &mut first as *mut _ as *mut c_void,
            &mut n as *mut _ as *mut c_void,
            &mut out_ptr as *mut _ as *mut c_void,
        ];
        check(
            unsafe { result::launch_kernel(k.func, (grid, 1, 1), (32, 1, 1), 0, s, &mut params) },
            || "launching the host round-trip kernels".into(),
        )
    };
    let load_s = time_on_streams(gpu, 1, plan.repeats.samples, 1, |s, _| {
        launch(&chase, 1, host.dev, 0, s)
    })?;
    // each launch counts on from where the last one stopped, so no flag holds a value it waits for
    let mut base = 0u64;
    let hop_s = time_on_streams(gpu, 1, plan.repeats.samples, 1, |s, _| {
        base += ROUND_TRIP_OPS as u64;
        launch(&ping, 2, host.dev + 4096, base, s)
    })?;
    gpu.sync()?;
    let mut flags = [0u64; 2];
    dtoh(flags.as_mut_ptr() as *mut u8, out.ptr, 16, gpu.stream)?;
    gpu.sync()?;
    if flags[1] != 0 {
        return Err(ProbeError::cuda(
            "host round trips",
            "a ping-pong block gave up waiting for the other's flag",
        ));
    }
    let per = |secs: &[f64], ops: f64| -> Vec<f64> { secs.iter().map(|t| t * 1e6 / ops).collect() };
    Ok(HostRoundTrip {
        device: gpu.ordinal,
        load_us: summarize(&per(&load_s, f64::from(ROUND_TRIP_OPS))),
        hop_us: summarize(&per(&hop_s, 2.0 * f64::from(ROUND_TRIP_OPS))),
    })
}

/// Fills the source with a fresh pattern, copies `n` bytes one way, and checks the destination.
fn verify(
    gpu: &Gpu,
    host: &mut MappedBuf,
    dev: &super::DeviceBuf,
    n: usize,
    dir: HostDirection,
    copy: impl Fn(usize, sys::CUstream, &mut MappedBuf) -> Result<()>,
) -> Result<bool> {
    let seed = pattern::fresh_seed();
    let mut scratch = vec![0u8; n];
    if dir == HostDirection::DeviceToHost {
        pattern::fill(&mut scratch, seed);
        htod(dev.ptr, scratch.as_ptr(), n, gpu.stream)?;
        gpu.sync()?;
        copy(n, gpu.stream, host)?;
        gpu.sync()?;
        Ok(pattern::first_mismatch(host.slice_mut(), seed).is_none())
    } else {
        pattern::fill(host.slice_mut(), seed);
        copy(n, gpu.stream, host)?;
        gpu.sync()?;
        dtoh(scratch.as_mut_ptr(), dev.ptr, n, gpu.stream)?;
        gpu.sync()?;
        Ok(pattern::first_mismatch(&scratch, seed).is_none())
    }
}

/// Anonymous memory from mmap, optionally 2 MiB-aligned with `MADV_HUGEPAGE` (what numpy and
/// PyTorch's THP option do for large arrays) or `MADV_NOHUGEPAGE`.
struct MmapBuf {
    base: *mut libc::c_void,
    len: usize,
    at: *mut u8,
}

impl MmapBuf {
    fn new(bytes: usize, advice: libc::c_int) -> Result<MmapBuf> {
        let align = 2usize << 20;
        let len = bytes + align;
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(ProbeError::OutOfMemory {
                what: "pageable host buffer (mmap)".into(),
                bytes: bytes as u64,
            });
        }
        let at = ((base as usize).div_ceil(align) * align) as *mut u8;
        unsafe {
            libc::madvise(at as *mut _, bytes, advice);
        }
        Ok(MmapBuf { base, len, at })
    }
}

impl Drop for MmapBuf {
    fn drop(&mut self) {
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

/// Pageable host → device from each kind of buffer on `gpu`, `plan.host_bytes` per copy.
pub fn measure_pageable_variants(gpu: &Gpu, plan: &RunPlan) -> Result<Vec<PageableVariant>> {
    let n = plan.host_bytes as usize;
    let r = plan.repeats;
    let dev = gpu.alloc(n)?;
    let mut out = Vec::new();
    let mut push = |buffer: &str, secs: Vec<f64>| {
        let bw: Vec<f64> = secs.iter().map(|&t| gb_per_s(n as u64, t)).collect();
        out.push(PageableVariant {
            buffer: buffer.into(),
            device: gpu.ordinal,
            bytes: n as u64,
            gb_per_s: summarize(&bw),
        });
    };
    let time = |src: *const u8, chunk: usize| {
        time_on_streams(gpu, r.warmup, r.samples, 1, |s, _| {
            let mut off = 0;
            while off < n {
                let c = chunk.min(n - off);
                htod(dev.ptr + off as u64, unsafe { src.add(off) }, c, s)?;
                off += c;
            }
            Ok(())
        })
    };
    // As `probe run`'s pageable figure: malloc'd (glibc mmap, 16 B past a page), touched.
    let mut v = vec![0u8; n];
    pattern::fill(&mut v, 1);
    push(
        "malloc, touched (the host step's buffer)",
        time(v.as_ptr(), n)?,
    );
    push(
        "malloc, touched, copied in 2 MiB pieces",
        time(v.as_ptr(), 2 << 20)?,
    );
    drop(v);
    for (name, advice) in [
        (
            "2 MiB-aligned mmap, MADV_HUGEPAGE, touched",
            libc::MADV_HUGEPAGE,
        ),
        (
            "2 MiB-aligned mmap, MADV_NOHUGEPAGE, touched",
            libc::MADV_NOHUGEPAGE,
        ),
    ] {
        let m = MmapBuf::new(n, advice)?;
        let s = unsafe { std::slice::from_raw_parts_mut(m.at, n) };
        pattern::fill(s, 2);
        push(name, time(m.at, n)?);
    }
    // Never written: every page of the source is the kernel's one shared zero page, so the
    // driver's staging memcpy reads the same 4 KiB from cache (what a benchmark of an
    // untouched `torch.empty` buffer measures). First the copy that maps those pages (a fresh
    // mapping per sample), then the warmed one.
    let mut fresh = Vec::new();
    for _ in 0..r.samples.min(5) {
        let m = MmapBuf::new(n, libc::MADV_NORMAL)?;
        let t = time_on_streams(gpu, 0, 1, 1, |s, _| htod(dev.ptr, m.at, n, s))?;
        fresh.extend(t);
    }
    push(
        "fresh mmap, never written, first copy (page faults inside the copy)",
        fresh,
    );
    let m = MmapBuf::new(n, libc::MADV_NORMAL)?;
    push(
        "mmap never written, warmed (every page is the shared zero page)",
        time(m.at, n)?,
    );
    Ok(out)
}
