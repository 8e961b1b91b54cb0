"""Probe vs a reference's busbw (torch_dist_reference.py or nccl_ctypes_reference.py output),
side by side (no torch needed).

Usage: python3 compare_collectives.py PROBE_PROFILE.json TORCH_REF.json
           [--nccl-env K=V ...] [--min-bytes 1048576] [--tolerance 0.05] [--json OUT.json]

Takes the probe curves of the group with as many GPUs as the reference's world size, run with
the NCCL environment given by --nccl-env (default: the defaults, `nccl_env` empty — for a profile
taken with NCCL_P2P_DISABLE=1 exported, that variable is in `provenance.env`), matches sizes by
nccl-tests' `size` (bytes), and prints probe busbw, torch busbw and probe/torch at sizes from
--min-bytes up. The last line counts the sizes within the tolerance. GB = 1e9 bytes.
"""
import argparse
import json
import sys

OPS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"]


def probe_curves(profile, n, env):
    out = {}
    for c in profile["collectives"]:
        if len(c["devices"]) != n or c.get("nccl_env", {}) != env or c["op"] not in OPS:
            continue
        out.setdefault(c["op"], {p["bytes"]: p for p in c["points"] if p["status"] == "ok"})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("reference")
    ap.add_argument("--nccl-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--min-bytes", type=int, default=1 << 20)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    try:
        with open(a.profile) as f:
            prof = json.load(f)
        with open(a.reference) as f:
            ref = json.load(f)
        env = dict(kv.split("=", 1) for kv in a.nccl_env)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    n = ref["world_size"]
    curves = probe_curves(prof, n, env)
    if not curves:
        print(f"error: {a.profile} has no {n}-GPU collectives with NCCL env {env}; "
              "pick another --nccl-env or profile", file=sys.stderr)
        return 2
    rows = []
    for op in OPS:
        for p in ref["points"]:
            if p["op"] != op or p["bytes"] < a.min_bytes:
                continue
            q = curves.get(op, {}).get(p["bytes"])
            if q is None:
                continue
            rows.append({
                "op": op,
                "bytes": p["bytes"],
                "probe_busbw_gb_per_s": q["busbw_gb_per_s"],
                "torch_busbw_gb_per_s": p["busbw_gb_per_s"],
                "ratio": q["busbw_gb_per_s"] / p["busbw_gb_per_s"],
                "torch_verified": p["verified"],
            })
    print(f"probe {a.profile} (NCCL env {env or 'defaults'}; run env "
          f"{prof['provenance'].get('env', {})})")
    print(f"ref   {a.reference} (torch {ref['torch']}, NCCL {ref['nccl_version']}, "
          f"env {ref['env']}), {n} GPUs")
    print(f"{'op':<15}{'size':>10}{'probe GB/s':>12}{'ref GB/s':>12}{'probe/ref':>13}")
    within = 0
    for r in rows:
        ok = abs(r["ratio"] - 1) <= a.tolerance
        within += ok
        size = r["bytes"]
        label = (f"{size >> 30} GiB" if size >= 1 << 30 else f"{size >> 20} MiB" if size >= 1 << 20
                 else f"{size >> 10} KiB" if size >= 1 << 10 else f"{size} B")
        print(f"{r['op']:<15}{label:>10}{r['probe_busbw_gb_per_s']:>12.1f}"
              f"{r['torch_busbw_gb_per_s']:>12.1f}{r['ratio']:>13.3f}"
              f"{'' if ok else '  *'}{'' if r['torch_verified'] else '  torch check FAILED'}")
    print(f"{within}/{len(rows)} sizes >= {a.min_bytes} B within {a.tolerance:.0%} "
          "(* = outside)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
