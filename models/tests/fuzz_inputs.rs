//! The parsers of a user's files never panic on arbitrary bytes: HF `config.json` (with and
//! without an `hf_quant_config.json`) and machine profiles, each fed random bytes and real files
//! with random bytes overwritten. Errors name the file and fit on one line. A fixed case budget
//! keeps `cargo test` short.

use models::quant::parse_hf_quant_config;
use models::{MachineProfile, ModelSpec};
use proptest::prelude::*;
use std::path::Path;

const GLM5: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/hf-configs/GLM-5-NVFP4.json"
));
const GLM5_QUANT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/hf-configs/GLM-5-NVFP4.hf_quant_config.json"
));
const PROFILE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../probe/profiles/h200-x2-quick.json"
));

/// `text` with bytes overwritten at (position mod length).
fn overwrite(text: &str, edits: &[(usize, u8)]) -> String {
    let mut b = text.as_bytes().to_vec();
    for &(p, x) in edits {
        let i = p % b.len();
        b[i] = x;
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn one_line_naming(e: &impl std::fmt::Display, file: &str) -> Result<(), TestCaseError> {
    let msg = e.to_string();
    prop_assert!(msg.contains(file), "error names {}: {}", file, msg);
    prop_assert!(!msg.contains('\n'), "one line: {}", msg);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn hf_config_parser_takes_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = ModelSpec::from_hf_json(&text, Path::new("c/config.json"), None, "fuzz") {
            one_line_naming(&e, "c/config.json")?;
        }
        if let Err(e) = parse_hf_quant_config(&text, Path::new("c/hf_quant_config.json")) {
            one_line_naming(&e, "c/hf_quant_config.json")?;
        }
    }

    #[test]
    fn hf_configs_with_bytes_overwritten(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let cfg = overwrite(GLM5, &edits);
        let q = overwrite(GLM5_QUANT, &edits);
        let scheme = parse_hf_quant_config(GLM5_QUANT, Path::new("q.json")).ok();
        let _ = ModelSpec::from_hf_json(&cfg, Path::new("c/config.json"), scheme, "fuzz");
        if let Ok(s) = parse_hf_quant_config(&q, Path::new("q.json")) {
            let _ = ModelSpec::from_hf_json(GLM5, Path::new("c/config.json"), Some(s), "fuzz");
        }
    }

    #[test]
    fn profile_parser_takes_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = MachineProfile::from_json_str(&text, Path::new("p.json")) {
            one_line_naming(&e, "p.json")?;
        }
    }

    #[test]
    fn profiles_with_bytes_overwritten(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let text = overwrite(PROFILE, &edits);
        if let Err(e) = MachineProfile::from_json_str(&text, Path::new("p.json")) {
            one_line_naming(&e, "p.json")?;
        }
    }
}
