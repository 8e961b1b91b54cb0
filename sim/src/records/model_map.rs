//! Which model preset a record's checkpoint name and quantization describe: the families the
//! records carry, matched by name (community re-uploads of a preset's checkpoint included).

/// Weight formats no preset carries, as a record's quantization words name them: OCP
/// microscaling (MXFP4, MXFP8: 32-value blocks with a power-of-two scale, other kernels than
/// NVFP4's 16-value e4m3-scaled blocks) and NF3 (3-bit lookup). A record whose checkpoint (or
/// whose load-time conversion) has any of its weights in one of them is not the preset's bytes:
/// "mxfp4" is not NVFP4 though it contains "fp4", and MXFP8 dense layers halve BF16 ones.
pub const FORMATS_WITHOUT_PRESET: &[&str] = &["mxfp4", "mxfp8", "nf3"];

/// The first of [`FORMATS_WITHOUT_PRESET`] the checkpoint name or the quantization words of its
/// weights name (a KV cache's dtype is not the weights': [`weight_words`]).
pub fn format_without_preset(model: &str, quant: &str) -> Option<&'static str> {
    if named_checkpoint(model, quant).is_some() {
        return None;
    }
    formats_named(model, quant).next()
}

/// Every one of [`FORMATS_WITHOUT_PRESET`] the checkpoint name or its weights' words name.
fn formats_named(model: &str, quant: &str) -> impl Iterator<Item = &'static str> {
    let words = format!("{model} {}", weight_words(quant)).to_ascii_lowercase();
    // linears converted to MXFP8 as the engine loads them are the launch line's doing, read
    // from its `--quantization-config` (`records::mapping` refuses the record without one), not
    // a format of the checkpoint's
    let online = converted_to_mxfp8_at_load(quant) && !model.to_ascii_lowercase().contains("mxfp8");
    FORMATS_WITHOUT_PRESET
        .iter()
        .copied()
        .filter(move |f| !(online && *f == "mxfp8") && words.contains(f))
}

/// The preset of the checkpoint `model` names by its HuggingFace id (a preset's cited repository,
/// or a re-upload [`models::ModelSpec::preset_for_hf_id`] knows), where the preset carries every
/// microscaling or NF3 format the words name: festr2's GLM-5.2 with AMD's MXFP4 experts is its
/// own preset's bytes, not a format no preset has.
fn named_checkpoint(model: &str, quant: &str) -> Option<&'static str> {
    let spec = models::ModelSpec::preset_for_hf_id(model)?;
    let carried: Vec<String> = spec.formats_used().iter().map(|f| f.name()).collect();
    formats_named(model, quant)
        .all(|f| carried.iter().any(|c| c == f))
        .then(|| {
            models::ModelSpec::preset_names()
                .into_iter()
                .find(|n| *n == spec.name)
        })
        .flatten()
}

/// Whether a record's quantization words say the checkpoint's BF16 linears were quantized to
/// MXFP8 as the engine loaded them ("online mxfp8", "converted to MXFP8 at load"), which a
/// `--quantization-config` with a linear `mxfp8` spec does.
pub fn converted_to_mxfp8_at_load(quant: &str) -> bool {
    converted_at_load(quant) == Some("mxfp8")
}

/// The format a record's quantization words say the checkpoint's BF16 linears were quantized to
/// as the engine loaded them: `mxfp8` ("online mxfp8", "converted to MXFP8 at load") or `fp8`
/// ("online fp8", "converted to static block FP8 at load"); `None` where they say neither.
pub fn converted_at_load(quant: &str) -> Option<&'static str> {
    let q = quant.to_ascii_lowercase();
    // the words between "converted to" and "at load": "MXFP8", "static block FP8"
    let targets: Vec<&str> = q
        .split("converted to")
        .skip(1)
        .filter(|rest| rest.contains(" at load"))
        .filter_map(|rest| rest.split(" at load").next())
        .collect();
    ["mxfp8", "fp8"].into_iter().find(|f| {
        q.contains(&format!("online {f}"))
            || targets
                .iter()
                .any(|t| t.split_whitespace().any(|w| w == *f))
    })
}

/// The quantization words that describe the weights: every clause (between `,` `;` `(` `)`)
/// naming the KV cache's dtype left out, so "bf16 weights, fp8 KV cache" does not read as an
/// FP8 checkpoint.
fn weight_words(quant: &str) -> String {
    quant
        .to_ascii_lowercase()
        .split([',', ';', '(', ')'])
        .filter(|clause| {
            let c = clause.trim();
            !(c.contains("kv cache") || c.contains("kv-cache") || c.contains("kv dtype"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The model preset of a checkpoint name and quantization words; `None` where the words name a
/// format no preset carries ([`format_without_preset`]).
pub fn model_preset(model: &str, quant: &str) -> Option<&'static str> {
    if let Some(key) = named_checkpoint(model, quant) {
        return Some(key);
    }
    if format_without_preset(model, quant).is_some() {
        return None;
    }
    if let Ok(spec) = models::ModelSpec::preset(model) {
        return models::ModelSpec::preset_names()
            .into_iter()
            .find(|n| *n == spec.name);
    }
    let m = model.to_ascii_lowercase();
    let q = format!("{m} {}", weight_words(quant));
    let fp4 = q.contains("nvfp4") || q.contains("fp4");
    if let Some(key) = glm5_preset(&m, fp4, q.contains("fp8")) {
        return key;
    }
    if m.contains("kimi-k2") {
        // K2.5 and K2.6 are one architecture with the MoonViT vision tower (data/hf-configs:
        // nvidia's K2.6-NVFP4 config has K2.5's text and vision configs), which the engines load
        // on every GPU; K2-Thinking is text only
        let thinking = m.contains("thinking");
        return if q.contains("int4") || q.contains("w4a16") {
            Some(if thinking {
                "kimi-k2-thinking-int4"
            } else {
                "kimi-k2.5"
            })
        } else if fp4 {
            Some(if thinking {
                "kimi-k2-thinking-nvfp4"
            } else {
                "kimi-k2.5-nvfp4"
            })
        } else {
            None
        };
    }
    // lukealonso's Qwen3.5 NVFP4 quantizes the routed experts only, as nvidia's preset does
    if m.contains("qwen3.5-397b") {
        return if fp4 {
            Some("qwen3.5-397b-a17b-nvfp4")
        } else if q.contains("bf16") {
            Some("qwen3.5-397b-a17b")
        } else {
            None
        };
    }
    // Qwen3-Next-80B-A3B's Instruct and Thinking checkpoints share one architecture (BF16)
    if m.contains("qwen3-next-80b") {
        return (!fp4 && !q.contains("fp8")).then_some("qwen3-next-80b-a3b");
    }
    if m.contains("minimax-m2.5") {
        return if fp4 {
            Some("minimax-m2.5-nvfp4")
        } else if q.contains("awq") || q.contains("int4") {
            // mratsim's BF16-INT4-AWQ: BF16 attention, W4A16 group-32 experts (its model card)
            Some("minimax-m2.5-int4-awq")
        } else if q.contains("fp8") {
            Some("minimax-m2.5")
        } else {
            None
        };
    }
    if m.contains("deepseek-r1") || (m.contains("deepseek-v3") && !m.contains("v3.2")) {
        return if fp4 {
            Some("deepseek-r1-fp4")
        } else if q.contains("fp8") || m.contains("deepseek-ai/") {
            // DeepSeek's own checkpoints ship fp8 block-wise weights
            Some("deepseek-v3-fp8")
        } else {
            None
        };
    }
    None
}

/// The GLM-5 family's presets by version (GLM-5, 5.1, 5.2) and format: `None` for another
/// model, `Some(None)` for a GLM-5.x format no preset has (BF16). GLM-5.1 is GLM-5's
/// architecture with its own ModelOpt exclusion list (community NVFP4 uploads such as
/// lukealonso/GLM-5.1-NVFP4-MTP are the same quantization); GLM-5.2 has its own presets (issue
/// 35: GLM-5.1's layer shapes with the indexer shared by three of every four layers and 1M
/// positions); zai's FP8 releases of 5.1 and 5.2 are their architecture with GLM-5-FP8's
/// block-128 scheme.
fn glm5_preset(m: &str, fp4: bool, fp8: bool) -> Option<Option<&'static str>> {
    let [nvfp4, fp8_key] = if m.contains("glm-5.1") {
        ["glm-5.1-nvfp4", "glm-5.1-fp8"]
    } else if m.contains("glm-5.2") {
        ["glm-5.2-nvfp4", "glm-5.2-fp8"]
    } else if m.contains("glm-5") && !m.contains("glm-5.") {
        ["glm-5-nvfp4", "glm-5-fp8"]
    } else {
        return None;
    };
    Some(if fp4 {
        Some(nvfp4)
    } else if fp8 {
        Some(fp8_key)
    } else {
        None
    })
}

#[cfg(test)]
mod tests {
    use super::model_preset;

    /// Issue 35: GLM-5.2's NVFP4 uploads resolve to GLM-5.2's own preset (its shared indexers),
    /// no longer to GLM-5.1's; no preset has another GLM-5.2 format.
    /// The KV cache's dtype is not the weights': a BF16 checkpoint with an FP8 cache is no FP8
    /// checkpoint, and the weights' own words still count beside it.
    #[test]
    fn a_kv_cache_dtype_does_not_name_the_weights_format() {
        assert_eq!(
            model_preset("zai-org/GLM-5", "bf16 weights, fp8 KV cache"),
            None
        );
        assert_eq!(
            model_preset("zai-org/GLM-5-FP8", "fp8 block weights; bf16 KV cache"),
            Some("glm-5-fp8")
        );
        assert_eq!(
            model_preset("Qwen/Qwen3-Next-80B-A3B-Instruct", "bf16; fp8 KV cache"),
            Some("qwen3-next-80b-a3b")
        );
        assert_eq!(
            model_preset(
                "nvidia/MiniMax-M2.5-NVFP4",
                "nvfp4 (MoE GEMM weights NVFP4, FP8 KV cache)"
            ),
            Some("minimax-m2.5-nvfp4")
        );
    }

    /// MXFP4 experts are not NVFP4 though the words hold "fp4", and an MXFP8 checkpoint is not
    /// the preset's bytes: no preset, never a misread, unless the checkpoint is one a preset
    /// names and carries that format (festr2's GLM-5.2 with AMD's MXFP4 experts). NVFP4
    /// experts whose BF16 linears were converted to MXFP8 at load are the preset's checkpoint
    /// (the launch line's `--quantization-config` converts them, `records::mapping`).
    #[test]
    fn microscaling_and_nf3_checkpoints_match_no_preset() {
        let amd = "festr2/GLM-5.2-BF16-AMDMXFP4experts";
        assert_eq!(
            model_preset(amd, "MXFP4 (OCP microscaling, not NVFP4) routed experts"),
            Some("glm-5.2-mxfp4-experts")
        );
        // a format the named checkpoint does not carry is still none of its presets
        assert_eq!(model_preset(amd, "MXFP4 experts with NF3 tiers"), None);
        for (model, quant) in [
            (
                "someone/GLM-5.2-AMDMXFP4experts",
                "MXFP4 (OCP microscaling, not NVFP4) routed experts",
            ),
            ("madeby561/GLM-5.2-MXFP8-NVFP4-NF3-Hybrid", "mixed"),
            ("some/GLM-5-NVFP4", "nvfp4 with NF3 experts"),
        ] {
            assert_eq!(model_preset(model, quant), None, "{model} / {quant}");
            assert!(super::format_without_preset(model, quant).is_some());
        }
        assert_eq!(
            model_preset("lukealonso/GLM-5.2-NVFP4", "nvfp4 (modelopt_fp4)"),
            Some("glm-5.2-nvfp4")
        );
        let online = "nvfp4 (modelopt_fp4) routed experts; online mxfp8: eligible BF16 dense linears converted to MXFP8 at load";
        assert_eq!(
            model_preset("lukealonso/GLM-5.2-NVFP4", online),
            Some("glm-5.2-nvfp4")
        );
        // an unknown MXFP4-expert checkpoint stays refused whatever was converted at load
        assert!(
            super::format_without_preset(
                "someone/GLM-5.2-AMDMXFP4experts",
                &format!("MXFP4 routed experts; {online}")
            )
            .is_some()
        );
        assert!(super::format_without_preset("someone/GLM-5.2-MXFP8", online).is_some());
    }

    #[test]
    fn glm52_nvfp4_resolves_to_its_own_preset() {
        assert_eq!(
            model_preset("lukealonso/GLM-5.2-NVFP4", "nvfp4 (modelopt_fp4)"),
            Some("glm-5.2-nvfp4")
        );
        assert_eq!(
            model_preset("some-uploader/GLM-5.2-NVFP4-MTP", "nvfp4"),
            Some("glm-5.2-nvfp4")
        );
        assert_eq!(model_preset("zai-org/GLM-5.2", "bf16"), None);
        // zai's FP8 releases (thirty-fourth session)
        assert_eq!(
            model_preset("zai-org/GLM-5.2-FP8", "fp8"),
            Some("glm-5.2-fp8")
        );
        assert_eq!(
            model_preset("zai-org/GLM-5.1-FP8", "fp8"),
            Some("glm-5.1-fp8")
        );
    }

    /// Issue 35: the AWQ INT4 MiniMax-M2.5 upload resolves to its preset (it was unknown-model).
    #[test]
    fn minimax_awq_resolves() {
        assert_eq!(
            model_preset("mratsim/Minimax-M2.5-BF16-INT4-AWQ", "awq int4 (W4A16)"),
            Some("minimax-m2.5-int4-awq")
        );
        assert_eq!(
            model_preset("MiniMaxAI/MiniMax-M2.5", "fp8"),
            Some("minimax-m2.5")
        );
    }

    /// The format a record's words say the BF16 linears were converted to at load.
    #[test]
    fn a_conversion_at_load_is_read_from_the_words() {
        use super::converted_at_load;
        for (words, want) in [
            (
                "nvfp4; online mxfp8: eligible BF16 dense linears converted to MXFP8 at load",
                Some("mxfp8"),
            ),
            (
                "eligible BF16 dense linears converted to static block FP8 at load",
                Some("fp8"),
            ),
            ("online fp8 of the dense linears", Some("fp8")),
            ("nvfp4 (modelopt_fp4); fp8 KV cache", None),
            ("fp8 block weights converted to bf16 for the draft", None),
        ] {
            assert_eq!(converted_at_load(words), want, "{words}");
        }
    }
}
