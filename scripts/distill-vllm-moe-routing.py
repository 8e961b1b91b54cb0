#!/usr/bin/env python3
"""Distil the routing-skew rows of vLLM 0.24.0's fused-MoE table of NVIDIA aiconfigurator-core 0.12.0
(RTX PRO 6000 Blackwell Server Edition) into data/observations/moe-vllm-0.24-rtx-pro-6000-routing.csv.

Usage: scripts/distill-vllm-moe-routing.py AIC_DIR > data/observations/moe-vllm-0.24-rtx-pro-6000-routing.csv
Kept: Marlin W4A16 INT4 (`int4_wo`) at Kimi-K2's shape (hidden 7168, moe_inter 2048, 384 experts,
top-8), tensor-parallel shard 8 (moe_ep_size 1), 8 … 512 tokens (a decode or verify step's
batches), for each routing the collector measured: `balanced`, `power_law_1.01`, `power_law_1.2`.
Latency converted from ms to us.

`touched` is how many distinct experts the collector's routing hands the kernel at that token
count (what the time is spent on): `balanced_logits` gives token t the experts
(t·⌈E/k⌉/T + i·⌈E/k⌉) mod E, i.e. min(E, T·k) distinct ones; `power_law_logits_v3`
(`collector/helper.py::_generate_power_law_distribution` of ai-dynamo/aiconfigurator at
d5bad971c, "upgrade the vLLM collector to 0.24.0", which made these rows) draws each expert's
load from a power law on [1, 0.8·T] (on [0.01, 2] when T·k ≤ E), scales the loads to T·k,
rounds them, caps each at T, and hands the overflow and any shortfall one at a time to the
least-loaded expert (an excess comes off the most-loaded): an expert left at 0 is untouched.
The mean over 400 seeded draws of that procedure is given.
"""
import csv
import random
import sys
from pathlib import Path

SOURCE = "vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts"
E, K = 384, 8


def power_law_touched(tokens, alpha, rng):
    lo, hi = (1.0, tokens * 0.8) if tokens * K > E else (0.01, 2.0)
    a, b = lo ** (1 - alpha), hi ** (1 - alpha)
    loads = [((b - a) * rng.random() + a) ** (1 / (1 - alpha)) for _ in range(E)]
    total, target = sum(loads), tokens * K
    counts = [round(x / total * target) for x in loads]
    # no expert above T (a token picks an expert once); the overflow, and any shortfall of the
    # sum, go one at a time to the least-loaded expert still under T; an excess comes off the
    # most-loaded (one EP rank: `_round_robin_adjust_per_rank` with ep = 1)
    overflow = sum(max(0, c - tokens) for c in counts)
    counts = [min(c, tokens) for c in counts]
    extra = target - sum(counts)
    while extra > 0:
        j = min((i for i in range(E) if counts[i] < tokens), key=lambda i: counts[i])
        counts[j] += 1
        extra -= 1
    while extra < 0:
        j = max(range(E), key=lambda i: counts[i])
        counts[j] -= 1
        extra += 1
    return sum(1 for c in counts if c > 0)


def touched(distribution, tokens):
    if distribution == "balanced":
        return min(E, tokens * K)
    alpha = float(distribution.split("_")[-1])
    rng = random.Random(tokens * 1000 + int(alpha * 100))
    draws = [power_law_touched(tokens, alpha, rng) for _ in range(400)]
    return round(sum(draws) / len(draws), 1)


w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["backend", "dtype", "tp", "distribution", "num_tokens", "touched", "time_us"])
for r in csv.DictReader(open(Path(sys.argv[1]) / "vllm-0.24.0-moe.csv")):
    if r["kernel_source"] != SOURCE or r["moe_ep_size"] != "1" or r["moe_tp_size"] != "8":
        continue
    if (r["hidden_size"], r["inter_size"], r["num_experts"], r["topk"]) != ("7168", "2048", "384", "8"):
        continue
    t = int(r["num_tokens"])
    if not 8 <= t <= 512:
        continue
    w.writerow(["marlin", "int4", 8, r["distribution"], t, touched(r["distribution"], t),
                round(float(r["latency"]) * 1000.0, 3)])
