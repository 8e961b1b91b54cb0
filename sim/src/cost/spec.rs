//! Speculative decoding's plan: SGLang's `--speculative-*` flags resolved (its defaults, the
//! acceptance length and where it came from), the draft as a model of its own, and the parts of
//! one step. Data only: [`super::speculative::SpeculativeModel`] costs the step.

use crate::options::SpeculativeOptions;
use models::spec::{ModelPart, PartFormats};
use models::{ModelSpec, WeightFormat};
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

/// Why speculation `s` cannot run on `spec`, the one answer every command gives: without
/// `--speculative-draft-model-path` the draft is the checkpoint's own MTP layers, and a
/// checkpoint with none (Kimi-K2.5, Qwen3, MiniMax-M2) gives the server no draft to load.
pub fn missing_draft(spec: &ModelSpec, s: &SpeculativeOptions) -> Option<String> {
    (s.draft_model_path.is_none() && spec.num_mtp_layers == 0).then(|| {
        format!(
            "{} has no MTP layers; give --speculative-algorithm EAGLE3 --speculative-draft-model-path DRAFT to model a separate draft",
            spec.name
        )
    })
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
