//! GPU pair transfers: copy engine and SM kernel with peer access enabled, and staging through
//! pinned host memory (what a VM without P2P falls back to), one direction and both; latency of
//! small copies; and a data check per mode: GPU A's buffer gets a fresh pattern, the copy runs,
//! and GPU B's buffer is read back through B's own context and compared.

use super::kernels::CopyKernel;
use super::{
    DeviceBuf, Event, Gpu, PinnedBuf, check_raw, dtoh, htod, pattern, time_on_streams, time_wall,
};
use crate::error::Result;
use crate::plan::RunPlan;
use crate::stats::{summarize, time_and_bandwidth};
use cudarc::driver::sys;
use models::profile::{Direction, PairLink, SizePoint, TransferCurve, TransferMode};

/// Buffers for every pair of a run, allocated once: a source and a destination on each GPU
/// (the source filled with a pattern, never zeros), the two host stages and the pinned buffer
/// the data checks go through. Allocating and pinning per pair cost more than a quick pair's
/// timed copies.
pub struct P2pBuffers {
    /// Per GPU (ordinal, source, destination).
    per_gpu: Vec<(u32, DeviceBuf, DeviceBuf)>,
    stage_fwd: PinnedBuf,
    stage_rev: PinnedBuf,
    check: PinnedBuf,
}

impl P2pBuffers {
    /// Buffers of `bytes` on every GPU of `gpus`, with a `check_bytes` host buffer for checks.
    pub fn new(gpus: &[Gpu], bytes: u64, check_bytes: u64) -> Result<P2pBuffers> {
        let n = bytes as usize;
        let mut fill = PinnedBuf::new(n)?;
        pattern::fill(fill.as_mut_slice(), pattern::fresh_seed());
        let mut per_gpu = Vec::with_capacity(gpus.len());
        for g in gpus {
            let (src, dst) = (g.alloc(n)?, g.alloc(n)?);
            g.bind()?;
            htod(src.ptr, fill.as_slice().as_ptr(), n, g.stream)?;
            g.sync()?;
            per_gpu.push((g.ordinal, src, dst));
        }
        Ok(P2pBuffers {
            per_gpu,
            // The fill buffer becomes the forward stage: its pattern is no longer needed.
            stage_fwd: fill,
            stage_rev: PinnedBuf::new(n)?,
            check: PinnedBuf::new(check_bytes.min(bytes) as usize)?,
        })
    }
}

/// `gpu`'s (source, destination) in `per_gpu`.
fn buffers_of<'b>(
    per_gpu: &'b [(u32, DeviceBuf, DeviceBuf)],
    gpu: &Gpu,
) -> (&'b DeviceBuf, &'b DeviceBuf) {
    let (_, src, dst) = per_gpu
        .iter()
        .find(|(o, _, _)| *o == gpu.ordinal)
        .expect("buffers for every selected GPU");
    (src, dst)
}

/// Buffers for one ordered pair: forward (a → b) and reverse (b → a), each with a host stage.
struct PairBufs<'b> {
    src_a: &'b DeviceBuf,
    dst_b: &'b DeviceBuf,
    src_b: &'b DeviceBuf,
    dst_a: &'b DeviceBuf,
    stage_fwd: &'b mut PinnedBuf,
    stage_rev: &'b mut PinnedBuf,
    check: &'b mut PinnedBuf,
}

/// Everything one pair needs: the two GPUs, buffers, kernels and the staging event.
struct Pair<'g> {
    a: &'g Gpu,
    b: &'g Gpu,
    bufs: PairBufs<'g>,
    kernel_a: Option<&'g CopyKernel>,
    ev_fwd: Event,
    ev_rev: Event,
    /// Forward H2D done (B's context): the next D2H into the same stage waits for it.
    ev_fwd_done: Event,
    /// Reverse H2D done (A's context).
    ev_rev_done: Event,
}

impl Pair<'_> {
    fn copy_engine(
        &self,
        n: usize,
        dir: Direction,
        s1: sys::CUstream,
        s2: sys::CUstream,
    ) -> Result<()> {
        let f = &self.bufs;
        check_raw(
            unsafe {
                sys::cuMemcpyPeerAsync(f.dst_b.ptr, self.b.ctx, f.src_a.ptr, self.a.ctx, n, s1)
            },
            || "cuMemcpyPeerAsync".into(),
        )?;
        if dir == Direction::Bidirectional {
            check_raw(
                unsafe {
                    sys::cuMemcpyPeerAsync(f.dst_a.ptr, self.a.ctx, f.src_b.ptr, self.b.ctx, n, s2)
                },
                || "cuMemcpyPeerAsync".into(),
            )?;
        }
        Ok(())
    }

    fn sm_kernel(
        &self,
        n: usize,
        dir: Direction,
        s1: sys::CUstream,
        s2: sys::CUstream,
    ) -> Result<()> {
        let k = self.kernel_a.expect("kernel loaded");
        let f = &self.bufs;
        // GPU A pushes into B's memory (remote writes, as NCCL's kernels do) ...
        k.launch(f.dst_b.ptr, f.src_a.ptr, n, s1)?;
        if dir == Direction::Bidirectional {
            // ... and, for both directions, pulls B's buffer into its own at the same time.
            k.launch(f.dst_a.ptr, f.src_b.ptr, n, s2)?;
        }
        Ok(())
    }

    /// D2H on the source GPU, then H2D on the destination, ordered by an event; for both
    /// directions the reverse hop runs at once on the second streams with its own stage.
    fn host_staged(&mut self, n: usize, dir: Direction) -> Result<()> {
        let (a, b) = (self.a, self.b);
        let f = &mut self.bufs;
        let fwd = Stage {
            buf: f.stage_fwd,
            copied: &self.ev_fwd,
            landed: &self.ev_fwd_done,
        };
        bounce(
            (a, a.stream),
            (b, b.stream),
            (f.src_a.ptr, f.dst_b.ptr),
            fwd,
            n,
        )?;
        if dir == Direction::Bidirectional {
            let rev = Stage {
                buf: f.stage_rev,
                copied: &self.ev_rev,
                landed: &self.ev_rev_done,
            };
            bounce(
                (b, b.stream2),
                (a, a.stream2),
                (f.src_b.ptr, f.dst_a.ptr),
                rev,
                n,
            )?;
        }
        Ok(())
    }

    fn run(&mut self, mode: TransferMode, n: usize, dir: Direction) -> Result<()> {
        // Peer copies and the kernel are issued from A's context.
        if mode != TransferMode::HostStaged {
            self.a.bind()?;
        }
        match mode {
            TransferMode::CopyEngine => self.copy_engine(n, dir, self.a.stream, self.a.stream2),
            TransferMode::SmKernel => self.sm_kernel(n, dir, self.a.stream, self.a.stream2),
            TransferMode::HostStaged => self.host_staged(n, dir),
        }
    }

    /// Seconds per transfer for each sample.
    fn time(
        &mut self,
        mode: TransferMode,
        n: usize,
        dir: Direction,
        plan: &RunPlan,
        reps: u32,
    ) -> Result<Vec<f64>> {
        let r = plan.repeats;
        match mode {
            TransferMode::HostStaged => {
                let gpus = [self.a, self.b];
                let secs = time_wall(&gpus, r.warmup, r.samples, || {
                    for _ in 0..reps {
                        self.run(mode, n, dir)?;
                    }
                    Ok(())
                })?;
                Ok(secs.into_iter().map(|s| s / reps as f64).collect())
            }
            _ => {
                let a = self.a;
                time_on_streams(a, r.warmup, r.samples, reps, |s1, s2| match mode {
                    TransferMode::CopyEngine => self.copy_engine(n, dir, s1, s2),
                    _ => self.sm_kernel(n, dir, s1, s2),
                })
            }
        }
    }

    /// Fresh pattern into A's source, one transfer, B's destination read back through B.
    fn verify(&mut self, mode: TransferMode) -> Result<bool> {
        let seed = pattern::fresh_seed();
        let n = self.bufs.check.bytes;
        pattern::fill(self.bufs.check.as_mut_slice(), seed);
        self.a.bind()?;
        htod(
            self.bufs.src_a.ptr,
            self.bufs.check.as_slice().as_ptr(),
            n,
            self.a.stream,
        )?;
        self.a.sync()?;
        self.b.bind()?;
        // Poison the destination so a copy that never lands cannot look right.
        check_raw(
            unsafe { sys::cuMemsetD8Async(self.bufs.dst_b.ptr, 0xA5, n, self.b.stream) },
            || "cuMemsetD8Async".into(),
        )?;
        self.b.sync()?;
        self.run(mode, n, Direction::Unidirectional)?;
        self.a.sync()?;
        self.b.sync()?;
        let host = self.bufs.check.as_mut_slice();
        host.fill(0);
        self.b.bind()?;
        dtoh(host.as_mut_ptr(), self.bufs.dst_b.ptr, n, self.b.stream)?;
        self.b.sync()?;
        Ok(pattern::first_mismatch(host, seed).is_none())
    }
}

/// A host stage and its two events: `copied` (source GPU's context) fires when the D2H into
/// `buf` is done, `landed` (destination's context) when the H2D out of it is.
struct Stage<'s> {
    buf: &'s mut PinnedBuf,
    copied: &'s Event,
    landed: &'s Event,
}

/// One host-staged hop of `n` bytes: (source GPU, stream) → `stage` → (destination GPU,
/// stream), `(src, dst)` the device buffers. The D2H waits for the previous H2D out of the same
/// stage, so batched small copies stay sequential bounces like the single large ones.
fn bounce(
    from: (&Gpu, sys::CUstream),
    to: (&Gpu, sys::CUstream),
    (src, dst): (sys::CUdeviceptr, sys::CUdeviceptr),
    stage: Stage,
    n: usize,
) -> Result<()> {
    from.0.bind()?;
    stage.landed.wait_on(from.1)?;
    dtoh(stage.buf.as_mut_slice().as_mut_ptr(), src, n, from.1)?;
    stage.copied.record(from.1)?;
    stage.copied.wait_on(to.1)?;
    to.0.bind()?;
    htod(dst, stage.buf.as_slice().as_ptr(), n, to.1)?;
    stage.landed.record(to.1)
}

/// Enables peer access from `a` to `b`; `Ok(false)` when the driver refuses.
fn enable_peer(a: &Gpu, b: &Gpu) -> Result<bool> {
    a.bind()?;
    let r = unsafe { sys::cuCtxEnablePeerAccess(b.ctx, 0) };
    Ok(matches!(
        r,
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
    ))
}

fn disable_peer(a: &Gpu, b: &Gpu) {
    if a.bind().is_ok() {
        let _ = unsafe { sys::cuCtxDisablePeerAccess(b.ctx) };
    }
}

/// `cuDeviceCanAccessPeer(a, b)`.
pub fn can_access_peer(a: &Gpu, b: &Gpu) -> Result<bool> {
    let mut v = 0i32;
    check_raw(
        unsafe { sys::cuDeviceCanAccessPeer(&mut v, a.dev, b.dev) },
        || "cuDeviceCanAccessPeer".into(),
    )?;
    Ok(v != 0)
}

/// Measures one ordered pair into `link` (curves over `sizes`, latency, evidence), with
/// `bufs` holding at least the largest size. With `a == b` (one GPU) only the host bounce
/// D → H → D is measured: the cost a P2P-less VM pays per hop.
pub fn measure_pair<'g>(
    a: &'g Gpu,
    b: &'g Gpu,
    kernel_a: Option<&'g CopyKernel>,
    bufs: &'g mut P2pBuffers,
    plan: &RunPlan,
    sizes: &[u64],
    link: &mut PairLink,
) -> Result<()> {
    let P2pBuffers {
        per_gpu,
        stage_fwd,
        stage_rev,
        check,
    } = bufs;
    let ((src_a, dst_a), (src_b, dst_b)) = (buffers_of(per_gpu, a), buffers_of(per_gpu, b));
    let bufs = PairBufs {
        src_a,
        dst_b,
        src_b,
        dst_a,
        stage_fwd,
        stage_rev,
        check,
    };
    // An event can only be recorded on a stream of its own context: events recorded on A's
    // streams belong to A, those recorded on B's streams to B.
    b.bind()?;
    let ev_rev = Event::new()?;
    let ev_fwd_done = Event::new()?;
    a.bind()?;
    let ev_fwd = Event::new()?;
    let ev_rev_done = Event::new()?;
    let same = a.ordinal == b.ordinal;
    let (modes, with_kernel) = if same {
        (vec![TransferMode::HostStaged], None)
    } else {
        peer_modes(a, b, kernel_a, plan, link)?
    };
    let mut pair = Pair {
        a,
        b,
        bufs,
        kernel_a: with_kernel,
        ev_fwd,
        ev_rev,
        ev_fwd_done,
        ev_rev_done,
    };
    for &mode in &modes {
        measure_mode(&mut pair, mode, same, plan, sizes, link)?;
    }
    if !same && modes.contains(&TransferMode::CopyEngine) {
        disable_peer(a, b);
        disable_peer(b, a);
    }
    Ok(())
}

/// The transfer modes a pair of distinct GPUs can be measured in, fastest first, with the copy
/// kernel when SM-kernel copies can run: the host bounce always; copy-engine and SM-kernel
/// copies only with peer access enabled both ways (and not refused by `--no-peer-access`).
/// Why each mode is missing goes into `link.evidence`.
fn peer_modes<'g>(
    a: &Gpu,
    b: &Gpu,
    kernel_a: Option<&'g CopyKernel>,
    plan: &RunPlan,
    link: &mut PairLink,
) -> Result<(Vec<TransferMode>, Option<&'g CopyKernel>)> {
    let mut modes = vec![TransferMode::HostStaged];
    let mut with_kernel = None;
    let can = can_access_peer(a, b)? && can_access_peer(b, a)?;
    link.can_access_peer = Some(can);
    if plan.no_peer_access {
        link.evidence
            .push(crate::plan::NO_PEER_ACCESS_EVIDENCE.into());
    } else if can && enable_peer(a, b)? && enable_peer(b, a)? {
        modes.insert(0, TransferMode::CopyEngine);
        match kernel_a {
            Some(k) => {
                with_kernel = Some(k);
                modes.insert(1, TransferMode::SmKernel);
            }
            None => link
                .evidence
                .push("SM-kernel copies skipped: libnvrtc not available".into()),
        }
    } else if can {
        link.evidence
            .push("cuDeviceCanAccessPeer says yes but cuCtxEnablePeerAccess failed".into());
    }
    Ok((modes, with_kernel))
}

/// One mode of a pair: the data check, a curve over `sizes` per direction (both directions
/// only between distinct GPUs and when the plan asks), and the 16-byte latency.
fn measure_mode(
    pair: &mut Pair<'_>,
    mode: TransferMode,
    same: bool,
    plan: &RunPlan,
    sizes: &[u64],
    link: &mut PairLink,
) -> Result<()> {
    let verified = pair.verify(mode)?;
    let dirs: &[Direction] = if same || !plan.p2p_bidirectional {
        &[Direction::Unidirectional]
    } else {
        &[Direction::Unidirectional, Direction::Bidirectional]
    };
    for &dir in dirs {
        let mut points = Vec::new();
        for &size in sizes {
            let reps = plan.repeats.reps_for(size);
            let secs = pair.time(mode, size as usize, dir, plan, reps)?;
            let counted = if dir == Direction::Bidirectional {
                2 * size
            } else {
                size
            };
            let (t, bw) = time_and_bandwidth(counted, &secs);
            points.push(SizePoint {
                bytes: size,
                time_us: t,
                gb_per_s: bw,
            });
        }
        link.curves.push(TransferCurve {
            mode,
            direction: dir,
            points,
            data_verified: Some(verified),
        });
    }
    // Latency: a 16-byte copy, batched so launch gaps average out.
    let secs = pair.time(mode, 16, Direction::Unidirectional, plan, 100)?;
    let us: Vec<f64> = secs.iter().map(|s| s * 1e6).collect();
    link.latency_us
        .insert(mode_key(mode).into(), summarize(&us));
    Ok(())
}

/// The key under which a mode's latency is stored.
pub fn mode_key(mode: TransferMode) -> &'static str {
    match mode {
        TransferMode::CopyEngine => "copy-engine",
        TransferMode::SmKernel => "sm-kernel",
        TransferMode::HostStaged => "host-staged",
    }
}
