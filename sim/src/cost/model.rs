//! [`CostModel`]: one layout of one model on one machine, with every per-layout constant worked
//! out once in [`CostModel::new`] so that costing an iteration allocates only its result.

use super::comm::LayoutComm;
use super::kernel::{KernelCurve, OpTime};
use super::memory;
use super::moe::Routing;
use super::{Knobs, MemoryPlan};
use crate::efficiency::{EfficiencyModel, KernelKind};
use crate::error::{Result, SimError};
use crate::machine::Machine;
use crate::machine::placement::Placement;
use crate::options::ServerOptions;
use models::footprint::Footprint;
use models::spec::{AttentionSpec, ModelPart};
use models::{Layout, ModelSpec};

/// CPU time to launch one kernel from PyTorch eagerly: ~5 µs (cudaLaunchKernel ≈ 2–3 µs plus the
/// framework's dispatch). Calibration scales it (`Knobs::cpu_scale`).
pub const CPU_PER_KERNEL_S: f64 = 5e-6;
/// GPU-side gap between dependent kernels launched eagerly (~2 µs launch latency per kernel);
/// zero under a CUDA graph.
pub const GPU_GAP_PER_KERNEL_S: f64 = 2e-6;
/// CPU time of one scheduler turn (batch building, bookkeeping): ~0.5 ms, plus
/// [`CPU_PER_REQUEST_S`] per running request.
pub const SCHEDULER_TURN_S: f64 = 0.5e-3;
/// Scheduler CPU time per request in the batch (input preparation, detokenization hand-off).
pub const CPU_PER_REQUEST_S: f64 = 5e-6;
/// Replaying a captured CUDA graph: one launch, ~20 µs.
pub const GRAPH_LAUNCH_S: f64 = 20e-6;
/// Sampling on the last stage: ~20 µs fixed plus reading the logits once.
pub const SAMPLING_S: f64 = 20e-6;

/// Kernels launched per layer (norms, projections, rope, attention, activation, residual adds):
/// MLA ≈ 12, its DSA indexer ≈ 6 more, GQA ≈ 7; a dense MLP 3; a MoE block (router, top-k,
/// alignment, two grouped GEMMs, activation, shared expert, combine) ≈ 10; one per collective.
pub(super) const KERNELS_MLA: f64 = 12.0;
pub(super) const KERNELS_INDEXER: f64 = 6.0;
pub(super) const KERNELS_GQA: f64 = 7.0;
pub(super) const KERNELS_DENSE_MLP: f64 = 3.0;
pub(super) const KERNELS_MOE: f64 = 10.0;
/// Embedding, final norm, lm_head, logits gather, sampling.
pub(super) const KERNELS_HEAD: f64 = 6.0;

/// Token counts 2^0 … 2^(ENVELOPE_KNOTS−1) at which weight-op times are tabulated.
pub(super) const ENVELOPE_KNOTS: usize = 18;

/// A weight op's time tabulated at token counts 2^k (the efficiency curves' knots), made
/// non-decreasing by a running maximum, and interpolated linearly in tokens between knots (exact
/// where time is flat or proportional to tokens). The fitted efficiency can rise faster than the
/// work between two sizes (a GEMM at M = 16 measured a little faster than at M = 1); evaluating
/// the roofline directly would then predict a bigger batch cheaper than a smaller one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Envelope {
    pub s: [f64; ENVELOPE_KNOTS],
    pub memory_bound: [bool; ENVELOPE_KNOTS],
}

impl Envelope {
    pub const EMPTY: Envelope = Envelope {
        s: [0.0; ENVELOPE_KNOTS],
        memory_bound: [true; ENVELOPE_KNOTS],
    };
}

/// A weight GEMM on one GPU: its bytes and parameters per layer, in its own format.
#[derive(Debug, Clone)]
pub(super) struct Gemm {
    pub bytes: f64,
    pub params: f64,
    pub curve: KernelCurve,
    pub envelope: Envelope,
}

/// Builds the [`KernelCurve`]s of one machine with the knobs in force.
struct Curves<'a> {
    machine: &'a Machine,
    peak_byte_s: f64,
    compute_scale: f64,
}

impl Curves<'_> {
    fn of(&self, kind: KernelKind, dtype: &str) -> KernelCurve {
        KernelCurve::new(
            EfficiencyModel::builtin(),
            &self.machine.gpu,
            kind,
            dtype,
            self.peak_byte_s,
            self.compute_scale * self.machine.compute_peak_scale(kind, dtype),
        )
    }

    fn gemm(&self, bytes: f64, spec: &ModelSpec, part: ModelPart) -> Gemm {
        let f = spec.format_of(part);
        Gemm {
            bytes,
            params: bytes / f.bytes_per_value(),
            curve: self.of(KernelKind::DenseGemm, &f.name()),
            envelope: Envelope::EMPTY,
        }
    }
}

/// Routed experts as one GPU sees them.
#[derive(Debug, Clone)]
pub(super) struct Experts {
    pub routing: Routing,
    /// Bytes of one expert held by this GPU (its `ep/tp` slice of the matrices).
    pub bytes_per_expert: f64,
    /// Parameters of that slice.
    pub params_per_expert: f64,
    pub curve: KernelCurve,
    pub envelope: Envelope,
}

/// Attention-core constants per GPU and layer.
#[derive(Debug, Clone)]
pub(super) struct AttnCore {
    /// Decode attention (MLA or GQA) in the KV-cache dtype.
    pub decode: KernelCurve,
    /// DSA indexer scoring in decode (streams the fp8 index-key cache).
    pub indexer_decode: KernelCurve,
    /// Prefill attention core (bf16 tensor cores) and the indexer's fp8 scoring.
    pub prefill: KernelCurve,
    pub indexer_prefill: KernelCurve,
    /// FLOPs per (query, attended key) pair in decode.
    pub decode_flops_per_pair: f64,
    /// FLOPs per (query, attended key) pair in prefill.
    pub prefill_flops_per_pair: f64,
    /// KV bytes read per attended key.
    pub kv_bytes_per_key: f64,
    /// DSA: keys a query attends at most (`index_topk`).
    pub topk_cap: Option<u64>,
    /// DSA indexer: FLOPs and index-cache bytes per scored key (0 without an indexer).
    pub indexer_flops_per_key: f64,
    pub indexer_bytes_per_key: f64,
}

/// Layers of one pipeline stage.
#[derive(Debug, Clone, Copy)]
pub(super) struct StageShape {
    pub dense_layers: f64,
    pub moe_layers: f64,
    pub first: bool,
    pub last: bool,
}

/// The cost model of one layout: implements [`super::IterationModel`].
#[derive(Debug, Clone)]
pub struct CostModel {
    pub(super) layout: Layout,
    pub(super) memory: MemoryPlan,
    /// Bandwidth base: datasheet × machine scale × knob, bytes/s.
    pub(super) peak_bytes_per_s: f64,
    pub(super) knobs: Knobs,
    pub(super) opts: ServerOptions,
    pub(super) hidden: f64,
    pub(super) vocab: f64,
    pub(super) stages: Vec<StageShape>,
    pub(super) attn: Gemm,
    pub(super) indexer: Gemm,
    pub(super) dense_mlp: Gemm,
    pub(super) shared: Gemm,
    pub(super) router: Gemm,
    pub(super) lm_head: Gemm,
    pub(super) experts: Option<Experts>,
    pub(super) core: AttnCore,
    pub(super) comm: LayoutComm,
    pub(super) placement: Placement,
    pub(super) kernels_attn: f64,
    model_name: String,
    memory_notes: Vec<String>,
}

impl CostModel {
    /// Costs `model` under `layout` on `machine` with SGLang `opts` and calibration `knobs`.
    ///
    /// Fails when the layout is impossible (heads/experts do not divide, `tp × pp` is not the
    /// machine's GPU count, an all-to-all backend without `--ep-size` = `--tp`), when an option is
    /// out of range, or when the weights do not fit ([`SimError::DoesNotFit`] says by how much).
    pub fn new(
        machine: &Machine,
        model: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
        knobs: Knobs,
    ) -> Result<CostModel> {
        check_options(opts)?;
        layout.validate_for_gpus(model, machine.gpu_count)?;
        if opts.moe_a2a_backend.is_some() && (model.moe.is_none() || layout.ep != layout.tp) {
            return Err(SimError::ImpossibleLayout {
                layout: layout.short_name(),
                reason:
                    "--moe-a2a-backend runs the experts expert-parallel over the whole TP group: \
                         use a MoE model with --ep-size equal to --tp"
                        .into(),
            });
        }
        let placement = machine.place(&layout)?;
        let fp = models::footprint::footprint(model, &layout)?;
        let memory = memory::checked_plan(model, &fp, machine.memory_bytes(), opts)?;
        let notes = memory.notes.clone();
        let mut cm = Self::build(machine, model, layout, opts, knobs, fp, memory, placement);
        cm.memory_notes = notes;
        Ok(cm)
    }

    /// Warnings about the memory plan (reserves beyond the headroom, …), one line each.
    pub fn memory_notes(&self) -> &[String] {
        &self.memory_notes
    }

    /// The model's name (preset or path), for tables.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// Where each communication curve of this layout came from (measured, derived, assumed).
    pub fn comm_notes(&self) -> &[String] {
        &self.comm.notes
    }

    /// The GPUs of each pipeline stage.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The server options this layout was costed with.
    pub fn options(&self) -> &ServerOptions {
        &self.opts
    }

    /// The knobs in force.
    pub fn knobs(&self) -> Knobs {
        self.knobs
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        machine: &Machine,
        model: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
        knobs: Knobs,
        fp: Footprint,
        memory: MemoryPlan,
        placement: Placement,
    ) -> CostModel {
        let per_layer =
            |part: ModelPart, moe_part: bool| per_layer_bytes(model, &fp, part, moe_part);
        let peak_bytes_per_s = machine.peak_memory_bytes_per_s() * knobs.memory_scale;
        let curves = Curves {
            machine,
            peak_byte_s: peak_bytes_per_s,
            compute_scale: knobs.compute_scale,
        };
        let experts = model.moe.map(|m| {
            let routed = per_layer(ModelPart::RoutedExperts, true);
            let per_rank = m.num_routed_experts as f64 / layout.ep as f64;
            let bytes = routed / per_rank.max(1.0);
            let f = model.format_of(ModelPart::RoutedExperts);
            Experts {
                routing: Routing::new(m.num_routed_experts, m.top_k, layout.ep),
                bytes_per_expert: bytes,
                params_per_expert: bytes / f.bytes_per_value(),
                curve: curves.of(KernelKind::MoeGrouped, &f.name()),
                envelope: Envelope::EMPTY,
            }
        });
        let last = &fp.per_gpu[fp.per_gpu.len() - 1];
        let lm_bytes = last
            .weight_bytes_by_part
            .get(&ModelPart::LmHead)
            .copied()
            .unwrap_or(0);
        let stages = stage_shapes(model, &fp, layout.pp);
        let core = attn_core(model, &layout, opts, &curves);
        let kernels_attn = match model.attention {
            AttentionSpec::Mla { indexer, .. } => {
                KERNELS_MLA
                    + if indexer.is_some() {
                        KERNELS_INDEXER
                    } else {
                        0.0
                    }
            }
            AttentionSpec::Gqa { .. } => KERNELS_GQA,
        };
        let mut cm = CostModel {
            layout,
            memory,
            peak_bytes_per_s,
            knobs,
            opts: opts.clone(),
            hidden: model.hidden_size as f64,
            vocab: model.vocab_size as f64,
            stages,
            attn: curves.gemm(
                per_layer(ModelPart::Attention, false),
                model,
                ModelPart::Attention,
            ),
            indexer: curves.gemm(
                per_layer(ModelPart::Indexer, false),
                model,
                ModelPart::Indexer,
            ),
            dense_mlp: curves.gemm(
                per_layer(ModelPart::DenseMlp, false),
                model,
                ModelPart::DenseMlp,
            ),
            shared: curves.gemm(
                per_layer(ModelPart::SharedExperts, true),
                model,
                ModelPart::SharedExperts,
            ),
            router: curves.gemm(
                per_layer(ModelPart::Routers, true),
                model,
                ModelPart::Routers,
            ),
            lm_head: curves.gemm(lm_bytes as f64, model, ModelPart::LmHead),
            experts,
            core,
            comm: LayoutComm::new(machine, &layout, &placement, opts),
            placement,
            kernels_attn,
            model_name: model.name.clone(),
            memory_notes: Vec::new(),
        };
        cm.fill_envelopes();
        cm
    }

    /// Tabulates every weight op's envelope (see [`Envelope`]).
    fn fill_envelopes(&mut self) {
        let table = |f: &dyn Fn(f64) -> OpTime| {
            let mut e = Envelope::EMPTY;
            let mut run: f64 = 0.0;
            for k in 0..ENVELOPE_KNOTS {
                let op = f((1u64 << k) as f64);
                run = run.max(op.s);
                e.s[k] = run;
                e.memory_bound[k] = op.memory_bound;
            }
            e
        };
        let raw = |g: &Gemm| table(&|t| self.gemm_raw(g, t));
        let envs = [
            raw(&self.attn),
            raw(&self.indexer),
            raw(&self.dense_mlp),
            raw(&self.shared),
            raw(&self.router),
            raw(&self.lm_head),
        ];
        let moe = self
            .experts
            .as_ref()
            .map(|e| table(&|t| self.moe_raw(e, t)));
        for (g, e) in [
            &mut self.attn,
            &mut self.indexer,
            &mut self.dense_mlp,
            &mut self.shared,
            &mut self.router,
            &mut self.lm_head,
        ]
        .into_iter()
        .zip(envs)
        {
            g.envelope = e;
        }
        if let (Some(x), Some(e)) = (self.experts.as_mut(), moe) {
            x.envelope = e;
        }
    }
}

/// Options that make no sense (a fraction outside (0, 1], …).
fn check_options(opts: &ServerOptions) -> Result<()> {
    if !(opts.mem_fraction_static > 0.0 && opts.mem_fraction_static <= 1.0) {
        return Err(SimError::InvalidOption {
            flag: "--mem-fraction-static",
            problem: format!(
                "{} is not a fraction in (0, 1]; SGLang's default is about 0.85",
                opts.mem_fraction_static
            ),
        });
    }
    if opts.chunked_prefill_size == 0 {
        return Err(SimError::InvalidOption {
            flag: "--chunked-prefill-size",
            problem: "must be at least 1 token (SGLang's default is 8192)".into(),
        });
    }
    Ok(())
}

/// Bytes of `part` per layer on one GPU: the footprint's bytes of a stage holding such layers,
/// divided by how many it holds (MoE-only parts by MoE layers, dense MLP by dense layers).
fn per_layer_bytes(model: &ModelSpec, fp: &Footprint, part: ModelPart, moe_part: bool) -> f64 {
    for g in &fp.per_gpu {
        let layers = g.layers.clone().filter(|&l| {
            let is_moe = model.moe_layers.get(l as usize).copied().unwrap_or(false);
            match part {
                ModelPart::DenseMlp => !is_moe,
                _ if moe_part => is_moe,
                _ => true,
            }
        });
        let n = layers.count();
        if n > 0 {
            let bytes = g.weight_bytes_by_part.get(&part).copied().unwrap_or(0);
            return bytes as f64 / n as f64;
        }
    }
    0.0
}

/// Dense and MoE layer counts of each stage.
fn stage_shapes(model: &ModelSpec, fp: &Footprint, pp: u32) -> Vec<StageShape> {
    fp.per_gpu
        .iter()
        .filter(|g| g.tp_rank == 0)
        .map(|g| {
            let moe = g
                .layers
                .clone()
                .filter(|&l| model.moe_layers.get(l as usize).copied().unwrap_or(false))
                .count() as f64;
            let all = (g.layers.end - g.layers.start) as f64;
            StageShape {
                dense_layers: all - moe,
                moe_layers: moe,
                first: g.stage == 0,
                last: g.stage + 1 == pp,
            }
        })
        .collect()
}

/// Attention-core constants of one GPU: heads it computes, KV bytes it reads per key.
fn attn_core(
    model: &ModelSpec,
    layout: &Layout,
    opts: &ServerOptions,
    curves: &Curves,
) -> AttnCore {
    let kv_dtype = memory::kv_dtype(model, opts);
    let attn_tp = if layout.dp_attention {
        1.0
    } else {
        layout.tp as f64
    };
    let kv_name = match kv_dtype {
        models::KvDtype::Bf16 => "bf16",
        models::KvDtype::Fp8 => "fp8",
    };
    let per_layer_kv = model.kv_bytes_per_token_per_layer(kv_dtype) as f64;
    let decode_kind = if model.attention.is_mla() {
        KernelKind::MlaDecode
    } else {
        KernelKind::GqaDecode
    };
    let decode = curves.of(decode_kind, kv_name);
    let indexer_decode = curves.of(KernelKind::GqaDecode, "fp8");
    let prefill = curves.of(KernelKind::Prefill, "bf16");
    let indexer_prefill = curves.of(KernelKind::Prefill, "fp8");
    match model.attention {
        AttentionSpec::Mla {
            num_heads,
            kv_lora_rank,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
            indexer,
            ..
        } => {
            let heads = num_heads as f64 / attn_tp;
            // absorbed MLA: scores over (kv_lora + rope) dims, values over kv_lora dims
            let absorbed = 2.0 * heads * (kv_lora_rank + qk_rope_head_dim) as f64
                + 2.0 * heads * kv_lora_rank as f64;
            // prefill without DSA runs MLA as multi-head attention over up-projected K and V
            let mha = 2.0 * heads * (qk_nope_head_dim + qk_rope_head_dim) as f64
                + 2.0 * heads * v_head_dim as f64;
            AttnCore {
                decode,
                indexer_decode,
                prefill,
                indexer_prefill,
                decode_flops_per_pair: absorbed,
                prefill_flops_per_pair: if indexer.is_some() { absorbed } else { mha },
                // the latent is replicated on every TP rank: TP does not shrink it
                kv_bytes_per_key: per_layer_kv,
                topk_cap: indexer.map(|i| i.topk as u64),
                indexer_flops_per_key: indexer
                    .map_or(0.0, |i| 2.0 * i.num_heads as f64 * i.head_dim as f64),
                indexer_bytes_per_key: model.indexer_cache_bytes_per_token_per_layer() as f64,
            }
        }
        AttentionSpec::Gqa {
            num_heads,
            num_kv_heads,
            head_dim,
            ..
        } => {
            let heads = num_heads as f64 / attn_tp;
            let kv_split = attn_tp.min(num_kv_heads.max(1) as f64);
            AttnCore {
                decode,
                indexer_decode,
                prefill,
                indexer_prefill,
                decode_flops_per_pair: 4.0 * heads * head_dim as f64,
                prefill_flops_per_pair: 4.0 * heads * head_dim as f64,
                kv_bytes_per_key: per_layer_kv / kv_split,
                topk_cap: None,
                indexer_flops_per_key: 0.0,
                indexer_bytes_per_key: 0.0,
            }
        }
    }
}
