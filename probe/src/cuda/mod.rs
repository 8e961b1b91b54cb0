//! The real machine: thin owners over CUDA driver handles (context, streams, buffers, events) and
//! the measurements built on them. Raw driver calls are used on purpose: timing must not include
//! the bookkeeping (event tracking, stream joins) that higher-level wrappers add.

pub mod gemm;
pub mod host;
pub mod inventory;
pub mod kernels;
pub mod launch;
pub mod p2p;
pub mod pattern;
pub mod staging;

use crate::error::{ProbeError, Result};
use cudarc::driver::{result, sys};

/// Wraps a driver error with what was being done; out-of-memory gets its own variant.
pub(crate) fn check<T>(
    r: std::result::Result<T, result::DriverError>,
    what: impl FnOnce() -> String,
) -> Result<T> {
    r.map_err(|e| {
        if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            ProbeError::OutOfMemory {
                what: what(),
                bytes: 0,
            }
        } else {
            ProbeError::cuda(what(), e)
        }
    })
}

/// Wraps a raw `CUresult`.
pub(crate) fn check_raw(r: sys::CUresult, what: impl FnOnce() -> String) -> Result<()> {
    check(r.result(), what)
}

/// Whether libcuda can be loaded at all (checked before any call, since a missing library would
/// otherwise abort inside the bindings).
pub fn driver_present() -> bool {
    unsafe { sys::is_culib_present() }
}

/// Initializes the driver and returns the number of visible GPUs.
pub fn device_count() -> Result<u32> {
    if !driver_present() {
        return Err(ProbeError::MissingLibrary {
            library: "libcuda.so.1 (NVIDIA driver)".into(),
            hint: "install the NVIDIA driver or run where a GPU is visible".into(),
        });
    }
    check(result::init(), || "cuInit".into())?;
    let n = check(result::device::get_count(), || "cuDeviceGetCount".into())?;
    Ok(n.max(0) as u32)
}

/// One GPU: its primary context and two non-blocking streams (the second for the reverse
/// direction of bidirectional copies).
pub struct Gpu {
    /// CUDA device index.
    pub ordinal: u32,
    /// Driver device handle.
    pub dev: sys::CUdevice,
    /// Primary context.
    pub ctx: sys::CUcontext,
    /// Main stream.
    pub stream: sys::CUstream,
    /// Second stream for overlapping work.
    pub stream2: sys::CUstream,
}

impl Gpu {
    /// Opens device `ordinal` (retains its primary context, creates streams).
    pub fn open(ordinal: u32) -> Result<Gpu> {
        let dev = check(result::device::get(ordinal as i32), || {
            format!("cuDeviceGet({ordinal})")
        })?;
        let ctx = check(unsafe { result::primary_ctx::retain(dev) }, || {
            format!("retaining GPU {ordinal}'s context")
        })?;
        check(unsafe { result::ctx::set_current(ctx) }, || {
            "cuCtxSetCurrent".into()
        })?;
        let mk = || {
            check(
                result::stream::create(result::stream::StreamKind::NonBlocking),
                || format!("creating a stream on GPU {ordinal}"),
            )
        };
        let stream = mk()?;
        let stream2 = mk()?;
        Ok(Gpu {
            ordinal,
            dev,
            ctx,
            stream,
            stream2,
        })
    }

    /// Makes this GPU's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        check(unsafe { result::ctx::set_current(self.ctx) }, || {
            "cuCtxSetCurrent".into()
        })
    }

    /// Waits for both streams.
    pub fn sync(&self) -> Result<()> {
        self.bind()?;
        check(unsafe { result::stream::synchronize(self.stream) }, || {
            format!("synchronizing GPU {}", self.ordinal)
        })?;
        check(unsafe { result::stream::synchronize(self.stream2) }, || {
            format!("synchronizing GPU {}", self.ordinal)
        })
    }

    /// An integer device attribute.
    pub fn attribute(&self, a: sys::CUdevice_attribute) -> Result<i32> {
        check(
            unsafe { result::device::get_attribute(self.dev, a) },
            || format!("{a:?}"),
        )
    }

    /// Allocates `bytes` of device memory.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuf> {
        self.bind()?;
        let ptr = unsafe { result::malloc_sync(bytes.max(16)) }.map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                ProbeError::OutOfMemory {
                    what: format!("a buffer on GPU {}", self.ordinal),
                    bytes: bytes as u64,
                }
            } else {
                ProbeError::cuda("cuMemAlloc", e)
            }
        })?;
        Ok(DeviceBuf {
            ptr,
            bytes,
            ctx: self.ctx,
        })
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::stream::destroy(self.stream);
            let _ = result::stream::destroy(self.stream2);
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}

/// Device memory owned by one GPU's context.
pub struct DeviceBuf {
    /// Device address.
    pub ptr: sys::CUdeviceptr,
    /// Size.
    pub bytes: usize,
    ctx: sys::CUcontext,
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// Page-locked host memory (portable: usable from every context).
pub struct PinnedBuf {
    ptr: *mut u8,
    /// Size.
    pub bytes: usize,
}

impl PinnedBuf {
    /// Allocates `bytes` of pinned memory.
    pub fn new(bytes: usize) -> Result<PinnedBuf> {
        // CU_MEMHOSTALLOC_PORTABLE = 1: visible as pinned to every context, which the host
        // bounce between two GPUs needs.
        let ptr = unsafe { result::malloc_host(bytes.max(16), 1) }.map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                ProbeError::OutOfMemory {
                    what: "pinned host memory".into(),
                    bytes: bytes as u64,
                }
            } else {
                ProbeError::cuda("cuMemHostAlloc", e)
            }
        })?;
        Ok(PinnedBuf {
            ptr: ptr as *mut u8,
            bytes,
        })
    }

    /// The memory as a byte slice.
    pub fn as_slice(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    /// The memory as a mutable byte slice.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        unsafe {
            let _ = result::free_host(self.ptr as *mut std::ffi::c_void);
        }
    }
}

/// A CUDA event in the current context.
pub struct Event {
    ev: sys::CUevent,
}

impl Event {
    /// Creates a timing event in the current context.
    pub fn new() -> Result<Event> {
        let ev = check(
            result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT),
            || "cuEventCreate".into(),
        )?;
        Ok(Event { ev })
    }

    /// Records on `stream`.
    pub(crate) fn record(&self, stream: sys::CUstream) -> Result<()> {
        check(unsafe { result::event::record(self.ev, stream) }, || {
            "cuEventRecord".into()
        })
    }

    /// Makes `stream` wait for this event.
    pub(crate) fn wait_on(&self, stream: sys::CUstream) -> Result<()> {
        check_raw(
            unsafe { sys::cuStreamWaitEvent(stream, self.ev, 0) },
            || "cuStreamWaitEvent".into(),
        )
    }

    /// Seconds from `self` to `end` (both completed).
    pub fn seconds_to(&self, end: &Event) -> Result<f64> {
        check(unsafe { result::event::synchronize(end.ev) }, || {
            "cuEventSynchronize".into()
        })?;
        let ms = check(unsafe { result::event::elapsed(self.ev, end.ev) }, || {
            "cuEventElapsedTime".into()
        })?;
        Ok(ms as f64 / 1e3)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe {
            let _ = result::event::destroy(self.ev);
        }
    }
}

/// Times `reps` back-to-back runs of `op` per sample on `gpu` with CUDA events around the
/// batch, after `warmup` untimed runs; returns seconds per single run for each sample.
/// `op` enqueues work on the streams given (main, second); the second stream is forked from and
/// joined back into the main one, so work on both is inside the timed interval.
pub fn time_on_streams(
    gpu: &Gpu,
    warmup: u32,
    samples: u32,
    reps: u32,
    mut op: impl FnMut(sys::CUstream, sys::CUstream) -> Result<()>,
) -> Result<Vec<f64>> {
    gpu.bind()?;
    let start = Event::new()?;
    let fork = Event::new()?;
    let join = Event::new()?;
    let end = Event::new()?;
    for _ in 0..warmup {
        op(gpu.stream, gpu.stream2)?;
    }
    gpu.sync()?;
    let mut out = Vec::with_capacity(samples as usize);
    for _ in 0..samples {
        start.record(gpu.stream)?;
        fork.record(gpu.stream)?;
        fork.wait_on(gpu.stream2)?;
        for _ in 0..reps {
            op(gpu.stream, gpu.stream2)?;
        }
        join.record(gpu.stream2)?;
        join.wait_on(gpu.stream)?;
        end.record(gpu.stream)?;
        out.push(start.seconds_to(&end)? / reps as f64);
    }
    Ok(out)
}

/// Times with the host clock around synchronized work on several GPUs (events cannot span
/// contexts); used where one interval covers many GPUs at once. Each sample is long (≥ ms), so
/// the microseconds of synchronization overhead are small against it.
pub fn time_wall(
    gpus: &[&Gpu],
    warmup: u32,
    samples: u32,
    mut op: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    for _ in 0..warmup {
        op()?;
    }
    for g in gpus {
        g.sync()?;
    }
    let mut out = Vec::with_capacity(samples as usize);
    for _ in 0..samples {
        let t0 = std::time::Instant::now();
        op()?;
        for g in gpus {
            g.sync()?;
        }
        out.push(t0.elapsed().as_secs_f64());
    }
    Ok(out)
}

/// Copies host → device asynchronously on `stream`.
pub(crate) fn htod(
    dst: sys::CUdeviceptr,
    src: *const u8,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    check_raw(
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src as *const std::ffi::c_void, bytes, stream) },
        || "cuMemcpyHtoDAsync".into(),
    )
}

/// Copies device → host asynchronously on `stream`.
pub(crate) fn dtoh(
    dst: *mut u8,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    check_raw(
        unsafe { sys::cuMemcpyDtoHAsync_v2(dst as *mut std::ffi::c_void, src, bytes, stream) },
        || "cuMemcpyDtoHAsync".into(),
    )
}

/// Copies device → device on one GPU asynchronously on `stream`.
pub(crate) fn dtod(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: sys::CUstream,
) -> Result<()> {
    check_raw(
        unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) },
        || "cuMemcpyDtoDAsync".into(),
    )
}

/// Opens every GPU in `gpus`, failing with a clear error when one does not exist.
pub fn open_all(gpus: &[u32]) -> Result<Vec<Gpu>> {
    let n = device_count()?;
    if n == 0 {
        return Err(ProbeError::NoGpu);
    }
    if let Some(&bad) = gpus.iter().find(|&&g| g >= n) {
        return Err(ProbeError::TooFewGpus {
            asked: bad,
            available: n,
        });
    }
    // Contexts are created on one thread per GPU: creating a primary context costs 0.1–0.3 s,
    // which on 8 GPUs would be seconds of a `--quick` run (and of every NCCL worker's start).
    struct Opened(Result<Gpu>);
    // SAFETY: driver handles (context, streams) are process-wide and usable from any thread;
    // every use binds the context first.
    unsafe impl Send for Opened {}
    let opened: Vec<Opened> = std::thread::scope(|s| {
        let handles: Vec<_> = gpus
            .iter()
            .map(|&g| s.spawn(move || Opened(Gpu::open(g))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Opened(Err(ProbeError::Cuda {
                        what: "opening a GPU".into(),
                        message: "the opening thread panicked".into(),
                    }))
                })
            })
            .collect()
    });
    let out: Vec<Gpu> = opened.into_iter().map(|o| o.0).collect::<Result<_>>()?;
    // As when opened on this thread: the last GPU's context is current.
    if let Some(last) = out.last() {
        last.bind()?;
    }
    Ok(out)
}
