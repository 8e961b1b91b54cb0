//! Embedded presets: every model preset equals what the loader reads from the matching shared
//! config (so the two cannot drift), and every GPU preset is complete and findable by name.

use crate::common;
use common::load;
use models::{GpuSpec, ModelSpec};

/// Presets that are exactly a shared config (plus name and source).
const EXACT: &[(&str, &str)] = &[
    ("glm-5-nvfp4", "GLM-5-NVFP4.json"),
    ("glm-5-fp8", "GLM-5-FP8.json"),
    ("kimi-k2.5-nvfp4", "Kimi-K2.5-NVFP4.json"),
    ("kimi-k2.5", "Kimi-K2.5.json"),
    ("deepseek-v3-fp8", "DeepSeek-V3.json"),
    ("qwen3-235b-a22b-nvfp4", "Qwen3-235B-A22B-NVFP4.json"),
    ("qwen3-30b-a3b", "Qwen3-30B-A3B.json"),
    ("mixtral-8x7b", "Mixtral-8x7B-v0.1.json"),
    ("llama-3.1-70b", "Meta-Llama-3.1-70B.json"),
    ("llama-3.1-405b", "Meta-Llama-3.1-405B.json"),
    ("glm-5.1-nvfp4", "GLM-5.1-NVFP4.json"),
    ("glm-5.2-nvfp4", "GLM-5.2-NVFP4.json"),
    ("minimax-m2.5", "MiniMax-M2.5.trimmed.json"),
    ("minimax-m2.5-nvfp4", "MiniMax-M2.5-NVFP4.json"),
    ("gpt-oss-120b", "gpt-oss-120b.json"),
    ("qwen3.5-397b-a17b", "Qwen3.5-397B-A17B.json"),
    ("qwen3.5-397b-a17b-nvfp4", "Qwen3.5-397B-A17B-NVFP4.json"),
    ("qwen3-next-80b-a3b", "Qwen3-Next-80B-A3B.json"),
];

fn renamed(mut s: ModelSpec, like: &ModelSpec) -> ModelSpec {
    s.name = like.name.clone();
    s.source = like.source.clone();
    s
}

/// Pretty JSON as the presets are written: two-space indent, arrays of scalars on one line.
fn preset_json(spec: &ModelSpec) -> String {
    let pretty = serde_json::to_string_pretty(spec).unwrap();
    let mut out = String::new();
    let mut run: Option<Vec<String>> = None;
    for line in pretty.lines() {
        let t = line.trim();
        match &mut run {
            Some(items) if t.starts_with(']') => {
                out.push_str(&items.join(" "));
                out.push_str(t);
                out.push('\n');
                run = None;
            }
            Some(items) if !t.starts_with(['{', '[']) => items.push(t.to_string()),
            Some(items) => {
                // not scalars after all: write what was held back as it was
                out.push_str(&items.join("\n"));
                out.push('\n');
                out.push_str(line);
                out.push('\n');
                run = None;
            }
            None if t.ends_with('[') => {
                out.push_str(line);
                run = Some(Vec::new());
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// With `SHARDWISE_REGEN_PRESETS=1`, the exact presets are rewritten from the shared configs
/// (keeping their name and source) instead of compared.
#[test]
fn exact_presets_equal_the_loaded_configs() {
    let regen = std::env::var_os("SHARDWISE_REGEN_PRESETS").is_some();
    for (key, file) in EXACT {
        let preset = ModelSpec::preset(key).unwrap();
        if regen {
            let path = format!("{}/presets/models/{key}.json", env!("CARGO_MANIFEST_DIR"));
            std::fs::write(path, preset_json(&renamed(load(file), &preset))).unwrap();
            continue;
        }
        assert_eq!(preset.name, *key);
        assert!(
            preset.source.starts_with("https://huggingface.co/"),
            "{key} cites its HF repo"
        );
        assert_eq!(
            renamed(load(file), &preset),
            preset,
            "{key} drifted from {file}"
        );
    }
}

#[test]
fn derived_presets_share_the_architecture_of_their_config() {
    // GLM-4.7-FP8: the trimmed config lacks the quantization block and num_nextn_predict_layers.
    let glm = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let mut from_cfg = renamed(load("GLM-4.7-FP8.trimmed.json"), &glm);
    from_cfg.formats = glm.formats;
    from_cfg.num_mtp_layers = 1;
    assert_eq!(from_cfg, glm);
    // Kimi K2 NVFP4 / Thinking INT4: K2-Instruct's architecture with K2.5's quantization recipes
    // and the Thinking models' 256K context (Thinking NVFP4: below).
    for (key, recipe) in [
        ("kimi-k2-nvfp4", "Kimi-K2.5-NVFP4.json"),
        ("kimi-k2-thinking-int4", "Kimi-K2.5.json"),
    ] {
        let p = ModelSpec::preset(key).unwrap();
        let recipe = load(recipe);
        assert_eq!(p.formats, recipe.formats, "{key}");
        assert_eq!(p.default_kv_dtype, recipe.default_kv_dtype, "{key}");
        let mut from_cfg = renamed(load("Kimi-K2-Instruct.json"), &p);
        from_cfg.formats = p.formats;
        from_cfg.default_kv_dtype = p.default_kv_dtype;
        from_cfg.max_context_tokens = 262_144;
        assert_eq!(from_cfg, p, "{key}");
    }
    // DeepSeek-R1-0528 FP4 v2: DeepSeek-V3's architecture with the NVFP4 recipe of
    // DeepSeek-V3.2-NVFP4 (o_proj quantized too, so attention is mostly NVFP4).
    let r1 = ModelSpec::preset("deepseek-r1-fp4").unwrap();
    assert_eq!(r1.formats, load("DeepSeek-V3.2-NVFP4.json").formats);
    let mut from_cfg = renamed(load("DeepSeek-V3.json"), &r1);
    from_cfg.formats = r1.formats;
    assert_eq!(from_cfg, r1);
    // MiniMax-M2.5 BF16-INT4-AWQ (issue 35): MiniMax-M2.5's architecture, the model card's mix:
    // attention BF16 (dequantized from the FP8 release), routed experts AWQ W4A16 group 32
    let awq = ModelSpec::preset("minimax-m2.5-int4-awq").unwrap();
    assert_eq!(
        awq.formats.routed_experts,
        models::WeightFormat::Int4 { group_size: 32 }
    );
    assert_eq!(awq.formats.attention, models::WeightFormat::Bf16);
    let mut from_cfg = renamed(load("MiniMax-M2.5.trimmed.json"), &awq);
    from_cfg.formats = awq.formats;
    from_cfg.default_kv_dtype = awq.default_kv_dtype;
    assert_eq!(from_cfg, awq);
}

/// nvidia/Kimi-K2-Thinking-NVFP4: K2-Instruct's architecture, 256K context, and the split NVIDIA's
/// card states: routed experts NVFP4; MLA attention, shared experts, dense layer 0, embeddings and
/// lm_head BF16; FP8 KV cache.
#[test]
fn kimi_k2_thinking_nvfp4_follows_nvidias_card() {
    use models::{KvDtype, WeightFormat};
    let p = ModelSpec::preset("kimi-k2-thinking-nvfp4").unwrap();
    assert!(
        p.source
            .contains("https://huggingface.co/nvidia/Kimi-K2-Thinking-NVFP4")
    );
    let f = p.formats;
    assert_eq!(f.routed_experts, WeightFormat::Nvfp4);
    for (part, fmt) in [
        ("attention", f.attention),
        ("shared experts", f.shared_experts),
        ("dense layer 0", f.dense_mlp),
        ("embeddings", f.embeddings),
        ("lm_head", f.lm_head),
    ] {
        assert_eq!(fmt, WeightFormat::Bf16, "{part}");
    }
    assert_eq!(p.default_kv_dtype, KvDtype::Fp8);
    let mut from_cfg = renamed(load("Kimi-K2-Instruct.json"), &p);
    from_cfg.formats = p.formats;
    from_cfg.default_kv_dtype = p.default_kv_dtype;
    from_cfg.max_context_tokens = 262_144;
    assert_eq!(from_cfg, p);
    let bf16: Vec<String> = p.bf16_modules().into_iter().map(|g| g.module).collect();
    for m in [
        "self_attn.kv_b_proj",
        "mlp.shared_experts.gate_proj",
        "mlp.gate_proj",
        "lm_head",
    ] {
        assert!(bf16.iter().any(|b| b == m), "{m} in {bf16:?}");
    }
}

#[test]
fn all_required_model_presets_exist() {
    let names = ModelSpec::preset_names();
    for key in [
        "glm-5-nvfp4",
        "glm-5-fp8",
        "glm-4.7-fp8",
        "kimi-k2.5-nvfp4",
        "kimi-k2.5",
        "kimi-k2-nvfp4",
        "kimi-k2-thinking-int4",
        "kimi-k2-thinking-nvfp4",
        "deepseek-v3-fp8",
        "deepseek-r1-fp4",
        "qwen3-235b-a22b-nvfp4",
        "qwen3-30b-a3b",
        "mixtral-8x7b",
        "llama-3.1-70b",
        "llama-3.1-405b",
    ] {
        assert!(names.contains(&key), "missing preset {key}");
        ModelSpec::preset(key).unwrap();
    }
    assert_eq!(
        ModelSpec::preset("GLM-5-NVFP4").unwrap().name,
        "glm-5-nvfp4"
    );
}

#[test]
fn resolve_takes_presets_folders_and_files() {
    assert_eq!(
        ModelSpec::resolve("glm-5-nvfp4").unwrap().name,
        "glm-5-nvfp4"
    );
    let file = common::configs_dir().join("Qwen3-30B-A3B.json");
    assert_eq!(
        ModelSpec::resolve(file.to_str().unwrap())
            .unwrap()
            .model_type,
        "qwen3_moe"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&file, dir.path().join("config.json")).unwrap();
    let from_dir = ModelSpec::resolve(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(from_dir.hidden_size, 2048);
    let err = ModelSpec::resolve("no-such-model").unwrap_err().to_string();
    assert!(
        err.contains("no-such-model") && err.contains("glm-5-nvfp4"),
        "{err}"
    );
}

#[test]
fn from_hf_dir_reads_hf_quant_config_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::configs_dir();
    std::fs::copy(src.join("GLM-5-NVFP4.json"), dir.path().join("config.json")).unwrap();
    std::fs::copy(
        src.join("GLM-5-NVFP4.hf_quant_config.json"),
        dir.path().join("hf_quant_config.json"),
    )
    .unwrap();
    let s = ModelSpec::from_hf_dir(dir.path()).unwrap();
    assert_eq!(s.formats, ModelSpec::preset("glm-5-nvfp4").unwrap().formats);
}

#[test]
fn gpu_presets_are_complete() {
    let names = GpuSpec::preset_names();
    assert!(names.len() >= 9);
    for key in names {
        let g = GpuSpec::preset(key).unwrap();
        assert_eq!(g.name, key);
        assert!(
            g.memory_bytes > 20 << 30 && g.memory_gb_per_s > 500.0,
            "{key}"
        );
        // the RTX 3090 (Ampere, 71 dense) is the slowest card a preset carries
        assert!(g.bf16_tflops > 70.0, "{key}");
        if let Some(fp8) = g.fp8_tflops {
            assert!(fp8 >= 1.9 * g.bf16_tflops, "{key}: fp8 should double bf16");
        }
        assert!(g.source.contains("https://"), "{key} cites a datasheet");
        assert_eq!(
            GpuSpec::find_by_display_name(&g.display_name).unwrap().name,
            key
        );
    }
    let rtx = GpuSpec::preset("rtx-pro-6000-server").unwrap();
    assert_eq!(rtx.memory_bytes, 97_887 << 20);
    assert_eq!(rtx.memory_gb_per_s, 1792.0);
}

#[test]
fn gpu_names_match_loosely() {
    let find = |n: &str| GpuSpec::find_by_display_name(n).map(|g| g.name);
    assert_eq!(
        find("NVIDIA RTX PRO 6000 Blackwell Server Edition").as_deref(),
        Some("rtx-pro-6000-server")
    );
    assert_eq!(
        find("NVIDIA RTX PRO 6000 Blackwell Workstation Edition").as_deref(),
        Some("rtx-pro-6000-workstation")
    );
    // issue 35: the 300 W Max-Q edition, by NVIDIA's name and the community's
    for maxq in [
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        "NVIDIA RTX 6000 Pro Max-Q",
    ] {
        assert_eq!(find(maxq).as_deref(), Some("rtx-pro-6000-maxq"), "{maxq}");
    }
    let (maxq, ws) = (
        GpuSpec::preset("rtx-pro-6000-maxq").unwrap(),
        GpuSpec::preset("rtx-pro-6000-workstation").unwrap(),
    );
    assert_eq!(maxq.memory_gb_per_s, ws.memory_gb_per_s);
    assert_eq!(maxq.memory_bytes, ws.memory_bytes);
    assert!(maxq.bf16_tflops < ws.bf16_tflops && maxq.fp4_tflops < ws.fp4_tflops);
    assert_eq!(find("NVIDIA GeForce RTX 3090").as_deref(), Some("rtx-3090"));
    assert_eq!(find("NVIDIA GeForce RTX 3090 Ti"), None);
    assert_eq!(find("NVIDIA H100 80GB HBM3").as_deref(), Some("h100-sxm"));
    assert_eq!(find("NVIDIA H100 PCIe").as_deref(), Some("h100-pcie"));
    assert_eq!(find("NVIDIA H200").as_deref(), Some("h200"));
    // issue 35: the H20 by its word, never mistaken for the H200 (or the reverse)
    assert_eq!(find("NVIDIA H20").as_deref(), Some("h20"));
    let (h20, h200) = (
        GpuSpec::preset("h20").unwrap(),
        GpuSpec::preset("h200").unwrap(),
    );
    assert_eq!(h20.nvlink_gb_per_s, h200.nvlink_gb_per_s);
    assert!(h20.memory_bytes < h200.memory_bytes && h20.memory_gb_per_s < h200.memory_gb_per_s);
    assert!(h20.bf16_tflops < 0.2 * h200.bf16_tflops);
    assert_eq!(find("NVIDIA GeForce RTX 4090").as_deref(), Some("rtx-4090"));
    assert_eq!(find("nvidia geforce rtx 5090").as_deref(), Some("rtx-5090"));
    assert_eq!(find("NVIDIA B200").as_deref(), Some("b200"));
    assert_eq!(find("NVIDIA L40S").as_deref(), Some("l40s"));
    assert_eq!(find("Tesla V100-SXM2-16GB"), None);
    assert!(
        GpuSpec::preset("nope")
            .unwrap_err()
            .to_string()
            .contains("h200")
    );
}

#[test]
fn hf_repository_ids_of_sglang_model_path_find_their_preset() {
    let name = |id: &str| ModelSpec::resolve(id).map(|s| s.name);
    assert_eq!(name("zai-org/GLM-4.7-FP8").unwrap(), "glm-4.7-fp8");
    assert_eq!(name("nvidia/GLM-5-NVFP4").unwrap(), "glm-5-nvfp4");
    // the community re-uploads of that quantization the RTX PRO 6000 launch lines name
    assert_eq!(name("festr2/GLM-5-NVFP4-MTP").unwrap(), "glm-5-nvfp4");
    assert_eq!(name("lukealonso/glm-5-nvfp4").unwrap(), "glm-5-nvfp4");
    // the GLM-5.1 ones the rtx6kpro vLLM server logs serve (`non-default args`' model)
    assert_eq!(
        name("lukealonso/GLM-5.1-NVFP4-MTP").unwrap(),
        "glm-5.1-nvfp4"
    );
    assert_eq!(name("lukealonso/GLM-5.1-NVFP4").unwrap(), "glm-5.1-nvfp4");
    assert_eq!(name("deepseek-ai/DeepSeek-V3").unwrap(), "deepseek-v3-fp8");
    assert_eq!(name("mistralai/Mixtral-8x7B-v0.1").unwrap(), "mixtral-8x7b");
    // The Kimi-K2 NVFP4 preset only borrows Kimi-K2-Instruct's architecture: the FP8
    // checkpoint itself is not that preset.
    assert!(name("moonshotai/Kimi-K2-Instruct").is_err());
    assert!(name("nobody/NoSuchModel").is_err());
}

/// The HF ids SGLang's `--model-path` gives for the families added in issue 24 find their presets
/// (by the preset's cited repository, or the Thinking/Instruct alias).
#[test]
fn new_families_resolve_from_their_hf_ids() {
    for (id, key) in [
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("MiniMaxAI/MiniMax-M2.5", "minimax-m2.5"),
        ("nvidia/MiniMax-M2.5-NVFP4", "minimax-m2.5-nvfp4"),
        (
            "mratsim/Minimax-M2.5-BF16-INT4-AWQ",
            "minimax-m2.5-int4-awq",
        ),
        ("Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b"),
        ("nvidia/Qwen3.5-397B-A17B-NVFP4", "qwen3.5-397b-a17b-nvfp4"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-next-80b-a3b"),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "qwen3-next-80b-a3b"),
        ("nvidia/GLM-5.1-NVFP4", "glm-5.1-nvfp4"),
        // issue 35: GLM-5.2 resolves to its own config (shared indexers, 1M positions)
        ("nvidia/GLM-5.2-NVFP4", "glm-5.2-nvfp4"),
        ("lukealonso/GLM-5.2-NVFP4", "glm-5.2-nvfp4"),
    ] {
        let spec = ModelSpec::preset_for_hf_id(id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(spec.name, key, "{id}");
    }
}

/// festr2's GLM-5.2 with AMD's MXFP4 routed experts has no carried config: its preset is
/// zai-org/GLM-5.2's BF16 architecture (the carried config) with only the routed experts in MXFP4,
/// as its name and the rtx6kpro v15 launcher (`QUANTIZATION=mxfp4`, logs `quant_mode=w4a8_mx`)
/// say; its id finds it.
#[test]
fn glm52_mxfp4_experts_is_the_bf16_architecture_with_mxfp4_routed_experts() {
    let preset = ModelSpec::preset("glm-5.2-mxfp4-experts").unwrap();
    let mut want = load("GLM-5.2.json");
    assert!(want.stored_in_bf16(), "the carried GLM-5.2 config is BF16");
    want.formats.routed_experts = models::WeightFormat::Mxfp4;
    assert_eq!(preset, renamed(want, &preset));
    let by_id = ModelSpec::preset_for_hf_id("festr2/GLM-5.2-BF16-AMDMXFP4experts").unwrap();
    assert_eq!(by_id.name, "glm-5.2-mxfp4-experts");
}

/// `arch`'s config with zai-org/GLM-5-FP8's FP8 block-128 quantization config (zai's FP8 release of
/// the same 78-layer family), as the loader reads it.
fn with_zai_fp8_scheme(arch: &str) -> ModelSpec {
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(common::configs_dir().join(f)).unwrap())
            .unwrap()
    };
    let mut config = read(arch);
    config["quantization_config"] = read("GLM-5-FP8.json")["quantization_config"].clone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let spec = ModelSpec::from_hf_config(&path).unwrap();
    assert_eq!(
        spec.formats.attention,
        models::WeightFormat::Fp8 { block: 128 },
        "the FP8 scheme applies to {arch}'s layers"
    );
    spec
}

/// `want` (renamed) is the preset `key`, which the HF id `id` finds; with
/// `SHARDWISE_REGEN_PRESETS=1` the preset is rewritten from `want` (keeping its source).
fn assert_derived_preset(key: &str, id: &str, want: ModelSpec) {
    let path = format!("{}/presets/models/{key}.json", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("SHARDWISE_REGEN_PRESETS").is_some() {
        let mut named = want;
        named.name = key.to_string();
        named.source = ModelSpec::preset(key).map(|p| p.source).unwrap_or_default();
        std::fs::write(&path, preset_json(&named)).unwrap();
        return;
    }
    let preset = ModelSpec::preset(key).unwrap();
    assert_eq!(renamed(want, &preset), preset, "{key}");
    assert_eq!(ModelSpec::preset_for_hf_id(id).unwrap().name, key, "{id}");
}

/// zai's FP8 releases of GLM-5.1 and GLM-5.2, whose configs are not carried: each model's
/// carried architecture with GLM-5-FP8's scheme.
#[test]
fn zai_glm5x_fp8_presets_are_their_architecture_with_the_glm5_fp8_scheme() {
    for (key, id, arch) in [
        ("glm-5.1-fp8", "zai-org/GLM-5.1-FP8", "GLM-5.1.json"),
        ("glm-5.2-fp8", "zai-org/GLM-5.2-FP8", "GLM-5.2.json"),
    ] {
        assert_derived_preset(key, id, with_zai_fp8_scheme(arch));
    }
}

/// festr2's GLM-5.2 FP8 with MXFP4 routed experts, converted from zai-org/GLM-5.2-FP8: its
/// preset is `glm-5.2-fp8` with the routed experts in MXFP4, as the rtx6kpro glm5.2_mxfp4 page's
/// 'Checkpoint Layout' states (dense, attention and MTP tensors the original FP8; routed
/// experts MXFP4, UE8M0 K/32 scales).
#[test]
fn glm52_fp8_mxfp4_experts_is_zai_fp8_with_mxfp4_routed_experts() {
    let mut want = with_zai_fp8_scheme("GLM-5.2.json");
    want.formats.routed_experts = models::WeightFormat::Mxfp4;
    assert_derived_preset(
        "glm-5.2-fp8-mxfp4-experts",
        "festr2/GLM-5.2-FP8-MXFP4-Experts",
        want,
    );
}
