//! The kernels one layer launches on one GPU, from the architecture, as SGLang's model code runs
//! them (DeepSeek-family MLA with an optional DSA indexer, GQA; dense MLP or MoE).
//!
//! Each block lists its weight GEMMs with the parameters this GPU holds (TP shards, replicated
//! projections whole), its small kernels (norms, rotary, activations, quantize, gates, KV stores,
//! copies) with the activation bytes they stream per token, and its collectives. The cost model
//! gives every GEMM its own latency floor, every small kernel the machine's small-kernel floor,
//! and counts every kernel as one eager launch on the CPU.
//!
//! Counts follow SGLang's decode path (`deepseek_v2.py` forward_absorb, `nsa_indexer.py`,
//! `fused_moe`/`flashinfer` MoE runners, `llama.py`-style GQA): what is fused there is one kernel
//! here. Quantized GEMMs (fp8, nvfp4) add one activation-quantize kernel each.

use models::shard::gpu_share;
use models::spec::{AttentionSpec, LayerAttention, LinearModule, ModelPart, Shard};
use models::{Layout, ModelSpec};

/// One weight GEMM of a block on one GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmShape {
    /// What it is (`q_b_proj`, `o_proj`, …).
    pub name: &'static str,
    /// The checkpoint part its weights belong to (their format).
    pub part: ModelPart,
    /// Parameters this GPU holds.
    pub params: f64,
}

/// The kernels of one block (attention, indexer, MLP, head) of one layer on one GPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockKernels {
    pub gemms: Vec<GemmShape>,
    /// Small kernels (one latency floor each).
    pub small: f64,
    /// Activation bytes those small kernels read and write per token.
    pub small_bytes_per_token: f64,
    /// Kernels of the block's core op (attention, indexer logits + top-k, fused MoE), launched
    /// eagerly; their GPU time is costed by the core op itself.
    pub core_launches: f64,
    /// Collectives the block ends with.
    pub collectives: f64,
}

impl BlockKernels {
    /// Kernels launched eagerly.
    pub fn launches(&self) -> f64 {
        self.gemms.len() as f64 + self.small + self.core_launches + self.collectives
    }

    fn gemm(&mut self, name: &'static str, part: ModelPart, params: f64, quantized: bool) {
        if params <= 0.0 {
            return;
        }
        self.gemms.push(GemmShape { name, part, params });
        if quantized {
            // per-token activation quantize before an fp8 / fp4 GEMM
            self.small += 1.0;
        }
    }
}

/// The kernel inventory of one layer of each kind, plus the model's ends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerInventory {
    /// Attention projections and small kernels; the core is `attention.core_launches`.
    pub attention: BlockKernels,
    /// DSA indexer (layers that run their own).
    pub indexer: BlockKernels,
    pub dense_mlp: BlockKernels,
    /// Router, shared experts, small kernels; routed experts are the core.
    pub moe: BlockKernels,
    /// First stage: embedding lookup and its all-reduce.
    pub embed: BlockKernels,
    /// Last stage: final norm, lm_head, logits gather, sampling.
    pub head: BlockKernels,
}

/// This GPU's parameters of each of `modules` ([`gpu_share`]), by checkpoint name.
struct GpuModules(Vec<(&'static str, f64)>);

impl GpuModules {
    fn of(spec: &ModelSpec, layout: &Layout, modules: Vec<LinearModule>) -> GpuModules {
        let share = |m: &LinearModule| gpu_share(spec, layout, m.shard, m.base);
        GpuModules(
            modules
                .iter()
                .map(|m| (m.name, m.params as f64 * share(m)))
                .collect(),
        )
    }

    /// The modules of a full-attention layer, then the DSA indexer's where the model has one.
    fn attention(spec: &ModelSpec, layout: &Layout) -> GpuModules {
        let parts = (ModelPart::Attention, ModelPart::Attention);
        let mut modules = spec.attention_modules(LayerAttention::Full, parts);
        let indexed = (0..spec.num_layers).find(|&l| spec.layer_has_indexer(l));
        if let Some(layer) = indexed {
            let ix = spec.layer_modules(layer);
            modules.extend(ix.into_iter().filter(|m| m.base == ModelPart::Indexer));
        }
        GpuModules::of(spec, layout, modules)
    }

    /// Parameters of `name` on this GPU; 0 when the layer has no such module.
    fn get(&self, name: &str) -> f64 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |&(_, p)| p)
    }
}

/// MLA's projections as SGLang's absorbed decode runs them (`deepseek_v2.py` forward_absorb) and,
/// with DSA, the indexer's kernels into `x`. GEMM parameters are this GPU's of the layer's
/// modules ([`ModelSpec::layer_modules`]): q_a and kv_a fused in one GEMM, `kv_b_proj` run as
/// its two absorbed halves (`w_kc`: the nope columns, `w_vc`: the v columns).
fn mla_kernels(
    spec: &ModelSpec,
    layout: &Layout,
    qa: bool,
    a: &mut BlockKernels,
    x: &mut BlockKernels,
) {
    let h = spec.hidden_size as f64;
    let (Some(d), indexer) = (spec.attention.mla_dims(), spec.attention.indexer()) else {
        return;
    };
    let m = GpuModules::attention(spec, layout);
    let at = ModelPart::Attention;
    let r_kv = d.kv_lora_rank as f64;
    match d.q_lora_rank {
        Some(r_q) => {
            let fused_a = m.get("self_attn.q_a_proj") + m.get("self_attn.kv_a_proj_with_mqa");
            a.gemm("fused_qkv_a_proj", at, fused_a, qa);
            a.gemm("q_b_proj", at, m.get("self_attn.q_b_proj"), qa);
            // q_a and kv_a layernorms
            a.small += 2.0;
            a.small_bytes_per_token += 4.0 * (r_q as f64 + r_kv);
        }
        None => {
            a.gemm("q_proj", at, m.get("self_attn.q_proj"), qa);
            a.gemm("kv_a_proj", at, m.get("self_attn.kv_a_proj_with_mqa"), qa);
            a.small += 1.0;
            a.small_bytes_per_token += 4.0 * r_kv;
        }
    }
    // absorbed decode: q_nope × W_UK and attn_out × W_UV as batched GEMMs
    let kv_b = m.get("self_attn.kv_b_proj");
    let w_kc = kv_b * d.nope as f64 / (d.nope + d.v) as f64;
    a.gemm("w_kc_bmm", at, w_kc, false);
    a.gemm("w_vc_bmm", at, kv_b - w_kc, false);
    a.gemm("o_proj", at, m.get("self_attn.o_proj"), qa);
    // rotary, absorbed-q concat, KV-latent store, output copy, over this GPU's heads
    let heads = d.heads as f64 * gpu_share(spec, layout, Shard::Tp, at);
    let rope = d.rope as f64;
    a.small += 4.0;
    a.small_bytes_per_token += 4.0 * heads * (r_kv + rope) + 2.0 * (r_kv + rope);
    // decode attention: split-KV kernel + combine
    a.core_launches = 2.0;
    if let Some(ix) = indexer {
        let (n, d) = (ix.num_heads as f64, ix.head_dim as f64);
        let qi = quantized(spec, ModelPart::Indexer);
        let xp = ModelPart::Indexer;
        x.gemm("indexer_wq_b", xp, m.get("self_attn.indexer.wq_b"), qi);
        x.gemm("indexer_wk", xp, m.get("self_attn.indexer.wk"), qi);
        // `weights_proj` is built without quantization: a plain BF16 parameter, not a module
        x.gemm("indexer_weights_proj", xp, h * n, false);
        // k LayerNorm, rotary (q, k), fp8 quantize of q and k, index-key store
        x.small = 5.0;
        x.small_bytes_per_token = 4.0 * n * d + 6.0 * d;
        // logits over the cached context, top-k
        x.core_launches = 2.0;
    }
}

/// The attention GEMMs of a model whose layers mix Gated-DeltaNet and full attention, as the
/// layer-weighted mean (a stage costs one layer times its layers): the input projections (q/k/v,
/// or GDN's `in_proj_qkvz` + `in_proj_ba`) as one GEMM and the output projection as another,
/// each with the parameters one GPU holds of [`ModelSpec::attention_modules`]. Small kernels:
/// full layers' rotary and KV store, linear layers' conv1d update, gating and gated norm.
fn mixed_attention_gemms(spec: &ModelSpec, layout: &Layout, a: &mut BlockKernels, qa: bool) {
    let n = spec.num_layers.max(1) as f64;
    let (mut input, mut output, mut act) = (0.0, 0.0, 0.0);
    let parts = (ModelPart::Attention, ModelPart::Attention);
    for kind in [
        LayerAttention::Full,
        LayerAttention::Sliding,
        LayerAttention::Linear,
    ] {
        let share = spec.num_layers_of_kind(kind) as f64 / n;
        if share == 0.0 {
            continue;
        }
        a.small += share
            * if kind == LayerAttention::Linear {
                3.0
            } else {
                2.0
            };
        let modules = GpuModules::of(spec, layout, spec.attention_modules(kind, parts));
        for (name, p) in modules.0 {
            if name.ends_with("o_proj") || name.ends_with("out_proj") {
                output += p * share;
            } else {
                input += p * share;
            }
        }
    }
    let h = spec.hidden_size as f64;
    if h > 0.0 {
        // the input projections' outputs, written and read by the small kernels (bf16)
        act = 4.0 * input / h;
    }
    a.gemm("in_proj", ModelPart::Attention, input, qa);
    a.gemm("out_proj", ModelPart::Attention, output, qa);
    a.small_bytes_per_token += act;
}

/// GQA's projections as SGLang's `llama.py`-style attention runs them: q, k and v fused in one
/// `qkv_proj` (`QKVParallelLinear`) and `o_proj`, each with the parameters one GPU holds of
/// [`ModelSpec::attention_modules`] (q twice as wide with an output gate; k/v split by KV head).
/// Small kernels: rotary and the KV store, over q's heads (without the gate) and k/v's.
fn gqa_kernels(spec: &ModelSpec, layout: &Layout, a: &mut BlockKernels, qa: bool) {
    let m = GpuModules::attention(spec, layout);
    let kv = m.get("self_attn.k_proj") + m.get("self_attn.v_proj");
    let (qkv, o) = (m.get("self_attn.q_proj") + kv, m.get("self_attn.o_proj"));
    a.gemm("qkv_proj", ModelPart::Attention, qkv, qa);
    a.gemm("o_proj", ModelPart::Attention, o, qa);
    // rotary, KV store: q's heads are o_proj's inputs, k/v's the KV projections' outputs
    a.small += 2.0;
    let h = spec.hidden_size as f64;
    if h > 0.0 {
        a.small_bytes_per_token += 4.0 * (o + kv) / h;
    }
    // decode attention: split-KV kernel + merge
    a.core_launches = 2.0;
}

/// Whether a part's format runs its GEMMs on quantized activations.
fn quantized(spec: &ModelSpec, part: ModelPart) -> bool {
    let name = spec.format_of(part).name();
    name.starts_with("fp8") || name.starts_with("nvfp4") || name.starts_with("mxfp")
}

impl LayerInventory {
    /// The inventory of `spec` under `layout` (per GPU of the busiest rank): attention (and the
    /// DSA indexer), dense MLP, MoE, then the model's two ends.
    pub fn new(spec: &ModelSpec, layout: &Layout) -> LayerInventory {
        let mut inv = LayerInventory::default();
        inv.attention_kernels(spec, layout);
        inv.dense_mlp_kernels(spec, layout);
        inv.moe_kernels(spec, layout);
        inv.end_kernels(spec, layout);
        inv
    }

    /// The attention block: input norm, projections by attention kind, the core's launches and
    /// the all-reduce; MLA's indexer goes to `self.indexer`.
    fn attention_kernels(&mut self, spec: &ModelSpec, layout: &Layout) {
        let h = spec.hidden_size as f64;
        let qa = quantized(spec, ModelPart::Attention);
        let a = &mut self.attention;
        // input add + RMSNorm (read x and residual, write both)
        a.small = 1.0;
        a.small_bytes_per_token = 8.0 * h;
        match spec.attention {
            AttentionSpec::Mla { .. } => {
                mla_kernels(spec, layout, qa, a, &mut self.indexer);
            }
            AttentionSpec::Gqa { .. } if spec.linear_attention.is_some() => {
                mixed_attention_gemms(spec, layout, a, qa);
                a.core_launches = 2.0;
            }
            AttentionSpec::Gqa { .. } => {
                gqa_kernels(spec, layout, a, qa);
            }
        }
        a.collectives = 1.0;
    }

    /// A dense layer's MLP: post-attention norm, gate/up and down projections, all-reduce.
    fn dense_mlp_kernels(&mut self, spec: &ModelSpec, layout: &Layout) {
        let h = spec.hidden_size as f64;
        let inv = self;
        let tp = layout.tp as f64;
        let qd = quantized(spec, ModelPart::DenseMlp);
        let m = &mut inv.dense_mlp;
        let inter = spec.dense_intermediate_size as f64 / tp;
        m.small = 2.0; // post-attention add + RMSNorm, SiLU-and-mul
        m.small_bytes_per_token = 8.0 * h + 6.0 * inter;
        m.gemm("gate_up_proj", ModelPart::DenseMlp, h * 2.0 * inter, qd);
        m.gemm("down_proj", ModelPart::DenseMlp, inter * h, qd);
        m.collectives = 1.0;
    }

    /// A MoE layer's router, shared experts and small kernels (the routed experts are the core).
    fn moe_kernels(&mut self, spec: &ModelSpec, layout: &Layout) {
        let h = spec.hidden_size as f64;
        let tp = layout.tp as f64;
        let inv = self;
        if let Some(moe) = spec.moe {
            let e = &mut inv.moe;
            // post-attention add + RMSNorm, fused gate/top-k, shared + routed combine
            e.small = 3.0;
            e.small_bytes_per_token = 8.0 * h + 6.0 * h;
            e.gemm(
                "router",
                ModelPart::Routers,
                h * moe.num_routed_experts as f64,
                false,
            );
            let shared = moe.num_shared_experts as f64 * moe.expert_intermediate_size as f64 / tp;
            if shared > 0.0 {
                let qs = quantized(spec, ModelPart::SharedExperts);
                e.gemm(
                    "shared_gate_up",
                    ModelPart::SharedExperts,
                    h * 2.0 * shared,
                    qs,
                );
                e.gemm("shared_down", ModelPart::SharedExperts, shared * h, qs);
                e.small += 1.0; // SiLU-and-mul
                e.small_bytes_per_token += 6.0 * shared;
            }
            // fused MoE: quantize, align/sort, two grouped GEMMs, activation, reduce
            e.core_launches = 6.0;
            e.collectives = 1.0;
        }
    }

    /// The first stage's embedding and the last stage's head and sampling.
    fn end_kernels(&mut self, spec: &ModelSpec, layout: &Layout) {
        let h = spec.hidden_size as f64;
        let tp = layout.tp as f64;
        let inv = self;
        let v = spec.vocab_size as f64;
        let x = &mut inv.embed;
        x.small = 1.0;
        x.small_bytes_per_token = 4.0 * h;
        x.collectives = 1.0;
        let hd = &mut inv.head;
        // final norm; sampling: temperature / softmax / top-k-top-p / argmax
        hd.small = 4.0;
        hd.small_bytes_per_token = 4.0 * h + 12.0 * v;
        hd.gemm("lm_head", ModelPart::LmHead, v / tp * h, false);
        hd.collectives = 1.0;
    }

    /// Eager launches of a layer (attention, its indexer when `indexer`, the MLP kind).
    pub fn layer_launches(&self, moe: bool, indexer: bool) -> f64 {
        self.attention.launches()
            + if indexer {
                self.indexer.launches()
            } else {
                0.0
            }
            + if moe {
                self.moe.launches()
            } else {
                self.dense_mlp.launches()
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(b: &BlockKernels, part: ModelPart) -> f64 {
        b.gemms
            .iter()
            .filter(|g| g.part == part)
            .map(|g| g.params)
            .sum()
    }

    #[test]
    fn mla_gemms_hold_the_layer_s_attention_parameters() {
        for name in ["glm-5-nvfp4", "kimi-k2.5-nvfp4", "deepseek-v3-fp8"] {
            let spec = ModelSpec::preset(name).unwrap();
            for tp in [1u32, 8] {
                let inv = LayerInventory::new(&spec, &Layout::tp(tp));
                let split = spec.attention_param_split();
                let norms = 2.0 * spec.hidden_size as f64;
                let want = split.sharded as f64 / tp as f64 + split.replicated as f64 - norms;
                let got = params(&inv.attention, ModelPart::Attention);
                // the q_a / kv_a layernorm weights are in `replicated` but are not GEMMs
                assert!(
                    (got / want - 1.0).abs() < 0.01,
                    "{name} tp{tp}: {got} vs {want}"
                );
                let ix = spec.indexer_params_per_layer() as f64;
                let got_ix = params(&inv.indexer, ModelPart::Indexer);
                assert!(
                    (got_ix - ix).abs() <= 2.0 * 128.0 + 1.0,
                    "{name}: indexer {got_ix} vs {ix}"
                );
            }
        }
    }

    /// Qwen3-30B-A3B's config (hidden 2048, 32 q heads, 4 KV heads of 128): at TP8 each GPU
    /// holds 4 q heads and one whole KV head (4 < 8 KV heads are replicated, not cut); under DP
    /// attention every head.
    #[test]
    fn gqa_gemms_hold_one_gpu_s_heads() {
        let spec = ModelSpec::preset("qwen3-30b-a3b").unwrap();
        let gemm = |inv: &LayerInventory, name| {
            let g = inv.attention.gemms.iter().find(|g| g.name == name);
            g.map(|g| g.params).unwrap()
        };
        let (h, d) = (2048.0, 128.0);
        let tp8 = LayerInventory::new(&spec, &Layout::tp(8));
        assert_eq!(gemm(&tp8, "qkv_proj"), h * (4.0 + 2.0 * 1.0) * d);
        assert_eq!(gemm(&tp8, "o_proj"), 4.0 * d * h);
        assert_eq!(tp8.attention.small_bytes_per_token, 8.0 * h + 4.0 * 6.0 * d);
        let tp2 = LayerInventory::new(&spec, &Layout::tp(2));
        assert_eq!(gemm(&tp2, "qkv_proj"), h * (16.0 + 2.0 * 2.0) * d);
        let mut dpa = Layout::tp(8);
        dpa.dp_attention = true;
        let dpa = LayerInventory::new(&spec, &dpa);
        assert_eq!(gemm(&dpa, "qkv_proj"), h * (32.0 + 2.0 * 4.0) * d);
        assert_eq!(gemm(&dpa, "o_proj"), 32.0 * d * h);
    }

    #[test]
    fn a_glm5_layer_launches_about_thirty_kernels() {
        let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
        let inv = LayerInventory::new(&spec, &Layout::tp(8));
        let n = inv.layer_launches(true, true);
        assert!((30.0..50.0).contains(&n), "{n}");
        let gqa = ModelSpec::preset("glm-4.7-fp8").unwrap();
        let inv = LayerInventory::new(&gqa, &Layout::tp(8));
        let n = inv.layer_launches(true, false);
        assert!((15.0..35.0).contains(&n), "{n}");
    }
}
