#!/usr/bin/env python3
"""Distil SGLang's DSA (NSA) decode attention module timings on HGX boxes from NVIDIA
aiconfigurator's performance database into data/observations/dsa-decode-module-sglang-0.5.14.csv,
read by sim/src/cost/dsa_module_table.rs.

Source: ai-dynamo/aiconfigurator HEAD 095f58a51c4c (2026-08-21; the B200 table last changed in
a9e012ac1cab), `aic-core/src/aiconfigurator_core/systems/data/{b200_sxm,h200_sxm,h100_sxm}/
sparse_attention/sglang/0.5.14/dsa_generation_module_perf.parquet`: SGLang 0.5.14's own
`self_attn.forward` of one GLM-5 decoder layer (q_a/kv_a, norms, q_b, the absorbed bmm, the DSA
indexer with `fp8_paged_mqa_logits` and its top-k, the sparse MLA decode kernel, the v bmm,
o_proj; not the layer's input RMSNorm, not the all-reduce), one query token a request, replayed in
a CUDA graph (collector/sglang/collect_mla_module.py, collector/helper.py::benchmark_with_power).
`step` is the cached tokens of every request, `latency` ms.

Kept, model `glm5`: GLM-5's attention shape (64 heads, q_lora 2048, kv_lora 512, qk 192 + 64, v
256, index 32 x 128, top-k 2048; GLM-5.2 has the same):
  part `full`: the module with its indexer: zai-org/GLM-5-FP8 (fp8 weights), zai-org/GLM-5 (bf16
    weights; on B200, where it was not run, nvidia/GLM-5.2-NVFP4, whose attention is bf16);
  part `skip`: the module without the indexer (op dsa_generation_module_skip_indexer, what a
    layer that reuses the previous layer's top-k runs): zai-org/GLM-5.2-FP8 (fp8 weights),
    zai-org/GLM-5.2 (bf16);
  backend: the sparse decode kernel (`trtllm` on B200; `flashmla_kv` with an fp8 cache and `fa3`
    with a bf16 cache on Hopper), kv_dtype `fp8` or `bf16`, heads_per_gpu = 64 / tp;
  batches up to the collector's graph capture (512 requests on B200, 256 on Hopper): the rows
    above it time the eager module (~1.3 ms at any context, host-bound; H200 full module at 512
    requests 1,315 us against 102 at 256), which shardwise prices from its launches instead;
  a point measured more than once (the H100 table repeats its rows) is read as the median.
Model `deepseek-v3.2`: DeepSeek-V3.2's shape (128 heads, q_lora 1536, kv_lora 512, qk 128 + 64,
v 128, index 64 x 128, top-k 2048), part `full` only (no skip-indexer rows were run for it; every
one of its layers runs its own indexer), fp8 block weights, heads_per_gpu = 128 / tp.

Usage: scripts/distill-dsa-decode-module.py AIC_REPO_ROOT > data/observations/dsa-decode-module-sglang-0.5.14.csv
(needs pandas with pyarrow to read the parquet files).
"""
import sys
from pathlib import Path

import pandas as pd

GPUS = {"b200_sxm": "b200", "h200_sxm": "h200", "h100_sxm": "h100-sxm"}
FULL = {"fp8": ["zai-org/GLM-5-FP8"], "bf16": ["zai-org/GLM-5", "nvidia/GLM-5.2-NVFP4"]}
SKIP = {"fp8": ["zai-org/GLM-5.2-FP8"], "bf16": ["zai-org/GLM-5.2"]}
# (model column, query heads, the parts and their checkpoints)
MODELS = [
    ("glm5", 64, (("full", FULL), ("skip", SKIP))),
    ("deepseek-v3.2", 128, (("full", {"fp8": ["deepseek-ai/DeepSeek-V3.2"]}),)),
]
KV = {"fp8": "fp8", "bfloat16": "bf16"}
MAX_BATCH = {"b200_sxm": 512, "h200_sxm": 256, "h100_sxm": 256}


def backend(kernel_source: str) -> str:
    for b in ("trtllm", "flashmla_kv", "fa3"):
        if kernel_source.endswith(b):
            return b
    raise ValueError(kernel_source)


def main(root: Path) -> None:
    print("gpu,model,weights,kv_dtype,backend,part,heads_per_gpu,batch,cached_tokens,time_us")
    base = root / "aic-core/src/aiconfigurator_core/systems/data"
    for system, gpu in GPUS.items():
        d = pd.read_parquet(
            base / system / "sparse_attention/sglang/0.5.14/dsa_generation_module_perf.parquet"
        )
        d = d[d.batch_size <= MAX_BATCH[system]]
        for model, q_heads, parts in MODELS:
            for part, models in parts:
                for weights, names in models.items():
                    # the first model of the list the table holds
                    name = next((n for n in names if (d.model == n).any()), None)
                    if name is None:
                        continue
                    x = d[d.model == name].copy()
                    x["backend"] = x.kernel_source.map(backend)
                    x["kv"] = x.kv_cache_dtype.map(KV)
                    x["heads"] = q_heads // x.tp_size
                    keys = ["kv", "backend", "heads", "batch_size", "step"]
                    for (kv, be, heads, b, step), ms in x.groupby(keys).latency.median().sort_index().items():
                        print(f"{gpu},{model},{weights},{kv},{be},{part},{heads},{b},{step},{ms * 1000:.2f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
