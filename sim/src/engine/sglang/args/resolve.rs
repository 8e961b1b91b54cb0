//! Filling in SGLang's defaults: [`SglangArgs`] into [`ServerOptions`].

use super::parse::bad;
use super::{
    DefaultsContext, FlagClass, Kind, ResolvedOptions, Result, SglangArgs, Spec, Value, flags,
    speculative_params, table,
};
use crate::options::{ServerOptions, SpeculativeOptions};
use models::ModelSpec;

/// What `--moe-runner-backend b12x` means for a prediction from a launch line, which names no
/// b12x build: the newest modelled is taken ([`crate::b12x_build::B12xBuild::NEWEST`]). b12x
/// switches kernels with the routed pairs per GPU (`select_tp_moe_backend` in b12x's
/// `integration/tp_moe.py`): its compact static kernel up to 640 pairs since 0.7.1, the
/// queue-driven dynamic kernel beyond; up to 0.7.0 (the March 2026 images) the dynamic kernel
/// ran from 128 pairs. Costs: `cost::moe::MoeRunner::B12x`.
pub const B12X_NOTE: &str = "--moe-runner-backend b12x: b12x build not stated, taken as the newest modelled (>= 0.8.2): its static MoE kernel up to 640 routed pairs per GPU (80 tokens at top-8) at the CUTLASS tables' time less 0.55 us per touched expert, times 0.85 for its 64x128 underfill tiles; its dynamic kernel beyond, at 0.34 of peak bandwidth per task (builds <= 0.7.0, March 2026, ran it from 128 pairs, and were slower than CUTLASS from 16 tokens per step)";

/// Whose defaults the note lists: `SGLang's defaults for N MiB GPUs at TP4×PP2`.
fn defaults_note(ctx: &DefaultsContext) -> String {
    format!(
        "SGLang's defaults for {:.0} MiB GPUs at TP{}{}",
        ctx.gpu_mem_mib(),
        ctx.tp,
        if ctx.pp > 1 {
            format!("×PP{}", ctx.pp)
        } else {
            String::new()
        }
    )
}

/// A record's or a summary's flags on SGLang, with SGLang's GPU-memory-band defaults
/// ([`DefaultsContext::chunk_and_graph_bs`]) for `--chunked-prefill-size` and
/// `--cuda-graph-max-bs` where the flags leave them out, as a launch line gets them
/// ([`SglangArgs::server_options`]): 16384 and 512 on a B200 (> 160 GiB), where a record ran
/// with the options' own 8192 and 160 before. The note says which were filled in; `None` when
/// none was.
/// `--mem-fraction-static` stays the record's (or the memory plan's) as before: its default
/// needs the speculative algorithm and the vision tower, which a record's flags resolve later.
pub fn memory_band_defaults(
    knobs: &crate::engine::LaunchKnobs,
    tp: u32,
    gpu_memory_bytes: u64,
    o: &mut ServerOptions,
) -> Option<String> {
    if let Some(b) = knobs.cuda_graph_max_bs {
        // the band below would keep it too; without a GPU there is no band
        o.cuda_graph_max_bs = b;
    }
    if gpu_memory_bytes == 0 {
        // no GPU to pick a band by: the options' own defaults stay
        return None;
    }
    let ctx = DefaultsContext {
        gpu_memory_bytes,
        tp,
        pp: 1,
        dp_attention_size: 1,
    };
    let (chunk_default, bs_default) = ctx.chunk_and_graph_bs();
    let mut defaulted = Vec::new();
    o.chunked_prefill_size = given_or_band(
        knobs.chunked_prefill_size,
        chunk_default,
        &flags::CHUNKED_PREFILL_SIZE,
        &mut defaulted,
    );
    o.cuda_graph_max_bs = given_or_band(
        knobs.cuda_graph_max_bs,
        bs_default,
        &flags::CUDA_GRAPH_MAX_BS,
        &mut defaulted,
    );
    (!defaulted.is_empty()).then(|| format!("{}: {}", defaults_note(&ctx), defaulted.join(", ")))
}

/// `given`, else the GPU-memory band's `band` for `flag`, which `defaulted` then lists.
fn given_or_band(given: Option<u32>, band: u32, flag: &Spec, defaulted: &mut Vec<String>) -> u32 {
    given.unwrap_or_else(|| {
        defaulted.push(format!("{} {band}", flag.canonical()));
        band
    })
}

/// SGLang's default `--mem-fraction-static` from the layout's `f`, scaled down for a vision
/// tower as its `adjust_mem_fraction_for_vlm` does, and how the note says it.
fn default_mem_fraction_static(f: f64, model: &ModelSpec) -> (f64, String) {
    match super::defaults::vlm_mem_fraction_factor(model.vision.as_ref()) {
        Some(k) => (
            f * k,
            format!(
                "--mem-fraction-static {:.4} ({f} × {k:.4} for the vision tower, as SGLang's adjust_mem_fraction_for_vlm)",
                f * k
            ),
        ),
        None => (f, format!("--mem-fraction-static {f}")),
    }
}

impl SglangArgs {
    /// `--quantization fp8` on a BF16 checkpoint: SGLang's `Fp8Config` quantizes the linears
    /// and the MoE weights per tensor as it loads them (`fp8.py`, not serialized in FP8); on a
    /// quantized checkpoint the flag names its own method and nothing converts
    /// ([`crate::options::OnlineQuant::only_unquantized`]).
    fn online_quant(&self) -> Option<crate::options::OnlineQuant> {
        (self.string(&flags::QUANTIZATION) == Some("fp8"))
            .then(|| crate::options::OnlineQuant::both(models::WeightFormat::Fp8 { block: 0 }))
    }

    /// What `--moe-runner-backend b12x` from a launch line means ([`B12X_NOTE`]).
    fn b12x_note(&self) -> Option<String> {
        (self.string(&flags::MOE_RUNNER_BACKEND) == Some("b12x")).then(|| B12X_NOTE.into())
    }

    /// The weight offload the line asks for ([`crate::options::WeightOffload`]), as SGLang's
    /// `create_offloader` picks it (`srt/utils/offloader.py` @ 046a9e40): `--cpu-offload-gb` > 0
    /// first (`OffloaderV1`: a budget from the first decoder layer, each offloaded layer copied
    /// whole in line every forward), else `--offload-group-size` > 0 (`OffloaderV2`: the routed
    /// experts' `w13` / `w2` the DeepSeek-family model code declares, copied ahead on the
    /// offload stream, in line inside a CUDA graph since PR #29166). What it cannot price for
    /// sure is refused.
    fn weight_offload(
        &self,
        model: &ModelSpec,
        tp: u32,
    ) -> Result<Option<crate::options::WeightOffload>> {
        use crate::options::{OffloadLayers, OffloadParams, OffloadTransfer, WeightOffload};
        if let Some(gib) = self.uint(&flags::CPU_OFFLOAD_GB).filter(|g| *g > 0) {
            return Ok(Some(WeightOffload {
                layers: OffloadLayers::Budget {
                    bytes_per_gpu: u64::from(gib) << 30,
                },
                transfer: OffloadTransfer::CopyInLine,
                params: OffloadParams::ALL,
            }));
        }
        let Some(group) = self.uint(&flags::OFFLOAD_GROUP_SIZE).filter(|g| *g > 0) else {
            return Ok(None);
        };
        let spelled = format!("{} {group}", flags::OFFLOAD_GROUP_SIZE.canonical());
        if model.moe.is_none() || model.attention.mla_dims().is_none() {
            return Err(bad(
                &spelled,
                "SGLang's group offload moves the parameters a model's code declares; shardwise knows them only for the DeepSeek-family MoE models (the routed experts' w13 and w2): use --cpu-offload-gb, or a DeepSeek, Kimi-K2 or GLM-5 model",
            ));
        }
        let in_group = self.uint(&flags::OFFLOAD_NUM_IN_GROUP).unwrap_or(1);
        if in_group > group {
            return Err(bad(
                &format!("{} {in_group}", flags::OFFLOAD_NUM_IN_GROUP.canonical()),
                format!("must be at most {spelled}"),
            ));
        }
        if self.string(&flags::OFFLOAD_MODE) == Some("shm_cpu") && tp > 1 {
            return Err(bad(
                &format!("{} shm_cpu", flags::OFFLOAD_MODE.canonical()),
                "SGLang's shared-memory offload runs at --tp 1 only",
            ));
        }
        Ok(Some(WeightOffload {
            layers: OffloadLayers::Groups {
                group_size: group,
                num_in_group: in_group,
                prefetch_step: self.uint(&flags::OFFLOAD_PREFETCH_STEP).unwrap_or(1),
            },
            transfer: OffloadTransfer::CopyAhead {
                in_line_under_graphs: true,
                static_buffer_layers: 0,
            },
            params: OffloadParams::EXPERTS,
        }))
    }

    /// `--chunked-prefill-size` (`None`: -1, chunking off) and the CUDA-graph batch limit as
    /// given, else the GPU-memory band's ([`DefaultsContext::chunk_and_graph_bs`]).
    fn chunk_and_graph_bs(
        &self,
        ctx: &DefaultsContext,
        notes: &mut Vec<String>,
        defaulted: &mut Vec<String>,
    ) -> (Option<u32>, u32) {
        let (chunk_default, bs_default) = ctx.chunk_and_graph_bs();
        let chunk = match self.int(&flags::CHUNKED_PREFILL_SIZE) {
            Some(-1) => None,
            given => Some(given_or_band(
                given.map(|c| c as u32),
                chunk_default,
                &flags::CHUNKED_PREFILL_SIZE,
                defaulted,
            )),
        };
        let cuda_graph_max_bs = match self.ints(&flags::CUDA_GRAPH_BS) {
            // SGLang takes the largest captured size as the limit, over --cuda-graph-max-bs
            Some(sizes) => self.graph_bs_of_sizes(&sizes, notes),
            None => given_or_band(
                self.uint(&flags::CUDA_GRAPH_MAX_BS),
                bs_default,
                &flags::CUDA_GRAPH_MAX_BS,
                defaulted,
            ),
        };
        (chunk, cuda_graph_max_bs)
    }

    /// The server options with SGLang's defaults for everything absent, for a layout of
    /// `ctx.tp × ctx.pp` GPUs of `ctx.gpu_memory_bytes` each serving `model`.
    pub fn server_options(
        &self,
        ctx: &DefaultsContext,
        model: &ModelSpec,
    ) -> Result<ResolvedOptions> {
        let mut notes = self.check_environment(ctx.tp * ctx.pp)?;
        let mut defaulted = Vec::new();
        let max_prefill_tokens = self.uint(&flags::MAX_PREFILL_TOKENS).unwrap_or(16384);
        let (chunk, cuda_graph_max_bs) = self.chunk_and_graph_bs(ctx, &mut notes, &mut defaulted);
        let algorithm = self.string(&flags::SPECULATIVE_ALGORITHM);
        let mem_fraction_static = self.float(&flags::MEM_FRACTION_STATIC).unwrap_or_else(|| {
            let f =
                ctx.mem_fraction_static(chunk, max_prefill_tokens, cuda_graph_max_bs, algorithm);
            let (f, said) = default_mem_fraction_static(f, model);
            defaulted.push(said);
            f
        });
        let context_length = self.uint(&flags::CONTEXT_LENGTH);
        let chunked_prefill_size = chunk.unwrap_or_else(|| {
            // Without chunking a whole prompt, up to the context length, is prefilled at once.
            let whole = context_length.map_or(model.max_context_tokens, u64::from);
            let c = whole.max(max_prefill_tokens as u64).min(u32::MAX as u64) as u32;
            notes.push(format!(
                "--chunked-prefill-size -1: chunked prefill off, prompts of up to {c} tokens prefilled whole"
            ));
            c
        });
        let kv_cache_dtype = self.kv_cache_dtype()?;
        let attention_backend = self.string(&flags::ATTENTION_BACKEND).map(str::to_string);
        let page_size = self.page_size(attention_backend.as_deref());
        let speculative = self.speculative(model, &mut notes)?;
        notes.extend(self.b12x_note());
        let options = ServerOptions {
            engine: crate::options::Engine::Sglang,
            mem_fraction_static,
            kv_cache_dtype,
            chunked_prefill_size,
            max_prefill_tokens,
            max_running_requests: self.uint(&flags::MAX_RUNNING_REQUESTS),
            cuda_graph_max_bs,
            disable_cuda_graph: self.flag(&flags::DISABLE_CUDA_GRAPH).unwrap_or(false),
            disable_custom_all_reduce: self.on(&flags::DISABLE_CUSTOM_ALL_REDUCE),
            moe_a2a_backend: self.moe_a2a_backend(),
            pp_max_micro_batch_size: self.uint(&flags::PP_MAX_MICRO_BATCH_SIZE),
            pp_async_batch_depth: self.uint(&flags::PP_ASYNC_BATCH_DEPTH).unwrap_or(0),
            overlap_comm: self.flag(&flags::OVERLAP_COMM).unwrap_or(false),
            context_length,
            max_total_tokens: self.int(&flags::MAX_TOTAL_TOKENS).map(|t| t as u64),
            disable_radix_cache: self.flag(&flags::DISABLE_RADIX_CACHE).unwrap_or(false),
            enable_mixed_chunk: self.flag(&flags::ENABLE_MIXED_CHUNK).unwrap_or(false),
            schedule_policy: self
                .string(&flags::SCHEDULE_POLICY)
                .unwrap_or("fcfs")
                .to_string(),
            disable_overlap_schedule: self.flag(&flags::DISABLE_OVERLAP_SCHEDULE).unwrap_or(false),
            speculative_overlap: self.spec_v2(),
            page_size,
            attention_backend,
            nsa: self.nsa_backends(),
            model_overrides: self.model_overrides()?,
            moe_runner_backend: self.string(&flags::MOE_RUNNER_BACKEND).map(str::to_string),
            quantization: self.string(&flags::QUANTIZATION).map(str::to_string),
            online_quant: self.online_quant(),
            weight_offload: self.weight_offload(model, ctx.tp)?,
            speculative,
            stream_interval: self.steps(&flags::STREAM_INTERVAL),
            scheduler_recv_interval: self.steps(&flags::SCHEDULER_RECV_INTERVAL),
            pcie_custom_all_reduce_max_bytes: self.pcie_custom_all_reduce_max_bytes(ctx.tp),
            // SGLang's verify kernels read a request's cache once for all its draft tokens
            verify_rows_per_draft_token: false,
            decode_context_parallel: 1,
            switches: self.switches(),
            streams_share_prompt: false,
            ..ServerOptions::default()
        };
        if !defaulted.is_empty() {
            notes.insert(
                0,
                format!("{}: {}", defaults_note(ctx), defaulted.join(", ")),
            );
        }
        Ok(ResolvedOptions { options, notes })
    }

    /// `--kv-cache-dtype` as a dtype (`None`: `auto` or absent, the checkpoint's).
    /// The graph limit `--cuda-graph-bs` sets: its largest size, with a note where it overrides
    /// a `--cuda-graph-max-bs` given beside it (as SGLang does, silently).
    fn graph_bs_of_sizes(&self, sizes: &[u32], notes: &mut Vec<String>) -> u32 {
        let largest = sizes.iter().copied().max().unwrap_or(1);
        if let Some(given) = self
            .uint(&flags::CUDA_GRAPH_MAX_BS)
            .filter(|g| *g != largest)
        {
            notes.push(format!(
                "--cuda-graph-max-bs {given} overridden by --cuda-graph-bs's largest size, {largest} (SGLang takes the list's)"
            ));
        }
        largest
    }

    fn kv_cache_dtype(&self) -> Result<Option<models::KvDtype>> {
        Ok(match self.get(&flags::KV_CACHE_DTYPE) {
            Some(g) => match &g.value {
                Value::Str(v) => super::kv_dtype(v).map_err(|p| bad(&g.spelled, p))?,
                _ => None,
            },
            None => None,
        })
    }

    /// `--nsa-prefill-backend` and `--nsa-decode-backend` as given (`None`: SGLang's default).
    fn nsa_backends(&self) -> crate::options::NsaBackends {
        let named = |f: &Spec| self.string(f).map(str::to_string);
        crate::options::NsaBackends {
            prefill: named(&flags::NSA_PREFILL_BACKEND),
            decode: named(&flags::NSA_DECODE_BACKEND),
        }
    }

    /// `--json-model-override-args`' model-config fields ([`crate::options::ModelOverrides`]);
    /// SGLang's default `{}` overrides nothing.
    fn model_overrides(&self) -> Result<crate::options::ModelOverrides> {
        let Some(g) = self.get(&flags::JSON_MODEL_OVERRIDE_ARGS) else {
            return Ok(crate::options::ModelOverrides::default());
        };
        let Value::Str(text) = &g.value else {
            return Ok(crate::options::ModelOverrides::default());
        };
        super::model_overrides_of(text).map_err(|p| bad(&g.spelled, p))
    }

    /// A count of decode steps a flag gives (`--stream-interval`, `--scheduler-recv-interval`):
    /// at least 1, and 1 where the flag is absent (SGLang's default for both).
    fn steps(&self, flag: &Spec) -> u32 {
        self.uint(flag).unwrap_or(1).max(1)
    }

    /// `--page-size`, else the one SGLang fixes for the MLA kernels that need one.
    fn page_size(&self, attention_backend: Option<&str>) -> u32 {
        self.uint(&flags::PAGE_SIZE)
            .unwrap_or(match attention_backend {
                Some("trtllm_mla" | "flashmla") => 64,
                Some("cutlass_mla") => 128,
                _ => 1,
            })
    }

    /// The community builds' one-shot kernel below its startup crossover (48 KB on 8 GPUs,
    /// 120 KB on 4: see `crate::engine`), at `tp` GPUs; off with the custom all-reduce disabled.
    fn pcie_custom_all_reduce_max_bytes(&self, tp: u32) -> Option<u64> {
        (self.flag(&flags::ENABLE_PCIE_ONESHOT_ALLREDUCE) == Some(true)
            && self.flag(&flags::DISABLE_CUSTOM_ALL_REDUCE) != Some(true))
        .then_some(crate::engine::sglang_pcie_oneshot_bytes(tp))
    }

    /// The modelled on/off flags of the table that are on, by `dest`.
    fn switches(&self) -> std::collections::BTreeSet<String> {
        table::SPECS
            .iter()
            .filter(|s| s.class == FlagClass::Modelled && s.kind == Kind::Flag && self.on(s))
            .map(|s| s.dest.to_string())
            .collect()
    }

    /// `--moe-a2a-backend`, `none` read as no all-to-all backend.
    fn moe_a2a_backend(&self) -> Option<String> {
        self.string(&flags::MOE_A2A_BACKEND)
            .filter(|b| *b != "none")
            .map(str::to_string)
    }

    /// The acceptance length the server's environment forces (`SGLANG_SIMULATE_ACC_LEN`,
    /// [`crate::engine::forced_acceptance`]) for `steps` drafts, refused where it is no length
    /// such a step can accept.
    fn forced_accept_length(&self, steps: u32) -> Result<Option<f64>> {
        let env: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        match crate::engine::Engine::Sglang
            .rules()
            .forced_accept_length(&env.join(" "), steps)
        {
            Some(Ok(l)) => Ok(Some(l)),
            Some(Err(why)) => Err(bad(
                crate::engine::forced_acceptance::SGLANG_SIMULATE_ACC_LEN,
                why,
            )),
            None => Ok(None),
        }
    }

    /// What SGLang does to `--max-running-requests` for a speculative server that does not give
    /// it ([`crate::engine::ServingEngine::speculative_running_cap`]).
    fn speculative_running_note(&self) -> Option<String> {
        self.uint(&flags::MAX_RUNNING_REQUESTS).is_none().then(|| {
            format!(
                "--max-running-requests {}: SGLang's reset for speculative decoding when the flag is not given (\"Max running requests is reset to 48 for speculative decoding\"): at most that many requests run at once",
                crate::engine::sglang::SGLANG_SPECULATIVE_MAX_RUNNING_REQUESTS
            )
        })
    }

    /// The speculative-decoding options SGLang would run with.
    fn speculative(
        &self,
        model: &ModelSpec,
        notes: &mut Vec<String>,
    ) -> Result<Option<SpeculativeOptions>> {
        let given = |f: &Spec| self.get(f).map(|g| g.spelled.clone());
        let Some(algorithm) = self.string(&flags::SPECULATIVE_ALGORITHM) else {
            for f in [
                &flags::SPECULATIVE_NUM_STEPS,
                &flags::SPECULATIVE_EAGLE_TOPK,
                &flags::SPECULATIVE_NUM_DRAFT_TOKENS,
                &flags::SPECULATIVE_ACCEPT_LENGTH,
            ] {
                if let Some(s) = given(f) {
                    return Err(bad(&s, "needs --speculative-algorithm"));
                }
            }
            return Ok(None);
        };
        let (steps, topk, draft) = match self.uint(&flags::SPECULATIVE_NUM_STEPS) {
            Some(steps) => (
                steps,
                self.uint(&flags::SPECULATIVE_EAGLE_TOPK).unwrap_or(1),
                self.uint(&flags::SPECULATIVE_NUM_DRAFT_TOKENS)
                    .unwrap_or(steps + 1),
            ),
            None => {
                if let Some(s) = given(&flags::SPECULATIVE_EAGLE_TOPK)
                    .or(given(&flags::SPECULATIVE_NUM_DRAFT_TOKENS))
                {
                    return Err(bad(
                        &s,
                        "SGLang needs --speculative-num-steps with it (or none of the three)",
                    ));
                }
                let p = speculative_params(&model.model_type);
                notes.push(format!(
                    "--speculative-num-steps {} --speculative-eagle-topk {} --speculative-num-draft-tokens {}: SGLang's choice for {}",
                    p.0, p.1, p.2, model.model_type
                ));
                p
            }
        };
        let (draft, adjusted) = super::verified_draft_tokens(steps, topk, draft);
        notes.extend(adjusted);
        let mut accept_length = self.float(&flags::SPECULATIVE_ACCEPT_LENGTH);
        if let Some(a) = accept_length
            && a > draft as f64
        {
            return Err(bad(
                &given(&flags::SPECULATIVE_ACCEPT_LENGTH).unwrap_or_default(),
                format!("more than the {draft} draft tokens verified per step"),
            ));
        }
        let mut forced_by = None;
        if let Some(forced) = self.forced_accept_length(steps)? {
            notes.push(format!(
                "acceptance length {forced}: forced by the server's SGLANG_SIMULATE_ACC_LEN (synthetic acceptance), whatever the draft proposes"
            ));
            accept_length = Some(forced);
            forced_by = Some(format!(
                "{}={forced}",
                crate::engine::forced_acceptance::SGLANG_SIMULATE_ACC_LEN
            ));
        }
        if algorithm == "NEXTN" {
            notes.push("--speculative-algorithm NEXTN: SGLang runs it as EAGLE with the checkpoint's MTP layers".into());
        }
        notes.extend(self.speculative_running_note());
        Ok(Some(SpeculativeOptions {
            algorithm: algorithm.to_string(),
            num_steps: steps,
            eagle_topk: topk,
            num_draft_tokens: draft,
            draft_model_path: self
                .string(&flags::SPECULATIVE_DRAFT_MODEL_PATH)
                .map(str::to_string),
            accept_length,
            prompt_kind: None,
            forced_by,
        }))
    }

    /// The SGLang flags of the known values given (modelled, and recorded ones the server needs
    /// as much: `--trust-remote-code`, `--host`), canonically spelled and sorted, for a `try:`
    /// line: all but the layout's and the node flags, which the caller prints from the layout,
    /// and `--model-path`, which it prints first.
    pub fn modelled_flags(&self) -> Vec<String> {
        let printed_by_caller = [
            &flags::TP_SIZE,
            &flags::PP_SIZE,
            &flags::EP_SIZE,
            &flags::DP_SIZE,
            &flags::ENABLE_DP_ATTENTION,
            &flags::MODEL_PATH,
            &flags::NNODES,
            &flags::NODE_RANK,
            &flags::DIST_INIT_ADDR,
        ];
        self.values
            .iter()
            .filter_map(|(d, g)| Some((table::spec(d)?, g)))
            .filter(|(s, _)| {
                s.class != FlagClass::Unknown && !printed_by_caller.iter().any(|l| l.dest == s.dest)
            })
            .filter_map(|(s, g)| {
                let flag = s.canonical().to_string();
                match &g.value {
                    Value::Bool(true) => Some(flag),
                    Value::Bool(false) => None,
                    Value::Int(i) => Some(format!("{flag} {i}")),
                    Value::Float(f) => Some(format!("{flag} {f}")),
                    Value::Str(s) => Some(format!("{flag} {s}")),
                }
            })
            .collect()
    }
}
