"""PyTorch reference for probe's single-GPU figures (same sizes, CUDA events, median of samples).

Usage: python3 torch_reference.py [PROBE_PROFILE.json] [--out ref.json]
Prints a side-by-side table when a probe profile is given. GB = 1e9 bytes.
"""
import json
import statistics
import sys

import torch

MIB = 1 << 20
HOST_BYTES = 256 * MIB
DEV_BYTES = 1024 * MIB
WARMUP, SAMPLES = 3, 15


def timed(fn, reps=1):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(SAMPLES):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / reps)
    return statistics.median(out)


def main():
    dev = torch.device("cuda:0")
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    n = HOST_BYTES
    host_src = torch.randint(0, 255, (n,), dtype=torch.uint8).pin_memory()
    host_dst = torch.empty(n, dtype=torch.uint8).pin_memory()
    d = torch.randint(0, 255, (n,), dtype=torch.uint8, device=dev)
    res["h2d_pinned_gb_per_s"] = n / timed(lambda: d.copy_(host_src, non_blocking=True)) / 1e9
    res["d2h_pinned_gb_per_s"] = n / timed(lambda: host_dst.copy_(d, non_blocking=True)) / 1e9
    d2 = torch.empty_like(d)

    def bounce():
        host_dst.copy_(d, non_blocking=True)
        d2.copy_(host_dst, non_blocking=True)

    res["bounce_d2h2d_gb_per_s"] = n / timed(bounce) / 1e9
    assert torch.equal(d2, d)
    src = torch.randint(0, 255, (DEV_BYTES,), dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    res["d2d_copy_gb_per_s"] = DEV_BYTES / timed(lambda: dst.copy_(src)) / 1e9
    assert torch.equal(dst, src)
    m = 8192
    a = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    b = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    t = timed(lambda: torch.matmul(a, b))
    res["matmul_bf16_8192_tflops"] = 2 * m**3 / t / 1e12
    print(json.dumps(res))
    args = sys.argv[1:]
    out = None
    if "--out" in args:
        out = args[args.index("--out") + 1]
        args = [x for x in args if x not in ("--out", out)]
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
    if args:
        compare(json.load(open(args[0])), res)


def compare(p, ref):
    def host(mem, direction):
        for h in p.get("host_device", []):
            if h["devices"] == [0] and h["memory"] == mem and h["direction"] == direction and h["bytes"] == HOST_BYTES:
                return h["gb_per_s"]["median"]

    def bounce():
        for l in p.get("links", []):
            if l["src"] == l["dst"] == 0:
                for c in l["curves"]:
                    if c["mode"] == "host-staged" and c["direction"] == "unidirectional":
                        for pt in c["points"]:
                            if pt["bytes"] == HOST_BYTES:
                                return pt["gb_per_s"]["median"]

    d2d = next((d["copy_gb_per_s"]["median"] for d in p.get("device_memory", []) if d["device"] == 0), None)
    gemm = next((g["tflops"]["median"] for g in p.get("compute", [])
                 if g["dtype"] == "bf16" and g["m"] == g["n"] == g["k"] == 8192), None)
    rows = [
        ("pinned H2D 256 MiB (GB/s)", host("pinned", "host-to-device"), ref["h2d_pinned_gb_per_s"]),
        ("pinned D2H 256 MiB (GB/s)", host("pinned", "device-to-host"), ref["d2h_pinned_gb_per_s"]),
        ("D2D copy 1 GiB, one-way count (GB/s)", d2d, ref["d2d_copy_gb_per_s"]),
        ("D->H->D bounce 256 MiB (GB/s)", bounce(), ref["bounce_d2h2d_gb_per_s"]),
        ("bf16 GEMM 8192^3 (TFLOP/s)", gemm, ref["matmul_bf16_8192_tflops"]),
    ]
    print(f"| {'figure':40} | {'probe':>9} | {'PyTorch':>9} | {'probe/PyTorch':>13} |")
    print(f"|{'-'*42}|{'-'*11}|{'-'*11}|{'-'*15}|")
    for name, a, b in rows:
        ratio = f"{a / b:.3f}" if a and b else "-"
        print(f"| {name:40} | {a if a is None else round(a, 1):>9} | {round(b, 1):>9} | {ratio:>13} |")


if __name__ == "__main__":
    main()
