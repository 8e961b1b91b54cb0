//! The serving engines, one seam: each engine is a folder-module ([`sglang`], [`vllm`]) that
//! implements [`ServingEngine`], and [`Engine::rules`] is the registry that finds it from the tag
//! a [`ServerOptions`] carries. A measurement taken under vLLM is simulated either as vLLM would
//! run it (its defaults and the knobs it was launched with) or as SGLang would (`sim validate
//! --engine sglang`), never by pretending the two are the same.
//!
//! An engine's effect is expressed only through [`ServerOptions`] values (tagged with the
//! engine) plus a note per translated or dropped knob, and through its [`ServingEngine`] rules,
//! which the modules above ask instead of testing which engine it is.
//! The differences that matter to the records in `validation-dev/records.json`:
//! - Custom all-reduce on more than two PCIe GPUs: stock SGLang and stock vLLM both disable their
//!   custom all-reduce there (`custom_all_reduce.py`: "not supported on more than two PCIe-only
//!   GPUs"). The RTX PRO 6000 community builds add a one-shot PCIe kernel, each engine its own:
//!   SGLang's `--enable-pcie-oneshot-allreduce` (lukealonso/sglang d39236ae; its startup
//!   crossover picks 48 KB on 8 GPUs, 120 KB on 4, per rtx6kpro `optimization/
//!   pcie-oneshot-allreduce.md`) and vLLM's `VLLM_ENABLE_PCIE_ALLREDUCE=1` (1-stage cutoff 56 KB
//!   in the Kimi-K2.6 records). A knob of one engine does nothing under the other.
//! - CUDA-graph capture: vLLM captures decode batches up to 512 by default
//!   (`max_cudagraph_capture_size`), SGLang up to `--cuda-graph-max-bs` (160 here).
//! - Scheduler: vLLM's V1 scheduler always chunks prefills within `--max-num-batched-tokens` and
//!   mixes them with the running decodes in one batch, reserves no output at admission and
//!   preempts the latest-admitted request when the cache is full; SGLang's runs prefill-first
//!   batches (mixed only under `--enable-mixed-chunk`) and reserves output under its
//!   `new_token_ratio` ([`scheduler`], each engine's policy in its folder). Decode-only records
//!   (`llm_decode_bench`) do not see the difference.
//! - Memory: vLLM sizes its KV cache from `--gpu-memory-utilization` of the card less weights,
//!   the profiling run's peak and non-torch memory ([`crate::cost::memory::vllm`]); SGLang from
//!   `--mem-fraction-static` of the memory free after start-up.

pub mod command;
pub mod draft;
pub mod forced_acceptance;
pub mod knob;
pub mod launch;
pub mod log;
pub mod record;
pub mod scheduler;
pub mod sglang;
pub mod vllm;

use crate::machine::Machine;
pub use crate::options::Engine;
use crate::options::{ServerOptions, SpeculativeOptions};
pub use knob::Knob;
pub use launch::LaunchWords;
use log::{ServerLog, ServerRun};
use models::{KvDtype, Layout};
pub use scheduler::SchedulerPolicy;
use serde::{Deserialize, Serialize};
pub use vllm::batch_defaults;

/// What one serving engine does differently, asked by the modules above this floor in place of
/// "is this vLLM?": its translation of launch knobs, its flags' spellings in `try:` lines, its
/// admission rule, its CUDA-graph capture, its decode-attention kernels and its all-reduce.
pub trait ServingEngine: Sync {
    /// The tag of this engine.
    fn kind(&self) -> Engine;

    /// The engine's name as its project spells it (`SGLang`, `vLLM`), for messages.
    fn display_name(&self) -> &'static str;

    /// The engine-specific part of turning `knobs` into options on a TP group of `tp` GPUs of
    /// `gpu_memory_bytes` each (memory sizing, batch defaults, DCP, CUDA-graph capture), with one
    /// note per knob translated, defaulted or dropped; the shared knobs are set before
    /// ([`Engine::server_options`]).
    fn apply_knobs(
        &self,
        knobs: &LaunchKnobs,
        tp: u32,
        gpu_memory_bytes: u64,
        o: &mut ServerOptions,
        notes: &mut Vec<String>,
    );

    /// Whether requests with the same prompt share its cached KV under `knobs`, for a model with
    /// linear-attention (mamba-style) layers or not, and why.
    fn prefix_cache(&self, knobs: &LaunchKnobs, hybrid: bool) -> (bool, &'static str);

    /// Whether a speculative verify pass is captured in CUDA graphs by tokens (B × (k + 1)
    /// against the capture limit) rather than by requests.
    fn verify_graphs_by_tokens(&self) -> bool;

    /// Whether the draft's first (extend) pass runs the step's whole chain (`num_steps + 1`
    /// tokens a request) even without CUDA graphs: vLLM's proposer runs over the verify batch's
    /// `num_input_tokens`; SGLang's eager extend runs only the accepted tokens.
    fn eager_extend_runs_whole_chain(&self) -> bool;

    /// Host time a speculative step under DCP (`dcp > 1`) spends after a blocking device-to-host
    /// copy that waits for the verify pass, before the next verify is launched (the draft's
    /// metadata, its launches, the next step's input preparation): the GPU runs only the draft's
    /// passes meanwhile. `None` where a step has no such wait (SGLang runs no DCP).
    fn spec_dcp_host_after_sync_s(&self) -> Option<f64>;

    /// The acceptance length a launch forces in this engine's words within `text` (a record's
    /// flags, a launch line's environment and flags: [`forced_acceptance`]), checked against the
    /// step's `drafts`: `None` where nothing forces it, `Some(Err)` with why a forcing is not
    /// read.
    fn forced_accept_length(&self, text: &str, drafts: u32) -> Option<Result<f64, String>>;

    /// Whether the engine's scheduler overlaps its CPU turn with the GPU's step under `opts`
    /// (the step then costs the larger of the two, not their sum).
    fn overlap_scheduled(&self, opts: &crate::options::ServerOptions) -> bool {
        !opts.disable_overlap_schedule
    }

    /// The server-environment setting, in the engine's spelling, that keeps the overlap
    /// scheduler on under the speculation `opts` runs where the engine turns it off and that
    /// draft can keep it; `None` where there is no such switch, it is already on, or the
    /// draft cannot take it.
    fn speculative_overlap_switch(
        &self,
        _opts: &crate::options::ServerOptions,
    ) -> Option<&'static str> {
        None
    }

    /// The running-request cap the engine sets itself when speculative decoding is on and
    /// `--max-running-requests` is not given; `None` where it sets none (the memory plan's cap
    /// stands).
    fn speculative_running_cap(&self) -> Option<u32>;

    /// What public runs say of this engine's speculative decoding on `model` served with `opts`
    /// that the cost model does not price, said beside every speculative prediction of it;
    /// `None` where nothing is known.
    fn spec_caveat(
        &self,
        _model: &models::ModelSpec,
        _opts: &crate::options::ServerOptions,
    ) -> Option<&'static str> {
        None
    }

    /// Every caveat [`Self::spec_caveat`] can say (the error model reads a prediction's notes for
    /// them: [`is_spec_caveat`]).
    fn spec_caveats(&self) -> &'static [&'static str] {
        &[]
    }

    /// Those of [`Self::spec_caveats`] that are decode context parallelism's: a speculative step
    /// under DCP measured dearer than priced, a cause of its own whose error the error model
    /// measures apart from the others' ([`is_dcp_spec_caveat`]).
    fn dcp_spec_caveats(&self) -> &'static [&'static str] {
        &[]
    }

    /// What a build the launch does not name may cost a speculative step beyond this price, said
    /// with `advise --question mtp`'s answer where [`Self::spec_caveat`] says nothing: the build
    /// is not known, so no prediction is flagged for it. `None` where nothing is known.
    fn spec_build_caveat(
        &self,
        _model: &models::ModelSpec,
        _opts: &crate::options::ServerOptions,
    ) -> Option<&'static str> {
        None
    }

    /// Whether it serves a DSA checkpoint (GLM-5.x, DeepSeek-V3.2) with sparse attention on every
    /// GPU, its indexer scoring with a fused kernel (logits and top-k over the fp8 index keys)
    /// where DeepGEMM's does not run. `false` where it falls back to dense MLA off the datacenter
    /// parts unless told otherwise ([`crate::cost::attn_core::sparse_attention`]).
    fn dsa_always_sparse(&self) -> bool {
        false
    }

    /// Bytes a value of a Gated-DeltaNet recurrent state takes in this engine's cache when the
    /// model's config names no `mamba_ssm_dtype` (`stated` false) or when the launch sets one
    /// (`given`); `None` = the model's own figure (SGLang's `--mamba-ssm-dtype` default, float32).
    fn linear_state_dtype_bytes(&self, _stated: bool, _given: Option<u32>) -> Option<u32> {
        None
    }

    /// Whether its dense-MLA decode on SM120 is vLLM's TRITON_MLA, priced by that kernel's grid
    /// ([`crate::cost::decode_table`]) rather than by the efficiency curve.
    fn sm120_mla_decode_by_grid(&self) -> bool;

    /// The backend of the decode-attention table ([`crate::cost::decode_table`]) this engine runs
    /// on SM120 for an attention `kind` (`mla`, `gqa`) over a `kv_dtype` cache under
    /// `--attention-backend` (`None` = the engine's choice); `None` = no table prices it.
    fn decode_table_backend(
        &self,
        kind: &str,
        kv_dtype: &str,
        attention_backend: Option<&str>,
    ) -> Option<&'static str>;

    /// The DSA decode kernel this engine runs on a GPU of SM major `sm` for a `kv_dtype`
    /// (`fp8` / `bf16`) cache, under its DSA decode flag `named`, where a measured decode module
    /// ([`crate::cost::dsa_module_table`]) can price it; `None` = not known here, or none.
    fn dsa_decode_backend(
        &self,
        _sm: u32,
        _kv_dtype: &str,
        _named: Option<&str>,
    ) -> Option<&'static str> {
        None
    }

    /// The backend of the MoE kernel table ([`crate::cost::moe_table`]) this engine runs on
    /// SM120 for routed experts in weight format `format` under its MoE-backend flag
    /// (`moe_backend`, `None` = the engine's choice) where the fused-MoE curves were fitted to
    /// another kernel; `None` = the curves price it.
    fn moe_table_backend(&self, _format: &str, _moe_backend: Option<&str>) -> Option<&'static str> {
        None
    }

    /// Whose custom all-reduce (and rules for switching it off) the cost model applies.
    fn custom_all_reduce(&self) -> AllReduceRules;

    /// The flag that caps the running batch (`--max-running-requests`, `--max-num-seqs`).
    fn max_requests_flag(&self) -> &'static str;

    /// How this engine sizes its KV cache in `opts`: the inputs of vLLM's worker sizing (a
    /// share of the whole card less weights, the profiling run's peak and non-torch memory,
    /// [`crate::cost::memory::vllm`]) where it sizes that way, `None` where it sizes from a
    /// share of the memory free after start-up (SGLang's `--mem-fraction-static`).
    fn card_share_kv_sizing<'a>(
        &self,
        _opts: &'a ServerOptions,
    ) -> Option<&'a crate::options::VllmMemory> {
        None
    }

    /// The flag whose share of each GPU's memory sizes the KV cache (`--mem-fraction-static`,
    /// `--gpu-memory-utilization`), for messages that tell a user what to raise.
    fn memory_fraction_flag(&self) -> &'static str;

    /// Whether `sim advise --question` (EP, MTP, scale, replicas, P2P) answers for its servers:
    /// each question builds its layouts' flags and options through the engine's rules
    /// ([`ServingEngine::launch_flags`], [`ServingEngine::speculative_flags`],
    /// [`ServingEngine::pcie_oneshot`], [`ServingEngine::replicas_flag`],
    /// [`ServingEngine::node_join_flags`]).
    fn answers_questions(&self) -> bool;

    /// How its servers turn on the one-shot PCIe custom all-reduce on more than two GPUs, and
    /// its cutoff for a group of `tp` GPUs where the launch states none.
    fn pcie_oneshot(&self, tp: u32) -> PcieOneshotSwitch;

    /// The flags that join node `rank` to a server over several boxes, node 0's address a
    /// placeholder.
    fn node_join_flags(&self, rank: u32) -> String;

    /// How to put one server per box behind a router, for `nodes` boxes.
    fn router_hint(&self, nodes: u32) -> String;

    /// Its flags that turn on the speculation `s` (a chain of `num_steps` drafts where the
    /// engine drafts one token a step), for a `try:` line.
    fn speculative_flags(&self, s: &SpeculativeOptions) -> String;

    /// A draft configuration's shape in its own words, for an answer's sentence (SGLang's
    /// steps / topk / draft tokens, vLLM's speculative tokens).
    fn draft_shape_words(&self, num_steps: u32, eagle_topk: u32, num_draft_tokens: u32) -> String;

    /// The speculation it runs on `spec` when asked to speculate with no draft named: the
    /// checkpoint's MTP layers where it has them, the engine's recipe.
    fn default_speculation(&self, spec: &models::ModelSpec) -> SpeculativeOptions;

    /// The name of the speculation a plan runs (`algorithm` as the options hold it, SGLang's
    /// spelling, drafting by `method`), as this engine's users call it: SGLang's
    /// `--speculative-algorithm` value, vLLM's `--speculative-config` method.
    fn speculation_name(&self, algorithm: &str, method: crate::acceptance::DraftMethod) -> String;

    /// How a launch line names a separate EAGLE-3 draft (for a model with no MTP layers), in
    /// this engine's flags.
    fn separate_draft_words(&self) -> &'static str;

    /// Why a speculative layout of pipeline stages (`--pp-size`, `-pp` > 1) drafting by
    /// `method` is refused, in this engine's words with the public source: the engine runs none,
    /// or it runs one that shardwise does not price (the draft and its bookkeeping on the last
    /// stage).
    fn speculation_with_stages_refusal(&self, method: crate::acceptance::DraftMethod) -> String;

    /// The command that starts it serving `model_path` (`python -m sglang.launch_server
    /// --model-path MODEL`, `vllm serve MODEL`): the head of a `try:` line or a launch line.
    fn launch_command(&self, model_path: &str) -> String;

    /// Its own spelling of `knob`, from its flag table; `None` = it has no such flag (callers
    /// ask [`Engine::flag`], which then names the engine that has one).
    fn flag(&self, knob: Knob) -> Option<&'static str>;

    /// A TP × PP layout in the engine's own spelling (`--tp 4 --pp-size 2`, `-tp 4 -pp 2`).
    fn tp_pp_flags(&self, tp: u32, pp: u32) -> String;

    /// The flags that launch `layout` over `nnodes` nodes with its KV cache sharded over `dcp`
    /// ranks of the TP group (decode context parallelism; 1 = none), in the engine's own
    /// spelling; `None` for a layout the engine has no flags for.
    fn layout_flags(&self, layout: &Layout, dcp: u32, nnodes: u32) -> Option<String>;

    /// [`ServingEngine::layout_flags`], or a sentence saying the engine has none for `layout`.
    fn launch_flags(&self, layout: &Layout, dcp: u32, nnodes: u32) -> String {
        self.layout_flags(layout, dcp, nnodes).unwrap_or_else(|| {
            format!(
                "(no {} flags for {})",
                self.kind().name(),
                layout.short_name()
            )
        })
    }

    /// The words that run `n` replicas of a layout behind a load balancer: the engine's own flag
    /// where it has one (SGLang's `--dp-size n`), else how to start them.
    fn replicas_flag(&self, n: u32) -> String;

    /// Reads one word of a record's free-text flags (`--flag` or `KEY`, with the argument that
    /// follows or its `=value`; `text` is the whole text) into `knobs` if it is this engine's:
    /// its flag table's rows and its sources' own words ([`record`]). `true` when the key is
    /// this engine's, acted on or not (no other engine then reads it).
    fn read_record_word(
        &self,
        key: &str,
        arg: Option<&str>,
        text: &str,
        knobs: &mut LaunchKnobs,
    ) -> bool;

    /// Whether a record's `key` (`--flag` or `KEY`) stating `value` is a value this engine's
    /// launch takes, where the key is a row of its table ([`sglang::args::Spec::judge_stated`]):
    /// `None` where it is not, `Some(Err(why))` where its launch would refuse the value
    /// ([`record::unreadable_values`]).
    fn check_record_value(&self, _key: &str, _value: &str) -> Option<Result<(), String>> {
        None
    }

    /// Whether `name` is one of this engine's MoE runner backends (its flag table's choices;
    /// `auto` names none), so a record's words `cutlass MoE` can be read as the runner.
    fn is_moe_runner(&self, _name: &str) -> bool {
        false
    }

    /// The launch line a record's flag text names by a config's name (InferenceX's SGLang
    /// configs), and the assumption that says so; `None` = it names none of this engine's.
    fn named_launch(&self, _flags: &str) -> Option<(&'static str, String)> {
        None
    }

    /// The scheduler's read interval a named config sets by the run's concurrency (InferenceX's
    /// SGLang scripts pick `--scheduler-recv-interval` by `CONC`), and the assumption that says
    /// so; `None` = the config sets none, or names none of this engine's.
    fn named_recv_interval(&self, _flags: &str, _concurrency: u32) -> Option<(u32, String)> {
        None
    }

    /// What a record's build date `built` (year, month, day, from its engine words) changes in
    /// `knobs`: a default or a flag's effect that moved on a known day, with the assumption said;
    /// nothing by default.
    fn dated_knobs(
        &self,
        _knobs: &mut LaunchKnobs,
        _built: (u32, u32, u32),
        _assumptions: &mut Vec<String>,
    ) {
    }

    /// The draft configuration a speculative record of `model` under this engine is assumed to
    /// have run where its flags are silent (the engine's and the model card's common recipe),
    /// and the sentence that says so ([`draft::draft_config`]).
    fn assumed_draft(&self, model: &str) -> (SpeculativeOptions, &'static str);

    /// The tokens this engine verifies a step for a draft of `num_steps` drafts, `eagle_topk`
    /// branches and `num_draft_tokens` asked, with the sentence saying so where it runs another
    /// number than asked: the count as given unless the engine adjusts it (SGLang under topk 1).
    fn verified_draft_tokens(
        &self,
        _num_steps: u32,
        _eagle_topk: u32,
        num_draft_tokens: u32,
    ) -> (u32, Option<String>) {
        (num_draft_tokens, None)
    }

    /// Whether `text` is this engine's server log: it holds a message only this engine writes
    /// ([`Engine::of_log`] asks each engine).
    fn claims_log(&self, text: &str) -> bool;

    /// Reads this engine's server log into the neutral run values ([`log`]); never fails
    /// (lines it cannot read are counted by reason).
    fn read_log(&self, text: &str, source: &str) -> ServerLog;

    /// What a log of this engine without a usable step sample lacks, and the hint that says
    /// how to get one (the two halves of `sim::server_log::ServerLogError::NoSample`).
    fn log_without_samples(&self) -> (&'static str, &'static str);

    /// Why a run of a log this engine wrote has no layout (no launch arguments before its
    /// lines, or arguments it cannot read), for `validate --server-log`'s report.
    fn run_layout_unknown(&self, run: &ServerRun) -> &'static str;

    /// The parallel layout a logged run's launch arguments state; `None` without them.
    fn run_layout(&self, run: &ServerRun) -> Option<Layout>;

    /// The KV-cache dtype a logged run used, from its launch arguments or its own lines.
    fn run_kv_dtype(&self, run: &ServerRun) -> Option<KvDtype>;

    /// The model a logged run's launch arguments name.
    fn run_model(&self, run: &ServerRun) -> Option<String>;

    /// The launch a logged run's arguments state, read by this engine's one reader (SGLang's
    /// dump as `from_pairs` reads it, with the graph mode the decode lines show; vLLM's
    /// `non-default args` as the `vllm serve` line they stand for); `None` without them.
    fn logged_launch(&self, run: &ServerRun) -> Result<Option<Launch>, LaunchError>;

    /// The options a logged run ran with on `layout` of `machine`, and the notes on what its
    /// own lines say against its arguments; `base` is the command's options (SGLang's dump
    /// overrides them where it speaks). `Err` says why the run's arguments cannot be read.
    fn logged_options(
        &self,
        base: &ServerOptions,
        run: &ServerRun,
        layout: &Layout,
        machine: &Machine,
    ) -> Result<(ServerOptions, Vec<String>), String>;

    /// Whether each decode line of its log under pipeline stages is one micro-batch's (SGLang's
    /// `event_loop_pp` logs each micro-batch's batch), so consecutive lines show how the
    /// requests split over the micro-batches ([`crate::doctor::PpSplit`]); `false` where a line
    /// is the whole server's (vLLM's periodic stats line: every running request).
    fn decode_line_per_micro_batch(&self) -> bool;

    /// Its scheduler's policy for the serving replay ([`SchedulerPolicy`]); `mixed_chunk`:
    /// the options' `enable_mixed_chunk` (SGLang's `--enable-mixed-chunk`, set by vLLM's
    /// translation).
    fn scheduler(&self, mixed_chunk: bool) -> &'static dyn SchedulerPolicy;

    /// The change that puts an eager decode step of `bs` requests (a power of two) under CUDA
    /// graphs: graphs off altogether (`disable_cuda_graph`) or a batch above the largest captured.
    fn graph_flag(&self, disable_cuda_graph: bool, bs: u32) -> String;

    /// The flags that give a KV-bound server more cache, as `try:` lines: `fraction` is the
    /// memory share the plan used, `static_budget_gb` what it gave each GPU.
    fn kv_try_flags(
        &self,
        fraction: f64,
        static_budget_gb: f64,
        larger_dcp: Option<u32>,
    ) -> Vec<String>;

    /// The admission arithmetic behind a KV bound, as the tail of a finding: the pool of
    /// `pool_tokens` against requests at a `context_tokens` median context (`prompt_tokens` of
    /// it prompt, when logged), with `running` running and `queue` waiting; `None` when the
    /// clients did not ask for more than the pool admits.
    fn pool_admits(
        &self,
        pool_tokens: u64,
        context_tokens: f64,
        prompt_tokens: Option<f64>,
        running: u32,
        queue: u32,
    ) -> Option<String>;

    /// KV tokens one request of `input_tokens` in and `output_tokens` out takes from the pool
    /// when this engine's admission decides how many run at once.
    fn kv_tokens_per_request(&self, input_tokens: u32, output_tokens: u32) -> u64;

    /// The clause of `run`'s and `advise`'s KV-bound warning that says, in the engine's words,
    /// why about `admitted` of the clients' `concurrency` requests run at once, each counted as
    /// its prompt and `counted_output_tokens` ([`Self::kv_tokens_per_request`] less the prompt).
    fn kv_bound_clause(
        &self,
        input_tokens: u64,
        counted_output_tokens: u64,
        admitted: u64,
        concurrency: u32,
    ) -> String;

    /// The remedies that warning ends with, in the engine's flags ("a higher … give more");
    /// `larger_dcp`: the largest decode-context-parallel size above the launch's that the model
    /// and layout admit (an engine that shards the cache over DCP names it), `None` where none is.
    fn kv_bound_remedy(&self, larger_dcp: Option<u32>) -> String;
}

/// The server a scenario simulates: one engine's launch, typed by that engine's reader (what
/// it answers: [`launch`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Launch {
    /// SGLang's flags: a launch line's, the command line's and a measured run's, merged.
    Sglang(sglang::args::SglangArgs),
    /// A `vllm serve` line (the bare command when none was given).
    Vllm(vllm::args::VllmLine),
}

/// Why a launch cannot be read or resolved: its engine's reader says.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Sglang(#[from] sglang::args::SglangArgsError),
    #[error(transparent)]
    Vllm(#[from] vllm::args::VllmArgsError),
    /// Flags of one engine given for another's server.
    #[error("{0}")]
    Refused(String),
}

/// Whose custom all-reduce runs beside NCCL, each with its own size limits and rules for
/// switching off ([`crate::cost::comm`] prices both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllReduceRules {
    /// SGLang's: up to 8 MiB on NVLink or ≤ 2 PCIe GPUs, the PCIe one-shot kernel of the
    /// community builds beyond.
    Sglang,
    /// vLLM's (`custom_all_reduce.py`), with the community `VLLM_ENABLE_PCIE_ALLREDUCE` build
    /// ([`crate::cost::vllm_all_reduce`]).
    Vllm,
}

/// How an engine turns on the community builds' one-shot PCIe custom all-reduce (more than two
/// PCIe GPUs), in its own words, and the cutoff it runs with where the launch states none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcieOneshotSwitch {
    /// The environment assignment before the command (`VLLM_ENABLE_PCIE_ALLREDUCE=1`); empty
    /// where a flag does it.
    pub env: &'static str,
    /// The flag on the line (`--enable-pcie-oneshot-allreduce`); empty where the environment
    /// does it.
    pub flag: &'static str,
    /// The one-stage cutoff, bytes.
    pub max_bytes: u64,
}

impl PcieOneshotSwitch {
    /// The words that turn it on, as a user writes them.
    pub fn words(&self) -> &'static str {
        if self.flag.is_empty() {
            self.env
        } else {
            self.flag
        }
    }
}

/// vLLM's default largest CUDA-graph capture size (V1 `CompilationConfig`).
pub const VLLM_MAX_CAPTURE_SIZE: u32 = 512;
/// vLLM's default `--gpu-memory-utilization`.
pub const VLLM_GPU_MEMORY_UTILIZATION: f64 = 0.9;
/// The SGLang PCIe one-shot all-reduce's crossover below which it replaces NCCL, as its startup
/// benchmark picked it on RTX PRO 6000 boxes: 48 KB on 8 GPUs (across sockets), 120 KB on 4.
pub const SGLANG_PCIE_ONESHOT_8GPU_BYTES: u64 = 48 * 1024;
pub const SGLANG_PCIE_ONESHOT_4GPU_BYTES: u64 = 120 * 1024;

/// SGLang's automatic one-shot cutoff for a PCIe group of `tp` GPUs: 120 KiB up to 4, 48 KiB
/// above.
pub fn sglang_pcie_oneshot_bytes(tp: u32) -> u64 {
    if tp <= 4 {
        SGLANG_PCIE_ONESHOT_4GPU_BYTES
    } else {
        SGLANG_PCIE_ONESHOT_8GPU_BYTES
    }
}

/// A PCIe custom all-reduce a record's build enabled, and the engine whose knob it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PcieAllReduce {
    pub engine: Engine,
    /// Size cutoff the launch gave; `None` = the build's automatic choice.
    pub max_bytes: Option<u64>,
}

/// Launch settings of a measured run or a launch line, engine-neutral; `None` = not stated (the
/// engine's default). These are the knobs an engine's flags map to (KV page tokens, the token
/// and request budgets of a step, the CUDA-graph batch limit, the KV dtype and memory share, …):
/// an engine's new flag is a row in its own table and its mapping onto one of these (or onto the
/// [`ServerOptions`] its translation sets) in its own folder; a field is added here only for an
/// effect none of these expresses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchKnobs {
    pub kv_cache_dtype: Option<KvDtype>,
    /// SGLang's `--mem-fraction-static` or vLLM's `--gpu-memory-utilization`, and whose it is.
    pub memory_fraction: Option<(Engine, f64)>,
    /// `--context-length` / `--max-model-len`.
    pub context_length: Option<u32>,
    /// `--max-model-len auto` / `-1` ([`crate::options::ServerOptions::context_length_auto_fit`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context_length_auto_fit: bool,
    /// vLLM's `--kv-cache-memory-bytes` ([`crate::options::VllmMemory::kv_cache_memory_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_memory_bytes: Option<u64>,
    /// `--moe-runner-backend` as the source spells it (`b12x`, `flashinfer_trtllm`).
    pub moe_runner_backend: Option<String>,
    /// The all-to-all backend EP's tokens travel by, where it runs (vLLM's `--all2all-backend`
    /// other than its all-gather default, with DP ranks and EP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_a2a_backend: Option<String>,
    /// The b12x build the record's engine words name ([`crate::b12x_build::B12xBuild::of_text`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b12x_build: Option<crate::b12x_build::B12xBuild>,
    /// `B12X_MOE_FORCE_A16=1`: b12x runs its W4A16 MoE kernels, not its NVFP4 ones.
    #[serde(default)]
    pub b12x_moe_a16: bool,
    /// `B12X_W4A16_TC_DECODE=1`: b12x's W4A16 tensor-core decode kernel at decode sizes.
    #[serde(default)]
    pub b12x_w4a16_tc_decode: bool,
    /// The b12x W4A16 build the engine words name ([`crate::b12x_build::B12xA16Build::of_text`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b12x_a16_build: Option<crate::b12x_build::B12xA16Build>,
    /// Which b12x sparse-MLA kernel runs a speculative verify under `--attention-backend
    /// B12X_MLA_SPARSE` ([`crate::b12x_build::B12xMlaVerify`]); `None` = not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b12x_mla_verify: Option<crate::b12x_build::B12xMlaVerify>,
    /// The Triton fused MoE ran its engine's default config (a record's
    /// `engine.moe_kernel_config: "default"`; [`ServerOptions::moe_default_config`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub moe_default_config: bool,
    pub attention_backend: Option<String>,
    /// SGLang's `--nsa-prefill-backend` / `--nsa-decode-backend` ([`ServerOptions::nsa`]).
    #[serde(flatten)]
    pub nsa: crate::options::NsaBackends,
    /// What the record's build date says of SGLang's DSA defaults ([`ServerOptions::dsa_build`]).
    #[serde(default)]
    pub dsa_build: crate::options::DsaBuild,
    /// A Gated-DeltaNet state value's bytes as the launch sets them
    /// ([`ServerOptions::linear_state_dtype_bytes`]).
    #[serde(default)]
    pub linear_state_dtype_bytes: Option<u32>,
    /// Model-config fields overridden at load ([`ServerOptions::model_overrides`]).
    #[serde(default)]
    pub model_overrides: crate::options::ModelOverrides,
    /// BF16 linears quantized at load ([`ServerOptions::online_quant`]).
    #[serde(default)]
    pub online_quant: Option<crate::options::OnlineQuant>,
    /// Weights held in host memory ([`ServerOptions::weight_offload`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_offload: Option<crate::options::WeightOffload>,
    pub pcie_all_reduce: Option<PcieAllReduce>,
    /// The overlap scheduler stays on under speculative decoding (SGLang's
    /// `SGLANG_ENABLE_SPEC_V2`; [`ServerOptions::speculative_overlap`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub speculative_overlap: bool,
    /// The b12x vLLM fork's all-reduce fused with the residual add and RMSNorm after it, on its
    /// PCIe one-shot channel, for messages up to this many bytes
    /// ([`crate::engine::vllm::args::fused_add_rms_norm_max_bytes`]); `None` = not in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused_add_rms_norm_max_bytes: Option<u64>,
    /// Custom all-reduce off (`--disable-custom-all-reduce`, a cutoff of 0, "pure NCCL").
    pub disable_custom_all_reduce: bool,
    pub cuda_graph_max_bs: Option<u32>,
    pub disable_cuda_graph: bool,
    pub max_running_requests: Option<u32>,
    /// The record's flags are the whole launch (a literal `sglang.launch_server` / `vllm serve`
    /// command, or a benchmark config read by name, [`ServingEngine::named_launch`]), not a
    /// summary: a flag they leave out was left out, so the engine's defaults hold (SGLang's cap
    /// of 48 running requests under speculation among them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub launch_complete: bool,
    pub chunked_prefill_size: Option<u32>,
    pub max_prefill_tokens: Option<u32>,
    pub disable_radix_cache: bool,
    /// vLLM's `--enable-prefix-caching` (`Some(true)`) / `--no-enable-prefix-caching`
    /// (`Some(false)`); `None` = vLLM's default for the model ([`Engine::prefix_cache`]).
    #[serde(default)]
    pub prefix_caching: Option<bool>,
    /// vLLM's `--enable-chunked-prefill` (`Some(true)`) / `--no-enable-chunked-prefill`
    /// (`Some(false)`); `None` = chunked (V1's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunked_prefill: Option<bool>,
    /// `--stream-interval`.
    pub stream_interval: Option<u32>,
    /// SGLang's `--scheduler-recv-interval` ([`ServerOptions::scheduler_recv_interval`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_recv_interval: Option<u32>,
    /// vLLM's `--decode-context-parallel-size` (the records' `parallel.dcp`).
    #[serde(default)]
    pub decode_context_parallel: Option<u32>,
    /// Tokens a KV page holds, the unit the cache is allocated in (a request holds whole
    /// pages): vLLM's `--block-size`, SGLang's `--page-size`.
    #[serde(default, alias = "kv_block_tokens")]
    pub kv_page_tokens: Option<u32>,
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` as stated (`1`: vLLM's CUDA-graph estimate comes
    /// out of the KV budget); `None` where the launch leaves it unset, which vLLM's default decides
    /// ([`crate::engine::vllm::graph_estimate_note`]).
    #[serde(default)]
    pub estimate_cudagraph_memory: Option<bool>,
}

/// The engine's own cap under speculation where it would hold back `concurrency` open requests
/// of a launch that does not give the flag (`opts.max_running_requests` unset): the cap to lift
/// (`advise --question mtp`'s `try:` line and the report's speculation curve raise the flag to
/// the load); `None` where the flag is given, the engine sets no cap or the load is within it.
pub fn running_cap_to_lift(opts: &ServerOptions, concurrency: u32) -> Option<u32> {
    if opts.max_running_requests.is_some() {
        return None;
    }
    opts.engine
        .rules()
        .speculative_running_cap()
        .filter(|cap| concurrency > *cap)
}

/// Whether `note` is one of the engines' speculative-step caveats
/// ([`ServingEngine::spec_caveat`]): what public runs measured that the cost model does not price.
pub fn is_spec_caveat(note: &str) -> bool {
    Engine::ALL
        .iter()
        .any(|e| e.rules().spec_caveats().contains(&note))
}

/// Whether `note` is one of the engines' speculative-step caveats under decode context
/// parallelism ([`ServingEngine::dcp_spec_caveats`]).
pub fn is_dcp_spec_caveat(note: &str) -> bool {
    Engine::ALL
        .iter()
        .any(|e| e.rules().dcp_spec_caveats().contains(&note))
}

/// The running-request cap a server launched with `opts` starts with before its memory plan: the
/// flag as given, else its engine's own cap when it speculates (SGLang's 48,
/// [`ServingEngine::speculative_running_cap`]) unless the launch is a record's summary that cannot
/// say ([`ServerOptions::running_cap_unstated`]), else none.
pub fn running_cap_in_force(opts: &ServerOptions) -> Option<u32> {
    opts.max_running_requests.or_else(|| {
        opts.speculative
            .as_ref()
            .filter(|_| !opts.running_cap_unstated)
            .and_then(|_| opts.engine.rules().speculative_running_cap())
    })
}

impl Engine {
    /// The registry: the rules of this engine.
    pub fn rules(self) -> &'static dyn ServingEngine {
        match self {
            Engine::Sglang => &sglang::Sglang,
            Engine::Vllm => &vllm::Vllm,
        }
    }

    /// The engine whose launch command `text` holds (`vllm serve …`, vLLM's OpenAI server
    /// module), SGLang's otherwise: the registry's choice of launch-line reader.
    pub fn of_launch_line(text: &str) -> Engine {
        if vllm::args::is_vllm_line(text) {
            Engine::Vllm
        } else {
            Engine::Sglang
        }
    }

    /// The engine whose server wrote the log `text`: the first of the registry that claims it
    /// ([`ServingEngine::claims_log`]), SGLang's otherwise (its reader counts lines not in
    /// its format as foreign).
    pub fn of_log(text: &str) -> Engine {
        Engine::ALL
            .into_iter()
            .find(|e| e.rules().claims_log(text))
            .unwrap_or_default()
    }

    /// The log `text` (from `source`) read by the engine that wrote it ([`Engine::of_log`]).
    pub fn read_log(text: &str, source: &str) -> ServerLog {
        Engine::of_log(text).rules().read_log(text, source)
    }

    /// The launch settings of a record this engine ran, from its free-text flags and
    /// quantization words ([`record::launch_knobs`]: every engine's reader sees every word),
    /// with one line per assumption made.
    pub fn record_knobs(
        self,
        flags: &str,
        quant: &str,
        assumptions: &mut Vec<String>,
    ) -> LaunchKnobs {
        record::launch_knobs(self, flags, quant, assumptions)
    }

    /// Whether requests with the same prompt share its cached KV under this engine launched with
    /// `knobs` ([`ServingEngine::prefix_cache`]).
    pub fn prefix_cache(self, knobs: &LaunchKnobs, hybrid: bool) -> (bool, &'static str) {
        self.rules().prefix_cache(knobs, hybrid)
    }

    /// The server options this engine runs `knobs` with on a TP group of `tp` GPUs (NVLink or
    /// not) of `gpu_memory_bytes` each, and one note per knob translated, defaulted or dropped.
    pub fn server_options(
        self,
        knobs: &LaunchKnobs,
        tp: u32,
        nvlink: bool,
        gpu_memory_bytes: u64,
    ) -> (ServerOptions, Vec<String>) {
        let mut o = ServerOptions {
            engine: self,
            ..ServerOptions::default()
        };
        let mut notes = Vec::new();
        o.kv_cache_dtype = knobs.kv_cache_dtype;
        o.context_length = knobs.context_length;
        o.context_length_auto_fit = knobs.context_length_auto_fit;
        o.moe_runner_backend = knobs.moe_runner_backend.clone();
        o.b12x_build = knobs.b12x_build;
        o.b12x_moe_a16 = knobs.b12x_moe_a16;
        o.b12x_a16_build = knobs.b12x_a16_build;
        o.b12x_mla_verify = knobs.b12x_mla_verify;
        o.b12x_w4a16_tc_decode = knobs.b12x_w4a16_tc_decode;
        o.speculative_overlap = knobs.speculative_overlap;
        o.moe_default_config = knobs.moe_default_config;
        o.attention_backend = knobs.attention_backend.clone();
        o.nsa = knobs.nsa.clone();
        o.dsa_build = knobs.dsa_build;
        o.model_overrides = knobs.model_overrides.clone();
        o.online_quant = knobs.online_quant.clone();
        o.weight_offload = knobs.weight_offload.clone();
        o.linear_state_dtype_bytes = knobs.linear_state_dtype_bytes;
        o.disable_custom_all_reduce = knobs.disable_custom_all_reduce;
        o.disable_cuda_graph = knobs.disable_cuda_graph;
        o.max_running_requests = knobs.max_running_requests;
        o.disable_radix_cache = knobs.disable_radix_cache;
        if let Some(n) = knobs.chunked_prefill_size {
            o.chunked_prefill_size = n;
        }
        if let Some(n) = knobs.max_prefill_tokens {
            o.max_prefill_tokens = n;
        }
        if let Some(n) = knobs.scheduler_recv_interval.filter(|n| *n > 0) {
            o.scheduler_recv_interval = n;
        }
        if let Some(n) = knobs.stream_interval.filter(|n| *n > 0) {
            o.stream_interval = n;
        }
        if let Some(n) = knobs.kv_page_tokens.filter(|n| *n > 0) {
            o.page_size = n;
        }
        if let Some((owner, f)) = knobs.memory_fraction {
            o.mem_fraction_static = f;
            if owner != self {
                notes.push(format!(
                    "{}'s memory fraction {f} taken as {}'s",
                    owner.name(),
                    self.name()
                ));
            }
        }
        self.rules()
            .apply_knobs(knobs, tp, gpu_memory_bytes, &mut o, &mut notes);
        self.pcie_all_reduce(knobs, tp, nvlink, &mut o, &mut notes);
        (o, notes)
    }

    /// A PCIe custom all-reduce knob works only under its own engine, on > 2 PCIe GPUs.
    fn pcie_all_reduce(
        self,
        knobs: &LaunchKnobs,
        tp: u32,
        nvlink: bool,
        o: &mut ServerOptions,
        notes: &mut Vec<String>,
    ) {
        let pcie_group = !nvlink && tp > 2;
        match knobs.pcie_all_reduce {
            Some(p) if p.engine == self && !knobs.disable_custom_all_reduce => {
                let cutoff = p.max_bytes.unwrap_or(sglang_pcie_oneshot_bytes(tp));
                o.pcie_custom_all_reduce_max_bytes = Some(cutoff);
                o.fused_add_rms_norm_max_bytes = knobs.fused_add_rms_norm_max_bytes;
                if let (Some(fused), true) = (knobs.fused_add_rms_norm_max_bytes, pcie_group) {
                    notes.push(format!(
                        "{}: all-reduce, residual add and RMSNorm as one kernel on one-token steps (messages ≤ {} KiB)",
                        self.name(),
                        fused / 1024
                    ));
                }
                if pcie_group {
                    notes.push(format!(
                        "{}'s PCIe one-shot custom all-reduce for messages ≤ {} KiB",
                        self.name(),
                        cutoff / 1024
                    ));
                }
            }
            Some(p) if p.engine != self && pcie_group => notes.push(format!(
                "the record's PCIe custom all-reduce is a {} knob: {} runs NCCL all-reduce on > 2 PCIe GPUs",
                p.engine.name(),
                self.name()
            )),
            _ if pcie_group && !knobs.disable_custom_all_reduce => notes.push(format!(
                "{}: no custom all-reduce on > 2 PCIe GPUs (NCCL)",
                self.name()
            )),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn speculating(engine: Engine) -> ServerOptions {
        ServerOptions {
            engine,
            speculative: Some(draft::recipe_draft("EAGLE", None)),
            ..ServerOptions::default()
        }
    }

    /// SGLang's own cap of 48 under speculation holds only where the flag is not given and the
    /// launch is known not to give it; vLLM keeps its `--max-num-seqs`; no speculation, no cap.
    #[test]
    fn the_running_cap_in_force_is_the_flag_else_the_engines_under_speculation() {
        assert_eq!(running_cap_in_force(&speculating(Engine::Sglang)), Some(48));
        let given = ServerOptions {
            max_running_requests: Some(100),
            ..speculating(Engine::Sglang)
        };
        assert_eq!(running_cap_in_force(&given), Some(100));
        let summary = ServerOptions {
            running_cap_unstated: true,
            ..speculating(Engine::Sglang)
        };
        assert_eq!(running_cap_in_force(&summary), None);
        assert_eq!(running_cap_in_force(&speculating(Engine::Vllm)), None);
        assert_eq!(running_cap_in_force(&ServerOptions::default()), None);
    }

    /// SGLang runs speculative decoding without its overlap scheduler unless
    /// `SGLANG_ENABLE_SPEC_V2` keeps it on; vLLM's stays as its flags say; a record's words and
    /// a launch line read the switch alike.
    #[test]
    fn sglang_speculation_turns_the_overlap_scheduler_off_unless_spec_v2() {
        let rules = Engine::Sglang.rules();
        assert!(rules.overlap_scheduled(&ServerOptions::default()));
        assert!(!rules.overlap_scheduled(&speculating(Engine::Sglang)));
        let v2 = ServerOptions {
            speculative_overlap: true,
            ..speculating(Engine::Sglang)
        };
        assert!(rules.overlap_scheduled(&v2));
        assert!(
            Engine::Vllm
                .rules()
                .overlap_scheduled(&speculating(Engine::Vllm))
        );
        let serve =
            "python3 -m sglang.launch_server --model-path m --tp 8 --speculative-algorithm NEXTN";
        for (env, on) in [
            ("SGLANG_ENABLE_SPEC_V2=True", true),
            ("SGLANG_ENABLE_SPEC_V2=1", true),
            ("SGLANG_ENABLE_SPEC_V2=0", false),
            ("", false),
        ] {
            let text = format!("{env} {serve}");
            let k = record::launch_knobs(Engine::Sglang, &text, "", &mut Vec::new());
            assert_eq!(k.speculative_overlap, on, "{text}");
        }
    }

    /// The user's RTX PRO 6000: 97,887 MiB.
    const CARD: u64 = 97_887 << 20;

    fn vllm_pcie() -> LaunchKnobs {
        LaunchKnobs {
            pcie_all_reduce: Some(PcieAllReduce {
                engine: Engine::Vllm,
                max_bytes: Some(56 * 1024),
            }),
            memory_fraction: Some((Engine::Vllm, 0.94)),
            ..LaunchKnobs::default()
        }
    }

    #[test]
    fn a_pcie_all_reduce_knob_works_only_under_its_engine() {
        let (v, notes) = Engine::Vllm.server_options(&vllm_pcie(), 8, false, CARD);
        assert_eq!(v.pcie_custom_all_reduce_max_bytes, Some(56 * 1024));
        assert_eq!(v.cuda_graph_max_bs, VLLM_MAX_CAPTURE_SIZE);
        assert!(v.enable_mixed_chunk);
        assert_eq!(v.mem_fraction_static, 0.94);
        assert!(notes.iter().any(|n| n.contains("56 KiB")), "{notes:?}");
        let (s, notes) = Engine::Sglang.server_options(&vllm_pcie(), 8, false, CARD);
        assert_eq!(s.pcie_custom_all_reduce_max_bytes, None);
        assert!(!s.enable_mixed_chunk);
        assert!(notes.iter().any(|n| n.contains("vllm knob")), "{notes:?}");
        let oneshot = LaunchKnobs {
            pcie_all_reduce: Some(PcieAllReduce {
                engine: Engine::Sglang,
                max_bytes: None,
            }),
            ..LaunchKnobs::default()
        };
        let (s, _) = Engine::Sglang.server_options(&oneshot, 8, false, CARD);
        assert_eq!(s.pcie_custom_all_reduce_max_bytes, Some(48 * 1024));
        let (s, _) = Engine::Sglang.server_options(&oneshot, 4, false, CARD);
        assert_eq!(s.pcie_custom_all_reduce_max_bytes, Some(120 * 1024));
    }

    /// A vLLM launch that leaves `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` unset is priced as vLLM
    /// sized its cache before v0.21 and says so, with what v0.21's default (its CUDA-graph
    /// estimate out of the budget, #38284) leaves out; one that states it gets no such note and
    /// takes the estimate into the budget only when it is `1`; a record built before the change
    /// is read as its build's default.
    #[test]
    fn an_unset_graph_estimate_switch_is_said_with_what_v021_leaves_out() {
        let note = |k: &LaunchKnobs| {
            let (o, notes) = Engine::Vllm.server_options(k, 8, false, CARD);
            let said = notes
                .iter()
                .find(|n| n.contains("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS unset"))
                .cloned();
            (o.vllm_memory.map(|m| m.estimate_cudagraphs), said)
        };
        let (estimate, said) = note(&LaunchKnobs::default());
        assert_eq!(estimate, Some(false));
        let said = said.expect("the unset switch is said");
        assert!(
            said.contains("at --gpu-memory-utilization 0.9)") && said.contains("0.92"),
            "{said}"
        );
        // a stated share is the one priced: the note does not name the default
        let (_, said) = note(&vllm_pcie());
        assert!(said.is_some_and(|s| !s.contains("at --gpu-memory-utilization")));
        for (stated, priced) in [(Some(false), false), (Some(true), true)] {
            let k = LaunchKnobs {
                estimate_cudagraph_memory: stated,
                ..LaunchKnobs::default()
            };
            assert_eq!(note(&k), (Some(priced), None), "{stated:?}");
        }
        let eager = LaunchKnobs {
            disable_cuda_graph: true,
            ..LaunchKnobs::default()
        };
        assert_eq!(note(&eager).1, None, "no graph is captured");
        let mut march = LaunchKnobs::default();
        Engine::Vllm
            .rules()
            .dated_knobs(&mut march, (2026, 3, 20), &mut Vec::new());
        assert_eq!(march.estimate_cudagraph_memory, Some(false));
        let mut may = LaunchKnobs::default();
        Engine::Vllm
            .rules()
            .dated_knobs(&mut may, (2026, 5, 14), &mut Vec::new());
        assert_eq!(may.estimate_cudagraph_memory, None);
    }

    /// A record's SGLang flags get SGLang's GPU-memory-band defaults where they leave the chunk
    /// and the graph batch out, as a launch line does (`ServerArgs._handle_gpu_memory_settings`):
    /// a B200 (183,359 MiB, above 160 GiB) chunks by 16384 and captures up to 512; the RTX PRO
    /// 6000 at TP8 by 8192 and 512; a stated value is kept.
    #[test]
    fn a_records_sglang_flags_get_sglangs_memory_band_defaults() {
        const B200: u64 = 183_359 << 20;
        let (s, notes) = Engine::Sglang.server_options(&LaunchKnobs::default(), 8, true, B200);
        assert_eq!((s.chunked_prefill_size, s.cuda_graph_max_bs), (16384, 512));
        assert!(
            notes
                .iter()
                .any(|n| n.contains("--chunked-prefill-size 16384")
                    && n.contains("--cuda-graph-max-bs 512")),
            "{notes:?}"
        );
        let (s, _) = Engine::Sglang.server_options(&LaunchKnobs::default(), 8, false, CARD);
        assert_eq!((s.chunked_prefill_size, s.cuda_graph_max_bs), (8192, 512));
        let (s, _) = Engine::Sglang.server_options(&LaunchKnobs::default(), 2, false, CARD);
        assert_eq!(s.cuda_graph_max_bs, 256, "TP < 4 captures fewer");
        let stated = LaunchKnobs {
            chunked_prefill_size: Some(4096),
            cuda_graph_max_bs: Some(64),
            ..LaunchKnobs::default()
        };
        let (s, notes) = Engine::Sglang.server_options(&stated, 8, true, B200);
        assert_eq!((s.chunked_prefill_size, s.cuda_graph_max_bs), (4096, 64));
        assert!(
            !notes.iter().any(|n| n.contains("SGLang's defaults")),
            "{notes:?}"
        );
    }

    #[test]
    fn the_registry_finds_each_engine_and_its_options_carry_its_tag() {
        for e in Engine::ALL {
            assert_eq!(e.rules().kind(), e);
            let (o, _) = e.server_options(&LaunchKnobs::default(), 8, false, CARD);
            assert_eq!(o.engine, e);
            // vLLM's memory plan goes with vLLM's tag and no other
            assert_eq!(o.vllm_memory.is_some(), e == Engine::Vllm);
        }
        let json = serde_json::to_string(&ServerOptions::default()).unwrap();
        assert!(
            !json.contains("\"engine\""),
            "SGLang's options keep their JSON: {json}"
        );
        let (v, _) = Engine::Vllm.server_options(&LaunchKnobs::default(), 8, false, CARD);
        let back: ServerOptions =
            serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn names_read_back() {
        for e in [Engine::Sglang, Engine::Vllm] {
            assert_eq!(Engine::from_name(e.name()), Some(e));
        }
        assert_eq!(Engine::from_name(" vLLM "), Some(Engine::Vllm));
        assert_eq!(Engine::from_name("trtllm"), None);
    }
}
