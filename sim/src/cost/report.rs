//! Output types of `sim predict` (JSON through serde, schema-versioned) and the functions that fill
//! them, reusable by any command that wants one layout's numbers.

use super::batch_stats::BatchStats;
use super::memory::max_requests_at_context;
use super::traffic::Traffic;
use super::{IterationBatch, IterationModel, Knobs, PrefillChunk, ServedModel, TimeBreakdown};
use crate::error::SimError;
use crate::layout::enumerate_layouts;
use crate::machine::Machine;
use crate::options::ServerOptions;
use models::{Layout, ModelSpec};
use serde::Serialize;

/// Version of the `sim predict --format json` layout. 2: `engine`, and each layout's `flags` in
/// the engine's own spelling (1: `sglang_flags`, SGLang's spelling under every engine).
pub const PREDICT_SCHEMA_VERSION: u32 = 2;

/// What `sim predict` was asked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PredictQuery {
    /// Decode requests in the batch (also the closed-loop concurrency of the steady estimate).
    pub batch: u32,
    /// Context tokens of each decode request.
    pub context_tokens: u32,
    /// New prefill tokens in the iteration (one chunk of a fresh request; 0 = pure decode).
    pub prefill_tokens: u32,
}

impl PredictQuery {
    /// The iteration batch this query describes.
    pub fn batch(&self) -> IterationBatch {
        IterationBatch {
            decode_context_tokens: vec![self.context_tokens; self.batch as usize],
            prefill: if self.prefill_tokens > 0 {
                vec![PrefillChunk {
                    new_tokens: self.prefill_tokens,
                    cached_tokens: 0,
                }]
            } else {
                Vec::new()
            },
        }
    }
}

/// [`TimeBreakdown`] in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BreakdownMs {
    /// Compute-bound op time.
    pub compute_ms: f64,
    /// Latency floors of every kernel (GEMM/MoE intercepts, small kernels, attention).
    pub kernel_floor_ms: f64,
    /// Activation bytes of small kernels (norms, rotary, activations, quantize).
    pub activation_ms: f64,
    /// Memory-bound weight reads (GEMMs, experts).
    pub weight_read_ms: f64,
    /// Weights brought from host memory (CPU offload), not hidden.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub host_weight_ms: f64,
    /// Memory-bound KV-cache (and DSA index-cache) reads.
    pub kv_read_ms: f64,
    /// TP all-reduces (and TP all-gathers of logits / combined tokens).
    pub all_reduce_ms: f64,
    /// EP dispatch / combine with `--moe-a2a-backend`.
    pub all_to_all_ms: f64,
    /// Attention-DP gather / scatter around the MLP, and DCP's collectives
    /// ([`super::TimeBreakdown::dp_attention_comm_s`]).
    pub dp_attention_comm_ms: f64,
    /// Pipeline hops.
    pub pp_send_ms: f64,
    /// Launch gaps, sampling, CPU time the GPU waits for.
    pub overhead_ms: f64,
    /// Pipeline bubble of the steady decode cycle (pure-decode queries only).
    pub bubble_ms: f64,
    /// Sum of the parts.
    pub total_ms: f64,
}

impl BreakdownMs {
    /// Every part, ms, in [`super::BREAKDOWN_PARTS`] order.
    pub fn parts_ms(&self) -> [f64; 12] {
        [
            self.compute_ms,
            self.kernel_floor_ms,
            self.activation_ms,
            self.weight_read_ms,
            self.host_weight_ms,
            self.kv_read_ms,
            self.all_reduce_ms,
            self.all_to_all_ms,
            self.dp_attention_comm_ms,
            self.pp_send_ms,
            self.overhead_ms,
            self.bubble_ms,
        ]
    }
}

impl From<&TimeBreakdown> for BreakdownMs {
    fn from(b: &TimeBreakdown) -> Self {
        BreakdownMs {
            compute_ms: b.compute_s * 1e3,
            kernel_floor_ms: b.kernel_floor_s * 1e3,
            activation_ms: b.activation_s * 1e3,
            weight_read_ms: b.weight_read_s * 1e3,
            host_weight_ms: b.host_weight_s * 1e3,
            kv_read_ms: b.kv_read_s * 1e3,
            all_reduce_ms: b.all_reduce_s * 1e3,
            all_to_all_ms: b.all_to_all_s * 1e3,
            dp_attention_comm_ms: b.dp_attention_comm_s * 1e3,
            pp_send_ms: b.pp_send_s * 1e3,
            overhead_ms: b.overhead_s * 1e3,
            bubble_ms: b.bubble_s * 1e3,
            total_ms: b.total_s() * 1e3,
        }
    }
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

/// The memory plan in GB (1e9 bytes) and tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemorySummary {
    /// Card memory.
    pub gpu_memory_gb: f64,
    /// Weights on the fullest GPU.
    pub weights_gb_per_gpu: f64,
    /// Everything besides weights and KV pool: CUDA context and NCCL, `req_to_token`,
    /// attention workspace, CUDA graphs, activations (parts in `reserves`).
    pub reserve_gb_per_gpu: f64,
    /// KV pool of the tightest stage.
    pub kv_pool_gb_per_gpu: f64,
    /// KV tokens per attention-DP replica (the whole engine without DP attention).
    pub kv_tokens: u64,
    /// Gated-DeltaNet state pool per GPU and its request slots (0 without linear layers).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub state_pool_gb_per_gpu: f64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub state_slots: u64,
    /// Requests of `context_tokens` the KV pool holds at once (all replicas).
    pub max_requests_at_context: u64,
    /// Whether weights + reserve fit `--mem-fraction-static` of the card.
    pub fits: bool,
    /// GB per GPU missing when it does not fit.
    pub shortfall_gb: f64,
    /// Free memory when the weights load; `--mem-fraction-static` is a share of it.
    pub available_before_load_gb: f64,
    /// The `--mem-fraction-static` used (given, or SGLang's default for this layout).
    pub mem_fraction_static: f64,
    /// Its share of the free memory: what weights and KV pool must fit in.
    pub static_budget_gb: f64,
    /// The reserves part by part, bytes.
    pub reserves: super::memory::MemoryReserves,
    /// SGLang's `max_running_requests` (given or derived) and its context length.
    pub max_running_requests: u32,
    pub context_len: u64,
    /// Card − weights − KV pool − reserves (negative: likely out of memory).
    pub free_after_reserves_gb: f64,
}

/// Steady decode of a closed loop of `batch` requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SteadySummary {
    /// Requests asked for.
    pub concurrency: u32,
    /// Requests that fit and run.
    pub running: u32,
    /// True when the KV pool caps `running`.
    pub limited_by_kv: bool,
    /// Micro-batches in flight (PP).
    pub micro_batches: u32,
    /// Time between two tokens of one request (TPOT), ms.
    pub cycle_ms: f64,
    /// Idle time of the busiest stage per cycle.
    pub bubble_ms: f64,
    /// Output tokens per second of the engine.
    pub output_tok_per_s: f64,
}

/// One layout's prediction, or why it cannot run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutPrediction {
    /// Short name, e.g. `TP4xPP2`.
    pub layout: String,
    /// The flags that launch it, in the engine's own spelling.
    pub flags: String,
    /// `None` when it runs; otherwise the one-line reason.
    pub rejected: Option<String>,
    /// GPUs of each pipeline stage.
    pub placement: Vec<Vec<u32>>,
    /// GPUs of the machine this layout leaves unused (one replica on part of the machine).
    pub idle_gpus: u32,
    /// Whether the iteration replays a CUDA graph.
    pub cuda_graph: bool,
    /// Latency of the iteration through all stages, ms.
    pub iteration_ms: f64,
    /// GPU time of each stage, ms.
    pub stage_ms: Vec<f64>,
    /// One stage-to-stage hop, ms (mean over hops).
    pub pp_hop_ms: f64,
    /// CPU time of the iteration (launches + scheduler), ms.
    pub cpu_ms: f64,
    /// Where the iteration's time goes (`None` when rejected).
    pub breakdown: Option<BreakdownMs>,
    /// Steady decode of a closed loop of `batch` requests.
    pub steady: Option<SteadySummary>,
    /// Bytes on the wire and expert reads per GPU.
    pub traffic: Option<Traffic>,
    /// The memory plan.
    pub memory: Option<MemorySummary>,
    /// Speculative decoding, when on: the step's parts at the query's batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpecSummary>,
    /// Where the communication numbers came from.
    pub notes: Vec<String>,
}

/// One speculative step at the query's batch and context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecSummary {
    pub plan: super::spec::SpecPlan,
    /// Draft passes, verify, draft extend, and the whole step, ms.
    pub draft_ms: f64,
    pub verify_ms: f64,
    pub extend_ms: f64,
    pub step_ms: f64,
}

/// The whole `sim predict` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredictOutput {
    /// [`PREDICT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The engine whose behaviour was simulated.
    pub engine: crate::options::Engine,
    /// Machine preset or profile name.
    pub machine: String,
    /// GPU model, as nvidia-smi names it.
    pub gpu: String,
    /// GPUs in the machine.
    pub gpu_count: u32,
    /// Model preset or config path.
    pub model: String,
    /// What was asked.
    pub query: PredictQuery,
    /// Feasible layouts best first (steady output tok/s), then rejected ones.
    pub layouts: Vec<LayoutPrediction>,
    /// Machine-level assumptions.
    pub machine_notes: Vec<String>,
    /// Modules the checkpoint keeps in BF16 while others are quantized, one line per group
    /// (`models::spec::describe_bf16_modules`).
    pub bf16_modules: Vec<String>,
}

fn rejected(layout: &Layout, reason: String) -> LayoutPrediction {
    LayoutPrediction {
        layout: layout.short_name(),
        flags: layout.sglang_flags(),
        rejected: Some(reason),
        placement: Vec::new(),
        idle_gpus: 0,
        cuda_graph: false,
        iteration_ms: 0.0,
        stage_ms: Vec::new(),
        pp_hop_ms: 0.0,
        cpu_ms: 0.0,
        breakdown: None,
        steady: None,
        traffic: None,
        memory: None,
        speculative: None,
        notes: Vec::new(),
    }
}

/// The prediction of one costed layout for `q`.
pub fn describe(served: &ServedModel, q: &PredictQuery) -> LayoutPrediction {
    let cm = served.target();
    let batch = q.batch();
    let st = BatchStats::of(&batch, cm.core.topk_cap);
    let cost = served.cost_stats(&st);
    let steady = served.steady_decode(q.batch, q.context_tokens);
    let mut breakdown = BreakdownMs::from(&cost.breakdown);
    if q.prefill_tokens == 0 {
        breakdown.bubble_ms = steady.bubble_s * 1e3;
        breakdown.total_ms += breakdown.bubble_ms;
    }
    let mem = cm.memory();
    let layout = cm.layout();
    LayoutPrediction {
        layout: layout.short_name(),
        flags: cm.opts.engine.rules().launch_flags(
            &layout,
            cm.opts.decode_context_parallel,
            cm.placement().nodes,
        ),
        rejected: None,
        placement: cm.placement().stages.clone(),
        idle_gpus: cm.placement().idle_gpus,
        cuda_graph: cm.uses_cuda_graph(&st),
        iteration_ms: cost.latency_s * 1e3,
        stage_ms: cost.stage_s.iter().map(|s| s * 1e3).collect(),
        pp_hop_ms: cost.pp_hop_s * 1e3,
        cpu_ms: cost.cpu_s * 1e3,
        breakdown: Some(breakdown),
        steady: Some(SteadySummary {
            concurrency: steady.concurrency,
            running: steady.running,
            limited_by_kv: steady.limited_by_kv,
            micro_batches: steady.micro_batches,
            cycle_ms: steady.cycle_s * 1e3,
            bubble_ms: steady.bubble_s * 1e3,
            output_tok_per_s: steady.tok_per_s,
        }),
        traffic: Some(cm.traffic(&st)),
        memory: Some(MemorySummary {
            gpu_memory_gb: mem.gpu_memory_bytes as f64 / 1e9,
            weights_gb_per_gpu: mem.weight_bytes_per_gpu as f64 / 1e9,
            reserve_gb_per_gpu: mem.reserve_bytes_per_gpu as f64 / 1e9,
            kv_pool_gb_per_gpu: mem.kv_pool_bytes_per_gpu as f64 / 1e9,
            kv_tokens: mem.kv_tokens,
            state_pool_gb_per_gpu: mem.state_pool_bytes_per_gpu as f64 / 1e9,
            state_slots: mem.state_slots,
            max_requests_at_context: max_requests_at_context(
                mem,
                &layout,
                q.context_tokens.max(1) as u64,
            ),
            fits: mem.fits,
            shortfall_gb: mem.shortfall_bytes as f64 / 1e9,
            available_before_load_gb: mem.available_before_load_bytes as f64 / 1e9,
            mem_fraction_static: mem.mem_fraction_static,
            static_budget_gb: mem.static_budget_bytes as f64 / 1e9,
            reserves: mem.reserves,
            max_running_requests: mem.max_running_requests,
            context_len: mem.context_len,
            free_after_reserves_gb: mem.free_after_reserves_bytes as f64 / 1e9,
        }),
        speculative: served.speculative().map(|sp| {
            let step = sp.spec_step(q.batch, q.context_tokens);
            SpecSummary {
                plan: sp.plan().clone(),
                draft_ms: step.draft_s * 1e3,
                verify_ms: step.verify_s * 1e3,
                extend_ms: step.extend_s * 1e3,
                step_ms: step.step_s * 1e3,
            }
        }),
        notes: cm
            .comm_notes()
            .iter()
            .chain(cm.memory_notes())
            .cloned()
            .chain(cm.floor_notes())
            .chain([cm
                .core
                .decode_note(f64::from(q.batch), f64::from(q.context_tokens))])
            .chain(cm.gdn_decode_note(q.batch))
            .chain(cm.prefill_attention_note())
            .collect(),
    }
}

/// Predicts one layout; an impossible or non-fitting layout becomes a rejected entry.
pub fn predict_layout(
    machine: &Machine,
    model: &ModelSpec,
    layout: Layout,
    opts: &ServerOptions,
    knobs: Knobs,
    q: &PredictQuery,
) -> Result<LayoutPrediction, SimError> {
    let cm = ServedModel::new(machine, model, layout, opts, knobs)?;
    Ok(describe(&cm, q))
}

/// Predicts every layout of the machine's GPUs, feasible ones best first by steady output tok/s;
/// each layout with its own options (`opts_for`: SGLang's defaults depend on the layout).
pub fn predict_all(
    machine: &Machine,
    model: &ModelSpec,
    opts_for: &(dyn Fn(&Layout) -> ServerOptions + Sync),
    knobs: Knobs,
    q: &PredictQuery,
) -> Vec<LayoutPrediction> {
    let mut out: Vec<LayoutPrediction> = enumerate_layouts(machine.gpu_count, model)
        .into_iter()
        .map(|c| {
            let layout_opts = opts_for(&c.layout);
            let rules = layout_opts.engine.rules();
            // a layout the engine has no flags for (vLLM's expert parallelism spans the whole
            // TP group: no TP8+EP2) cannot be launched, so it is not ranked among those that can
            let unlaunchable =
                c.rejected.is_none() && rules.layout_flags(&c.layout, 1, 1).is_none();
            let reason = c.rejected.or_else(|| {
                unlaunchable.then(|| {
                    format!(
                        "{} has no flags that launch {}",
                        rules.display_name(),
                        c.layout.short_name()
                    )
                })
            });
            let mut p = match reason {
                Some(r) => rejected(&c.layout, r),
                // An all-to-all backend runs where it can (EP over the TP group), not elsewhere.
                None => {
                    let o = crate::options::runnable_on(&layout_opts, model, &c.layout);
                    predict_layout(machine, model, c.layout, &o, knobs, q)
                        .unwrap_or_else(|e| rejected(&c.layout, e.to_string()))
                }
            };
            // A rejected layout is still named by the flags that would launch it, in its
            // engine's spelling (`--nnodes` where it spans nodes).
            if p.rejected.is_some() {
                let nodes = machine.place(&c.layout).map_or(1, |placed| placed.nodes);
                p.flags = rules.launch_flags(&c.layout, 1, nodes);
            }
            p
        })
        .collect();
    let score = |p: &LayoutPrediction| p.steady.map_or(-1.0, |s| s.output_tok_per_s);
    out.sort_by(|a, b| score(b).total_cmp(&score(a)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chart or table built from the named parts shows the whole step: the parts sum to the
    /// total, and a part the step model has (kernel floors) is among them.
    #[test]
    fn the_named_parts_add_up_to_the_step() {
        let m = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
        let cm = ServedModel::new(
            &m,
            &spec,
            Layout::tp(8),
            &ServerOptions::default(),
            Knobs::default(),
        )
        .unwrap();
        let q = PredictQuery {
            batch: 16,
            context_tokens: 2048,
            prefill_tokens: 0,
        };
        let b = describe(&cm, &q).breakdown.unwrap();
        let sum: f64 = b.parts_ms().iter().sum();
        assert!(
            (sum - b.total_ms).abs() < 1e-9 * b.total_ms.max(1.0),
            "{sum} vs {}",
            b.total_ms
        );
        assert!(b.kernel_floor_ms > 0.0);
        assert_eq!(b.parts_ms().len(), super::super::BREAKDOWN_PARTS.len());
    }
}
