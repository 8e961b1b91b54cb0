//! The acceptance assumed when nothing was measured: a chain probability `p` per drafted
//! position (lowest, middle, highest published) by draft method × prompt kind, the model the
//! figure was measured on, and its source. The draft length enters through the chain
//! ([`super::chain_length`]): `L(k) = Σ_{i=0..k} pⁱ`, the form InferenceX's published curves
//! follow within 0.07 tokens at 1–4 drafts.
//!
//! Every row is a published measurement, none fitted to the records shardwise is scored on. The
//! synthetic rows are the ranges the rtx6kpro wiki's model pages published beside their decode
//! matrices (the dev set's own source: a prediction of those records "from the prior" is not
//! independent of them; the held-out records are, except the GLM-5.1 and GLM-5.2 rows, from two
//! pages of `validation/first-contact-3-records.json`, whose other records run on them).
//!
//! Lookup ([`prior`]): the row of this method and prompt kind measured on a model whose name
//! starts like the served one, else that method and kind on any model, else the MTP row of that
//! kind (a stated stand-in); every [`Prior`] says which.

use super::{DraftMethod, PromptKind, chain_length};
use serde::Serialize;

/// One published acceptance figure.
struct Row {
    method: DraftMethod,
    kind: PromptKind,
    /// Model-name prefix of the preset it was measured on (`glm-5`), `""` for a figure shardwise
    /// applies to any model of the method.
    model: &'static str,
    /// Chain probability: (lowest, middle, highest).
    p: (f64, f64, f64),
    source: &'static str,
}

/// The published rows. Each chain probability is solved from the source's own figure with
/// [`super::chain_probability`].
const ROWS: &[Row] = &[
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Random,
        model: "deepseek",
        // AL 1.99 at 2 drafts → p 0.61; ±0.15 around one published run (no spread given)
        p: (0.46, 0.61, 0.76),
        source: "vllm-project/vllm PR 41044: DeepSeek-V4-Flash MTP, 2 drafts, `--dataset-name random` 1024/256, temperature 1.0: mean acceptance length 1.99 (49.38% of drafts, positions 70% / 29%); one run, range ±0.15 assumed",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::PaddedText,
        model: "deepseek",
        // AL 3.19 at 3 drafts → p 0.851; ±0.1 around one published run (no spread given)
        p: (0.75, 0.851, 0.95),
        source: "sgl-project/sglang issue 7927 ('MTP only' row of its table): DeepSeek-V3 TP4 under SGLang, EAGLE 3 steps / topk 1 / 4 draft tokens: accept length 3.19; the issue's test command, `sglang.bench_serving --dataset-name random --random-input 2500 --random-output 300 --port 30009` (ShareGPT text cut or repeated to length), given after its PD scripts, targets port 30009, which is the MTP-only server's port in the issue; one run, range ±0.1 assumed",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Synthetic,
        model: "glm-5",
        // AL 2.19–2.80 at 3 drafts → p 0.604–0.765, middle 2.495 → 0.69
        p: (0.604, 0.69, 0.765),
        source: "local-inference-lab/rtx6kpro models/glm5.md @e2c2b95 'MTP / Speculative Decoding': 'Accept length: 2.19-2.80 tokens' (SGLang NEXTN 3 steps, 4 draft tokens: the page's runs of 2026-03-09, before its decode matrix, whose launch drafts 4 steps; prompts not stated, taken as synthetic)",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Synthetic,
        model: "glm-5.1",
        // rates 0.351 / 0.422 / 0.494 of 3 drafts → AL 2.05 / 2.27 / 2.48 → p 0.561–0.687
        p: (0.561, 0.627, 0.687),
        source: "joninco/rtx6kpro models/glm5.1_v6.md @599426f '## NVFP4/MXFP8 A16 DCP/MTP Speed Sweep': the `acc` column read as vLLM's draft acceptance rate (MTP 3 from lukealonso/GLM-5.1-NVFP4-MTP, draft_sample_method probabilistic, llm_decode_bench 0.4.24 at context 0, DCP 1/4/8): 0.351–0.494, median 0.422",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Synthetic,
        model: "glm-5.2",
        // AL 2.75 / 2.83 / 3.03 at 3 drafts → p 0.754 / 0.772 / 0.817
        p: (0.754, 0.772, 0.817),
        source: "Visual-Synthesizer/rtx6kpro models/glm5.2_v18.md @f5676fd '## MTP3 And Acceptance': the server log's accepted length over its seven checkpoint and overlay rows (vLLM MTP 3, llm_decode_bench one stream at context 0): 2.75–3.03, median 2.83",
    },
    Row {
        method: DraftMethod::Eagle,
        kind: PromptKind::Synthetic,
        model: "kimi-k2",
        // rates 0.333 / 0.396 / 0.47 (10th / 50th / 90th percentile of 112 cells) at 3 drafts
        p: (0.544, 0.604, 0.665),
        source: "local-inference-lab/rtx6kpro models/kimi-k26-v4.md @6fbbc09 'Spec acceptance rate' tables (vLLM EAGLE-3 lightseekorg/kimi-k2.6-eagle3-mla, 3 tokens): 10th/50th/90th percentile of its 112 cells 0.333 / 0.396 / 0.470",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Natural,
        model: "qwen3",
        // teacher-forced first-position acceptance, K = 1: prose 0.49, factual 0.61, pooled 0.65
        p: (0.48, 0.60, 0.65),
        source: "tenstorrent/vllm issue 442 (measured comment): Qwen3.8-27B MTP, teacher-forced greedy, 1 draft: prose 0.49, technical 0.48, factual 0.61, pooled 0.65",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Code,
        model: "glm-5",
        p: (0.75, 0.80, 0.85),
        source: "SemiAnalysisAI/InferenceX golden_al_distribution/glm5.2_mtp.yaml (vLLM MTP on B300, SPEED-Bench coding, run 28058352479): 1.84 / 2.50 / 2.99 / 3.33 at 1–4 drafts; the DeepSeek-V3 report's 85–90% first-token acceptance (arXiv:2412.19437 §5.4.3) the top",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Code,
        model: "qwen3.5",
        // thinking off / on, 1–4 drafts: AL 1.92–1.93 / 2.70–2.73 / 3.33–3.39 / 3.83–3.97 → p
        // 0.866 (4 drafts, off) … 0.93 (1 draft, on), the middle 0.89 (3 drafts, on)
        p: (0.866, 0.89, 0.93),
        source: "SemiAnalysisAI/InferenceX golden_al_distribution/qwen3.5_mtp.yaml @ab51b06 (vLLM MTP on B300, qwen3.5-397b-a17b-nvfp4, SPEED-Bench coding, run 27317114007): thinking off 1.92 / 2.70 / 3.33 / 3.83, on 1.93 / 2.73 / 3.39 / 3.97 at 1–4 drafts",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Code,
        model: "deepseek",
        // thinking on / off, 1–4 drafts: AL 1.79–1.92 / 2.27–2.61 / 2.49–2.97 / 2.54–3.00 → p
        // 0.653 (4 drafts, on) … 0.92 (1 draft, off), the middle 0.76
        p: (0.653, 0.76, 0.92),
        source: "SemiAnalysisAI/InferenceX golden_al_distribution/dsv4_mtp.yaml @ab51b06 (vLLM MTP on B300, deepseek-v4-pro, SPEED-Bench coding, run 27180633016): thinking on 1.79 / 2.27 / 2.49 / 2.54, off 1.92 / 2.61 / 2.97 / 3.00 at 1–4 drafts (the curve flattens past 3 drafts, which a chain's single p does not follow)",
    },
    Row {
        method: DraftMethod::Eagle,
        kind: PromptKind::Code,
        model: "kimi-k2",
        p: (0.70, 0.75, 0.80),
        source: "SemiAnalysisAI/InferenceX golden_al_distribution/kimik2.5_eagle3.yaml (vLLM EAGLE-3 on B300, SPEED-Bench coding, thinking off, run 28122195822): 1.80 / 2.33 / 2.75 / 3.06 at 1–4 drafts",
    },
    Row {
        method: DraftMethod::Mtp,
        kind: PromptKind::Reasoning,
        model: "",
        // AL 4.50 at 8 drafts → p 0.81; position 0 at 8 drafts 0.76, at 1 draft 0.83
        p: (0.76, 0.81, 0.85),
        source: "vllm-project/vllm PR 48892 (measured comment): MTP on GSM8K, temperature 0: 8 drafts mean acceptance length 4.50 (position 0 76%), 1 draft 83%",
    },
    Row {
        method: DraftMethod::Ngram,
        kind: PromptKind::Natural,
        model: "",
        p: (0.05, 0.11, 0.2),
        source: "kekzl/imp PR 1460: ordinary prose with the n-gram drafter's defaults, 11.2% of drafts accepted (range assumed ±0.1)",
    },
];

/// The acceptance assumed for a configuration, with its range and source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prior {
    pub method: DraftMethod,
    pub kind: PromptKind,
    /// Chain probability per drafted position: lowest, middle, highest.
    pub p_low: f64,
    pub p_mid: f64,
    pub p_high: f64,
    /// Where the figure was published.
    pub source: String,
    /// How the row was matched: `measured on this model family`, or what stands in.
    pub matched: String,
}

impl Prior {
    /// Acceptance lengths (lowest, middle, highest) of a chain of `k` drafts.
    pub fn lengths(&self, k: u32) -> (f64, f64, f64) {
        (
            chain_length(self.p_low, k),
            chain_length(self.p_mid, k),
            chain_length(self.p_high, k),
        )
    }

    /// `prior: random prompts, MTP layer, p 0.61 (0.46–0.76) per drafted token (measured on
    /// deepseek; vllm-project/vllm PR 41044: …)`.
    pub fn describe(&self) -> String {
        format!(
            "prior for {} prompts, {}: {:.2} ({:.2}–{:.2}) per drafted token, {}; {}",
            self.kind.name(),
            self.method.name(),
            self.p_mid,
            self.p_low,
            self.p_high,
            self.matched,
            self.source
        )
    }
}

/// The prior for `model` (a preset name) drafting with `method` on prompts of `kind`.
pub fn prior(model: &str, method: DraftMethod, kind: PromptKind) -> Prior {
    let of = |r: &Row, matched: String| Prior {
        method,
        kind,
        p_low: r.p.0,
        p_mid: r.p.1,
        p_high: r.p.2,
        source: r.source.to_string(),
        matched,
    };
    let same = |r: &&Row| r.method == method && r.kind == kind;
    // the longest family name the model starts with: GLM-5.1's own row before GLM-5's
    if let Some(r) = ROWS
        .iter()
        .filter(same)
        .filter(|r| !r.model.is_empty() && model.starts_with(r.model))
        .max_by_key(|r| r.model.len())
    {
        return of(r, format!("measured on {}", r.model));
    }
    if let Some(r) = ROWS.iter().find(same) {
        let on = if r.model.is_empty() {
            "measured on another model".to_string()
        } else {
            format!("measured on {}, not {model}", r.model)
        };
        return of(r, on);
    }
    // no figure for this method and kind: the MTP row of the kind stands in, then synthetic
    let r = ROWS
        .iter()
        .find(|r| r.method == DraftMethod::Mtp && r.kind == kind)
        .or_else(|| ROWS.iter().find(|r| r.kind == PromptKind::Synthetic))
        .expect("the table holds a synthetic row");
    of(
        r,
        format!(
            "no published {} figure for {} prompts: the {} row of {} prompts stands in",
            method.name(),
            kind.name(),
            r.method.name(),
            r.kind.name()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acceptance::chain_probability;

    /// SGLang's random dataset (ShareGPT text padded to length) has its own published row, and
    /// it accepts more than random token ids: the DeepSeek-V3 MTP run of sglang issue 7927.
    #[test]
    fn padded_text_has_its_own_row_above_random_tokens() {
        let padded = prior("deepseek-v3", DraftMethod::Mtp, PromptKind::PaddedText);
        assert!(padded.source.contains("7927"), "{}", padded.source);
        assert!(
            (padded.lengths(3).1 - 3.19).abs() < 0.01,
            "{:?}",
            padded.lengths(3)
        );
        let random = prior("deepseek-v3", DraftMethod::Mtp, PromptKind::Random);
        assert!(padded.p_mid > random.p_mid);
        // another family drafting on padded text takes the row, said as another model's
        let glm = prior("glm-5.2-fp8", DraftMethod::Mtp, PromptKind::PaddedText);
        assert!(glm.matched.contains("not glm-5.2-fp8"), "{}", glm.matched);
    }

    /// Every row's middle lies inside its range, and random prompts accept less than code.
    #[test]
    fn rows_are_ordered_ranges_and_random_accepts_less_than_code() {
        for r in ROWS {
            assert!(r.p.0 <= r.p.1 && r.p.1 <= r.p.2, "{}", r.source);
            assert!(r.p.0 > 0.0 && r.p.2 < 1.0, "{}", r.source);
        }
        for m in [DraftMethod::Mtp, DraftMethod::Eagle] {
            let l = |k| prior("glm-5-nvfp4", m, k).lengths(3).1;
            assert!(l(PromptKind::Random) < l(PromptKind::Code), "{m:?}");
            assert!(l(PromptKind::Synthetic) < l(PromptKind::Code), "{m:?}");
        }
    }

    /// The rows' probabilities are the sources' own figures solved through the chain.
    #[test]
    fn rows_reproduce_their_sources_figures() {
        assert!((chain_probability(1.99, 2) - 0.61).abs() < 0.01);
        assert!((chain_probability(2.495, 3) - 0.69).abs() < 0.01);
        assert!((chain_probability(2.19, 3) - 0.604).abs() < 0.01);
        assert!((chain_probability(1.0 + 3.0 * 0.396, 3) - 0.604).abs() < 0.01);
        assert!((chain_probability(4.50, 8) - 0.81).abs() < 0.01);
        let g = prior("glm-5-nvfp4", DraftMethod::Mtp, PromptKind::Synthetic);
        let (lo, _, hi) = g.lengths(3);
        assert!(
            (lo - 2.19).abs() < 0.01 && (hi - 2.80).abs() < 0.01,
            "{lo} {hi}"
        );
        // GLM-5.1's rates (1 + 3r) and GLM-5.2's accepted lengths, each model on its own row
        let lengths = |m| prior(m, DraftMethod::Mtp, PromptKind::Synthetic).lengths(3);
        for (model, want) in [
            (
                "glm-5.1-nvfp4",
                (1.0 + 3.0 * 0.351, 1.0 + 3.0 * 0.422, 1.0 + 3.0 * 0.494),
            ),
            ("glm-5.2-nvfp4", (2.75, 2.83, 3.03)),
        ] {
            let got = lengths(model);
            for (g, w) in [(got.0, want.0), (got.1, want.1), (got.2, want.2)] {
                assert!((g - w).abs() < 0.01, "{model}: {got:?} against {want:?}");
            }
            let p = prior(model, DraftMethod::Mtp, PromptKind::Synthetic);
            assert_eq!(p.matched, format!("measured on {}", &model[..7]));
        }
        // InferenceX's golden coding curves: Qwen3.5's 3.33–3.39 at 3 drafts inside its row's
        // range, DeepSeek-V4's 2.49–2.97 too; other MTP models keep GLM's coding row
        let code = |m| prior(m, DraftMethod::Mtp, PromptKind::Code);
        for (model, al3) in [
            ("qwen3.5-397b-a17b-nvfp4", [3.33, 3.39]),
            ("deepseek-v3-fp8", [2.49, 2.97]),
        ] {
            let (lo, _, hi) = code(model).lengths(3);
            assert!(
                al3.iter().all(|l| (lo..=hi).contains(l)),
                "{model}: {lo}–{hi}"
            );
        }
        for other in ["kimi-k2.5", "minimax-m2.5", "glm-5-nvfp4"] {
            assert!(code(other).source.contains("glm5.2_mtp"), "{other}");
        }
    }

    #[test]
    fn a_prior_says_where_it_came_from_and_what_stands_in() {
        let own = prior("kimi-k2.5", DraftMethod::Eagle, PromptKind::Synthetic);
        assert_eq!(own.matched, "measured on kimi-k2");
        let other = prior(
            "qwen3.5-397b-a17b",
            DraftMethod::Eagle,
            PromptKind::Synthetic,
        );
        assert!(other.matched.contains("not qwen3.5"), "{}", other.matched);
        let stand_in = prior("kimi-k2.5", DraftMethod::Eagle, PromptKind::Random);
        assert!(
            stand_in.matched.contains("stands in"),
            "{}",
            stand_in.matched
        );
        assert_eq!(stand_in.p_mid, 0.61);
        assert!(own.describe().contains("rtx6kpro"), "{}", own.describe());
    }
}
