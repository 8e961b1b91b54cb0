"""PyTorch's pageable host -> device copy_ beside probe's pageable_variants (issue 26): same size
(256 MiB), CUDA events, median of 15 after 3 warm-ups; GB = 1e9 bytes. Each buffer kind once:
torch's own allocator (touched by randint), numpy's (madvise(MADV_HUGEPAGE) on large arrays by
default on Linux), numpy with that turned off, a never-touched torch.empty (its pages are the
kernel's shared zero page), the same written once, torch.zeros, and pinned.

Usage: python3 pageable_reference.py [--out ref.json]
"""
import json
import statistics
import sys

import numpy as np
import torch

N = 256 << 20
WARMUP, SAMPLES = 3, 15


def timed(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(SAMPLES):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return N / statistics.median(out) / 1e9


def thp_of(t):
    """AnonHugePages of the mapping holding tensor t (kB), from /proc/self/smaps."""
    addr = t.data_ptr()
    cur = None
    for line in open("/proc/self/smaps"):
        head = line.split()
        if "-" in head[0] and len(head) >= 5:
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            cur = lo <= addr < hi
        elif cur and head[0] == "AnonHugePages:":
            return int(head[1])
    return None


def main():
    d = torch.empty(N, dtype=torch.uint8, device="cuda:0")
    res = {"torch": torch.__version__, "bytes": N}
    try:
        res["thp"] = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    except OSError:
        res["thp"] = None
    kinds = {}
    t = torch.randint(0, 255, (N,), dtype=torch.uint8)
    kinds["torch randint (touched)"] = t
    a = np.random.randint(0, 255, N, dtype=np.uint8)
    kinds["numpy (hugepage madvise default)"] = torch.from_numpy(a)
    try:
        np._core.multiarray._set_madvise_hugepage(False)
    except AttributeError:
        np.core.multiarray._set_madvise_hugepage(False)
    b = np.random.randint(0, 255, N, dtype=np.uint8)
    kinds["numpy, madvise hugepage off"] = torch.from_numpy(b)
    kinds["torch.empty (never touched)"] = torch.empty(N, dtype=torch.uint8)
    kinds["torch.empty, then fill_(1)"] = torch.empty(N, dtype=torch.uint8).fill_(1)
    kinds["torch.zeros (written zeros)"] = torch.zeros(N, dtype=torch.uint8)
    for name, h in kinds.items():
        res[name] = {
            "gb_per_s": timed(lambda: d.copy_(h)),
            "anon_huge_kb": thp_of(h),
            "ptr_mod_2mib": h.data_ptr() % (2 << 20),
        }
    p = torch.randint(0, 255, (N,), dtype=torch.uint8).pin_memory()
    res["pinned"] = {"gb_per_s": timed(lambda: d.copy_(p, non_blocking=True))}
    print(json.dumps(res, indent=1))
    if "--out" in sys.argv:
        json.dump(res, open(sys.argv[sys.argv.index("--out") + 1], "w"), indent=1)


if __name__ == "__main__":
    main()
