//! Writes model presets from the shared HF configs (development aid; the presets are reviewed
//! and committed, and tests keep them equal to the loader's output).
use models::ModelSpec;
fn main() {
    let dir = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hf-configs"
    ));
    let out = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/models"));
    for (key, file, source) in [
        (
            "glm-5-nvfp4",
            "GLM-5-NVFP4.json",
            "nvidia/GLM-5-NVFP4 (config.json + hf_quant_config.json)",
        ),
        (
            "glm-5-fp8",
            "GLM-5-FP8.json",
            "zai-org/GLM-5-FP8 (config.json)",
        ),
        (
            "glm-4.7-fp8",
            "GLM-4.7-FP8.trimmed.json",
            "zai-org/GLM-4.7-FP8 (config.json)",
        ),
        (
            "kimi-k2.5-nvfp4",
            "Kimi-K2.5-NVFP4.json",
            "nvidia/Kimi-K2.5-NVFP4 (config.json, text_config)",
        ),
        (
            "kimi-k2-nvfp4",
            "Kimi-K2-Instruct.json",
            "moonshotai/Kimi-K2-Instruct architecture with the NVFP4 recipe of nvidia/Kimi-K2-Thinking-NVFP4 (attention and lm_head bf16, FP8 KV)",
        ),
        (
            "kimi-k2-thinking-int4",
            "Kimi-K2-Instruct.json",
            "moonshotai/Kimi-K2-Thinking (config.json: compressed-tensors INT4 group 32 on routed experts)",
        ),
        (
            "deepseek-v3-fp8",
            "DeepSeek-V3.json",
            "deepseek-ai/DeepSeek-V3 (config.json)",
        ),
        (
            "qwen3-235b-a22b-nvfp4",
            "Qwen3-235B-A22B-NVFP4.json",
            "nvidia/Qwen3-235B-A22B-NVFP4 (config.json + hf_quant_config.json)",
        ),
        (
            "qwen3-30b-a3b",
            "Qwen3-30B-A3B.json",
            "Qwen/Qwen3-30B-A3B (config.json)",
        ),
        (
            "mixtral-8x7b",
            "Mixtral-8x7B-v0.1.json",
            "mistralai/Mixtral-8x7B-v0.1 (config.json)",
        ),
        (
            "llama-3.1-70b",
            "Meta-Llama-3.1-70B.json",
            "meta-llama/Llama-3.1-70B (config.json)",
        ),
        (
            "llama-3.1-405b",
            "Meta-Llama-3.1-405B.json",
            "meta-llama/Llama-3.1-405B (config.json)",
        ),
    ] {
        let mut s = ModelSpec::from_hf_config(&dir.join(file)).unwrap();
        s.name = key.into();
        s.source = format!("https://huggingface.co/{source}");
        let text = serde_json::to_string_pretty(&s).unwrap() + "\n";
        std::fs::write(out.join(format!("{key}.json")), text).unwrap();
    }
}
