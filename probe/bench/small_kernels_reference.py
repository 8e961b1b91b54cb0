"""GPU time per CUDA-graph node of the small kernels a decode layer launches (one token),
measured with PyTorch on this GPU: RMSNorm, residual add, SiLU-and-mul, rotary-style mul-add,
KV-cache scatter, top-k, fp8 quantize, a router GEMV. Each op is captured N times in a graph,
replayed, timed with CUDA events; median over repeats."""
import json, sys, torch
import torch.nn.functional as F
torch.manual_seed(0)
dev = "cuda"
N, REP = 256, 15
h = 7168
x = torch.randn(1, h, device=dev, dtype=torch.bfloat16)
r = torch.randn(1, h, device=dev, dtype=torch.bfloat16)
w = torch.randn(h, device=dev, dtype=torch.bfloat16)
gu = torch.randn(1, 2 * 2048, device=dev, dtype=torch.bfloat16)
q = torch.randn(1, 16, 64, device=dev, dtype=torch.bfloat16)
cos = torch.randn(1, 1, 64, device=dev, dtype=torch.bfloat16)
cache = torch.zeros(200000, 576, device=dev, dtype=torch.bfloat16)
kv = torch.randn(1, 576, device=dev, dtype=torch.bfloat16)
loc = torch.tensor([12345], device=dev)
logits = torch.randn(1, 16384, device=dev, dtype=torch.float32)
router = torch.randn(256, h, device=dev, dtype=torch.bfloat16)
ops = {
    "rms_norm": lambda: F.rms_norm(x, (h,), w, 1e-6),
    "residual_add": lambda: x.add_(r, alpha=0.0),
    "silu_and_mul": lambda: F.silu(gu[:, :2048]) * gu[:, 2048:],
    "rotary_mul_add": lambda: q * cos + q,
    "kv_cache_store": lambda: cache.index_copy_(0, loc, kv),
    "topk_2048_of_16384": lambda: torch.topk(logits, 2048, dim=-1),
    "fp8_quantize": lambda: (x * 2.0).to(torch.float8_e4m3fn),
    "router_gemv_256x7168": lambda: x @ router.t(),
}
out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "chain": N, "repeats": REP, "per_node_us": {}}
s = torch.cuda.Stream()
for name, f in ops.items():
    with torch.cuda.stream(s):
        for _ in range(3): f()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(N): f()
    # warm the clocks
    for _ in range(20): g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(REP):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / N)
    ts.sort()
    out["per_node_us"][name] = {"median": ts[len(ts)//2], "p10": ts[1], "p90": ts[-2]}
    print(name, round(ts[len(ts)//2], 3), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
