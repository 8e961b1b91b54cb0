//! The linear modules of each layer under the names checkpoints give them, and the storage format
//! of each, module by module and layer by layer.
//!
//! A quantized checkpoint's exclusion list (`exclude_modules`, `ignore`, `modules_to_not_convert`)
//! names modules such as `model.layers.3.self_attn.q_a_proj`; NVIDIA's NVFP4 checkpoints keep
//! attention projections, whole dense layers, shared experts or the MTP layer in BF16 that way.
//! [`ModelSpec::layer_modules`] lists a layer's modules with those names, and
//! [`ModelSpec::module_format`] gives each one's format: the part's format ([`PartFormats`],
//! the format holding most of that part's parameters) unless [`ModuleFormats`] records an
//! exception for that module in that layer. Weight bytes are summed module by module from these
//! ([`ModelSpec::weight_bytes_by_part`], `footprint`), so a part whose modules differ (DeepSeek-V3.2
//! NVFP4 keeps q/kv projections BF16 but quantizes `o_proj`) is counted exactly.
//!
//! Norms, biases, routers and the DSA indexer's `weights_proj` are never quantized (SGLang builds
//! them without a quant config): they are counted in BF16.

use super::LayerSet;
use super::{AttentionSpec, LayerAttention, ModelPart, ModelSpec};
use crate::format::WeightFormat;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;

/// How a tensor-parallel group splits a module's parameters (see `footprint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shard {
    /// Sliced over the TP group (q/kv up-projections, `o_proj`, MLPs, experts: 1/tp each).
    Tp,
    /// Whole on every rank (MLA down-projections, the DSA indexer, norms, routers).
    Replicated,
    /// GQA k/v: sliced by KV head, one head per rank (replicated) when `num_kv_heads < tp`.
    KvHeads,
}

/// One linear module of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearModule {
    /// Name inside the layer as checkpoints write it, `*` for "every expert"
    /// (`self_attn.q_a_proj`, `mlp.experts.*.gate_proj`).
    pub name: &'static str,
    /// The name matched against exclusion lists (expert 0 stands for every expert).
    pub probe: &'static str,
    /// The part it is counted in ([`ModelPart::Mtp`] for every module of an MTP layer).
    pub part: ModelPart,
    /// What it is, MTP layer or not (attention, indexer, dense MLP, experts, `Mtp` for
    /// `eh_proj`): placement rules depend on it.
    pub base: ModelPart,
    /// Weight parameters of the whole module (all experts, all heads), scales excluded.
    pub params: u64,
    /// How TP splits it.
    pub shard: Shard,
}

/// Parameters of a layer that stay BF16 whatever the scheme (norms, biases, routers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainParams {
    /// The part it is counted in, as [`LinearModule::part`].
    pub part: ModelPart,
    /// What it belongs to, as [`LinearModule::base`].
    pub base: ModelPart,
    pub params: u64,
    pub shard: Shard,
}

/// One exception to the part formats: `module` (a [`LinearModule::name`]) is stored in `format`
/// in `layers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleOverride {
    pub module: String,
    pub layers: LayerSet,
    pub format: WeightFormat,
}

/// Modules whose format differs from their part's, as the checkpoint's exclusion list says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleFormats {
    pub overrides: Vec<ModuleOverride>,
}

impl ModuleFormats {
    /// No exception: every module has its part's format.
    pub fn is_empty(&self) -> bool {
        self.overrides.is_empty()
    }
}

/// Modules a checkpoint keeps in BF16, grouped by name (see [`ModelSpec::bf16_modules`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bf16Modules {
    /// Module name inside a layer (`self_attn.kv_b_proj`), or a whole-model tensor (`lm_head`).
    pub module: String,
    /// Layers where it is BF16 (empty for whole-model tensors); MTP layers count from
    /// `num_layers`.
    pub layers: LayerSet,
    /// Its weight bytes in the checkpoint, all those layers together.
    pub bytes: u64,
}

const fn module(
    name: &'static str,
    probe: &'static str,
    (part, base): (ModelPart, ModelPart),
    params: u64,
    shard: Shard,
) -> LinearModule {
    LinearModule {
        name,
        probe,
        part,
        base,
        params,
        shard,
    }
}

impl ModelSpec {
    /// Whether `layer` (main layers first, then MTP layers) is a MoE layer.
    fn layer_is_moe(&self, layer: u32) -> bool {
        match self.moe_layers.get(layer as usize) {
            Some(&m) => m,
            None => self.moe.is_some(),
        }
    }

    /// Whether `layer` runs its own DSA indexer (MTP layers do when the model has one).
    fn layer_runs_indexer(&self, layer: u32) -> bool {
        if layer < self.num_layers {
            self.layer_has_indexer(layer)
        } else {
            self.attention.indexer().is_some()
        }
    }

    /// Every layer index: main layers, then the MTP layers (`num_layers..num_layers + mtp`).
    pub fn all_layer_indices(&self) -> Range<u32> {
        0..self.num_layers + self.num_mtp_layers
    }

    /// The `(part, base)` pair a module of kind `p` is counted under in `layer`: MTP layers
    /// count everything as [`ModelPart::Mtp`].
    fn parts_in(&self, layer: u32, p: ModelPart) -> (ModelPart, ModelPart) {
        (
            if layer >= self.num_layers {
                ModelPart::Mtp
            } else {
                p
            },
            p,
        )
    }

    /// The linear modules of layer `layer` (an MTP layer when `layer ≥ num_layers`, where every
    /// module counts as [`ModelPart::Mtp`] and `eh_proj` is added): attention of the layer's
    /// kind, the DSA indexer where it runs one, the MLP.
    pub fn layer_modules(&self, layer: u32) -> Vec<LinearModule> {
        let attn = self.parts_in(layer, ModelPart::Attention);
        let mut v = self.attention_modules(self.layer_attention(layer), attn);
        if self.layer_runs_indexer(layer) {
            v.extend(self.indexer_modules(self.parts_in(layer, ModelPart::Indexer)));
        }
        v.extend(self.mlp_modules(layer));
        if layer >= self.num_layers {
            let e = "eh_proj";
            let p = (ModelPart::Mtp, ModelPart::Mtp);
            v.push(module(
                e,
                e,
                p,
                2 * self.hidden_size * self.hidden_size,
                Shard::Replicated,
            ));
        }
        v
    }

    /// The attention projections of one layer of `kind`, counted under `attn` (`(part, base)`):
    /// MLA's low-rank paths, GQA's q/k/v/o (q twice as wide with an output gate), or Gated
    /// DeltaNet's input projections (`in_proj_qkvz`: q, k, v and the output gate z;
    /// `in_proj_ba`: the per-head β and decay inputs) and `out_proj`, all split by head over TP
    /// (SGLang `qwen3_next.py::Qwen3GatedDeltaNet`). Qwen3.5 stores the input projections as four
    /// tensors (`in_proj_qkv`, `_z`, `_b`, `_a`); the parameters are the same.
    pub fn attention_modules(
        &self,
        kind: LayerAttention,
        attn: (ModelPart, ModelPart),
    ) -> Vec<LinearModule> {
        let h = self.hidden_size;
        let mut v = Vec::with_capacity(5);
        if let (LayerAttention::Linear, Some(la)) = (kind, self.linear_attention) {
            let (nk, nv) = (la.num_key_heads as u64, la.num_value_heads as u64);
            let (dk, dv) = (la.key_head_dim as u64, la.value_head_dim as u64);
            for (name, params) in [
                ("linear_attn.in_proj_qkvz", h * (2 * nk * dk + 2 * nv * dv)),
                ("linear_attn.in_proj_ba", h * 2 * nv),
                ("linear_attn.out_proj", nv * dv * h),
            ] {
                v.push(module(name, name, attn, params, Shard::Tp));
            }
            return v;
        }
        if let Some(d) = self.attention.mla_dims() {
            let (nh, r_kv, nope, rope, vd) = (d.heads, d.kv_lora_rank, d.nope, d.rope, d.v);
            match d.q_lora_rank {
                Some(r_q) => {
                    let (a, b) = ("self_attn.q_a_proj", "self_attn.q_b_proj");
                    v.push(module(a, a, attn, h * r_q, Shard::Replicated));
                    v.push(module(b, b, attn, r_q * nh * (nope + rope), Shard::Tp));
                }
                None => {
                    let q = "self_attn.q_proj";
                    v.push(module(q, q, attn, h * nh * (nope + rope), Shard::Tp));
                }
            }
            let (a, b) = ("self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj");
            v.push(module(a, a, attn, h * (r_kv + rope), Shard::Replicated));
            v.push(module(b, b, attn, r_kv * nh * (nope + vd), Shard::Tp));
            let o = "self_attn.o_proj";
            v.push(module(o, o, attn, nh * vd * h, Shard::Tp));
            return v;
        }
        match self.attention {
            AttentionSpec::Mla { .. } => {}
            AttentionSpec::Gqa {
                num_heads,
                num_kv_heads,
                head_dim,
                output_gate,
                ..
            } => {
                let o = h * num_heads as u64 * head_dim as u64;
                let q = if output_gate { 2 * o } else { o };
                let kv = h * num_kv_heads as u64 * head_dim as u64;
                for (name, params, shard) in [
                    ("self_attn.q_proj", q, Shard::Tp),
                    ("self_attn.k_proj", kv, Shard::KvHeads),
                    ("self_attn.v_proj", kv, Shard::KvHeads),
                    ("self_attn.o_proj", o, Shard::Tp),
                ] {
                    v.push(module(name, name, attn, params, shard));
                }
            }
        }
        v
    }

    /// Parameters of one layer's DSA indexer: its projections ([`Self::indexer_modules`]) and
    /// its BF16 `k_norm` and `weights_proj`; 0 without DSA.
    pub(super) fn indexer_modules_and_plain_params(&self) -> u64 {
        let idx = (ModelPart::Indexer, ModelPart::Indexer);
        let modules: u64 = self.indexer_modules(idx).iter().map(|m| m.params).sum();
        modules
            + self
                .attention
                .indexer()
                .map_or(0, |ix| self.indexer_plain_params(ix))
    }

    /// The indexer's `k_norm` (weight + bias) and `weights_proj`, which SGLang builds without
    /// quantization.
    fn indexer_plain_params(&self, ix: super::DsaIndexer) -> u64 {
        2 * ix.head_dim as u64 + self.hidden_size * ix.num_heads as u64
    }

    /// The DSA indexer's projections (`wq_b`, `wk`), replicated; none without DSA.
    fn indexer_modules(&self, idx: (ModelPart, ModelPart)) -> Vec<LinearModule> {
        let AttentionSpec::Mla {
            q_lora_rank,
            indexer: Some(ix),
            ..
        } = self.attention
        else {
            return Vec::new();
        };
        let h = self.hidden_size;
        let (n, d) = (ix.num_heads as u64, ix.head_dim as u64);
        let q_in = q_lora_rank.map(u64::from).unwrap_or(h);
        [
            ("self_attn.indexer.wq_b", q_in * n * d),
            ("self_attn.indexer.wk", h * d),
        ]
        .into_iter()
        .map(|(name, params)| module(name, name, idx, params, Shard::Replicated))
        .collect()
    }

    /// Checkpoint names of a MoE layer's shared-expert projections and of its routed experts'
    /// (name, probe) pairs, by family: Mixtral and MiniMax-M2 write `block_sparse_moe.experts.N.w1`,
    /// Qwen3-Next / Qwen3.5 a single `mlp.shared_expert`.
    fn moe_module_names(&self) -> ([&'static str; 3], [(&'static str, &'static str); 3]) {
        let shared = if matches!(self.model_type.as_str(), "qwen3_next" | "qwen3_5_moe_text") {
            [
                "mlp.shared_expert.gate_proj",
                "mlp.shared_expert.up_proj",
                "mlp.shared_expert.down_proj",
            ]
        } else {
            [
                "mlp.shared_experts.gate_proj",
                "mlp.shared_experts.up_proj",
                "mlp.shared_experts.down_proj",
            ]
        };
        let routed = if matches!(self.model_type.as_str(), "mixtral" | "minimax_m2") {
            [
                (
                    "block_sparse_moe.experts.*.w1",
                    "block_sparse_moe.experts.0.w1",
                ),
                (
                    "block_sparse_moe.experts.*.w3",
                    "block_sparse_moe.experts.0.w3",
                ),
                (
                    "block_sparse_moe.experts.*.w2",
                    "block_sparse_moe.experts.0.w2",
                ),
            ]
        } else {
            [
                ("mlp.experts.*.gate_proj", "mlp.experts.0.gate_proj"),
                ("mlp.experts.*.up_proj", "mlp.experts.0.up_proj"),
                ("mlp.experts.*.down_proj", "mlp.experts.0.down_proj"),
            ]
        };
        (shared, routed)
    }

    /// The MLP's projections in `layer`: shared + routed experts of a MoE layer, else the dense
    /// MLP's gate, up and down projections.
    fn mlp_modules(&self, layer: u32) -> Vec<LinearModule> {
        let h = self.hidden_size;
        let mut v = Vec::with_capacity(6);
        match (self.layer_is_moe(layer), self.moe) {
            (true, Some(m)) => {
                let per_proj = h * m.expert_intermediate_size;
                let shared = per_proj * m.num_shared_experts as u64;
                let (shared_names, routed_names) = self.moe_module_names();
                if shared > 0 {
                    let sh = self.parts_in(layer, ModelPart::SharedExperts);
                    for name in shared_names {
                        v.push(module(name, name, sh, shared, Shard::Tp));
                    }
                }
                let routed = per_proj * m.num_routed_experts as u64;
                let r = self.parts_in(layer, ModelPart::RoutedExperts);
                for (name, probe) in routed_names {
                    v.push(module(name, probe, r, routed, Shard::Tp));
                }
            }
            _ => {
                let per_proj = h * self.dense_intermediate_size;
                let d = self.parts_in(layer, ModelPart::DenseMlp);
                for name in ["mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"] {
                    v.push(module(name, name, d, per_proj, Shard::Tp));
                }
            }
        }
        v
    }

    /// The BF16-only parameters of layer `layer`: norms, q/k/v biases, attention sinks, Gated
    /// DeltaNet's conv1d and per-head constants, the DSA indexer's `k_norm` and `weights_proj`,
    /// the router, and an MTP layer's `enorm`, `hnorm` and head norm.
    pub fn layer_plain_params(&self, layer: u32) -> Vec<PlainParams> {
        let mtp = layer >= self.num_layers;
        let h = self.hidden_size;
        let plain = |p: ModelPart, params: u64, shard: Shard| {
            let (part, base) = self.parts_in(layer, p);
            PlainParams {
                part,
                base,
                params,
                shard,
            }
        };
        let attn = self.parts_in(layer, ModelPart::Attention);
        let mut v = self.attention_plain_params(self.layer_attention(layer), attn);
        if let (true, Some(ix)) = (self.layer_runs_indexer(layer), self.attention.indexer()) {
            let params = self.indexer_plain_params(ix);
            v.push(plain(ModelPart::Indexer, params, Shard::Replicated));
        }
        if let (true, Some(_)) = (self.layer_is_moe(layer), self.moe) {
            let router = self.router_params_per_layer();
            v.push(plain(ModelPart::Routers, router, Shard::Replicated));
        }
        if mtp {
            v.push(plain(ModelPart::Mtp, 3 * h, Shard::Replicated));
        }
        v
    }

    /// The BF16-only attention parameters of one layer of `kind` under `attn` (`(part, base)`):
    /// the input and post-attention RMSNorms plus MLA's q_a / kv_a layernorms, GQA's q/k/v
    /// biases and sinks, or Gated DeltaNet's depthwise `conv1d` (split by channel), `A_log`,
    /// `dt_bias` (per v head) and its gated RMSNorm (one head's width, replicated).
    pub fn attention_plain_params(
        &self,
        kind: LayerAttention,
        (part, base): (ModelPart, ModelPart),
    ) -> Vec<PlainParams> {
        let h = self.hidden_size;
        let plain = |params: u64, shard: Shard| PlainParams {
            part,
            base,
            params,
            shard,
        };
        if let (LayerAttention::Linear, Some(la)) = (kind, self.linear_attention) {
            let nv = la.num_value_heads as u64;
            return vec![
                plain(2 * h + la.value_head_dim as u64, Shard::Replicated),
                plain(la.conv_dim() * la.conv_kernel as u64 + 2 * nv, Shard::Tp),
            ];
        }
        match self.attention {
            AttentionSpec::Mla {
                q_lora_rank,
                kv_lora_rank,
                ..
            } => {
                // input/post-attention norms, q_a_layernorm, kv_a_layernorm
                let norms = 2 * h + q_lora_rank.map_or(0, u64::from) + kv_lora_rank as u64;
                vec![plain(norms, Shard::Replicated)]
            }
            AttentionSpec::Gqa {
                num_heads,
                num_kv_heads,
                head_dim,
                qkv_bias,
                sinks,
                ..
            } => {
                let mut v = vec![plain(2 * h, Shard::Replicated)];
                if qkv_bias {
                    let d = head_dim as u64;
                    v.push(plain(num_heads as u64 * d, Shard::Tp));
                    v.push(plain(2 * num_kv_heads as u64 * d, Shard::KvHeads));
                }
                if sinks {
                    v.push(plain(num_heads as u64, Shard::Tp));
                }
                v
            }
        }
    }

    /// The storage format of `m` in `layer`: its part's format unless the checkpoint's
    /// exclusion list made it an exception there.
    pub fn module_format(&self, layer: u32, m: &LinearModule) -> WeightFormat {
        self.module_formats
            .overrides
            .iter()
            .find(|o| o.module == m.name && o.layers.contains(layer))
            .map_or_else(|| self.format_of(m.part), |o| o.format)
    }

    /// Bytes per part of `layer`, each module in its own format, weighted by
    /// `share(shard, base part)` (the fraction of the module one GPU holds; 1.0 for the whole
    /// model), added to `out` unrounded.
    pub fn layer_bytes_by_part(
        &self,
        layer: u32,
        share: impl Fn(Shard, ModelPart) -> f64,
        out: &mut BTreeMap<ModelPart, f64>,
    ) {
        for m in self.layer_modules(layer) {
            let bytes = m.params as f64
                * share(m.shard, m.base)
                * self.module_format(layer, &m).bytes_per_value();
            *out.entry(m.part).or_default() += bytes;
        }
        for p in self.layer_plain_params(layer) {
            let bytes = p.params as f64 * share(p.shard, p.base) * 2.0;
            *out.entry(p.part).or_default() += bytes;
        }
    }

    /// Bytes of the fp32 per-output-channel scales of `layer`'s FP8 per-channel modules
    /// (`Fp8 { block: 0 }`, whose [`WeightFormat::bytes_per_value`] leaves them out), added by
    /// part to `out`. A scale belongs to an output channel, so a column-parallel module (q/k/v,
    /// gate/up) keeps the scales of its own output slice (`share`, as its weights), while a
    /// row-parallel one (`o_proj`, `down_proj`, `out_proj`: its input is what TP slices) keeps
    /// every output channel's scale on every rank, for the experts it holds (`row_share`: the
    /// share of a part's experts one GPU holds, 1/ep of the routed ones; 1 for anything else).
    /// SGLang builds them so: `ChannelQuantScaleParameter` of `sum(output_partition_sizes)` rows,
    /// FusedMoE's `w2_weight_scale` of `[local experts, hidden, 1]`. Under TP8 that is 2% on top
    /// of GLM-4.7-FP8's down projections (4 bytes per 192 one-byte values).
    pub fn layer_channel_scale_bytes_by_part(
        &self,
        layer: u32,
        share: impl Fn(Shard, ModelPart) -> f64,
        row_share: impl Fn(ModelPart) -> f64,
        out: &mut BTreeMap<ModelPart, f64>,
    ) {
        let h = self.hidden_size;
        let mla = self.attention.mla_dims();
        for m in self.layer_modules(layer) {
            if self.module_format(layer, &m) != (WeightFormat::Fp8 { block: 0 }) {
                continue;
            }
            let row_parallel = ["o_proj", "down_proj", ".w2", "out_proj"]
                .iter()
                .any(|suffix| m.name.ends_with(suffix));
            let channels = if row_parallel {
                let experts = match (m.base, self.moe) {
                    (ModelPart::RoutedExperts, Some(moe)) => moe.num_routed_experts as u64,
                    _ => 1,
                };
                h as f64 * experts as f64 * row_share(m.base)
            } else {
                let input = match (m.name, mla) {
                    ("self_attn.q_b_proj" | "self_attn.indexer.wq_b", Some(d)) => {
                        d.q_lora_rank.map_or(h, u64::from)
                    }
                    ("self_attn.kv_b_proj", Some(d)) => d.kv_lora_rank,
                    _ => h,
                };
                m.params as f64 / input.max(1) as f64 * share(m.shard, m.base)
            };
            *out.entry(m.part).or_default() += 4.0 * channels;
        }
    }

    /// Checkpoint bytes by part (MTP included), each module in its own format, scales included.
    pub fn weight_bytes_by_part(&self) -> BTreeMap<ModelPart, u64> {
        let mut bytes: BTreeMap<ModelPart, f64> = BTreeMap::new();
        for layer in self.all_layer_indices() {
            self.layer_bytes_by_part(layer, |_, _| 1.0, &mut bytes);
            self.layer_channel_scale_bytes_by_part(layer, |_, _| 1.0, |_| 1.0, &mut bytes);
        }
        for part in [ModelPart::Embeddings, ModelPart::LmHead] {
            let params = self.params_by_part()[&part];
            *bytes.entry(part).or_default() += self.bytes_of(part, params) as f64;
        }
        self.params_by_part()
            .into_keys()
            .map(|p| (p, bytes.get(&p).copied().unwrap_or(0.0).round() as u64))
            .collect()
    }

    /// Average stored bytes per parameter of `part` over the whole model (mixed formats
    /// weighted by their parameters); the part's format's when it has no parameters.
    pub fn bytes_per_value_of(&self, part: ModelPart) -> f64 {
        let params = self.params_by_part().get(&part).copied().unwrap_or(0);
        match params {
            0 => self.format_of(part).bytes_per_value(),
            n => self.weight_bytes_by_part()[&part] as f64 / n as f64,
        }
    }
}
