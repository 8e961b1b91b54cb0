//! Speculative decoding of a record with `parallel.mtp: true`: the draft configuration its flags
//! state, the rest assumed ([`crate::engine::draft::draft_config`]), and the acceptance length it was
//! predicted with: the one the source measured (the record's `accept_length` metric,
//! [`super::acceptance::ACCEPT_LENGTH_METRIC`], or its vLLM rate
//! [`super::acceptance::ACCEPT_RATE_METRIC`]) or, where the source gives none, the published
//! prior for the draft method and the record's prompt kind ([`crate::acceptance::prior`]),
//! which the scoreboard flags "prior" in the row.

use super::Record;
use super::acceptance::MeasuredAcceptance;
use crate::acceptance::PromptKind;
use crate::engine::Engine;
use crate::engine::draft::draft_config;
use crate::options::SpeculativeOptions;
use serde::Serialize;

/// Where a record's acceptance length came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcceptOrigin {
    /// The source published the engine's own acceptance for this run.
    Measured,
    /// The source published the range its runs' acceptance spanned, not each run's: the middle
    /// of that range.
    PublishedRange,
    /// The published prior for the draft method and prompt kind: the row is flagged "prior".
    Assumed,
}

impl AcceptOrigin {
    /// The word the scoreboard prints.
    pub fn name(self) -> &'static str {
        match self {
            AcceptOrigin::Measured => "measured",
            AcceptOrigin::PublishedRange => "published range",
            AcceptOrigin::Assumed => "prior",
        }
    }
}

/// The speculation a record ran, as shardwise simulates it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordSpeculation {
    /// The draft configuration; `accept_length` is the measured one, `None` for the default.
    pub options: SpeculativeOptions,
    pub accept: AcceptOrigin,
    /// What was stated and what assumed, in words.
    pub draft: String,
    /// Where the measured length is its pool's mean ([`super::acceptance::Pooled`]): which pool,
    /// and the cell's own figure, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooled: Option<String>,
}

/// The prompts a record's client sent: `llm_decode_bench`'s shared document (`synthetic`),
/// ShareGPT conversations (`natural`), SGLang's `bench_serving` random dataset (ShareGPT text
/// cut or repeated to length, `padded-text`; its `random-ids` sends token ids), else random
/// tokens (vLLM's and InferenceX's clients' random dataset).
pub fn record_prompt_kind(r: &Record, streams_share_prompt: bool) -> PromptKind {
    let dataset = r
        .workload
        .dataset
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    let sglang_client =
        dataset.contains("sglang bench_serving") || dataset.contains("sglang.bench_serving");
    if streams_share_prompt || dataset.contains("decode matrix") {
        PromptKind::Synthetic
    } else if sglang_client && dataset.contains("random") && !dataset.contains("random-ids") {
        PromptKind::PaddedText
    } else if dataset.contains("sharegpt") {
        PromptKind::Natural
    } else {
        PromptKind::Random
    }
}

/// The speculation of record `r` (MTP on), simulated on `model` as `engine` runs it, its client
/// sending prompts of `kind`: the record's own acceptance (length, or vLLM rate over the draft's
/// tokens) before the prior.
pub fn record_speculation(
    r: &Record,
    model: &str,
    engine: Engine,
    kind: PromptKind,
) -> RecordSpeculation {
    let flags = r.engine.flags.as_deref().unwrap_or("");
    let (mut options, mut draft) = draft_config(model, engine, flags);
    let drafted = options.num_draft_tokens.saturating_sub(1);
    let mut measured = MeasuredAcceptance::default().of(r, drafted);
    // a launch that forces its acceptance (synthetic acceptance) accepts exactly that
    if measured.is_none() {
        match engine
            .rules()
            .forced_accept_length(flags, options.num_steps)
        {
            Some(Ok(l)) => {
                measured = Some(l);
                draft.push_str(&format!(
                    "; acceptance length {l} forced by the launch's synthetic acceptance"
                ));
                options.forced_by = Some(format!("the record's flags ({l})"));
            }
            Some(Err(why)) => draft.push_str(&format!("; {why}: the prior stands")),
            None => {}
        }
    }
    options.accept_length = measured;
    options.prompt_kind = Some(kind);
    RecordSpeculation {
        options,
        accept: if measured.is_some() {
            AcceptOrigin::Measured
        } else {
            AcceptOrigin::Assumed
        },
        draft,
        pooled: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::RecordSet;
    use std::path::Path;

    fn record(metrics: &str) -> Record {
        let text = format!(
            r#"{{"records": [{{"id": "a", "engine": {{"name": "sglang",
            "flags": "--tp 8 --speculative-num-steps 2 --speculative-num-draft-tokens 3"}},
            "parallel": {{"tp": 8, "mtp": true}}, "metrics": {{{metrics}}}}}]}}"#
        );
        RecordSet::parse(text.as_bytes(), Path::new("r.json"))
            .unwrap()
            .records
            .remove(0)
    }

    fn spec(metrics: &str) -> RecordSpeculation {
        record_speculation(
            &record(metrics),
            "glm-5-nvfp4",
            Engine::Sglang,
            PromptKind::Synthetic,
        )
    }

    #[test]
    fn a_published_acceptance_is_used_else_the_prior() {
        let s = spec(r#""output_tok_s": "100", "accept_length": "2.4""#);
        assert_eq!(s.accept, AcceptOrigin::Measured);
        assert_eq!(s.options.accept_length, Some(2.4));
        assert_eq!((s.options.num_steps, s.options.num_draft_tokens), (2, 3));
        let s = spec(r#""output_tok_s": "100""#);
        assert_eq!(s.accept, AcceptOrigin::Assumed);
        assert_eq!(s.options.accept_length, None);
        assert_eq!(s.options.prompt_kind, Some(PromptKind::Synthetic));
        assert!(
            s.draft.contains("as the record's flags state"),
            "{}",
            s.draft
        );
    }

    /// The client's random dataset read as the client builds it: SGLang's `bench_serving`
    /// `random` cuts or repeats ShareGPT text to length (a draft follows it), its `random-ids`,
    /// vLLM's `bench serve` and InferenceX's client send token ids.
    #[test]
    fn sglangs_random_dataset_is_padded_text_not_random_tokens() {
        let kind = |dataset: &str| {
            let mut r = record("");
            r.workload.dataset = Some(dataset.into());
            record_prompt_kind(&r, false)
        };
        for sglang in [
            "sglang bench_serving random 8192/1024 --random-range-ratio 1.0",
            "python3 -m sglang.bench_serving --backend sglang --dataset-name random --random-input 2500",
        ] {
            assert_eq!(kind(sglang), PromptKind::PaddedText, "{sglang}");
        }
        for ids in [
            "python3 -m sglang.bench_serving --dataset-name random-ids --random-input 1024",
            "vllm bench serve --dataset-name random --random-input 2048",
            "InferenceX random 8k/1k",
        ] {
            assert_eq!(kind(ids), PromptKind::Random, "{ids}");
        }
        assert_eq!(
            kind("sglang.bench_serving --dataset-name sharegpt"),
            PromptKind::Natural
        );
    }

    /// A record's own vLLM rate (`spec_accept_rate`, accepted ÷ drafted) is used before any
    /// prior: 0.35 of the 2 drafted tokens its flags state is 1.70 tokens a step
    /// (`sim/tests/implied_accept.rs` checks the prediction uses it).
    #[test]
    fn a_records_own_rate_is_used_before_the_prior() {
        let s = spec(r#""output_tok_s": "100", "spec_accept_rate": "0.35""#);
        assert_eq!(s.accept, AcceptOrigin::Measured);
        assert!((s.options.accept_length.unwrap() - 1.70).abs() < 1e-9);
        // a percent spelling reads the same; a rate outside 0–1 is no rate
        let pct = spec(r#""output_tok_s": "100", "spec_accept_rate": "35%""#);
        assert_eq!(pct.options.accept_length, s.options.accept_length);
        let bad = spec(r#""output_tok_s": "100", "spec_accept_rate": "135""#);
        assert_eq!(bad.accept, AcceptOrigin::Assumed);
    }

    /// A launch that forces its acceptance (SGLang's `SGLANG_SIMULATE_ACC_LEN`, vLLM's synthetic
    /// rejection sampling) runs at that length, measured-grade, before any prior; a forced length
    /// no step can accept is said and the prior stands.
    #[test]
    fn a_forced_acceptance_is_the_records_own() {
        let forced = |engine: Engine, flags: &str| {
            let mut r = record("");
            r.engine.flags = Some(flags.into());
            record_speculation(&r, "glm-5-nvfp4", engine, PromptKind::Random)
        };
        let s = forced(
            Engine::Sglang,
            "SGLANG_SIMULATE_ACC_LEN=3.24 --tp 8 --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
        );
        assert_eq!(
            (s.accept, s.options.accept_length),
            (AcceptOrigin::Measured, Some(3.24))
        );
        assert!(s.draft.contains("forced"), "{}", s.draft);
        let v = forced(
            Engine::Vllm,
            r#"--speculative-config '{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.99}'"#,
        );
        assert_eq!(
            (v.accept, v.options.accept_length),
            (AcceptOrigin::Measured, Some(2.99))
        );
        let too_long = forced(
            Engine::Vllm,
            r#"--speculative-config '{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 4.5}'"#,
        );
        assert_eq!(too_long.accept, AcceptOrigin::Assumed);
        assert!(
            too_long.draft.contains("the prior stands"),
            "{}",
            too_long.draft
        );
        // another engine's spelling forces nothing
        let other = forced(Engine::Vllm, "SGLANG_SIMULATE_ACC_LEN=3.24");
        assert_eq!(other.accept, AcceptOrigin::Assumed);
    }
}
