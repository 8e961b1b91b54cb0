//! The NCCL worker: runs in a child process (`probe nccl-worker`), one per NCCL environment,
//! so NCCL's environment variables take effect fresh and a wedged GPU cannot take the parent
//! down. It opens the GPUs once and measures its groups in turn, printing one report line per
//! group as it finishes (so the parent keeps what was done if a later group hangs). Inside,
//! communicators are created non-blocking (`ncclCommInitRankConfig` with `blocking = 0`) and
//! every wait polls with a deadline; past it the communicators are aborted (`ncclCommAbort`),
//! the point is recorded as `hang`, and the worker stops: the parent starts a fresh one for the
//! groups left. Cross-node groups (ranks in several processes) follow `super::cross`.

use super::cross::to_nccl_id;
use super::group::{Group, Membership, Step, Stop};
use super::protocol::{
    Directive, GroupReport, GroupSpec, READY_PREFIX, WorkerSpec, curve, empty_points,
};
use super::timing::{Medians, PointTiming, timing_note};
use super::{Counts, ELEM_BYTES, OPS, counts, fill_value};
use crate::cuda::{DeviceBuf, Gpu, htod, open_all};
use crate::error::{ProbeError, Result};
use crate::stats::summarize;
use cudarc::driver::sys as cu;
use cudarc::nccl::sys as nc;
use models::profile::{CollectiveOp, CollectivePoint, CollectiveStatus};
use std::time::{Duration, Instant};

/// Runs every group of `spec`, handing each report to `emit` as soon as it is done; stops
/// after a group that hung.
pub fn run_worker(spec: &WorkerSpec, emit: &mut dyn FnMut(&GroupReport)) -> Result<()> {
    if !unsafe { nc::is_culib_present() } {
        return Err(ProbeError::MissingLibrary {
            library: "libnccl".into(),
            hint: "install NCCL (pip install nvidia-nccl-cu13, or apt install libnccl2) or set NCCL_HOME".into(),
        });
    }
    let started = Instant::now();
    let mut v = 0i32;
    let _ = unsafe { nc::ncclGetVersion(&mut v) };
    let nccl_version = (v > 0).then(|| format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100));
    let mut all: Vec<u32> = spec.groups.iter().flat_map(|g| g.devices.clone()).collect();
    all.sort();
    all.dedup();
    let gpus = open_all(&all)?;
    let open_s = started.elapsed().as_secs_f64();
    let library_path = super::libsearch::loaded_library_path("libnccl");
    for (i, group) in spec.groups.iter().enumerate() {
        let members: Vec<&Gpu> = group
            .devices
            .iter()
            .map(|d| gpus.iter().find(|g| g.ordinal == *d).expect("opened above"))
            .collect();
        let mut rep = match &group.cross {
            None => run_group(spec, group, members, None)?,
            Some(cross) => match wait_for_start(cross.group_id) {
                Some(Directive::Go(id)) => run_group(spec, group, members, Some(&id))?,
                Some(Directive::Skip(why)) => skipped(spec, group, why),
                None => break,
            },
        };
        if i == 0 {
            rep.notes.push(format!(
                "NCCL worker start (libraries, {} GPU contexts): {open_s:.2} s",
                all.len()
            ));
        }
        rep.nccl_version = nccl_version.clone();
        rep.library_path = library_path.clone();
        emit(&rep);
        if rep.aborted {
            break;
        }
    }
    Ok(())
}

/// Says this worker waits at cross-node group `id`'s start and reads the parent's word
/// (`None`: end of input, stop).
fn wait_for_start(id: u32) -> Option<Directive> {
    use std::io::{BufRead, Write};
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{READY_PREFIX}{id}");
        let _ = out.flush();
    }
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => Directive::parse(&line),
        _ => None,
    }
}

/// An empty report for `group`, every op's points `status`.
pub(crate) fn blank_report(
    spec: &WorkerSpec,
    group: &GroupSpec,
    status: CollectiveStatus,
) -> GroupReport {
    let n = group.nranks();
    GroupReport {
        devices: group.devices.clone(),
        nccl_version: None,
        library_path: None,
        curves: group
            .ops()
            .iter()
            .map(|&op| curve(spec, group, op, empty_points(&spec.sizes, op, n, status)))
            .collect(),
        notes: Vec::new(),
        aborted: false,
        cross_group: group.cross.as_ref().map(|c| c.group_id),
        samples_us: Vec::new(),
    }
}

/// A cross-node group another node could not take part in: recorded as an error.
pub(crate) fn skipped(spec: &WorkerSpec, group: &GroupSpec, why: String) -> GroupReport {
    let mut rep = blank_report(spec, group, CollectiveStatus::Error);
    rep.notes.push(format!(
        "cross-node group {:?} not measured: {why}",
        group.output_devices()
    ));
    rep
}

/// Measures every op over every size on one group (`id`: a cross-node group's unique id).
fn run_group(
    spec: &WorkerSpec,
    group: &GroupSpec,
    gpus: Vec<&Gpu>,
    id: Option<&[u8]>,
) -> Result<GroupReport> {
    let clock = Instant::now();
    let n = group.nranks();
    let timeout = Duration::from_secs_f64(spec.timeout_s.max(1.0));
    let mut rep = GroupReport {
        curves: Vec::new(),
        ..blank_report(spec, group, CollectiveStatus::Ok)
    };
    if n == 1 {
        rep.notes.push("one-rank communicator: busbw factor is 0 for all-reduce (and (n-1)/n = 0 for all-gather, reduce-scatter, all-to-all): time and algbw recorded, busbw 0".into());
    }
    let member = match (&group.cross, id) {
        (Some(c), Some(id)) => Some(Membership {
            ranks: c.ranks.iter().map(|&r| r as usize).collect(),
            nranks: n,
            id: to_nccl_id(id),
        }),
        _ => None,
    };
    let ops = group.ops();
    let mut g = match Group::init(gpus, member, timeout, spec.gated) {
        Ok(g) => g,
        Err(stop) => {
            let status = stop_status(stop, &mut rep, "communicator init failed".into());
            rep.curves = ops
                .iter()
                .map(|&op| curve(spec, group, op, empty_points(&spec.sizes, op, n, status)))
                .collect();
            return Ok(rep);
        }
    };
    let init_s = clock.elapsed().as_secs_f64();
    let bufs = send_recv_buffers(&g, &spec.sizes)?;
    let bufs_s = clock.elapsed().as_secs_f64() - init_s;
    let mut check_s = 0.0;
    let cross = group.cross.is_some();
    for &op in &ops {
        let (points, raw) = if rep.aborted {
            let pts = empty_points(&spec.sizes, op, n, CollectiveStatus::Hang);
            (pts, Vec::new())
        } else {
            let m = measure_op(&mut g, spec, group, op, &bufs, &mut rep);
            check_s += m.check_s;
            (m.points, m.raw_us)
        };
        rep.curves.push(curve(spec, group, op, points));
        if cross {
            rep.samples_us.push(raw);
        }
    }
    let devices = group.output_devices();
    rep.notes.push(gate_note(&g, &devices, spec.gated));
    rep.notes.push(format!(
        "NCCL group {devices:?}{}: communicator init {init_s:.2} s, buffers {bufs_s:.2} s, all ops {:.2} s (result checks {check_s:.2} s)",
        if cross { " (this node's ranks; each timed batch after an aligning all-reduce)" } else { "" },
        clock.elapsed().as_secs_f64() - init_s - bufs_s
    ));
    Ok(rep)
}

/// The status a stopped group's remaining points get, with the report marked aborted for a
/// hang; a failure's message is noted after `what`.
fn stop_status(stop: Stop, rep: &mut GroupReport, what: String) -> CollectiveStatus {
    match stop {
        Stop::Hang => {
            rep.aborted = true;
            CollectiveStatus::Hang
        }
        Stop::Failed(m) => {
            rep.notes.push(format!("{what}: {m}"));
            CollectiveStatus::Error
        }
    }
}

/// One op measured over every size.
struct OpRun {
    points: Vec<CollectivePoint>,
    /// Cross-node groups: per point, each sample's µs (empty otherwise).
    raw_us: Vec<Vec<f64>>,
    /// Seconds spent checking results.
    check_s: f64,
}

/// Measures `op` at every size of `spec`; a hang or a failed call aborts the communicators and
/// leaves the sizes after it unmeasured with that status.
fn measure_op(
    g: &mut Group,
    spec: &WorkerSpec,
    group: &GroupSpec,
    op: CollectiveOp,
    bufs: &[(DeviceBuf, DeviceBuf)],
    rep: &mut GroupReport,
) -> OpRun {
    let n = group.nranks();
    let cross = group.cross.is_some();
    let mut run = OpRun {
        points: Vec::new(),
        raw_us: Vec::new(),
        check_s: 0.0,
    };
    let mut medians = Vec::new();
    for (si, &size) in spec.sizes.iter().enumerate() {
        let c = counts(op, size, n);
        let reps =
            (spec.min_bytes_per_sample.div_ceil(c.bytes.max(1)) as u32).clamp(1, spec.max_reps);
        match measure_point(g, op, &c, bufs, spec, reps) {
            Ok((timing, ok)) => {
                run.check_s += timing.check_s;
                let us_of = |v: &[f64]| v.iter().map(|s| s * 1e6).collect::<Vec<f64>>();
                let us = |v: &[f64]| summarize(&us_of(v));
                let t = us(&timing.gpu_s);
                if cross {
                    run.raw_us.push(us_of(&timing.gpu_s));
                }
                medians.push(Medians {
                    bytes: c.bytes,
                    gpu_us: t.median,
                    enqueue_us: us(&timing.enqueue_s).median,
                    host_us: us(&timing.host_s).median,
                });
                let algbw = c.bytes as f64 / (t.median * 1e-6) / 1e9;
                if !ok {
                    rep.notes.push(format!(
                        "{op:?} {} B on {:?}: wrong result",
                        c.bytes, group.devices
                    ));
                }
                run.points.push(CollectivePoint {
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
                if matches!(stop, Stop::Hang) {
                    rep.notes.push(format!(
                        "{op:?} {} B on {:?}: no progress in {:.0} s, communicators aborted",
                        c.bytes, group.devices, spec.timeout_s
                    ));
                }
                let status = stop_status(stop, rep, format!("{op:?} {} B", c.bytes));
                // A failed call leaves the communicators unusable, like a hang.
                rep.aborted = true;
                g.abort();
                run.points
                    .extend(empty_points(&spec.sizes[si..], op, n, status));
                break;
            }
        }
    }
    let devices = group.output_devices();
    if let Some(note) = timing_note(op, &devices, g.gate.is_some(), &medians) {
        rep.notes.push(note);
    }
    run
}

/// How the group's batches were timed, for the notes.
fn gate_note(g: &Group, devices: &[u32], asked: bool) -> String {
    match (&g.gate, &g.gate_error) {
        (Some(gate), _) if gate.early_count() > 0 => format!(
            "NCCL timing on {devices:?}: batches queued behind a gate and released at once (back to back on the GPUs, as a CUDA graph replays them); {} batches needed the gate raised before their enqueue finished and partly include host enqueue time",
            gate.early_count()
        ),
        (Some(_), _) => format!(
            "NCCL timing on {devices:?}: batches queued behind a gate and released at once (back to back on the GPUs, as a CUDA graph replays them)"
        ),
        (None, Some(why)) => format!(
            "NCCL timing on {devices:?}: no gate ({why}); batches timed as enqueued, so small sizes include the host's per-op launch cost"
        ),
        (None, None) if !asked => format!(
            "NCCL timing on {devices:?}: ungated (asked for); batches timed as enqueued, so small sizes include the host's per-op launch cost"
        ),
        (None, None) => unreachable!("a gate asked for is either built or has an error"),
    }
}

/// Per rank a send and a receive buffer sized for the largest message of any op, the send
/// buffer holding [`fill_value`] once (filled on every core: 1 GiB is 256 Mi elements).
fn send_recv_buffers(g: &Group, sizes: &[u64]) -> Result<Vec<(DeviceBuf, DeviceBuf)>> {
    let n = g.nranks;
    let max = *sizes.iter().max().unwrap_or(&8);
    let max_elems = OPS
        .iter()
        .map(|&op| {
            let c = counts(op, max, n);
            c.send.max(c.recv)
        })
        .max()
        .unwrap_or(2);
    let mut host = vec![0f32; max_elems];
    let mut bufs = Vec::new();
    for (gpu, &r) in g.gpus.iter().zip(&g.ranks) {
        let send = gpu.alloc(max_elems * 4)?;
        let recv = gpu.alloc(max_elems * 4)?;
        crate::par::fill_indexed(&mut host, |i| fill_value(r, i));
        htod(
            send.ptr,
            host.as_ptr() as *const u8,
            max_elems * 4,
            gpu.stream,
        )?;
        gpu.sync()?;
        bufs.push((send, recv));
    }
    Ok(bufs)
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
        group.launch_align()?;
        group.launch(op, c, bufs)?;
    }
    group.wait_streams(Instant::now() + group.timeout)?;
    // Per sample: (gate closed,) events on every rank's stream around the batch, (gate
    // raised,) the host-side deadline wait (hang detection), then the slowest rank's event
    // interval. The host time spent enqueueing is kept too: ungated, if it approaches the GPU
    // time, the single driving thread (and `settle`'s polling) is what limits.
    let mut timing = PointTiming::default();
    for _ in 0..spec.samples.max(1) {
        let t0 = Instant::now();
        if let Some(gate) = &group.gate {
            gate.close(&group.gpus).map_err(Stop::Failed)?;
        }
        let enqueued = (|| {
            group.launch_align()?;
            group.record(false)?;
            for _ in 0..reps {
                group.launch(op, c, bufs)?;
            }
            group.record(true)
        })();
        timing
            .enqueue_s
            .push(t0.elapsed().as_secs_f64() / reps as f64);
        // Raised on every path: an error must not leave a stream waiting forever.
        if let Some(gate) = &group.gate {
            gate.open();
        }
        enqueued?;
        group.wait_streams(t0 + group.timeout)?;
        timing.host_s.push(t0.elapsed().as_secs_f64() / reps as f64);
        timing.gpu_s.push(group.slowest_rank_s()? / reps as f64);
    }
    let n = group.nranks;
    let check_clock = Instant::now();
    let mut ok = true;
    for ((g, (_, recv)), &r) in group.gpus.iter().zip(bufs).zip(&group.ranks) {
        ok &= super::check::rank_result_ok(g, recv, op, n, r, c).map_err(fail)?;
    }
    timing.check_s = check_clock.elapsed().as_secs_f64();
    Ok((timing, ok))
}
