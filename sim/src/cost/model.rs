//! [`CostModel`]: one layout of one model on one machine, with every per-layout constant worked
//! out once in [`CostModel::new`] so that costing an iteration allocates only its result.
//!
//! The layer's kernels come from [`super::inventory`]; each weight GEMM becomes a
//! [`super::block::Gemm`] with its own latency floor and envelope, the small kernels pay the
//! machine's small-kernel floor ([`super::floors`]). Forward passes only: speculative decoding
//! is [`super::speculative::SpeculativeModel`], built over two of these.

use super::attn_core::{AttnCore, attn_core, sparse_attention};
use super::block::{Block, SmallKernelRates};
use super::comm::LayoutComm;
use super::curves::Curves;
use super::envelope::Envelope;
use super::floors::{CpuCosts, Floors};
use super::inventory::LayerInventory;
use super::kernel::KernelCurve;
use super::memory;
use super::moe::Routing;
use super::{Knobs, MemoryPlan};
use crate::efficiency::KernelKind;
use crate::engine::{Engine, Knob};
use crate::error::{Result, SimError};
use crate::machine::Machine;
use crate::machine::placement::Placement;
use crate::options::ServerOptions;
use models::footprint::Footprint;
use models::spec::ModelPart;
use models::{Layout, ModelSpec};

/// GPU-side gap between dependent kernels launched eagerly (launch latency the GPU sees per
/// kernel, ≈ 2 µs); zero under a CUDA graph, whose node cost is in the small-kernel floor.
pub const GPU_GAP_PER_KERNEL_S: f64 = 2e-6;
/// Share of the datasheet bandwidth that small elementwise kernels (norms, rotary, activations)
/// stream at: ≈ 80%, a device copy's rate less their reductions and index math.
pub const ELEMENTWISE_FRACTION: f64 = 0.8;

/// `model` as the server holds it under `layout` on `machine`: the b12x vLLM fork pads the heads a
/// TP size does not divide, and the padded model is the one stored, read and computed
/// ([`crate::engine::vllm::virtual_tp`]; the fork's refusals are impossible layouts); the
/// launch's model-config overrides and the engine's Gated-DeltaNet state dtype ([`overridden`]);
/// SGLang's `auto` cache for a DSA model. The note says what changed.
pub(super) fn served_spec<'a>(
    machine: &Machine,
    model: &'a ModelSpec,
    layout: &Layout,
    opts: &ServerOptions,
) -> Result<(std::borrow::Cow<'a, ModelSpec>, Option<String>)> {
    let sm = super::attn_backend::sm_major(machine);
    let (spec, note) =
        crate::engine::vllm::virtual_tp::served_spec(model, layout, opts, sm == Some(12)).map_err(
            |reason| SimError::ImpossibleLayout {
                layout: layout.short_name(),
                reason,
            },
        )?;
    let (spec, override_note) = overridden(spec, opts)?;
    let note = match (note, override_note) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    Ok((sglang_dsa_auto_kv(spec, sm, layout, opts), note))
}

/// `spec` as the engine loads it under the launch line: the model-config overrides
/// ([`ServerOptions::model_overrides`]: an `index_topk_pattern` decides which layers score their
/// own DSA top-k, the rest reuse the previous layer's, so they hold no index keys and run no
/// indexer), the BF16 linears quantized at load ([`ServerOptions::online_quant`]), and the
/// engine's dtype for a Gated-DeltaNet state the config leaves unsaid
/// ([`crate::engine::ServingEngine::linear_state_dtype_bytes`]). The note says what was applied
/// and what was not.
fn overridden<'a>(
    spec: std::borrow::Cow<'a, ModelSpec>,
    opts: &ServerOptions,
) -> Result<(std::borrow::Cow<'a, ModelSpec>, Option<String>)> {
    let o = &opts.model_overrides;
    let mut said = Vec::new();
    let mut spec = spec;
    if let Some(p) = &o.index_topk_pattern {
        if spec.attention.indexer().is_none() {
            said.push(format!(
                "index_topk_pattern ignored: {} has no DSA indexer",
                spec.name
            ));
        } else {
            let layers =
                spec.indexer_layers_from_pattern(p)
                    .map_err(|problem| SimError::InvalidOption {
                        flag: opts.engine.flag(crate::engine::Knob::ModelConfigOverrides),
                        problem,
                    })?;
            let own = layers.iter().filter(|x| **x).count();
            said.push(format!(
                "index_topk_pattern: {own} of {} layers score their own top-k, the rest reuse the previous layer's",
                layers.len()
            ));
            spec.to_mut().indexer_layers = layers;
        }
    }
    if let Some(q) = &opts.online_quant {
        spec = online_quantized(spec, q, &mut said);
    }
    if let Some(la) = spec.linear_attention {
        let rule = opts.engine.rules();
        if let Some(b) =
            rule.linear_state_dtype_bytes(la.state_dtype_stated, opts.linear_state_dtype_bytes)
            && b != la.state_dtype_bytes
        {
            said.push(format!(
                "Gated-DeltaNet state held in {b}-byte values ({}'s cache dtype for it; the model's figure is {})",
                opts.engine.name(),
                la.state_dtype_bytes
            ));
            spec.to_mut().linear_attention = Some(la.with_state_dtype_bytes(b));
        }
    }
    if !o.not_modelled.is_empty() {
        said.push(format!(
            "model-config overrides not modelled: {}",
            o.not_modelled.join(", ")
        ));
    }
    Ok((spec, (!said.is_empty()).then(|| said.join("; "))))
}

/// `spec` with its BF16 weights quantized at load as `q` says
/// ([`models::ModelSpec::with_online_quant`]), and a line saying what was converted.
fn online_quantized<'a>(
    spec: std::borrow::Cow<'a, ModelSpec>,
    q: &crate::options::OnlineQuant,
    said: &mut Vec<String>,
) -> std::borrow::Cow<'a, ModelSpec> {
    let name = q.linear.or(q.moe).map_or_else(String::new, |f| f.name());
    if q.only_unquantized && !spec.stored_in_bf16() {
        said.push(format!(
            "{name} at load: {} is a quantized checkpoint, whose own scheme the method names; nothing converted",
            spec.name
        ));
        return spec;
    }
    let (quantized, parts) = spec.with_online_quant(q.linear, q.moe, &q.ignore);
    if parts.is_empty() {
        said.push(format!(
            "online {name}: {} stores none of those weights in BF16, nothing converted",
            spec.name
        ));
        return spec;
    }
    said.push(format!(
        "online {name}: the BF16 {} converted at load{}",
        parts
            .iter()
            .map(|p| match p {
                models::ModelPart::Attention => "attention (indexer too)",
                models::ModelPart::DenseMlp => "dense MLPs",
                models::ModelPart::SharedExperts => "shared experts",
                models::ModelPart::RoutedExperts => "routed experts",
                _ => "linears",
            })
            .collect::<Vec<_>>()
            .join(", "),
        if q.ignore.is_empty() {
            String::new()
        } else {
            format!(" (kept BF16: {})", q.ignore.join(", "))
        }
    ));
    std::borrow::Cow::Owned(quantized)
}

/// SGLang's cache dtype for a DSA model when `--kv-cache-dtype` is `auto` (none given): not the
/// checkpoint's but the GPU's, fp8 from SM100 on and bf16 below (`server_args.py`, the DSA
/// adjustments: "Setting KV cache dtype to … for DeepSeek DSA"); between #20086 (2026-03-07)
/// and #21914 (2026-04-02) bf16 on SM100 too for a one-replica server (no DP attention),
/// which a record dated then says ([`crate::options::DsaBuild`]).
fn sglang_dsa_auto_kv<'a>(
    spec: std::borrow::Cow<'a, ModelSpec>,
    sm: Option<u32>,
    layout: &Layout,
    opts: &ServerOptions,
) -> std::borrow::Cow<'a, ModelSpec> {
    if opts.engine != crate::engine::Engine::Sglang
        || opts.kv_cache_dtype.is_some()
        || spec.attention.indexer().is_none()
    {
        return spec;
    }
    let one_replica_window = opts.dsa_build.kv_auto_dp_window && !layout.dp_attention;
    let auto = if sm.is_some_and(|m| m >= 10) && !one_replica_window {
        models::KvDtype::Fp8
    } else {
        models::KvDtype::Bf16
    };
    if spec.default_kv_dtype == auto {
        return spec;
    }
    let mut owned = spec.into_owned();
    owned.default_kv_dtype = auto;
    std::borrow::Cow::Owned(owned)
}

/// Routed experts as one GPU sees them.
#[derive(Debug, Clone)]
pub(super) struct Experts {
    pub routing: Routing,
    /// Bytes of one expert held by this GPU (its `ep/tp` slice of the matrices).
    pub bytes_per_expert: f64,
    /// Parameters of that slice.
    pub params_per_expert: f64,
    /// What the MoE runner streams beyond the tables' kernel ([`super::moe::MoeRunner`]).
    pub runner: super::moe::MoeRunner,
    pub curve: KernelCurve,
    /// What the layer's time never exceeds ([`super::moe_bound`]); `None` for a format no line
    /// was fitted for.
    pub bound: Option<super::moe_bound::LayerBound>,
    /// The measured rows of the model's own shape that price decode shapes where the curves
    /// would extrapolate ([`super::moe_shape_table`]).
    pub table: Option<super::moe_shape_table::ShapeTable>,
    /// The engine's Triton fused MoE runs its default launch config (no tuned file), priced
    /// where measured ([`super::moe_config`]); `None` = tuned, as the tables ran.
    pub default_config: Option<super::moe_config::DefaultConfig>,
    /// [`moe_raw`] tabulated, with knots where the runner switches kernel.
    pub envelope: Envelope,
}

/// Layers of one pipeline stage.
#[derive(Debug, Clone, Copy)]
pub(super) struct StageShape {
    pub dense_layers: f64,
    pub moe_layers: f64,
    /// Layers that run their own DSA indexer.
    pub indexer_layers: f64,
    pub first: bool,
    pub last: bool,
}

/// The cost model of one layout: implements [`super::IterationModel`].
#[derive(Debug, Clone)]
pub struct CostModel {
    pub(super) layout: Layout,
    pub(super) memory: MemoryPlan,
    pub(super) knobs: Knobs,
    pub(super) opts: ServerOptions,
    pub(super) hidden: f64,
    pub(super) vocab: f64,
    pub(super) stages: Vec<StageShape>,
    pub(super) attention: Block,
    pub(super) indexer: Block,
    pub(super) dense_mlp: Block,
    pub(super) moe: Block,
    pub(super) embed: Block,
    pub(super) head: Block,
    pub(super) experts: Option<Experts>,
    pub(super) core: AttnCore,
    pub(super) comm: LayoutComm,
    /// vLLM's decode context parallelism collectives, when DCP > 1 ([`super::dcp`]).
    pub(super) dcp: Option<super::dcp::DcpComm>,
    pub(super) placement: Placement,
    pub(super) small: SmallKernelRates,
    pub(super) floors: Floors,
    pub(super) cpu: CpuCosts,
    /// `--enable-two-batch-overlap` runs for this model and layout ([`super::tbo`]).
    pub(super) two_batch_overlap: bool,
    /// Weights held in host memory ([`super::offload`]); `None` = all on the GPU.
    pub(super) offload: Option<super::offload::OffloadPlan>,
    model_name: String,
    memory_notes: Vec<String>,
    /// What the engine changed in the model to serve it so: the b12x fork's padded heads, the
    /// launch's model-config overrides, its Gated-DeltaNet state dtype ([`served_spec`]).
    served_note: Option<String>,
    /// What the prediction says of a default fused-MoE config (its price or why it has none),
    /// where the options say the engine ran one ([`Self::default_config_note`]).
    config_note: Option<String>,
}

impl CostModel {
    /// Costs `model` under `layout` on `machine` with SGLang `opts` and calibration `knobs`.
    ///
    /// Fails when the layout is impossible (heads/experts do not divide, `tp × pp` is not the
    /// machine's GPU count, an all-to-all backend without `--ep-size` = `--tp`), when an option is
    /// out of range, or when the weights do not fit ([`SimError::DoesNotFit`] says by how much).
    /// `opts.speculative` only sizes the memory plan (the draft's weights and KV pool): the
    /// model costs forward passes, and [`super::ServedModel::new`] builds the speculative model
    /// where speculation is on.
    pub fn new(
        machine: &Machine,
        model: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
        knobs: Knobs,
    ) -> Result<CostModel> {
        let (model, served_note) = served_spec(machine, model, &layout, opts)?;
        let model = model.as_ref();
        Self::check(machine, model, layout, opts)?;
        let placement = machine.place(&layout)?;
        let fp = models::footprint::footprint(model, &layout)?;
        let offload = offload_plan(machine, model, &fp, opts)?;
        let on_gpu = offload.as_ref().map(|p| p.on_gpu(&fp));
        let memory = memory::checked_plan(
            model,
            on_gpu.as_ref().unwrap_or(&fp),
            machine.memory_bytes(),
            opts,
        )?;
        let mut notes = memory.notes.clone();
        notes.extend(served_note.clone());
        notes.extend(offload.iter().flat_map(|p| p.notes()));
        let mut cm = Self::build(machine, model, layout, opts, knobs, fp, memory, placement);
        cm.offload = offload;
        let (tbo, tbo_note) = super::tbo::applies(model, opts);
        cm.two_batch_overlap = tbo;
        notes.extend(tbo_note);
        notes.extend(cm.moe_note(&machine.gpu, model));
        cm.config_note = default_config_note(machine, model, &layout, opts);
        notes.extend(cm.config_note.clone());
        cm.memory_notes = notes;
        cm.served_note = served_note;
        Ok(cm)
    }

    /// The checks [`CostModel::new`] makes before placing the layout: options in range, the
    /// layout possible for the model and the machine's GPUs, an all-to-all backend and a MoE
    /// runner where they run.
    pub(super) fn check(
        machine: &Machine,
        model: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
    ) -> Result<()> {
        check_options(opts)?;
        layout.validate_for_gpus(model, machine.gpu_count)?;
        if opts.moe_a2a_backend.is_some() && (model.moe.is_none() || layout.ep != layout.tp) {
            return Err(SimError::ImpossibleLayout {
                layout: layout.short_name(),
                reason: format!(
                    "{} runs the experts expert-parallel over the whole TP group: use a MoE \
                     model with {} equal to --tp",
                    Engine::Sglang.flag(Knob::AllToAllBackend),
                    Engine::Sglang.flag(Knob::ExpertParallelSize)
                ),
            });
        }
        if let Some(reason) = super::moe::runner_refusal(opts, model, &layout) {
            return Err(SimError::ImpossibleLayout {
                layout: layout.short_name(),
                reason,
            });
        }
        if let Some(reason) = super::dcp::refusal(model, &layout, opts.decode_context_parallel) {
            return Err(SimError::ImpossibleLayout {
                layout: layout.short_name(),
                reason,
            });
        }
        Ok(())
    }

    /// Like [`CostModel::new`] without the options and fit checks, for a model whose weights
    /// and KV another model's memory plan holds (its plan is empty); `None` where the layout
    /// cannot be placed.
    pub(super) fn unplanned(
        machine: &Machine,
        model: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
        knobs: Knobs,
    ) -> Option<CostModel> {
        let (model, _) = served_spec(machine, model, &layout, opts).ok()?;
        let model = model.as_ref();
        let placement = machine.place(&layout).ok()?;
        let fp = models::footprint::footprint(model, &layout).ok()?;
        Some(Self::build(
            machine,
            model,
            layout,
            opts,
            knobs,
            fp,
            MemoryPlan::default(),
            placement,
        ))
    }

    /// Records what the engine changed in the model to serve it (the speculative model makes its
    /// served target before it builds it): [`Self::served_note`] and a line of the memory notes.
    pub(super) fn set_served_note(&mut self, note: String) {
        self.add_note(note.clone());
        self.served_note = Some(note);
    }

    /// A line said beside every prediction of this model ([`Self::memory_notes`]).
    pub(super) fn add_note(&mut self, note: String) {
        self.memory_notes.push(note);
    }

    /// What the engine changed in the model to serve it so ([`served_spec`]): the b12x vLLM
    /// fork's padded heads, expert columns and vocabulary where the TP size does not divide the
    /// heads, the launch's model-config overrides, the Gated-DeltaNet state dtype; `None` where
    /// nothing was.
    /// The weights held in host memory ([`super::offload`]); `None` = all on the GPU.
    pub fn offload(&self) -> Option<&super::offload::OffloadPlan> {
        self.offload.as_ref()
    }

    pub fn served_note(&self) -> Option<&str> {
        self.served_note.as_deref()
    }

    /// Warnings about the memory plan (reserves beyond the headroom, …), one line each.
    pub fn memory_notes(&self) -> &[String] {
        &self.memory_notes
    }

    /// What prices decode attention at `requests` × `context` cached tokens: a measured kernel
    /// table or the efficiency curve (the error model reads the latter as an extrapolation).
    pub fn decode_attention_note(&self, requests: u32, context_tokens: u32) -> String {
        self.core
            .decode_note(f64::from(requests), f64::from(context_tokens))
    }

    /// What prices a DSA checkpoint's prefill attention where SGLang pads its sparse kernel's
    /// heads ([`super::attn_core::SparsePrefill`]); `None` elsewhere.
    pub fn prefill_attention_note(&self) -> Option<String> {
        self.core.sparse_prefill.and_then(|sp| sp.note())
    }

    /// What priced the linear (Gated DeltaNet) layers' decode at `requests` requests: the
    /// engine's measured kernel ([`super::gdn_table`]); `None` where the efficiency curve did
    /// (no linear layers, or no table for this engine, GPU and head split).
    pub fn gdn_decode_note(&self, requests: u32) -> Option<String> {
        self.core
            .mix
            .gdn_decode
            .map(|g| g.note(f64::from(requests)))
    }

    /// What prices the routed experts where it is not the measured curves: the model's own rows
    /// of the fused-MoE table ([`super::moe_shape_table`]), else the extrapolation note of
    /// [`super::moe::shape_note`]; and a runner priced off its benchmark's shape
    /// ([`super::moe::MoeRunner::benchmark_shape_note`]). Empty where the measurements cover it.
    pub fn moe_note(&self, gpu: &models::GpuSpec, model: &ModelSpec) -> Vec<String> {
        let mut notes: Vec<String> = Vec::new();
        match self.experts.as_ref().and_then(|e| e.table.as_ref()) {
            Some(t) if t.prices_prefill => notes.push(format!(
                "MoE: kernel table, {}, at the touched experts of each batch, prefill chunks too",
                t.source
            )),
            Some(t) => notes.push(format!(
                "MoE decode: kernel table, {}, at the touched experts of each batch; prefill chunks by the curves",
                t.source
            )),
            None => notes.extend(super::moe::shape_note(gpu, model, &self.layout)),
        }
        notes.extend(
            self.experts
                .as_ref()
                .and_then(|e| e.runner.benchmark_shape_note()),
        );
        notes
    }

    /// Whether the routed experts are priced on the engine's default Triton config
    /// ([`super::moe_config`]): the options say so and the measurement speaks for them.
    pub fn prices_default_config(&self) -> bool {
        self.experts
            .as_ref()
            .is_some_and(|e| e.default_config.is_some())
    }

    /// What the prediction says where the options say the engine's Triton fused MoE found no
    /// tuned file ([`ServerOptions::moe_default_config`]): its price ([`super::moe_config`]), or
    /// why it has none and the published range; `None` where they say tuned.
    pub fn default_config_note(&self) -> Option<&str> {
        self.config_note.as_deref()
    }

    /// The model's name (preset or path), for tables.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// Where each communication curve of this layout came from (measured, derived, assumed).
    pub fn comm_notes(&self) -> &[String] {
        &self.comm.notes
    }

    /// Where the small-kernel floor and the CPU launch cost came from.
    pub fn floor_notes(&self) -> Vec<String> {
        vec![
            format!("small-kernel floor: {}", self.floors.source),
            format!(
                "CPU per eager launch: {:.1} µs × cpu knob {:.2} ({})",
                self.cpu.per_launch_s * 1e6,
                self.knobs.cpu_scale,
                self.cpu.source
            ),
        ]
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

    /// The CPU costs before the knobs.
    pub fn cpu_costs(&self) -> &CpuCosts {
        &self.cpu
    }

    /// The highest memory and compute fractions of any curve this model uses (with the knobs in
    /// force): a knob may scale them up to 1, the datasheet, and no further.
    pub fn max_fractions(&self) -> (f64, f64) {
        let blocks = [
            &self.attention,
            &self.indexer,
            &self.dense_mlp,
            &self.moe,
            &self.embed,
            &self.head,
        ];
        let curves = blocks
            .iter()
            .flat_map(|b| b.gemms.iter().map(|g| &g.curve))
            .chain(self.experts.iter().map(|e| &e.curve))
            .chain([&self.core.decode, &self.core.prefill]);
        curves.fold((0.0, 0.0), |(m, c), k| {
            let (km, kc) = k.max_fractions();
            (m.max(km), c.max(kc))
        })
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
        let peak_bytes_per_s = machine.peak_memory_bytes_per_s() * knobs.memory_scale;
        let floors = Floors::of(machine);
        let curves = Curves::new(machine, &knobs, floors.small_kernel_s);
        let inv = LayerInventory::new(model, &layout);
        let per_layer = |part: ModelPart| {
            let moe_part = matches!(
                part,
                ModelPart::SharedExperts | ModelPart::Routers | ModelPart::RoutedExperts
            );
            per_layer_bytes(model, &fp, part, moe_part)
        };
        let last = &fp.per_gpu[fp.per_gpu.len() - 1];
        let lm_bytes = last
            .weight_bytes_by_part
            .get(&ModelPart::LmHead)
            .copied()
            .unwrap_or(0) as f64;
        let head_bytes = |part: ModelPart| {
            if part == ModelPart::LmHead {
                lm_bytes
            } else {
                0.0
            }
        };
        let experts = model.moe.map(|m| {
            let f = model.format_of(ModelPart::RoutedExperts).name();
            // the slice of each expert one GPU streams sets the grouped GEMM's N and K: the
            // efficiency is the measured shapes' around it (`ShapeKnots`)
            let slice = super::moe::efficiency_slice(model, &layout, &f);
            // the fused MoE runs its kernels (quantize, align/sort, two grouped GEMMs,
            // activation, reduce) one after another: each costs at least the floor
            let curve = curves
                .of_moe_backend(
                    KernelKind::MoeGrouped,
                    &f,
                    slice,
                    moe_backend_rate(machine, opts, model, &layout, &f),
                )
                .with_floor(inv.moe.core_launches * floors.small_kernel_s);
            let routed = per_layer(ModelPart::RoutedExperts);
            experts_of(
                machine,
                model,
                m,
                &layout,
                opts,
                (routed, peak_bytes_per_s),
                curve,
            )
        });
        CostModel {
            layout,
            memory,
            knobs,
            opts: opts.clone(),
            hidden: model.hidden_size as f64,
            vocab: model.vocab_size as f64,
            stages: stage_shapes(model, &fp, layout.pp, sparse_attention(machine, opts)),
            attention: curves.block(&inv.attention, model, &per_layer),
            indexer: curves.block(&inv.indexer, model, &per_layer),
            dense_mlp: curves.block(&inv.dense_mlp, model, &per_layer),
            moe: curves.block(&inv.moe, model, &per_layer),
            embed: curves.block(&inv.embed, model, &|_| 0.0),
            head: curves.block(&inv.head, model, &head_bytes),
            experts,
            core: attn_core(model, &fp, opts, &curves, machine),
            comm: LayoutComm::new(machine, &layout, &placement, opts),
            dcp: dcp_comm(machine, model, &layout, &placement, opts),
            placement,
            small: SmallKernelRates {
                floor_s: floors.small_kernel_s,
                bytes_per_s: peak_bytes_per_s * ELEMENTWISE_FRACTION,
            },
            floors,
            cpu: CpuCosts::of(machine),
            two_batch_overlap: false,
            offload: None,
            model_name: model.name.clone(),
            memory_notes: Vec::new(),
            served_note: None,
            config_note: None,
        }
    }
}

/// The routed experts of one GPU's MoE layer: `routed` bytes of them per layer on a GPU of
/// `peak_bytes_per_s`, priced by `curve` and never above their bound ([`super::moe_bound`]).
fn experts_of(
    machine: &Machine,
    model: &ModelSpec,
    m: models::spec::MoeSpec,
    layout: &Layout,
    opts: &ServerOptions,
    (routed, peak_bytes_per_s): (f64, f64),
    curve: KernelCurve,
) -> Experts {
    let per_rank = m.num_routed_experts as f64 / layout.ep as f64;
    let bytes = routed / per_rank.max(1.0);
    let f = model.format_of(ModelPart::RoutedExperts);
    let mut e = Experts {
        routing: Routing::of_streams(
            m.num_routed_experts,
            m.top_k,
            layout.ep,
            opts.streams_share_prompt,
        ),
        bytes_per_expert: bytes,
        params_per_expert: bytes / f.bytes_per_value(),
        runner: moe_runner(machine, opts, model, layout, peak_bytes_per_s),
        curve,
        bound: super::moe_bound::LayerBound::of(
            &f.name(),
            model.hidden_size as f64,
            peak_bytes_per_s,
            super::moe::shape_note(&machine.gpu, model, layout).is_some(),
        ),
        table: super::moe_shape_table::for_layout(machine, model, layout, opts),
        default_config: default_config_of(machine, model, m, layout, opts)
            .and_then(std::result::Result::ok),
        envelope: Envelope::empty(),
    };
    e.envelope = Envelope::of(&|t| moe_raw(&e, t));
    e
}

/// The default-config slowdown of the routed experts where `opts` says the engine's Triton
/// fused MoE found no tuned file ([`super::moe_config`]), or why it is not priced; `None` where
/// the options say tuned.
fn default_config_of(
    machine: &Machine,
    model: &ModelSpec,
    m: models::spec::MoeSpec,
    layout: &Layout,
    opts: &ServerOptions,
) -> Option<std::result::Result<super::moe_config::DefaultConfig, &'static str>> {
    if !opts.moe_default_config {
        return None;
    }
    let moe_tp = (layout.tp / layout.ep.max(1)).max(1);
    Some(super::moe_config::DefaultConfig::of(
        (
            opts.engine,
            &model.format_of(ModelPart::RoutedExperts).name(),
            opts.moe_runner_backend.as_deref(),
        ),
        (
            super::attn_backend::sm_major(machine),
            &machine.gpu.display_name,
        ),
        (
            f64::from(m.num_routed_experts) / f64::from(layout.ep.max(1)),
            model.hidden_size as f64,
            m.expert_intermediate_size as f64 / f64::from(moe_tp),
        ),
    ))
}

/// [`CostModel::default_config_note`] for `model` under `layout` and `opts`: the priced slowdown's
/// note, or why it is not priced with the published range; `None` where the options say tuned.
fn default_config_note(
    machine: &Machine,
    model: &ModelSpec,
    layout: &Layout,
    opts: &ServerOptions,
) -> Option<String> {
    let why = match model.moe {
        None if opts.moe_default_config => "a dense model",
        None => return None,
        Some(m) => match default_config_of(machine, model, m, layout, opts)? {
            Ok(d) => return Some(d.note()),
            Err(why) => why,
        },
    };
    let [lo, hi] = super::moe_config::PUBLISHED_RATIO_RANGE;
    Some(format!(
        "MoE on the engine's default Triton config (no tuned file): not priced ({why}); \
         published default-to-tuned kernel time ratios run {lo:.2}–{hi:.2}× by shape, batch and \
         GPU, so the MoE may be that much slower than predicted"
    ))
}

/// The MoE backend the engine runs on SM120 where a kernel table measured it and the fused-MoE
/// curves did not (Marlin W4A16 under vLLM for INT4 experts), with one GPU's expert slice.
fn sm120_moe_backend(
    machine: &Machine,
    opts: &ServerOptions,
    model: &ModelSpec,
    layout: &Layout,
    format: &str,
) -> Option<(&'static str, f64)> {
    if super::attn_backend::sm_major(machine) != Some(12) {
        return None;
    }
    let backend = opts
        .engine
        .rules()
        .moe_table_backend(format, opts.moe_runner_backend.as_deref())?;
    Some((backend, super::moe::expert_slice_elements(model, layout)?))
}

/// The bandwidth of the MoE backend the engine runs on SM120 against the fused-MoE curve
/// ([`super::moe_table`]): Marlin W4A16 under vLLM; 1 where the curves price the backend.
fn moe_backend_rate(
    machine: &Machine,
    opts: &ServerOptions,
    model: &ModelSpec,
    layout: &Layout,
    format: &str,
) -> f64 {
    sm120_moe_backend(machine, opts, model, layout, format)
        .and_then(|(b, s)| super::moe_table::rate_against_curve(b, format, s))
        .map_or(1.0, |r| r.0)
}

/// The runner of the routed experts: Marlin's own price where vLLM runs it on SM120
/// ([`super::marlin_moe`]), else as the options name ([`super::moe::MoeRunner::of`]).
fn moe_runner(
    machine: &Machine,
    opts: &ServerOptions,
    model: &ModelSpec,
    layout: &Layout,
    peak_bytes_per_s: f64,
) -> super::moe::MoeRunner {
    let f = model.format_of(ModelPart::RoutedExperts).name();
    match sm120_moe_backend(machine, opts, model, layout, &f) {
        Some(("marlin", slice)) => {
            super::moe::MoeRunner::Marlin(super::marlin_moe::MarlinMoe::of(peak_bytes_per_s, slice))
        }
        _ => super::moe::MoeRunner::of(opts, &f, model, layout, peak_bytes_per_s),
    }
}

/// Routed experts of a MoE layer entered by `t` tokens, on the busiest GPU, without envelope:
/// the tables' kernel's time, then the runner's ([`super::moe::MoeRunner::time_s`]).
pub(super) fn moe_raw(e: &Experts, t: f64) -> super::kernel::OpTime {
    let r = &e.routing;
    routed_experts(e, r.max_touched_per_rank(t), r.max_pairs_per_rank(t))
}

impl CostModel {
    /// One GPU's routed experts of a MoE layer handed `touched` distinct experts and `pairs`
    /// (token, expert) pairs, seconds, without the envelope; `None` for a dense model. Prices a
    /// kernel table's row at its own routing (`sim/tests/marlin_moe_routing.rs`), where
    /// [`super::IterationModel::iteration`] derives both from a batch's tokens.
    pub fn routed_experts_s(&self, touched: f64, pairs: f64) -> Option<f64> {
        self.experts
            .as_ref()
            .map(|e| routed_experts(e, touched, pairs).s)
    }
}

/// Routed experts of a MoE layer handed `touched` experts and `pairs` pairs on one GPU: the
/// tables' kernel's time, then the runner's ([`super::moe::MoeRunner::time_s`]).
fn routed_experts(e: &Experts, touched: f64, pairs: f64) -> super::kernel::OpTime {
    let mut op = moe_tables(e, touched, pairs);
    op.s = e.runner.time_s(op.s, pairs, touched, e.bytes_per_expert);
    if let Some(d) = &e.default_config {
        // the engines pick a launch config by the layer's token count, which a rank's pairs
        // give back: each token brings top-k pairs, 1/ep of them to this rank
        let r = &e.routing;
        op.s *= d.ratio(pairs * f64::from(r.ep) / r.top_k);
    }
    op
}

/// The tables' MoE kernel for `pairs` routed pairs over `touched` experts on the busiest GPU.
fn moe_tables(e: &Experts, touched: f64, pairs: f64) -> super::kernel::OpTime {
    // the efficiency is keyed by the rows each touched expert's GEMMs get, as the kernel
    // measurements were
    let per_expert = if touched > 0.0 { pairs / touched } else { 1.0 };
    let decode = per_expert <= super::moe_bound::LINE_MAX_TOKENS_PER_EXPERT;
    if let Some(t) = e.table.as_ref().filter(|t| decode || t.prices_prefill) {
        // the model's own measured rows, never below streaming the touched experts from DRAM
        // nor the call's launch floor (module docs of `moe_shape_table`)
        let cold_s = e
            .bound
            .map_or(0.0, |b| b.dram_floor_s(touched, e.bytes_per_expert));
        let s = t
            .time_s(touched, pairs)
            .max(cold_s)
            .max(e.curve.launch_floor_s());
        return super::kernel::OpTime {
            s,
            memory_bound: true,
        };
    }
    let mut op = e.curve.time(
        per_expert.max(1.0),
        2.0 * pairs * e.params_per_expert,
        touched * e.bytes_per_expert,
    );
    // at decode shapes (the line's domain: ≤ 2 tokens per touched expert), never above streaming
    // the touched experts once plus the measured per-call and per-expert costs (and the flops at
    // the curve's best compute rate); prefill chunks keep the curve, whose compute side binds
    if let Some(b) = e.bound.filter(|_| decode) {
        if b.extrapolated {
            op.s = op.s.max(b.line_s(touched, e.bytes_per_expert));
        }
        let flops = 2.0 * pairs * e.params_per_expert;
        op.s = op.s.min(
            b.s(touched, e.bytes_per_expert, e.curve.launch_floor_s())
                + e.curve.best_compute_s(flops),
        );
    }
    op
}

/// Options that make no sense (a fraction outside (0, 1], …).
fn check_options(opts: &ServerOptions) -> Result<()> {
    if !(opts.mem_fraction_static > 0.0 && opts.mem_fraction_static <= 1.0) {
        return Err(SimError::InvalidOption {
            flag: Engine::Sglang.flag(Knob::MemoryShare),
            problem: format!(
                "{} is not a fraction in (0, 1]; SGLang's default is about 0.85",
                opts.mem_fraction_static
            ),
        });
    }
    if opts.chunked_prefill_size == 0 {
        return Err(SimError::InvalidOption {
            flag: Engine::Sglang.flag(Knob::PrefillChunk),
            problem: "must be at least 1 token (SGLang's default is 8192)".into(),
        });
    }
    Ok(())
}

/// The weights `opts` holds in host memory ([`super::offload::OffloadPlan`]); an error where
/// the machine states no host link to price them with.
fn offload_plan(
    machine: &Machine,
    model: &ModelSpec,
    fp: &Footprint,
    opts: &ServerOptions,
) -> Result<Option<super::offload::OffloadPlan>> {
    let Some(o) = &opts.weight_offload else {
        return Ok(None);
    };
    let link = super::offload::HostLink::of(machine).ok_or_else(|| SimError::InvalidOption {
        flag: opts.engine.flag(Knob::CpuOffload),
        problem: format!(
            "machine `{}` states neither a host↔device measurement nor its GPUs' PCIe link, so the weights held on the host cannot be priced: give a profile from `probe run` (it measures host↔device copies)",
            machine.name()
        ),
    })?;
    Ok(Some(super::offload::OffloadPlan::new(model, fp, o, link)))
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
fn stage_shapes(model: &ModelSpec, fp: &Footprint, pp: u32, dsa: bool) -> Vec<StageShape> {
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
            let indexer_layers = if dsa && model.attention.indexer().is_some() {
                model.num_indexer_layers_in(g.layers.clone()) as f64
            } else {
                0.0
            };
            StageShape {
                dense_layers: all - moe,
                moe_layers: moe,
                indexer_layers,
                first: g.stage == 0,
                last: g.stage + 1 == pp,
            }
        })
        .collect()
}

/// vLLM's DCP collectives for this model and machine ([`super::dcp`]), with what the attention
/// backend changes in them: the log-sum-exps TRITON_MLA returns in the query's dtype (bf16:
/// `lse = torch.zeros(B, heads, dtype=q.dtype)` in `TritonMLAImpl.forward_mqa`), fp32 elsewhere;
/// DSA's top-k merged over the group where the indexer merges ([`dsa_topk_merge`]).
fn dcp_comm(
    machine: &Machine,
    model: &ModelSpec,
    layout: &Layout,
    placement: &Placement,
    opts: &ServerOptions,
) -> Option<super::dcp::DcpComm> {
    let d = super::dcp::DcpComm::new(machine, model, layout, placement, opts)?;
    let dsa = model.attention.indexer().is_some();
    let d = if super::attn_core::vllm_triton_mla(machine, opts, dsa) {
        d.with_lse_bytes(2.0)
    } else {
        d
    };
    Some(match dsa_topk_merge(machine, model, opts) {
        Some(topk) => d.merging_topk(topk),
        None => d,
    })
}

/// The top-k DSA's indexer merges over the DCP group, where it does: vLLM's DeepGEMM indexer
/// (`sparse_attn_indexer`, datacenter parts running sparse attention) takes a local top-k on
/// each rank and merges them; SM120's B12X keeps each rank's own ([`super::dcp`]).
fn dsa_topk_merge(machine: &Machine, model: &ModelSpec, opts: &ServerOptions) -> Option<u32> {
    let merges = sparse_attention(machine, opts) && super::attn_core::indexer_merges_topk(machine);
    model.attention.indexer().filter(|_| merges).map(|i| i.topk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::placement::place;

    /// On SM120 vLLM's dense MLA is TRITON_MLA, whose log-sum-exps are bf16: one decode row's
    /// LSE correction reads Kimi-K2 TP8 DCP8's 8 × 64 LSEs at 2 bytes; on H200 (another MLA
    /// backend) at 4.
    #[test]
    fn triton_mla_gathers_bf16_log_sum_exps() {
        let kimi = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
        let opts = ServerOptions {
            decode_context_parallel: 8,
            engine: Engine::Vllm,
            ..ServerOptions::default()
        };
        let placement = place(&(0..8).collect::<Vec<u32>>(), 8, 1);
        let out = 2.0 * 64.0 * 512.0 * 2.0;
        let lse = |preset: &str| {
            let m = Machine::resolve(preset).unwrap();
            let d = dcp_comm(&m, &kimi, &Layout::tp(8), &placement, &opts).unwrap();
            d.kernel_bytes(1.0)[0] - out
        };
        assert_eq!(lse("rtx-pro-6000-x8-baremetal"), 8.0 * 64.0 * 2.0);
        assert_eq!(lse("h200-x8"), 8.0 * 64.0 * 4.0);
    }
}
