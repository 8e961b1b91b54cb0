//! The NCCL worker: runs in a child process (`probe nccl-worker`), one per GPU group and NCCL
//! environment, so NCCL's environment variables take effect fresh and a wedged GPU cannot take
//! the parent down. Inside, communicators are created non-blocking (`ncclCommInitRankConfig`
//! with `blocking = 0`) and every wait polls with a deadline; past it the communicators are
//! aborted (`ncclCommAbort`) and the point is recorded as `hang`.

use super::timing::{Medians, PointTiming, timing_note};
use super::{Counts, ELEM_BYTES, OPS, counts, expected_value, fill_value};
use crate::cuda::{DeviceBuf, Event, Gpu, dtoh, htod, open_all};
use crate::error::{ProbeError, Result};
use crate::stats::summarize;
use cudarc::driver::sys as cu;
use cudarc::nccl::sys as nc;
use models::profile::{
    CollectiveCurve, CollectiveOp, CollectivePoint, CollectiveStatus, LinkClass,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::time::{Duration, Instant};

/// What the parent asks one worker to measure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// CUDA device indices of the group (rank = position).
    pub devices: Vec<u32>,
    /// nccl-tests sizes in bytes.
    pub sizes: Vec<u64>,
    /// Untimed runs per size.
    pub warmup: u32,
    /// Timed samples per size.
    pub samples: u32,
    /// Bytes a sample should move at least (small sizes are batched).
    pub min_bytes_per_sample: u64,
    /// Most operations per sample.
    pub max_reps: u32,
    /// Seconds any single wait may take before the group is declared hung.
    pub timeout_s: f64,
    /// Worst link class inside the group, copied into the curves.
    pub link_class: Option<LinkClass>,
    /// NCCL environment variables this worker was started with, copied into the curves.
    pub nccl_env: BTreeMap<String, String>,
}

/// What a worker prints (one JSON line on stdout).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerReport {
    /// `2.28.3`.
    pub nccl_version: Option<String>,
    /// The libnccl file actually mapped into the worker.
    pub library_path: Option<String>,
    /// One curve per op.
    pub curves: Vec<CollectiveCurve>,
    /// Remarks (hangs, wrong results, one-rank caveats).
    pub notes: Vec<String>,
}

/// NCCL 2.17's `ncclConfig_t` layout. Newer libraries accept it: they read `size` and
/// `version` and treat later fields as unset. Declared here so the probe does not depend on
/// which NCCL version the bindings were generated for.
#[repr(C)]
struct ConfigV217 {
    size: usize,
    magic: u32,
    version: u32,
    blocking: i32,
    cga_cluster_size: i32,
    min_ctas: i32,
    max_ctas: i32,
    net_name: *const std::ffi::c_char,
    split_share: i32,
}

impl ConfigV217 {
    fn non_blocking() -> Self {
        const UNDEF: i32 = i32::MIN; // NCCL_CONFIG_UNDEF_INT
        ConfigV217 {
            size: std::mem::size_of::<ConfigV217>(),
            magic: 0xcafe_beef,
            version: 21700, // NCCL_VERSION(2, 17, 0)
            blocking: 0,
            cga_cluster_size: UNDEF,
            min_ctas: UNDEF,
            max_ctas: UNDEF,
            net_name: std::ptr::null(),
            split_share: UNDEF,
        }
    }
}

/// Why a wait ended early.
enum Stop {
    Hang,
    Failed(String),
}

type Step<T> = std::result::Result<T, Stop>;

fn nccl_call(r: nc::ncclResult_t, what: &str) -> Step<()> {
    match r {
        nc::ncclResult_t::ncclSuccess | nc::ncclResult_t::ncclInProgress => Ok(()),
        e => Err(Stop::Failed(format!("{what}: {e:?}"))),
    }
}

struct Group {
    /// Per rank, (start, end) timing events created in that rank's context: an event may only
    /// be recorded on a stream of its own context. Declared first so they are destroyed before
    /// the contexts in `gpus`.
    events: Vec<(Event, Event)>,
    gpus: Vec<Gpu>,
    comms: Vec<nc::ncclComm_t>,
    timeout: Duration,
}

impl Group {
    /// Polls every communicator until no operation is in progress.
    fn settle(&self, deadline: Instant) -> Step<()> {
        for &c in &self.comms {
            loop {
                let mut st = nc::ncclResult_t::ncclSuccess;
                nccl_call(
                    unsafe { nc::ncclCommGetAsyncError(c, &mut st) },
                    "ncclCommGetAsyncError",
                )?;
                match st {
                    nc::ncclResult_t::ncclSuccess => break,
                    nc::ncclResult_t::ncclInProgress => {
                        if Instant::now() > deadline {
                            return Err(Stop::Hang);
                        }
                        std::thread::yield_now();
                    }
                    e => return Err(Stop::Failed(format!("NCCL async error {e:?}"))),
                }
            }
        }
        Ok(())
    }

    /// Records each rank's start (`end == false`) or end event on that rank's stream.
    fn record(&self, end: bool) -> Step<()> {
        for (g, (start_ev, end_ev)) in self.gpus.iter().zip(&self.events) {
            g.bind().map_err(|e| Stop::Failed(e.to_string()))?;
            let ev = if end { end_ev } else { start_ev };
            ev.record(g.stream)
                .map_err(|e| Stop::Failed(e.to_string()))?;
        }
        Ok(())
    }

    /// Seconds between each rank's start and end event, slowest rank (streams already done).
    fn slowest_rank_s(&self) -> Step<f64> {
        let mut worst = 0f64;
        for (g, (start_ev, end_ev)) in self.gpus.iter().zip(&self.events) {
            g.bind().map_err(|e| Stop::Failed(e.to_string()))?;
            let s = start_ev
                .seconds_to(end_ev)
                .map_err(|e| Stop::Failed(e.to_string()))?;
            worst = worst.max(s);
        }
        Ok(worst)
    }

    /// Waits for every rank's stream, failing as `Hang` past the deadline.
    fn wait_streams(&self, deadline: Instant) -> Step<()> {
        for g in &self.gpus {
            let _ = g.bind();
            loop {
                match unsafe { cu::cuStreamQuery(g.stream) } {
                    cu::CUresult::CUDA_SUCCESS => break,
                    cu::CUresult::CUDA_ERROR_NOT_READY => {
                        if Instant::now() > deadline {
                            return Err(Stop::Hang);
                        }
                        self.settle(deadline)?;
                        std::thread::sleep(Duration::from_micros(20));
                    }
                    e => return Err(Stop::Failed(format!("stream on GPU {}: {e:?}", g.ordinal))),
                }
            }
        }
        Ok(())
    }

    fn init(gpus: Vec<Gpu>, timeout: Duration) -> Step<Group> {
        let n = gpus.len() as i32;
        let mut id = std::mem::MaybeUninit::<nc::ncclUniqueId>::uninit();
        nccl_call(
            unsafe { nc::ncclGetUniqueId(id.as_mut_ptr()) },
            "ncclGetUniqueId",
        )?;
        let id = unsafe { id.assume_init() };
        let mut comms = vec![std::ptr::null_mut(); gpus.len()];
        nccl_call(unsafe { nc::ncclGroupStart() }, "ncclGroupStart")?;
        for (r, g) in gpus.iter().enumerate() {
            g.bind().map_err(|e| Stop::Failed(e.to_string()))?;
            let mut cfg = ConfigV217::non_blocking();
            nccl_call(
                unsafe {
                    nc::ncclCommInitRankConfig(
                        &mut comms[r],
                        n,
                        id,
                        r as i32,
                        &mut cfg as *mut ConfigV217 as *mut nc::ncclConfig_t,
                    )
                },
                "ncclCommInitRankConfig",
            )?;
        }
        nccl_call(unsafe { nc::ncclGroupEnd() }, "ncclGroupEnd")?;
        let mut events = Vec::with_capacity(gpus.len());
        for g in &gpus {
            g.bind().map_err(|e| Stop::Failed(e.to_string()))?;
            let ev = || Event::new().map_err(|e| Stop::Failed(e.to_string()));
            events.push((ev()?, ev()?));
        }
        let group = Group {
            gpus,
            comms,
            timeout,
            events,
        };
        group.settle(Instant::now() + timeout)?;
        Ok(group)
    }

    fn abort(&mut self) {
        for c in self.comms.drain(..) {
            unsafe {
                let _ = nc::ncclCommAbort(c);
            }
        }
    }

    /// Enqueues one collective on every rank inside one NCCL group.
    fn launch(&self, op: CollectiveOp, c: &Counts, bufs: &[(DeviceBuf, DeviceBuf)]) -> Step<()> {
        let n = self.comms.len();
        let f32t = nc::ncclDataType_t::ncclFloat32;
        nccl_call(unsafe { nc::ncclGroupStart() }, "ncclGroupStart")?;
        for (r, g) in self.gpus.iter().enumerate() {
            let _ = g.bind();
            let comm = self.comms[r];
            let s = g.stream as nc::cudaStream_t;
            let send = bufs[r].0.ptr as *const c_void;
            let recv = bufs[r].1.ptr as *mut c_void;
            let off = |p: *const c_void, elems: usize| unsafe {
                (p as *const u8).add(elems * 4) as *mut c_void
            };
            let res = unsafe {
                match op {
                    CollectiveOp::AllReduce => nc::ncclAllReduce(
                        send,
                        recv,
                        c.send,
                        f32t,
                        nc::ncclRedOp_t::ncclSum,
                        comm,
                        s,
                    ),
                    CollectiveOp::AllGather => {
                        nc::ncclAllGather(send, recv, c.chunk, f32t, comm, s)
                    }
                    CollectiveOp::ReduceScatter => nc::ncclReduceScatter(
                        send,
                        recv,
                        c.chunk,
                        f32t,
                        nc::ncclRedOp_t::ncclSum,
                        comm,
                        s,
                    ),
                    CollectiveOp::AllToAll => {
                        let mut rr = nc::ncclResult_t::ncclSuccess;
                        for p in 0..n {
                            let a = nc::ncclSend(
                                off(send, p * c.chunk),
                                c.chunk,
                                f32t,
                                p as i32,
                                comm,
                                s,
                            );
                            let b = nc::ncclRecv(
                                off(recv, p * c.chunk),
                                c.chunk,
                                f32t,
                                p as i32,
                                comm,
                                s,
                            );
                            for x in [a, b] {
                                if !matches!(
                                    x,
                                    nc::ncclResult_t::ncclSuccess
                                        | nc::ncclResult_t::ncclInProgress
                                ) {
                                    rr = x;
                                }
                            }
                        }
                        rr
                    }
                    CollectiveOp::SendRecv => {
                        let next = ((r + 1) % n) as i32;
                        let prev = ((r + n - 1) % n) as i32;
                        let a = nc::ncclSend(send, c.send, f32t, next, comm, s);
                        let b = nc::ncclRecv(recv, c.recv, f32t, prev, comm, s);
                        if matches!(
                            a,
                            nc::ncclResult_t::ncclSuccess | nc::ncclResult_t::ncclInProgress
                        ) {
                            b
                        } else {
                            a
                        }
                    }
                }
            };
            nccl_call(res, "NCCL collective")?;
        }
        nccl_call(unsafe { nc::ncclGroupEnd() }, "ncclGroupEnd")?;
        self.settle(Instant::now() + self.timeout)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for c in self.comms.drain(..) {
            unsafe {
                let _ = nc::ncclCommDestroy(c);
            }
        }
    }
}

/// Runs every op over every size on the spec's group.
pub fn run_worker(spec: &WorkerSpec) -> Result<WorkerReport> {
    if !unsafe { nc::is_culib_present() } {
        return Err(ProbeError::MissingLibrary {
            library: "libnccl".into(),
            hint: "install NCCL (pip install nvidia-nccl-cu13, or apt install libnccl2) or set NCCL_HOME".into(),
        });
    }
    let mut v = 0i32;
    let _ = unsafe { nc::ncclGetVersion(&mut v) };
    let nccl_version = (v > 0).then(|| format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100));
    let gpus = open_all(&spec.devices)?;
    let n = gpus.len();
    let timeout = Duration::from_secs_f64(spec.timeout_s.max(1.0));
    let mut notes = Vec::new();
    if n == 1 {
        notes.push("one-rank communicator: busbw factor is 0 for all-reduce (and (n-1)/n = 0 for all-gather, reduce-scatter, all-to-all): time and algbw recorded, busbw 0".into());
    }
    let curve = |op: CollectiveOp, points: Vec<CollectivePoint>| CollectiveCurve {
        op,
        devices: spec.devices.clone(),
        link_class: spec.link_class,
        nccl_env: spec.nccl_env.clone(),
        points,
    };
    let hang_points =
        |sizes: &[u64], op: CollectiveOp, status: CollectiveStatus| -> Vec<CollectivePoint> {
            sizes
                .iter()
                .map(|&s| CollectivePoint {
                    bytes: counts(op, s, n).bytes,
                    time_us: crate::stats::missing(),
                    algbw_gb_per_s: 0.0,
                    busbw_gb_per_s: 0.0,
                    status,
                })
                .collect()
        };
    let library_path = super::libsearch::loaded_library_path("libnccl");
    let mut group = match Group::init(gpus, timeout) {
        Ok(g) => g,
        Err(stop) => {
            let status = match stop {
                Stop::Hang => CollectiveStatus::Hang,
                Stop::Failed(m) => {
                    notes.push(format!("communicator init failed: {m}"));
                    CollectiveStatus::Error
                }
            };
            let curves = OPS
                .iter()
                .map(|&op| curve(op, hang_points(&spec.sizes, op, status)))
                .collect();
            return Ok(WorkerReport {
                nccl_version,
                library_path: super::libsearch::loaded_library_path("libnccl"),
                curves,
                notes,
            });
        }
    };
    // Buffers sized for the largest message of any op; send buffers hold fill_value once.
    let max = *spec.sizes.iter().max().unwrap_or(&8);
    let max_elems = OPS
        .iter()
        .map(|&op| {
            let c = counts(op, max, n);
            c.send.max(c.recv)
        })
        .max()
        .unwrap_or(2);
    let mut bufs = Vec::new();
    for (r, g) in group.gpus.iter().enumerate() {
        let send = g.alloc(max_elems * 4)?;
        let recv = g.alloc(max_elems * 4)?;
        let host: Vec<f32> = (0..max_elems).map(|i| fill_value(r, i)).collect();
        htod(
            send.ptr,
            host.as_ptr() as *const u8,
            max_elems * 4,
            g.stream,
        )?;
        g.sync()?;
        bufs.push((send, recv));
    }
    let mut curves = Vec::new();
    let mut dead = false;
    for &op in &OPS {
        if dead {
            curves.push(curve(
                op,
                hang_points(&spec.sizes, op, CollectiveStatus::Hang),
            ));
            continue;
        }
        let mut points = Vec::new();
        let mut medians = Vec::new();
        for (si, &size) in spec.sizes.iter().enumerate() {
            let c = counts(op, size, n);
            let reps =
                (spec.min_bytes_per_sample.div_ceil(c.bytes.max(1)) as u32).clamp(1, spec.max_reps);
            match measure_point(&group, op, &c, &bufs, spec, reps) {
                Ok((timing, ok)) => {
                    let us = |v: &[f64]| summarize(&v.iter().map(|s| s * 1e6).collect::<Vec<_>>());
                    let t = us(&timing.gpu_s);
                    medians.push(Medians {
                        bytes: c.bytes,
                        gpu_us: t.median,
                        enqueue_us: us(&timing.enqueue_s).median,
                        host_us: us(&timing.host_s).median,
                    });
                    let algbw = c.bytes as f64 / (t.median * 1e-6) / 1e9;
                    if !ok {
                        notes.push(format!(
                            "{op:?} {} B on {:?}: wrong result",
                            c.bytes, spec.devices
                        ));
                    }
                    points.push(CollectivePoint {
                        bytes: c.bytes,
                        time_us: t,
                        algbw_gb_per_s: algbw,
                        busbw_gb_per_s: algbw * op.busbw_factor(n as u32),
                        status: if ok {
                            CollectiveStatus::Ok
                        } else {
                            CollectiveStatus::WrongResult
                        },
                    });
                }
                Err(stop) => {
                    let status = match stop {
                        Stop::Hang => {
                            notes.push(format!("{op:?} {} B on {:?}: no progress in {:.0} s, communicators aborted", c.bytes, spec.devices, spec.timeout_s));
                            CollectiveStatus::Hang
                        }
                        Stop::Failed(m) => {
                            notes.push(format!("{op:?} {} B: {m}", c.bytes));
                            CollectiveStatus::Error
                        }
                    };
                    group.abort();
                    points.extend(hang_points(&spec.sizes[si..], op, status));
                    dead = true;
                    break;
                }
            }
        }
        if let Some(note) = timing_note(op, &spec.devices, &medians) {
            notes.push(note);
        }
        curves.push(curve(op, points));
    }
    Ok(WorkerReport {
        nccl_version,
        library_path,
        curves,
        notes,
    })
}

/// Times one op at one size (seconds per op per sample, CUDA events) and checks the result.
fn measure_point(
    group: &Group,
    op: CollectiveOp,
    c: &Counts,
    bufs: &[(DeviceBuf, DeviceBuf)],
    spec: &WorkerSpec,
    reps: u32,
) -> Step<(PointTiming, bool)> {
    let fail = |e: ProbeError| Stop::Failed(e.to_string());
    // Poison receive buffers (0xFF bytes are NaNs) so unwritten elements cannot pass the check.
    for (g, (_, recv)) in group.gpus.iter().zip(bufs) {
        g.bind().map_err(fail)?;
        let r =
            unsafe { cu::cuMemsetD8Async(recv.ptr, 0xFF, c.recv * ELEM_BYTES as usize, g.stream) };
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(Stop::Failed(format!("cuMemsetD8Async: {r:?}")));
        }
    }
    for _ in 0..spec.warmup.max(1) {
        group.launch(op, c, bufs)?;
    }
    group.wait_streams(Instant::now() + group.timeout)?;
    // Per sample: events on every rank's stream around the batch, the host-side deadline wait
    // (hang detection), then the slowest rank's event interval, as nccl-tests and
    // torch.distributed time it. The host time spent enqueueing is kept too: if it approaches
    // the GPU time, the single driving thread (and `settle`'s polling) is what limits.
    let mut timing = PointTiming::default();
    for _ in 0..spec.samples.max(1) {
        let t0 = Instant::now();
        group.record(false)?;
        for _ in 0..reps {
            group.launch(op, c, bufs)?;
        }
        group.record(true)?;
        timing
            .enqueue_s
            .push(t0.elapsed().as_secs_f64() / reps as f64);
        group.wait_streams(t0 + group.timeout)?;
        timing.host_s.push(t0.elapsed().as_secs_f64() / reps as f64);
        timing.gpu_s.push(group.slowest_rank_s()? / reps as f64);
    }
    let n = group.gpus.len();
    let mut ok = true;
    for (r, (g, (_, recv))) in group.gpus.iter().zip(bufs).enumerate() {
        let mut host = vec![0f32; c.recv];
        g.bind().map_err(fail)?;
        dtoh(host.as_mut_ptr() as *mut u8, recv.ptr, c.recv * 4, g.stream).map_err(fail)?;
        g.sync().map_err(fail)?;
        ok &= check_indices(host.len()).all(|i| host[i] == expected_value(op, n, r, i, c));
    }
    Ok((timing, ok))
}

/// Elements compared after a collective: all of them up to 4 Mi elements (16 MiB); beyond, the
/// first and last 256 Ki and every 4093rd in between (a prime stride, so no rank's chunk
/// boundary is always skipped) — the full compare of a 1 GiB buffer on 8 ranks costs seconds.
pub fn check_indices(len: usize) -> Box<dyn Iterator<Item = usize>> {
    const ALL: usize = 4 << 20;
    const EDGE: usize = 256 << 10;
    if len <= ALL {
        return Box::new(0..len);
    }
    Box::new(
        (0..EDGE)
            .chain((EDGE..len - EDGE).step_by(4093))
            .chain(len - EDGE..len),
    )
}

#[cfg(test)]
mod tests {
    use super::check_indices;

    #[test]
    fn small_buffers_are_checked_whole_large_ones_sampled() {
        assert_eq!(check_indices(1000).count(), 1000);
        let len = 256 << 20;
        let v: Vec<usize> = check_indices(len).collect();
        assert!(v.len() < len / 100);
        assert_eq!((v[0], *v.last().unwrap()), (0, len - 1));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
    }
}
