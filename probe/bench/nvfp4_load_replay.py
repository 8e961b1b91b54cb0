#!/usr/bin/env python3
"""Replay SGLang's NVFP4 MoE weight-load allocation sequence through PyTorch's caching allocator.

Why: SGLang reports a rank's weight memory as free-before-loading minus free-after-loading
(`model_runner.py`, `Load weight end ... mem usage`), so memory that the caching allocator keeps
but no live tensor uses ("holes") counts as weights. shardwise's memory plan models the NVFP4 MoE
load overhead from the tensor shapes; this script measures it with the real shapes on a GPU.

Sequence (SGLang, `python/sglang/srt/layers/quantization/modelopt_quant.py::
ModelOptNvFp4FusedMoEMethod`, commit faeb96856c44 of sgl-project/sglang; variant
"swizzle_at_create" below):
  construction, layer by layer: the layer's attention / dense weights, then create_weights:
    w13_weight E x 2I x H/2 (u8), w2_weight E x H x I/2 (u8),
    w13_weight_scale E x 2I x H/16 (fp8),
    w13_blockscale_swizzled = swizzle_blockscale(w13_weight_scale) E x ru(2I,128) x ru(H/16,4)
      ("only for shapes": a zero-padded temporary, then the permuted contiguous result),
    w2_weight_scale E x H x I/16 (fp8),
    w2_blockscale_swizzled = swizzle_blockscale(w2_weight_scale) E x ru(H,128) x ru(I/16,4),
    w13/w2 weight_scale_2 and input scales (fp32, per expert)
  loading: copies into those tensors (no allocation)
  process_weights_after_loading, layer by layer (cutlass path): swizzle_blockscale (a zero
    padded copy, then a permuted contiguous copy), copy into the swizzled buffer, free the
    temporaries, delete the unswizzled scale; w13 first, then w2; small alpha tensors.
  then torch.cuda.empty_cache() and the free memory is read (as get_available_gpu_memory does).

Variants (VARIANTS below) differ in how the swizzled buffers come to be.
Output: JSON on stdout, per model and variant: free-before minus free-after,
the sum of live tensors, the difference (hole), per MoE layer and total, all in bytes.
Shapes are per GPU at TP8 (no EP): every rank holds all experts, intermediate sliced by 8.
"""
import json
import sys

import torch

TP = 8
# preallocated: create_weights allocates the swizzled buffers with torch.empty;
# swizzle_at_create: create_weights fills them through swizzle_blockscale (a zero-padded
#   temporary, freed during construction);
# keep_scales: the mid-2025 path (swizzled copies made at processing, unswizzled scales kept).
VARIANTS = ("swizzle_at_create", "preallocated", "keep_scales")
MODELS = {
    # data/hf-configs/GLM-5-NVFP4.json: 78 layers, first 3 dense, 256 experts, I 2048, H 6144
    "glm-5-nvfp4": dict(
        hidden=6144, layers=78, dense=3, experts=256, inter=2048, dense_inter=12288,
        heads=64, q_lora=2048, kv_lora=512, nope=192, rope=64, v=256, index_heads=32,
        index_dim=128, shared=1,
    ),
    # data/hf-configs/Kimi-K2-Instruct.json (nvidia/Kimi-K2-Thinking-NVFP4 shares it)
    "kimi-k2-thinking-nvfp4": dict(
        hidden=7168, layers=61, dense=1, experts=384, inter=2048, dense_inter=18432,
        heads=64, q_lora=1536, kv_lora=512, nope=128, rope=64, v=128, index_heads=0,
        index_dim=0, shared=1,
    ),
}


def ru(x, m):
    return (x + m - 1) // m * m


def empty(shape, dtype):
    return torch.empty(shape, dtype=dtype, device="cuda")


def attention_tensors(c):
    """The BF16 attention block of one layer on one TP rank (MLA: down projections and the
    indexer replicated, the rest sharded), plus w_kc / w_vc (copies of kv_b_proj)."""
    h, heads = c["hidden"], c["heads"] // TP
    bf = torch.bfloat16
    t = [
        empty((c["q_lora"] + c["kv_lora"] + c["rope"], h), bf),  # fused q_a + kv_a (replicated)
        empty((heads * (c["nope"] + c["rope"]), c["q_lora"]), bf),  # q_b_proj
        empty((heads * (c["nope"] + c["v"]), c["kv_lora"]), bf),  # kv_b_proj
        empty((h, heads * c["v"]), bf),  # o_proj
    ]
    # deepseek_v2.py::post_load_weights: w_kc / w_vc, contiguous copies of kv_b_proj
    t.append(empty((heads, c["nope"], c["kv_lora"]), bf))
    t.append(empty((heads, c["kv_lora"], c["v"]), bf))
    if c["index_heads"]:
        t.append(empty((c["index_heads"] * c["index_dim"], c["q_lora"]), bf))  # wq_b
        t.append(empty((c["index_dim"], h), bf))  # wk
    return t


def shared_expert_tensors(c, inter):
    bf = torch.bfloat16
    i = inter // TP
    return [empty((2 * i, c["hidden"]), bf), empty((c["hidden"], i), bf)]


def create_moe(c, variant):
    """create_weights of one MoE layer, in SGLang's order."""
    e, h, i = c["experts"], c["hidden"], c["inter"] // TP
    u8, f8, f32 = torch.uint8, torch.float8_e4m3fn, torch.float32
    layer = {
        "w13_weight": empty((e, 2 * i, h // 2), u8),
        "w2_weight": empty((e, h, i // 2), u8),
        "w13_weight_scale": empty((e, 2 * i, h // 16), f8),
    }
    if variant == "swizzle_at_create":
        # "Only use `swizzle_blockscale` for shapes": the persistent buffer is built right after
        # its scale, through a zero-padded temporary that is freed at once; the next tensor
        # (w2_weight_scale) then lands in that freed block.
        layer["w13_blockscale_swizzled"] = swizzle(layer["w13_weight_scale"])
    layer["w2_weight_scale"] = empty((e, h, i // 16), f8)
    if variant == "swizzle_at_create":
        layer["w2_blockscale_swizzled"] = swizzle(layer["w2_weight_scale"])
    layer["w13_weight_scale_2"] = empty((e, 2), f32)
    layer["w2_weight_scale_2"] = empty((e,), f32)
    layer["w13_input_scale"] = empty((e, 2), f32)
    layer["w2_input_scale"] = empty((e,), f32)
    if variant == "preallocated":
        layer["w13_blockscale_swizzled"] = empty((e, ru(2 * i, 128), ru(h // 16, 4)), f8)
        layer["w2_blockscale_swizzled"] = empty((e, ru(h, 128), ru(i // 16, 4)), f8)
    return layer


def swizzle(scale):
    b, m, k = scale.shape
    mp, kp = ru(m, 128), ru(k, 4)
    padded = torch.zeros((b, mp, kp), dtype=scale.dtype, device="cuda")
    padded[:b, :m, :k] = scale
    return padded.reshape(b, mp // 128, 4, 32, kp // 4, 4).permute(0, 1, 4, 3, 2, 5).contiguous()


def process(layer, variant):
    keep_scales = variant == "keep_scales"
    e = layer["w2_weight_scale_2"].shape[0]
    layer["g1_alphas"] = empty((e,), torch.float32)
    layer["w13_input_scale_quant"] = empty((e,), torch.float32)
    for w in ("w13", "w2"):
        s = swizzle(layer[f"{w}_weight_scale"])
        if keep_scales:
            layer[f"{w}_blockscale_swizzled"] = s
        else:
            del layer[f"{w}_weight_scale"]
            layer[f"{w}_blockscale_swizzled"].view(-1).copy_(s.view(-1))
            del s
    layer["g2_alphas"] = empty((e,), torch.float32)
    layer["w2_input_scale_quant"] = empty((e,), torch.float32)
    # CutlassMoEParams: per-expert strides, offsets and problem sizes (int64 / int32, tiny)
    for _ in range(6):
        layer.setdefault("_params", []).append(empty((e, 3), torch.int64))


def allocator_result(name, variant, moe_layers, used, live, per_layer):
    """The fields every replay reports: what left the GPU, what lives, the allocator's view."""
    return {
        "model": name,
        "variant": variant,
        "tp": TP,
        "moe_layers": moe_layers,
        "free_before_minus_after_bytes": used,
        "live_tensor_bytes": live,
        "allocator_reserved_bytes": torch.cuda.memory_reserved(),
        "allocator_allocated_bytes": torch.cuda.memory_allocated(),
        "hole_bytes": used - live,
        "hole_bytes_per_moe_layer": (used - live) / max(moe_layers, 1),
        "cached_not_live_after_each_layer_bytes": per_layer,
    }


def live_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def replay(name, c, variant):
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    keep = []  # every tensor that stays
    moe_layers = []
    for layer_idx in range(c["layers"]):
        keep += attention_tensors(c)
        if layer_idx < c["dense"]:
            keep += shared_expert_tensors(c, c["dense_inter"])
            continue
        keep += shared_expert_tensors(c, c["inter"] * c["shared"])
        keep.append(empty((c["experts"], c["hidden"]), torch.bfloat16))  # router (replicated)
        moe_layers.append(create_moe(c, variant))
    per_layer = []
    for layer in moe_layers:
        before = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        process(layer, variant)
        after = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        per_layer.append(after - before)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    free_after, _ = torch.cuda.mem_get_info()
    live = live_bytes(keep)
    for layer in moe_layers:
        for k, v in layer.items():
            live += live_bytes(v) if isinstance(v, list) else live_bytes([v])
    e, h, i = c["experts"], c["hidden"], c["inter"] // TP
    scales = e * 2 * i * (h // 16) + e * h * (i // 16)
    swizzled = e * ru(2 * i, 128) * ru(h // 16, 4) + e * ru(h, 128) * ru(i // 16, 4)
    used = free_before - free_after
    out = {
        **allocator_result(name, variant, len(moe_layers), used, live, per_layer),
        "unswizzled_scale_bytes_per_layer": scales,
        "swizzled_buffer_bytes_per_layer": swizzled,
        "w2_weight_scale_bytes_per_layer": e * h * (i // 16),
        "w13_weight_scale_bytes_per_layer": e * 2 * i * (h // 16),
    }
    del moe_layers, keep
    torch.cuda.empty_cache()
    return out


def main():
    props = torch.cuda.get_device_properties(0)
    results = []
    for name, c in MODELS.items():
        for variant in VARIANTS:
            results.append(replay(name, c, variant))
            print(f"{name} {variant}: hole {results[-1]['hole_bytes'] / 2**30:.3f} GiB",
                  file=sys.stderr)
    json.dump({
        "what": "SGLang NVFP4 MoE load sequence replayed through PyTorch's caching allocator, TP8 shapes",
        "script": "probe/bench/nvfp4_load_replay.py",
        "gpu": props.name,
        "gpu_memory_bytes": props.total_memory,
        "torch": torch.__version__,
        "results": results,
    }, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
