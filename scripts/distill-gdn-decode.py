#!/usr/bin/env python3
"""Distil the Gated DeltaNet decode tables of NVIDIA aiconfigurator-core 0.12.0 (RTX PRO 6000
Blackwell Server Edition; vLLM 0.24.0 and SGLang 0.5.14, `*-gdn.csv` as converted in the project's
shared/observations/aic-0.12.0-rtx-pro-6000/) into data/observations/gdn-decode-rtx-pro-6000.csv,
read by sim/src/cost/gdn_table.rs.

Usage: scripts/distill-gdn-decode.py AIC_DIR > data/observations/gdn-decode-rtx-pro-6000.csv
       scripts/distill-gdn-decode.py --cold data/observations/gdn-decode-rtx-pro-6000.csv
Kept: phase `generation` (one decode token per request), the recurrent kernel
(`fused_recurrent_gated_delta_rule_packed_decode`) and the conv-state update
(`causal_conv1d_update`), every model shape (Qwen3.5 0.8B-397B, heads as one GPU holds them at
TP 1-16), both engines; latency converted from ms to us. Dropped: the prefill (`context`) rows.
--cold prints the bandwidth the recurrent kernel streams its fp32 state (read and written once,
`2 * batch * v_heads * dk * dv * 4` bytes) at on rows whose state traffic is at least twice the
128 MB L2 (the collector repeats one call: smaller states stay in L2): the median, min and max
(sim/src/cost/gdn_table.rs takes the median).
"""
import csv
import statistics
import sys
from pathlib import Path

KERNELS = {
    "fused_recurrent_gated_delta_rule_packed_decode": "recurrent",
    "causal_conv1d_update": "conv_update",
}
L2_BYTES = 128 * 1024 * 1024


def distill(aic: Path) -> None:
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["engine", "kernel", "model", "k_heads", "v_heads", "head_k_dim", "head_v_dim",
                  "batch", "time_us"])
    for engine, name in (("vllm", "vllm-0.24.0-gdn.csv"), ("sglang", "sglang-0.5.14-gdn.csv")):
        rows = []
        for r in csv.DictReader(open(aic / name)):
            if r["phase"] != "generation" or r["kernel_source"] not in KERNELS:
                continue
            rows.append([engine, KERNELS[r["kernel_source"]], r["model_name"].split("/")[-1],
                         int(r["num_k_heads"]), int(r["num_v_heads"]), int(r["head_k_dim"]),
                         int(r["head_v_dim"]), int(r["batch_size"]),
                         round(float(r["latency"]) * 1e3, 4)])
        rows.sort(key=lambda x: (x[1], x[2], x[3], x[4], x[7]))
        out.writerows(rows)


def cold(path: Path) -> None:
    rates = []
    for r in csv.DictReader(open(path)):
        if r["kernel"] != "recurrent":
            continue
        state = int(r["v_heads"]) * int(r["head_k_dim"]) * int(r["head_v_dim"]) * 4
        traffic = 2 * int(r["batch"]) * state
        if traffic >= 2 * L2_BYTES:
            rates.append(traffic / (float(r["time_us"]) * 1e-6) / 1e9)
    print(f"{len(rates)} cold rows: median {statistics.median(rates):.0f} GB/s, "
          f"min {min(rates):.0f}, max {max(rates):.0f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--cold":
        cold(Path(sys.argv[2]))
    elif len(sys.argv) == 2:
        distill(Path(sys.argv[1]))
    else:
        sys.exit(__doc__)
