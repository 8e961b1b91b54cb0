//! SGLang's rules: its launch knobs on the neutral options, its radix cache, CUDA graphs per
//! batch of requests, its decode-attention kernels on SM120, its custom all-reduce, its flags'
//! spellings and its admission rule (a request's prompt and whole output reserved up front).

pub mod args;
pub mod kv_policy;
pub mod log;
pub mod record;
pub mod scheduler;

use super::{AllReduceRules, Engine, Knob, LaunchKnobs, ServingEngine};
use crate::options::{ServerOptions, SpeculativeOptions};
use models::Layout;

/// The SGLang engine.
pub struct Sglang;

/// What SGLang sets `--max-running-requests` to for a speculative server that does not give it
/// ([`ServingEngine::speculative_running_cap`]).
pub const SGLANG_SPECULATIVE_MAX_RUNNING_REQUESTS: u32 = 48;

impl ServingEngine for Sglang {
    fn claims_log(&self, text: &str) -> bool {
        log::claims(text)
    }

    fn read_log(&self, text: &str, source: &str) -> crate::engine::log::ServerLog {
        log::parse(text, source)
    }

    fn log_without_samples(&self) -> (&'static str, &'static str) {
        (
            "no usable `Decode batch` line",
            "pass the log of an SGLang server that served requests (`launch_server` at --log-level info)",
        )
    }

    fn run_layout_unknown(&self, _run: &crate::engine::log::ServerRun) -> &'static str {
        "no ServerArgs dump before these lines: layout unknown"
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
        let Some(dump) = &run.server_args else {
            return Ok(None);
        };
        let pairs = log::options::logged_pairs(dump, run);
        Ok(Some(crate::engine::Launch::Sglang(args::from_pairs(
            &pairs,
        )?)))
    }

    fn decode_line_per_micro_batch(&self) -> bool {
        true
    }

    fn scheduler(&self, mixed_chunk: bool) -> &'static dyn crate::engine::SchedulerPolicy {
        scheduler::policy(mixed_chunk)
    }

    fn run_model(&self, run: &crate::engine::log::ServerRun) -> Option<String> {
        log::run_model(run)
    }

    fn logged_options(
        &self,
        base: &ServerOptions,
        run: &crate::engine::log::ServerRun,
        _layout: &Layout,
        _machine: &crate::machine::Machine,
    ) -> Result<(ServerOptions, Vec<String>), String> {
        Ok((
            log::options::run_options(base, run),
            log::options::log_notes(base, run),
        ))
    }

    fn display_name(&self) -> &'static str {
        "SGLang"
    }

    fn kind(&self) -> Engine {
        Engine::Sglang
    }

    fn apply_knobs(
        &self,
        knobs: &LaunchKnobs,
        tp: u32,
        gpu_memory_bytes: u64,
        o: &mut ServerOptions,
        notes: &mut Vec<String>,
    ) {
        if let Some(d) = knobs.decode_context_parallel.filter(|d| *d > 1) {
            notes.push(format!(
                "the record's DCP {d} is a vLLM option: SGLang keeps the whole KV cache on every TP rank"
            ));
        }
        notes.extend(args::memory_band_defaults(knobs, tp, gpu_memory_bytes, o));
        // `--moe-a2a-backend` as the record's flags name it (the experts' tokens travel by it
        // under expert parallelism; SGLang sets `ep_size = tp_size` for it, `SglangArgs::sizes`)
        if let Some(b) = &knobs.moe_a2a_backend {
            o.moe_a2a_backend = Some(b.clone());
        }
    }

    /// Its radix cache, on unless `--disable-radix-cache` (hybrid models too, through
    /// `MambaRadixCache`, which also keeps the prefix's state).
    fn prefix_cache(&self, knobs: &LaunchKnobs, _hybrid: bool) -> (bool, &'static str) {
        if knobs.disable_radix_cache {
            (false, "--disable-radix-cache")
        } else {
            (true, "SGLang's radix cache")
        }
    }

    /// SGLang captures its draft and verify graphs per batch of requests (`--cuda-graph-max-bs`
    /// requests, each with its draft tokens: `cuda_graph_runner.py` sizes the verify graph
    /// `bs × num_draft_tokens`).
    fn verify_graphs_by_tokens(&self) -> bool {
        false
    }

    /// The 0.5.14 MLA decode table for MLA, FlashInfer's or Triton's for GQA; another
    /// `--attention-backend` has no table.
    fn decode_table_backend(
        &self,
        kind: &str,
        _kv_dtype: &str,
        attention_backend: Option<&str>,
    ) -> Option<&'static str> {
        match (kind, attention_backend) {
            ("mla", None | Some("flashinfer")) => Some("mla"),
            ("gqa", None | Some("flashinfer")) => Some("flashinfer"),
            ("gqa", Some("triton")) => Some("triton"),
            _ => None,
        }
    }

    /// `--nsa-decode-backend` as named, else SGLang's default (`server_args.py`
    /// `_set_default_nsa_backends`): `flashmla_kv` for an fp8 cache on Hopper, `fa3` for bf16
    /// there, `trtllm` for bf16 on Blackwell. An fp8 cache on Blackwell with none named is left
    /// unknown: its default moved from `flashmla_kv` with the builds (sgl-project/sglang #21914
    /// moved the prefill's to `trtllm`), and no table measured `flashmla_kv` on a B200.
    fn dsa_decode_backend(
        &self,
        sm: u32,
        kv_dtype: &str,
        named: Option<&str>,
    ) -> Option<&'static str> {
        const MEASURED: [&str; 3] = ["trtllm", "flashmla_kv", "fa3"];
        match (named, sm, kv_dtype) {
            (Some(n), _, _) => MEASURED.into_iter().find(|b| *b == n),
            (None, 9, "fp8") => Some("flashmla_kv"),
            (None, 9, _) => Some("fa3"),
            (None, 10, "bf16") => Some("trtllm"),
            _ => None,
        }
    }

    fn eager_extend_runs_whole_chain(&self) -> bool {
        false
    }

    fn spec_dcp_host_after_sync_s(&self) -> Option<f64> {
        None
    }

    /// SGLang resets `max_running_requests` to 48 for every speculative algorithm when the flag
    /// is not given (`ServerArgs._handle_speculative_decoding`, `python/sglang/srt/server_args.py`:
    /// EAGLE / EAGLE3 / STANDALONE, NEXTN read as EAGLE, and NGRAM; it logs "Max running requests
    /// is reset to 48 for speculative decoding. You can override this by explicitly setting
    /// --max-running-requests."), from the EAGLE path of 0.4 through the 0.5 releases. So a
    /// speculative server runs at most 48 requests at once (per the DP group: the memory plan
    /// divides it by `--dp`) however many the client keeps open.
    fn speculative_running_cap(&self) -> Option<u32> {
        Some(SGLANG_SPECULATIVE_MAX_RUNNING_REQUESTS)
    }

    /// SGLang turns its overlap scheduler off for EAGLE / EAGLE3 / NEXTN speculative decoding
    /// ("Overlap scheduler is disabled because of using eagle speculative decoding",
    /// `ServerArgs._handle_speculative_decoding` in `python/sglang/srt/server_args.py`, 0.4
    /// through 0.5), unless `SGLANG_ENABLE_SPEC_V2` runs the v2 worker, which keeps it on
    /// ("Beta spec is enabled for eagle speculative decoding and overlap schedule is turned
    /// on"; EAGLE with top-k 1). Without overlap each step's scheduler turn and the GPU's
    /// forward passes follow one another.
    fn overlap_scheduled(&self, opts: &crate::options::ServerOptions) -> bool {
        !opts.disable_overlap_schedule && (opts.speculative.is_none() || opts.speculative_overlap)
    }

    /// `SGLANG_ENABLE_SPEC_V2=True` for a top-1 EAGLE / EAGLE3 / NEXTN chain run without it:
    /// SGLang's speculative-decoding guide lists the v2 worker as the way to keep the overlap
    /// scheduler under speculation, experimental and requiring `--speculative-eagle-topk 1`
    /// (sgl-project/sglang `docs/advanced_features/speculative_decoding.md`, "Speculative
    /// Decoding V2 (Overlap Scheduler)"). Not for a tree draft, NGRAM or a launch that turns
    /// overlap off altogether (`--disable-overlap-schedule`).
    fn speculative_overlap_switch(
        &self,
        opts: &crate::options::ServerOptions,
    ) -> Option<&'static str> {
        let s = opts.speculative.as_ref()?;
        let chain = s.eagle_topk <= 1 && !s.algorithm.eq_ignore_ascii_case("NGRAM");
        (chain && !opts.speculative_overlap && !opts.disable_overlap_schedule)
            .then_some(args::SPEC_V2_ON)
    }

    /// `SGLANG_SIMULATE_ACC_LEN=3.24` in the server's environment.
    fn forced_accept_length(&self, text: &str, drafts: u32) -> Option<Result<f64, String>> {
        use crate::engine::forced_acceptance::{SGLANG_SIMULATE_ACC_LEN, checked, env_value};
        let v = env_value(text, SGLANG_SIMULATE_ACC_LEN)?;
        let spelled = format!("{SGLANG_SIMULATE_ACC_LEN}={v}");
        Some(
            v.parse::<f64>()
                .map_err(|_| format!("{spelled}: not a number"))
                .and_then(|l| checked(l, drafts, &spelled)),
        )
    }

    fn sm120_mla_decode_by_grid(&self) -> bool {
        false
    }

    fn custom_all_reduce(&self) -> AllReduceRules {
        AllReduceRules::Sglang
    }

    fn max_requests_flag(&self) -> &'static str {
        "--max-running-requests"
    }

    fn memory_fraction_flag(&self) -> &'static str {
        args::flags::MEM_FRACTION_STATIC.canonical()
    }

    fn answers_questions(&self) -> bool {
        true
    }

    /// `--enable-pcie-oneshot-allreduce`, with the community build's automatic cutoff (48 KiB on
    /// 8 GPUs, 120 KiB on 4).
    fn pcie_oneshot(&self, tp: u32) -> super::PcieOneshotSwitch {
        super::PcieOneshotSwitch {
            env: "",
            flag: args::flags::ENABLE_PCIE_ONESHOT_ALLREDUCE.canonical(),
            max_bytes: super::sglang_pcie_oneshot_bytes(tp),
        }
    }

    fn speculative_flags(&self, s: &SpeculativeOptions) -> String {
        let flag = |k| Engine::Sglang.flag(k);
        format!(
            "{} {} {} {} {} {} {} {}",
            flag(Knob::SpeculativeAlgorithm),
            s.algorithm,
            flag(Knob::SpeculativeNumSteps),
            s.num_steps,
            flag(Knob::SpeculativeEagleTopk),
            s.eagle_topk,
            flag(Knob::SpeculativeNumDraftTokens),
            s.num_draft_tokens,
        )
    }

    fn draft_shape_words(&self, num_steps: u32, eagle_topk: u32, num_draft_tokens: u32) -> String {
        format!("{num_steps} steps, topk {eagle_topk}, {num_draft_tokens} draft tokens")
    }

    fn default_speculation(&self, spec: &models::ModelSpec) -> SpeculativeOptions {
        args::default_speculative_options(&spec.model_type)
    }

    fn speculation_name(&self, algorithm: &str, _method: crate::acceptance::DraftMethod) -> String {
        algorithm.to_string()
    }

    fn separate_draft_words(&self) -> &'static str {
        "--speculative-algorithm EAGLE3 --speculative-draft-model-path DRAFT (an EAGLE-3 head for it)"
    }

    /// SGLang's server arguments assert `pp_size == 1` under any speculative algorithm
    /// ("Pipeline parallelism is not compatible with overlap schedule, speculative decoding",
    /// `validation_hook.py`); lifting it is tracked in sgl-project/sglang issue #39634
    /// (2026-09-15: "still gated off against each other").
    fn speculation_with_stages_refusal(&self, _method: crate::acceptance::DraftMethod) -> String {
        "SGLang runs no speculative decoding with --pp-size > 1 (its server arguments assert it; sgl-project/sglang issue #39634 tracks lifting it): drop --pp-size or the --speculative-* flags".into()
    }

    fn launch_command(&self, model_path: &str) -> String {
        format!(
            "python -m sglang.launch_server {} {model_path}",
            args::flags::MODEL_PATH.canonical()
        )
    }

    fn flag(&self, knob: Knob) -> Option<&'static str> {
        use args::flags::*;
        let spec = match knob {
            Knob::MemoryShare => MEM_FRACTION_STATIC,
            Knob::ContextLength => CONTEXT_LENGTH,
            Knob::PrefillChunk => CHUNKED_PREFILL_SIZE,
            Knob::MaxRunningRequests => MAX_RUNNING_REQUESTS,
            Knob::MaxTotalTokens => MAX_TOTAL_TOKENS,
            Knob::TensorParallel => TP_SIZE,
            Knob::PipelineParallel => PP_SIZE,
            Knob::ExpertParallelSize => EP_SIZE,
            Knob::DpAttention => ENABLE_DP_ATTENTION,
            Knob::AllToAllBackend => MOE_A2A_BACKEND,
            Knob::DeepEpMode => DEEPEP_MODE,
            Knob::TwoBatchOverlap => ENABLE_TWO_BATCH_OVERLAP,
            Knob::PcieOneshotAllReduce => ENABLE_PCIE_ONESHOT_ALLREDUCE,
            Knob::DisableCudaGraph => DISABLE_CUDA_GRAPH,
            Knob::CudaGraphMaxBatch => CUDA_GRAPH_MAX_BS,
            Knob::PpMaxMicroBatch => PP_MAX_MICRO_BATCH_SIZE,
            Knob::SpeculativeAlgorithm => SPECULATIVE_ALGORITHM,
            Knob::SpeculativeNumSteps => SPECULATIVE_NUM_STEPS,
            Knob::SpeculativeEagleTopk => SPECULATIVE_EAGLE_TOPK,
            Knob::SpeculativeNumDraftTokens => SPECULATIVE_NUM_DRAFT_TOKENS,
            Knob::SpeculativeDraftModel => SPECULATIVE_DRAFT_MODEL_PATH,
            Knob::SpeculativeAcceptLength => SPECULATIVE_ACCEPT_LENGTH,
            Knob::ModelPath => MODEL_PATH,
            Knob::BaseGpuId => BASE_GPU_ID,
            Knob::Nodes => NNODES,
            Knob::NodeRank => NODE_RANK,
            Knob::DistInitAddr => DIST_INIT_ADDR,
            Knob::ModelConfigOverrides => JSON_MODEL_OVERRIDE_ARGS,
            Knob::CpuOffload => CPU_OFFLOAD_GB,
            Knob::MoeRunner => MOE_RUNNER_BACKEND,
            Knob::DecodeContextParallel | Knob::OnlineQuantization | Knob::KvCacheBytes => {
                return None;
            }
        };
        Some(spec.canonical())
    }

    fn tp_pp_flags(&self, tp: u32, pp: u32) -> String {
        format!("--tp {tp} --pp-size {pp}")
    }

    /// `--tp N --pp-size P --ep-size E --dp N --enable-dp-attention --nnodes K`; SGLang has no
    /// decode context parallelism (`dcp` is not spelt).
    fn layout_flags(&self, layout: &Layout, _dcp: u32, nnodes: u32) -> Option<String> {
        Some(layout.sglang_flags_on_nodes(nnodes))
    }

    /// `--node-rank R --dist-init-addr ADDR:5000`.
    fn node_join_flags(&self, rank: u32) -> String {
        format!(
            "{} {rank} {} <node-0-address>:5000",
            args::flags::NODE_RANK.canonical(),
            args::flags::DIST_INIT_ADDR.canonical()
        )
    }

    /// SGLang's own router over one server per box (its default port 30000).
    fn router_hint(&self, nodes: u32) -> String {
        format!(
            "put a router in front, e.g. python -m sglang_router.launch_router --worker-urls http://<box-0>:30000 … http://<box-{}>:30000",
            nodes - 1
        )
    }

    /// Engines behind SGLang's router (`--dp-size` without DP attention).
    fn replicas_flag(&self, n: u32) -> String {
        format!("--dp-size {n}")
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

    fn named_launch(&self, flags: &str) -> Option<(&'static str, String)> {
        record::named_launch(flags)
    }

    fn named_recv_interval(&self, flags: &str, concurrency: u32) -> Option<(u32, String)> {
        record::named_recv_interval(flags, concurrency)
    }

    /// A build before SGLang made `trtllm` its DSA default on Blackwell for an fp8 cache
    /// (sgl-project/sglang #21914, fbc1f9245, 2026-04-02) ran FlashMLA there when no
    /// `--nsa-prefill-backend` was named ([`crate::options::DsaBuild`]); one from
    /// #20086 (d28f35240, 2026-03-07) to that day gave a server without DP attention a bf16
    /// `auto` cache there ([`crate::options::DsaBuild`]).
    fn dated_knobs(
        &self,
        knobs: &mut LaunchKnobs,
        built: (u32, u32, u32),
        _assumptions: &mut Vec<String>,
    ) {
        knobs.dsa_build = crate::options::DsaBuild {
            flashmla_default: knobs.nsa.prefill.is_none() && built < (2026, 4, 2),
            // #20086 made a one-replica server's `auto` DSA cache bf16 on Blackwell until #21914
            kv_auto_dp_window: knobs.kv_cache_dtype.is_none()
                && ((2026, 3, 7)..(2026, 4, 2)).contains(&built),
        };
    }

    fn is_moe_runner(&self, name: &str) -> bool {
        name != "auto" && args::MOE_RUNNER_BACKENDS.contains(&name)
    }

    fn assumed_draft(&self, model: &str) -> (SpeculativeOptions, &'static str) {
        record::assumed_draft(model)
    }

    fn verified_draft_tokens(
        &self,
        num_steps: u32,
        eagle_topk: u32,
        num_draft_tokens: u32,
    ) -> (u32, Option<String>) {
        args::verified_draft_tokens(num_steps, eagle_topk, num_draft_tokens)
    }

    fn graph_flag(&self, disable_cuda_graph: bool, bs: u32) -> String {
        if disable_cuda_graph {
            "drop --disable-cuda-graph".to_string()
        } else {
            format!("--cuda-graph-max-bs {bs}")
        }
    }

    fn kv_try_flags(
        &self,
        fraction: f64,
        static_budget_gb: f64,
        _larger_dcp: Option<u32>,
    ) -> Vec<String> {
        vec![
            format!(
                "--mem-fraction-static above {fraction} (the static budget is {static_budget_gb:.1} GB per GPU; the rest holds SGLang's reserves)"
            ),
            "--kv-cache-dtype fp8_e4m3 (half the bytes per cached token of bf16)".into(),
            "a smaller --cuda-graph-max-bs or --chunked-prefill-size (less reserve beside the pool)"
                .into(),
            "more GPUs per replica (--tp, --pp-size): the weights per GPU shrink, the pool grows"
                .into(),
        ]
    }

    /// SGLang admits a request only while its prompt and its whole output fit beside what the
    /// running ones hold and reserve (`schedule_policy.py::PrefillAdder`, see
    /// [`crate::memory_fit::admitted_requests`]). From the log alone, a request at the median context
    /// has its prompt and about half its output cached, so prompt + output ≈ 2 × context −
    /// prompt.
    fn pool_admits(
        &self,
        pool_tokens: u64,
        context_tokens: f64,
        prompt_tokens: Option<f64>,
        running: u32,
        queue: u32,
    ) -> Option<String> {
        let ctx = context_tokens;
        let prompt = prompt_tokens.unwrap_or(ctx).min(ctx);
        let per_request = (2.0 * ctx - prompt).max(ctx);
        let admitted = (pool_tokens as f64 / per_request).floor() as u64;
        let asked = u64::from(running + queue);
        (asked > admitted && f64::from(running) >= 0.8 * admitted as f64).then(|| {
            format!(
                "; pool arithmetic: {pool_tokens} tokens admit about {admitted} requests of ~{prompt:.0} prompt + ~{:.0} output tokens (SGLang reserves both at admission), and the clients had {asked} in flight ({running} running, {queue} waiting)",
                per_request - prompt
            )
        })
    }

    /// `schedule_policy.py::PrefillAdder` admits a new request only while its prompt plus its
    /// whole remaining output, clipped at `CLIP_MAX_NEW_TOKENS` (4096), fit in what the pool has
    /// left beside the running requests' own reservations; those shrink as `new_token_ratio`
    /// decays, but a closed-loop client refills every slot at once, so about
    /// `pool / (input + min(output, 4096))` run together.
    fn kv_tokens_per_request(&self, input_tokens: u32, output_tokens: u32) -> u64 {
        u64::from(input_tokens) + u64::from(output_tokens.min(kv_policy::CLIP_MAX_NEW_TOKENS))
    }

    fn kv_bound_clause(
        &self,
        input_tokens: u64,
        counted_output_tokens: u64,
        admitted: u64,
        concurrency: u32,
    ) -> String {
        format!(
            "SGLang reserves each request's prompt and remaining output ({input_tokens} + {counted_output_tokens} tokens) when it admits it, so about {admitted} of the {concurrency} requests run at once and the rest wait"
        )
    }

    /// SGLang's DCP serves DSA checkpoints only and is not modelled for it here: not named.
    fn kv_bound_remedy(&self, _larger_dcp: Option<u32>) -> String {
        "a higher --mem-fraction-static, an fp8 KV cache (--kv-cache-dtype fp8_e4m3), a smaller --cuda-graph-max-bs / --chunked-prefill-size (SGLang's default fraction rises) or more GPUs per replica give more".to_string()
    }
}
