#!/usr/bin/env python3
"""Distil SGLang's custom all-reduce timings on NVLink boxes from NVIDIA aiconfigurator's
performance database into data/observations/custom-allreduce-sglang-0.5.14.csv, read by
sim/src/cost/custom_ar_table.rs.

Source: ai-dynamo/aiconfigurator (commit 4fabb773643d961c9679e9af3544b74f95c87c8e for the B200
table, HEAD 095f58a51c4c of 2026-08-21 for all three),
`aic-core/src/aiconfigurator_core/systems/data/{b200_sxm,h200_sxm,h100_sxm}/comm/sglang/0.5.14/
custom_allreduce_perf.parquet`: SGLang 0.5.14's `tensor_model_parallel_all_reduce` (its custom
all-reduce, bf16) on 2, 4 and 8 GPUs of one HGX box, `message_size` in elements, `latency` in ms;
kept: the CUDA-graph rows (`backend == sglang_graph`, what a decode step replays), messages up to
SGLang's 8 MiB custom all-reduce limit; bytes = elements x 2.

Usage: scripts/distill-custom-allreduce.py AIC_REPO_ROOT > data/observations/custom-allreduce-sglang-0.5.14.csv
(needs pandas with pyarrow to read the parquet files).
"""
import sys
from pathlib import Path

import pandas as pd

GPUS = {"b200_sxm": "b200", "h200_sxm": "h200", "h100_sxm": "h100-sxm"}
MAX_BYTES = 8 * 1024 * 1024


def main(root: Path) -> None:
    print("gpu,num_gpus,message_bytes,graph_us")
    base = root / "aic-core/src/aiconfigurator_core/systems/data"
    for system, gpu in GPUS.items():
        d = pd.read_parquet(base / system / "comm/sglang/0.5.14/custom_allreduce_perf.parquet")
        d = d[(d.backend == "sglang_graph") & (d.allreduce_dtype == "bfloat16")]
        for r in d.sort_values(["num_gpus", "message_size"]).itertuples():
            b = int(r.message_size) * 2
            if b <= MAX_BYTES:
                print(f"{gpu},{int(r.num_gpus)},{b},{r.latency * 1000:.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
