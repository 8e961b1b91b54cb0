//! The draft configuration a speculative record ran: what its flags state
//! ([`crate::engine::record::stated_speculation`]), the rest assumed from the engine's and the
//! model card's common recipe, and a sentence saying which is which.

use crate::engine::record::stated_speculation;
use crate::options::SpeculativeOptions;

/// The draft configuration of a record's model and engine, and why: what its `flags` state
/// ([`stated_speculation`]), the rest assumed.
pub fn draft_config(model: &str, engine: &str, flags: &str) -> (SpeculativeOptions, String) {
    let spec = |algorithm: &str, draft: Option<&str>| SpeculativeOptions {
        algorithm: algorithm.into(),
        num_steps: 3,
        eagle_topk: 1,
        num_draft_tokens: 4,
        draft_model_path: draft.map(str::to_string),
        accept_length: None,
        prompt_kind: None,
    };
    let (mut s, assumed) = if engine == "vllm" {
        (
            spec("EAGLE3", Some("EAGLE-3 draft (one decoder layer)")),
            "vLLM EAGLE-3 with 3 speculative tokens (a chain: 3 drafts, 4 verified), the common recipe",
        )
    } else if model.starts_with("glm-5") || model.starts_with("deepseek") {
        (
            spec("EAGLE", None),
            "the checkpoint's MTP layer with the model card's SGLang flags (--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4)",
        )
    } else if models::ModelSpec::preset(model).is_ok_and(|m| m.num_mtp_layers == 0) {
        // no MTP layers in the checkpoint: SGLang needs a separate draft (an EAGLE head)
        (
            spec("EAGLE3", Some("EAGLE-3 draft (one decoder layer)")),
            "a separate EAGLE-3 draft with SGLang's (3, 1, 4): the checkpoint has no MTP layers",
        )
    } else {
        (
            spec("EAGLE", None),
            "SGLang's (3, 1, 4) for MTP checkpoints",
        )
    };
    let st = stated_speculation(flags);
    if !st.is_stated() {
        return (s, format!("{assumed}; the records do not say"));
    }
    if let Some(a) = st.algorithm {
        s.algorithm = a;
    }
    s.num_steps = st.num_steps.unwrap_or(s.num_steps);
    s.eagle_topk = st.eagle_topk.unwrap_or(s.eagle_topk);
    s.num_draft_tokens = st.num_draft_tokens.unwrap_or(s.num_draft_tokens);
    (
        s.clone(),
        format!(
            "{} ({} steps, topk {}, {} draft tokens) as the record's flags state, the rest as {assumed}",
            s.algorithm, s.num_steps, s.eagle_topk, s.num_draft_tokens
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_draft_configuration_replaces_the_assumed_one() {
        let (s, why) = draft_config(
            "glm-5-nvfp4",
            "sglang",
            "--tp 8 --speculative-algorithm NEXTN --speculative-num-steps 4 --speculative-num-draft-tokens 6",
        );
        assert_eq!(
            (
                s.algorithm.as_str(),
                s.num_steps,
                s.eagle_topk,
                s.num_draft_tokens
            ),
            ("NEXTN", 4, 1, 6)
        );
        assert!(why.contains("as the record's flags state"), "{why}");
        let (s, why) = draft_config("glm-5-nvfp4", "sglang", "--tp 8 --moe-runner-backend b12x");
        assert_eq!((s.num_steps, s.num_draft_tokens), (3, 4));
        assert!(why.ends_with("the records do not say"), "{why}");
    }
}
