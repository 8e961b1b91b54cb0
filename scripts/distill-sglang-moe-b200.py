#!/usr/bin/env python3
"""Distil SGLang's FlashInfer TRT-LLM fused MoE (`--moe-runner-backend flashinfer_trtllm`) on one
B200 from NVIDIA aiconfigurator's performance database into
data/observations/moe-sglang-0.5.14-b200-flashinfer-trtllm.csv, read by
sim/src/cost/moe_shape_table.rs.

Source: ai-dynamo/aiconfigurator HEAD 095f58a51c4c (2026-08-21; the table last changed in
dbb322e6f3d3), `aic-core/src/aiconfigurator_core/systems/data/b200_sxm/moe/sglang/0.5.14/
moe_perf.parquet`: SGLang 0.5.14's `FusedMoE` layer with its `TopK` (activation quantization,
routing, both grouped GEMMs, finalize) replayed in a CUDA graph over five router-logit sets
(collector/sglang/collect_moe.py), `latency` in ms. Kept: kernel_source
`sglang_flashinfer_trtllm_moe`, the `balanced` routing (every token's top-k experts spread evenly:
`min(E, T * k)` experts touched, the rows the cost model's equivalent-token lookup reads), experts
sliced by TP without EP (`moe_ep_size == 1`), weights `fp8_block` (-> fp8), `nvfp4`, `bfloat16`
(-> bf16); 1 - 16,384 tokens.

Layout as the vLLM shape table beside it: backend, dtype, hidden, inter, experts, topk, tp,
num_tokens, time_us.

Usage: scripts/distill-sglang-moe-b200.py AIC_REPO_ROOT > data/observations/moe-sglang-0.5.14-b200-flashinfer-trtllm.csv
(needs pandas with pyarrow to read the parquet file).
"""
import sys
from pathlib import Path

import pandas as pd

DTYPES = {"fp8_block": "fp8", "nvfp4": "nvfp4", "bfloat16": "bf16"}


def main(root: Path) -> None:
    print("backend,dtype,hidden,inter,experts,topk,tp,num_tokens,time_us")
    d = pd.read_parquet(
        root / "aic-core/src/aiconfigurator_core/systems/data/b200_sxm/moe/sglang/0.5.14/moe_perf.parquet"
    )
    d = d[
        (d.kernel_source == "sglang_flashinfer_trtllm_moe")
        & (d.distribution == "balanced")
        & (d.moe_ep_size == 1)
        & d.moe_dtype.isin(DTYPES.keys())
    ]
    keys = ["moe_dtype", "hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "num_tokens"]
    for k, ms in d.groupby(keys).latency.median().sort_index().items():
        dt, h, i, e, top, tp, t = k
        print(f"flashinfer_trtllm,{DTYPES[dt]},{h},{i},{e},{top},{tp},{t},{ms * 1000:.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
