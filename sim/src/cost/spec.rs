//! Speculative decoding's plan: SGLang's `--speculative-*` flags resolved (its defaults, the
//! acceptance length and where it came from), the draft as a model of its own, and the parts of
//! one step. Data only: [`super::speculative::SpeculativeModel`] costs the step.

use crate::acceptance::prior::prior;
use crate::acceptance::{DraftMethod, PromptKind};
use crate::engine::{Engine, Knob};
use crate::options::SpeculativeOptions;
use models::spec::{ModelPart, PartFormats};
use models::{ModelSpec, WeightFormat};
use serde::{Deserialize, Serialize};

/// Where the acceptance length came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcceptSource {
    /// `--speculative-accept-length`.
    Given,
    /// A server log's `accept len` or a bench_serving JSONL's `accept_length`.
    Measured,
    /// Forced by the launch (synthetic acceptance, [`crate::engine::forced_acceptance`]): the
    /// run accepts exactly that.
    Forced,
    /// The published prior for the draft method and prompt kind
    /// ([`crate::acceptance::prior`]): nothing was measured.
    Prior,
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
    /// The acceptance lengths the answer should hold over: ±10% around a given or measured one,
    /// the prior's published range otherwise.
    pub accept_range: (f64, f64),
    /// The prompt kind the prior was taken for.
    pub prompt_kind: PromptKind,
    /// What drafts (the prior's key).
    pub method: DraftMethod,
    /// Which acceptance was used and where it came from, in words.
    pub accept_from: String,
    /// What drafts: `MTP layer(s) of the checkpoint (1)` or the draft model's name.
    pub draft: String,
}

impl std::fmt::Display for SpecPlan {
    /// `speculative decoding modelled: EAGLE, 3 draft passes × top-1, 4 tokens verified per
    /// step, drafted by …; acceptance length 2.53 tokens per step (prior for random prompts …)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "speculative decoding modelled: {}, {} draft pass(es) × top-{}, {} tokens verified per step, drafted by {}; acceptance length {:.2} tokens per step ({})",
            self.algorithm,
            self.num_steps,
            self.eagle_topk,
            self.num_draft_tokens,
            self.draft,
            self.accept_length,
            self.accept_from
        )?;
        if self.accept_source == AcceptSource::Prior {
            write!(
                f,
                "; give {} (your server log's `accept len`, vLLM's `Mean acceptance length`) to use yours",
                Engine::Sglang.flag(Knob::SpeculativeAcceptLength)
            )?;
        }
        Ok(())
    }
}

/// What drafts for `s` on `spec`: the checkpoint's MTP layers when no draft is named and it has
/// them, n-gram lookup for SGLang's `NGRAM`, a separate (EAGLE) head otherwise.
pub fn draft_method(spec: &ModelSpec, s: &SpeculativeOptions) -> DraftMethod {
    if s.algorithm.eq_ignore_ascii_case("NGRAM") {
        DraftMethod::Ngram
    } else if s.draft_model_path.is_none() && spec.num_mtp_layers > 0 {
        DraftMethod::Mtp
    } else {
        DraftMethod::Eagle
    }
}

/// Whether `spec` has anything to draft with under `s`: its own MTP layers, a named draft, or
/// n-gram lookup. Without them SGLang's EAGLE worker has no draft to load (and vLLM's `mtp`
/// method no layer): the one sentence `run`, `predict` and `advise --question mtp` all say, with
/// `engine`'s flags for naming a separate draft.
pub fn check_draft(spec: &ModelSpec, s: &SpeculativeOptions, engine: Engine) -> Result<(), String> {
    if spec.num_mtp_layers == 0
        && s.draft_model_path.is_none()
        && draft_method(spec, s) != DraftMethod::Ngram
    {
        return Err(format!(
            "{} has no MTP layers to draft with: give {} to model a separate draft",
            spec.name,
            engine.rules().separate_draft_words()
        ));
    }
    Ok(())
}

impl SpecPlan {
    /// SGLang's defaults where a flag is 0 (unset): (3, 1, 4) for a checkpoint with MTP layers
    /// (what SGLang picks for DeepSeek-V3-style models), (5, 4, 8) otherwise; the acceptance
    /// length from `s`, else the prior for the draft method and `s`'s prompt kind (random when
    /// unsaid) over a chain of the draft passes, at most the tokens verified.
    pub fn resolve(spec: &ModelSpec, s: &SpeculativeOptions) -> SpecPlan {
        let method = draft_method(spec, s);
        let mtp = method == DraftMethod::Mtp;
        let (d_steps, d_topk, d_tokens) = if mtp { (3, 1, 4) } else { (5, 4, 8) };
        let pick = |v: u32, d: u32| if v == 0 { d } else { v };
        let num_steps = pick(s.num_steps, d_steps);
        let eagle_topk = pick(s.eagle_topk, d_topk);
        let num_draft_tokens = pick(s.num_draft_tokens, d_tokens);
        let nd = num_draft_tokens.max(1) as f64;
        let kind = s.prompt_kind.unwrap_or(PromptKind::Random);
        let (accept_length, accept_source, accept_range, accept_from) = match s.accept_length {
            Some(l) if s.forced_by.is_some() => {
                let l = l.clamp(1.0, nd);
                let by = s.forced_by.as_deref().unwrap_or_default();
                (l, AcceptSource::Forced, (l, l), format!("forced by {by}"))
            }
            Some(l) => {
                let l = l.clamp(1.0, nd);
                let range = ((l * 0.9).clamp(1.0, nd), (l * 1.1).clamp(1.0, nd));
                (l, AcceptSource::Given, range, "given".to_string())
            }
            None => {
                let p = prior(&spec.name, method, kind);
                // a chain of `num_steps` drafts (topk branches only help the best path)
                let (lo, mid, hi) = p.lengths(num_steps);
                let c = |x: f64| x.clamp(1.0, nd);
                (c(mid), AcceptSource::Prior, (c(lo), c(hi)), p.describe())
            }
        };
        SpecPlan {
            algorithm: s.algorithm.clone(),
            num_steps,
            eagle_topk,
            num_draft_tokens,
            accept_length,
            accept_source,
            accept_range,
            prompt_kind: kind,
            method,
            accept_from,
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
    // every draft layer is full attention, whatever the target's hybrid pattern: an MTP layer of
    // a Gated-DeltaNet hybrid is built as one (vLLM's Qwen3-Next / Qwen3.5 MTP layers,
    // `layer_type="full_attention"`; SGLang's `full_attention_interval = 1`), and an EAGLE head
    // is a Llama layer. Cloned, the draft's one layer took the target's layer 0, a linear one.
    d.layer_attention = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;
    use models::spec::LayerAttention;

    fn mtp() -> SpeculativeOptions {
        SpeculativeOptions {
            algorithm: "EAGLE".into(),
            num_steps: 2,
            eagle_topk: 1,
            num_draft_tokens: 3,
            draft_model_path: None,
            accept_length: None,
            prompt_kind: None,
            forced_by: None,
        }
    }

    /// Qwen3-Next's config names no MTP layer; its checkpoint's one is a full-attention MoE layer
    /// (the draft's layer 0 was the target's, a Gated-DeltaNet one, and with no MTP layer read
    /// the draft was a dense EAGLE head).
    #[test]
    fn a_hybrid_models_mtp_draft_is_a_full_attention_moe_layer() {
        for name in ["qwen3-next-80b-a3b", "qwen3.5-397b-a17b-nvfp4"] {
            let spec = ModelSpec::preset(name).unwrap();
            assert_eq!(spec.layer_attention(0), LayerAttention::Linear, "{name}");
            assert_eq!(draft_method(&spec, &mtp()), DraftMethod::Mtp, "{name}");
            let d = draft_spec(&spec, &mtp());
            assert_eq!(d.num_layers, 1, "{name}");
            assert_eq!(d.layer_attention(0), LayerAttention::Full, "{name}");
            assert!(!d.is_hybrid_attention(), "{name}");
            assert_eq!(d.linear_state_bytes_per_request_in(1, 0..1), 0, "{name}");
            assert_eq!(d.moe_layers, vec![true], "{name}");
        }
    }
}
