#!/usr/bin/env python3
"""Time one GQA decode-attention layer when every request of the batch reads the same cached
prefix (the same KV pages, as a prefix cache hands every stream of `llm_decode_bench.py` the same
messages) against every request reading its own copy, on the GPU this runs on.

Why: a decode step's attention is priced as each request streaming its own cache from DRAM. When
the requests share one prefix whose per-layer KV fits in L2, DRAM may serve it once a layer and
L2 the rest; that would make long-context, many-stream decode with a shared prompt far cheaper
than the per-request price (shardwise's largest held-out long-context misses are such runs). This
measures whether it does, and how much, on one GPU, with shardwise's own kernel.

The kernel is shardwise's own split-KV GQA decode (the usual scheme: one program per (request,
KV split) holds the request's query heads of one KV head, streams its split of the keys and
values in BLOCK_N tiles, keeps a running max and sum, writes its partial output and log-sum-exp;
a second kernel merges the splits). KV in fp8 (e4m3, per-tensor scale 1), queries bf16, fp32
accumulation (KV=bf16: bf16 KV). Layers rotate over LAYERS copies of the KV so a layer's distinct caches come from
DRAM as in a served model. CUDA-graph replay, median of REPEATS x ITERS.

Writes CSV rows to stdout: kv dtype, split order, heads, kv_heads, head_dim, context, requests, layout (shared /
distinct), splits, us per layer, effective DRAM-equivalent GB/s (bytes one copy per request /
time).
"""
import os
import statistics

import torch
import triton
import triton.language as tl

LAYERS = int(os.environ.get("LAYERS", "3"))
REPEATS = int(os.environ.get("REPEATS", "5"))
# KV=bf16: no in-kernel conversion (fp8 KV spends the kernel's time converting on some GPUs)
KV_DTYPE = torch.bfloat16 if os.environ.get("KV", "fp8") == "bf16" else torch.float8_e4m3fn
# ORDER=rotated: request r's program s walks split (s + r) mod SPLITS, so the programs running
# together (the grid's requests vary fastest) read different parts of a shared prefix: the reuse
# then needs the prefix to stay in L2 between them, not only the split they share
ROTATED = os.environ.get("ORDER", "aligned") == "rotated"
ITERS = int(os.environ.get("ITERS", "10"))


@triton.jit
def _stage1(q_ptr, k_ptr, v_ptr, out_ptr, lse_ptr, base_ptr, ctx, chunk, scale,
            H: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr, SPLITS: tl.constexpr,
            ROTATE: tl.constexpr):
    r = tl.program_id(0)
    s = tl.program_id(1)
    if ROTATE:
        s = (s + r) % SPLITS
    offs_h = tl.arange(0, H)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + r * H * D + offs_h[:, None] * D + offs_d[None, :])
    base = tl.load(base_ptr + r).to(tl.int64)
    start = s * chunk
    end = tl.minimum(start + chunk, ctx)
    m = tl.full([H], -float("inf"), tl.float32)
    l = tl.zeros([H], tl.float32)
    acc = tl.zeros([H, D], tl.float32)
    for n in range(start, end, BLOCK_N):
        offs_n = n + tl.arange(0, BLOCK_N)
        mask = offs_n < end
        kv_off = (base + offs_n[:, None]) * D + offs_d[None, :]
        k = tl.load(k_ptr + kv_off, mask=mask[:, None], other=0.0).to(tl.bfloat16)
        v = tl.load(v_ptr + kv_off, mask=mask[:, None], other=0.0).to(tl.bfloat16)
        qk = tl.dot(q, tl.trans(k)) * scale
        qk = tl.where(mask[None, :], qk, -float("inf"))
        m_new = tl.maximum(m, tl.max(qk, 1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(qk - m_new[:, None])
        l = l * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m = m_new
    o = (r * SPLITS + s) * H
    tl.store(out_ptr + (o + offs_h[:, None]) * D + offs_d[None, :], acc / l[:, None])
    tl.store(lse_ptr + o + offs_h, m + tl.log(l))


@triton.jit
def _stage2(out_ptr, lse_ptr, final_ptr, H: tl.constexpr, D: tl.constexpr,
            SPLITS: tl.constexpr):
    r = tl.program_id(0)
    h = tl.program_id(1)
    offs_d = tl.arange(0, D)
    offs_s = tl.arange(0, SPLITS)
    lse = tl.load(lse_ptr + (r * SPLITS + offs_s) * H + h)
    mx = tl.max(lse, 0)
    w = tl.exp(lse - mx)
    parts = tl.load(out_ptr + ((r * SPLITS + offs_s[:, None]) * H + h) * D + offs_d[None, :])
    o = tl.sum(parts * w[:, None], 0) / tl.sum(w, 0)
    tl.store(final_ptr + (r * H + h) * D + offs_d, o.to(tl.bfloat16))


def check():
    """The kernels against a plain softmax attention, once."""
    h, d, ctx, b, splits = 16, 256, 3000, 3, 4
    k = (torch.randn(b * ctx, d, device="cuda") * 0.5).to(torch.float8_e4m3fn)
    v = (torch.randn(b * ctx, d, device="cuda") * 0.5).to(torch.float8_e4m3fn)
    q = torch.randn(b, h, d, device="cuda", dtype=torch.bfloat16)
    base = torch.arange(b, device="cuda", dtype=torch.int32) * ctx
    got = run(q, k, v, base, ctx, splits)
    for r in range(b):
        kr = k[r * ctx:(r + 1) * ctx].float()
        vr = v[r * ctx:(r + 1) * ctx].float()
        p = torch.softmax(q[r].float() @ kr.T / d ** 0.5, -1)
        want = p @ vr
        err = (got[r].float() - want).abs().max().item()
        assert err < 3e-2, f"request {r}: max error {err}"


def run(q, k, v, base, ctx, splits, bufs=None):
    b, h, d = q.shape
    chunk = triton.cdiv(triton.cdiv(ctx, splits), 64) * 64
    if bufs is None:
        bufs = (torch.empty(b * splits * h, d, device="cuda", dtype=torch.float32),
                torch.empty(b * splits * h, device="cuda", dtype=torch.float32),
                torch.empty(b, h, d, device="cuda", dtype=torch.bfloat16))
    out, lse, final = bufs
    _stage1[(b, splits)](q, k, v, out, lse, base, ctx, chunk, d ** -0.5,
                         H=h, D=d, BLOCK_N=64, SPLITS=splits, ROTATE=ROTATED, num_warps=8,
                         num_stages=2)
    _stage2[(b, h)](out, lse, final, H=h, D=d, SPLITS=splits)
    return final


def time_layer(h, d, ctx, b, shared, splits):
    copies = 1 if shared else b
    layers = [(torch.empty(copies * ctx, d, device="cuda", dtype=KV_DTYPE),
               torch.empty(copies * ctx, d, device="cuda", dtype=KV_DTYPE))
              for _ in range(LAYERS)]
    for k, v in layers:
        if KV_DTYPE == torch.bfloat16:
            k.normal_()
            v.normal_()
        else:
            k.view(torch.uint8).random_(0, 120)
            v.view(torch.uint8).random_(0, 120)
    q = torch.randn(b, h, d, device="cuda", dtype=torch.bfloat16)
    base = (torch.zeros(b, device="cuda", dtype=torch.int32) if shared
            else torch.arange(b, device="cuda", dtype=torch.int32) * ctx)
    bufs = (torch.empty(b * splits * h, d, device="cuda", dtype=torch.float32),
            torch.empty(b * splits * h, device="cuda", dtype=torch.float32),
            torch.empty(b, h, d, device="cuda", dtype=torch.bfloat16))
    for k, v in layers:
        run(q, k, v, base, ctx, splits, bufs)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(ITERS):
            for k, v in layers:
                run(q, k, v, base, ctx, splits, bufs)
    times = []
    for _ in range(REPEATS):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / (ITERS * LAYERS))
    del layers, g
    torch.cuda.empty_cache()
    return statistics.median(times)


def main():
    check()
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    kv = "bf16" if KV_DTYPE == torch.bfloat16 else "fp8"
    order = "rotated" if ROTATED else "aligned"
    print("kv,order,heads,kv_heads,head_dim,context,requests,layout,splits,us_per_layer,"
          "gb_per_s_one_copy_each")
    h, d = 16, 256
    for ctx in [int(x) for x in os.environ.get("CONTEXTS", "16384,65536").split(",")]:
        for b in [int(x) for x in os.environ.get("REQUESTS", "1,8,16,32,64,128").split(",")]:
            # enough programs for the SMs: splits = ceil(2 * SMs / requests), a power of two
            splits = 1
            while b * splits < 2 * sm and splits < 64:
                splits *= 2
            for shared in (False, True):
                elt = torch.empty((), dtype=KV_DTYPE).element_size()
                if not shared and b * ctx * d * 2 * elt * LAYERS > 0.6 * torch.cuda.mem_get_info()[0]:
                    continue
                us = time_layer(h, d, ctx, b, shared, splits)
                gbs = b * ctx * d * 2 * elt / (us * 1e-6) / 1e9
                print(f"{kv},{order},{h},1,{d},{ctx},{b},{'shared' if shared else 'distinct'},{splits},"
                      f"{us:.1f},{gbs:.0f}", flush=True)


if __name__ == "__main__":
    main()
