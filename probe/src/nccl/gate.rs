//! A host-released gate on every rank's stream, so a timed batch of collectives runs back to
//! back on the GPUs however slowly the one driving thread enqueues it.
//!
//! Why: the worker launches every rank's op from one thread through non-blocking communicators
//! (needed so a hang can be detected and aborted), which costs 60–125 µs of host time per op. On
//! NVLink a 1 MiB all-reduce takes ~15 µs of GPU time, so ungated the GPUs idle between ops and
//! the events measure the host. Gated, each rank's stream first waits (`cuStreamWaitValue32`)
//! on a flag in mapped pinned memory; the start events, then the whole batch, are enqueued
//! behind it; the host raises the flag and the batch runs as it would from a CUDA graph — the
//! way an SGLang server replays its decode step. nccl-tests' `-G` mode times the same thing.

use crate::cuda::Gpu;
use cudarc::driver::sys as cu;
use std::cell::Cell;

/// CUDA 11.7: the first driver with `cuStreamWaitValue32_v2` (looked up by name at the first
/// call, so an older driver must never reach it).
const MIN_DRIVER: i32 = 11070;

/// The flag and its address as each rank's context sees it.
pub(super) struct Gate {
    flag: *mut u32,
    dev_ptrs: Vec<cu::CUdeviceptr>,
    /// Value the streams wait for next (each close raises it, so the flag is never reset).
    value: Cell<u32>,
    open: Cell<bool>,
    /// Batches whose gate was raised before their enqueue finished (see [`Gate::open_early`]).
    early: Cell<u32>,
}

impl Gate {
    /// A gate over `gpus`' main streams, or why it cannot be built (old driver, no mapped
    /// pinned memory): the caller then times ungated and says so.
    pub(super) fn new(gpus: &[&Gpu]) -> Result<Gate, String> {
        let mut v = 0i32;
        let r = unsafe { cu::cuDriverGetVersion(&mut v) };
        if r != cu::CUresult::CUDA_SUCCESS || v < MIN_DRIVER {
            return Err(format!(
                "driver API {v} has no cuStreamWaitValue32_v2 (needs {MIN_DRIVER})"
            ));
        }
        let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
        // PORTABLE (1) | DEVICEMAP (2): pinned, and addressable from every rank's context.
        let r = unsafe { cu::cuMemHostAlloc(&mut host, 4096, 0x1 | 0x2) };
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuMemHostAlloc for the gate flag: {r:?}"));
        }
        let flag = host as *mut u32;
        unsafe { flag.write_volatile(0) };
        // Built first so an error below frees the flag (Drop).
        let mut gate = Gate {
            flag,
            dev_ptrs: Vec::with_capacity(gpus.len()),
            value: Cell::new(0),
            open: Cell::new(true),
            early: Cell::new(0),
        };
        for g in gpus {
            g.bind().map_err(|e| e.to_string())?;
            let mut d: cu::CUdeviceptr = 0;
            let r = unsafe { cu::cuMemHostGetDevicePointer_v2(&mut d, host, 0) };
            if r != cu::CUresult::CUDA_SUCCESS {
                return Err(format!(
                    "cuMemHostGetDevicePointer on GPU {}: {r:?}",
                    g.ordinal
                ));
            }
            gate.dev_ptrs.push(d);
        }
        Ok(gate)
    }

    /// Enqueues a wait for the next value on every rank's main stream (rank order = `gpus`).
    pub(super) fn close(&self, gpus: &[&Gpu]) -> Result<(), String> {
        let next = self.value.get().wrapping_add(1);
        self.value.set(next);
        self.open.set(false);
        for (g, &d) in gpus.iter().zip(&self.dev_ptrs) {
            g.bind().map_err(|e| e.to_string())?;
            let r = unsafe {
                cu::cuStreamWaitValue32_v2(
                    g.stream,
                    d,
                    next,
                    cu::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
                )
            };
            if r != cu::CUresult::CUDA_SUCCESS {
                // Nothing waits on a value that was never enqueued; release what was.
                self.open();
                return Err(format!("cuStreamWaitValue32 on GPU {}: {r:?}", g.ordinal));
            }
        }
        Ok(())
    }

    /// Raises the flag: every stream waiting on this batch's value proceeds.
    pub(super) fn open(&self) {
        if !self.open.replace(true) {
            unsafe { self.flag.write_volatile(self.value.get()) };
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Raises the flag before the batch is fully enqueued — NCCL's host side may be waiting
    /// for GPU progress (a full work queue) that the closed gate prevents. The batch then
    /// partly overlaps its own enqueue; counted so the run can say so.
    pub(super) fn open_early(&self) {
        if !self.open.get() {
            self.early.set(self.early.get() + 1);
            self.open();
        }
    }

    /// Whether the flag is down (a batch is being enqueued behind it).
    pub(super) fn is_closed(&self) -> bool {
        !self.open.get()
    }

    /// Batches whose gate had to be raised early.
    pub(super) fn early_count(&self) -> u32 {
        self.early.get()
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // Never leave a stream waiting on memory about to be freed.
        self.open();
        unsafe {
            let _ = cu::cuMemFreeHost(self.flag as *mut std::ffi::c_void);
        }
    }
}
