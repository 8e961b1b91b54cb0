#!/usr/bin/env python3
"""Distil vLLM 0.24.0's fused-MoE table of NVIDIA aiconfigurator-core 0.12.0 (RTX PRO 6000
Blackwell Server Edition) into data/observations/moe-vllm-0.24-rtx-pro-6000.csv.

Usage: scripts/distill-vllm-moe.py AIC_DIR > data/observations/moe-vllm-0.24-rtx-pro-6000.csv
Kept: balanced routing, tensor-parallel shards (moe_ep_size 1) of the Kimi-K2 shape (hidden 7168,
moe_inter 2048, 384 experts, top-8) in Marlin W4A16 INT4 (`int4_wo`, compressed-tensors: Kimi's
native INT4) and FlashInfer CUTLASS NVFP4, at tp 1, 2, 4, 8. Latency converted from ms to us.
"""
import csv
import sys
from pathlib import Path

BACKENDS = {
    "vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts": ("marlin", "int4"),
    "vllm_compressedtensorsw4a4nvfp4moe_flashinfer_cutlass_flashinferexperts": ("cutlass", "nvfp4"),
}

w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["backend", "dtype", "hidden", "inter", "experts", "topk", "tp", "num_tokens", "time_us"])
for r in csv.DictReader(open(Path(sys.argv[1]) / "vllm-0.24.0-moe.csv")):
    if r["kernel_source"] not in BACKENDS or r["distribution"] != "balanced":
        continue
    if (r["hidden_size"], r["inter_size"], r["num_experts"], r["topk"]) != ("7168", "2048", "384", "8"):
        continue
    if r["moe_ep_size"] != "1" or r["moe_tp_size"] not in {"1", "2", "4", "8"}:
        continue
    b, d = BACKENDS[r["kernel_source"]]
    w.writerow([b, d, r["hidden_size"], r["inter_size"], r["num_experts"], r["topk"],
                r["moe_tp_size"], r["num_tokens"], round(float(r["latency"]) * 1000.0, 3)])
