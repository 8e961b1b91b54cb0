//! Synthetic acceptance: an acceptance length the launch forces on the engine, whatever the
//! draft proposes. Benchmarks set it so that runs on random prompts accept what a real workload
//! would (InferenceX's AgentX runs take each model's golden length from
//! `golden_al_distribution/`, measured on SPEED-Bench coding prompts). Each engine spells it its
//! own way, and both count the bonus token, as shardwise's acceptance length does:
//! - SGLang: `SGLANG_SIMULATE_ACC_LEN=3.24` in the server's environment (with
//!   `SGLANG_SIMULATE_ACC_METHOD`);
//! - vLLM: `"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 3.24` in
//!   `--speculative-config` (vllm-project/vllm#40662; `config/speculative.py`).
//!
//! Such a length is the run's acceptance, read before any prior; one outside `[1, drafts + 1]`
//! is refused, never clamped.

pub use super::record::env_value;

/// SGLang's environment variable.
pub const SGLANG_SIMULATE_ACC_LEN: &str = "SGLANG_SIMULATE_ACC_LEN";

/// vLLM's `--speculative-config` key for the method, and the value that forces acceptance.
pub const VLLM_REJECTION_SAMPLE_METHOD: &str = "rejection_sample_method";
pub const VLLM_SYNTHETIC: &str = "synthetic";

/// vLLM's `--speculative-config` key for the forced length.
pub const VLLM_SYNTHETIC_ACCEPTANCE_LENGTH: &str = "synthetic_acceptance_length";

/// vLLM's per-position alternative, which shardwise does not read (refused with what to give).
pub const VLLM_SYNTHETIC_ACCEPTANCE_RATES: &str = "synthetic_acceptance_rates";

/// A forced acceptance length checked against the drafts of a step: `Ok(length)` within
/// `[1, drafts + 1]`, else why not, naming `spelled` (the words that forced it).
pub fn checked(length: f64, drafts: u32, spelled: &str) -> Result<f64, String> {
    let most = drafts as f64 + 1.0;
    if length.is_finite() && (1.0..=most).contains(&length) {
        Ok(length)
    } else {
        Err(format!(
            "{spelled}: a forced acceptance length must lie between 1 and {most} (the {drafts} drafts and the bonus token)"
        ))
    }
}

/// The number after `"key":` in free text holding a JSON object (a record's flags quoting
/// `--speculative-config`): `Some(Err)` where the key is there without a number.
pub fn json_number(text: &str, key: &str) -> Option<Result<f64, String>> {
    let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        .collect();
    Some(
        number
            .parse::<f64>()
            .map_err(|_| format!("\"{key}\" is not followed by a number")),
    )
}

/// The string after `"key":` in free text holding a JSON object.
pub fn json_string<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    rest.split('"').next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn free_text_gives_up_its_env_values_and_json_numbers() {
        let flags = "SGLANG_SIMULATE_ACC_LEN=3.24 SGLANG_SIMULATE_ACC_METHOD=match-expected --tp 8";
        assert_eq!(env_value(flags, SGLANG_SIMULATE_ACC_LEN), Some("3.24"));
        let cfg = r#"--speculative-config '{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":3.12}'"#;
        assert_eq!(
            json_number(cfg, VLLM_SYNTHETIC_ACCEPTANCE_LENGTH),
            Some(Ok(3.12))
        );
        assert_eq!(
            json_string(cfg, VLLM_REJECTION_SAMPLE_METHOD),
            Some("synthetic")
        );
        assert_eq!(json_number(cfg, "absent"), None);
        assert!(matches!(
            json_number(
                r#"{"synthetic_acceptance_length": "x"}"#,
                VLLM_SYNTHETIC_ACCEPTANCE_LENGTH
            ),
            Some(Err(_))
        ));
    }

    #[test]
    fn a_forced_length_outside_one_to_drafts_plus_one_is_refused() {
        assert_eq!(checked(3.24, 3, "x"), Ok(3.24));
        assert_eq!(checked(4.0, 3, "x"), Ok(4.0));
        assert!(checked(4.01, 3, "x").is_err());
        assert!(checked(0.9, 3, "x").is_err());
        assert!(checked(f64::NAN, 3, "x").is_err());
    }

    proptest! {
        /// Whatever the text, reading it never panics.
        #[test]
        fn reading_any_text_never_panics(text in ".{0,200}") {
            let _ = env_value(&text, SGLANG_SIMULATE_ACC_LEN);
            let _ = json_number(&text, VLLM_SYNTHETIC_ACCEPTANCE_LENGTH);
            let _ = json_string(&text, VLLM_REJECTION_SAMPLE_METHOD);
        }
    }
}
