//! SGLang's defaults for the options it derives from the GPU and the layout when a launch line
//! leaves them out, as `ServerArgs._handle_gpu_memory_settings` (SGLang main of 2026-01-28)
//! computes them:
//!
//! - `gpu_mem` is the smallest GPU's total memory in MiB (what `nvidia-smi` reports);
//! - `chunked_prefill_size` and `cuda_graph_max_bs` by `gpu_mem` band (MiB): < 20 Ki: 2048 / 8;
//!   < 35 Ki: 2048 / 24 (TP < 4) or 80; < 60 Ki: 4096 / 32 or 160; < 90 Ki: 8192 / 256 or 512;
//!   < 160 Ki: 8192 / 256 or 512; above: 16384 / 512;
//! - `mem_fraction_static = round((gpu_mem − reserved) / gpu_mem, 3)` with `reserved` (MiB)
//!   = 512 + 1.5 × max(chunk, 2048) (max-prefill-tokens when chunking is off) + 2 × graph bs +
//!   1024 × tp × pp / 8, plus 3 × graph bs × dp (and 1.5 × graph bs × dp above 300) with DP
//!   attention; at least 10 GiB on GPUs above 60 GiB; plus 2 GiB for EAGLE-style speculation
//!   (6 GiB for STANDALONE).
//!
//! Checked against the user's server: 97,887 MiB RTX PRO 6000 at TP8 → chunk 8192, graph bs 512,
//! 0.848 (its `server_args` line says 0.848, 8192, 512).
//!
//! Speculative decoding (`auto_choose_speculative_params`): `(num_steps, eagle_topk,
//! num_draft_tokens)` = (3, 1, 4) for DeepSeek-V3-architecture checkpoints, (5, 4, 8) otherwise;
//! with `eagle_topk` 1 SGLang sets `num_draft_tokens = num_steps + 1`.

/// What SGLang looks at when it fills in a default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DefaultsContext {
    /// Memory of the smallest GPU, bytes.
    pub gpu_memory_bytes: u64,
    /// `--tp-size`.
    pub tp: u32,
    /// `--pp-size`.
    pub pp: u32,
    /// `--dp-size` when `--enable-dp-attention` is on, else 1.
    pub dp_attention_size: u32,
}

impl DefaultsContext {
    /// `gpu_mem` of SGLang, MiB.
    pub fn gpu_mem_mib(&self) -> f64 {
        self.gpu_memory_bytes as f64 / (1u64 << 20) as f64
    }

    /// `(chunked_prefill_size, cuda_graph_max_bs)` SGLang picks for this GPU and TP size.
    pub fn chunk_and_graph_bs(&self) -> (u32, u32) {
        let gib = |g: f64| g * 1024.0;
        let mem = self.gpu_mem_mib();
        let small_tp = self.tp < 4;
        let pick = |lo: u32, hi: u32| if small_tp { lo } else { hi };
        if mem < gib(20.0) {
            (2048, 8)
        } else if mem < gib(35.0) {
            (2048, pick(24, 80))
        } else if mem < gib(60.0) {
            (4096, pick(32, 160))
        } else if mem < gib(160.0) {
            (8192, pick(256, 512))
        } else {
            (16384, 512)
        }
    }

    /// SGLang's `mem_fraction_static` for the given chunk (`None` = chunking disabled, then
    /// `max_prefill_tokens` counts), graph batch size and speculative algorithm.
    pub fn mem_fraction_static(
        &self,
        chunk: Option<u32>,
        max_prefill_tokens: u32,
        cuda_graph_max_bs: u32,
        speculative_algorithm: Option<&str>,
    ) -> f64 {
        let mem = self.gpu_mem_mib();
        let bs = cuda_graph_max_bs as f64;
        let mut reserved = 512.0;
        reserved += chunk.unwrap_or(max_prefill_tokens).max(2048) as f64 * 1.5;
        reserved += bs * 2.0;
        reserved += (self.tp * self.pp) as f64 / 8.0 * 1024.0;
        if self.dp_attention_size > 1 {
            let dp = self.dp_attention_size as f64;
            reserved += bs * dp * 3.0;
            if cuda_graph_max_bs > 300 {
                reserved += bs * dp * 1.5;
            }
        }
        if mem > 60.0 * 1024.0 {
            reserved = reserved.max(10.0 * 1024.0);
        }
        match speculative_algorithm {
            Some("STANDALONE") => reserved += 6.0 * 1024.0,
            Some("NGRAM") | None => {}
            Some(_) => reserved += 2.0 * 1024.0,
        }
        if mem <= 0.0 {
            return 0.88;
        }
        ((mem - reserved) / mem * 1000.0).round() / 1000.0
    }
}

/// Architectures (HF `architectures[0]`) SGLang treats as multimodal
/// (`configs/model_config.py::multimodal_model_archs`, main of 2026-01-28): the ones of the
/// checkpoint families shardwise knows, not the whole list. `Qwen3_5MoeForConditionalGeneration`
/// is not in it in that version, so Qwen3.5's fraction is not adjusted.
pub const MULTIMODAL_MODEL_ARCHS: &[&str] = &[
    "KimiK25ForConditionalGeneration",
    "KimiVLForConditionalGeneration",
    "Qwen2VLForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration",
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "Glm4vForConditionalGeneration",
    "Glm4vMoeForConditionalGeneration",
    "Llama4ForConditionalGeneration",
    "Gemma3ForConditionalGeneration",
];

/// SGLang's `ServerArgs.adjust_mem_fraction_for_vlm`, applied to a defaulted
/// `mem_fraction_static` when the checkpoint's architecture is multimodal: with the tower's
/// `L` blocks of width `H` (defaults 24 and 1024), `ratio = L·H² / (24·1024²)`, the fraction is
/// multiplied by `0.95 × clamp(1 − 0.1 × (ratio − 1), 0.8, 1.05)` and not re-rounded.
/// Kimi-K2.5 (27 × 1152) at TP8 on 97,887 MiB: 0.848 → 0.7715 (its server printed 0.771).
/// `None` when the checkpoint is not one SGLang adjusts.
pub fn vlm_mem_fraction_factor(vision: Option<&models::spec::VisionSpec>) -> Option<f64> {
    let v = vision.filter(|v| MULTIMODAL_MODEL_ARCHS.contains(&v.architecture.as_str()))?;
    let ratio = v.num_layers as f64 * (v.hidden_size as f64).powi(2) / (24.0 * 1024.0 * 1024.0);
    Some(0.95 * (1.0 - 0.1 * (ratio - 1.0)).clamp(0.8, 1.05))
}

/// `(num_steps, eagle_topk, num_draft_tokens)` SGLang chooses for a checkpoint of `model_type`.
pub fn speculative_params(model_type: &str) -> (u32, u32, u32) {
    // DeepseekV3ForCausalLM: DeepSeek-V3/R1 and Kimi-K2 (model_type deepseek_v3 / kimi_k2).
    if matches!(model_type, "deepseek_v3" | "kimi_k2" | "deepseek_v2") {
        (3, 1, 4)
    } else {
        (5, 4, 8)
    }
}

/// The tokens SGLang verifies a step for `num_draft_tokens` as given: with `eagle_topk` 1 it
/// sets `num_steps + 1` whatever was asked (`ServerArgs._handle_speculative_decoding`:
/// "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when
/// speculative_eagle_topk == 1", lukealonso/sglang @c70c22a1 `server_args.py`), with the sentence
/// saying so where it changed the number. One rule for a launch line and a record's flags.
pub fn verified_draft_tokens(
    num_steps: u32,
    eagle_topk: u32,
    num_draft_tokens: u32,
) -> (u32, Option<String>) {
    if eagle_topk == 1 && num_draft_tokens != num_steps + 1 {
        let note = format!(
            "--speculative-num-draft-tokens {}: SGLang sets num_steps + 1 when --speculative-eagle-topk is 1",
            num_steps + 1
        );
        (num_steps + 1, Some(note))
    } else {
        (num_draft_tokens, None)
    }
}

/// The speculative options SGLang runs when only EAGLE on the checkpoint's MTP layers is asked
/// for (`auto_choose_speculative_params`): [`speculative_params`] for `model_type`, no draft path,
/// the acceptance left to a measurement or the prior.
pub fn default_speculative_options(model_type: &str) -> crate::options::SpeculativeOptions {
    let (num_steps, eagle_topk, num_draft_tokens) = speculative_params(model_type);
    crate::options::SpeculativeOptions {
        algorithm: "EAGLE".into(),
        num_steps,
        eagle_topk,
        num_draft_tokens,
        draft_model_path: None,
        accept_length: None,
        prompt_kind: None,
        forced_by: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_server_defaults_are_reproduced() {
        let ctx = DefaultsContext {
            gpu_memory_bytes: 97_887 << 20,
            tp: 8,
            pp: 1,
            dp_attention_size: 1,
        };
        let (chunk, bs) = ctx.chunk_and_graph_bs();
        assert_eq!((chunk, bs), (8192, 512));
        assert_eq!(ctx.mem_fraction_static(Some(chunk), 16384, bs, None), 0.848);
    }

    #[test]
    fn bands_and_adjustments() {
        let ctx = |gib: u64, tp| DefaultsContext {
            gpu_memory_bytes: gib << 30,
            tp,
            pp: 1,
            dp_attention_size: 1,
        };
        assert_eq!(ctx(80, 1).chunk_and_graph_bs(), (8192, 256));
        assert_eq!(ctx(24, 8).chunk_and_graph_bs(), (2048, 80));
        assert_eq!(ctx(180, 8).chunk_and_graph_bs(), (16384, 512));
        // H100 80 GB at TP1: reserved = max(512 + 12288 + 512 + 128, 10240) = 13440 MiB.
        let f = ctx(80, 1).mem_fraction_static(Some(8192), 16384, 256, None);
        assert_eq!(
            f,
            ((81920.0 - 13440.0) / 81920.0 * 1000.0_f64).round() / 1000.0
        );
        // DP attention over 8 ranks reserves 3 × bs × dp more (and 1.5 × more above 300).
        let dpa = DefaultsContext {
            dp_attention_size: 8,
            ..ctx(141, 8)
        };
        assert!(dpa.mem_fraction_static(Some(8192), 16384, 512, None) < 0.8);
        assert!(
            ctx(141, 8).mem_fraction_static(Some(8192), 16384, 512, Some("EAGLE"))
                < ctx(141, 8).mem_fraction_static(Some(8192), 16384, 512, None)
        );
        assert_eq!(speculative_params("deepseek_v3"), (3, 1, 4));
        assert_eq!(speculative_params("glm_moe_dsa"), (5, 4, 8));
    }

    /// The fractions SGLang prints on 97,887 MiB at TP1/2/4/8 (EAGLE at TP8), and Kimi-K2.5's
    /// vision-tower adjustment (its server printed 0.771).
    #[test]
    fn fractions_on_the_users_gpu_and_the_vlm_adjustment() {
        let ctx = |tp| DefaultsContext {
            gpu_memory_bytes: 97_887 << 20,
            tp,
            pp: 1,
            dp_attention_size: 1,
        };
        for (tp, f) in [(1, 0.863), (2, 0.861), (4, 0.854), (8, 0.848)] {
            let (chunk, bs) = ctx(tp).chunk_and_graph_bs();
            assert_eq!(ctx(tp).mem_fraction_static(Some(chunk), 16384, bs, None), f);
        }
        assert_eq!(
            ctx(8).mem_fraction_static(Some(8192), 16384, 512, Some("EAGLE")),
            0.827
        );
        let k25 = models::ModelSpec::preset("kimi-k2.5").unwrap();
        let adjusted = 0.848 * vlm_mem_fraction_factor(k25.vision.as_ref()).unwrap();
        assert!((adjusted - 0.771_456).abs() < 1e-6, "{adjusted}");
        assert_eq!((adjusted * 1000.0).round() / 1000.0, 0.771);
        // text-only and not-listed architectures are left alone
        let text = models::ModelSpec::preset("kimi-k2-thinking-nvfp4").unwrap();
        assert_eq!(vlm_mem_fraction_factor(text.vision.as_ref()), None);
        let mut qwen35 = k25.vision.clone().unwrap();
        qwen35.architecture = "Qwen3_5MoeForConditionalGeneration".into();
        assert_eq!(vlm_mem_fraction_factor(Some(&qwen35)), None);
    }
}
