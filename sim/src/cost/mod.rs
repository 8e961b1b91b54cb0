//! The cost of one engine iteration under one layout, and the memory plan that bounds admission.
//!
//! [`IterationModel`] is the seam between the cost model and the serving simulation: the simulator
//! only ever asks "how long does this batch take" and "how many KV tokens fit".
//!
//! [`CostModel`] implements it for forward passes, [`SpeculativeModel`] for speculative steps
//! over a target and a draft [`CostModel`]; [`ServedModel`] picks one from the options. Per layer, every op costs
//! `max(FLOPs / achievable FLOP/s, bytes / achievable bandwidth)` with the fitted efficiency of
//! `sim::efficiency` ([`kernel`]), weights per GPU from `models::footprint`, MoE reads from the
//! routing statistics of [`moe`], collectives from the machine's measured curves for the groups the
//! layout uses ([`comm`]), summed per pipeline stage ([`iteration`]). [`memory`] sizes the KV pool
//! as SGLang does, [`steady`] turns iteration costs into closed-loop decode throughput,
//! [`traffic`] counts bytes on the wire and expert reads, [`report`] is `sim predict`'s output.

pub mod attn_backend;
pub mod attn_core;
pub mod batch_stats;
pub mod block;
pub mod comm;
mod curves;
pub mod custom_ar_table;
pub mod dcp;
pub mod decode_table;
pub mod dsa_module_table;
pub mod envelope;
pub mod floors;
pub mod gdn_table;
pub mod inventory;
pub mod iteration;
pub mod kernel;
pub mod layer_mix;
pub mod marlin_moe;
pub mod memory;
pub mod model;
pub mod moe;
pub mod moe_bound;
pub mod moe_config;
pub mod moe_shape_table;
pub mod moe_table;
pub mod offload;
pub mod report;
pub mod served;
pub mod spec;
pub mod speculative;
pub mod steady;
pub mod tbo;
pub mod traffic;
pub mod triton_mla;
pub mod vllm_all_reduce;

pub use batch_stats::BatchStats;
pub use model::CostModel;
pub use served::ServedModel;
pub use speculative::SpeculativeModel;
pub use steady::{ContextHolding, SteadyDecode, steady_decode_tok_per_s};

use models::Layout;
use serde::{Deserialize, Serialize};

/// Token counts 2^0 … 2^(ENVELOPE_KNOTS−1) at which weight-op times are tabulated (and between
/// them where the op switches kernel, [`envelope::Envelope`]).
pub const ENVELOPE_KNOTS: usize = 18;

/// One chunk of a prefill in an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrefillChunk {
    /// Tokens computed in this iteration.
    pub new_tokens: u32,
    /// Tokens of the same request already in the KV cache (earlier chunks or a cached prefix).
    pub cached_tokens: u32,
}

/// What one iteration runs: decode tokens (one per running request, each with its context length)
/// and prefill chunks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IterationBatch {
    /// Context length (tokens in the KV cache) of each decoding request.
    pub decode_context_tokens: Vec<u32>,
    pub prefill: Vec<PrefillChunk>,
}

/// Where an iteration's time goes, seconds. Parts sum to the critical path through all stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeBreakdown {
    /// Compute-bound op time (FLOPs / achievable FLOP/s), floors excluded.
    pub compute_s: f64,
    /// Latency floors of every kernel (weight GEMMs' and the fused MoE's intercepts, small
    /// kernels, decode attention): what bytes and FLOPs do not see.
    #[serde(default)]
    pub kernel_floor_s: f64,
    /// Activation bytes streamed by small kernels (norms, rotary, activations, quantize).
    #[serde(default)]
    pub activation_s: f64,
    /// Memory-bound time reading weights.
    pub weight_read_s: f64,
    /// Weights brought from host memory: read across the link in place or copied in ahead of
    /// their layer and not hidden behind the GPU's work (CPU weight offload,
    /// [`super::offload`]).
    #[serde(default, skip_serializing_if = "is_zero_s")]
    pub host_weight_s: f64,
    /// Memory-bound time reading the KV cache.
    pub kv_read_s: f64,
    /// Tensor-parallel all-reduces (and EP's closing all-reduce without an a2a backend).
    pub all_reduce_s: f64,
    /// EP dispatch / combine with `--moe-a2a-backend`.
    pub all_to_all_s: f64,
    /// Attention-DP gather / scatter around the MoE, and under DCP its query all-gather, output
    /// reduce-scatter and top-k merge over the group (the attention's own collectives either way).
    pub dp_attention_comm_s: f64,
    /// Pipeline send/recv of activations between stages.
    pub pp_send_s: f64,
    /// GPU time lost to eager launch gaps, and GPU idle time while the CPU issues (CPU-bound).
    pub overhead_s: f64,
    /// Idle pipeline time (fewer micro-batches than stages).
    pub bubble_s: f64,
}

/// Names of a breakdown's parts in [`TimeBreakdown::parts_s`] order (stacking order, bottom
/// first): a short one for tables and a long one for chart legends. One list, so a part added to
/// the breakdown cannot be left out of a table or a chart.
pub const BREAKDOWN_PARTS: [(&str, &str); 12] = [
    ("compute", "compute"),
    ("kernel floors", "kernel latency floors"),
    ("activations", "activation reads (small kernels)"),
    ("weights", "weight reads"),
    ("host weights", "weights from host memory (CPU offload)"),
    ("kv", "KV reads"),
    ("all-reduce", "all-reduce"),
    ("all-to-all", "all-to-all"),
    ("dp-attn", "DP-attention / DCP gather-scatter"),
    ("pp-send", "PP send/recv"),
    ("overhead", "launch / scheduling overhead"),
    ("bubble", "pipeline bubble"),
];

impl TimeBreakdown {
    /// Every part, seconds, in [`BREAKDOWN_PARTS`] order.
    pub fn parts_s(&self) -> [f64; 12] {
        [
            self.compute_s,
            self.kernel_floor_s,
            self.activation_s,
            self.weight_read_s,
            self.host_weight_s,
            self.kv_read_s,
            self.all_reduce_s,
            self.all_to_all_s,
            self.dp_attention_comm_s,
            self.pp_send_s,
            self.overhead_s,
            self.bubble_s,
        ]
    }

    /// The short names and values of the parts above `min_share` of the total, largest first.
    pub fn largest_parts(&self, min_share: f64) -> Vec<(&'static str, f64)> {
        let total = self.total_s();
        let mut v: Vec<(&'static str, f64)> = BREAKDOWN_PARTS
            .iter()
            .map(|(short, _)| *short)
            .zip(self.parts_s())
            .filter(|(_, x)| *x > 0.0 && *x >= min_share * total)
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }

    /// Sum of all parts.
    pub fn total_s(&self) -> f64 {
        self.parts_s().iter().sum()
    }

    /// Adds `k` × every part of `other` (e.g. one layer's cost × the stage's layer count).
    pub fn add_scaled(&mut self, other: &TimeBreakdown, k: f64) {
        self.compute_s += other.compute_s * k;
        self.kernel_floor_s += other.kernel_floor_s * k;
        self.activation_s += other.activation_s * k;
        self.weight_read_s += other.weight_read_s * k;
        self.host_weight_s += other.host_weight_s * k;
        self.kv_read_s += other.kv_read_s * k;
        self.all_reduce_s += other.all_reduce_s * k;
        self.all_to_all_s += other.all_to_all_s * k;
        self.dp_attention_comm_s += other.dp_attention_comm_s * k;
        self.pp_send_s += other.pp_send_s * k;
        self.overhead_s += other.overhead_s * k;
        self.bubble_s += other.bubble_s * k;
    }

    /// Communication parts (collectives and sends).
    pub fn comm_s(&self) -> f64 {
        self.all_reduce_s + self.all_to_all_s + self.dp_attention_comm_s + self.pp_send_s
    }

    /// Hides communication behind compute and memory time (`ServerOptions::overlap_comm`): the
    /// overlapped share of every communication part is removed, proportionally, up to the
    /// compute + memory time available to hide it.
    pub fn overlap_comm(&mut self) {
        let comm = self.all_reduce_s + self.all_to_all_s + self.dp_attention_comm_s;
        let work = self.compute_s
            + self.kernel_floor_s
            + self.activation_s
            + self.weight_read_s
            + self.kv_read_s;
        if comm <= 0.0 {
            return;
        }
        let keep = (comm - work).max(0.0) / comm;
        self.all_reduce_s *= keep;
        self.all_to_all_s *= keep;
        self.dp_attention_comm_s *= keep;
    }
}

/// The cost of one iteration of one (micro-)batch.
///
/// Every pipeline stage is its own process with its own CPU: a stage's time is its GPU time and
/// its CPU time (kernel launches when eager, graph replay otherwise, plus the scheduler turn)
/// combined as the engine overlaps them (`super::iteration`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IterationCost {
    /// Time of each pipeline stage for this batch: GPU and CPU combined.
    pub stage_s: Vec<f64>,
    /// GPU time of each stage, its own communication included.
    #[serde(default)]
    pub stage_gpu_s: Vec<f64>,
    /// CPU time of each stage (launches + scheduler turn).
    #[serde(default)]
    pub stage_cpu_s: Vec<f64>,
    /// Time to hand activations from one stage to the next (one hop).
    pub pp_hop_s: f64,
    /// CPU time of the busiest stage.
    pub cpu_s: f64,
    /// Latency of this batch through all stages (Σ stage times + hops).
    pub latency_s: f64,
    /// Kernels the busiest stage launches eagerly (0 under a CUDA graph).
    #[serde(default)]
    pub eager_launches: f64,
    pub breakdown: TimeBreakdown,
}

impl IterationCost {
    /// True when some stage waits for its CPU rather than its GPU.
    pub fn cpu_bound(&self) -> bool {
        self.stage_cpu_s
            .iter()
            .zip(&self.stage_gpu_s)
            .any(|(c, g)| c > g)
    }
}

/// How a layout uses each GPU's memory ([`memory`] says how SGLang sizes it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryPlan {
    /// Weights on the fullest GPU.
    pub weight_bytes_per_gpu: u64,
    /// Everything else the server holds: CUDA context and NCCL before loading, the
    /// `req_to_token` table, attention workspace, CUDA graphs, activations
    /// ([`memory::MemoryReserves::total_bytes`]).
    pub reserve_bytes_per_gpu: u64,
    /// KV pool on each GPU of the fullest stage: `kv_tokens ×` its bytes per token.
    pub kv_pool_bytes_per_gpu: u64,
    /// KV tokens the engine can hold (per attention-DP replica if DP attention is on):
    /// SGLang's `max_total_num_tokens`.
    pub kv_tokens: u64,
    /// Tokens of the unit the pool is allocated in (SGLang's `--page-size`, vLLM's
    /// `--block-size`): a request holds whole units. Not part of the JSON (0 = 1 when read).
    #[serde(skip)]
    pub kv_block_tokens: u64,
    /// Sliding-window layers' pool (SGLang's `swa_max_total_num_tokens`); 0 without them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub swa_kv_tokens: u64,
    /// Gated-DeltaNet state pool per GPU (conv + recurrent state of `state_slots` requests);
    /// 0 without linear-attention layers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub state_pool_bytes_per_gpu: u64,
    /// Request slots of that pool (SGLang's `max_mamba_cache_size`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub state_slots: u64,
    /// Card memory.
    pub gpu_memory_bytes: u64,
    /// False when the weights leave no KV token in `mem_fraction_static × free memory`.
    pub fits: bool,
    /// How many bytes per GPU the weights exceed the static budget by when it does not fit.
    pub shortfall_bytes: u64,
    /// Free memory when the weights start loading (SGLang's `Load weight begin. avail mem`).
    #[serde(default)]
    pub available_before_load_bytes: u64,
    /// `mem_fraction_static × available_before_load_bytes`: weights + KV pool.
    #[serde(default)]
    pub static_budget_bytes: u64,
    /// The `--mem-fraction-static` the plan was sized with (given, or SGLang's default for the
    /// layout).
    #[serde(default)]
    pub mem_fraction_static: f64,
    /// The reserves, part by part.
    #[serde(default)]
    pub reserves: memory::MemoryReserves,
    /// KV tokens memory allows, before `--max-total-tokens` and page alignment.
    #[serde(default)]
    pub kv_tokens_by_memory: u64,
    /// `max_running_requests` per DP worker, given or derived as SGLang does.
    #[serde(default)]
    pub max_running_requests: u32,
    /// Context length the server runs with.
    #[serde(default)]
    pub context_len: u64,
    /// Prompt tokens the scheduler may compute a step where the plan sets it (vLLM's
    /// `max_num_batched_tokens`, also its profiling run's size: [`memory::vllm::plan`]); 0 =
    /// the options' `min(max_prefill_tokens, chunked_prefill_size)`.
    #[serde(skip)]
    pub prefill_budget_tokens: u64,
    /// Card − weights − KV pool − reserves; negative: SGLang is likely to run out of memory.
    #[serde(default)]
    pub free_after_reserves_bytes: i64,
    /// Warnings, one line each.
    #[serde(default)]
    pub notes: Vec<String>,
    /// A KV cache given outright in bytes per GPU (vLLM's `--kv-cache-memory-bytes`) rather than
    /// sized from a memory share: a plan that does not fit then overruns the card, not a share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_given_bytes: Option<u64>,
    /// The engine whose sizing this is (messages name its own memory flag).
    #[serde(skip)]
    pub engine: crate::options::Engine,
}

impl MemoryPlan {
    /// The engine's flag for [`MemoryPlan::mem_fraction_static`].
    pub fn fraction_flag(&self) -> &'static str {
        self.engine.rules().memory_fraction_flag()
    }
}

fn is_zero_s(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Scaling knobs a calibration fits and a confidence draw perturbs; all 1.0 by default. Each has a
/// physical meaning and bounds (`crate::calibrate`); none adds time that no kernel, collective or
/// CPU does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Knobs {
    /// Multiplies achievable FLOP/s (≤ the datasheet peak).
    pub compute_scale: f64,
    /// Multiplies achievable memory bandwidth (≤ the datasheet's).
    pub memory_scale: f64,
    /// Multiplies every collective's and send's time (≥ half the measured curve).
    pub comm_time_scale: f64,
    /// Multiplies the CPU time per eagerly launched kernel (framework + Python per op).
    pub cpu_scale: f64,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            compute_scale: 1.0,
            memory_scale: 1.0,
            comm_time_scale: 1.0,
            cpu_scale: 1.0,
        }
    }
}

/// A costed layout: what the serving simulation needs to know.
pub trait IterationModel: Send + Sync {
    /// The layout being costed.
    fn layout(&self) -> Layout;
    /// Cost of one iteration of `batch` (one micro-batch under PP).
    fn iteration(&self, batch: &IterationBatch) -> IterationCost;
    /// The memory plan (KV capacity bounds admission).
    fn memory(&self) -> &MemoryPlan;
    /// Tokens each request gains per decode step: 1, or the acceptance length under
    /// speculation, whose [`IterationModel::iteration`] reports a step per generated token.
    fn tokens_per_decode_step(&self) -> f64 {
        1.0
    }
}
