"""torch.distributed reference for probe's NCCL collectives (one process per GPU, NCCL backend).

Usage:
    torchrun --standalone --nproc_per_node=N torch_dist_reference.py --out ref.json
             [--min-bytes 8] [--max-bytes 1073741824] [--graph]

Measures all_reduce, all_gather (all_gather_into_tensor), reduce_scatter (reduce_scatter_tensor),
all_to_all (all_to_all_single) and send_recv (batch_isend_irecv to the next rank, from the previous,
as nccl-tests' sendrecv; busbw factor 1) in float32 over the sizes `probe run` uses in a full run
(8 B ... 1 GiB by x2), with probe's repeats: 3 warm-up runs, 15 samples, small sizes batched so
one sample moves at least 64 MiB (at most 50 ops). Each sample is timed with CUDA events on every
rank after a barrier; a rank's figure is the median of its samples and the reported time is the
slowest rank's (a collective ends when its last rank does).

Sizes follow nccl-tests, as probe does (probe/src/nccl/mod.rs `counts`): all_reduce moves `size`
bytes per rank; all_gather's `size` is the gathered output (each rank sends size/n);
reduce_scatter's `size` is each rank's input (each rank receives size/n); all_to_all's `size` is
each rank's whole send buffer. algbw = size / time, busbw = algbw x factor (all_reduce 2(n-1)/n,
the others (n-1)/n). GB = 1e9 bytes. Every size's result is checked once before timing.

--graph captures each sample's batch of ops into a CUDA graph and times its replay (as
nccl-tests' -G and an SGLang decode step run them): GPU time without the per-op launch cost
of eager mode, the reference for probe's gated timing. A size whose capture fails falls back
to eager and is marked `"graph": false`.
"""
import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist

ELEM = 4  # float32 bytes
WARMUP, SAMPLES = 3, 15
MIN_BYTES_PER_SAMPLE, MAX_REPS = 64 << 20, 50
OPS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"]


def busbw_factor(op, n):
    if op == "send_recv":
        return 1.0
    return 2.0 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def counts(op, size, n):
    """(send elements, recv elements, nccl-tests size in bytes), as probe's `counts`."""
    elems = max(size // ELEM, 1)
    if op in ("all_reduce", "send_recv"):
        return elems, elems, elems * ELEM
    c = max(elems // n, 1)
    if op == "all_gather":
        return c, c * n, c * n * ELEM
    if op == "reduce_scatter":
        return c * n, c, c * n * ELEM
    return c * n, c * n, c * n * ELEM  # all_to_all


def launcher(op, send, recv):
    if op == "send_recv":
        # nccl-tests' sendrecv: every rank sends to the next and receives from the previous.
        rank, n = dist.get_rank(), dist.get_world_size()
        ops = lambda: [dist.P2POp(dist.isend, send, (rank + 1) % n),  # noqa: E731
                       dist.P2POp(dist.irecv, recv, (rank - 1) % n)]
        return lambda: [w.wait() for w in dist.batch_isend_irecv(ops())]
    if op == "all_reduce":
        return lambda: dist.all_reduce(send)
    if op == "all_gather":
        return lambda: dist.all_gather_into_tensor(recv, send)
    if op == "reduce_scatter":
        return lambda: dist.reduce_scatter_tensor(recv, send)
    return lambda: dist.all_to_all_single(recv, send)


def check(op, send, recv, rank, n):
    """One run on known data; True when every rank got the exact expected values."""
    # Rank r sends (r + 1) everywhere, except all_to_all, whose chunk for peer p holds
    # 100 * r + p, so a chunk landing at the wrong place or from the wrong rank shows.
    if op == "all_to_all":
        c = send.numel() // n
        for p in range(n):
            send[p * c:(p + 1) * c].fill_(100 * rank + p)
    else:
        send.fill_(rank + 1)
    recv.fill_(float("nan"))
    launcher(op, send, recv)()
    torch.cuda.synchronize()
    if op == "all_reduce":
        ok = bool(torch.all(send == n * (n + 1) / 2))
    elif op == "send_recv":
        ok = bool(torch.all(recv == (rank - 1) % n + 1))
    elif op == "all_gather":
        c = send.numel()
        ok = all(bool(torch.all(recv[r * c:(r + 1) * c] == r + 1)) for r in range(n))
    elif op == "reduce_scatter":
        ok = bool(torch.all(recv == n * (n + 1) / 2))
    else:
        c = recv.numel() // n
        ok = all(bool(torch.all(recv[q * c:(q + 1) * c] == 100 * q + rank)) for q in range(n))
    send.zero_()  # timing runs on zeros: repeated in-place sums must not overflow to inf
    return ok


def capture(fn, reps):
    """A CUDA graph of `reps` back-to-back runs of `fn`, or None when capture fails."""
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                fn()
        torch.cuda.synchronize()
        return g
    except Exception as e:  # capture unsupported for this op/size: time eagerly instead
        print(f"graph capture failed ({e}); timing eagerly", flush=True)
        torch.cuda.synchronize()
        return None


def time_op(fn, reps, graph):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    g = capture(fn, reps) if graph else None
    # Every rank must take the same path, or the ranks' collectives would not match up.
    flag = torch.tensor([1.0 if g is not None else 0.0], device="cuda")
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    if flag.item() < 1.0:
        g = None
    if g is not None:
        g.replay()
        torch.cuda.synchronize()
    out = []
    for _ in range(SAMPLES):
        dist.barrier()
        torch.cuda.synchronize()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        if g is not None:
            g.replay()
        else:
            for _ in range(reps):
                fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / reps)
    return out, g is not None


def nccl_version():
    v = torch.cuda.nccl.version()
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=1 << 30)
    ap.add_argument("--graph", action="store_true",
                    help="time CUDA-graph replays of each batch instead of eager launches")
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, n = dist.get_rank(), dist.get_world_size()
    sizes = []
    s = args.min_bytes
    while s <= args.max_bytes:
        sizes.append(s)
        s *= 2
    big = max(max(counts(op, sizes[-1], n)[:2]) for op in OPS)
    send_all = torch.empty(big, dtype=torch.float32, device=dev)
    recv_all = torch.empty(big, dtype=torch.float32, device=dev)
    points = []
    for op in OPS:
        for size in sizes:
            ns, nr, nbytes = counts(op, size, n)
            send, recv = send_all[:ns], recv_all[:nr]
            ok = check(op, send, recv, rank, n)
            reps = min(max(-(-MIN_BYTES_PER_SAMPLE // nbytes), 1), MAX_REPS)
            samples, graphed = time_op(launcher(op, send, recv), reps, args.graph)
            med = statistics.median(samples)
            t = torch.tensor([med, 0.0 if ok else 1.0], device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            t_s, bad = t[0].item(), t[1].item()
            algbw = nbytes / t_s / 1e9
            points.append({
                "op": op,
                "bytes": nbytes,
                "time_us": t_s * 1e6,
                "algbw_gb_per_s": algbw,
                "busbw_gb_per_s": algbw * busbw_factor(op, n),
                "verified": bad == 0.0,
                "graph": graphed,
            })
        if rank == 0:
            print(f"{op}: {len(sizes)} sizes done", flush=True)
    if rank == 0:
        res = {
            "tool": "probe/bench/torch_dist_reference.py",
            "torch": torch.__version__,
            "nccl_version": nccl_version(),
            "world_size": n,
            "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
            "env": {k: v for k, v in os.environ.items()
                    if k.startswith("NCCL_") and k != "NCCL_VERSION"},
            "timing": ("CUDA-graph replay of each batch; " if args.graph else "eager launches; ")
            + "CUDA events per rank after a barrier; median of samples; slowest rank",
            "warmup": WARMUP,
            "samples": SAMPLES,
            "points": points,
        }
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, args.out)
        print(f"wrote {args.out}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
