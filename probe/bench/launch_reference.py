"""Reference for probe's launch floors (`probe run --only launch`), one GPU, same chain length
and repeats as the probe profile given.

Usage: python3 launch_reference.py [PROBE_PROFILE.json] [--out ref.json] [--chain N]
                                   [--warmup W] [--samples S]

Empty kernel: CuPy RawKernel (NVRTC, 1 block of 1 thread, as the probe's), N launches captured
into a CUDA graph by stream capture, uploaded, one replay per sample between CUDA events: GPU µs
per node = interval / N. Eager: the same N launches from this (Python) thread, the host clock
around the loop / N, and CUDA events around it for the chain's GPU time per kernel.
PyTorch, for a second opinion: torch.cuda._sleep(0) (a kernel that spins zero cycles) the same
two ways, and the tiny GEMM, torch.mm of one bf16 row against a 256 x 256 weight (cuBLAS), the
same two ways (torch.cuda.graph capture). Python's own cost is in every eager host figure here
(the probe launches from Rust through the driver API), so only the graph figures compare 1:1.
Prints a side-by-side table when a probe profile is given; median (p10-p90) of the samples.
"""
import argparse
import json
import statistics
import time

import cupy as cp
import torch

WARM_UP_S = 0.05  # as the probe: untimed runs for at least 50 ms, so the GPU clocks up


def warm(run, sync, warmup):
    t0, k = time.perf_counter(), 0
    while k < max(warmup, 1) or time.perf_counter() - t0 < WARM_UP_S:
        run()
        sync()
        k += 1


def stat(v):
    v = sorted(v)
    q = statistics.quantiles(v, n=10, method="inclusive") if len(v) > 1 else [v[0]] * 9
    return {"median": statistics.median(v), "p10": q[0], "p90": q[8], "samples": len(v)}


def cupy_pair(launch, n, warmup, samples):
    """(graph µs per node, eager host µs per launch, eager GPU µs per kernel) for `launch`,
    which launches on the current stream (`s` below)."""
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        return _cupy_pair(s, launch, n, warmup, samples)


def _cupy_pair(s, launch, n, warmup, samples):
    s.begin_capture()
    for _ in range(n):
        launch()
    g = s.end_capture()
    g.upload(s)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    warm(lambda: g.launch(s), s.synchronize, warmup)
    graph = []
    for _ in range(samples):
        start.record(s)
        g.launch(s)
        end.record(s)
        end.synchronize()
        graph.append(cp.cuda.get_elapsed_time(start, end) * 1e3 / n)
    warm(lambda: [launch() for _ in range(n)], s.synchronize, warmup)
    host, dev = [], []
    for _ in range(samples):
        start.record(s)
        t0 = time.perf_counter()
        for _ in range(n):
            launch()
        host.append((time.perf_counter() - t0) * 1e6 / n)
        end.record(s)
        end.synchronize()
        dev.append(cp.cuda.get_elapsed_time(start, end) * 1e3 / n)
    return stat(graph), stat(host), stat(dev)


def torch_pair(op, n, warmup, samples):
    """The same three figures for a PyTorch op, captured with torch.cuda.graph."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            op()  # cuBLAS picks and loads its kernel before the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(n):
            op()
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    graph, host, dev = [], [], []
    with torch.cuda.stream(s):
        warm(g.replay, s.synchronize, warmup)
        for _ in range(samples):
            a, b = ev(), ev()
            a.record(s)
            g.replay()
            b.record(s)
            b.synchronize()
            graph.append(a.elapsed_time(b) * 1e3 / n)
        warm(lambda: [op() for _ in range(n)], s.synchronize, warmup)
        for _ in range(samples):
            a, b = ev(), ev()
            a.record(s)
            t0 = time.perf_counter()
            for _ in range(n):
                op()
            host.append((time.perf_counter() - t0) * 1e6 / n)
            b.record(s)
            b.synchronize()
            dev.append(a.elapsed_time(b) * 1e3 / n)
    return stat(graph), stat(host), stat(dev)


def probe_figures(profile):
    """{(kernel, kind): (per_kernel_us median, gpu_per_kernel_us median)} of GPU 0's launch."""
    out = {}
    for m in profile.get("launch", []):
        if m["device"] != profile["launch"][0]["device"]:
            continue
        gpu = m.get("gpu_per_kernel_us")
        out[(m["kernel"], m["kind"])] = (m["per_kernel_us"]["median"], gpu and gpu["median"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile", nargs="?")
    ap.add_argument("--out")
    ap.add_argument("--chain", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--samples", type=int)
    args = ap.parse_args()
    profile = json.load(open(args.profile)) if args.profile else {}
    first = (profile.get("launch") or [{}])[0]
    n = args.chain or first.get("chain_length", 512)
    samples = args.samples or first.get("per_kernel_us", {}).get("samples", 15)
    warmup = args.warmup or (3 if samples >= 15 else 2)

    k = cp.RawKernel(r'extern "C" __global__ void probe_empty() {}', "probe_empty")
    k.compile()
    res = {
        "device": torch.cuda.get_device_name(0),
        "cupy": cp.__version__,
        "torch": torch.__version__,
        "chain_length": n,
        "warmup": warmup,
        "samples": samples,
    }
    names = ("graph_node_us", "eager_host_us_per_launch", "eager_gpu_us_per_kernel")
    for key, figs in [
        ("cupy_empty", cupy_pair(lambda: k((1,), (1,), ()), n, warmup, samples)),
        ("torch_sleep0", torch_pair(lambda: torch.cuda._sleep(0), n, warmup, samples)),
    ]:
        res[key] = dict(zip(names, figs))
    x = torch.randn(1, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    o = torch.empty(1, 256, device="cuda", dtype=torch.bfloat16)
    res["torch_mm_1x256x256_bf16"] = dict(
        zip(names, torch_pair(lambda: torch.mm(x, w.t(), out=o), n, warmup, samples))
    )
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2)
    print(json.dumps(res))

    if profile:
        p = probe_figures(profile)
        rows = [
            ("empty, graph µs/node", ("empty", "graph-node"), 0, "cupy_empty", names[0]),
            ("empty, graph µs/node", ("empty", "graph-node"), 0, "torch_sleep0", names[0]),
            ("empty, eager host µs/launch", ("empty", "eager-launch"), 0, "cupy_empty", names[1]),
            ("empty, eager GPU µs/kernel", ("empty", "eager-launch"), 1, "cupy_empty", names[2]),
            ("tiny GEMM, graph µs/node", ("tiny-gemm", "graph-node"), 0, "torch_mm_1x256x256_bf16", names[0]),
            ("tiny GEMM, eager host µs/launch", ("tiny-gemm", "eager-launch"), 0, "torch_mm_1x256x256_bf16", names[1]),
            ("tiny GEMM, eager GPU µs/kernel", ("tiny-gemm", "eager-launch"), 1, "torch_mm_1x256x256_bf16", names[2]),
        ]
        print(f"{'figure':34} {'probe':>8} {'reference':>10} {'probe/ref':>9}  reference")
        for label, key, i, ref, fig in rows:
            if key not in p or p[key][i] is None:
                continue
            a, b = p[key][i], res[ref][fig]["median"]
            print(f"{label:34} {a:8.3f} {b:10.3f} {a / b:9.3f}  {ref}")


if __name__ == "__main__":
    main()
