//! One NCCL communicator group inside the worker: non-blocking init, launches of every rank's
//! op from one thread, polling waits with a deadline, CUDA-event timing per rank, abort, and
//! (see [`super::gate`]) a gate that lets a timed batch run back to back on the GPUs.
//!
//! A cross-node group holds only this process's ranks of a larger communicator (global ranks,
//! the unique id from the rendezvous). Each process gates and times its own ranks, so before
//! each timed batch an untimed one-element all-reduce lines the nodes up on the GPUs: without
//! it, a node that released its batch first would time the others' enqueue.

use super::Counts;
use super::gate::Gate;
use crate::cuda::{DeviceBuf, Event, Gpu};
use cudarc::driver::sys as cu;
use cudarc::nccl::sys as nc;
use models::profile::CollectiveOp;
use std::ffi::c_void;
use std::time::{Duration, Instant};

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
pub(super) enum Stop {
    Hang,
    Failed(String),
}

pub(super) type Step<T> = std::result::Result<T, Stop>;

pub(super) fn nccl_call(r: nc::ncclResult_t, what: &str) -> Step<()> {
    match r {
        nc::ncclResult_t::ncclSuccess | nc::ncclResult_t::ncclInProgress => Ok(()),
        e => Err(Stop::Failed(format!("{what}: {e:?}"))),
    }
}

/// Where a group's ranks sit in its communicator: this process's global ranks, the
/// communicator's size and its unique id (for a group of this process alone, `None`: ranks
/// are positions and the id is made here).
pub(super) struct Membership {
    pub(super) ranks: Vec<usize>,
    pub(super) nranks: usize,
    pub(super) id: nc::ncclUniqueId,
}

/// A communicator per local rank over borrowed GPUs.
pub(super) struct Group<'g> {
    /// Per rank, (start, end) timing events created in that rank's context: an event may only
    /// be recorded on a stream of its own context.
    events: Vec<(Event, Event)>,
    pub(super) gpus: Vec<&'g Gpu>,
    comms: Vec<nc::ncclComm_t>,
    pub(super) timeout: Duration,
    /// `None` when timing ungated (asked for, or the gate could not be built).
    pub(super) gate: Option<Gate>,
    /// Why a gate that was asked for could not be built.
    pub(super) gate_error: Option<String>,
    /// Global rank of each local rank (position in `gpus`).
    pub(super) ranks: Vec<usize>,
    /// Ranks of the whole communicator.
    pub(super) nranks: usize,
    /// Per local rank, one float for the aligning all-reduce (cross-node groups only).
    align: Vec<DeviceBuf>,
}

/// How long an enqueue may wait behind a closed gate before the gate is raised early.
const GATE_PATIENCE: Duration = Duration::from_millis(500);

impl<'g> Group<'g> {
    /// Polls every communicator until no operation is in progress.
    fn settle(&self, deadline: Instant) -> Step<()> {
        let t0 = Instant::now();
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
                        if let Some(g) = self.gate.as_ref().filter(|g| g.is_closed())
                            && t0.elapsed() > GATE_PATIENCE
                        {
                            g.open_early();
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
    pub(super) fn record(&self, end: bool) -> Step<()> {
        for (g, (start_ev, end_ev)) in self.gpus.iter().zip(&self.events) {
            g.bind().map_err(|e| Stop::Failed(e.to_string()))?;
            let ev = if end { end_ev } else { start_ev };
            ev.record(g.stream)
                .map_err(|e| Stop::Failed(e.to_string()))?;
        }
        Ok(())
    }

    /// Seconds between each rank's start and end event, slowest rank (streams already done).
    pub(super) fn slowest_rank_s(&self) -> Step<f64> {
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
    pub(super) fn wait_streams(&self, deadline: Instant) -> Step<()> {
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

    /// Creates the communicators (non-blocking, so a stuck init is caught by the deadline)
    /// and, when `gated`, the gate; `member` places the ranks in a cross-node communicator.
    pub(super) fn init(
        gpus: Vec<&'g Gpu>,
        member: Option<Membership>,
        timeout: Duration,
        gated: bool,
    ) -> Step<Group<'g>> {
        let cross = member.is_some();
        let Membership { ranks, nranks, id } = match member {
            Some(m) => m,
            None => {
                let mut id = std::mem::MaybeUninit::<nc::ncclUniqueId>::uninit();
                nccl_call(
                    unsafe { nc::ncclGetUniqueId(id.as_mut_ptr()) },
                    "ncclGetUniqueId",
                )?;
                Membership {
                    ranks: (0..gpus.len()).collect(),
                    nranks: gpus.len(),
                    id: unsafe { id.assume_init() },
                }
            }
        };
        let mut comms = vec![std::ptr::null_mut(); gpus.len()];
        nccl_call(unsafe { nc::ncclGroupStart() }, "ncclGroupStart")?;
        for (r, g) in gpus.iter().enumerate() {
            g.bind().map_err(|e| Stop::Failed(e.to_string()))?;
            let mut cfg = ConfigV217::non_blocking();
            nccl_call(
                unsafe {
                    nc::ncclCommInitRankConfig(
                        &mut comms[r],
                        nranks as i32,
                        id,
                        ranks[r] as i32,
                        &mut cfg as *mut ConfigV217 as *mut nc::ncclConfig_t,
                    )
                },
                "ncclCommInitRankConfig",
            )?;
        }
        nccl_call(unsafe { nc::ncclGroupEnd() }, "ncclGroupEnd")?;
        let mut align = Vec::new();
        if cross {
            for g in &gpus {
                align.push(g.alloc(16).map_err(|e| Stop::Failed(e.to_string()))?);
            }
        }
        let mut events = Vec::with_capacity(gpus.len());
        for g in &gpus {
            g.bind().map_err(|e| Stop::Failed(e.to_string()))?;
            let ev = || Event::new().map_err(|e| Stop::Failed(e.to_string()));
            events.push((ev()?, ev()?));
        }
        let (gate, gate_error) = match gated.then(|| Gate::new(&gpus)) {
            Some(Ok(g)) => (Some(g), None),
            Some(Err(why)) => (None, Some(why)),
            None => (None, None),
        };
        let group = Group {
            gpus,
            comms,
            timeout,
            events,
            gate,
            gate_error,
            ranks,
            nranks,
            align,
        };
        group.settle(Instant::now() + timeout)?;
        Ok(group)
    }

    pub(super) fn abort(&mut self) {
        for c in self.comms.drain(..) {
            unsafe {
                let _ = nc::ncclCommAbort(c);
            }
        }
    }

    /// Cross-node groups: enqueues a one-float all-reduce on every local rank, which completes
    /// only once every node's ranks reached it (a no-op for a group of one process).
    pub(super) fn launch_align(&self) -> Step<()> {
        if self.align.is_empty() {
            return Ok(());
        }
        nccl_call(unsafe { nc::ncclGroupStart() }, "ncclGroupStart")?;
        for ((g, &comm), buf) in self.gpus.iter().zip(&self.comms).zip(&self.align) {
            let _ = g.bind();
            let p = buf.ptr as *mut c_void;
            nccl_call(
                unsafe {
                    nc::ncclAllReduce(
                        p,
                        p,
                        1,
                        nc::ncclDataType_t::ncclFloat32,
                        nc::ncclRedOp_t::ncclSum,
                        comm,
                        g.stream as nc::cudaStream_t,
                    )
                },
                "aligning all-reduce",
            )?;
        }
        nccl_call(unsafe { nc::ncclGroupEnd() }, "ncclGroupEnd")?;
        self.settle(Instant::now() + self.timeout)
    }

    /// Enqueues one collective on every rank inside one NCCL group.
    pub(super) fn launch(
        &self,
        op: CollectiveOp,
        c: &Counts,
        bufs: &[(DeviceBuf, DeviceBuf)],
    ) -> Step<()> {
        let n = self.nranks;
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
                        let me = self.ranks[r];
                        let next = ((me + 1) % n) as i32;
                        let prev = ((me + n - 1) % n) as i32;
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

impl Drop for Group<'_> {
    fn drop(&mut self) {
        for c in self.comms.drain(..) {
            unsafe {
                let _ = nc::ncclCommDestroy(c);
            }
        }
    }
}
