//! The loader against the real HF configs in `data/hf-configs/` and the published totals listed
//! in its README.

use crate::common;
use common::{assert_within, configs_dir, load};
use models::format::{KvDtype, WeightFormat};
use models::spec::{AttentionSpec, LayerAttention, ModelPart};

const B: f64 = 1e9;

#[test]
fn every_carried_config_parses() {
    let mut n = 0;
    for entry in std::fs::read_dir(configs_dir()).expect("data/hf-configs exists") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name.contains("hf_quant_config") {
            continue;
        }
        let spec = models::ModelSpec::from_hf_config(&path)
            .unwrap_or_else(|e| panic!("{name} should parse: {e}"));
        assert_eq!(spec.moe_layers.len(), spec.num_layers as usize, "{name}");
        assert!(spec.total_params() > 0, "{name}");
        n += 1;
    }
    assert!(n >= 20, "expected the 20+ shared configs, found {n}");
}

#[test]
fn total_params_match_published_within_1_percent() {
    let cases = [
        ("GLM-5.json", 744.0),
        ("GLM-5-NVFP4.json", 744.0),
        ("DeepSeek-V3.json", 671.0),
        ("Qwen3-235B-A22B.json", 235.0),
        ("Qwen3-30B-A3B.json", 30.5),
        ("Mixtral-8x7B-v0.1.json", 46.7),
        ("Meta-Llama-3.1-70B.json", 70.6),
        ("Meta-Llama-3.1-405B.json", 405.9),
        ("GLM-4.7-FP8.trimmed.json", 355.0),
        // data/hf-configs/README.md's published totals of the families added later
        ("MiniMax-M2.5.trimmed.json", 228.7),
        ("MiniMax-M2.5-NVFP4.json", 228.7),
        ("gpt-oss-120b.json", 117.0),
        ("Qwen3-Next-80B-A3B.json", 80.0),
        ("Qwen3.5-397B-A17B.json", 397.0),
    ];
    for (file, published_b) in cases {
        let s = load(file);
        assert_within(
            file,
            s.total_params_without_mtp() as f64,
            published_b * B,
            0.01,
        );
    }
}

#[test]
fn deepseek_v3_mtp_module_is_14b_as_published() {
    let s = load("DeepSeek-V3.json");
    // DeepSeek's "671B + 14B MTP" counts the MTP module's own embedding and head copies.
    assert_within(
        "DeepSeek-V3 MTP (checkpoint)",
        s.mtp_checkpoint_params() as f64,
        14.0 * B,
        0.05,
    );
    assert_within(
        "DeepSeek-V3 main + MTP checkpoint",
        (s.total_params_without_mtp() + s.mtp_checkpoint_params()) as f64,
        685.0 * B,
        0.01,
    );
    // As served, SGLang shares embedding and head with the main model.
    assert!(s.mtp_params() < s.mtp_checkpoint_params());
    assert_eq!(
        s.total_params(),
        s.total_params_without_mtp() + s.mtp_params()
    );
}

/// Kimi K2's published total is "1T" (model card) / 1.04T (data/hf-configs/README.md); the architecture
/// arithmetic gives 1.026T. Reported, not tuned: checked at 1.5% against 1.04T.
#[test]
fn kimi_k2_total_is_about_one_trillion() {
    for file in [
        "Kimi-K2-Instruct.json",
        "Kimi-K2.5.json",
        "Kimi-K2.5-NVFP4.json",
    ] {
        let s = load(file);
        assert_within(file, s.total_params() as f64, 1040.0 * B, 0.015);
    }
}

#[test]
fn active_params_match_published_within_3_percent() {
    for (file, published_b) in [
        ("DeepSeek-V3.json", 37.0),
        ("Qwen3-235B-A22B.json", 22.0),
        ("Kimi-K2-Instruct.json", 32.0),
        ("GLM-4.7-FP8.trimmed.json", 32.0),
        ("Mixtral-8x7B-v0.1.json", 12.9),
    ] {
        let s = load(file);
        assert_within(
            file,
            s.active_params_per_token() as f64,
            published_b * B,
            0.03,
        );
    }
    // Dense: every parameter but the embedding lookup is active.
    let l = load("Meta-Llama-3.1-70B.json");
    assert_eq!(
        l.active_params_per_token(),
        l.total_params() - l.embedding_params()
    );
}

#[test]
fn kv_bytes_per_token() {
    let ds = load("DeepSeek-V3.json");
    assert_eq!(ds.kv_bytes_per_token(KvDtype::Bf16), 70_272);
    assert_eq!(ds.kv_bytes_per_token(KvDtype::Fp8), 35_136);
    let llama = load("Meta-Llama-3.1-70B.json");
    assert_eq!(llama.kv_bytes_per_token(KvDtype::Bf16), 327_680);
    // GLM-5: MLA 512 + 64 per layer, 78 layers; its indexer cache is separate (128 fp8 + 4 B scale).
    let glm = load("GLM-5-NVFP4.json");
    assert_eq!(glm.kv_bytes_per_token(KvDtype::Bf16), 78 * 576 * 2);
    assert_eq!(glm.indexer_cache_bytes_per_token(), 78 * 132);
    assert_eq!(ds.indexer_cache_bytes_per_token(), 0);
}

#[test]
fn glm5_nvfp4_formats_follow_the_exclusion_list() {
    let s = load("GLM-5-NVFP4.json");
    assert_eq!(s.default_kv_dtype, KvDtype::Fp8, "kv_cache_quant_algo FP8");
    let f = s.formats;
    assert_eq!(f.attention, WeightFormat::Bf16);
    assert_eq!(f.routed_experts, WeightFormat::Nvfp4);
    assert_eq!(f.shared_experts, WeightFormat::Nvfp4);
    assert_eq!(f.dense_mlp, WeightFormat::Nvfp4);
    assert_eq!(f.lm_head, WeightFormat::Bf16);
    assert_eq!(f.mtp, WeightFormat::Bf16, "model.layers.78* is excluded");
    // GLM-5.1-NVFP4 also excludes the dense layers 0-2 and every shared expert.
    let s51 = load("GLM-5.1-NVFP4.json");
    assert_eq!(s51.formats.shared_experts, WeightFormat::Bf16);
    assert_eq!(s51.formats.dense_mlp, WeightFormat::Bf16);
    assert_eq!(s51.formats.routed_experts, WeightFormat::Nvfp4);
}

#[test]
fn glm5_nvfp4_weight_bytes_without_mtp_about_441_gb() {
    let s = load("GLM-5-NVFP4.json");
    let bytes = s.total_weight_bytes_without_mtp() as f64;
    assert_within("GLM-5-NVFP4 weights w/o MTP", bytes, 441.0 * B, 0.03);
    let by_part = s.weight_bytes_by_part();
    assert!(by_part[&ModelPart::RoutedExperts] > by_part[&ModelPart::Attention]);
}

#[test]
fn quantization_variants() {
    let k25 = load("Kimi-K2.5.json");
    assert_eq!(
        k25.model_type, "kimi_k2",
        "text_config of the kimi_k25 wrapper"
    );
    assert_eq!(
        k25.formats.routed_experts,
        WeightFormat::Int4 { group_size: 32 }
    );
    assert_eq!(
        k25.formats.shared_experts,
        WeightFormat::Bf16,
        "re:.*shared_experts.*"
    );
    assert_eq!(
        k25.formats.dense_mlp,
        WeightFormat::Bf16,
        r"re:.*mlp\.(gate|up|…)_proj.*"
    );
    assert_eq!(k25.formats.attention, WeightFormat::Bf16);
    let k25nv = load("Kimi-K2.5-NVFP4.json");
    assert_eq!(k25nv.formats.routed_experts, WeightFormat::Nvfp4);
    assert_eq!(
        k25nv.default_kv_dtype,
        KvDtype::Fp8,
        "kv_cache_scheme num_bits 8"
    );
    let ds = load("DeepSeek-V3.json");
    assert_eq!(ds.formats.routed_experts, WeightFormat::Fp8 { block: 128 });
    assert_eq!(ds.formats.embeddings, WeightFormat::Bf16);
    let q = load("Qwen3-235B-A22B-NVFP4.json");
    assert_eq!(q.formats.attention, WeightFormat::Nvfp4);
    assert_eq!(q.formats.routed_experts, WeightFormat::Nvfp4);
    let plain = load("Qwen3-235B-A22B.json");
    assert_eq!(plain.formats.routed_experts, WeightFormat::Bf16);
}

#[test]
fn architecture_details() {
    let glm = load("GLM-5.json");
    assert_eq!((glm.num_dense_layers(), glm.num_moe_layers()), (3, 75));
    assert_eq!(glm.num_mtp_layers, 1);
    let AttentionSpec::Mla {
        indexer: Some(ix),
        q_lora_rank,
        ..
    } = glm.attention
    else {
        panic!("GLM-5 is MLA with a DSA indexer");
    };
    assert_eq!((ix.num_heads, ix.head_dim, ix.topk), (32, 128, 2048));
    assert_eq!(q_lora_rank, Some(2048));
    assert_eq!(glm.attended_tokens(100_000), 2048);
    assert_eq!(glm.attended_tokens(1000), 1000);
    let glm52 = load("GLM-5.2.json");
    assert_eq!(glm52.num_dense_layers(), 3, "mlp_layer_types");
    // indexer_types: layers 0-2 and every 4th from 6 run their own indexer, the rest share.
    assert_eq!(glm52.num_indexer_layers(), 21);
    assert!(glm52.layer_has_indexer(6) && !glm52.layer_has_indexer(7));
    assert_eq!(glm52.indexer_cache_bytes_per_token(), 21 * 132);
    assert!(
        glm52.params_by_part()[&ModelPart::Indexer] < glm.params_by_part()[&ModelPart::Indexer]
    );
    assert_eq!(glm.num_indexer_layers(), 78);
    assert_eq!(load("DeepSeek-V3.json").num_indexer_layers(), 0);
    let kimi = load("Kimi-K2-Instruct.json");
    assert_eq!(kimi.num_dense_layers(), 1);
    let mixtral = load("Mixtral-8x7B-v0.1.json");
    assert_eq!(mixtral.num_moe_layers(), 32);
    let llama = load("Meta-Llama-3.1-405B.json");
    assert!(llama.moe.is_none());
    assert_eq!(llama.num_dense_layers(), 126);
}

#[test]
fn flops_grow_with_context_and_dsa_caps_attention() {
    let ds = load("DeepSeek-V3.json");
    let f1 = ds.flops_per_token_decode(1);
    let f2 = ds.flops_per_token_decode(32_768);
    assert!(f2 > f1);
    // At short context the matmuls dominate: ≈ 2 × active params.
    assert_within(
        "DS-V3 decode FLOPs @1",
        f1,
        2.0 * ds.active_params_per_token() as f64,
        0.01,
    );
    // DSA: attention stops growing past index_topk, only the indexer scan keeps growing.
    let glm = load("GLM-5.json");
    let d_attn = |a: u64, b: u64| glm.flops_per_token_decode(b) - glm.flops_per_token_decode(a);
    let idx_only = 2.0 * 32.0 * 128.0 * 78.0 * 10_000.0;
    assert_within(
        "GLM-5 decode growth past top-k",
        d_attn(10_000, 20_000),
        idx_only,
        1e-9,
    );
    assert!(glm.flops_per_token_prefill(8192) > glm.flops_per_token_prefill(1024));
}

/// Active parameters of the new families against the published figures; some count the
/// embedding table (Qwen3.5's "A17B": 16.3B without, 17.3B with), some do not (gpt-oss's 5.1B).
#[test]
fn new_families_active_params_match_published() {
    for (file, published_b, with_embedding, tol) in [
        ("gpt-oss-120b.json", 5.1, false, 0.03),
        ("MiniMax-M2.5.trimmed.json", 10.0, false, 0.05),
        ("Qwen3.5-397B-A17B.json", 17.0, true, 0.03),
        // "A3B": 3.56B without the embedding, 3.87B with; reported, not tuned
        ("Qwen3-Next-80B-A3B.json", 3.0, false, 0.20),
    ] {
        let s = load(file);
        let emb = if with_embedding {
            s.embedding_params()
        } else {
            0
        };
        let active = s.active_params_per_token() + emb;
        assert_within(file, active as f64, published_b * B, tol);
    }
}

#[test]
fn hybrid_layers_and_their_caches() {
    // gpt-oss: 18 sliding (window 128) + 18 full layers, GQA 64/8 × 64 with sinks; MXFP4 experts.
    let g = load("gpt-oss-120b.json");
    assert_eq!(g.num_layers_of_kind(LayerAttention::Sliding), 18);
    assert_eq!(g.num_layers_of_kind(LayerAttention::Full), 18);
    assert_eq!(g.sliding_window, Some(128));
    assert!(matches!(
        g.attention,
        AttentionSpec::Gqa { sinks: true, .. }
    ));
    assert_eq!(g.formats.routed_experts, WeightFormat::Mxfp4);
    assert_eq!(
        g.formats.attention,
        WeightFormat::Bf16,
        "self_attn not converted"
    );
    // KV grows only in the full layers; the sliding ones stop at 128 tokens.
    let per_layer = g.kv_bytes_per_token_per_layer(KvDtype::Bf16);
    assert_eq!(per_layer, 2 * 8 * 64 * 2);
    assert_eq!(g.kv_bytes_per_token(KvDtype::Bf16), 18 * per_layer);
    assert_eq!(
        g.kv_bytes_per_request(KvDtype::Bf16, 10_000),
        18 * per_layer * 10_000 + 18 * per_layer * 128
    );
    // Qwen3.5: 45 Gated-DeltaNet + 15 full layers; the state per request is fixed.
    let q = load("Qwen3.5-397B-A17B.json");
    assert_eq!(q.num_layers_of_kind(LayerAttention::Linear), 45);
    assert_eq!(q.layer_attention(3), LayerAttention::Full);
    assert_eq!(q.num_mtp_layers, 1);
    // conv (2·16·128 + 64·128 channels × 3 taps, bf16) + state (64 heads × 128 × 128, fp32)
    let per_layer_state = 12_288 * 3 * 2 + 64 * 128 * 128 * 4;
    assert_eq!(q.linear_state_bytes_per_request(), 45 * per_layer_state);
    assert_eq!(q.kv_bytes_per_token(KvDtype::Bf16), 15 * 2 * 2 * 256 * 2);
    let la = q.linear_attention.unwrap();
    assert_eq!(
        la.state_bytes_per_request(8),
        12_288 / 8 * 3 * 2 + 8 * 128 * 128 * 4
    );
    // Qwen3-Next: no layer_types, every 4th layer full.
    let n = load("Qwen3-Next-80B-A3B.json");
    assert_eq!(n.num_layers_of_kind(LayerAttention::Full), 12);
    assert_eq!(n.layer_attention(0), LayerAttention::Linear);
    assert!(matches!(
        n.attention,
        AttentionSpec::Gqa {
            output_gate: true,
            ..
        }
    ));
    // Decode FLOPs do not grow with context in linear layers.
    let d = |s: &models::ModelSpec, c| s.flops_per_token_decode(c);
    let full_only = 12.0 * 4.0 * 16.0 * 256.0 * 10_000.0;
    assert_within(
        "Qwen3-Next decode growth",
        d(&n, 20_000) - d(&n, 10_000),
        full_only,
        1e-9,
    );
}

#[test]
fn new_families_quantization() {
    let m = load("MiniMax-M2.5.trimmed.json");
    assert_eq!(m.formats.routed_experts, WeightFormat::Fp8 { block: 128 });
    assert_eq!(m.formats.attention, WeightFormat::Fp8 { block: 128 });
    assert_eq!(m.num_mtp_layers, 0, "the checkpoint holds no MTP weights");
    let mn = load("MiniMax-M2.5-NVFP4.json");
    assert_eq!(mn.formats.routed_experts, WeightFormat::Nvfp4);
    assert_eq!(mn.formats.attention, WeightFormat::Bf16);
    assert_eq!(mn.default_kv_dtype, KvDtype::Fp8);
    // Qwen3.5 NVFP4: only routed experts are FP4; linear and full attention, shared experts and
    // the MTP layer (`mtp.layers.0*`) stay BF16.
    let q = load("Qwen3.5-397B-A17B-NVFP4.json");
    assert_eq!(q.formats.routed_experts, WeightFormat::Nvfp4);
    assert_eq!(q.formats.attention, WeightFormat::Bf16);
    assert_eq!(q.formats.shared_experts, WeightFormat::Bf16);
    assert_eq!(q.formats.mtp, WeightFormat::Bf16);
}

/// Qwen3-Next's config has no MTP key, but its checkpoint holds one MTP layer that vLLM and
/// SGLang both build (`num_nextn_predict_layers` defaulting to 1; `num_hidden_layers = 1`): read
/// as none, `qwen3_next_mtp` had no layer to draft with. The main model still counts to the
/// published 80B; the layer is one full-attention MoE layer (~1.6B, its 512 experts).
#[test]
fn qwen3_next_carries_one_unannounced_mtp_layer() {
    let s = load("Qwen3-Next-80B-A3B.json");
    assert_eq!(s.num_mtp_layers, 1);
    assert_eq!(s.layer_attention(s.num_layers), LayerAttention::Full);
    let mtp_b = s.mtp_params() as f64 / B;
    assert!((1.5..1.8).contains(&mtp_b), "{mtp_b}");
    // a config that names its depth keeps it
    let q35 = load("Qwen3.5-397B-A17B.json");
    assert_eq!(q35.num_mtp_layers, 1);
}

/// A DSA config's indexer layers as transformers' `GlmMoeDsaConfig` reads them: `indexer_types`,
/// else `index_topk_pattern`, else `index_topk_freq` from `index_skip_topk_offset`. GLM-5.2's
/// frequency and offset give the same 40 own-indexer layers its explicit list names; a pattern
/// (what `--hf-overrides` gives GLM-5.1) is read letter by letter; a wrong one is refused.
#[test]
fn dsa_indexer_layers_follow_types_then_pattern_then_frequency() {
    let text = std::fs::read_to_string(configs_dir().join("GLM-5.2.json")).unwrap();
    let explicit = load("GLM-5.2.json");
    assert_eq!(explicit.num_indexer_layers(), 21);
    let read = |edit: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(v.as_object_mut().unwrap());
        models::ModelSpec::from_hf_json(
            &v.to_string(),
            std::path::Path::new("c/config.json"),
            None,
            "t",
        )
    };
    let by_freq = read(&|o| {
        o.remove("indexer_types");
    })
    .unwrap();
    assert_eq!(by_freq.indexer_layers, explicit.indexer_layers);
    let pattern = "FFSFSSSFSSFFFSSSFFFSFSSSSSSFFSFFSFFSSFFFFFFSFFFFFSFFSSSSSSFSFFFSFSSSFSFFSFFSSS";
    let by_pattern = read(&|o| {
        o.remove("indexer_types");
        o.insert("index_topk_pattern".into(), pattern.into());
    })
    .unwrap();
    assert_eq!(by_pattern.num_indexer_layers(), 40);
    assert!(by_pattern.layer_has_indexer(0) && !by_pattern.layer_has_indexer(2));
    let every = read(&|o| {
        o.remove("indexer_types");
        o.remove("index_topk_freq");
    })
    .unwrap();
    assert_eq!(every.num_indexer_layers(), 78);
    let short = read(&|o| {
        o.remove("indexer_types");
        o.insert("index_topk_pattern".into(), "FFS".into());
    })
    .unwrap_err()
    .to_string();
    assert!(
        short.contains("index_topk_pattern has 3 letters"),
        "{short}"
    );
    assert_eq!(
        explicit.indexer_layers_from_pattern(pattern).unwrap(),
        by_pattern.indexer_layers
    );
    assert!(
        explicit
            .indexer_layers_from_pattern(&"X".repeat(78))
            .is_err()
    );
}
