//! Bad configs and layouts give one error naming the file and the field, never a panic.

use models::{Layout, ModelSpec, ModelsError};
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::path::Path;

const GLM5: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/hf-configs/GLM-5.json"
));
const LLAMA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/hf-configs/Meta-Llama-3.1-70B.json"
));
const KIMI25: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/hf-configs/Kimi-K2.5.json"
));

fn parse(text: &str) -> Result<ModelSpec, ModelsError> {
    ModelSpec::from_hf_json(text, Path::new("cfg/config.json"), None, "test")
}

fn with(base: &str, key: &str, value: Option<Value>) -> String {
    let mut v: Map<String, Value> = serde_json::from_str(base).unwrap();
    match value {
        Some(x) => v.insert(key.into(), x),
        None => v.remove(key),
    };
    serde_json::to_string(&v).unwrap()
}

/// The error message names the file and the field.
fn assert_field_error(text: &str, field: &str) {
    let err = parse(text).expect_err("should be rejected");
    let msg = err.to_string();
    assert!(msg.contains("cfg/config.json"), "names the file: {msg}");
    assert!(msg.contains(field), "names `{field}`: {msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn truncated_json_is_a_json_error_naming_the_file() {
    let err = parse(&GLM5[..GLM5.len() / 2]).unwrap_err();
    assert!(matches!(err, ModelsError::Json { .. }), "{err}");
    assert!(err.to_string().contains("cfg/config.json"));
    assert!(matches!(
        parse("[1,2]").unwrap_err(),
        ModelsError::Json { .. }
    ));
}

#[test]
fn missing_zero_negative_or_wrongly_typed_fields() {
    assert_field_error(&with(GLM5, "hidden_size", None), "hidden_size");
    assert_field_error(&with(GLM5, "hidden_size", Some(0.into())), "hidden_size");
    assert_field_error(
        &with(GLM5, "num_hidden_layers", Some((-1).into())),
        "num_hidden_layers",
    );
    assert_field_error(
        &with(GLM5, "kv_lora_rank", Some("512".into())),
        "kv_lora_rank",
    );
    assert_field_error(
        &with(GLM5, "n_routed_experts", Some(1e30.into())),
        "n_routed_experts",
    );
    assert_field_error(&with(GLM5, "index_topk", None), "index_topk");
    assert_field_error(
        &with(GLM5, "num_experts_per_tok", Some(300.into())),
        "num_experts_per_tok",
    );
    assert_field_error(&with(GLM5, "vocab_size", Some(12.5.into())), "vocab_size");
    assert_field_error(
        &with(GLM5, "tie_word_embeddings", Some("no".into())),
        "tie_word_embeddings",
    );
    assert_field_error(
        &with(LLAMA, "num_key_value_heads", Some(7.into())),
        "num_key_value_heads",
    );
    assert_field_error(
        &with(GLM5, "mlp_layer_types", Some(vec!["dense"; 3].into())),
        "mlp_layer_types",
    );
    assert_field_error(
        &with(
            GLM5,
            "quantization_config",
            Some(serde_json::json!({"quant_method": "awq9"})),
        ),
        "quantization_config.quant_method",
    );
}

#[test]
fn wrapped_configs_name_the_text_config_field() {
    let mut v: Value = serde_json::from_str(KIMI25).unwrap();
    v["text_config"]
        .as_object_mut()
        .unwrap()
        .remove("kv_lora_rank");
    assert_field_error(&v.to_string(), "text_config.kv_lora_rank");
}

#[test]
fn unknown_model_type_lists_the_supported_ones() {
    let err = parse(&with(GLM5, "model_type", Some("falcon_h1".into()))).unwrap_err();
    assert!(matches!(err, ModelsError::UnsupportedModelType { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("falcon_h1") && msg.contains("glm_moe_dsa") && msg.contains("cfg/config.json")
    );
}

#[test]
fn missing_file_is_an_io_error_with_the_path() {
    let err = ModelSpec::from_hf_config(Path::new("/nonexistent/x.json")).unwrap_err();
    assert!(matches!(err, ModelsError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/x.json"));
}

#[test]
fn impossible_layouts_say_why() {
    let glm = ModelSpec::preset("glm-5-nvfp4").unwrap();
    let reason = |l: Layout| match l.validate(&glm) {
        Err(ModelsError::ImpossibleLayout { reason, .. }) => reason,
        other => panic!("{l} should be impossible, got {other:?}"),
    };
    assert!(reason(Layout::tp(3)).contains("heads"));
    assert!(
        reason(Layout {
            tp: 8,
            pp: 1,
            ep: 3,
            dp_attention: false
        })
        .contains("ep-size")
    );
    let many_experts = Layout {
        tp: 8,
        pp: 1,
        ep: 8,
        dp_attention: false,
    };
    assert!(many_experts.validate(&glm).is_ok());
    let mut odd = glm.clone();
    odd.moe.as_mut().unwrap().num_routed_experts = 257;
    assert!(matches!(
        many_experts.validate(&odd),
        Err(ModelsError::ImpossibleLayout { reason, .. }) if reason.contains("experts")
    ));
    assert!(
        reason(Layout {
            tp: 1,
            pp: 100,
            ep: 1,
            dp_attention: false
        })
        .contains("layers")
    );
    assert!(
        reason(Layout {
            tp: 0,
            pp: 1,
            ep: 1,
            dp_attention: false
        })
        .contains("at least 1")
    );
    let tp4pp2 = Layout {
        tp: 4,
        pp: 2,
        ep: 1,
        dp_attention: false,
    };
    assert!(tp4pp2.validate_for_gpus(&glm, 8).is_ok());
    let err = tp4pp2.validate_for_gpus(&glm, 4).unwrap_err().to_string();
    assert!(err.contains("8 GPUs") && err.contains("has 4"), "{err}");
    // A dense model has no experts to spread.
    let llama = ModelSpec::preset("llama-3.1-70b").unwrap();
    assert!(
        Layout {
            tp: 8,
            pp: 1,
            ep: 2,
            dp_attention: false
        }
        .validate(&llama)
        .is_err()
    );
    // GQA with fewer KV heads than TP is allowed (SGLang replicates them) when TP is a multiple.
    let qwen = ModelSpec::preset("qwen3-235b-a22b-nvfp4").unwrap(); // 4 KV heads
    assert!(Layout::tp(8).validate(&qwen).is_ok());
    // Block-FP8 experts must be sliced in whole 128-blocks: Qwen3-235B-FP8 (1536-wide experts)
    // fails at TP8 (192 per GPU) but runs at TP4 (384) or with EP8 (whole experts).
    let mut qwen_fp8 = qwen.clone();
    qwen_fp8.formats = models::spec::PartFormats::uniform(models::WeightFormat::Fp8 { block: 128 });
    let err = Layout::tp(8).validate(&qwen_fp8).unwrap_err().to_string();
    assert!(
        err.contains("FP8 block size 128") && err.contains("192"),
        "{err}"
    );
    assert!(Layout::tp(4).validate(&qwen_fp8).is_ok());
    assert!(
        Layout {
            tp: 8,
            pp: 1,
            ep: 8,
            dp_attention: false
        }
        .validate(&qwen_fp8)
        .is_ok()
    );
    // DeepSeek-V3's block-FP8 experts (2048 wide) slice fine at TP8.
    let ds = ModelSpec::preset("deepseek-v3-fp8").unwrap();
    assert!(Layout::tp(8).validate(&ds).is_ok());
}

/// A mutation of a config: what to do to one key.
#[derive(Debug, Clone)]
enum Mutation {
    Drop,
    Set(Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        Just(Mutation::Drop),
        Just(Mutation::Set(0.into())),
        Just(Mutation::Set((-1).into())),
        Just(Mutation::Set(u64::MAX.into())),
        Just(Mutation::Set(1e300.into())),
        Just(Mutation::Set("seven".into())),
        Just(Mutation::Set(Value::Null)),
        Just(Mutation::Set(serde_json::json!([1, "x"]))),
        Just(Mutation::Set(serde_json::json!({"a": 1}))),
        (1u64..100_000).prop_map(|n| Mutation::Set(n.into())),
    ]
}

fn mutate(base: &str, edits: &[(usize, Mutation)], nested: bool) -> String {
    let mut v: Value = serde_json::from_str(base).unwrap();
    let target = if nested {
        v.get_mut("text_config").unwrap()
    } else {
        &mut v
    };
    let obj = target.as_object_mut().unwrap();
    let keys: Vec<String> = obj.keys().cloned().collect();
    for (i, m) in edits {
        let key = &keys[i % keys.len()];
        match m {
            Mutation::Drop => {
                obj.remove(key);
            }
            Mutation::Set(x) => {
                obj.insert(key.clone(), x.clone());
            }
        }
    }
    v.to_string()
}

/// Exercises every derived quantity and a few layouts on a spec that loaded.
fn use_spec(s: &ModelSpec) {
    let _ = s.total_params();
    let _ = s.weight_bytes_by_part();
    let _ = s.active_params_per_token();
    let _ = s.kv_bytes_per_token(models::KvDtype::Bf16);
    let _ = s.flops_per_token_decode(1 << 20);
    let _ = s.flops_per_token_prefill(1 << 20);
    for l in [
        Layout::tp(8),
        Layout {
            tp: 4,
            pp: 2,
            ep: 4,
            dp_attention: true,
        },
    ] {
        if let Ok(f) = models::footprint::footprint(s, &l) {
            let _ = f.kv_bytes_per_token_per_gpu(s, models::KvDtype::Fp8);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn loader_never_panics_on_mutated_configs(
        which in 0usize..3,
        edits in proptest::collection::vec((0usize..200, mutation()), 1..6),
        cut in proptest::option::of(0usize..4000),
    ) {
        let (base, nested) = [(GLM5, false), (LLAMA, false), (KIMI25, true)][which];
        let mut text = mutate(base, &edits, nested);
        if let Some(c) = cut {
            let c = c.min(text.len());
            // Cut on a char boundary (the configs are ASCII, mutations too).
            text.truncate(c);
        }
        match parse(&text) {
            Ok(spec) => use_spec(&spec),
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("cfg/config.json"), "error names the file: {}", msg);
                prop_assert!(!msg.contains('\n'));
            }
        }
    }
}

/// A rotary fraction outside (0, 1] or a `rotary_dim` wider than the head is refused by name;
/// a valid one sets how many dimensions RoPE's cache holds per position.
#[test]
fn rotary_fractions_are_checked() {
    for bad in [Value::from(1.5), Value::from(0.0), Value::from("half")] {
        assert_field_error(
            &with(LLAMA, "partial_rotary_factor", Some(bad)),
            "partial_rotary_factor",
        );
    }
    assert_field_error(
        &with(LLAMA, "rotary_dim", Some(Value::from(4096))),
        "rotary_dim",
    );
    let half = parse(&with(
        LLAMA,
        "partial_rotary_factor",
        Some(Value::from(0.5)),
    ))
    .unwrap();
    assert!(matches!(
        half.attention,
        models::spec::AttentionSpec::Gqa {
            head_dim: 128,
            rotary_dim: Some(64),
            ..
        }
    ));
    let full = parse(LLAMA).unwrap();
    assert!(matches!(
        full.attention,
        models::spec::AttentionSpec::Gqa {
            rotary_dim: None,
            ..
        }
    ));
}
