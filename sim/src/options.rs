//! The serving configuration the cost model and the replay read: engine-neutral values (named
//! after SGLang's launch flags, the first engine modelled) plus the tag of the engine whose
//! behaviour they describe ([`Engine`]). Each engine turns its own launch words into these in
//! [`crate::engine`]; nothing below that floor asks which engine spelled them except through
//! the engine's rules ([`crate::engine::ServingEngine`]).

use models::format::KvDtype;
use models::{Layout, ModelSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A serving engine whose behaviour can be simulated: the tag a [`ServerOptions`] carries. Its
/// rules (flag spellings, scheduling, all-reduce, graphs) are [`crate::engine::ServingEngine`],
/// found through [`Engine::rules`](crate::engine) — the tag lives here, on the lowest floor, so
/// that the neutral config and the engines' folders can both stand on it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    #[default]
    Sglang,
    Vllm,
}

impl Engine {
    /// Every engine, in the order listings show them.
    pub const ALL: [Engine; 2] = [Engine::Sglang, Engine::Vllm];

    /// `sglang` / `vllm` (case-insensitive, `SGLang`, `vLLM` …).
    pub fn from_name(name: &str) -> Option<Engine> {
        let name = name.trim();
        Engine::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(name))
    }

    /// The engine's name as its users write it in lower case (`sglang`, `vllm`), also its JSON tag.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sglang => "sglang",
            Engine::Vllm => "vllm",
        }
    }

    /// SGLang, the default (its [`ServerOptions`] omit the tag in JSON, as before it existed).
    pub fn is_sglang(&self) -> bool {
        *self == Engine::Sglang
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The engine options that change cost, memory or scheduling (parallel sizes live in
/// [`models::Layout`]). Defaults follow SGLang's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerOptions {
    /// The engine these options describe; set by the engine's translation
    /// ([`crate::engine`]), SGLang by default.
    #[serde(default, skip_serializing_if = "Engine::is_sglang")]
    pub engine: Engine,
    /// `--mem-fraction-static`: share of each GPU's memory for weights + KV pool.
    pub mem_fraction_static: f64,
    /// `--kv-cache-dtype`; `None` = the model's default (`auto`).
    pub kv_cache_dtype: Option<KvDtype>,
    /// `--chunked-prefill-size`: most prefill tokens per iteration.
    pub chunked_prefill_size: u32,
    /// `--max-prefill-tokens`.
    pub max_prefill_tokens: u32,
    /// `--max-running-requests` as given; `None` = not given: derived from KV capacity, or the
    /// engine's own cap under speculation ([`crate::engine::running_cap_in_force`]).
    pub max_running_requests: Option<u32>,
    /// `--cuda-graph-max-bs`: decode batches up to this size run under a CUDA graph.
    pub cuda_graph_max_bs: u32,
    /// `--disable-cuda-graph`.
    pub disable_cuda_graph: bool,
    /// `--disable-custom-all-reduce`.
    pub disable_custom_all_reduce: bool,
    /// `--moe-a2a-backend` (`deepep`, `mooncake`, …; vLLM's `--all2all-backend`
    /// `deepep_low_latency`, …); `None` = no all-to-all backend.
    pub moe_a2a_backend: Option<String>,
    /// The engine runs its all-to-all backend only with DP attention (vLLM's
    /// `FusedMoEParallelConfig.use_all2all_kernels`: DP ranks and EP); SGLang's runs wherever the
    /// experts are EP over the TP group. Set by the engine ([`a2a_applies`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub a2a_needs_dp_attention: bool,
    /// `--pp-max-micro-batch-size`; `None` = `max_running_requests / pp_size`.
    pub pp_max_micro_batch_size: Option<u32>,
    /// `--pp-async-batch-depth`: extra micro-batches in flight beyond `pp_size`.
    pub pp_async_batch_depth: u32,
    /// Overlap communication with compute (not SGLang's default; an option to explore).
    pub overlap_comm: bool,
    /// `--context-length`; `None` = the model's `max_position_embeddings`.
    #[serde(default)]
    pub context_length: Option<u32>,
    /// vLLM's `--max-model-len auto` (or `-1`): the config's length, which vLLM cuts at startup to
    /// what the KV cache holds for one request rather than refusing to start
    /// (`_auto_fit_max_model_len`, `v1/core/kv_cache_utils.py`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context_length_auto_fit: bool,
    /// `--max-total-tokens`: caps the KV pool's tokens; `None` = what memory allows.
    #[serde(default)]
    pub max_total_tokens: Option<u64>,
    /// `--disable-radix-cache`: no prefix reuse between requests.
    #[serde(default)]
    pub disable_radix_cache: bool,
    /// `--enable-mixed-chunk`: decode tokens ride along with a prefill chunk.
    #[serde(default)]
    pub enable_mixed_chunk: bool,
    /// `--schedule-policy` (`fcfs`, `lpm`, …), as SGLang spells it.
    #[serde(default = "default_schedule_policy")]
    pub schedule_policy: String,
    /// `--disable-overlap-schedule`: the CPU schedules the next batch only after the GPU is done.
    #[serde(default)]
    pub disable_overlap_schedule: bool,
    /// `--page-size`: KV pool page, tokens.
    #[serde(default = "default_page_size")]
    pub page_size: u32,
    /// `--attention-backend` (`flashinfer`, `fa3`, `triton`, `trtllm_mla`, …); `None` = SGLang picks.
    #[serde(default)]
    pub attention_backend: Option<String>,
    /// SGLang's DSA (NSA) kernels, prefill and decode ([`NsaBackends`]).
    #[serde(flatten)]
    pub nsa: NsaBackends,
    /// What the SGLang build's date says of its DSA defaults on Blackwell ([`DsaBuild`]); the
    /// default is today's build (a launch line names none).
    #[serde(default, skip_serializing_if = "DsaBuild::is_today")]
    pub dsa_build: DsaBuild,
    /// Bytes a Gated-DeltaNet state value takes as the launch sets it (vLLM's
    /// `--mamba-ssm-cache-dtype`); `None` = the engine's rule for the model
    /// ([`crate::engine::ServingEngine::linear_state_dtype_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_state_dtype_bytes: Option<u32>,
    /// Model-config fields the launch line overrides ([`ModelOverrides`]).
    #[serde(default, skip_serializing_if = "ModelOverrides::is_empty")]
    pub model_overrides: ModelOverrides,
    /// The checkpoint's BF16 weights quantized at load ([`OnlineQuant`]: vLLM's
    /// `--quantization-config` and `--quantization` shorthands, either engine's `--quantization
    /// fp8`), applied where the served spec is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_quant: Option<OnlineQuant>,
    /// Weights held in host memory and brought to the GPU every forward pass (either engine's
    /// `--cpu-offload-gb` and group offload: [`WeightOffload`]); `None` = all on the GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_offload: Option<WeightOffload>,
    /// A prompt may be split over steps (SGLang always; vLLM unless
    /// `--no-enable-chunked-prefill`): without it a waiting prompt larger than the step's budget
    /// left waits for a later step ([`crate::serving::engine`]).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub prefill_chunking: bool,
    /// `--moe-runner-backend` (`auto`, `triton`, `flashinfer_cutlass`, …); `None` = `auto`.
    #[serde(default)]
    pub moe_runner_backend: Option<String>,
    /// The b12x build a record's engine words name, where its MoE runs b12x
    /// ([`crate::b12x_build::B12xBuild`]); `None` = not stated (the newest modelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b12x_build: Option<crate::b12x_build::B12xBuild>,
    /// `B12X_MOE_FORCE_A16=1`: b12x runs its W4A16 MoE kernels (BF16 activations), which
    /// [`crate::cost::moe::MoeRunner::B12x`] does not describe.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub b12x_moe_a16: bool,
    /// The engine's overlap scheduler stays on under speculative decoding: SGLang's
    /// `SGLANG_ENABLE_SPEC_V2` (its speculative worker v2); without it SGLang turns the overlap
    /// scheduler off for EAGLE / NEXTN / EAGLE3 ([`crate::engine::ServingEngine::overlap_scheduled`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub speculative_overlap: bool,
    /// The b12x vLLM fork's all-reduce + residual add + RMSNorm kernel on its PCIe one-shot
    /// channel, for messages up to this many bytes, on one-token steps
    /// ([`crate::engine::LaunchKnobs::fused_add_rms_norm_max_bytes`]); `None` = each all-reduce
    /// is followed by its own add + RMSNorm kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused_add_rms_norm_max_bytes: Option<u64>,
    /// `B12X_W4A16_TC_DECODE=1`: under `b12x_moe_a16`, decode sizes run b12x's W4A16
    /// tensor-core decode kernel ([`crate::b12x_build::B12X_W4A16_TC_DECODE`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub b12x_w4a16_tc_decode: bool,
    /// The b12x W4A16 build a record's or log's engine words name, under `b12x_moe_a16`
    /// ([`crate::b12x_build::B12xA16Build`]); `None` = not stated (priced as the tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b12x_a16_build: Option<crate::b12x_build::B12xA16Build>,
    /// Which b12x sparse-MLA kernel runs a speculative verify under vLLM's `--attention-backend
    /// B12X_MLA_SPARSE` ([`crate::b12x_build::B12xMlaVerify`]): the extend kernel is not priced
    /// (the engine's caveat says so); `None` = not known (the decode kernel's price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b12x_mla_verify: Option<crate::b12x_build::B12xMlaVerify>,
    /// The engine's Triton fused MoE found no tuned config file for this model, GPU and slice,
    /// and runs its default launch config: from the server log's "Using default MoE kernel
    /// config" line or a record's `engine.moe_kernel_config`; priced by
    /// [`crate::cost::moe_config`] where measured. `false` = tuned, as the kernel tables ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub moe_default_config: bool,
    /// `--quantization` (`modelopt_fp4`, `fp8`, …); `None` = the checkpoint's own.
    #[serde(default)]
    pub quantization: Option<String>,
    /// Speculative decoding (`--speculative-algorithm` …); `None` = off.
    #[serde(default)]
    pub speculative: Option<SpeculativeOptions>,
    /// A one-shot custom all-reduce over PCIe on more than two GPUs, for messages up to this many
    /// bytes: stock SGLang (and vLLM) disable their custom all-reduce on > 2 PCIe-only GPUs; the
    /// RTX PRO 6000 community builds add one (SGLang's `--enable-pcie-oneshot-allreduce`, vLLM's
    /// `VLLM_ENABLE_PCIE_ALLREDUCE=1`). `None` = the stock rule. Set by [`crate::engine`].
    #[serde(default)]
    pub pcie_custom_all_reduce_max_bytes: Option<u64>,
    /// `--stream-interval`: the server streams output every this many decode steps (and the
    /// first token at once), so a client's inter-token latency is the gap between such chunks.
    #[serde(default = "default_stream_interval")]
    pub stream_interval: u32,
    /// SGLang's `--scheduler-recv-interval`: during decode the scheduler reads new requests
    /// only every this many decode steps (and right after a prefill), so a request that arrives
    /// between two reads waits for the next ([`crate::serving`]); 1 = every step, vLLM's way.
    #[serde(default = "default_stream_interval")]
    pub scheduler_recv_interval: u32,
    /// A speculative verify pass runs every draft token as a decode row of its own, each scoring
    /// its request's whole cache (priced as re-reads of it: [`crate::cost::triton_mla`]): vLLM's
    /// Triton MLA, the MLA kernel vLLM runs on workstation
    /// parts (SM120), where FlashMLA and the CUTLASS / TRT-LLM MLA kernels, which read the cache
    /// once for all of a request's tokens, are not built. Its decode kernel "treats each query as
    /// a separate request", so the builder repeats each request's block-table row per query token
    /// (local-inference-lab/rtx6kpro models/kimi-k26-mtp-long-ctx-wip/README.md @10dd6f5;
    /// voipmonitor/vllm `v1/attention/backends/mla/triton_mla.py` @2fe72a2, `_build_decode`).
    /// Set by [`crate::engine`] for vLLM; the cost model applies it to MLA on SM120 only.
    #[serde(default)]
    pub verify_rows_per_draft_token: bool,
    /// vLLM's `--decode-context-parallel-size`: each request's KV cache is sharded along the
    /// sequence over this many ranks of the TP group (1 = every TP rank holds all of it; see
    /// [`crate::cost::dcp`]). SGLang has no such option: always 1 there.
    #[serde(default = "default_dcp")]
    pub decode_context_parallel: u32,
    /// A vLLM server: its KV cache is sized as vLLM's worker sizes it
    /// ([`crate::cost::memory::vllm`]), not by `mem_fraction_static`. Set by [`crate::engine`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vllm_memory: Option<VllmMemory>,
    /// Every modelled on/off flag of the engine's flag table that is on, by its `dest`
    /// (`enable_two_batch_overlap`): filled from the table, so that a new modelled switch needs
    /// no field here, only its row in the table and its effect in the cost model
    /// (`ServerOptions::switch`, beside the table in `crate::engine::sglang::args`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub switches: BTreeSet<String>,
    /// The client sends every running stream the same prompt (`llm_decode_bench.py`'s shared
    /// document and generation prompt): the streams continue one text, and a decode batch's
    /// tokens route alike ([`crate::cost::moe::SHARED_PROMPT_ROUTING_SKEW`]). Not a server flag:
    /// set from the workload by the records' scoring.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streams_share_prompt: bool,
    /// The launch is a public record's summary of its flags, which does not say whether
    /// `--max-running-requests` was given: the engine's own cap under speculation is not applied
    /// (public benchmark launches set the flag: the rtx6kpro GLM-5 page's launch line gives 64,
    /// and InferenceX's SGLang MTP runs keep scaling past 48 streams). Not a server flag: set by
    /// the records' scoring.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running_cap_unstated: bool,
}

/// Whether the all-to-all backend of `opts` can run `layout` of `spec`: the experts
/// expert-parallel over the whole TP group of a MoE model (what SGLang requires), with DP
/// attention where the engine needs it ([`ServerOptions::a2a_needs_dp_attention`]).
pub fn a2a_applies(opts: &ServerOptions, spec: &ModelSpec, layout: &Layout) -> bool {
    spec.moe.is_some()
        && layout.ep > 1
        && layout.ep == layout.tp
        && (layout.dp_attention || !opts.a2a_needs_dp_attention)
}

/// The MoE runner both engines name b12x: its integration runs the routed experts sliced by
/// TP only.
pub const B12X_RUNNER: &str = "b12x";

/// Whether `opts`'s MoE runner can run `layout` of `spec`: all can but b12x with the experts
/// expert-parallel, which both engines refuse to start (SGLang with `--ep-size` > 1 or an
/// all-to-all backend, `ServerArgs._handle_b12x_moe_support`, lukealonso/sglang main c70c22a1,
/// 2026-03-20; vLLM with expert parallelism, EPLB or all-to-all kernels,
/// `B12xExperts._supports_parallel_config` in `fused_moe/b12x_moe.py`, local-inference-lab/vllm
/// 28be48fa, 2026-05-24, raising "does not support the deployment configuration" for an
/// explicit `--moe-backend b12x`).
pub fn runner_applies(opts: &ServerOptions, spec: &ModelSpec, layout: &Layout) -> bool {
    opts.moe_runner_backend.as_deref() != Some(B12X_RUNNER) || spec.moe.is_none() || layout.ep <= 1
}

/// `opts` for `layout` among several ranked: the all-to-all backend where it can run, none
/// elsewhere (SGLang would refuse it there); a MoE runner that cannot run the layout's experts
/// ([`runner_applies`]) left to the engine's own choice, priced on the kernel tables, as a
/// launch without it would run.
pub fn runnable_on(opts: &ServerOptions, spec: &ModelSpec, layout: &Layout) -> ServerOptions {
    let mut o = opts.clone();
    if !a2a_applies(&o, spec, layout) {
        o.moe_a2a_backend = None;
    }
    if !runner_applies(&o, spec, layout) {
        o.moe_runner_backend = None;
    }
    o
}

/// SGLang's speculative-decoding flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeculativeOptions {
    /// `--speculative-algorithm`: `EAGLE`, `EAGLE3`, `NEXTN`, `STANDALONE` (SGLang's spelling).
    pub algorithm: String,
    /// `--speculative-num-steps`: draft forward passes per step.
    pub num_steps: u32,
    /// `--speculative-eagle-topk`: branches per draft step.
    pub eagle_topk: u32,
    /// `--speculative-num-draft-tokens`: tokens the target verifies per request and step.
    pub num_draft_tokens: u32,
    /// `--speculative-draft-model-path`; `None` = the checkpoint's own MTP/NEXTN layers.
    #[serde(default)]
    pub draft_model_path: Option<String>,
    /// Accepted tokens per request and step (the acceptance length), when known.
    #[serde(default)]
    pub accept_length: Option<f64>,
    /// The kind of prompts served, for the acceptance prior when no length is known
    /// ([`crate::acceptance::prior`]); `None` = random, what `bench_serving`'s default sends.
    #[serde(default)]
    pub prompt_kind: Option<crate::acceptance::PromptKind>,
    /// The words that force `accept_length` (synthetic acceptance:
    /// `SGLANG_SIMULATE_ACC_LEN=3.24`, vLLM's `"synthetic_acceptance_length": 3.24`,
    /// [`crate::engine::forced_acceptance`]): the run accepts exactly that, whatever the draft.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced_by: Option<String>,
}

fn default_schedule_policy() -> String {
    "fcfs".into()
}

fn default_page_size() -> u32 {
    1
}

/// SGLang's DSA (NSA) backend's kernels as the launch names them; `None` = SGLang's default for
/// the KV dtype and GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NsaBackends {
    /// `--nsa-prefill-backend` (`flashmla_auto`, `flashmla_sparse`, `flashmla_kv`, `fa3`,
    /// `trtllm`, …; [`crate::cost::attn_core::SparsePrefill`]).
    #[serde(
        rename = "nsa_prefill_backend",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub prefill: Option<String>,
    /// `--nsa-decode-backend` (`flashmla_kv`, `fa3`, `trtllm`, …; which measured decode module
    /// prices it, [`crate::cost::dsa_module_table`]).
    #[serde(
        rename = "nsa_decode_backend",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub decode: Option<String>,
}

/// What an SGLang build's date (a record's engine words) says of its DSA defaults on Blackwell,
/// set by [`crate::engine::ServingEngine::dated_knobs`]; both `false` for today's build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DsaBuild {
    /// The build predates the `trtllm` DSA default on Blackwell (sgl-project/sglang #21914,
    /// 2026-04-02): with no `--nsa-prefill-backend` it ran a FlashMLA prefill there, as every
    /// build does on Hopper ([`crate::cost::attn_core::SparsePrefill`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flashmla_default: bool,
    /// The build is from the window (#20086, 2026-03-07, to #21914) in which a DSA model's
    /// `auto` cache was bf16 on Blackwell too for a server without DP attention
    /// ([`crate::cost::model`]'s `sglang_dsa_auto_kv`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kv_auto_dp_window: bool,
}

impl DsaBuild {
    fn is_today(&self) -> bool {
        *self == DsaBuild::default()
    }
}

/// Fields of the model's config a launch line overrides at load (vLLM's `--hf-overrides`, a JSON
/// object merged into the HF config before the model is built), applied where the served spec
/// is made ([`crate::cost::model`]'s `served_spec`), so memory and every pass read them alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelOverrides {
    /// `index_topk_pattern` (`F` a layer scoring its own DSA top-k, `S` one reusing the previous
    /// layer's; the GLM-5.x "index cache"), one letter a main-model layer; `indexer_types`
    /// given as a list is carried here in the same letters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_topk_pattern: Option<String>,
    /// The override's other keys, which change nothing priced (said beside the prediction).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_modelled: Vec<String>,
}

impl ModelOverrides {
    fn is_empty(&self) -> bool {
        *self == ModelOverrides::default()
    }

    /// The overrides of a JSON object (`--hf-overrides '{"index_topk_pattern": "FFS…"}'`); a
    /// pattern that is not F / S letters (or `full` / `shared` entries) is refused.
    pub fn of_json(v: &serde_json::Value) -> Result<ModelOverrides, String> {
        let mut o = ModelOverrides::default();
        let Some(map) = v.as_object() else {
            return Err("is not a JSON object".into());
        };
        for (key, value) in map {
            match key.as_str() {
                "index_topk_pattern" | "indexer_types" => {
                    o.index_topk_pattern = Some(index_letters(key, value)?);
                }
                _ => o.not_modelled.push(format!("{key}={value}")),
            }
        }
        Ok(o)
    }
}

/// Weights kept in host memory and brought to the GPU every forward pass, as each engine's
/// source does it (vLLM `config/offload.py`, `model_executor/offloader/{uva,prefetch}.py` @
/// 28ee78af; SGLang `srt/utils/offloader.py` @ 046a9e40; docs/what-rests-on-what.md, "Weight
/// offload"). Both wrap only the decoder layers `make_layers` builds (never the embedding, the
/// LM head or an MTP layer), rank-local under pipeline parallelism.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightOffload {
    /// Which decoder layers' parameters live on the host.
    pub layers: OffloadLayers,
    /// How the GPU gets them each forward pass.
    pub transfer: OffloadTransfer,
    /// Which parameters of a chosen layer move.
    pub params: OffloadParams,
}

/// Which decoder layers a [`WeightOffload`] holds on the host.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffloadLayers {
    /// A budget per GPU filled parameter by parameter from the first decoder layer, the budget
    /// checked before each parameter (so it overshoots by at most one): `--cpu-offload-gb`
    /// (GiB) in both engines.
    Budget { bytes_per_gpu: u64 },
    /// Of every `group_size` decoder layers the last `num_in_group` (`index % group_size >=
    /// group_size − num_in_group`), each copied `prefetch_step` offloaded layers ahead:
    /// `--offload-group-size`, `--offload-num-in-group`, `--offload-prefetch-step`.
    Groups {
        group_size: u32,
        num_in_group: u32,
        prefetch_step: u32,
    },
}

/// How the GPU gets the offloaded weights each forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffloadTransfer {
    /// The kernels read pinned host memory in place through a device view of it (UVA): every
    /// byte they touch crosses the link each pass, routed experts only where tokens go (vLLM's
    /// default `--cpu-offload-gb`, `UVAOffloader`).
    ZeroCopy,
    /// Each offloaded layer's parameters copied whole to the GPU on the compute stream before
    /// it runs, nothing overlapped (SGLang's `--cpu-offload-gb`, `OffloaderV1`; vLLM's with
    /// `VLLM_WEIGHT_OFFLOADING_DISABLE_UVA=1`).
    CopyInLine,
    /// Each offloaded layer copied whole on a side stream while the layers before it compute
    /// (vLLM's `prefetch` backend; SGLang's group offload, `OffloaderV2`).
    CopyAhead {
        /// SGLang: inside a CUDA graph the copies are captured in line on the capture stream
        /// (PR #29166), so a replayed decode step overlaps nothing.
        in_line_under_graphs: bool,
        /// GPU buffers held for the copies, in offloaded layers (vLLM's static pool:
        /// `prefetch_step`; SGLang allocates them per copy from the cache, so 0 here).
        static_buffer_layers: u32,
    },
}

/// Which parameters of an offloaded layer move to the host.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OffloadParams {
    /// Everything but the routed experts (attention, router, shared experts, dense MLP).
    pub dense: bool,
    /// The share of the routed experts' bytes: 1 for both `w13` and `w2`, ⅔ for `w13` (gate
    /// and up) alone, ⅓ for `w2` (down) alone.
    pub expert_share: f64,
}

impl OffloadParams {
    /// Every parameter of the layer.
    pub const ALL: OffloadParams = OffloadParams {
        dense: true,
        expert_share: 1.0,
    };
    /// The routed experts' weights only (SGLang's group offload on DeepSeek-family models:
    /// `w13_weight`, `w2_weight`).
    pub const EXPERTS: OffloadParams = OffloadParams {
        dense: false,
        expert_share: 1.0,
    };

    /// The parameters vLLM's `--cpu-offload-params` / `--offload-params` name, by exact name
    /// segment ("experts" matches `mlp.experts.w13_weight`, "expert" does not; an empty set is
    /// every parameter); `Err` names a segment shardwise cannot place among its parts.
    pub fn of_segments(segments: &[&str]) -> Result<OffloadParams, String> {
        if segments.is_empty() {
            return Ok(OffloadParams::ALL);
        }
        let (mut w13, mut w2) = (false, false);
        for s in segments {
            let parts: Vec<&str> = s.split('.').collect();
            match parts.as_slice() {
                ["experts"] | ["mlp", "experts"] => (w13, w2) = (true, true),
                ["w13_weight"] | ["experts", "w13_weight"] | ["mlp", "experts", "w13_weight"] => {
                    w13 = true
                }
                ["w2_weight"] | ["experts", "w2_weight"] | ["mlp", "experts", "w2_weight"] => {
                    w2 = true
                }
                _ => {
                    return Err(format!(
                        "`{s}` is not a parameter name segment shardwise can place (it reads `experts`, `w13_weight`, `w2_weight`, as vLLM's fused MoE names the routed experts; leave the flag out to offload every parameter)"
                    ));
                }
            }
        }
        Ok(OffloadParams {
            dense: false,
            expert_share: f64::from(u8::from(w13)) * 2.0 / 3.0 + f64::from(u8::from(w2)) / 3.0,
        })
    }
}

/// Weights a checkpoint leaves in BF16, quantized as the engine loads them: vLLM's
/// `--quantization-config '{"linear": {"weight": "mxfp8"}, "moe": …, "ignore": ["re:.*kv_b_proj"]}'`
/// (`QuantizationConfigArgs`, vLLM's `config/quantization.py`) over its `--quantization`
/// shorthand, or either engine's `--quantization fp8` on a BF16 checkpoint: the format the
/// linears and the routed experts take and the modules left out. Applied by
/// [`models::ModelSpec::with_online_quant`] where the served spec is made; parts the checkpoint
/// quantized keep their format.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OnlineQuant {
    /// The BF16 linears' weight format after loading (`None`: left as stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear: Option<models::WeightFormat>,
    /// The BF16 routed experts' weight format after loading (`None`: left as stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<models::WeightFormat>,
    /// `ignore` entries (`re:` regexes or globs over module names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// Only a checkpoint stored in BF16 throughout is converted: a `--quantization` method
    /// (`fp8`, an online shorthand) on a quantized checkpoint names that checkpoint's own
    /// scheme, whose BF16 leftovers it keeps (`Fp8Config` with an FP8-serialized checkpoint).
    /// `false` for a `--quantization-config` beside a quantized checkpoint's method, which
    /// converts what that checkpoint leaves in BF16.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only_unquantized: bool,
}

impl OnlineQuant {
    /// Both sides in `format`, on a BF16 checkpoint only (a `--quantization` method's linear
    /// and MoE specs).
    pub fn both(format: models::WeightFormat) -> OnlineQuant {
        OnlineQuant {
            linear: Some(format),
            moe: Some(format),
            ignore: Vec::new(),
            only_unquantized: true,
        }
    }

    /// The object vLLM's `--quantization-config` takes, over `base` (its `--quantization`
    /// shorthand's specs, where it names one): `linear` and `moe` each a spec (`{"weight":
    /// NAME}`) or a name, `ignore` a list of strings; a field the object sets replaces the
    /// base's, as vLLM's `resolve_quantization_config` does. `None` where neither side is set;
    /// an error for what shardwise cannot price for sure: an activation key, a weight name it
    /// does not price or a key vLLM does not take.
    pub fn of_json(
        v: &serde_json::Value,
        base: Option<OnlineQuant>,
    ) -> Result<Option<OnlineQuant>, String> {
        let Some(map) = v.as_object() else {
            return Err("is not a JSON object".into());
        };
        let mut q = base.unwrap_or_default();
        for (key, value) in map {
            match key.as_str() {
                "linear" if !value.is_null() => q.linear = Some(online_weight(key, value)?),
                "moe" if !value.is_null() => q.moe = Some(online_weight(key, value)?),
                "linear" | "moe" => {}
                "ignore" => {
                    q.ignore = value
                        .as_array()
                        .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect())
                        .ok_or("`ignore` is not a list of strings")?
                }
                other => return Err(format!("unknown key `{other}`")),
            }
        }
        Ok((q.linear.is_some() || q.moe.is_some()).then_some(q))
    }
}

/// A `linear` / `moe` spec's weight format: vLLM's `QUANT_KEY_NAMES` (`mxfp8`,
/// `fp8_per_block_*`, `fp8_per_tensor_*`, `fp8_per_token`), as a name or `{"weight": NAME}`.
fn online_weight(side: &str, value: &serde_json::Value) -> Result<models::WeightFormat, String> {
    let name = match value {
        serde_json::Value::String(s) => s.as_str(),
        serde_json::Value::Object(o) => {
            if o.get("activation").is_some_and(|a| !a.is_null()) {
                return Err(format!("`{side}`: an `activation` key is not modelled"));
            }
            o.get("weight")
                .and_then(|w| w.as_str())
                .ok_or_else(|| format!("`{side}` has no `weight` name"))?
        }
        _ => return Err(format!("`{side}` is neither a name nor an object")),
    };
    Ok(match name {
        "mxfp8" => models::WeightFormat::Mxfp8,
        "fp8_per_block_static" | "fp8_per_block_dynamic" => {
            models::WeightFormat::Fp8 { block: 128 }
        }
        "fp8_per_tensor_static" | "fp8_per_tensor_dynamic" | "fp8_per_token" => {
            models::WeightFormat::Fp8 { block: 0 }
        }
        other => {
            return Err(format!(
                "`{side}` weight `{other}` is not one shardwise prices (mxfp8, fp8_per_block_static, fp8_per_block_dynamic, fp8_per_tensor_static, fp8_per_tensor_dynamic, fp8_per_token)"
            ));
        }
    })
}

/// `index_topk_pattern` (a string, or a list of letters) or `indexer_types` (`full` / `shared`)
/// as one letter a layer.
fn index_letters(key: &str, value: &serde_json::Value) -> Result<String, String> {
    let letter = |x: &str| match x {
        "F" | "full" => Ok('F'),
        "S" | "shared" => Ok('S'),
        other => Err(format!(
            "{key} entry `{other}` is neither F / full (a layer with its own indexer) nor S / shared"
        )),
    };
    match value {
        serde_json::Value::String(p) => p.chars().map(|c| letter(&c.to_string())).collect(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map_or_else(|| Err(format!("{key} entries must be strings")), letter)
            })
            .collect(),
        _ => Err(format!("{key} must be a string of F / S letters or a list")),
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn default_stream_interval() -> u32 {
    1
}

fn default_dcp() -> u32 {
    1
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            engine: Engine::Sglang,
            mem_fraction_static: 0.85,
            kv_cache_dtype: None,
            chunked_prefill_size: 8192,
            max_prefill_tokens: 16384,
            max_running_requests: None,
            cuda_graph_max_bs: 160,
            disable_cuda_graph: false,
            disable_custom_all_reduce: false,
            moe_a2a_backend: None,
            a2a_needs_dp_attention: false,
            pp_max_micro_batch_size: None,
            pp_async_batch_depth: 0,
            overlap_comm: false,
            context_length: None,
            context_length_auto_fit: false,
            max_total_tokens: None,
            disable_radix_cache: false,
            enable_mixed_chunk: false,
            schedule_policy: default_schedule_policy(),
            disable_overlap_schedule: false,
            page_size: default_page_size(),
            attention_backend: None,
            nsa: NsaBackends::default(),
            dsa_build: DsaBuild::default(),
            linear_state_dtype_bytes: None,
            model_overrides: ModelOverrides::default(),
            online_quant: None,
            weight_offload: None,
            prefill_chunking: true,
            moe_runner_backend: None,
            b12x_build: None,
            b12x_moe_a16: false,
            b12x_w4a16_tc_decode: false,
            fused_add_rms_norm_max_bytes: None,
            speculative_overlap: false,
            b12x_a16_build: None,
            b12x_mla_verify: None,
            moe_default_config: false,
            quantization: None,
            speculative: None,
            pcie_custom_all_reduce_max_bytes: None,
            stream_interval: default_stream_interval(),
            scheduler_recv_interval: default_stream_interval(),
            verify_rows_per_draft_token: false,
            decode_context_parallel: default_dcp(),
            vllm_memory: None,
            switches: BTreeSet::new(),
            streams_share_prompt: false,
            running_cap_unstated: false,
        }
    }
}
/// The vLLM settings that size its memory, `None` = vLLM's default for the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VllmMemory {
    /// `--gpu-memory-utilization` (default 0.9).
    pub gpu_memory_utilization: f64,
    /// `--max-num-batched-tokens`: the profiling run's token count (and the scheduler's budget).
    pub max_num_batched_tokens: Option<u32>,
    /// `--no-enable-chunked-prefill` with no `--max-num-batched-tokens`: the budget is
    /// `max(max_model_len, the default)`, at most `max_num_seqs × max_model_len`
    /// ([`crate::cost::memory::vllm::plan`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unchunked_default_budget: bool,
    /// `--max-num-seqs`: the sampler rows of the profiling run.
    pub max_num_seqs: Option<u32>,
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1`: CUDA-graph memory comes out of the cache.
    #[serde(default)]
    pub estimate_cudagraphs: bool,
    /// `--kv-cache-memory-bytes`: the KV cache each GPU holds, in bytes; `gpu_memory_utilization`
    /// then sizes nothing (`Worker.determine_available_memory` returns this without profiling
    /// the budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_memory_bytes: Option<u64>,
}
