"""nccl-tests-style reference straight on libnccl: one process per GPU, no torch.

Usage: python3 nccl_ctypes_reference.py --out ref.json [--graph | --gate] [--gpus N]
           [--min-bytes 8] [--max-bytes 1073741824] [--nccl LIBPATH]

Why: torch.distributed adds its own per-op stream and event plumbing, so at small sizes it
measures torch as much as NCCL; nccl-tests cannot be built where the probe was validated. This
script calls libnccl.so.2 (the same library the probe loads) and the CUDA driver through ctypes,
one process per GPU as an SGLang server runs, with the probe's sizes and repeats: 3 warm-up
runs, 15 samples, small sizes batched so a sample moves at least 64 MiB (at most 50 ops).
Each sample: a host barrier across the ranks, a CUDA event, the batch (eager launches, or with
--graph the replay of a CUDA graph capturing it, as nccl-tests -G), an event; a rank's figure is
the median of its samples, the reported time the slowest rank's. --gate instead queues each
eager batch behind a flag in shared host memory that every rank's stream waits on
(cuStreamWaitValue32) and rank 0 raises once all ranks have enqueued — the probe's own timing,
but one process per GPU: comparing --gate with --graph separates what CUDA graphs save from
what driving all ranks from one process costs. Sizes, algbw and busbw follow
nccl-tests (as probe/src/nccl/mod.rs `counts`). The output has the layout of
torch_dist_reference.py's, so compare_collectives.py reads either.
"""
import argparse
import ctypes
import json
import multiprocessing as mp
import os
import statistics

ELEM = 4
WARMUP, SAMPLES = 3, 15
MIN_BYTES_PER_SAMPLE, MAX_REPS = 64 << 20, 50
OPS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
NCCL_FLOAT32, NCCL_SUM = 7, 0


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def counts(op, size, n):
    elems = max(size // ELEM, 1)
    if op == "all_reduce":
        return elems, elems, elems * ELEM
    c = max(elems // n, 1)
    if op == "all_gather":
        return c, c * n, c * n * ELEM
    if op == "reduce_scatter":
        return c * n, c, c * n * ELEM
    return c * n, c * n, c * n * ELEM


def busbw_factor(op, n):
    return 2.0 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def ok(r, what):
    if r != 0:
        raise RuntimeError(f"{what} returned {r}")


class Cuda:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        ok(self.lib.cuInit(0), "cuInit")

    def __getattr__(self, name):
        return getattr(self.lib, name)


def worker(rank, n, uid_bytes, nccl_path, sizes, graph, gate_name, barrier, results):
    cu = Cuda()
    nccl = ctypes.CDLL(nccl_path)
    uid = UniqueId.from_buffer_copy(uid_bytes)
    dev, ctx, stream = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
    ok(cu.cuDeviceGet(ctypes.byref(dev), rank), "cuDeviceGet")
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    ok(cu.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
    comm = ctypes.c_void_p()
    ok(nccl.ncclCommInitRank(ctypes.byref(comm), n, uid, rank), "ncclCommInitRank")
    big = max(max(counts(op, sizes[-1], n)[:2]) for op in OPS) * ELEM
    send, recv = ctypes.c_uint64(), ctypes.c_uint64()
    ok(cu.cuMemAlloc_v2(ctypes.byref(send), ctypes.c_size_t(big)), "cuMemAlloc")
    ok(cu.cuMemAlloc_v2(ctypes.byref(recv), ctypes.c_size_t(big)), "cuMemAlloc")
    one = ctypes.c_float(rank + 1.0)
    bits = ctypes.cast(ctypes.pointer(one), ctypes.POINTER(ctypes.c_uint32)).contents.value
    ok(cu.cuMemsetD32_v2(send, ctypes.c_uint32(bits), ctypes.c_size_t(big // 4)), "cuMemsetD32")
    ev_a, ev_b = ctypes.c_void_p(), ctypes.c_void_p()
    ok(cu.cuEventCreate(ctypes.byref(ev_a), 0), "cuEventCreate")
    ok(cu.cuEventCreate(ctypes.byref(ev_b), 0), "cuEventCreate")
    elapsed = getattr(cu.lib, "cuEventElapsedTime_v2", None) or cu.lib.cuEventElapsedTime
    s = stream
    flag = flag_dev = None
    if gate_name:
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(name=gate_name)
        flag = ctypes.c_uint32.from_buffer(shm.buf)
        ok(cu.cuMemHostRegister_v2(ctypes.c_void_p(ctypes.addressof(flag)), ctypes.c_size_t(4096),
                                   2), "cuMemHostRegister")  # DEVICEMAP
        flag_dev = ctypes.c_uint64()
        ok(cu.cuMemHostGetDevicePointer_v2(ctypes.byref(flag_dev),
                                           ctypes.c_void_p(ctypes.addressof(flag)), 0),
           "cuMemHostGetDevicePointer")
    gate_value = 0

    def launch(op, ns, nr):
        if op == "all_reduce":
            r = nccl.ncclAllReduce(send, recv, ctypes.c_size_t(ns), NCCL_FLOAT32, NCCL_SUM, comm, s)
        elif op == "all_gather":
            r = nccl.ncclAllGather(send, recv, ctypes.c_size_t(ns), NCCL_FLOAT32, comm, s)
        elif op == "reduce_scatter":
            r = nccl.ncclReduceScatter(send, recv, ctypes.c_size_t(nr), NCCL_FLOAT32, NCCL_SUM, comm, s)
        else:
            c = ns // n
            ok(nccl.ncclGroupStart(), "ncclGroupStart")
            for p in range(n):
                ok(nccl.ncclSend(ctypes.c_uint64(send.value + p * c * ELEM), ctypes.c_size_t(c),
                                 NCCL_FLOAT32, p, comm, s), "ncclSend")
                ok(nccl.ncclRecv(ctypes.c_uint64(recv.value + p * c * ELEM), ctypes.c_size_t(c),
                                 NCCL_FLOAT32, p, comm, s), "ncclRecv")
            r = nccl.ncclGroupEnd()
        ok(r, op)

    def first_last(nr):
        out = (ctypes.c_float * 1)()
        vals = []
        for i in (0, nr - 1):
            ok(cu.cuMemcpyDtoH_v2(out, ctypes.c_uint64(recv.value + i * ELEM), 4), "cuMemcpyDtoH")
            vals.append(out[0])
        return vals

    points = []
    for op in OPS:
        for size in sizes:
            ns, nr, nbytes = counts(op, size, n)
            reps = min(max(-(-MIN_BYTES_PER_SAMPLE // nbytes), 1), MAX_REPS)
            launch(op, ns, nr)
            ok(cu.cuStreamSynchronize(s), "sync")
            # Every rank's send holds rank + 1: sums are n(n+1)/2, gathers hold the peer's.
            want = {"all_reduce": [n * (n + 1) / 2] * 2, "reduce_scatter": [n * (n + 1) / 2] * 2,
                    "all_gather": [1.0, float(n)], "all_to_all": [1.0, float(n)]}[op]
            verified = first_last(nr) == want
            for _ in range(WARMUP):
                launch(op, ns, nr)
            ok(cu.cuStreamSynchronize(s), "sync")
            exec_ = None
            if graph:
                g, exec_ = ctypes.c_void_p(), ctypes.c_void_p()
                ok(cu.cuStreamBeginCapture_v2(s, 1), "cuStreamBeginCapture")  # thread-local
                for _ in range(reps):
                    launch(op, ns, nr)
                ok(cu.cuStreamEndCapture(s, ctypes.byref(g)), "cuStreamEndCapture")
                ok(cu.cuGraphInstantiateWithFlags(ctypes.byref(exec_), g, ctypes.c_ulonglong(0)),
                   "cuGraphInstantiate")
                ok(cu.cuGraphLaunch(exec_, s), "cuGraphLaunch")  # upload + warm
                ok(cu.cuStreamSynchronize(s), "sync")
            times = []
            for _ in range(SAMPLES):
                barrier.wait()
                if flag_dev is not None:
                    gate_value += 1
                    ok(cu.cuStreamWaitValue32_v2(s, flag_dev, ctypes.c_uint32(gate_value), 0),
                       "cuStreamWaitValue32")  # GEQ
                ok(cu.cuEventRecord(ev_a, s), "cuEventRecord")
                if exec_ is not None:
                    ok(cu.cuGraphLaunch(exec_, s), "cuGraphLaunch")
                else:
                    for _ in range(reps):
                        launch(op, ns, nr)
                ok(cu.cuEventRecord(ev_b, s), "cuEventRecord")
                if flag_dev is not None:
                    barrier.wait()  # every rank has its batch queued behind the flag
                    if rank == 0:
                        flag.value = gate_value
                ok(cu.cuEventSynchronize(ev_b), "cuEventSynchronize")
                ms = ctypes.c_float()
                ok(elapsed(ctypes.byref(ms), ev_a, ev_b), "cuEventElapsedTime")
                times.append(ms.value / 1e3 / reps)
            if exec_ is not None:
                cu.cuGraphExecDestroy(exec_)
                cu.cuGraphDestroy(g)
            points.append((op, nbytes, statistics.median(times), verified))
    nccl.ncclCommDestroy(comm)
    results.put((rank, points))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--graph", action="store_true")
    mode.add_argument("--gate", action="store_true")
    ap.add_argument("--gpus", type=int, default=0, help="ranks (default: every visible GPU)")
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=1 << 30)
    ap.add_argument("--nccl", default="libnccl.so.2")
    a = ap.parse_args()
    cu = Cuda()
    cnt = ctypes.c_int()
    ok(cu.cuDeviceGetCount(ctypes.byref(cnt)), "cuDeviceGetCount")
    n = a.gpus or cnt.value
    nccl = ctypes.CDLL(a.nccl)
    v = ctypes.c_int()
    ok(nccl.ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
    uid = UniqueId()
    ok(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    sizes, s = [], a.min_bytes
    while s <= a.max_bytes:
        sizes.append(s)
        s *= 2
    ctx = mp.get_context("spawn")
    shm = None
    if a.gate:
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(create=True, size=4096)
        shm.buf[:4] = bytes(4)
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, n, bytes(uid), a.nccl, sizes, a.graph,
                                                  shm.name if shm else None, barrier, results))
             for r in range(n)]
    for p in procs:
        p.start()
    per_rank = dict(results.get() for _ in procs)
    for p in procs:
        p.join()
    if shm:
        shm.close()
        shm.unlink()
    points = []
    for i, (op, nbytes, _, _) in enumerate(per_rank[0]):
        t = max(per_rank[r][i][2] for r in range(n))
        algbw = nbytes / t / 1e9
        points.append({"op": op, "bytes": nbytes, "time_us": t * 1e6, "algbw_gb_per_s": algbw,
                       "busbw_gb_per_s": algbw * busbw_factor(op, n),
                       "verified": all(per_rank[r][i][3] for r in range(n)), "graph": a.graph,
                       "gate": a.gate})
    vv = v.value
    res = {
        "tool": "probe/bench/nccl_ctypes_reference.py",
        "torch": "none (ctypes on libnccl)",
        "nccl_version": f"{vv // 10000}.{vv // 100 % 100}.{vv % 100}",
        "nccl_library": a.nccl,
        "world_size": n,
        "env": {k: x for k, x in os.environ.items() if k.startswith("NCCL_") and k != "NCCL_VERSION"},
        "timing": ("CUDA-graph replay of each batch; " if a.graph else
                   "eager batch behind a shared gate; " if a.gate else "eager launches; ")
        + "one process per GPU; CUDA events per rank after a host barrier; median; slowest rank",
        "warmup": WARMUP,
        "samples": SAMPLES,
        "points": points,
    }
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, a.out)
    print(f"wrote {a.out}", flush=True)


if __name__ == "__main__":
    main()
