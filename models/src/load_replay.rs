//! SGLang's weight-load sequence on one GPU, replayed through PyTorch's caching allocator
//! ([`crate::alloc_model`]), for MoE checkpoints: those whose routed experts SGLang repacks after
//! loading, and those it keeps as loaded (BF16, FP8), where only rounding and segment tails stay.
//! SGLang's "weights" figure is free memory before loading minus after (`model_runner.py`), so
//! what the allocator keeps reserved beside live tensors (holes) counts as weights; this is how
//! much ([`LoadReplay::hole_bytes`]), from the tensor shapes.
//!
//! Construction, in module order (`deepseek_v2.py` / `kimi_k25.py`): the vision tower and
//! projector, the embedding (first stage), then layer by layer the attention block (MLA: fused
//! `q_a`+`kv_a`, `q_b`, `kv_b`, `o`, the DSA indexer's `wq_b` / `wk`; GQA: `qkv`, `o`) with MLA's
//! `w_kc` / `w_vc` (made by `post_load_weights` before the MoE processing; ≤ 1 MiB each, so they
//! fall in the small pool either way), the dense MLP, or the router, the routed experts'
//! `create_weights` and the shared experts; the head (last stage). Then the MoE method's
//! `process_weights_after_loading`, MoE layer by MoE layer, and `empty_cache`.
//!
//! Routed-expert methods replayed:
//! - NVFP4 (`modelopt_quant.py::ModelOptNvFp4FusedMoEMethod`, cutlass path): `create_weights`
//!   builds each swizzled block-scale buffer through `swizzle_blockscale` (a zero-padded
//!   temporary, then the permuted copy); processing swizzles each scale again, deletes the
//!   unswizzled one and adds small per-expert tensors.
//! - INT4 W4A16 on Marlin (`compressed_tensors_moe.py::CompressedTensorsWNA16MoEMethod`):
//!   `create_weights` also allocates four act-order `g_idx` tensors the checkpoint does not hold;
//!   processing replaces them with empty ones, then `gptq_marlin_moe_repack` and
//!   `marlin_moe_permute_scales` each build a new tensor (one per-expert temporary at a time) and
//!   `replace_parameter` registers it: the old one is an `nn.Parameter`, the new one a plain
//!   tensor, so its same-type check fails and the old buffer is freed rather than reused.
//!
//! Per-expert temporaries are replayed once per tensor: each is freed before the next, so the
//! allocator returns to the same state after every one. Checked against the H200 replays
//! (`probe/profiles/nvfp4-load-replay-h200.json`, `marlin-moe-load-replay-h200.json`) in
//! `models/tests/load_replay.rs`.

use crate::alloc_model::{Allocation, CachingAllocator};
use crate::format::WeightFormat;
use crate::layout::Layout;
use crate::shard::gpu_share;
use crate::spec::{ModelPart, ModelSpec};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, OnceLock};

/// What a replayed load leaves on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadReplay {
    /// Bytes the allocator holds after `empty_cache` (what SGLang's figure sees).
    pub reserved_bytes: u64,
    /// Bytes of the tensors that stay.
    pub live_bytes: u64,
}

impl LoadReplay {
    /// Reserved minus live: the allocator's holes and rounding.
    pub fn hole_bytes(&self) -> u64 {
        self.reserved_bytes.saturating_sub(self.live_bytes)
    }
}

/// How SGLang builds and post-processes the routed experts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum MoePath {
    Nvfp4,
    MarlinInt4 {
        group: u64,
    },
    /// Loaded into the buffers `create_weights` made and kept as they are (BF16, FP8 with
    /// per-channel or block scales): only the allocator's rounding and segments leave room.
    Plain {
        format: WeightFormat,
    },
}

/// A tensor: its block and its bytes.
type Tensor = (Option<Allocation>, u64);

#[derive(Default)]
struct Replay {
    alloc: CachingAllocator,
    live: Vec<Tensor>,
}

impl Replay {
    fn new_tensor(&mut self, bytes: u64) -> Tensor {
        (self.alloc.malloc(bytes), bytes)
    }
    /// A tensor that stays.
    fn keep(&mut self, bytes: u64) {
        let t = self.new_tensor(bytes);
        self.live.push(t);
    }
    /// A tensor freed at once.
    fn temp(&mut self, bytes: u64) {
        let t = self.alloc.malloc(bytes);
        self.alloc.free(t);
    }
    fn drop_tensor(&mut self, t: Tensor) {
        self.alloc.free(t.0);
    }
    /// `swizzle_blockscale` of a `b × m × k` fp8 scale: zero-padded temporary, permuted copy.
    fn swizzle(&mut self, b: u64, m: u64, k: u64) -> Tensor {
        let bytes = b * m.div_ceil(128) * 128 * k.div_ceil(4) * 4;
        let padded = self.new_tensor(bytes);
        let out = self.new_tensor(bytes);
        self.drop_tensor(padded);
        out
    }
}

fn bytes(params: u64, f: WeightFormat) -> u64 {
    (params as f64 * f.bytes_per_value()).round() as u64
}

/// The routed experts of one GPU: (experts, intermediate per partition).
fn local_experts(spec: &ModelSpec, layout: &Layout) -> (u64, u64) {
    let m = spec.moe.expect("only called for MoE layers");
    let ep = layout.ep.max(1) as u64;
    let tp = layout.tp.max(1) as u64;
    (
        m.num_routed_experts as u64 / ep,
        m.expert_intermediate_size * ep / tp,
    )
}

/// The attention block's tensors of `layer` on one GPU, in construction order: its projections
/// as [`ModelSpec::layer_modules`] lists them, per GPU ([`gpu_share`]), with the ones SGLang
/// builds as one fused tensor merged; MLA's `w_kc` / `w_vc` BF16 copies; the DSA indexer's.
fn attention(r: &mut Replay, spec: &ModelSpec, layout: &Layout, layer: u32) {
    let f = spec.formats.attention;
    let (mut attn, mut indexer) = (Vec::<(&str, f64)>::new(), Vec::<(&str, f64)>::new());
    for m in spec.layer_modules(layer) {
        let tensors = match m.base {
            ModelPart::Attention => &mut attn,
            ModelPart::Indexer => &mut indexer,
            _ => continue,
        };
        let params = m.params as f64 * gpu_share(spec, layout, m.shard, m.base);
        let into = fused_into(m.name);
        match tensors.iter_mut().find(|(name, _)| Some(*name) == into) {
            Some((_, p)) => *p += params,
            None => tensors.push((m.name, params)),
        }
    }
    for &(_, params) in &attn {
        r.keep(bytes(params.round() as u64, f));
    }
    let kv_b = attn.iter().find(|(name, _)| *name == "self_attn.kv_b_proj");
    if let (Some(&(_, kv_b)), Some(d)) = (kv_b, spec.attention.mla_dims()) {
        // `w_kc` then `w_vc`: BF16 copies of the nope and v columns of this GPU's `kv_b_proj`
        let kc = kv_b * d.nope as f64 / (d.nope + d.v) as f64;
        r.keep(kc.round() as u64 * 2);
        r.keep((kv_b - kc).round() as u64 * 2);
    }
    for &(_, params) in &indexer {
        r.keep(bytes(params.round() as u64, f));
    }
}

/// The module a projection is fused into as SGLang builds it: MLA's `kv_a_proj_with_mqa` into
/// `q_a_proj` (`fused_qkv_a_proj_with_mqa`, `deepseek_v2.py`), GQA's k and v into q
/// (`qkv_proj`, `QKVParallelLinear`); `None` for a tensor of its own.
fn fused_into(name: &str) -> Option<&'static str> {
    match name {
        "self_attn.kv_a_proj_with_mqa" => Some("self_attn.q_a_proj"),
        "self_attn.k_proj" | "self_attn.v_proj" => Some("self_attn.q_proj"),
        _ => None,
    }
}

fn mlp(r: &mut Replay, h: u64, inter_per_gpu: u64, f: WeightFormat) {
    r.keep(bytes(2 * inter_per_gpu * h, f));
    r.keep(bytes(h * inter_per_gpu, f));
}

fn create_experts(r: &mut Replay, path: MoePath, e: u64, h: u64, i: u64) -> Vec<Tensor> {
    match path {
        MoePath::Nvfp4 => {
            let mut t = vec![
                r.new_tensor(e * 2 * i * h / 2),
                r.new_tensor(e * h * i / 2),
                r.new_tensor(e * 2 * i * h / 16),
            ];
            t.push(r.swizzle(e, 2 * i, h / 16));
            t.push(r.new_tensor(e * h * i / 16));
            t.push(r.swizzle(e, h, i / 16));
            for n in [2, 1, 2, 1] {
                t.push(r.new_tensor(e * n * 4));
            }
            t
        }
        MoePath::MarlinInt4 { group } => {
            let mut t = vec![
                r.new_tensor(e * h / 8 * 2 * i * 4),
                r.new_tensor(e * i / 8 * h * 4),
                r.new_tensor(e * h / group * 2 * i * 2),
                r.new_tensor(e * i / group * h * 2),
                r.new_tensor(e * 2 * 2),
                r.new_tensor(e * 2 * 2),
            ];
            for n in [h, i, h, i] {
                t.push(r.new_tensor(e * n * 4));
            }
            t
        }
        MoePath::Plain { format } => {
            let per_value = if matches!(format, WeightFormat::Bf16) {
                2
            } else {
                1
            };
            let mut t = vec![
                r.new_tensor(e * 2 * i * h * per_value),
                r.new_tensor(e * h * i * per_value),
            ];
            match format {
                WeightFormat::Fp8 { block: 0 } => {
                    t.push(r.new_tensor(e * 2 * i * 4));
                    t.push(r.new_tensor(e * h * 4));
                }
                WeightFormat::Fp8 { block } => {
                    let b = u64::from(block);
                    t.push(r.new_tensor(e * (2 * i).div_ceil(b) * h.div_ceil(b) * 4));
                    t.push(r.new_tensor(e * h.div_ceil(b) * i.div_ceil(b) * 4));
                }
                _ => {}
            }
            t
        }
    }
}

/// `process_weights_after_loading` of one MoE layer of `e` experts; what stays joins the live set.
fn process_experts(r: &mut Replay, path: MoePath, mut t: Vec<Tensor>, (e, h, i): (u64, u64, u64)) {
    match path {
        MoePath::Nvfp4 => {
            r.keep(e * 4);
            r.keep(e * 4);
            for (idx, (m, k)) in [(2usize, (2 * i, h / 16)), (4, (h, i / 16))] {
                let s = r.swizzle(e, m, k);
                let old = std::mem::take(&mut t[idx]);
                r.drop_tensor(old);
                r.drop_tensor(s);
            }
            r.keep(e * 4);
            r.keep(e * 4);
            for _ in 0..6 {
                r.keep(e * 3 * 8);
            }
        }
        MoePath::MarlinInt4 { group } => {
            for g in t.drain(6..) {
                r.drop_tensor(g);
            }
            let per_expert = [
                h / 16 * 2 * i * 2 * 4,
                i / 16 * h * 2 * 4,
                h / group * 2 * i * 2,
                i / group * h * 2,
            ];
            for (idx, temp) in per_expert.into_iter().enumerate() {
                let new = r.new_tensor(e * temp);
                r.temp(temp);
                let old = std::mem::replace(&mut t[idx], new);
                r.drop_tensor(old);
            }
        }
        MoePath::Plain { .. } => {}
    }
    r.live.extend(t);
}

fn moe_path(spec: &ModelSpec) -> Option<MoePath> {
    spec.moe?;
    match spec.formats.routed_experts {
        WeightFormat::Nvfp4 => Some(MoePath::Nvfp4),
        WeightFormat::Int4 { group_size } => Some(MoePath::MarlinInt4 {
            group: u64::from(group_size.max(1)),
        }),
        f @ (WeightFormat::Bf16 | WeightFormat::Fp8 { .. }) => Some(MoePath::Plain { format: f }),
        _ => None,
    }
}

fn vision(r: &mut Replay, spec: &ModelSpec, layout: &Layout) {
    let Some(v) = &spec.vision else { return };
    let (h, i, p) = (v.hidden_size, v.intermediate_size, v.patch_size as u64);
    let split = if layout.dp_attention {
        1
    } else {
        layout.tp.max(1)
    } as u64;
    r.keep(3 * p * p * h * 2);
    r.keep(v.pos_emb_positions * h * 2);
    for _ in 0..v.num_layers {
        for params in [3 * h / split * h, h * h / split, i * h, h * i, 4 * h] {
            r.keep(params * 2);
        }
    }
    let merged = h * v.merge_patches.max(1) as u64;
    r.keep(merged * merged * 2);
    r.keep(spec.hidden_size * merged * 2);
}

fn run(
    spec: &ModelSpec,
    layout: &Layout,
    layers: Range<u32>,
    first: bool,
    last: bool,
) -> LoadReplay {
    let path = moe_path(spec).expect("checked by the caller");
    let (h, tp) = (spec.hidden_size, layout.tp.max(1) as u64);
    let vocab_split = if layout.dp_attention { 1 } else { tp };
    let (e, i) = local_experts(spec, layout);
    let mut r = Replay::default();
    vision(&mut r, spec, layout);
    if first {
        r.keep(bytes(
            spec.vocab_size / vocab_split * h,
            spec.formats.embeddings,
        ));
    }
    let mut moe = Vec::new();
    for l in layers {
        attention(&mut r, spec, layout, l);
        if !spec.moe_layers.get(l as usize).copied().unwrap_or(false) {
            mlp(
                &mut r,
                h,
                spec.dense_intermediate_size / tp,
                spec.formats.dense_mlp,
            );
            continue;
        }
        r.keep(e * h * 2); // router, all experts on every rank in SGLang: E × h
        moe.push(create_experts(&mut r, path, e, h, i));
        let m = spec.moe.expect("MoE layer");
        if m.num_shared_experts > 0 {
            let shared = m.expert_intermediate_size * m.num_shared_experts as u64 / tp;
            mlp(&mut r, h, shared, spec.formats.shared_experts);
        }
    }
    if last {
        r.keep(bytes(spec.vocab_size / tp * h, spec.formats.lm_head));
    }
    for t in moe {
        process_experts(&mut r, path, t, (e, h, i));
    }
    r.alloc.empty_cache();
    LoadReplay {
        reserved_bytes: r.alloc.reserved_bytes(),
        live_bytes: r.live.iter().map(|t| t.1).sum(),
    }
}

/// The replayed load of `layers` on one GPU of `layout` (`first` / `last`: the stage holds the
/// embedding / the head); `None` for a dense model or experts in a format not modelled here
/// (MXFP4). Memoized: a sweep asks for the same stage many times.
pub fn replay_stage(
    spec: &ModelSpec,
    layout: &Layout,
    layers: Range<u32>,
    first: bool,
    last: bool,
) -> Option<LoadReplay> {
    moe_path(spec)?;
    static MEMO: OnceLock<Mutex<HashMap<String, LoadReplay>>> = OnceLock::new();
    let flags = spec
        .moe_layers
        .get(layers.start as usize..layers.end as usize);
    let key = format!(
        "{:?}|{:?}|{:?}|{:?}|{}|{}|{}|{:?}|{layers:?}|{first}|{last}|{}|{}|{}|{:?}",
        spec.attention,
        spec.moe,
        spec.formats,
        spec.vision,
        spec.hidden_size,
        spec.vocab_size,
        spec.dense_intermediate_size,
        flags,
        layout.tp,
        layout.ep,
        layout.dp_attention,
        spec.indexer_layers,
    );
    let memo = MEMO.get_or_init(Default::default);
    if let Some(r) = memo.lock().ok().and_then(|m| m.get(&key).copied()) {
        return Some(r);
    }
    let r = run(spec, layout, layers, first, last);
    if let Ok(mut m) = memo.lock() {
        m.insert(key, r);
    }
    Some(r)
}
