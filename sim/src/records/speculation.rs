//! Speculative decoding of a record with `parallel.mtp: true`: the draft configuration its flags
//! state, the rest assumed ([`super::draft::draft_config`]), and the acceptance length it was
//! predicted with: the one the source measured (the record's `accept_length` metric,
//! [`super::acceptance::ACCEPT_LENGTH_METRIC`]) or, where the source gives none, the model's
//! default for that draft kind ([`crate::cost::spec::DEFAULT_MTP_ACCEPTANCE`],
//! [`crate::cost::spec::DEFAULT_EAGLE_ACCEPTANCE`]), which the scoreboard flags "assumed" in
//! the row.

use super::Record;
use super::acceptance::MeasuredAcceptance;
use super::draft::draft_config;
use crate::engines::Engine;
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
    /// The model's default for the draft kind: the row is flagged "assumed".
    Assumed,
}

impl AcceptOrigin {
    /// The word the scoreboard prints.
    pub fn name(self) -> &'static str {
        match self {
            AcceptOrigin::Measured => "measured",
            AcceptOrigin::PublishedRange => "published range",
            AcceptOrigin::Assumed => "assumed",
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
}

/// The speculation of record `r` (MTP on), simulated on `model` as `engine` runs it.
pub fn record_speculation(r: &Record, model: &str, engine: Engine) -> RecordSpeculation {
    let flags = r.engine.flags.as_deref().unwrap_or("");
    let (mut options, draft) = draft_config(model, engine.name(), flags);
    let measured = MeasuredAcceptance::default().of(r);
    options.accept_length = measured;
    RecordSpeculation {
        options,
        accept: if measured.is_some() {
            AcceptOrigin::Measured
        } else {
            AcceptOrigin::Assumed
        },
        draft,
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

    #[test]
    fn a_published_acceptance_is_used_else_the_default_is_assumed() {
        let s = record_speculation(
            &record(r#""output_tok_s": "100", "accept_length": "2.4""#),
            "glm-5-nvfp4",
            Engine::Sglang,
        );
        assert_eq!(s.accept, AcceptOrigin::Measured);
        assert_eq!(s.options.accept_length, Some(2.4));
        assert_eq!((s.options.num_steps, s.options.num_draft_tokens), (2, 3));
        let s = record_speculation(
            &record(r#""output_tok_s": "100""#),
            "glm-5-nvfp4",
            Engine::Sglang,
        );
        assert_eq!(s.accept, AcceptOrigin::Assumed);
        assert_eq!(s.options.accept_length, None);
        assert!(
            s.draft.contains("as the record's flags state"),
            "{}",
            s.draft
        );
    }
}
