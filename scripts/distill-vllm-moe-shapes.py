#!/usr/bin/env python3
"""Distil vLLM 0.24.0's fused-MoE table of NVIDIA aiconfigurator-core 0.12.0 (RTX PRO 6000
Blackwell Server Edition) into data/observations/moe-vllm-0.24-rtx-pro-6000-shapes.csv, and fit
the per-layer decode line `time = t0 + touched * (bytes_per_expert / (eta * 1792 GB/s)
+ c * hidden / 1024)` that sim/src/cost/moe_bound.rs takes its constants from.

Usage: scripts/distill-vllm-moe-shapes.py AIC_DIR > data/observations/moe-vllm-0.24-rtx-pro-6000-shapes.csv
       scripts/distill-vllm-moe-shapes.py --fit data/observations/moe-vllm-0.24-rtx-pro-6000-shapes.csv
Kept: balanced routing, tensor-parallel shards (moe_ep_size 1), every model shape the table has,
FlashInfer CUTLASS NVFP4 / FP8 / BF16 and Marlin W4A16 INT4, rows at decode shapes: at most 2
tokens per touched expert (touched = min(experts, tokens * topk), as the collector's balanced
routing spreads them). Latency converted from ms to us.
Fit (--fit): per dtype, on the rows of the fitted shapes whose touched weights are at least the
128 MiB L2 (the collector repeats one call: smaller layers are read from L2), minimising the sum
of |ln(line / measured)| on a grid; held back by shape (never fitted): every hidden-4096 shape
for the CUTLASS dtypes (Qwen3.5-397B's 4096 x 1024 x 512 among them), TP 4 and 16 for Marlin
(the table has one Marlin shape). Prints the constants, the median |error| on fitted and held-back
rows, and the largest measured / line ratio (the bound's margin).
"""
import csv
import math
import statistics
import sys
from pathlib import Path

BACKENDS = {
    "vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts": ("marlin", "int4"),
    "vllm_compressedtensorsw4a4nvfp4moe_flashinfer_cutlass_flashinferexperts": ("cutlass", "nvfp4"),
    "vllm_modeloptfp8moe_flashinfer_cutlass_flashinferexperts": ("cutlass", "fp8"),
    "vllm_unquantizedfusedmoe_flashinfer_cutlass_flashinferexperts": ("cutlass", "bf16"),
}
# bytes per weight value with its block scales (NVFP4: fp8 per 16; INT4 g32: bf16 per 32;
# FP8 per-tensor / per-channel scales are negligible)
BYTES_PER_VALUE = {"nvfp4": 0.5 + 1 / 16, "int4": 0.5 + 2 / 32, "fp8": 1.0, "bf16": 2.0}
PEAK_BYTE_S = 1792e9
L2_BYTES = 128 * 2**20
HEADER = ["backend", "dtype", "hidden", "inter", "experts", "topk", "tp", "num_tokens", "time_us"]


def distill(aic_dir):
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(HEADER)
    for r in csv.DictReader(open(Path(aic_dir) / "vllm-0.24.0-moe.csv")):
        if r["kernel_source"] not in BACKENDS or r["distribution"] != "balanced":
            continue
        if r["moe_ep_size"] != "1":
            continue
        t, k, e = int(r["num_tokens"]), int(r["topk"]), int(r["num_experts"])
        if t * k > 2 * min(e, t * k):
            continue
        b, d = BACKENDS[r["kernel_source"]]
        w.writerow([b, d, r["hidden_size"], r["inter_size"], e, k, r["moe_tp_size"], t,
                    round(float(r["latency"]) * 1000.0, 3)])


def held_back(x):
    return x["tp"] in (4, 16) if x["dtype"] == "int4" else x["hidden"] == 4096


def line(x, t0, eta, c):
    return t0 + x["touched"] * (x["bytes"] / (eta * PEAK_BYTE_S) * 1e6 + c * x["hidden"] / 1024)


def fit(path):
    rows = []
    for r in csv.DictReader(open(path)):
        x = {k: float(r[k]) for k in HEADER[2:]}
        x["dtype"] = r["dtype"]
        x["touched"] = min(x["experts"], x["num_tokens"] * x["topk"])
        x["bytes"] = 3 * x["hidden"] * x["inter"] / x["tp"] * BYTES_PER_VALUE[r["dtype"]]
        rows.append(x)
    for d in ["nvfp4", "int4", "fp8", "bf16"]:
        mine = [x for x in rows if x["dtype"] == d]
        fitted = [x for x in mine if not held_back(x)]
        held = [x for x in mine if held_back(x)]
        cold = [x for x in fitted if x["touched"] * x["bytes"] >= L2_BYTES]
        grid = [(t0, 0.6 + 0.01 * j, 0.01 * i) for t0 in range(0, 101, 5)
                for j in range(41) for i in range(31)]
        p = min(grid, key=lambda p: sum(abs(math.log(line(x, *p) / x["time_us"])) for x in cold))
        err = lambda s: statistics.median(abs(line(x, *p) / x["time_us"] - 1) for x in s)
        worst = lambda s: max(x["time_us"] / line(x, *p) for x in s
                              if x["touched"] * x["bytes"] >= L2_BYTES)
        # the per-expert cost each shape alone asks for (t0 and eta held): its spread bounds c
        shapes = {}
        for x in mine:
            if x["touched"] * x["bytes"] >= L2_BYTES:
                per = (x["time_us"] - p[0]) / x["touched"] - x["bytes"] / (p[1] * PEAK_BYTE_S) * 1e6
                shapes.setdefault((x["hidden"], x["inter"], x["experts"], x["tp"]), []).append(
                    per / (x["hidden"] / 1024))
        cs = sorted(statistics.median(v) for v in shapes.values())
        print(f"{d}: per-shape c (us per 1024 hidden) over {len(cs)} shapes: min {cs[0]:.2f}, "
              f"quartiles {cs[len(cs) // 4]:.2f} / {cs[len(cs) // 2]:.2f} / {cs[3 * len(cs) // 4]:.2f}, "
              f"max {cs[-1]:.2f}")
        print(f"{d}: t0 {p[0]} us, eta {p[1]:.2f}, c {p[2]:.2f} us per 1024 hidden; "
              f"median |error| fitted {100 * err(fitted):.1f}% (n {len(fitted)}), "
              f"held back {100 * err(held):.1f}% (n {len(held)}); largest measured / line on "
              f"cold rows: fitted {worst(fitted):.2f}, held back {worst(held):.2f}")


if __name__ == "__main__":
    if sys.argv[1] == "--fit":
        fit(sys.argv[2])
    else:
        distill(sys.argv[1])
