//! vLLM's (V1) rules: its memory sizing and batch defaults on the neutral options, DCP, CUDA
//! graphs captured by tokens, prefix caching by version and model, its decode-attention kernels
//! on SM120, its custom all-reduce, its flags' spellings and its admission rule (blocks
//! allocated as requests grow, the newest preempted when none is free).

use super::{
    AllReduceRules, Engine, Knob, LaunchKnobs, ServingEngine, VLLM_GPU_MEMORY_UTILIZATION,
    VLLM_MAX_CAPTURE_SIZE,
};
pub mod args;
pub mod log;
pub mod record;
pub mod scheduler;
pub mod virtual_tp;

use crate::options::{ServerOptions, SpeculativeOptions, VllmMemory};
use models::Layout;

/// The vLLM engine.
pub struct Vllm;

/// vLLM's `--block-size` default on CUDA (`CacheConfig.block_size`, set by the CUDA platform:
/// 16 for the FlashAttention, FlashInfer and TRITON_MLA backends it runs on SM120). The
/// sparse-MLA (DSA) models' indexer forces 64 whatever is asked
/// ([`VLLM_SPARSE_MLA_BLOCK_SIZE`]).
pub const VLLM_BLOCK_SIZE: u32 = 16;

/// The block size vLLM sets for the sparse-MLA (DSA indexer) models: their indexer backend
/// pages 64 tokens ("Setting kv cache block size to 64 for DEEPSEEK_V32_INDEXER backend",
/// `platforms/interface.py`, in the GLM-5.1 start-up log the KV-line test cites).
pub const VLLM_SPARSE_MLA_BLOCK_SIZE: u32 = 64;

/// What public runs say of vLLM's speculative decoding on Gated DeltaNet hybrids, which the cost
/// model does not price: their per-step state bookkeeping (`mamba_postprocess`, a copy of
/// `num_accepted_tokens` to the host in the versions vllm-project/vllm #35387 names) and CUDA
/// graph coverage changed from version to version, and the reports disagree in sign: MTP 2 on
/// Qwen3-Next-80B-FP8 TP4 +76.5% latency (#35387, main of February 2026, H100); MTP on
/// Qwen3.8-Flash-Next FP8 TP4 −32% throughput at 64 streams, −8% at 8 (vllm-project/recipes #923,
/// H100, acceptance 36.5%); MTP 1–3 on Qwen3.8-27B, one GA100, a 17.5 ms step becoming 46 ms
/// (#35387, vLLM 0.27.1); MTP 2 / 4 on Qwen3.8-27B NVFP4, one RTX PRO 6000 Max-Q, +52% / +84% at
/// one stream (sudoingX/qwen38-mtp #11, vLLM 0.27.1).
/// vLLM's MTP on a DSA checkpoint (GLM-5.x) under decode context parallelism, as the
/// rtx6kpro community builds measured it on 8× RTX PRO 6000 and shardwise does not price it.
/// The May 2026 builds, whose B12X sparse MLA verifies on its decode kernel: the GLM-5.1 DCP
/// page's MTP 3 runs at 32 streams kept 245–357 tok/s at DCP 8 against 677–683 at DCP 1
/// (predicted 552 against 800), and the GLM-5.1 v5 page's one-stream MTP 3 runs are 10–13%
/// slower than priced at DCP 2 and 4 where DCP 1 is within 1%. The June build's DCP 2–8 runs of
/// the GLM-5.2 v13 page (1.6–2.6× a plain step per speculative step where 1.4–1.6× is priced)
/// verified on b12x's extend kernel ([`VLLM_B12X_EXTEND_VERIFY_CAVEAT`], said for them instead).
/// The draft passes under DCP (their attention collectives outside full CUDA graphs) are the
/// likely cost; their code is not all public, so it is a caveat, not a price (docs/validation.md,
/// twelfth, thirteenth and twenty-fifth sessions).
pub const VLLM_DSA_DCP_SPEC_CAVEAT: &str = "vLLM's MTP on a DSA model (GLM-5.x) with decode context parallelism: the community builds of May 2026 on 8× RTX PRO 6000 ran MTP 3 at 32 streams at 245–357 tok/s under DCP 8 against 677–683 at DCP 1 (rtx6kpro models/glm5.1/glm51-vllm-dcp-nccl2127-noxml-2026-05-04.md; shardwise 552 against 800), and one stream 10–13% slower than priced at DCP 2 and 4 where DCP 1 is within 1% (models/glm5.1_v5.md): expect MTP's gain under DCP to fall short of this prediction; measure DCP 1 with MTP against your DCP before trusting it";
/// vLLM's MTP verify under `--attention-backend B12X_MLA_SPARSE` on b12x's single-pass extend
/// kernel ([`crate::b12x_build::B12xMlaVerify::Extend`]: the community fork's builds from 29 May
/// to 21 July 2026 unless `VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=1`), which does not split a row's
/// selected keys over CTAs: the fork's PR #164 names it the cause of the B12X-versus-FlashInfer
/// MTP gap. Its time per 64-key tile has no public measurement, so it is a caveat, not a price;
/// the GLM-5.2 v13 page's TP6 DCP 1 runs (MTP 3, acceptance measured; June 2026 build) took 27.8
/// and 38.0 ms a speculative step at short and 30k cached tokens where shardwise prices 23.1 and
/// 24.0, while the same page's TP8 DCP 1 runs on FlashInfer's SM120 sparse MLA are priced within
/// 5%.
pub const VLLM_B12X_EXTEND_VERIFY_CAVEAT: &str = "vLLM's MTP verify on b12x's sparse-MLA extend kernel (--attention-backend B12X_MLA_SPARSE in the community fork's builds of 29 May–21 July 2026, before local-inference-lab/vllm PR #164, unless VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=1): one CTA walks each query row's selected keys with no split, which the fork's maintainers found substantially slower than the decode kernel; not priced (GLM-5.2 TP6 DCP 1, MTP 3: 27.8 / 38.0 ms a step measured at short / 30k context against 23.1 / 24.0 priced, rtx6kpro models/glm5.2_v13.md): set VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=1 or run a build with PR #164, and measure";
/// The same route where the launch names no build (a launch line: its date is not known) and no
/// `VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE`: said with the MTP answer, not flagged on predictions.
pub const VLLM_B12X_VERIFY_BUILD_CAVEAT: &str = "the community vLLM fork's builds of 29 May–21 July 2026 (before local-inference-lab/vllm PR #164) verify MTP under --attention-backend B12X_MLA_SPARSE on b12x's sparse-MLA extend kernel, which its maintainers found substantially slower than the decode kernel priced here, unless VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE=1; the launch names no build: on such a build, set that switch or measure";
pub const VLLM_HYBRID_SPEC_CAVEAT: &str = "vLLM's speculative decoding on a Gated DeltaNet hybrid: public runs disagree from version to version (+76% latency with MTP 2 on Qwen3-Next TP4, vllm #35387; −8…−32% throughput on H100, recipes #923; +52…+84% at one stream on an RTX PRO 6000, vLLM 0.27.1): the per-step state bookkeeping and CUDA-graph coverage behind it are not priced; measure MTP on and off on your version before trusting this gain";

/// Host time of one vLLM V1 decode step outside the model's forward passes: input preparation
/// (2.6 ms, the lower end of 2.6–2.7) and output postprocessing (0.1 ms), as an nsys profile
/// with NVTX phase scopes measured it per decode step (local-inference-lab/vllm issue #440, its
/// table of `gpu_model_runner` phases: `preprocess` 2.6–2.7 ms, `postprocess` 0.1 ms; Qwen3.8-27B,
/// MTP 6, one RTX 5090). Public, not fitted: it is the host work a speculative step under DCP
/// serializes with its GPU work ([`ServingEngine::spec_dcp_host_after_sync_s`]); the draft's own
/// metadata builds come on top and are left out, so this is a lower bound.
pub const VLLM_SPEC_STEP_HOST_S: f64 = 2.7e-3;

/// The route of a speculative verify on b12x's sparse MLA for a DSA checkpoint (`Some(None)`:
/// the launch does not say it); `None` where no such verify runs (another model or attention
/// backend). DCP does not change the route: the fork's backend picks the decode kernel from the
/// query length and its switch alone (`use_decode_kernel`, `b12x_mla_sparse.py` @28be48fa
/// l. 1751–1756), a DCP rank's query heads gathered before it.
fn b12x_verify_route(
    model: &models::ModelSpec,
    opts: &ServerOptions,
) -> Option<Option<crate::b12x_build::B12xMlaVerify>> {
    let b12x = model.attention.indexer().is_some()
        && crate::b12x_build::is_b12x_sparse_mla(opts.attention_backend.as_deref());
    b12x.then_some(opts.b12x_mla_verify)
}

/// The largest-memory tier of vLLM's batch defaults: GPUs of at least 70 GiB that are no A100
/// (`engine/arg_utils.py`, `EngineArgs.get_batch_defaults`, the OpenAI server's column).
const LARGE_GPU_BYTES: u64 = 70 << 30;

/// `--max-num-batched-tokens` and `--max-num-seqs` defaults of `vllm serve` on a GPU of
/// `memory_bytes`: 8192 / 1024 from 70 GiB up, else 2048 / 256.
pub fn batch_defaults(memory_bytes: u64) -> (u32, u32) {
    if memory_bytes >= LARGE_GPU_BYTES {
        (8192, 1024)
    } else {
        (2048, 256)
    }
}

/// vLLM's memory sizing and batch limits for `knobs` on GPUs of `gpu_memory_bytes`
/// ([`crate::cost::memory::vllm`]): `--gpu-memory-utilization` of the card, the profiling run at
/// `--max-num-batched-tokens` (also the scheduler's token budget) and `--max-num-seqs`.
fn memory(knobs: &LaunchKnobs, gpu_memory_bytes: u64, o: &mut ServerOptions) {
    let (tokens, seqs) = batch_defaults(gpu_memory_bytes);
    let utilization = match knobs.memory_fraction {
        Some((Engine::Vllm, f)) => f,
        _ => VLLM_GPU_MEMORY_UTILIZATION,
    };
    o.mem_fraction_static = utilization;
    o.chunked_prefill_size = knobs.chunked_prefill_size.unwrap_or(tokens);
    o.max_prefill_tokens = o.chunked_prefill_size;
    o.max_running_requests = Some(knobs.max_running_requests.unwrap_or(seqs));
    o.prefill_chunking = knobs.chunked_prefill != Some(false);
    o.vllm_memory = Some(VllmMemory {
        gpu_memory_utilization: utilization,
        max_num_batched_tokens: Some(o.chunked_prefill_size),
        max_num_seqs: o.max_running_requests,
        estimate_cudagraphs: knobs.estimate_cudagraph_memory == Some(true),
        unchunked_default_budget: !o.prefill_chunking && knobs.chunked_prefill_size.is_none(),
        kv_cache_memory_bytes: knobs.kv_cache_memory_bytes,
    });
}

/// What a launch that leaves `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` unset is priced with, and
/// what that leaves out; `None` where it is stated or no graph is captured.
///
/// The pool is sized as vLLM did before v0.21: CUDA graphs captured after the cache, outside the
/// budget, and `--gpu-memory-utilization` 0.9 where not given. From v0.21 vLLM profiles the
/// graphs first and takes its estimate out of the KV budget, with the default share raised to
/// 0.92 to make up for it (vllm-project/vllm #38284, "Enable CUDAGraph memory profiling by
/// default"; its log says "CUDA graph memory profiling is enabled (default since v0.21.0)").
/// The estimate is not priced: vLLM extrapolates the second captured graph's pool growth to
/// every graph (`gpu_model_runner.py` `profile_cudagraph_memory`: first capture + (n − 1) ×
/// second), which depends on the model's compiled graphs, not on figures shardwise has. Logged
/// sizes: 4.77 GiB per GPU for GLM-5.1 NVFP4 at TP8 (35 piecewise + 11 full graphs), 5.10 at
/// DCP 8 and 6.04 with MTP 3 (the three rtx6kpro startup logs in `sim/tests/fixtures`, where the
/// image turned it off and the graphs then took 1.21–2.39 GiB), 0.36 GiB for a small model at 16
/// graphs (gpustack/runner #251, vLLM 0.27.1); vllm-project/vllm #45178 reports it cutting a
/// MiniMax-M2.5 pool 3.1×.
pub fn graph_estimate_note(knobs: &LaunchKnobs) -> Option<String> {
    if knobs.estimate_cudagraph_memory.is_some() || knobs.disable_cuda_graph {
        return None;
    }
    let share = match knobs.memory_fraction {
        Some((Engine::Vllm, _)) => String::new(),
        _ => format!(" at --gpu-memory-utilization {VLLM_GPU_MEMORY_UTILIZATION}"),
    };
    Some(format!(
        "vLLM: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS unset, so the KV cache is sized as before v0.21 (CUDA graphs outside the budget{share}); from v0.21 vLLM takes its own CUDA-graph estimate out of the budget (default --gpu-memory-utilization 0.92), which is not priced here (logged 4.8–6.0 GiB per GPU for GLM-5.1 TP8, 0.4 GiB for a small model): expect a cache smaller by that much, or set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 to run as priced"
    ))
}

impl ServingEngine for Vllm {
    fn claims_log(&self, text: &str) -> bool {
        log::claims(text)
    }

    fn read_log(&self, text: &str, source: &str) -> crate::engine::log::ServerLog {
        log::parse(text, source)
    }

    fn log_without_samples(&self) -> (&'static str, &'static str) {
        (
            "vLLM's, with no usable `Avg generation throughput` stats line",
            "pass the log of a vLLM server that served requests (stats are logged unless --disable-log-stats)",
        )
    }

    fn run_layout_unknown(&self, run: &crate::engine::log::ServerRun) -> &'static str {
        if run.vllm_args.is_some() {
            "its non-default args cannot be read as a vLLM launch: layout unknown"
        } else {
            "no `non-default args` line before these lines: layout unknown (pass the log from the vLLM server's start)"
        }
    }

    fn run_layout(&self, run: &crate::engine::log::ServerRun) -> Option<Layout> {
        log::run_layout(run)
    }

    fn run_kv_dtype(&self, run: &crate::engine::log::ServerRun) -> Option<models::KvDtype> {
        log::run_kv_dtype(run)
    }

    fn logged_launch(
        &self,
        run: &crate::engine::log::ServerRun,
    ) -> Result<Option<crate::engine::Launch>, crate::engine::LaunchError> {
        Ok(run.vllm_line().map(crate::engine::Launch::Vllm))
    }

    /// `LoggingStatLogger` (`v1/metrics/loggers.py`) logs the engine's totals every few seconds
    /// ("Running: N reqs, Waiting: M reqs"), whatever the pipeline stages.
    fn decode_line_per_micro_batch(&self) -> bool {
        false
    }

    /// vLLM V1's own ([`scheduler::DecodeFirst`]): decodes first out of one token budget,
    /// then chunked prefills; no output reserved at admission, preemption of the latest
    /// admitted. `enable_mixed_chunk` is SGLang's flag: V1 always mixes.
    fn scheduler(&self, _mixed_chunk: bool) -> &'static dyn crate::engine::SchedulerPolicy {
        &scheduler::DECODE_FIRST
    }

    fn run_model(&self, run: &crate::engine::log::ServerRun) -> Option<String> {
        run.vllm_line()?.model
    }

    fn logged_options(
        &self,
        _base: &ServerOptions,
        run: &crate::engine::log::ServerRun,
        layout: &Layout,
        machine: &crate::machine::Machine,
    ) -> Result<(ServerOptions, Vec<String>), String> {
        log::logged_options(run, layout, machine)
    }

    fn display_name(&self) -> &'static str {
        "vLLM"
    }

    fn kind(&self) -> Engine {
        Engine::Vllm
    }

    fn apply_knobs(
        &self,
        knobs: &LaunchKnobs,
        _tp: u32,
        gpu_memory_bytes: u64,
        o: &mut ServerOptions,
        notes: &mut Vec<String>,
    ) {
        memory(knobs, gpu_memory_bytes, o);
        notes.extend(graph_estimate_note(knobs));
        // the neutral "no prefix reuse" where the launch says so; the default (on, off for a
        // hybrid model) needs the model and is decided by `prefix_cache` where prompts are shared
        if knobs.prefix_caching == Some(false) {
            o.disable_radix_cache = true;
        }
        if let Some(d) = knobs.decode_context_parallel.filter(|d| *d > 1) {
            o.decode_context_parallel = d;
            notes.push(format!(
                "vLLM: KV cache sharded over {d} ranks of the TP group (DCP {d})"
            ));
        }
        // the cache is allocated in blocks: a request holds whole ones (the neutral page, set
        // from the knob before; vLLM's default here)
        if knobs.kv_page_tokens.is_none() {
            o.page_size = VLLM_BLOCK_SIZE;
        }
        if let Some(b) = knobs.kv_page_tokens {
            notes.push(format!(
                "vLLM: KV blocks of {b} tokens (--block-size; a request holds whole blocks)"
            ));
        }
        o.cuda_graph_max_bs = knobs.cuda_graph_max_bs.unwrap_or(VLLM_MAX_CAPTURE_SIZE);
        o.verify_rows_per_draft_token = true;
        // its all-to-all kernels run with DP ranks only (`use_all2all_kernels`)
        o.moe_a2a_backend = knobs.moe_a2a_backend.clone();
        o.a2a_needs_dp_attention = true;
        o.enable_mixed_chunk = true;
        notes.push(format!(
            "vLLM: CUDA graphs up to batch {}, one --max-num-batched-tokens budget a step, the running decodes first and prefill chunks in the rest of the same batch (V1)",
            o.cuda_graph_max_bs
        ));
    }

    /// `--enable-prefix-caching` / `--no-enable-prefix-caching` when given; else
    /// `EngineArgs._set_default_chunked_prefill_and_prefix_caching_args` (`engine/
    /// arg_utils.py`): on where the model supports it, but off for hybrid models ("keep it
    /// opt-in for now", PR #29393 made the default apply) until PR #50991 (v0.28.0) turned it
    /// on for them too; the records' vLLM builds are older. With it on, a hybrid model runs
    /// `mamba_cache_mode` `align` (`MambaModelConfig.verify_and_update_config`,
    /// `model_executor/models/config.py`), caching the state at block boundaries.
    fn prefix_cache(&self, knobs: &LaunchKnobs, hybrid: bool) -> (bool, &'static str) {
        match knobs.prefix_caching {
            Some(true) => (true, "vLLM --enable-prefix-caching"),
            Some(false) => (false, "vLLM --no-enable-prefix-caching"),
            None if hybrid => (
                false,
                "vLLM's default for a hybrid model before v0.28: prefix caching off",
            ),
            None => (true, "vLLM's prefix caching (on by default in V1)"),
        }
    }

    /// `--no-enable-chunked-prefill` took effect with vllm-project/vllm #28665 (511a6b611,
    /// 2025-11-14, first in v0.11.1): before it `_set_default_args_v1` turned chunked prefill
    /// on for every generative model whatever the flag said.
    fn dated_knobs(
        &self,
        knobs: &mut LaunchKnobs,
        built: (u32, u32, u32),
        assumptions: &mut Vec<String>,
    ) {
        // a build from before vllm-project/vllm #38284 (open 2026-03-26, still in review on
        // 2026-04-07) kept CUDA graphs out of the KV budget by default: its pool is as priced
        if knobs.estimate_cudagraph_memory.is_none() && built < (2026, 4, 7) {
            knobs.estimate_cudagraph_memory = Some(false);
        }
        if knobs.chunked_prefill == Some(false) && built < (2025, 11, 14) {
            knobs.chunked_prefill = None;
            assumptions.push(format!(
                "{} had no effect on this build: vLLM forced chunked prefill on every generative model until #28665 (2025-11-14, v0.11.1)",
                args::table::NO_ENABLE_CHUNKED_PREFILL.flags[0]
            ));
        }
    }

    /// vLLM captures by tokens (`max_cudagraph_capture_size`, 512 by default,
    /// `CompilationConfig`): a verify pass is `B × (k + 1)` tokens.
    fn verify_graphs_by_tokens(&self) -> bool {
        true
    }

    /// FlashAttention-2 for a bf16 cache, FlashInfer for fp8 (FA2 reads no fp8 cache), and
    /// TRITON_MLA for MLA (the MLA kernel built for SM120).
    fn decode_table_backend(
        &self,
        kind: &str,
        kv_dtype: &str,
        _attention_backend: Option<&str>,
    ) -> Option<&'static str> {
        Some(match (kind, kv_dtype) {
            ("mla", _) => "triton_mla_ctx",
            (_, "fp8") => "flashinfer",
            _ => "flash_attn",
        })
    }

    /// Marlin for compressed-tensors INT4 (W4A16) experts: vLLM's
    /// `CompressedTensorsWNA16MarlinMoEMethod` (`fused_marlin_moe`) unless `--moe-backend` names
    /// another kernel.
    fn moe_table_backend(&self, format: &str, moe_backend: Option<&str>) -> Option<&'static str> {
        let int4 = crate::efficiency::normalize_dtype(format) == Some("int4");
        (int4 && matches!(moe_backend, None | Some("marlin"))).then_some("marlin")
    }

    fn eager_extend_runs_whole_chain(&self) -> bool {
        true
    }

    /// vLLM's proposer under DCP refreshes each rank's local sequence lengths from the GPU's
    /// after rejection and, for the draft's first pass (`max_query_len > 1`: the pass over the
    /// verified tokens), copies them to the host with a blocking `.cpu()`
    /// (`LLMBaseProposer._refresh_dcp_local_seq_lens`, `v1/spec_decode/llm_base_proposer.py`,
    /// local-inference-lab/vllm @9230570c8, 2026-05-14, the branch the rtx6kpro Kimi-K2.6 and
    /// GLM-5.x DCP runs were built from; it returns at once without DCP). So the host waits for
    /// the verify pass every step, and async scheduling no longer hides the host's share of the
    /// step: the draft's metadata and launches, then the next step's input preparation, with
    /// only the draft's passes on the GPU. Host time
    /// [`VLLM_SPEC_STEP_HOST_S`].
    fn spec_dcp_host_after_sync_s(&self) -> Option<f64> {
        Some(VLLM_SPEC_STEP_HOST_S)
    }

    /// vLLM keeps `--max-num-seqs` (its default or the user's) with speculation on: no cap of
    /// its own.
    fn speculative_running_cap(&self) -> Option<u32> {
        None
    }

    /// `"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 3.24` in the
    /// `--speculative-config` the text quotes; the per-position `synthetic_acceptance_rates` is
    /// not read (refused with what to give instead).
    fn forced_accept_length(&self, text: &str, drafts: u32) -> Option<Result<f64, String>> {
        use crate::engine::forced_acceptance as f;
        if f::json_string(text, f::VLLM_REJECTION_SAMPLE_METHOD) != Some(f::VLLM_SYNTHETIC) {
            return None;
        }
        let spelled = format!(
            "\"{}\": \"{}\"",
            f::VLLM_REJECTION_SAMPLE_METHOD,
            f::VLLM_SYNTHETIC
        );
        Some(
            match f::json_number(text, f::VLLM_SYNTHETIC_ACCEPTANCE_LENGTH) {
                Some(Ok(l)) => f::checked(
                    l,
                    drafts,
                    &format!("\"{}\": {l}", f::VLLM_SYNTHETIC_ACCEPTANCE_LENGTH),
                ),
                Some(Err(e)) => Err(e),
                None if text.contains(f::VLLM_SYNTHETIC_ACCEPTANCE_RATES) => Err(format!(
                    "{spelled} with \"{}\": per-position rates are not read; give \"{}\" (the mean accepted length, the bonus token counted)",
                    f::VLLM_SYNTHETIC_ACCEPTANCE_RATES,
                    f::VLLM_SYNTHETIC_ACCEPTANCE_LENGTH
                )),
                None => Err(format!(
                    "{spelled} without \"{}\"",
                    f::VLLM_SYNTHETIC_ACCEPTANCE_LENGTH
                )),
            },
        )
    }

    /// vLLM's MTP on Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5 and later): public runs from
    /// one vLLM version to the next disagree in sign ([`VLLM_HYBRID_SPEC_CAVEAT`]). On a DSA
    /// checkpoint, a verify on b12x's extend kernel is not priced
    /// ([`VLLM_B12X_EXTEND_VERIFY_CAVEAT`]), with or without DCP: said first, because it names
    /// the switch that avoids it (the June build's DCP 2–8 launches of rtx6kpro
    /// `models/glm5.2_v13.md`, whose steps are dearest, name `B12X_MLA_SPARSE` where its DCP 1
    /// launch names FlashInfer's sparse MLA); otherwise, under DCP the community builds' public
    /// runs measured the speculative step dearer than priced ([`VLLM_DSA_DCP_SPEC_CAVEAT`]).
    fn spec_caveat(&self, model: &models::ModelSpec, opts: &ServerOptions) -> Option<&'static str> {
        if model
            .layer_attention
            .contains(&models::spec::LayerAttention::Linear)
        {
            return Some(VLLM_HYBRID_SPEC_CAVEAT);
        }
        // the rest are DSA checkpoints' (GLM-5.x)
        model.attention.indexer()?;
        let extend =
            b12x_verify_route(model, opts) == Some(Some(crate::b12x_build::B12xMlaVerify::Extend));
        if extend {
            Some(VLLM_B12X_EXTEND_VERIFY_CAVEAT)
        } else {
            (opts.decode_context_parallel > 1).then_some(VLLM_DSA_DCP_SPEC_CAVEAT)
        }
    }

    /// A DSA checkpoint on B12X's sparse MLA, with or without DCP, whose build (so its verify
    /// route) the launch does not say ([`VLLM_B12X_VERIFY_BUILD_CAVEAT`]).
    fn spec_build_caveat(
        &self,
        model: &models::ModelSpec,
        opts: &ServerOptions,
    ) -> Option<&'static str> {
        (b12x_verify_route(model, opts) == Some(None)).then_some(VLLM_B12X_VERIFY_BUILD_CAVEAT)
    }

    /// The three caveats [`Self::spec_caveat`] says.
    fn spec_caveats(&self) -> &'static [&'static str] {
        &[
            VLLM_HYBRID_SPEC_CAVEAT,
            VLLM_DSA_DCP_SPEC_CAVEAT,
            VLLM_B12X_EXTEND_VERIFY_CAVEAT,
        ]
    }

    fn dcp_spec_caveats(&self) -> &'static [&'static str] {
        &[VLLM_DSA_DCP_SPEC_CAVEAT]
    }

    /// vLLM's attention selector admits only sparse backends for a DSA checkpoint
    /// (`AttentionBackend.validate_configuration`: `use_sparse != cls.is_sparse()` → "sparse not
    /// supported" / "non-sparse not supported"), so GLM-5.x runs sparse MLA on SM120 too
    /// (`B12X_MLA_SPARSE`, `FLASHINFER_MLA_SPARSE_SM120` in the rtx6kpro recipes). There its
    /// indexer is B12X's sparse indexer (`model_executor/layers/sparse_attn_indexer.py`,
    /// `_use_b12x_sparse_indexer`, local-inference-lab/vllm @28be48fa9; the GLM-5.2 v13 page's
    /// "B12X sparse indexer"): paged logits and top-k kernels over the fp8 index keys, priced as
    /// DeepGEMM's fused path (no bf16 dequantization, one fp32 logit a pair).
    fn dsa_always_sparse(&self) -> bool {
        true
    }

    /// vLLM's temporal state dtype is `--mamba-ssm-cache-dtype`, `auto` = the conv state's, the
    /// model's dtype (bf16) (`MambaStateDtypeCalculator._mamba_state_dtype`,
    /// `layers/mamba/mamba_utils.py`); Qwen3.5's config sets it from its `mamba_ssm_dtype`
    /// (float32, `models/config.py` `Qwen3_5ForConditionalGenerationConfig`), Qwen3-Next's names
    /// none, so vLLM holds Qwen3-Next's state in bf16 where SGLang holds float32.
    fn linear_state_dtype_bytes(&self, stated: bool, given: Option<u32>) -> Option<u32> {
        given.or((!stated).then_some(2))
    }

    /// TRITON_MLA, the MLA backend vLLM builds for SM120.
    fn sm120_mla_decode_by_grid(&self) -> bool {
        true
    }

    fn custom_all_reduce(&self) -> AllReduceRules {
        AllReduceRules::Vllm
    }

    fn card_share_kv_sizing<'a>(&self, opts: &'a ServerOptions) -> Option<&'a VllmMemory> {
        // set by this engine's translation (`apply_knobs`) on every vLLM server's options
        opts.vllm_memory.as_ref()
    }

    fn max_requests_flag(&self) -> &'static str {
        "--max-num-seqs"
    }

    fn memory_fraction_flag(&self) -> &'static str {
        args::table::GPU_MEMORY_UTILIZATION.canonical()
    }

    fn answers_questions(&self) -> bool {
        true
    }

    /// The community build's `VLLM_ENABLE_PCIE_ALLREDUCE=1` (its `cpp` backend, 56 KB cutoff:
    /// [`args::VLLM_PCIE_ALLREDUCE_CUTOFF_BYTES`]); stock vLLM runs no custom all-reduce on more
    /// than two PCIe GPUs.
    fn pcie_oneshot(&self, _tp: u32) -> super::PcieOneshotSwitch {
        super::PcieOneshotSwitch {
            env: "VLLM_ENABLE_PCIE_ALLREDUCE=1",
            flag: "",
            max_bytes: args::VLLM_PCIE_ALLREDUCE_CUTOFF_BYTES,
        }
    }

    /// `--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'`: vLLM's proposers
    /// draft a chain, one token a step; an EAGLE head names its draft model (a placeholder where
    /// none was given: vLLM needs one).
    fn speculative_flags(&self, s: &SpeculativeOptions) -> String {
        let method = match s.algorithm.to_ascii_uppercase().as_str() {
            "EAGLE3" => "eagle3",
            "EAGLE" if s.draft_model_path.is_some() => "eagle",
            _ => "mtp",
        };
        let model = match (method, s.draft_model_path.as_deref()) {
            ("mtp", _) => String::new(),
            (_, Some(p)) if !p.contains(' ') => format!(r#""model": "{p}", "#),
            _ => r#""model": "YOUR/EAGLE-DRAFT", "#.to_string(),
        };
        format!(
            r#"--speculative-config '{{"method": "{method}", {model}"num_speculative_tokens": {}}}'"#,
            s.num_steps
        )
    }

    /// vLLM's proposers draft a chain: no topk.
    fn draft_shape_words(&self, num_steps: u32, _eagle_topk: u32, num_draft_tokens: u32) -> String {
        format!("num_speculative_tokens {num_steps}, {num_draft_tokens} tokens verified a step")
    }

    fn default_speculation(&self, spec: &models::ModelSpec) -> SpeculativeOptions {
        record::default_speculation(spec.num_mtp_layers > 0)
    }

    /// Its `--speculative-config` method, upper-cased as its docs name them in prose (`MTP`,
    /// `EAGLE3`): the options hold SGLang's algorithm names (`NEXTN` for vLLM's `mtp`).
    fn speculation_name(&self, algorithm: &str, method: crate::acceptance::DraftMethod) -> String {
        use crate::acceptance::DraftMethod;
        match method {
            DraftMethod::Mtp => "MTP".into(),
            DraftMethod::Ngram => "NGRAM".into(),
            DraftMethod::Eagle if algorithm.eq_ignore_ascii_case("EAGLE3") => "EAGLE3".into(),
            DraftMethod::Eagle => "EAGLE".into(),
        }
    }

    fn separate_draft_words(&self) -> &'static str {
        "--speculative-config '{\"method\":\"eagle3\",\"model\":\"DRAFT\",\"num_speculative_tokens\":3}' (an EAGLE-3 head for it)"
    }

    /// vLLM's MTP under `--pipeline-parallel-size > 1` crashes or silently diverges from the
    /// greedy baseline: the accepted-token counts live on the last rank only
    /// (vllm-project/vllm issue #44697, an RFC of 2026-06-05). EAGLE-3 runs under PP on the
    /// model runner v2 (vllm-project/vllm PR #50514, merged August 2026; its docs' note, PR
    /// #55623, which names EAGLE-3 only): the draft on the last stage is not priced here.
    fn speculation_with_stages_refusal(&self, method: crate::acceptance::DraftMethod) -> String {
        use crate::acceptance::DraftMethod;
        match method {
            DraftMethod::Mtp => "vLLM's MTP under --pipeline-parallel-size > 1 crashes or diverges from greedy decoding (the accepted-token counts stay on the last rank: vllm-project/vllm issue #44697): drop -pp or the --speculative-config".into(),
            DraftMethod::Eagle => "vLLM runs an EAGLE-3 head under --pipeline-parallel-size > 1 on its model runner v2 (vllm-project/vllm PR #50514), but shardwise does not price a draft on the last pipeline stage: compare with -pp 1, or measure".into(),
            DraftMethod::Ngram => "shardwise does not price vLLM's n-gram drafting under --pipeline-parallel-size > 1 (no public run or source says how it runs there): compare with -pp 1, or measure".into(),
        }
    }

    fn launch_command(&self, model_path: &str) -> String {
        format!("vllm serve {model_path}")
    }

    fn flag(&self, knob: Knob) -> Option<&'static str> {
        use args::table::*;
        let spec = match knob {
            Knob::MemoryShare => GPU_MEMORY_UTILIZATION,
            Knob::ContextLength => MAX_MODEL_LEN,
            Knob::PrefillChunk => MAX_NUM_BATCHED_TOKENS,
            Knob::MaxRunningRequests => MAX_NUM_SEQS,
            Knob::TensorParallel => TENSOR_PARALLEL_SIZE,
            Knob::PipelineParallel => PIPELINE_PARALLEL_SIZE,
            Knob::DisableCudaGraph => ENFORCE_EAGER,
            Knob::CudaGraphMaxBatch => MAX_CUDAGRAPH_CAPTURE_SIZE,
            Knob::DecodeContextParallel => DECODE_CONTEXT_PARALLEL_SIZE,
            Knob::ModelPath => MODEL,
            Knob::ModelConfigOverrides => HF_OVERRIDES,
            Knob::OnlineQuantization => QUANTIZATION_CONFIG,
            Knob::CpuOffload => CPU_OFFLOAD_GB,
            Knob::KvCacheBytes => KV_CACHE_MEMORY_BYTES,
            Knob::MoeRunner => MOE_BACKEND,
            Knob::AllToAllBackend => ALL2ALL_BACKEND,
            Knob::Nodes => NNODES,
            Knob::NodeRank => NODE_RANK,
            Knob::DistInitAddr => MASTER_ADDR,
            // its speculation is one `--speculative-config` JSON: the flag that turns it on, its
            // draft's shape and model keys of that JSON, not flags
            Knob::SpeculativeAlgorithm => SPECULATIVE_CONFIG,
            // its EP a switch, its DeepEP mode the all-to-all backend's value, its PCIe
            // all-reduce an environment variable: no flag of its own
            Knob::MaxTotalTokens
            | Knob::ExpertParallelSize
            | Knob::DpAttention
            | Knob::DeepEpMode
            | Knob::TwoBatchOverlap
            | Knob::PcieOneshotAllReduce
            | Knob::PpMaxMicroBatch
            | Knob::SpeculativeNumSteps
            | Knob::SpeculativeEagleTopk
            | Knob::SpeculativeNumDraftTokens
            | Knob::SpeculativeDraftModel
            | Knob::SpeculativeAcceptLength
            | Knob::BaseGpuId => return None,
        };
        Some(spec.canonical())
    }

    fn tp_pp_flags(&self, tp: u32, pp: u32) -> String {
        format!("-tp {tp} -pp {pp}")
    }

    /// `-tp N` (`--enable-expert-parallel` when the experts span the TP group), `-dp N` for DP
    /// attention (with `--enable-expert-parallel` where the experts are EP), `-pp P`, `-dcp D`
    /// where D divides the TP size, `--nnodes K`; `None` for experts EP over part of the TP
    /// group (vLLM's EP is the whole TP × DP group).
    fn layout_flags(&self, layout: &Layout, dcp: u32, nnodes: u32) -> Option<String> {
        let mut f = Vec::new();
        match (layout.dp_attention, layout.ep) {
            (true, ep) if ep == layout.tp => {
                f.push(format!("-dp {} --enable-expert-parallel", layout.tp));
            }
            // DP ranks of a MoE model (DP attention is laid out for MoE models only) with the
            // experts sliced by TP over all of them
            (true, 1) => f.push(format!("-dp {}", layout.tp)),
            (false, 1) => f.push(format!("-tp {}", layout.tp)),
            (false, ep) if ep == layout.tp => {
                f.push(format!("-tp {} --enable-expert-parallel", layout.tp))
            }
            _ => return None,
        }
        if layout.pp > 1 {
            f.push(format!("-pp {}", layout.pp));
        }
        if dcp > 1 && !layout.dp_attention && layout.tp.is_multiple_of(dcp) {
            f.push(format!("-dcp {dcp}"));
        }
        if nnodes > 1 {
            f.push(format!("--nnodes {nnodes}"));
        }
        Some(f.join(" "))
    }

    /// `n` servers of the layout, each on its own GPUs behind a router: vLLM's `-dp n` is no
    /// such thing for a MoE model (its ranks run in lockstep with the experts over all of them,
    /// [`args::VllmLine::sizes`]), so the words say how to start them.
    fn replicas_flag(&self, n: u32) -> String {
        format!(
            "(as {n} servers, one per group of GPUs: CUDA_VISIBLE_DEVICES and --port apiece, a round-robin router in front)"
        )
    }

    /// `--node-rank R --master-addr ADDR` (vLLM's multiprocessing over several nodes; its
    /// `master_port` default 29501 left).
    fn node_join_flags(&self, rank: u32) -> String {
        format!("--node-rank {rank} --master-addr <node-0-address>")
    }

    /// One `vllm serve` per box on its default port 8000.
    fn router_hint(&self, nodes: u32) -> String {
        format!(
            "put a round-robin HTTP router in front of http://<box-0>:8000 … http://<box-{}>:8000",
            nodes - 1
        )
    }

    fn named_launch(&self, flags: &str) -> Option<(&'static str, String)> {
        record::named_launch(flags)
    }

    fn read_record_word(
        &self,
        key: &str,
        arg: Option<&str>,
        text: &str,
        knobs: &mut LaunchKnobs,
    ) -> bool {
        record::read_word(key, arg, text, knobs)
    }

    fn check_record_value(&self, key: &str, value: &str) -> Option<Result<(), String>> {
        record::check_value(key, value)
    }

    fn assumed_draft(&self, model: &str) -> (SpeculativeOptions, &'static str) {
        record::assumed_draft(model)
    }

    fn graph_flag(&self, disable_cuda_graph: bool, bs: u32) -> String {
        if disable_cuda_graph {
            "drop --enforce-eager".to_string()
        } else {
            format!("--compilation-config '{{\"max_cudagraph_capture_size\": {bs}}}'")
        }
    }

    fn kv_try_flags(
        &self,
        fraction: f64,
        static_budget_gb: f64,
        larger_dcp: Option<u32>,
    ) -> Vec<String> {
        let dcp = larger_dcp.map(|n| {
            format!(
                "{} {n} (decode context parallelism: each GPU of the TP group holds 1/{n} of every request's cache)",
                Engine::Vllm.flag(Knob::DecodeContextParallel)
            )
        });
        let mut flags = vec![
            format!(
                "--gpu-memory-utilization above {fraction} (vLLM's share of the card for weights, activations and the cache: {static_budget_gb:.1} GB per GPU)"
            ),
            "--kv-cache-dtype fp8 (half the bytes per cached token of bf16)".into(),
            "a smaller --max-num-batched-tokens (a smaller profiling-run peak beside the cache)"
                .into(),
        ];
        flags.extend(dcp);
        flags.push(
            "more GPUs per replica (-tp, -pp): the weights per GPU shrink, the cache grows".into(),
        );
        flags
    }

    /// vLLM (V1) admits a request while free blocks hold its prompt and grows each running
    /// request block by block, preempting the newest when none is free (`v1/core/sched/
    /// scheduler.py`, `Scheduler.schedule`): a request holds its context, no reservation.
    fn pool_admits(
        &self,
        pool_tokens: u64,
        context_tokens: f64,
        _prompt_tokens: Option<f64>,
        running: u32,
        queue: u32,
    ) -> Option<String> {
        let ctx = context_tokens;
        let admitted = (pool_tokens as f64 / ctx).floor() as u64;
        let asked = u64::from(running + queue);
        (asked > admitted && f64::from(running) >= 0.8 * admitted as f64).then(|| {
            format!(
                "; pool arithmetic: {pool_tokens} tokens hold about {admitted} requests at their ~{ctx:.0}-token context (vLLM allocates blocks as requests grow and preempts when none is free), and the clients had {asked} in flight ({running} running, {queue} waiting)"
            )
        })
    }

    /// vLLM V1 reserves nothing at admission: a request takes its prompt's blocks, grows block
    /// by block, and the newest running one is preempted (recomputed later) when a step finds no
    /// free block (`v1/core/sched/scheduler.py`). So the count that runs to the end without a
    /// preemption is the pool over a request's whole context, prompt and output (no clip: vLLM's
    /// scheduler has no cap on the output it counts like SGLang's 4096).
    fn kv_tokens_per_request(&self, input_tokens: u32, output_tokens: u32) -> u64 {
        u64::from(input_tokens) + u64::from(output_tokens)
    }

    fn kv_bound_clause(
        &self,
        input_tokens: u64,
        counted_output_tokens: u64,
        admitted: u64,
        concurrency: u32,
    ) -> String {
        format!(
            "vLLM admits a request once its prompt's blocks are free and preempts the newest running one when a step finds no free block, so about {admitted} of the {concurrency} requests hold their prompt and output ({input_tokens} + {counted_output_tokens} tokens) to the end at once and the rest wait or are preempted and recomputed"
        )
    }

    fn kv_bound_remedy(&self, larger_dcp: Option<u32>) -> String {
        let dcp = larger_dcp.map_or(String::new(), |n| {
            format!(
                "{} {n} (each GPU of the TP group holds 1/{n} of every request's cache), ",
                Engine::Vllm.flag(Knob::DecodeContextParallel)
            )
        });
        format!(
            "a higher --gpu-memory-utilization, an fp8 KV cache (--kv-cache-dtype fp8), a smaller --max-num-batched-tokens (a smaller profiling peak beside the cache), {dcp}or more GPUs per replica give more"
        )
    }
}
