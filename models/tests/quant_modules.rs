//! The checkpoints' exclusion lists read module by module (`data/hf-configs/`): which modules
//! stayed BF16, and weight bytes counted in each module's own format.

use crate::common;
use common::load;
use models::WeightFormat;
use models::spec::{ModelPart, ModelSpec};

/// (module, layers) of every BF16 group.
fn bf16(spec: &ModelSpec) -> Vec<(String, String)> {
    spec.bf16_modules()
        .into_iter()
        .map(|g| (g.module, g.layers.to_string()))
        .collect()
}

fn layers_of<'a>(list: &'a [(String, String)], module: &str) -> Option<&'a str> {
    list.iter()
        .find(|(m, _)| m == module)
        .map(|(_, l)| l.as_str())
}

const MLA_PROJ: [&str; 5] = [
    "self_attn.q_a_proj",
    "self_attn.q_b_proj",
    "self_attn.kv_a_proj_with_mqa",
    "self_attn.kv_b_proj",
    "self_attn.o_proj",
];

#[test]
fn glm5_nvfp4_keeps_attention_indexer_and_the_mtp_layer_bf16() {
    let s = load("GLM-5-NVFP4.json");
    let b = bf16(&s);
    for m in MLA_PROJ
        .iter()
        .chain(&["self_attn.indexer.wq_b", "self_attn.indexer.wk"])
    {
        assert_eq!(layers_of(&b, m), Some("0-78"), "{m}: {b:?}");
    }
    // `model.layers.78*`: the whole MTP layer, experts and eh_proj included.
    for m in [
        "mlp.experts.*.gate_proj",
        "mlp.shared_experts.down_proj",
        "eh_proj",
    ] {
        assert_eq!(layers_of(&b, m), Some("78"), "{m}");
    }
    // Dense layers 0-2 and the shared experts of layers 3-77 are NVFP4 (not in the list).
    assert_eq!(layers_of(&b, "mlp.gate_proj"), None);
    assert_eq!(s.formats.dense_mlp, WeightFormat::Nvfp4);
    assert!(layers_of(&b, "lm_head").is_some() && layers_of(&b, "model.embed_tokens").is_some());
    assert!(
        s.module_formats.is_empty(),
        "every part is uniform: {:?}",
        s.module_formats
    );
}

#[test]
fn deepseek_v32_nvfp4_quantizes_o_proj_only_and_counts_it_exactly() {
    let s = load("DeepSeek-V3.2-NVFP4.json");
    let b = bf16(&s);
    for m in &MLA_PROJ[..4] {
        assert_eq!(layers_of(&b, m), Some("0-61"), "{m}");
    }
    assert_eq!(
        layers_of(&b, "self_attn.o_proj"),
        Some("61"),
        "MTP layer only"
    );
    assert_eq!(
        s.formats.attention,
        WeightFormat::Nvfp4,
        "o_proj holds most parameters"
    );
    // Attention bytes of one main layer: four BF16 projections, an NVFP4 o_proj, BF16 norms.
    let l = 5;
    let mods = s.layer_modules(l);
    let p = |n: &str| mods.iter().find(|m| m.name == n).unwrap().params as f64;
    let bf16_proj: f64 = MLA_PROJ[..4].iter().map(|n| p(n)).sum();
    let norms = (2 * 7168 + 1536 + 512) as f64;
    let want = bf16_proj * 2.0 + p("self_attn.o_proj") * (0.5 + 1.0 / 16.0) + norms * 2.0;
    let mut got = std::collections::BTreeMap::new();
    s.layer_bytes_by_part(l, |_, _| 1.0, &mut got);
    assert!((got[&ModelPart::Attention] / want - 1.0).abs() < 1e-12);
    // The old "most of the part" rule would have stored all of it in NVFP4: 2× fewer bytes.
    let uniform = (bf16_proj + p("self_attn.o_proj")) * (0.5 + 1.0 / 16.0);
    assert!(got[&ModelPart::Attention] > 1.9 * uniform);
}

#[test]
fn qwen3_nvfp4_excludes_only_routers_and_lm_head() {
    let s = load("Qwen3-235B-A22B-NVFP4.json");
    let b = bf16(&s);
    let names: Vec<&str> = b.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(names, ["model.embed_tokens", "lm_head"]);
    assert_eq!(s.formats.attention, WeightFormat::Nvfp4);
}

#[test]
fn kimi_k25_nvfp4_keeps_the_wrapped_self_attn_bf16() {
    // `language_model.model.layers.N.self_attn*` in a multimodal wrapper.
    let s = load("Kimi-K2.5-NVFP4.json");
    let b = bf16(&s);
    for m in MLA_PROJ {
        assert_eq!(layers_of(&b, m), Some("0-60"), "{m}");
    }
    assert_eq!(layers_of(&b, "mlp.gate_proj"), None, "dense layer 0 NVFP4");
    assert_eq!(layers_of(&b, "mlp.shared_experts.gate_proj"), None);
}

#[test]
fn layer_globs_match_as_fnmatch_does() {
    // GLM-5.1: `model.layers.0*` and `model.layers.1.*` (not `1*`, which would take 10-19 too).
    let s = load("GLM-5.1-NVFP4.json");
    let b = bf16(&s);
    assert_eq!(layers_of(&b, "mlp.gate_proj"), Some("0-2"));
    assert_eq!(layers_of(&b, "mlp.shared_experts.up_proj"), Some("3-78"));
    assert_eq!(layers_of(&b, "mlp.experts.*.up_proj"), Some("78"));
}

#[test]
fn module_bytes_add_up_to_the_part_totals() {
    for f in [
        "GLM-5-NVFP4.json",
        "DeepSeek-V3.2-NVFP4.json",
        "Meta-Llama-3.1-70B.json",
    ] {
        let s = load(f);
        let params = s.params_by_part();
        let mut n = std::collections::BTreeMap::<ModelPart, u64>::new();
        for l in s.all_layer_indices() {
            for m in s.layer_modules(l) {
                *n.entry(m.part).or_default() += m.params;
            }
            for p in s.layer_plain_params(l) {
                *n.entry(p.part).or_default() += p.params;
            }
        }
        for (part, count) in n {
            assert_eq!(count, params[&part], "{f} {part:?}");
        }
    }
}

#[test]
fn fp8_checkpoint_keeps_eh_proj_bf16() {
    // GLM-5-FP8 lists the MTP layer's eh_proj in modules_to_not_convert.
    let s = load("GLM-5-FP8.json");
    assert_eq!(layers_of(&bf16(&s), "eh_proj"), Some("78"));
    let o = &s.module_formats.overrides;
    assert_eq!(o.len(), 1);
    assert_eq!(
        (o[0].module.as_str(), o[0].format),
        ("eh_proj", WeightFormat::Bf16)
    );
}

#[test]
fn bf16_summary_lines() {
    let lines = models::spec::describe_bf16_modules(&load("GLM-5-NVFP4.json"));
    println!("{lines:#?}");
    assert!(lines[0].starts_with("model.embed_tokens: "), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with(
            "self_attn.{q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj} (layers 0-78)"
        )),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("mlp.experts.*.{gate_proj, up_proj, down_proj} (MTP layer 78)")),
        "{lines:?}"
    );
}
