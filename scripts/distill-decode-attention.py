#!/usr/bin/env python3
"""Distil the decode-attention tables of NVIDIA aiconfigurator-core 0.12.0 (RTX PRO 6000 Blackwell
Server Edition, SM120) into data/observations/decode-attention-rtx-pro-6000.csv.

Usage: scripts/distill-decode-attention.py AIC_DIR > data/observations/decode-attention-rtx-pro-6000.csv
where AIC_DIR is the converted folder (shared/observations/aic-0.12.0-rtx-pro-6000/, whose README
says where each table comes from). What is kept and why is in data/observations/README.md:
- GQA decode (`*-generation_attention.csv`), full attention only (window_size 0), head_dim 128
  and 256, batch <= 256, <= 32 query and <= 4 KV heads a GPU, rows by (engine, backend, kv dtype, q heads, kv heads, head_dim):
  SGLang 0.5.14 `flashinfer` and `triton`, vLLM 0.24.0 `vllm_flash_attn_fa2` (bf16 KV) and
  `vllm_flashinfer_fidecode` (fp8 KV);
- MLA decode, vLLM 0.24.0 TRITON_MLA (`vllm-0.24.0-mla_generation_module.csv`, DeepSeek-V3
  shapes, bf16 GEMMs): the module's time minus its own time at 2 cached tokens for the same
  batch, i.e. the part that grows with the cache (the projections and the kernel's launch are
  priced elsewhere), as `time_us` with backend `triton_mla_ctx`.
Latencies are converted from ms to us; nothing else is changed.
"""
import csv
import sys
from pathlib import Path

HEAD_DIMS = {"128", "256"}
MAX_BATCH = 256
# per-GPU shapes of the modelled GQA families at TP 1-8 (README table): at most 32 query heads
# and 4 KV heads on a GPU
MAX_Q_HEADS = 32
MAX_KV_HEADS = 4
DTYPE = {"bfloat16": "bf16", "fp8": "fp8"}


def gqa(path, engine, backends):
    for r in csv.DictReader(open(path)):
        if r["kernel_source"] not in backends or r["window_size"] != "0":
            continue
        if r["head_dim"] not in HEAD_DIMS or int(r["batch_size"]) > MAX_BATCH:
            continue
        if int(r["num_heads"]) > MAX_Q_HEADS or int(r["num_key_value_heads"]) > MAX_KV_HEADS:
            continue
        yield (engine, backends[r["kernel_source"]], "gqa", DTYPE[r["kv_cache_dtype"]],
               r["num_heads"], r["num_key_value_heads"], r["head_dim"], r["batch_size"],
               r["step"], round(float(r["latency"]) * 1000.0, 3))


def mla(path):
    rows = [r for r in csv.DictReader(open(path))
            if r["kernel_source"] == "TRITON_MLA" and r["gemm_type"] == "bfloat16"
            and r["tp_size"] == "1" and int(r["batch_size"]) <= MAX_BATCH]
    base = {(r["kv_cache_dtype"], r["num_heads"], r["batch_size"]): float(r["latency"])
            for r in rows if r["step"] == "2"}
    for r in rows:
        key = (r["kv_cache_dtype"], r["num_heads"], r["batch_size"])
        if r["step"] == "2" or key not in base:
            continue
        grow_us = max(0.0, (float(r["latency"]) - base[key]) * 1000.0)
        yield ("vllm", "triton_mla_ctx", "mla", DTYPE[r["kv_cache_dtype"]], r["num_heads"], "1",
               "576", r["batch_size"], r["step"], round(grow_us, 3))


def main():
    d = Path(sys.argv[1])
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["engine", "backend", "kind", "kv_dtype", "q_heads", "kv_heads", "head_dim",
                "batch", "cached_tokens", "time_us"])
    rows = list(gqa(d / "sglang-0.5.14-generation_attention.csv", "sglang",
                    {"flashinfer": "flashinfer", "triton": "triton"}))
    rows += gqa(d / "vllm-0.24.0-generation_attention.csv", "vllm",
                {"vllm_flash_attn_fa2": "flash_attn", "vllm_flashinfer_fidecode": "flashinfer"})
    rows += mla(d / "vllm-0.24.0-mla_generation_module.csv")
    for r in rows:
        w.writerow(r)


if __name__ == "__main__":
    main()
