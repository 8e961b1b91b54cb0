#!/usr/bin/env python3
"""Write measured NCCL collective curves into the HGX machine presets (sim/presets/machines/
{b200,h200,h100}-x8.json, and the H200 box's into h20-x8.json and h200-x8x2-ib-ndr.json, whose
NVLink fabric it is) in place of the modelled ones: all_reduce, all_gather, reduce_scatter
and all_to_all on 2 / 4 / 8 GPUs; send/recv (not in the tables) keeps its model.

Source: ai-dynamo/aiconfigurator HEAD 095f58a51c4c (2026-08-21),
`aic-core/src/aiconfigurator_core/systems/data/{b200_sxm,h200_sxm,h100_sxm}/comm/nccl/2.29.2/
nccl_perf.parquet`: nccl-tests (`all_reduce_perf`, `all_gather_perf`, `reduce_scatter_perf`,
`alltoall_perf`) run by `collector/network/collect_nccl.py` at one size each (`-b S -e S`), one
process with a thread per GPU (`-t N`), 40 warm-up and 100 (60 above 16 MiB) timed iterations, no
CUDA graph; `latency` = the out-of-place time column (ms); `message_size` = bytes / element size.
Kept: the `half` rows (what the engines' bf16 collectives run), bytes = message_size x 2, 512 B to
512 MiB. algbw = bytes / time; busbw by nccl-tests' factors: all-reduce 2(n-1)/n, the others
(n-1)/n.

Usage: scripts/preset-hgx-nccl.py AIC_REPO_ROOT   (rewrites the three presets; needs pandas + pyarrow)
"""
import json
import sys
from pathlib import Path

import pandas as pd

PRESETS = {"b200_sxm": "b200-x8", "h200_sxm": "h200-x8", "h100_sxm": "h100-x8"}
# presets whose NVLink fabric is the H200 box's (the HGX H20 at the same stated link rate; the two
# H200 boxes inside each box): they take its curves whole (send/recv included)
H200_FABRIC = ["h20-x8", "h200-x8x2-ib-ndr"]
OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
       "alltoall": "all_to_all"}
VERSION = "2.29.2"
NOTE = ("Collective curves (all_reduce, all_gather, reduce_scatter, all_to_all on 2/4/8 GPUs) are "
        "measured: nccl-tests with NCCL 2.29.2 on this GPU's HGX box, from NVIDIA aiconfigurator's "
        "database (ai-dynamo/aiconfigurator @095f58a51c4c, systems/data/{gpu}/comm/nccl/2.29.2/"
        "nccl_perf.parquet, bf16, no CUDA graph: a small message's time includes what a graph "
        "replay would not launch); written by scripts/preset-hgx-nccl.py. send_recv keeps the model "
        "below.")


def points(x: pd.DataFrame, op: str, n: int) -> list:
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    out = []
    for r in x.sort_values("message_size").itertuples():
        b = int(r.message_size) * 2
        if b < 512 or b > 512 * 1024 * 1024:
            continue
        us = float(r.latency) * 1000
        alg = b / (us * 1e-6) / 1e9
        out.append({
            "bytes": b,
            "time_us": {"median": round(us, 3), "p10": round(us, 3), "p90": round(us, 3), "samples": 1},
            "algbw_gb_per_s": alg,
            "busbw_gb_per_s": alg * factor,
            "status": "ok",
        })
    return out


def main(root: Path) -> None:
    base = root / "aic-core/src/aiconfigurator_core/systems/data"
    for system, preset in PRESETS.items():
        d = pd.read_parquet(base / system / f"comm/nccl/{VERSION}/nccl_perf.parquet")
        d = d[d.nccl_dtype == "half"]
        path = Path(__file__).resolve().parent.parent / f"sim/presets/machines/{preset}.json"
        p = json.loads(path.read_text())
        for c in p["collectives"]:
            table_op = next((k for k, v in OPS.items() if v == c["op"]), None)
            if table_op is None:
                continue
            n = len(c["devices"])
            x = d[(d.op_name == table_op) & (d.num_gpus == n)]
            pts = points(x, c["op"], n)
            if len(pts) < 2:
                raise SystemExit(f"{system}: no {table_op} rows on {n} GPUs")
            c["points"] = pts
        prov = p["provenance"]
        prov["nccl_version"] = VERSION
        annotate(prov, NOTE.format(gpu=system))
        write(path, p)
        if system == "h200_sxm":
            for other in H200_FABRIC:
                share(path.parent / f"{other}.json", p["collectives"], NOTE.format(gpu=system))


def annotate(prov: dict, note: str) -> None:
    """The measured curves' note first; the model's own notes now speak for send/recv only."""
    notes = [n for n in prov["notes"] if "all_to_all on 2/4/8 GPUs) are measured" not in n]
    model = ("Collective curves are a model", "Peak busbw:", "Published NCCL runs")
    notes = [f"send/recv's model: {n}" if n.startswith(model) else n for n in notes]
    prov["notes"] = [note] + notes


def share(path: Path, curves: list, note: str) -> None:
    """`path`'s NVLink curves (in the H200 box's order) replaced by the H200 box's."""
    p = json.loads(path.read_text())
    nv = [i for i, c in enumerate(p["collectives"]) if c.get("link_class") != "NET"]
    if len(nv) != len(curves):
        raise SystemExit(f"{path.name}: {len(nv)} NVLink curves, the H200 box has {len(curves)}")
    for i, c in zip(nv, curves):
        p["collectives"][i] = c
    note = note.replace("this GPU's HGX box", "an HGX H200 box (this fabric)")
    if any(c.get("link_class") == "NET" for c in p["collectives"]):
        note = "Inside each box: " + note
    annotate(p["provenance"], note)
    write(path, p)


def write(path: Path, p: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(p, indent=2) + "\n")
    tmp.replace(path)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
