//! The draft configuration a speculative record ran: what its flags state
//! ([`super::record::stated_speculation`]), the rest assumed from the engine's and the model
//! card's common recipe ([`super::ServingEngine::assumed_draft`]), and a sentence saying which
//! is which.

use super::Engine;
use super::record::stated_speculation;
use crate::options::SpeculativeOptions;

/// The draft configuration of a record's model and engine, and why: what its `flags` state
/// ([`stated_speculation`]), the rest assumed.
pub fn draft_config(model: &str, engine: Engine, flags: &str) -> (SpeculativeOptions, String) {
    let (mut s, assumed) = engine.rules().assumed_draft(model);
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
    // the tokens the engine verifies for what the flags ask, as a launch line is read (SGLang
    // runs num_steps + 1 under topk 1); vLLM's count is already the chain's
    let adjusted;
    (s.num_draft_tokens, adjusted) =
        engine
            .rules()
            .verified_draft_tokens(s.num_steps, s.eagle_topk, s.num_draft_tokens);
    // each engine's own words: vLLM's num_speculative_tokens counts the drafts, SGLang's
    // --speculative-num-draft-tokens the tokens verified a step (the drafts and the root)
    let stated = match engine {
        Engine::Vllm => format!(
            "{} with num_speculative_tokens {} ({} tokens verified a step)",
            s.algorithm, s.num_steps, s.num_draft_tokens
        ),
        Engine::Sglang => format!(
            "{} (--speculative-num-steps {}, --speculative-eagle-topk {}, \
             --speculative-num-draft-tokens {})",
            s.algorithm, s.num_steps, s.eagle_topk, s.num_draft_tokens
        ),
    };
    let adjusted = adjusted.map_or(String::new(), |a| format!(" ({a})"));
    (
        s.clone(),
        format!("{stated} as the record's flags state{adjusted}, the rest as {assumed}"),
    )
}

/// The recipe's chain of 3 drafts, one token each, 4 verified, with `algorithm` and `draft`.
pub(crate) fn recipe_draft(
    algorithm: &str,
    draft: Option<&str>,
) -> crate::options::SpeculativeOptions {
    crate::options::SpeculativeOptions {
        algorithm: algorithm.into(),
        num_steps: 3,
        eagle_topk: 1,
        num_draft_tokens: 4,
        draft_model_path: draft.map(str::to_string),
        accept_length: None,
        prompt_kind: None,
        forced_by: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_draft_configuration_replaces_the_assumed_one() {
        let (s, why) = draft_config(
            "glm-5-nvfp4",
            Engine::Sglang,
            "--tp 8 --speculative-algorithm NEXTN --speculative-num-steps 4 --speculative-num-draft-tokens 6",
        );
        assert_eq!(
            (
                s.algorithm.as_str(),
                s.num_steps,
                s.eagle_topk,
                s.num_draft_tokens
            ),
            ("NEXTN", 4, 1, 5)
        );
        assert!(why.contains("as the record's flags state"), "{why}");
        // the 6 asked for is 5 under topk 1, as SGLang adjusts it and a launch line reads it
        assert!(why.contains("--speculative-num-draft-tokens 5)"), "{why}");
        assert!(why.contains("SGLang sets num_steps + 1"), "{why}");
        // vLLM's count is of drafts, said in its words (not SGLang's verified width)
        let (s, why) = draft_config(
            "qwen3-next-80b-a3b",
            Engine::Vllm,
            r#"--speculative-config '{"method": "qwen3_next_mtp", "num_speculative_tokens": 2}'"#,
        );
        assert_eq!((s.num_steps, s.num_draft_tokens), (2, 3));
        assert!(
            why.contains("num_speculative_tokens 2 (3 tokens verified a step)"),
            "{why}"
        );
        let (s, why) = draft_config(
            "glm-5-nvfp4",
            Engine::Sglang,
            "--tp 8 --moe-runner-backend b12x",
        );
        assert_eq!((s.num_steps, s.num_draft_tokens), (3, 4));
        assert!(why.ends_with("the records do not say"), "{why}");
    }
}
