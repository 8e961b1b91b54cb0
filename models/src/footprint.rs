//! Per-GPU weight footprint of a model under a parallel layout, the way SGLang places weights.
//!
//! Placement rules (SGLang, DeepSeek/GLM/Qwen/Llama model files):
//! - Layers are split across pipeline stages by [`pp_layer_ranges`] (SGLang's `get_pp_indices`).
//! - Attention: `q_b_proj`, `kv_b_proj`, `o_proj` (MLA) or q/o heads (GQA) are sharded by TP;
//!   MLA's down-projections `q_a_proj`, `kv_a_proj_with_mqa`, the layer norms and the DSA indexer
//!   are replicated on every rank; GQA k/v heads are split by TP, one head per rank when
//!   `num_kv_heads < tp`. With DP attention (`--enable-dp-attention`) every GPU holds the whole
//!   attention block.
//! - Routed experts: each rank holds `experts/ep` experts, each sliced `tp/ep` ways, i.e.
//!   `1/tp` of all routed weights whatever `ep` is. Shared experts and dense MLPs are sliced by TP;
//!   routers are replicated.
//! - Embeddings on the first stage (vocab sharded by TP; replicated under DP attention, where
//!   SGLang builds the embedding without TP), `lm_head` + final norm on the last stage, vocab
//!   sharded by TP.
//! - MTP (speculative decoding's draft layer): only counted when
//!   [`FootprintOptions::speculative_mtp`] is on (default off), on the last stage, sharded like a
//!   main layer plus its replicated `eh_proj` and norms; it shares embedding and head.
//! - Every module is counted in its own storage format ([`ModelSpec::module_format`]: the
//!   checkpoint's exclusion list, module by module); norms, biases and routers in BF16.
//! - A multimodal checkpoint's vision tower and projector load on every rank
//!   ([`crate::spec::VisionSpec::params_per_gpu`]), BF16 ([`ModelPart::VisionTower`]).
//! - [`ModelPart::LoadOverhead`]: what SGLang holds after loading beside the checkpoint's
//!   tensors, which its "weights" figure (free memory before minus after loading) counts:
//!   - The RoPE cos/sin cache, one FP32 tensor per GPU ([`rope_cache_bytes`]).
//!   - MLA: `deepseek_v2.py::post_load_weights` makes `w_kc` / `w_vc`, contiguous BF16 copies of
//!     `kv_b_proj` split per head, and keeps `kv_b_proj`: one more `kv_b_proj` per layer and GPU.
//!   - Routed experts SGLang post-processes after loading (NVFP4's block-scale swizzle, INT4
//!     W4A16's Marlin repack): the caching allocator's holes, from replaying the load sequence
//!     with the stage's tensor shapes ([`crate::load_replay`]; it reproduces the H200 replays
//!     of `probe/bench/*_load_replay.py` to the byte). NVFP4: `create_weights` frees a
//!     zero-padded `swizzle_blockscale` temporary that the next tensor fills, and processing
//!     deletes `w2_weight_scale` inside a live segment (GLM-5-NVFP4 TP8: 1.92 GiB). Marlin: the
//!     repacked weights and scales are new tensors that land in the previous layer's freed
//!     buffers, and the last buffers are only partly refilled (Kimi-K2.5 TP8: 0.61 GiB, of which
//!     0.45 GiB is what rounding and the 20 MiB segments of 1–10 MiB tensors leave anyway).
//!     Experts kept as loaded (BF16, FP8) are replayed too: only that rounding and those
//!     segment tails stay (GLM-4.7-FP8 TP8: 0.07 GiB).
//! - FP8 per-channel checkpoints also hold one FP32 scale per output channel, which TP slices
//!   with the outputs of q/k/v and gate/up but not of `o_proj` / `down_proj`, whose every scale
//!   stays on every rank ([`ModelSpec::layer_channel_scale_bytes_by_part`]; GLM-4.7-FP8 TP8:
//!   0.30 GB of `w2` scales).

use crate::error::Result;
use crate::format::KvDtype;
use crate::layout::Layout;
use crate::shard::{gpu_share, kv_head_split};
use crate::spec::{AttentionSpec, LayerAttention, ModelPart, ModelSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;

/// Choices that change what a deployment holds in GPU memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FootprintOptions {
    /// Speculative decoding with the checkpoint's MTP layer(s) (`--speculative-algorithm EAGLE`
    /// / NEXTN): the MTP weights are loaded on the last stage. Off by default.
    pub speculative_mtp: bool,
}

/// The weights one GPU holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuFootprint {
    /// Pipeline stage (0-based).
    pub stage: u32,
    /// Rank within the stage's TP group.
    pub tp_rank: u32,
    /// Main-model layers of this stage.
    pub layers: Range<u32>,
    /// Weight bytes by part on this GPU.
    pub weight_bytes_by_part: BTreeMap<ModelPart, u64>,
    /// Sum of `weight_bytes_by_part`.
    pub total_weight_bytes: u64,
}

/// What one GPU of a stage caches, by layer kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageCache {
    /// KV bytes per token of context over the stage's full-attention layers.
    pub kv_bytes_per_token: u64,
    /// KV bytes per token over its sliding-window layers (at most `window` tokens a request).
    pub sliding_kv_bytes_per_token: u64,
    /// Gated-DeltaNet state (conv + recurrent) bytes per request over its linear layers.
    pub state_bytes_per_request: u64,
}

/// The weights every GPU of a layout holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    /// The layout this footprint is for.
    pub layout: Layout,
    /// Options it was computed with.
    pub options: FootprintOptions,
    /// One entry per GPU, stage-major (`stage * tp + tp_rank` is the GPU index).
    pub per_gpu: Vec<GpuFootprint>,
}

/// Layers of each pipeline stage, as SGLang's `get_pp_indices`
/// (`python/sglang/srt/distributed/utils.py`) splits them without `SGLANG_PP_LAYER_PARTITION`:
/// `layers / pp` each, and the last `layers % pp` stages one more. With one stage, all layers.
pub fn pp_layer_ranges(num_layers: u32, pp: u32) -> Vec<Range<u32>> {
    let pp = pp.max(1);
    let (base, remainder) = (num_layers / pp, num_layers % pp);
    let mut start = 0;
    (0..pp)
        .map(|stage| {
            let n = base + u32::from(stage >= pp - remainder);
            let r = start..start + n;
            start += n;
            r
        })
        .collect()
}

/// Per-GPU footprint with default options (no MTP). Fails with `ImpossibleLayout` when
/// [`Layout::validate`] does.
pub fn footprint(spec: &ModelSpec, layout: &Layout) -> Result<Footprint> {
    footprint_with(spec, layout, FootprintOptions::default())
}

/// Per-GPU footprint of `spec` under `layout` with `options`.
pub fn footprint_with(
    spec: &ModelSpec,
    layout: &Layout,
    options: FootprintOptions,
) -> Result<Footprint> {
    layout.validate(spec)?;
    let tp = layout.tp as f64;
    let ranges = pp_layer_ranges(spec.num_layers, layout.pp);
    let last = layout.pp - 1;
    let mut per_gpu = Vec::with_capacity(layout.gpus() as usize);
    for (stage, layers) in ranges.into_iter().enumerate() {
        let stage = stage as u32;
        // Every rank of a stage holds the same amount; compute once, clone per rank. Each
        // module is counted in its own format (the checkpoint's exclusions, module by module).
        let share = |shard, base| gpu_share(spec, layout, shard, base);
        let mut part_bytes: BTreeMap<ModelPart, f64> = BTreeMap::new();
        // a GPU holds 1/ep of the routed experts, and every output channel of each
        let row_share = |base| match base {
            ModelPart::RoutedExperts => 1.0 / layout.ep.max(1) as f64,
            _ => 1.0,
        };
        for l in layers.clone() {
            spec.layer_bytes_by_part(l, share, &mut part_bytes);
            spec.layer_channel_scale_bytes_by_part(l, share, row_share, &mut part_bytes);
        }
        let mut add = |part, params: f64| {
            if params > 0.0 {
                *part_bytes.entry(part).or_default() +=
                    params * spec.format_of(part).bytes_per_value();
            }
        };
        if stage == 0 {
            let emb = spec.embedding_params() as f64;
            add(
                ModelPart::Embeddings,
                if layout.dp_attention { emb } else { emb / tp },
            );
        }
        if let Some(v) = &spec.vision {
            add(
                ModelPart::VisionTower,
                v.params_per_gpu(
                    if layout.dp_attention { 1 } else { layout.tp },
                    spec.hidden_size,
                ) as f64,
            );
        }
        // bytes, not parameters: BF16 is 2 bytes a value
        add(
            ModelPart::LoadOverhead,
            load_overhead_bytes(spec, layout, layers.clone(), stage == 0, stage == last) / 2.0,
        );
        if stage == last {
            let h = spec.hidden_size as f64;
            add(
                ModelPart::LmHead,
                (spec.lm_head_params() as f64 - h) / tp + h,
            );
            if options.speculative_mtp {
                for l in spec.num_layers..spec.num_layers + spec.num_mtp_layers {
                    spec.layer_bytes_by_part(l, share, &mut part_bytes);
                    spec.layer_channel_scale_bytes_by_part(l, share, row_share, &mut part_bytes);
                }
            }
        }
        let bytes: BTreeMap<ModelPart, u64> = part_bytes
            .into_iter()
            .filter(|(_, b)| *b > 0.0)
            .map(|(p, b)| (p, b.round() as u64))
            .collect();
        let total = bytes.values().sum();
        for tp_rank in 0..layout.tp {
            per_gpu.push(GpuFootprint {
                stage,
                tp_rank,
                layers: layers.clone(),
                weight_bytes_by_part: bytes.clone(),
                total_weight_bytes: total,
            });
        }
    }
    Ok(Footprint {
        layout: *layout,
        options,
        per_gpu,
    })
}

/// Bytes of MLA's `w_kc` + `w_vc` (BF16 copies of `kv_b_proj`) per layer on one GPU of
/// `layout`; 0 for GQA.
pub fn mla_absorbed_copy_bytes_per_layer(spec: &ModelSpec, layout: &Layout) -> f64 {
    let Some(d) = spec.attention.mla_dims() else {
        return 0.0;
    };
    let split = if layout.dp_attention {
        1
    } else {
        layout.tp.max(1)
    };
    let heads = d.heads as f64 / split as f64;
    heads * d.kv_lora_rank as f64 * (d.nope + d.v) as f64 * 2.0
}

/// Bytes of the RoPE cos/sin cache every GPU builds while the model is constructed: one
/// `[positions, rotary_dim]` FP32 tensor (cos and sin halves; SGLang keeps it FP32 on CUDA,
/// `rotary_embedding.py`), `positions` being `max_position_embeddings` (YaRN's
/// original × factor, the same number for DeepSeek-V3 and Kimi). `get_rope` caches the
/// instance, so all layers share it: 67 MB for Kimi-K2.5 (262,144 × 64), 52 MB for GLM-4.7
/// (202,752 × 64: half its 128-dim heads).
pub fn rope_cache_bytes(spec: &ModelSpec) -> f64 {
    let rotary = match spec.attention {
        AttentionSpec::Mla {
            qk_rope_head_dim, ..
        } => qk_rope_head_dim,
        AttentionSpec::Gqa {
            head_dim,
            rotary_dim,
            ..
        } => rotary_dim.unwrap_or(head_dim),
    };
    spec.max_context_tokens as f64 * rotary as f64 * 4.0
}

/// Bytes SGLang holds beside the checkpoint's tensors after loading `layers` on one GPU of
/// `layout` ([`ModelPart::LoadOverhead`], see the module docs); `first` / `last`: the stage
/// holds the embedding / the head.
pub fn load_overhead_bytes(
    spec: &ModelSpec,
    layout: &Layout,
    layers: Range<u32>,
    first: bool,
    last: bool,
) -> f64 {
    let absorbed = mla_absorbed_copy_bytes_per_layer(spec, layout) * layers.len() as f64;
    let holes = crate::load_replay::replay_stage(spec, layout, layers, first, last)
        .map_or(0, |r| r.hole_bytes());
    absorbed + holes as f64 + rope_cache_bytes(spec)
}

impl Footprint {
    /// Weight bytes of the fullest GPU (what decides whether the layout fits).
    pub fn max_weight_bytes_per_gpu(&self) -> u64 {
        self.per_gpu
            .iter()
            .map(|g| g.total_weight_bytes)
            .max()
            .unwrap_or(0)
    }

    /// Main-model layers of the stage with the most layers.
    pub fn max_layers_per_stage(&self) -> u32 {
        self.per_gpu
            .iter()
            .map(|g| g.layers.end - g.layers.start)
            .max()
            .unwrap_or(0)
    }

    /// KV-cache bytes one token occupies in one softmax-attention layer on one GPU: MLA's latent
    /// is replicated on every TP rank; GQA heads are split by TP (one head per rank, i.e.
    /// replicated, when `num_kv_heads < tp`). Under DP attention each GPU caches its own requests
    /// with all heads ([`kv_head_split`]).
    pub fn kv_bytes_per_token_per_layer_per_gpu(&self, spec: &ModelSpec, dtype: KvDtype) -> u64 {
        spec.kv_bytes_per_token_per_layer(dtype) / kv_head_split(spec, &self.layout) as u64
    }

    /// The main-model layers of each pipeline stage, stage by stage.
    pub fn stage_layers(&self) -> Vec<Range<u32>> {
        self.per_gpu
            .iter()
            .filter(|g| g.tp_rank == 0)
            .map(|g| g.layers.clone())
            .collect()
    }

    /// The cache one stage's GPU holds for `layers` ([`StageCache`]).
    pub fn stage_cache(&self, spec: &ModelSpec, dtype: KvDtype, layers: Range<u32>) -> StageCache {
        let per_layer = self.kv_bytes_per_token_per_layer_per_gpu(spec, dtype);
        let of = |k| spec.num_layers_of_kind_in(k, layers.clone()) as u64;
        let attn_tp = if self.layout.dp_attention {
            1
        } else {
            self.layout.tp
        };
        StageCache {
            kv_bytes_per_token: of(LayerAttention::Full) * per_layer,
            sliding_kv_bytes_per_token: of(LayerAttention::Sliding) * per_layer,
            state_bytes_per_request: spec.linear_state_bytes_per_request_in(attn_tp, layers),
        }
    }

    /// [`Self::stage_cache`] of the stage with the largest of each figure.
    pub fn fullest_stage_cache(&self, spec: &ModelSpec, dtype: KvDtype) -> StageCache {
        self.stage_layers()
            .into_iter()
            .map(|l| self.stage_cache(spec, dtype, l))
            .fold(StageCache::default(), |a, c| StageCache {
                kv_bytes_per_token: a.kv_bytes_per_token.max(c.kv_bytes_per_token),
                sliding_kv_bytes_per_token: a
                    .sliding_kv_bytes_per_token
                    .max(c.sliding_kv_bytes_per_token),
                state_bytes_per_request: a.state_bytes_per_request.max(c.state_bytes_per_request),
            })
    }

    /// KV-cache bytes one token of context occupies on one GPU of the fullest stage, over its
    /// full-attention layers ([`Self::kv_bytes_per_token_per_layer_per_gpu`] each; sliding and
    /// linear layers: [`Self::fullest_stage_cache`]).
    pub fn kv_bytes_per_token_per_gpu(&self, spec: &ModelSpec, dtype: KvDtype) -> u64 {
        self.fullest_stage_cache(spec, dtype).kv_bytes_per_token
    }

    /// DSA index-key cache bytes per token on one GPU of the stage with the most indexer layers
    /// (replicated across TP like the MLA latent); 0 without an indexer. Add it to
    /// [`Self::kv_bytes_per_token_per_gpu`] when sizing the KV pool.
    pub fn indexer_cache_bytes_per_token_per_gpu(&self, spec: &ModelSpec) -> u64 {
        let fullest = self
            .per_gpu
            .iter()
            .map(|g| spec.num_indexer_layers_in(g.layers.clone()))
            .max()
            .unwrap_or(0);
        fullest as u64 * spec.indexer_cache_bytes_per_token_per_layer()
    }
}
