//! Embedded presets: every model preset equals what the loader reads from the matching shared
//! config (so the two cannot drift), and every GPU preset is complete and findable by name.

mod common;
use common::load;
use models::{GpuSpec, ModelSpec};

/// Presets that are exactly a shared config (plus name and source).
const EXACT: &[(&str, &str)] = &[
    ("glm-5-nvfp4", "GLM-5-NVFP4.json"),
    ("glm-5-fp8", "GLM-5-FP8.json"),
    ("kimi-k2.5-nvfp4", "Kimi-K2.5-NVFP4.json"),
    ("deepseek-v3-fp8", "DeepSeek-V3.json"),
    ("qwen3-235b-a22b-nvfp4", "Qwen3-235B-A22B-NVFP4.json"),
    ("qwen3-30b-a3b", "Qwen3-30B-A3B.json"),
    ("mixtral-8x7b", "Mixtral-8x7B-v0.1.json"),
    ("llama-3.1-70b", "Meta-Llama-3.1-70B.json"),
    ("llama-3.1-405b", "Meta-Llama-3.1-405B.json"),
];

fn renamed(mut s: ModelSpec, like: &ModelSpec) -> ModelSpec {
    s.name = like.name.clone();
    s.source = like.source.clone();
    s
}

#[test]
fn exact_presets_equal_the_loaded_configs() {
    for (key, file) in EXACT {
        let preset = ModelSpec::preset(key).unwrap();
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
    // and the Thinking models' 256K context.
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
}

#[test]
fn all_required_model_presets_exist() {
    let names = ModelSpec::preset_names();
    for key in [
        "glm-5-nvfp4",
        "glm-5-fp8",
        "glm-4.7-fp8",
        "kimi-k2.5-nvfp4",
        "kimi-k2-nvfp4",
        "kimi-k2-thinking-int4",
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
        assert!(g.bf16_tflops > 100.0, "{key}");
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
    assert_eq!(find("NVIDIA H100 80GB HBM3").as_deref(), Some("h100-sxm"));
    assert_eq!(find("NVIDIA H100 PCIe").as_deref(), Some("h100-pcie"));
    assert_eq!(find("NVIDIA H200").as_deref(), Some("h200"));
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
