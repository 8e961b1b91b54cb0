"""How fast a GPU reads weights that live in host memory, the two ways the engines' CPU weight
offload reads them (vLLM `--cpu-offload-gb`, SGLang `--cpu-offload-gb` / group offload):

- zero-copy (UVA): the weight tensor is a device view of pinned host memory and each GEMM reads
  it across PCIe as it runs (vLLM's `UVAOffloader`, `get_accelerator_view_from_cpu_tensor`);
- copy: the layer's weights are copied host→device (`cudaMemcpyAsync` from pinned memory) before
  the layer runs, on a side stream while other layers compute (the prefetch / group offloaders).

Measures, on this GPU:
1. `dma`: pinned host→device copy bandwidth (256 MB and 1 GB, the copy engine's rate);
2. `zero_copy_gemm`: a bf16 GEMM of M = 1, 8, 64 rows against an N = K weight of 8 MB … 1 GB held
   in mapped pinned host memory (a CuPy `hostAlloc(..., hostAllocMapped)` buffer shared with
   torch through DLPack), and the same GEMM with the weight in device memory;
3. `zero_copy_slices`: 8 GEMMs of M = 1 over 8 of 64 equal slices of a 512 MB host weight (what
   a fused MoE kernel does with 8 routed experts of an offloaded layer: only the slices it touches
   cross the bus), time per byte read;
4. `overlap`: a 512 MB host→device copy on a side stream beside a GPU-bound GEMM loop of similar
   length: the wall time of both against each alone (does the copy engine run beside the SMs).

Times with CUDA events, median of several trials after warm-up. Writes JSON.

Usage: python3 host_weight_reads.py OUT.json
       python3 host_weight_reads.py --prefill OUT.json   (prefill-sized GEMMs only: M = 256 …
       8192 rows over 32 – 512 MB weights in mapped pinned memory and in device memory, with
       the bytes crossing the link per weight byte the time implies at the copy rate: whether a
       GEMM tiled over many rows reads a host weight more than once)
"""
import json
import statistics
import sys

import cupy
import torch


def median_ms(fn, trials=7, warmup=2):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(trials):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b))
    return statistics.median(out)


def mapped_host_bf16(numel):
    """A torch CUDA tensor viewing mapped pinned host memory (zero-copy)."""
    nbytes = numel * 2
    rt = cupy.cuda.runtime
    ptr = rt.hostAlloc(nbytes, rt.hostAllocMapped | rt.hostAllocPortable)
    # unified addressing (every 64-bit CUDA device): the host pointer of a mapped pinned
    # allocation is its device pointer too, what vLLM's get_cuda_view_from_cpu_tensor uses
    assert rt.getDeviceProperties(0)["unifiedAddressing"] == 1
    mem = cupy.cuda.UnownedMemory(ptr, nbytes, owner=None)
    arr = cupy.ndarray((numel,), dtype=cupy.uint16, memptr=cupy.cuda.MemoryPointer(mem, 0))
    t = torch.from_dlpack(arr).view(torch.bfloat16)
    return t, ptr


def square_weights(mb, keep):
    """An N = K bf16 weight of about `mb` MB in mapped pinned host memory, and its copy in
    device memory; the host allocation's pointer goes to `keep` (freed with the process)."""
    k = int((mb * 1024 * 1024 / 2) ** 0.5) // 64 * 64
    wh, ptr = mapped_host_bf16(k * k)
    keep.append(ptr)
    wh.copy_(torch.randn(k * k, dtype=torch.bfloat16, device="cuda") * 0.01)
    torch.cuda.synchronize()
    w = wh.view(k, k)
    return k, w, w.clone()


def main(out_path):
    dev = torch.cuda.get_device_properties(0)
    res = {
        "about": __doc__.strip().splitlines()[0],
        "device": dev.name,
        "torch": torch.__version__,
        "cupy": cupy.__version__,
        "dma": [],
        "zero_copy_gemm": [],
        "zero_copy_slices": [],
        "overlap": {},
    }
    # 1. DMA host→device from pinned memory
    for mb in (256, 1024):
        n = mb * 1024 * 1024
        h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        d = torch.empty(n, dtype=torch.uint8, device="cuda")
        ms = median_ms(lambda: d.copy_(h, non_blocking=True))
        res["dma"].append({"bytes": n, "ms": ms, "gb_per_s": n / ms / 1e6})
        del h, d
    # 2. zero-copy GEMMs against device-memory GEMMs
    keep = []
    for mb in (8, 32, 128, 512, 1024):
        k, wh2, wd = square_weights(mb, keep)
        numel = k * k
        for m in (1, 8, 64):
            x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
            host_ms = median_ms(lambda: torch.matmul(x, wh2.t()))
            dev_ms = median_ms(lambda: torch.matmul(x, wd.t()), trials=21)
            nbytes = numel * 2
            res["zero_copy_gemm"].append({
                "m": m, "n_eq_k": k, "bytes": nbytes,
                "host_ms": host_ms, "host_gb_per_s": nbytes / host_ms / 1e6,
                "device_ms": dev_ms, "device_gb_per_s": nbytes / dev_ms / 1e6,
            })
        del wd
    # 3. 8 of 64 slices of a 512 MB host weight, M = 1
    k = 4096
    rows = 64 * 1024  # 64 slices of 1024 × 4096 bf16 = 8 MB each, 512 MB in all
    wh, ptr = mapped_host_bf16(rows * k)
    keep.append(ptr)
    wh.copy_(torch.randn(rows * k, dtype=torch.bfloat16, device="cuda") * 0.01)
    torch.cuda.synchronize()
    w = wh.view(rows, k)
    x = torch.randn(1, k, dtype=torch.bfloat16, device="cuda")
    picks = [3, 11, 17, 29, 38, 44, 52, 61]

    def slices():
        for p in picks:
            torch.matmul(x, w[p * 1024:(p + 1) * 1024].t())

    ms = median_ms(slices)
    nbytes = len(picks) * 1024 * k * 2
    res["zero_copy_slices"].append({
        "slices": len(picks), "of": 64, "slice_bytes": 1024 * k * 2,
        "ms": ms, "gb_per_s_read": nbytes / ms / 1e6,
    })
    # 4. a host→device copy beside a GPU-bound GEMM loop
    n = 512 * 1024 * 1024
    h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    d = torch.empty(n, dtype=torch.uint8, device="cuda")
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    side = torch.cuda.Stream()

    def gemms(reps):
        for _ in range(reps):
            torch.matmul(a, a)

    copy_ms = median_ms(lambda: d.copy_(h, non_blocking=True))
    one_gemm_ms = median_ms(lambda: gemms(1))
    reps = max(1, int(round(copy_ms / one_gemm_ms)))
    gemm_ms = median_ms(lambda: gemms(reps))

    def both():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            d.copy_(h, non_blocking=True)
        gemms(reps)
        torch.cuda.current_stream().wait_stream(side)

    both_ms = median_ms(both)
    res["overlap"] = {
        "copy_bytes": n, "copy_ms": copy_ms, "gemm_reps": reps, "gemm_ms": gemm_ms,
        "both_ms": both_ms,
        "hidden_share_of_copy": (copy_ms + gemm_ms - both_ms) / copy_ms,
    }
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


def prefill(out_path):
    """Prefill-sized zero-copy GEMMs: time against M, and the link bytes a weight byte costs."""
    n = 512 * 1024 * 1024
    h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    d = torch.empty(n, dtype=torch.uint8, device="cuda")
    dma_ms = median_ms(lambda: d.copy_(h, non_blocking=True))
    dma = n / dma_ms / 1e6
    del h, d
    res = {
        "about": "prefill-sized GEMMs over weights in mapped pinned host memory",
        "device": torch.cuda.get_device_properties(0).name,
        "torch": torch.__version__,
        "dma_gb_per_s": dma,
        "rows": [],
    }
    keep = []
    for mb in (32, 128, 512):
        k, w, wd = square_weights(mb, keep)
        numel = k * k
        for m in (256, 1024, 4096, 8192):
            x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
            host_ms = median_ms(lambda: torch.matmul(x, w.t()), trials=3, warmup=1)
            dev_ms = median_ms(lambda: torch.matmul(x, wd.t()), trials=5)
            nbytes = numel * 2
            res["rows"].append({
                "m": m, "n_eq_k": k, "bytes": nbytes,
                "host_ms": host_ms, "device_ms": dev_ms,
                # link bytes per weight byte, were the GEMM bound by the link at the copy rate
                "link_bytes_per_weight_byte": host_ms * dma * 1e6 / nbytes,
            })
        del wd
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    if sys.argv[1] == "--prefill":
        prefill(sys.argv[2])
    else:
        main(sys.argv[1])
