#!/usr/bin/env python3
"""Issue 35's figures from two `sim validate --format json` outputs (dev, held-out):

  records with context >= 16k, MAPE; the slowdown from context 0 to the longest context of each
  configuration and concurrency (measured x / predicted x, median |error|); MoE-heavy (GLM-5.x,
  Kimi) records at 8-64 streams, MAPE. One headline figure per record (`primary`).

Usage (docs/validation.md, "Decode attention by shape" figures):
  A="--acceptance sim/tests/fixtures/acceptance/rtx6kpro-kimi-k26-v4.json \
     --acceptance sim/tests/fixtures/acceptance/rtx6kpro-glm5.json"
  sim validate --records validation/public-records.json $A --format json > dev.json
  sim validate --records validation/further-records.json $A --format json > further.json
  python3 scripts/context-figures.py dev.json further.json [-v]
"""
import json
import re
import statistics as st
import sys


def load(path):
    with open(path) as f:
        return [c for c in json.load(f)["comparisons"] if c.get("primary")]


def config(c):
    # the record id without its context and concurrency suffix
    return re.sub(r"-ctx\d+k?-c\d+$", "", c["id"])


def ctx(c):
    return c.get("context_tokens") or 0


def figures(comparisons, label):
    long = [c for c in comparisons if ctx(c) >= 16384]
    mape = st.mean(abs(c["error_pct"]) for c in long) if long else float("nan")
    groups = {}
    for c in comparisons:
        groups.setdefault((config(c), c["concurrency"], c["quantity"]), []).append(c)
    slow = []
    for key, cs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        cs = sorted(cs, key=ctx)
        if len(cs) < 2 or ctx(cs[0]) != 0 or ctx(cs[-1]) < 16384:
            continue
        a, b = cs[0], cs[-1]
        measured, predicted = b["measured"] / a["measured"], b["predicted"] / a["predicted"]
        if not a["quantity"].endswith("_ms"):
            # a throughput: the slowdown is the inverse ratio
            measured, predicted = 1 / measured, 1 / predicted
        slow.append((key, ctx(b), measured, predicted, (predicted / measured - 1) * 100))
    med = st.median(abs(s[4]) for s in slow) if slow else float("nan")
    moe = [
        c
        for c in comparisons
        if c["model"].startswith(("glm-5", "kimi")) and c["concurrency"] and 8 <= c["concurrency"] <= 64
    ]
    moe_mape = st.mean(abs(c["error_pct"]) for c in moe) if moe else float("nan")
    print(
        f"{label}: context >= 16k n={len(long)} MAPE {mape:.1f}%; slowdown n={len(slow)} "
        f"median |error| {med:.1f}%; MoE-heavy 8-64 streams n={len(moe)} MAPE {moe_mape:.1f}%"
    )
    return slow


def main():
    verbose = "-v" in sys.argv
    paths = [a for a in sys.argv[1:] if a != "-v"]
    if len(paths) != 2:
        sys.exit("usage: context-figures.py DEV.json FURTHER.json [-v]")
    dev, further = load(paths[0]), load(paths[1])
    figures(dev, "dev")
    figures(further, "further")
    slow = figures(dev + further, "dev + further")
    if verbose:
        for (cfg, conc, _), longest, m, p, e in slow:
            print(f"  {cfg} c{conc} -> {longest}: measured x{m:.2f} predicted x{p:.2f} ({e:+.0f}%)")


if __name__ == "__main__":
    main()
