//! [`SpeculativeModel`]: speculative decoding (MTP / NEXTN / EAGLE) as SGLang runs it, a target
//! and a draft [`CostModel`] costed on the same kernels, behind the same [`IterationModel`] seam
//! (the plan it runs is [`super::spec`]).
//!
//! One speculative step of a decode batch of `B` requests (SGLang's EAGLE worker, read from
//! `python/sglang/srt/speculative/eagle_worker.py` of 2026 main):
//! 1. draft: `--speculative-num-steps − 1` forward passes of the draft model over `B ×
//!    --speculative-eagle-topk` branches: the checkpoint's own MTP / NEXTN layer(s) (one decoder
//!    layer + `eh_proj` + norms, sharing embedding and lm_head) or a separate draft
//!    (`--speculative-draft-model-path`). The first drafted token comes from the previous step's
//!    draft extend (3.), not from a pass of its own: `EAGLEWorker.draft_forward` breaks before
//!    the last forward ("we get 1 token from draft prefill and (#spec steps - 1) tokens here"),
//!    and vLLM's proposer (`v1/spec_decode/eagle.py`, `propose`) drafts its first token from the
//!    pass over the verified tokens, then loops `range(num_speculative_tokens - 1)` over the
//!    batch's rows;
//! 2. verify: one target pass over `B × --speculative-num-draft-tokens` tokens; every request's
//!    KV cache is read once for all its draft tokens, like a small prefill (vLLM's Triton MLA
//!    on SM120 instead runs each draft token as a decode row of its own, the request's rows
//!    side by side in its grid, re-reading the cache from L2: [`super::triton_mla`],
//!    [`crate::options::ServerOptions::verify_rows_per_draft_token`]);
//! 3. draft extend: one draft pass over the step's tokens that fills the draft's KV and drafts
//!    the next step's first token: `B × (num_steps + 1)` under CUDA graphs and under vLLM, the
//!    accepted `B × L` when SGLang runs eagerly ([`SpeculativeModel::extend_tokens`]).
//!
//! Each request gains the acceptance length `L` tokens per step (bonus token included, so
//! `1 ≤ L ≤ num_draft_tokens`). The serving simulation advances one token per iteration, so a
//! speculative decode iteration is reported per generated token: its cost divided by `L` (the
//! throughput and TPOT bench_serving reports; tokens really arrive in bursts of `L`).
//! Under CUDA graphs each of the three parts replays one graph (SGLang captures the draft's
//! steps in one), eagerly every kernel launches. Speculation over pipeline stages is refused in
//! the engine's words ([`crate::engine::ServingEngine::speculation_with_stages_refusal`]): SGLang
//! runs none, vLLM's MTP breaks there and its EAGLE-3 draft on the last stage is not priced.

use super::TimeBreakdown;
use super::batch_stats::BatchStats;
use super::curves::Curves;
use super::inventory::{BlockKernels, GemmShape};
use super::spec::{SpecPlan, SpecStep, check_draft, draft_method, draft_spec};
use super::steady::{ContextHolding, SteadyDecode, steady_decode_with};
use super::{CostModel, IterationBatch, IterationCost, IterationModel, Knobs, MemoryPlan};
use crate::engine::Knob;
use crate::error::{Result, SimError};
use crate::machine::Machine;
use crate::options::ServerOptions;
use models::spec::ModelPart;
use models::{Layout, ModelSpec};

/// A layout decoding speculatively: every decode iteration is one step of draft passes, a
/// target verify and a draft extend, reported per generated token; prefill is the target's.
#[derive(Debug, Clone)]
pub struct SpeculativeModel {
    /// The served model: its forward passes verify, its memory plan holds the draft's too.
    target: CostModel,
    /// The draft's own cost model (no memory plan of its own).
    draft: CostModel,
    plan: SpecPlan,
}

impl SpeculativeModel {
    /// `model` under `layout` on `machine` with `opts`, whose `speculative` says what drafts.
    ///
    /// Fails as [`CostModel::new`] does, when speculation is off in `opts`, and over pipeline
    /// stages (the engine's reason: [`crate::engine::ServingEngine::speculation_with_stages_refusal`]).
    pub fn new(
        machine: &Machine,
        model: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
        knobs: Knobs,
    ) -> Result<SpeculativeModel> {
        let rules = opts.engine.rules();
        let Some(s) = &opts.speculative else {
            let flag = opts.engine.flag(Knob::SpeculativeAlgorithm);
            return Err(SimError::InvalidOption {
                flag,
                problem: format!("speculative decoding is off: give {flag} to model it"),
            });
        };
        // target and draft as the server holds them (the b12x fork's padded heads, the launch
        // line's model-config overrides): made once here, so the overrides are applied (and
        // said) once, to the target's own layers, not again to the draft's
        let (model, served_note) = super::model::served_spec(machine, model, &layout, opts)?;
        let model = model.as_ref();
        let mut served_opts = opts.clone();
        served_opts.model_overrides = Default::default();
        let opts = &served_opts;
        check_draft(model, s, opts.engine).map_err(|problem| SimError::InvalidOption {
            flag: opts.engine.flag(Knob::SpeculativeAlgorithm),
            problem,
        })?;
        CostModel::check(machine, model, layout, opts)?;
        if layout.pp > 1 {
            return Err(SimError::ImpossibleLayout {
                layout: layout.short_name(),
                reason: rules.speculation_with_stages_refusal(draft_method(model, s)),
            });
        }
        let mut target = CostModel::new(machine, model, layout, opts, knobs)?;
        if let Some(n) = served_note {
            target.set_served_note(n);
        }
        // what the engine's public runs say of speculation on this model and is not priced
        if let Some(c) = opts.engine.rules().spec_caveat(model, opts) {
            target.add_note(c.to_string());
        }
        // a dense draft (an EAGLE head) has no experts to spread: it runs TP over the GPUs
        let draft_layout = match draft_spec(model, s).moe {
            None => Layout { ep: 1, ..layout },
            Some(_) => layout,
        };
        let draft = draft_model(machine, model, draft_layout, opts, knobs).ok_or_else(|| {
            SimError::ImpossibleLayout {
                layout: layout.short_name(),
                reason: format!(
                    "the draft of {} cannot be laid out like its target",
                    model.name
                ),
            }
        })?;
        Ok(SpeculativeModel {
            target,
            draft,
            plan: SpecPlan::resolve(model, s),
        })
    }

    /// The model that verifies (and whose memory plan holds the draft's weights and KV).
    pub fn target(&self) -> &CostModel {
        &self.target
    }

    /// The speculative plan in force.
    pub fn plan(&self) -> &SpecPlan {
        &self.plan
    }

    /// Cost of an iteration summed into [`BatchStats`]: a pure decode batch runs one speculative
    /// step, reported per generated token; any other batch one forward pass of the target.
    pub fn cost_stats(&self, st: &BatchStats) -> IterationCost {
        if st.prefill == 0.0 && st.decode > 0.0 {
            return self.spec_cost(st, self.spec_uses_graph(st)).1;
        }
        self.target.cost_pass(st, self.target.uses_cuda_graph(st))
    }

    /// Whether the speculative step of decode batch `st` replays CUDA graphs. SGLang captures
    /// its draft and verify graphs per batch of requests (`--cuda-graph-max-bs` requests, each
    /// with its draft tokens: `cuda_graph_runner.py` sizes the verify graph `bs ×
    /// num_draft_tokens`); vLLM captures by tokens (`max_cudagraph_capture_size`, 512 by
    /// default, `CompilationConfig`), and a verify pass is `B × (k + 1)` tokens, so it runs
    /// eagerly from a `k + 1`-th of the requests plain decoding still replays.
    pub fn spec_uses_graph(&self, st: &BatchStats) -> bool {
        let graph = self.target.uses_cuda_graph(st);
        if !self.target.opts.engine.rules().verify_graphs_by_tokens() {
            return graph;
        }
        let tokens = st.decode * self.plan.num_draft_tokens.max(1) as f64;
        graph && tokens <= self.target.opts.cuda_graph_max_bs as f64
    }

    /// Cost of one iteration (see [`IterationModel::iteration`]).
    pub fn cost(&self, batch: &IterationBatch) -> IterationCost {
        self.cost_stats(&BatchStats::of(batch, self.target.core.topk_cap))
    }

    /// Steady decode of `concurrency` requests each at `context_tokens` tokens of context
    /// ([`CostModel::steady_decode`] with speculative steps).
    pub fn steady_decode(&self, concurrency: u32, context_tokens: u32) -> SteadyDecode {
        let own = ContextHolding::Own;
        steady_decode_with(&self.target, concurrency, context_tokens, own, &|st| {
            self.cost_stats(st)
        })
    }

    /// One speculative step for a decode batch `st` (its `decode` requests), and the iteration
    /// cost per generated token the serving simulation takes.
    fn spec_cost(&self, st: &BatchStats, graph: bool) -> (SpecStep, IterationCost) {
        let (plan, draft) = (&self.plan, &self.draft);
        let per = |n: f64| tokens_per_request(st, n);
        let topk = plan.eagle_topk.max(1) as f64;
        // the extend pass below drafts the first token: `num_steps − 1` passes of their own
        let passes = plan.num_steps.saturating_sub(1) as f64;
        let rest = draft.cost_pass_with(&per(topk), graph, false);
        let draft_s = passes * rest.latency_s;
        let mut verify_st = per(plan.num_draft_tokens as f64);
        verify_st.queries_per_request /= self.verify_cache_reads_per_request();
        verify_st.rows_per_request = self.verify_cache_reads_per_request();
        let verify = self.target.cost_pass(&verify_st, graph);
        let extend = draft.cost_pass_with(
            &per(self.extend_tokens(plan.accept_length, graph)),
            graph,
            false,
        );
        let host_wait_s = self.dcp_host_wait_s(draft_s + extend.latency_s);
        let step_s = draft_s + verify.latency_s + extend.latency_s + host_wait_s;
        let l = plan.accept_length;
        let mut cost = verify.clone();
        let mut breakdown = verify.breakdown;
        breakdown.add_scaled(&rest.breakdown, passes);
        breakdown.add_scaled(&extend.breakdown, 1.0);
        breakdown.overhead_s += host_wait_s;
        let mut per_token = TimeBreakdown::default();
        per_token.add_scaled(&breakdown, 1.0 / l);
        cost.breakdown = per_token;
        cost.latency_s = step_s / l;
        let scale = if verify.latency_s > 0.0 {
            cost.latency_s / verify.latency_s
        } else {
            0.0
        };
        for v in cost
            .stage_s
            .iter_mut()
            .chain(cost.stage_gpu_s.iter_mut())
            .chain(cost.stage_cpu_s.iter_mut())
        {
            *v *= scale;
        }
        cost.cpu_s *= scale;
        let step = SpecStep {
            draft_s,
            verify_s: verify.latency_s,
            extend_s: extend.latency_s,
            step_s,
            accept_length: l,
        };
        (step, cost)
    }

    /// The GPU's wait for the host in a step whose draft passes take `draft_gpu_s`: under DCP
    /// vLLM's proposer blocks on a device-to-host copy after the verify pass, so the host's share
    /// of the step ([`crate::engine::ServingEngine::spec_dcp_host_after_sync_s`]) runs beside the
    /// draft's passes only, not ahead of the GPU as async scheduling otherwise keeps it; 0
    /// without DCP or where the engine has no such wait.
    fn dcp_host_wait_s(&self, draft_gpu_s: f64) -> f64 {
        let opts = &self.target.opts;
        if super::dcp::shards(opts) <= 1 {
            return 0.0;
        }
        let host_s = opts
            .engine
            .rules()
            .spec_dcp_host_after_sync_s()
            .unwrap_or(0.0);
        (host_s - draft_gpu_s).max(0.0)
    }

    /// Tokens a request runs through the draft extend when `l` were accepted: the step's whole
    /// chain, `--speculative-num-steps + 1`, under CUDA graphs (SGLang's draft-extend graph
    /// runner and its attention backends' `is_draft_extend` metadata lay out `num_tokens_per_bs
    /// = speculative_num_steps + 1` per request, the rejected slots padded) and always under vLLM
    /// (its proposer's first pass runs over the verify batch's `num_input_tokens`); the `l`
    /// accepted ones when SGLang runs it eagerly.
    fn extend_tokens(&self, l: f64, graph: bool) -> f64 {
        if graph
            || self
                .target
                .opts
                .engine
                .rules()
                .eager_extend_runs_whole_chain()
        {
            (self.plan.num_steps + 1) as f64
        } else {
            l
        }
    }

    /// How many times a verify pass reads each request's cache: once for all its draft tokens
    /// (SGLang's kernels, FlashMLA), or once per draft token where every token is a decode row
    /// of its own ([`crate::options::ServerOptions::verify_rows_per_draft_token`]).
    pub fn verify_cache_reads_per_request(&self) -> f64 {
        if self.target.core.verify_rereads_cache {
            self.plan.num_draft_tokens.max(1) as f64
        } else {
            1.0
        }
    }

    /// The speculative step of `running` requests at `context_tokens`.
    pub fn spec_step(&self, running: u32, context_tokens: u32) -> SpecStep {
        let st = self.decode_stats(running, context_tokens);
        self.spec_cost(&st, self.spec_uses_graph(&st)).0
    }

    /// The acceptance length that makes `running` requests at `context_tokens` decode at
    /// `measured_tok_s` (summed over requests) on this model: `L = measured × step(L) ÷ running`,
    /// solved by fixed-point iteration (a step's cost depends on `L` only through the draft
    /// extend pass). Not clamped: a value below 1 or above the draft tokens says the step model
    /// (or the record) is off.
    pub fn implied_accept_length(
        &self,
        running: u32,
        context_tokens: u32,
        measured_tok_s: f64,
    ) -> f64 {
        self.implied_accept_length_scaled(running, context_tokens, measured_tok_s, 1.0)
    }

    /// [`Self::implied_accept_length`] with the verify pass's time multiplied by `verify_scale`:
    /// the target forward's measured ÷ modelled time where the same server was measured with
    /// speculation off ([`crate::scoreboard::anchor`]), so that only the speculative part of the
    /// step is modelled.
    pub fn implied_accept_length_scaled(
        &self,
        running: u32,
        context_tokens: u32,
        measured_tok_s: f64,
        verify_scale: f64,
    ) -> f64 {
        let running = self.running_in_force(running);
        let (plan, draft, n) = (&self.plan, &self.draft, running.max(1) as f64);
        let st = self.decode_stats(running, context_tokens);
        let graph = self.spec_uses_graph(&st);
        let (step, _) = self.spec_cost(&st, graph);
        let fixed = step.draft_s + verify_scale * step.verify_s;
        let per = |l: f64| tokens_per_request(&st, l);
        let mut l = plan.accept_length;
        for _ in 0..20 {
            let extend = draft
                .cost_pass_with(&per(self.extend_tokens(l.max(0.05), graph)), graph, false)
                .latency_s;
            let wait = self.dcp_host_wait_s(step.draft_s + extend);
            let next = measured_tok_s * (fixed + extend + wait) / n;
            if (next - l).abs() < 1e-6 {
                l = next;
                break;
            }
            l = next;
        }
        l
    }

    /// Decode tok/s of `running` requests at `context_tokens` with this model's acceptance
    /// length and the verify pass's time multiplied by `verify_scale` (see
    /// [`Self::implied_accept_length_scaled`]); `None` for a step that takes no time.
    pub fn spec_tok_per_s_scaled(
        &self,
        running: u32,
        context_tokens: u32,
        verify_scale: f64,
    ) -> Option<f64> {
        let running = self.running_in_force(running);
        let s = self.spec_step(running, context_tokens);
        let wait = self.dcp_host_wait_s(s.draft_s + s.extend_s);
        let step_s = s.draft_s + verify_scale * s.verify_s + s.extend_s + wait;
        (step_s > 0.0).then(|| running.max(1) as f64 * s.accept_length / step_s)
    }

    /// Of `running` open requests, those the server runs at once: the running-request cap in
    /// force ([`crate::engine::running_cap_in_force`], SGLang's 48 under speculation),
    /// as [`Self::steady_decode`] caps them.
    fn running_in_force(&self, running: u32) -> u32 {
        crate::engine::running_cap_in_force(&self.target.opts)
            .map_or(running, |cap| running.min(cap))
    }

    /// A decode batch of `running` requests, each at `context_tokens` (the index's top-k caps
    /// the keys a DSA layer reads).
    fn decode_stats(&self, running: u32, context_tokens: u32) -> BatchStats {
        let ctx = context_tokens.max(1) as f64;
        let cap = self.target.core.topk_cap.map_or(ctx, |c| ctx.min(c as f64));
        let n = running.max(1) as f64;
        BatchStats {
            decode: n,
            decode_keys: n * cap,
            decode_context: n * ctx,
            ..BatchStats::default()
        }
    }
}

/// Decode batch `st` with `n` query tokens per request (a draft pass over `topk` branches, a
/// verify over the draft tokens, an extend over the accepted ones), each request's context the
/// same.
fn tokens_per_request(st: &BatchStats, n: f64) -> BatchStats {
    BatchStats {
        decode: st.decode * n,
        decode_keys: st.decode_keys * n,
        decode_context: st.decode_context * n,
        queries_per_request: n,
        ..BatchStats::default()
    }
}

impl IterationModel for SpeculativeModel {
    fn layout(&self) -> Layout {
        self.target.layout
    }

    fn iteration(&self, batch: &IterationBatch) -> IterationCost {
        self.cost(batch)
    }

    fn memory(&self) -> &MemoryPlan {
        &self.target.memory
    }

    fn tokens_per_decode_step(&self) -> f64 {
        self.plan.accept_length
    }
}

/// The draft's cost model (speculation off, no memory plan: its weights and KV are in the
/// target's): the draft as a model of its own ([`draft_spec`]) whose first stage feeds the
/// target's hidden state through `eh_proj` (2h → h) and two norms.
fn draft_model(
    machine: &Machine,
    spec: &ModelSpec,
    layout: Layout,
    opts: &ServerOptions,
    knobs: Knobs,
) -> Option<CostModel> {
    let s = opts.speculative.as_ref()?;
    let d = draft_spec(spec, s);
    let mut o = opts.clone();
    o.speculative = None;
    let mut cm = CostModel::unplanned(machine, &d, layout, &o, knobs)?;
    let h = d.hidden_size as f64;
    let mut input = BlockKernels {
        small: 2.0, // enorm, hnorm
        small_bytes_per_token: 8.0 * h,
        ..BlockKernels::default()
    };
    input.gemms.push(GemmShape {
        name: "eh_proj",
        part: ModelPart::Mtp,
        params: 2.0 * h * h,
    });
    let curves = Curves::new(machine, &knobs, cm.floors.small_kernel_s);
    let eh = curves.block(&input, &d, &|_| 0.0);
    cm.embed.gemms.extend(eh.gemms);
    cm.embed.small += eh.small;
    cm.embed.small_bytes_per_token += eh.small_bytes_per_token;
    cm.embed.launches += eh.launches;
    Some(cm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::options::SpeculativeOptions;

    /// EAGLE with 3 steps, topk 1, 4 draft tokens (the GLM card's recipe).
    fn eagle(accept: Option<f64>) -> ServerOptions {
        ServerOptions {
            speculative: Some(SpeculativeOptions {
                algorithm: "EAGLE".into(),
                num_steps: 3,
                eagle_topk: 1,
                num_draft_tokens: 4,
                draft_model_path: None,
                accept_length: accept,
                prompt_kind: None,
                forced_by: None,
            }),
            ..ServerOptions::default()
        }
    }

    fn glm_on_baremetal() -> (Machine, ModelSpec) {
        let m = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        (m, ModelSpec::preset("glm-5-nvfp4").unwrap())
    }

    /// GLM-5-NVFP4 on the bare-metal preset, decoding speculatively.
    fn build(layout: Layout, opts: &ServerOptions) -> Result<SpeculativeModel> {
        let (m, spec) = glm_on_baremetal();
        SpeculativeModel::new(&m, &spec, layout, opts, Knobs::default())
    }

    /// GLM-5-NVFP4 on the bare-metal preset, TP8, without speculation.
    fn plain(opts: &ServerOptions) -> CostModel {
        let (m, spec) = glm_on_baremetal();
        CostModel::new(&m, &spec, Layout::tp(8), opts, Knobs::default()).unwrap()
    }

    fn model(accept: Option<f64>) -> SpeculativeModel {
        build(Layout::tp(8), &eagle(accept)).unwrap()
    }

    /// Whether `caveat` is among the notes of a speculative server of `spec` on `machine` under
    /// `layout`, its options `opts` with an EAGLE-3 head of acceptance `accept` (the presets carry
    /// no MTP layer).
    fn says(
        machine: &Machine,
        spec: &ModelSpec,
        layout: Layout,
        opts: ServerOptions,
        accept: f64,
        caveat: &str,
    ) -> bool {
        let opts = ServerOptions {
            speculative: Some(SpeculativeOptions {
                accept_length: Some(accept),
                ..crate::engine::draft::recipe_draft("EAGLE3", Some("EAGLE-3 head"))
            }),
            ..opts
        };
        SpeculativeModel::new(machine, spec, layout, &opts, Knobs::default())
            .unwrap()
            .target
            .memory_notes()
            .iter()
            .any(|n| n == caveat)
    }

    /// vLLM's speculative decoding on a Gated DeltaNet hybrid carries the engine's caveat (public
    /// runs disagree in sign from version to version) beside its prediction; SGLang's, and
    /// vLLM's on a model without linear attention, do not.
    #[test]
    fn vllm_speculation_on_a_gdn_hybrid_says_what_is_not_priced() {
        let machine = Machine::resolve("h200-x8").unwrap();
        let caveat = |engine, model: &str| {
            let spec = ModelSpec::preset(model).unwrap();
            let opts = ServerOptions {
                engine,
                ..ServerOptions::default()
            };
            let c = crate::engine::vllm::VLLM_HYBRID_SPEC_CAVEAT;
            says(&machine, &spec, Layout::tp(4), opts, 2.0, c)
        };
        assert!(caveat(Engine::Vllm, "qwen3-next-80b-a3b"));
        assert!(!caveat(Engine::Sglang, "qwen3-next-80b-a3b"));
        assert!(!caveat(Engine::Vllm, "qwen3-30b-a3b"));
    }

    /// vLLM's MTP on a DSA checkpoint under DCP carries the caveat that public runs measured its
    /// speculative step far dearer than priced; the same without DCP, or under SGLang, does not.
    #[test]
    fn vllm_mtp_on_a_dsa_model_under_dcp_says_what_is_not_priced() {
        let (machine, spec) = glm_on_baremetal();
        let caveat = |engine, dcp| {
            let opts = ServerOptions {
                engine,
                decode_context_parallel: dcp,
                ..ServerOptions::default()
            };
            let c = crate::engine::vllm::VLLM_DSA_DCP_SPEC_CAVEAT;
            says(&machine, &spec, Layout::tp(8), opts, 3.0, c)
        };
        assert!(caveat(Engine::Vllm, 4));
        assert!(!caveat(Engine::Vllm, 1));
        assert!(!caveat(Engine::Sglang, 1));
    }

    /// vLLM's MTP on a DSA model whose verify runs b12x's extend kernel (a June 2026 build of
    /// `B12X_MLA_SPARSE`) carries the caveat that it is not priced, under DCP too (where it is
    /// said instead of DCP's own); the decode route, another attention backend, an unknown build,
    /// or SGLang do not.
    #[test]
    fn vllm_mtp_verified_on_b12xs_extend_kernel_says_it_is_not_priced() {
        use crate::b12x_build::B12xMlaVerify::{Decode, Extend};
        let (machine, spec) = glm_on_baremetal();
        let says_under = |engine, backend: &str, verify, dcp, c| {
            let opts = ServerOptions {
                engine,
                attention_backend: Some(backend.to_string()),
                b12x_mla_verify: verify,
                decode_context_parallel: dcp,
                ..ServerOptions::default()
            };
            says(&machine, &spec, Layout::tp(8), opts, 3.0, c)
        };
        let extend_caveat = crate::engine::vllm::VLLM_B12X_EXTEND_VERIFY_CAVEAT;
        let caveat =
            |engine, backend: &str, verify| says_under(engine, backend, verify, 1, extend_caveat);
        let dcp_caveat = crate::engine::vllm::VLLM_DSA_DCP_SPEC_CAVEAT;
        // under DCP 4: the extend route says its own caveat, not DCP's; the decode route DCP's
        for (verify, c, said) in [
            (Some(Extend), extend_caveat, true),
            (Some(Extend), dcp_caveat, false),
            (Some(Decode), dcp_caveat, true),
        ] {
            let got = says_under(Engine::Vllm, "B12X_MLA_SPARSE", verify, 4, c);
            assert_eq!(got, said, "{verify:?} under DCP 4");
        }
        assert!(caveat(Engine::Vllm, "B12X_MLA_SPARSE", Some(Extend)));
        assert!(!caveat(Engine::Vllm, "B12X_MLA_SPARSE", Some(Decode)));
        assert!(!caveat(Engine::Vllm, "B12X_MLA_SPARSE", None));
        assert!(!caveat(
            Engine::Vllm,
            "FLASHINFER_MLA_SPARSE_SM120",
            Some(Extend)
        ));
        assert!(!caveat(Engine::Sglang, "B12X_MLA_SPARSE", Some(Extend)));
    }

    /// Under vLLM's DCP the proposer copies the DCP-local lengths to the host with a blocking
    /// `.cpu()` after the verify pass: one stream's step gains the host time its draft passes do
    /// not cover; without DCP, or under SGLang, it gains nothing.
    #[test]
    fn vllm_dcp_steps_wait_for_the_host_after_the_proposers_sync() {
        let opts = |engine, dcp| ServerOptions {
            engine,
            decode_context_parallel: dcp,
            ..eagle(Some(2.5))
        };
        let wait_s = |engine, dcp| {
            let s = build(Layout::tp(8), &opts(engine, dcp))
                .unwrap()
                .spec_step(1, 2048);
            (
                s.step_s - s.draft_s - s.verify_s - s.extend_s,
                s.draft_s + s.extend_s,
            )
        };
        let (dcp2, draft_s) = wait_s(Engine::Vllm, 2);
        let host_s = crate::engine::vllm::VLLM_SPEC_STEP_HOST_S;
        assert!(draft_s < host_s, "draft {draft_s}");
        assert!(
            (dcp2 - (host_s - draft_s)).abs() < 1e-12,
            "{dcp2} {draft_s}"
        );
        assert!(wait_s(Engine::Vllm, 1).0.abs() < 1e-12);
        assert!(wait_s(Engine::Sglang, 1).0.abs() < 1e-12);
    }

    #[test]
    fn the_implied_acceptance_length_inverts_the_prediction() {
        let m = model(Some(2.3));
        for c in [1u32, 16, 64] {
            let tok_s = m.steady_decode(c, 2048).tok_per_s;
            let l = model(None).implied_accept_length(c, 2048, tok_s);
            assert!((l - 2.3).abs() < 0.01, "c={c}: {l}");
        }
    }

    #[test]
    fn more_accepted_tokens_is_never_slower_and_one_stream_gains() {
        let plain = plain(&ServerOptions::default());
        let mut last = 0.0;
        for l in [1.0, 1.5, 2.0, 3.0, 4.0] {
            let t = model(Some(l)).steady_decode(1, 1024).tok_per_s;
            assert!(t >= last, "{l}: {t} < {last}");
            last = t;
        }
        // four drafted tokens all accepted beat plain decoding at one stream
        assert!(last > 1.5 * plain.steady_decode(1, 1024).tok_per_s);
    }

    /// On SM120 SGLang serves GLM-5 as dense MLA (BF16 KV, as it must there): a verify pass reads
    /// each request's cache once for all its draft tokens, so its context cost grows well below
    /// four plain steps' (only the attention FLOPs scale with the draft tokens); with
    /// `--attention-backend nsa` every draft token rescans the index keys.
    #[test]
    fn verify_context_cost_follows_the_attention_backend() {
        let bf16 = |mut o: ServerOptions| {
            o.kv_cache_dtype = Some(models::KvDtype::Bf16);
            o
        };
        let plain = plain(&bf16(ServerOptions::default()));
        let plain_s = |ctx| plain.steady_decode(1, ctx).cycle_s;
        let plain_growth = plain_s(131072) - plain_s(1);
        let verify_growth = |opts: &ServerOptions| {
            let m = build(Layout::tp(8), opts).unwrap();
            let v = |ctx| m.spec_step(1, ctx);
            v(131072).verify_s - v(1).verify_s
        };
        let dense = verify_growth(&bf16(eagle(Some(2.5))));
        assert!(
            dense > plain_growth && dense < 2.5 * plain_growth,
            "dense verify +{dense} s vs plain +{plain_growth} s"
        );
        let mut nsa = bf16(eagle(Some(2.5)));
        nsa.attention_backend = Some("nsa".into());
        let sparse = verify_growth(&nsa);
        assert!(
            sparse > 1.5 * dense,
            "nsa verify +{sparse} s vs dense +{dense} s"
        );
    }

    /// vLLM's Triton MLA runs each draft token as a decode row reading its request's whole
    /// cache: on SM120 a verify pass's context cost is the draft tokens' times a once-read
    /// verify's; datacenter parts (FlashMLA) keep the once-read.
    #[test]
    fn a_verify_of_decode_rows_reads_the_cache_per_draft_token_on_sm120_only() {
        let growth = |machine: &str, rows: bool| {
            let m = Machine::resolve(machine).unwrap();
            let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
            let mut o = eagle(Some(2.5));
            o.kv_cache_dtype = Some(models::KvDtype::Bf16);
            o.verify_rows_per_draft_token = rows;
            let cm = SpeculativeModel::new(&m, &spec, Layout::tp(8), &o, Knobs::default()).unwrap();
            let reads = cm.verify_cache_reads_per_request();
            let v = |ctx| cm.spec_step(4, ctx).verify_s;
            (v(131072) - v(1), reads)
        };
        let (once, r1) = growth("rtx-pro-6000-x8-baremetal", false);
        let (rows, r4) = growth("rtx-pro-6000-x8-baremetal", true);
        assert_eq!((r1, r4), (1.0, 4.0));
        assert!(
            rows > 2.5 * once && rows < 4.5 * once,
            "rows +{rows} s vs once +{once} s"
        );
        let (dc_once, _) = growth("h200-x8", false);
        let (dc_rows, dc_reads) = growth("h200-x8", true);
        assert_eq!(dc_reads, 1.0);
        assert!((dc_rows - dc_once).abs() < 1e-12);
    }

    /// vLLM captures its graphs by tokens: with 4 tokens verified a request, a verify of 16
    /// requests (64 tokens) leaves a 32-token capture limit and runs eagerly (its launches
    /// counted), where SGLang, capturing by requests, still replays it.
    #[test]
    fn a_vllm_verify_leaves_its_graphs_at_a_quarter_of_the_requests() {
        let mut o = eagle(Some(2.5));
        o.cuda_graph_max_bs = 32;
        let sglang = model_with(&o);
        o.engine = crate::options::Engine::Vllm;
        o.vllm_memory = Some(crate::options::VllmMemory {
            gpu_memory_utilization: 0.9,
            max_num_batched_tokens: None,
            max_num_seqs: None,
            estimate_cudagraphs: false,
            unchunked_default_budget: false,
            kv_cache_memory_bytes: None,
        });
        let vllm = model_with(&o);
        let st = |n: f64| BatchStats {
            decode: n,
            decode_keys: n * 1024.0,
            decode_context: n * 1024.0,
            ..BatchStats::default()
        };
        assert!(sglang.spec_uses_graph(&st(16.0)) && sglang.spec_uses_graph(&st(32.0)));
        assert!(vllm.spec_uses_graph(&st(8.0)));
        assert!(!vllm.spec_uses_graph(&st(16.0)));
        assert!(vllm.spec_step(16, 1024).step_s > sglang.spec_step(16, 1024).step_s);
    }

    /// SGLang's `draft_forward` and vLLM's proposer take the first drafted token from the draft
    /// extend over the previous step's tokens: a chain of `n` steps runs `n − 1` draft passes of
    /// its own, and one step runs none.
    #[test]
    fn the_draft_runs_one_pass_fewer_than_its_steps() {
        let steps = |n: u32| {
            let mut o = eagle(Some(2.0));
            let s = o.speculative.as_mut().unwrap();
            (s.num_steps, s.num_draft_tokens) = (n, n + 1);
            model_with(&o).spec_step(8, 1024)
        };
        let one = steps(1);
        assert_eq!(one.draft_s, 0.0);
        assert!(one.extend_s > 0.0);
        let (two, three) = (steps(2), steps(3));
        assert!(two.draft_s > 0.0);
        assert!(
            (three.draft_s / two.draft_s - 2.0).abs() < 1e-9,
            "{two:?} {three:?}"
        );
    }

    fn model_with(o: &ServerOptions) -> SpeculativeModel {
        build(Layout::tp(8), o).unwrap()
    }

    #[test]
    fn speculation_refuses_pipeline_stages() {
        let l = Layout {
            tp: 4,
            pp: 2,
            ep: 1,
            dp_attention: false,
        };
        let e = build(l, &eagle(None)).unwrap_err();
        assert!(e.to_string().contains("--pp-size"), "{e}");
    }

    #[test]
    fn speculation_off_is_refused_with_the_flag_to_give() {
        let e = build(Layout::tp(8), &ServerOptions::default()).unwrap_err();
        assert!(e.to_string().contains("--speculative-algorithm"), "{e}");
    }
}
