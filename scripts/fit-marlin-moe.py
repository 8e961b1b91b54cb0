#!/usr/bin/env python3
"""Fit the constants of sim/src/cost/marlin_moe.rs (vLLM's Marlin W4A16 MoE at decode sizes) on the
carried Marlin rows, and print every row's error.

Usage: scripts/fit-marlin-moe.py [--t0 US] [-v]

Form: t = t0 + touched * bytes_per_expert / bw + pairs * (c0 + c1 * slice), relative least squares.
Rows: data/observations/moe-vllm-0.24-rtx-pro-6000.csv (Marlin, Kimi-K2's shape, TP 1/2/4/8,
balanced routing: touched = min(384, 8 T)) and data/observations/moe-vllm-0.24-rtx-pro-6000-routing.csv
(TP8, the two power-law routings at their own touched counts), 8-512 tokens, touched weights at least
twice the 128 MB L2 (the collector repeats one call; smaller rows were partly read from L2).
t0 is held at --t0 (default 26 us: the TP8 one-token row's whole 32 us less its 25 MB of weights
read from L2), the rest fitted.
"""
import csv
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "observations"
HIDDEN, INTER, EXPERTS, TOPK = 7168, 2048, 384, 8
BYTES_PER_VALUE = 0.5 + 2 / 32  # INT4 with a bf16 scale per 32 values
L2_BYTES = 128 * 2**20


def solve(a, b):
    """Solve the normal equations of the least-squares problem a x = b."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * y for r, y in zip(a, b))]
         for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        piv = m[i][i]
        m[i] = [v / piv for v in m[i]]
        for k in range(n):
            if k != i:
                f = m[k][i]
                m[k] = [vk - f * vi for vk, vi in zip(m[k], m[i])]
    return [m[i][n] for i in range(n)]


def rows():
    out = []
    with open(DATA / "moe-vllm-0.24-rtx-pro-6000.csv") as f:
        for r in csv.DictReader(f):
            if r["backend"] != "marlin":
                continue
            tokens = float(r["num_tokens"])
            out.append(("balanced", int(r["tp"]), tokens, min(EXPERTS, tokens * TOPK), float(r["time_us"])))
    with open(DATA / "moe-vllm-0.24-rtx-pro-6000-routing.csv") as f:
        for r in csv.DictReader(f):
            if r["distribution"] != "balanced":
                out.append((r["distribution"], 8, float(r["num_tokens"]), float(r["touched"]), float(r["time_us"])))
    kept = []
    for dist, tp, tokens, touched, us in out:
        slice_elements = HIDDEN * INTER / tp
        bytes_per_expert = 3 * slice_elements * BYTES_PER_VALUE
        if 8 <= tokens <= 512 and touched * bytes_per_expert >= 2 * L2_BYTES:
            kept.append((dist, tp, tokens, touched, tokens * TOPK, slice_elements, bytes_per_expert, us))
    return kept


def main():
    t0 = float(sys.argv[sys.argv.index("--t0") + 1]) if "--t0" in sys.argv else 26.0
    pts = rows()
    # columns: touched MB, pairs, pairs * M elements; each row divided by its time (relative)
    x = [[r[3] * r[6] / 1e6 / r[7], r[4] / r[7], r[4] * r[5] / 1e6 / r[7]] for r in pts]
    y = [(r[7] - t0) / r[7] for r in pts]
    us_per_mb, c0, c1 = solve(x, y)
    print(f"t0 {t0:.1f} us, stream {1e3 / us_per_mb:.0f} GB/s, per row {c0:.4f} us + {c1:.5f} us per M elements")
    errs = []
    for r in pts:
        model = t0 + r[3] * r[6] / 1e6 * us_per_mb + r[4] * (c0 + c1 * r[5] / 1e6)
        e = model / r[7] - 1
        errs.append(abs(e))
        if "-v" in sys.argv:
            print(f"{r[0]:>15} TP{r[1]} {r[2]:>4.0f} tokens {r[3]:>5.1f} touched: {model:7.1f} vs {r[7]:7.1f} us ({e:+.1%})")
    errs.sort()
    print(f"{len(errs)} rows, median |error| {errs[len(errs) // 2]:.1%}, worst {errs[-1]:.1%}")


if __name__ == "__main__":
    main()
