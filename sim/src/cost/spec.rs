//! Speculative decoding (MTP / NEXTN / EAGLE) as SGLang runs it, costed on the same kernels.
//!
//! One speculative step of a decode batch of `B` requests (SGLang's EAGLE worker, read from
//! `python/sglang/srt/speculative/eagle_worker.py` of 2026 main):
//! 1. draft: `--speculative-num-steps` forward passes of the draft model: the checkpoint's own
//!    MTP / NEXTN layer(s) (one decoder layer + `eh_proj` + norms, sharing embedding and lm_head)
//!    or a separate draft (`--speculative-draft-model-path`); the first pass over `B` tokens,
//!    the others over `B × --speculative-eagle-topk` branches;
//! 2. verify: one target pass over `B × --speculative-num-draft-tokens` tokens; every request's
//!    KV cache is read once for all its draft tokens, like a small prefill (vLLM's Triton MLA
//!    instead runs each draft token as a decode row of its own, reading the cache once per
//!    token: [`crate::options::ServerOptions::verify_rows_per_draft_token`]);
//! 3. draft extend: one draft pass over the accepted tokens (`B × L`) to fill the draft's KV.
//!
//! Each request gains the acceptance length `L` tokens per step (bonus token included, so
//! `1 ≤ L ≤ num_draft_tokens`). The serving simulation advances one token per iteration, so a
//! speculative decode iteration is reported per generated token: its cost divided by `L` (the
//! throughput and TPOT bench_serving reports; tokens really arrive in bursts of `L`).
//! Under CUDA graphs each of the three parts replays one graph (SGLang captures the draft's
//! steps in one), eagerly every kernel launches. SGLang runs no speculative decoding with
//! `--pp-size > 1`.

use super::iteration::BatchStats;
use super::{CostModel, IterationCost, Knobs};
use crate::machine::Machine;
use crate::options::{ServerOptions, SpeculativeOptions};
use models::spec::{ModelPart, PartFormats};
use models::{Layout, ModelSpec, WeightFormat};
use serde::{Deserialize, Serialize};

/// Per-draft-token acceptance assumed for the checkpoint's MTP layer when none is given, each
/// chained step accepted with this probability times the previous one's: 0.8. Published: InferenceX's
/// golden acceptance-length curve for GLM-5.2's own MTP head (SemiAnalysisAI/InferenceX
/// `golden_al_distribution/glm5.2_mtp.yaml`, vLLM MTP on B300, SPEED-Bench coding, run
/// 28058352479): 1.84 / 2.50 / 2.99 / 3.33 tokens per step at 1 / 2 / 3 / 4 draft tokens, which
/// this chain gives within 0.05 (1.80 / 2.44 / 2.95 / 3.36); the DeepSeek-V3 report's 85–90% for
/// the first drafted token (arXiv:2412.19437 §5.4.3) and SGLang's 3-step MTP floor of 2.8 for
/// DeepSeek-V4 (sgl-project/sglang PR 28098) agree. An input, never fitted to the records: pass
/// `--speculative-accept-length` (or a server log's `accept len`) to replace it.
pub const DEFAULT_MTP_ACCEPTANCE: f64 = 0.8;
/// Per-draft-token acceptance assumed for a separate EAGLE / EAGLE-3 draft: 0.75. Published:
/// InferenceX's golden curve for Kimi-K2.5's EAGLE-3 draft (`golden_al_distribution/
/// kimik2.5_eagle3.yaml`, vLLM on B300, SPEED-Bench coding, thinking off, run 28122195822): 1.80 /
/// 2.33 / 2.75 / 3.06 at 1 / 2 / 3 / 4 speculative tokens (the chain: 1.75 / 2.31 / 2.73 / 3.05);
/// EAGLE-3's own paper reports lengths of 3–4 at 6–8 drafted tokens (arXiv:2503.01840).
pub const DEFAULT_EAGLE_ACCEPTANCE: f64 = 0.75;

/// Where the acceptance length came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcceptSource {
    /// `--speculative-accept-length`.
    Given,
    /// A server log's `accept len` or a bench_serving JSONL's `accept_length`.
    Measured,
    /// The stated default for the draft configuration.
    Default,
}

/// The speculative configuration in force, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecPlan {
    pub algorithm: String,
    pub num_steps: u32,
    pub eagle_topk: u32,
    pub num_draft_tokens: u32,
    /// Tokens per request per step.
    pub accept_length: f64,
    pub accept_source: AcceptSource,
    /// What drafts: `MTP layer(s) of the checkpoint (1)` or the draft model's name.
    pub draft: String,
}

impl std::fmt::Display for SpecPlan {
    /// `speculative decoding modelled: EAGLE, 3 draft passes × top-1, 4 tokens verified per
    /// step, drafted by …; acceptance length 2.53 tokens per step (assumed: …)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "speculative decoding modelled: {}, {} draft pass(es) × top-{}, {} tokens verified per step, drafted by {}; acceptance length {:.2} tokens per step ",
            self.algorithm,
            self.num_steps,
            self.eagle_topk,
            self.num_draft_tokens,
            self.draft,
            self.accept_length
        )?;
        match self.accept_source {
            AcceptSource::Given => f.write_str("(given)"),
            AcceptSource::Measured => f.write_str("(measured)"),
            AcceptSource::Default => f.write_str(
                "(assumed: each chained draft token accepted with the stated default probability; give --speculative-accept-length, your server log's `accept len`, to use yours)",
            ),
        }
    }
}

impl SpecPlan {
    /// SGLang's defaults where a flag is 0 (unset): (3, 1, 4) for a checkpoint with MTP layers
    /// (what SGLang picks for DeepSeek-V3-style models), (5, 4, 8) otherwise; the acceptance
    /// length from `s` or the default for the configuration.
    pub fn resolve(spec: &ModelSpec, s: &SpeculativeOptions) -> SpecPlan {
        let mtp = s.draft_model_path.is_none() && spec.num_mtp_layers > 0;
        let (d_steps, d_topk, d_tokens) = if mtp { (3, 1, 4) } else { (5, 4, 8) };
        let num_steps = if s.num_steps == 0 {
            d_steps
        } else {
            s.num_steps
        };
        let eagle_topk = if s.eagle_topk == 0 {
            d_topk
        } else {
            s.eagle_topk
        };
        let num_draft_tokens = if s.num_draft_tokens == 0 {
            d_tokens
        } else {
            s.num_draft_tokens
        };
        let (accept_length, accept_source) = match s.accept_length {
            Some(l) => (l, AcceptSource::Given),
            None => {
                let a = if mtp {
                    DEFAULT_MTP_ACCEPTANCE
                } else {
                    DEFAULT_EAGLE_ACCEPTANCE
                };
                // a chain of `num_steps` drafts (topk branches only help the best path)
                let chain: f64 = (0..=num_steps).map(|i| a.powi(i as i32)).sum();
                (chain.min(num_draft_tokens as f64), AcceptSource::Default)
            }
        };
        SpecPlan {
            algorithm: s.algorithm.clone(),
            num_steps,
            eagle_topk,
            num_draft_tokens,
            accept_length: accept_length.clamp(1.0, num_draft_tokens.max(1) as f64),
            accept_source,
            draft: if mtp {
                format!("the checkpoint's MTP layer(s) ({})", spec.num_mtp_layers)
            } else {
                s.draft_model_path
                    .clone()
                    .unwrap_or_else(|| "a one-layer draft".into())
            },
        }
    }
}

/// The format of the checkpoint's first MTP layer's modules of `base`, else the part's own.
fn mtp_format(spec: &ModelSpec, base: ModelPart) -> WeightFormat {
    let layer = spec.num_layers;
    spec.layer_modules(layer)
        .iter()
        .find(|m| m.base == base)
        .map_or_else(|| spec.format_of(base), |m| spec.module_format(layer, m))
}

/// The draft as a model of its own: the checkpoint's MTP layers (formats as the checkpoint
/// stores them, embedding and lm_head shared), or, for a separate draft without a description,
/// one dense decoder layer of the target's width.
pub fn draft_spec(spec: &ModelSpec, s: &SpeculativeOptions) -> ModelSpec {
    let mut d = spec.clone();
    d.name = format!("{} (draft)", spec.name);
    d.num_mtp_layers = 0;
    d.indexer_layers = Vec::new();
    d.module_formats = Default::default();
    if s.draft_model_path.is_none() && spec.num_mtp_layers > 0 {
        let n = spec.num_mtp_layers;
        d.num_layers = n;
        d.moe_layers = vec![spec.moe.is_some(); n as usize];
        d.formats = PartFormats {
            embeddings: spec.formats.embeddings,
            attention: mtp_format(spec, ModelPart::Attention),
            dense_mlp: mtp_format(spec, ModelPart::DenseMlp),
            shared_experts: mtp_format(spec, ModelPart::SharedExperts),
            routed_experts: mtp_format(spec, ModelPart::RoutedExperts),
            lm_head: spec.formats.lm_head,
            mtp: spec.formats.mtp,
        };
    } else {
        // EAGLE heads are one Llama-style decoder layer over the target's hidden states
        d.num_layers = 1;
        d.moe = None;
        d.moe_layers = vec![false];
        if d.dense_intermediate_size == 0 {
            d.dense_intermediate_size = 4 * d.hidden_size;
        }
        d.formats = PartFormats::uniform(WeightFormat::Bf16);
    }
    d
}

/// A speculative step's parts, seconds (one whole step, not per token).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SpecStep {
    pub draft_s: f64,
    pub verify_s: f64,
    pub extend_s: f64,
    /// The whole step.
    pub step_s: f64,
    /// Tokens each request gains.
    pub accept_length: f64,
}

/// Builds the draft's cost model (speculation off, fit not checked: its memory is in the
/// target's plan).
pub fn draft_model(
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
    CostModel::draft(machine, &d, layout, &o, knobs)
}

impl CostModel {
    /// One speculative step for a decode batch `st` (its `decode` requests), and the iteration
    /// cost per generated token the serving simulation takes.
    pub(super) fn spec_cost(&self, st: &BatchStats, graph: bool) -> (SpecStep, IterationCost) {
        let (Some(plan), Some(draft)) = (&self.spec, &self.draft) else {
            unreachable!("spec_cost is only called with a draft");
        };
        let b = st.decode;
        let per = |n: f64| BatchStats {
            decode: b * n,
            decode_keys: st.decode_keys * n,
            decode_context: st.decode_context * n,
            queries_per_request: n,
            ..BatchStats::default()
        };
        let topk = plan.eagle_topk.max(1) as f64;
        let first = draft.cost_pass_with(&per(1.0), graph, false);
        let rest = draft.cost_pass_with(&per(topk), graph, false);
        let draft_s = first.latency_s + (plan.num_steps.saturating_sub(1)) as f64 * rest.latency_s;
        let mut verify_st = per(plan.num_draft_tokens as f64);
        verify_st.queries_per_request /= self.verify_cache_reads_per_request();
        let verify = self.cost_pass(&verify_st, graph);
        let extend = draft.cost_pass_with(&per(plan.accept_length), graph, false);
        let step_s = draft_s + verify.latency_s + extend.latency_s;
        let l = plan.accept_length;
        let mut cost = verify.clone();
        let mut breakdown = verify.breakdown;
        breakdown.add_scaled(&first.breakdown, 1.0);
        breakdown.add_scaled(&rest.breakdown, plan.num_steps.saturating_sub(1) as f64);
        breakdown.add_scaled(&extend.breakdown, 1.0);
        let mut per_token = super::TimeBreakdown::default();
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

    /// How many times a verify pass reads each request's cache: once for all its draft tokens
    /// (SGLang's kernels, FlashMLA), or once per draft token where every token is a decode row
    /// of its own ([`crate::options::ServerOptions::verify_rows_per_draft_token`]).
    pub fn verify_cache_reads_per_request(&self) -> f64 {
        match &self.spec {
            Some(p) if self.core.verify_rereads_cache => p.num_draft_tokens.max(1) as f64,
            _ => 1.0,
        }
    }

    /// The speculative step of `running` requests at `context_tokens`, if speculation is on.
    pub fn spec_step(&self, running: u32, context_tokens: u32) -> Option<SpecStep> {
        self.spec.as_ref()?;
        let st = self.decode_stats(running, context_tokens);
        let graph = self.uses_cuda_graph(&st);
        Some(self.spec_cost(&st, graph).0)
    }

    /// The acceptance length that makes `running` requests at `context_tokens` decode at
    /// `measured_tok_s` (summed over requests) on this model: `L = measured × step(L) ÷ running`,
    /// solved by fixed-point iteration (a step's cost depends on `L` only through the draft
    /// extend pass). Not clamped: a value below 1 or above the draft tokens says the step model
    /// (or the record) is off. `None` without speculation.
    pub fn implied_accept_length(
        &self,
        running: u32,
        context_tokens: u32,
        measured_tok_s: f64,
    ) -> Option<f64> {
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
    ) -> Option<f64> {
        let plan = self.spec.as_ref()?;
        let (Some(draft), n) = (self.draft.as_ref(), running.max(1) as f64) else {
            return None;
        };
        let st = self.decode_stats(running, context_tokens);
        let graph = self.uses_cuda_graph(&st);
        let (step, _) = self.spec_cost(&st, graph);
        let fixed = step.draft_s + verify_scale * step.verify_s;
        let per = |l: f64| BatchStats {
            decode: n * l,
            decode_keys: st.decode_keys * l,
            decode_context: st.decode_context * l,
            queries_per_request: l,
            ..BatchStats::default()
        };
        let mut l = plan.accept_length;
        for _ in 0..20 {
            let extend = draft
                .cost_pass_with(&per(l.max(0.05)), graph, false)
                .latency_s;
            let next = measured_tok_s * (fixed + extend) / n;
            if (next - l).abs() < 1e-6 {
                l = next;
                break;
            }
            l = next;
        }
        Some(l)
    }

    /// Decode tok/s of `running` requests at `context_tokens` with this model's acceptance
    /// length and the verify pass's time multiplied by `verify_scale` (see
    /// [`Self::implied_accept_length_scaled`]). `None` without speculation.
    pub fn spec_tok_per_s_scaled(
        &self,
        running: u32,
        context_tokens: u32,
        verify_scale: f64,
    ) -> Option<f64> {
        let s = self.spec_step(running, context_tokens)?;
        let step_s = s.draft_s + verify_scale * s.verify_s + s.extend_s;
        (step_s > 0.0).then(|| running.max(1) as f64 * s.accept_length / step_s)
    }

    /// A decode batch of `running` requests, each at `context_tokens` (the index's top-k caps
    /// the keys a DSA layer reads).
    fn decode_stats(&self, running: u32, context_tokens: u32) -> BatchStats {
        let ctx = context_tokens.max(1) as f64;
        let cap = self.core.topk_cap.map_or(ctx, |c| ctx.min(c as f64));
        let n = running.max(1) as f64;
        BatchStats {
            decode: n,
            decode_keys: n * cap,
            decode_context: n * ctx,
            ..BatchStats::default()
        }
    }

    /// The speculative plan in force.
    pub fn spec_plan(&self) -> Option<&SpecPlan> {
        self.spec.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            }),
            ..ServerOptions::default()
        }
    }

    /// GLM-5-NVFP4 on the bare-metal preset.
    fn build(layout: Layout, opts: &ServerOptions) -> Result<CostModel, crate::error::SimError> {
        let m = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
        CostModel::new(&m, &spec, layout, opts, Knobs::default())
    }

    fn model(accept: Option<f64>) -> CostModel {
        build(Layout::tp(8), &eagle(accept)).unwrap()
    }

    #[test]
    fn the_implied_acceptance_length_inverts_the_prediction() {
        let m = model(Some(2.3));
        for c in [1u32, 16, 64] {
            let tok_s = m.steady_decode(c, 2048).tok_per_s;
            let l = model(None).implied_accept_length(c, 2048, tok_s).unwrap();
            assert!((l - 2.3).abs() < 0.01, "c={c}: {l}");
        }
    }

    #[test]
    fn more_accepted_tokens_is_never_slower_and_one_stream_gains() {
        let plain = build(Layout::tp(8), &ServerOptions::default()).unwrap();
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
        let plain = build(Layout::tp(8), &bf16(ServerOptions::default())).unwrap();
        let plain_s = |ctx| plain.steady_decode(1, ctx).cycle_s;
        let plain_growth = plain_s(131072) - plain_s(1);
        let verify_growth = |opts: &ServerOptions| {
            let m = build(Layout::tp(8), opts).unwrap();
            let v = |ctx| m.spec_step(1, ctx).unwrap();
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
            let cm = CostModel::new(&m, &spec, Layout::tp(8), &o, Knobs::default()).unwrap();
            let reads = cm.verify_cache_reads_per_request();
            let v = |ctx| cm.spec_step(4, ctx).unwrap().verify_s;
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
}
