//! Speculative decoding's acceptance in one vocabulary: the converter between the engines'
//! conventions ([`length_from_rate`], [`length_from_counts`], [`length_from_positions`],
//! [`chain_length`]), their log lines and counters ([`lines`]), and the prior used when nothing
//! was measured ([`prior`]).
//!
//! shardwise works in the **acceptance length** `L`: tokens a request gains per speculative step,
//! the bonus token (the target's own next token, always kept) included, so `1 ≤ L ≤ k + 1` for
//! `k` drafted tokens a step. The engines' conventions, each from its source:
//! - vLLM's **acceptance rate** (`v1/spec_decode/metrics.py`, `SpecDecodingLogging.log`: `Avg
//!   Draft acceptance rate = accepted ÷ drafted tokens`; the Prometheus counters
//!   `vllm:spec_decode_num_accepted_tokens` ÷ `vllm:spec_decode_num_draft_tokens`): a share of
//!   the drafted tokens, `L = 1 + k × rate` ([`length_from_rate`]);
//! - vLLM's **mean acceptance length** (same function: `1 + accepted ÷ num_drafts`, counter
//!   `vllm:spec_decode_num_drafts`): already `L` ([`length_from_counts`]);
//! - vLLM's **per-position acceptance rates** (`Per-position acceptance rate: r1, r2, …`, the
//!   share of drafts whose i-th token was accepted): `L = 1 + Σ rᵢ` ([`length_from_positions`]);
//! - SGLang's `accept len` in its decode log lines (`scheduler_metrics_mixin.py`:
//!   `spec_num_accepted_tokens ÷ spec_num_forward_ct`, the bonus token counted) and
//!   bench_serving's `accept_length`: already `L`;
//! - TensorRT-LLM's forced accepted tokens count drafts only: `L − 1` (InferenceX
//!   `golden_al_distribution/README.md` notes the off-by-one).
//!
//! A draft that accepts each position with probability `p` given the one before was accepted
//! (the chain of an MTP layer or EAGLE head) gives `L = Σ_{i=0..k} pⁱ` ([`chain_length`]): the
//! form the prior's published curves follow within 0.05 tokens at 1–4 drafts.

pub mod lines;
pub mod prior;

use serde::{Deserialize, Serialize};

/// Why an acceptance figure cannot be converted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AcceptError {
    #[error(
        "acceptance rate {rate} with {k} drafted tokens a step: the rate is accepted ÷ drafted tokens, 0 to 1, and at least one token is drafted"
    )]
    Rate { rate: f64, k: u32 },
    #[error(
        "acceptance length {length}: at least 1 (the bonus token) and at most 64 tokens a step"
    )]
    Length { length: f64 },
}

/// The kind of prompts a run sends: what its draft's acceptance depends on most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum PromptKind {
    /// Random token ids (vLLM's `bench serve --dataset-name random`, SGLang's `random-ids`,
    /// InferenceX's client): nothing for a draft to follow.
    Random,
    /// Conversation text cut or repeated to the asked length: SGLang's `bench_serving
    /// --dataset-name random` takes each prompt's tokens from a ShareGPT conversation and
    /// repeats them until the prompt is long enough (`python/sglang/benchmark/datasets/random.py`,
    /// `random_sample`; lukealonso/sglang c70c22a1). Not random tokens: a draft follows it.
    PaddedText,
    /// Synthetic decode benches (`llm_decode_bench.py`: one reference document, the same
    /// generation prompt for every stream).
    Synthetic,
    /// Natural conversation text (ShareGPT, MT-Bench, prose).
    Natural,
    /// Code (SPEED-Bench's coding category, agentic coding).
    Code,
    /// Step-by-step reasoning (GSM8K-style, thinking on).
    Reasoning,
}

impl PromptKind {
    /// Every kind, in the order the help lists them.
    pub const ALL: [PromptKind; 6] = [
        PromptKind::Random,
        PromptKind::PaddedText,
        PromptKind::Synthetic,
        PromptKind::Natural,
        PromptKind::Code,
        PromptKind::Reasoning,
    ];

    /// The spelling `--prompt-kind` takes.
    pub fn name(self) -> &'static str {
        match self {
            PromptKind::Random => "random",
            PromptKind::PaddedText => "padded-text",
            PromptKind::Synthetic => "synthetic",
            PromptKind::Natural => "natural",
            PromptKind::Code => "code",
            PromptKind::Reasoning => "reasoning",
        }
    }

    /// Reads a `--prompt-kind` value.
    pub fn parse(s: &str) -> Option<PromptKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// What drafts the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DraftMethod {
    /// The checkpoint's own MTP / NEXTN layer(s).
    Mtp,
    /// A separate EAGLE / EAGLE-3 head.
    Eagle,
    /// Prompt-lookup n-gram drafting (no draft model).
    Ngram,
}

impl DraftMethod {
    /// The words the notes use.
    pub fn name(self) -> &'static str {
        match self {
            DraftMethod::Mtp => "MTP layer",
            DraftMethod::Eagle => "EAGLE-3 head",
            DraftMethod::Ngram => "n-gram",
        }
    }
}

/// vLLM's acceptance rate (accepted ÷ drafted tokens) with `k` tokens drafted a step, as a
/// length: `1 + k × rate`.
pub fn length_from_rate(rate: f64, k: u32) -> Result<f64, AcceptError> {
    if !(0.0..=1.0).contains(&rate) || k == 0 {
        return Err(AcceptError::Rate { rate, k });
    }
    Ok(1.0 + k as f64 * rate)
}

/// The acceptance rate of length `length` with `k` tokens drafted a step (`(L − 1) ÷ k`).
pub fn rate_from_length(length: f64, k: u32) -> f64 {
    (length - 1.0) / k.max(1) as f64
}

/// vLLM's mean acceptance length from its counters: `1 + accepted tokens ÷ drafts` (a draft is
/// one request's step, of `k` tokens); `None` without drafts.
pub fn length_from_counts(accepted_tokens: f64, drafts: f64) -> Option<f64> {
    (drafts > 0.0 && accepted_tokens >= 0.0).then(|| 1.0 + accepted_tokens / drafts)
}

/// vLLM's per-position acceptance rates as a length: `1 + Σ rᵢ`.
pub fn length_from_positions(rates: &[f64]) -> f64 {
    1.0 + rates.iter().sum::<f64>()
}

/// A length checked to be one (at least the bonus token, at most 64 tokens).
pub fn checked_length(length: f64) -> Result<f64, AcceptError> {
    if (1.0..=64.0).contains(&length) {
        Ok(length)
    } else {
        Err(AcceptError::Length { length })
    }
}

/// The acceptance length of a chain of `k` drafts each accepted with probability `p` given the
/// previous one was: `Σ_{i=0..k} pⁱ`.
pub fn chain_length(p: f64, k: u32) -> f64 {
    (0..=k).map(|i| p.powi(i as i32)).sum()
}

/// The chain probability that gives `length` over `k` drafts ([`chain_length`] inverted by
/// bisection; 0 and 1 at the ends).
pub fn chain_probability(length: f64, k: u32) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    if length <= 1.0 {
        return 0.0;
    }
    if length >= (k + 1) as f64 {
        return 1.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if chain_length(mid, k) < length {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// vLLM: `Avg Draft acceptance rate` 49.4% with 3 speculative tokens is 2.48 tokens a step.
    #[test]
    fn a_vllm_rate_is_one_plus_k_times_the_rate() {
        assert!((length_from_rate(0.494, 3).unwrap() - 2.482).abs() < 1e-9);
        assert!((rate_from_length(2.482, 3) - 0.494).abs() < 1e-9);
        let e = length_from_rate(1.4, 3).unwrap_err().to_string();
        assert!(e.contains("0 to 1") && !e.contains('\n'), "{e}");
        assert!(length_from_rate(0.5, 0).is_err());
    }

    /// vLLM's counters: 4062 accepted over 4113 drafts of 2 tokens is 1.99 tokens a step and a
    /// rate of 49.4% (vllm-project/vllm PR 41044's DeepSeek-V4-Flash row: 4062 / 8226 drafted).
    #[test]
    fn counters_and_positions_give_the_same_length() {
        let l = length_from_counts(4062.0, 8226.0 / 2.0).unwrap();
        assert!((l - 1.9876).abs() < 1e-3, "{l}");
        assert!((length_from_rate(4062.0 / 8226.0, 2).unwrap() - l).abs() < 1e-9);
        assert_eq!(length_from_counts(10.0, 0.0), None);
        assert!((length_from_positions(&[0.7002, 0.2874]) - 1.9876).abs() < 1e-3);
    }

    /// InferenceX's GLM-5.2 MTP curve (1.84 / 2.50 / 2.99 / 3.33 at 1–4 drafts) is a chain of
    /// 0.8 within 0.07 tokens.
    #[test]
    fn a_chain_of_point_eight_follows_the_published_mtp_curve() {
        for (k, al) in [(1, 1.84), (2, 2.50), (3, 2.99), (4, 3.33)] {
            assert!((chain_length(0.8, k) - al).abs() < 0.07, "k={k}");
        }
        assert!((chain_probability(chain_length(0.61, 3), 3) - 0.61).abs() < 1e-9);
        assert_eq!(chain_probability(0.5, 3), 0.0);
        assert_eq!(chain_probability(9.0, 3), 1.0);
    }

    #[test]
    fn prompt_kinds_read_back_their_names() {
        for k in PromptKind::ALL {
            assert_eq!(PromptKind::parse(k.name()), Some(k));
        }
        assert_eq!(PromptKind::parse("sharegpt"), None);
    }

    proptest! {
        #[test]
        fn rate_and_length_round_trip(rate in 0.0f64..=1.0, k in 1u32..16) {
            let l = length_from_rate(rate, k).unwrap();
            prop_assert!(l >= 1.0 && l <= (k + 1) as f64);
            prop_assert!((rate_from_length(l, k) - rate).abs() < 1e-9);
        }

        #[test]
        fn chain_lengths_invert(p in 0.0f64..0.999, k in 1u32..9) {
            let l = chain_length(p, k);
            prop_assert!((chain_probability(l, k) - p).abs() < 1e-6);
        }
    }
}
