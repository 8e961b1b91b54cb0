#!/usr/bin/env python3
"""Replay SGLang's compressed-tensors W4A16 (Marlin) MoE load sequence through PyTorch's caching
allocator, with Kimi-K2.5's TP8 shapes, and measure what SGLang's "weights" figure counts beyond
the live tensors (allocator holes). Sibling of `nvfp4_load_replay.py` (same MLA block helpers).

Sequence (sgl-project/sglang, `python/sglang/srt/layers/quantization/compressed_tensors/
compressed_tensors_moe.py::CompressedTensorsWNA16MoEMethod`, commit 014a324bde88):
  create_weights, layer by layer (inside the model's construction): w13_weight_packed
    E x H/8 x 2I (int32), w2_weight_packed E x I/8 x H (int32), w13_weight_scale E x H/g x 2I and
    w2_weight_scale E x I/g x H (bf16, torch.ones), w2/w13_weight_shape E x 2, then four g_idx
    tensors: w13_weight_g_idx E x H, w2_weight_g_idx E x I, w13_g_idx_sort_indices E x H,
    w2_g_idx_sort_indices E x I (int32, never loaded: the checkpoint has no act-order).
  loading: host-to-device copies into those tensors (no allocation).
  process_weights_after_loading, MoE layer by MoE layer (model loader, after all weights):
    without act-order the four g_idx tensors are replaced by E x 0 tensors (freed);
    gptq_marlin_moe_repack (`gptq.py`): a new E x K/16 x 2N int32 output, one
      `gptq_marlin_repack` temporary per expert copied into it; then `replace_parameter`
      (`quantization/utils.py`): the old one is an nn.Parameter, the new one a plain Tensor, so the
      type check fails and the new tensor is registered, the old one freed; w13 then w2;
    marlin_moe_permute_scales (`marlin_utils.py`): a new output like the scales, one permuted
      temporary per expert; replaced the same way; w13 then w2.
  then torch.cuda.empty_cache() and the free memory is read (get_available_gpu_memory).

Variants: "register_new" is the sequence above; "inplace" is what replace_parameter would do if
its type check passed (copy into the old buffer, free the new one): no hole from the repack.
Output: JSON on stdout, per variant: free-before minus free-after, live tensor bytes, the hole,
and the per-layer tensor sizes the analytic model in `models/src/footprint.rs` uses.
"""
import json
import sys

import torch

from nvfp4_load_replay import (
    TP,
    allocator_result,
    attention_tensors,
    empty,
    live_bytes,
    shared_expert_tensors,
)

VARIANTS = ("register_new", "inplace")
# data/hf-configs/Kimi-K2.5.json (text_config): the Kimi-K2 language model, routed experts
# INT4 group 32; vision tower MoonViT 27 x 1152 (MLP 4304), projector 4 patches merged.
KIMI_K25 = dict(
    hidden=7168, layers=61, dense=1, experts=384, inter=2048, dense_inter=18432,
    heads=64, q_lora=1536, kv_lora=512, nope=128, rope=64, v=128, index_heads=0,
    index_dim=0, shared=1, vocab=163840, group=32, bits=4,
    vision=dict(layers=27, hidden=1152, inter=4304, patch=14, positions=4096, merge=4),
)
SCALE_PERM_LEN = 64  # marlin_utils.get_scale_perms: 8 x 8 permutation of the scale columns


def vision_tensors(v, text_hidden):
    """MoonViT + projector on one TP rank: attention split by TP, MLP and projector replicated."""
    bf = torch.bfloat16
    h, i = v["hidden"], v["inter"]
    t = [empty((3 * v["patch"] ** 2, h), bf), empty((v["positions"], h), bf)]
    for _ in range(v["layers"]):
        t += [empty((3 * h // TP, h), bf), empty((h, h // TP), bf)]
        t += [empty((i, h), bf), empty((h, i), bf), empty((4, h), bf)]
    merged = h * v["merge"]
    t += [empty((merged, merged), bf), empty((text_hidden, merged), bf)]
    return t


def create_wna16(c):
    """CompressedTensorsWNA16MoEMethod.create_weights on one rank, in its order."""
    e, h, i = c["experts"], c["hidden"], c["inter"] // TP
    pack, g = 32 // c["bits"], c["group"]
    i32, bf = torch.int32, torch.bfloat16
    return {
        "w13_weight_packed": empty((e, h // pack, 2 * i), i32),
        "w2_weight_packed": empty((e, i // pack, h), i32),
        "w13_weight_scale": torch.ones((e, h // g, 2 * i), dtype=bf, device="cuda"),
        "w2_weight_scale": torch.ones((e, i // g, h), dtype=bf, device="cuda"),
        "w2_weight_shape": empty((e, 2), bf),
        "w13_weight_shape": empty((e, 2), bf),
        "w13_weight_g_idx": empty((e, h), i32),
        "w2_weight_g_idx": empty((e, i), i32),
        "w13_g_idx_sort_indices": empty((e, h), i32),
        "w2_g_idx_sort_indices": empty((e, i), i32),
    }


def replace(layer, name, new, variant):
    if variant == "inplace":
        layer[name].view(-1).copy_(new.view(-1))  # the repacked shape differs, the bytes do not
    else:
        layer[name] = new  # the old tensor's last reference goes


def repack(layer, name, variant):
    """gptq_marlin_moe_repack: new output, one per-expert temporary copied in."""
    old = layer[name]
    e, k_packed, n = old.shape
    out = empty((e, k_packed * 8 // 16, n * 2), torch.int32)
    for x in range(e):
        tmp = empty(out.shape[1:], torch.int32)
        out[x].copy_(tmp)
        del tmp
    replace(layer, name, out, variant)


def permute_scales(layer, name, perm, variant):
    """marlin_moe_permute_scales: new output, one permuted (gathered) temporary per expert."""
    s = layer[name]
    out = torch.empty_like(s)
    for x in range(s.shape[0]):
        tmp = s[x].reshape(-1, SCALE_PERM_LEN)[:, perm]
        out[x].copy_(tmp.reshape(s.shape[1:]))
        del tmp
    replace(layer, name, out, variant)


def process_wna16(layer, variant, perm):
    e = layer["w13_weight_g_idx"].shape[0]
    for name in ("w13_weight_g_idx", "w2_weight_g_idx", "w13_g_idx_sort_indices",
                 "w2_g_idx_sort_indices"):
        layer[name] = empty((e, 0), torch.int32)
    repack(layer, "w13_weight_packed", variant)
    repack(layer, "w2_weight_packed", variant)
    permute_scales(layer, "w13_weight_scale", perm, variant)
    permute_scales(layer, "w2_weight_scale", perm, variant)


def warm_up(perm):
    """Launch each kernel the replay uses once, so that the memory CUDA takes to load them is
    not counted (the first replay of a process showed 96,468,992 bytes of it)."""
    s = torch.ones((2, 64), dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(s)
    out[0].copy_(s[0].reshape(-1, SCALE_PERM_LEN)[:, perm].reshape(s.shape[1:]))
    out.view(-1).copy_(s.view(-1))
    torch.cuda.synchronize()


def replay(c, variant):
    perm = torch.tensor([i + 8 * j for i in range(8) for j in range(8)], device="cuda")
    warm_up(perm)
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    bf = torch.bfloat16
    keep = vision_tensors(c["vision"], c["hidden"])
    keep.append(empty((c["vocab"] // TP, c["hidden"]), bf))  # embed_tokens
    moe_layers = []
    for layer_idx in range(c["layers"]):
        keep += attention_tensors(c)
        if layer_idx < c["dense"]:
            keep += shared_expert_tensors(c, c["dense_inter"])
            continue
        keep.append(empty((c["experts"], c["hidden"]), bf))  # router (replicated)
        moe_layers.append(create_wna16(c))
        keep += shared_expert_tensors(c, c["inter"] * c["shared"])
    keep.append(empty((c["vocab"] // TP, c["hidden"]), bf))  # lm_head
    per_layer = []
    for layer in moe_layers:
        process_wna16(layer, variant, perm)
        per_layer.append(torch.cuda.memory_reserved() - torch.cuda.memory_allocated())
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    free_after, _ = torch.cuda.mem_get_info()
    live = live_bytes(keep) + sum(live_bytes(list(l.values())) for l in moe_layers)
    e, h, i = c["experts"], c["hidden"], c["inter"] // TP
    used = free_before - free_after
    out = {
        **allocator_result("kimi-k2.5", variant, len(moe_layers), used, live, per_layer),
        "w13_packed_bytes_per_layer": e * h * 2 * i // 2,
        "w2_packed_bytes_per_layer": e * i * h // 2,
        "w13_scale_bytes_per_layer": e * (h // c["group"]) * 2 * i * 2,
        "w2_scale_bytes_per_layer": e * (i // c["group"]) * h * 2,
        "g_idx_bytes_per_layer": 2 * e * (h + i) * 4,
    }
    del moe_layers, keep
    torch.cuda.empty_cache()
    return out


def main():
    props = torch.cuda.get_device_properties(0)
    results = []
    for variant in VARIANTS:
        results.append(replay(KIMI_K25, variant))
        print(f"kimi-k2.5 {variant}: hole {results[-1]['hole_bytes'] / 2**30:.3f} GiB",
              file=sys.stderr)
    json.dump({
        "what": "SGLang compressed-tensors W4A16 Marlin MoE load sequence replayed through "
                "PyTorch's caching allocator, Kimi-K2.5 TP8 shapes",
        "script": "probe/bench/marlin_moe_load_replay.py",
        "gpu": props.name,
        "gpu_memory_bytes": props.total_memory,
        "torch": torch.__version__,
        "results": results,
    }, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
