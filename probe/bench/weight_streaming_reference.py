"""How a weight-streaming kernel's time grows with the bytes it reads at decode sizes: is it
`fixed + bytes / bandwidth` (the kernel tables' line) or `max(fixed, bytes / bandwidth)`?

Times torch GEMMs of a few rows (M = 1, 4, 8 tokens) against bf16 weight matrices of 1 MB … 1 GB
(N = K), one kernel per call, replayed 50× inside a CUDA graph so launch overhead is out; and a
chain of 3 GEMMs per call (a fused MoE's gate/up, activation-free down, as a stand-in for a
call of several kernels). L2 is flushed between replays by streaming a 512 MB buffer inside the
graph (its time subtracted). Writes JSON: per (kind, M, bytes) the median µs per call, then the
least-squares line over the sizes ≥ 64 MB and the predicted vs measured time below it under both
forms.

Usage: python3 weight_streaming_reference.py OUT.json
"""
import json
import statistics
import sys

import torch


def timed(fn, reps=50, trials=5):
    """Median µs per call of fn replayed `reps` times in one CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    out = []
    for _ in range(trials):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / reps)
    return statistics.median(out)


def main():
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.bfloat16, device=dev)  # 512 MB

    def flush_l2():
        flush.add_(1.0)

    flush_us = timed(flush_l2, reps=10)
    rows = []
    sizes_mb = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    for chain in (1, 3):
        for m in (1, 4, 8):
            for mb in sizes_mb:
                per = mb * (1 << 20) // chain
                n = int((per / 2) ** 0.5) // 64 * 64
                if n < 64:
                    continue
                ws = [torch.randn(n, n, dtype=torch.bfloat16, device=dev) for _ in range(chain)]
                x = torch.randn(m, n, dtype=torch.bfloat16, device=dev)

                def call():
                    flush_l2()
                    y = x
                    for w in ws:
                        y = y @ w
                    return y

                us = timed(call, reps=20) - flush_us
                rows.append(
                    {
                        "kernels_per_call": chain,
                        "m": m,
                        "n_eq_k": n,
                        "bytes": chain * n * n * 2,
                        "time_us": round(us, 3),
                    }
                )
                del ws
    fits = []
    for chain in (1, 3):
        for m in (1, 4, 8):
            pts = [r for r in rows if r["kernels_per_call"] == chain and r["m"] == m]
            big = [r for r in pts if r["bytes"] >= 64 << 20]
            xs = [r["bytes"] for r in big]
            ys = [r["time_us"] for r in big]
            mx, my = statistics.mean(xs), statistics.mean(ys)
            sxx = sum((x - mx) ** 2 for x in xs)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
            fixed = my - slope * mx
            small = []
            for r in pts:
                if r["bytes"] >= 64 << 20:
                    continue
                stream = r["bytes"] * slope
                small.append(
                    {
                        "bytes": r["bytes"],
                        "measured_us": r["time_us"],
                        "additive_us": round(fixed + stream, 3),
                        "max_us": round(max(fixed, stream), 3),
                    }
                )
            fits.append(
                {
                    "kernels_per_call": chain,
                    "m": m,
                    "line_fixed_us": round(fixed, 3),
                    "line_gb_per_s": round(1e-3 / slope, 1),
                    "below_64mb": small,
                }
            )
    out = {
        "about": __doc__.strip().splitlines()[0],
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "l2_flush_us": round(flush_us, 3),
        "rows": rows,
        "fits": fits,
    }
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)
    for fit in fits:
        print(
            f"chain {fit['kernels_per_call']} m={fit['m']}: fixed {fit['line_fixed_us']} us, "
            f"{fit['line_gb_per_s']} GB/s"
        )
        for s in fit["below_64mb"]:
            print(
                f"   {s['bytes'] >> 20:5d} MB measured {s['measured_us']:8.2f} "
                f"additive {s['additive_us']:8.2f} max {s['max_us']:8.2f}"
            )


if __name__ == "__main__":
    main()
