//! Attention heads padded to a multiple of the TP size, as the b12x vLLM fork's "virtual TP"
//! runs a DSA model whose heads the TP size does not divide (GLM-5.x's 64 heads at TP6).
//!
//! Source: `local-inference-lab/vllm` `vllm/config/virtual_tp.py` (`_build_b12x_virtual_tp_plan`,
//! `_make_virtual_axis`, `_make_virtual_vocab_axis`), the build the rtx6kpro GLM-5.2 v13 page
//! ran, whose start-up prints `attention heads 64 -> 96` at TP6: each GPU holds
//! `ceil(ceil(heads / tp) / 8) × 8` heads (the B12X sparse-MLA head block), the routed experts'
//! intermediate size is padded per GPU to a multiple of 32 over `tp` slices, and the vocabulary to
//! a multiple of `lcm(64, tp)`. The checkpoint's tails are zero-filled at load: the padded rows are
//! stored, read and computed like real ones. (A later commit of that file, 7e39fe0, pads GLM's
//! heads only to a multiple of TP, 64 → 66; the build the records ran printed 96.)

use crate::spec::{AttentionSpec, ModelSpec};

/// Heads one GPU computes are padded to a multiple of this (`_ATTENTION_HEAD_LOCAL_ALIGNMENT`).
pub const HEADS_PER_GPU_ALIGNMENT: u32 = 8;
/// The routed experts' intermediate slice per GPU is padded to a multiple of this
/// (`_MOE_INTERMEDIATE_LOCAL_ALIGNMENT`).
pub const EXPERT_SLICE_ALIGNMENT: u64 = 32;
/// The vocabulary is padded to a multiple of `lcm(this, tp)` (`_VOCAB_GLOBAL_ALIGNMENT`).
pub const VOCAB_ALIGNMENT: u64 = 64;

/// The padded sizes of one model at one TP size: `(original, padded)` of each padded axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadPadding {
    /// The TP size the sizes are padded for.
    pub tp: u32,
    /// `num_attention_heads`: the checkpoint's, the padded (a multiple of `tp`).
    pub heads: (u32, u32),
    /// The routed experts' `moe_intermediate_size` (the shared experts are sized by it too);
    /// `None` for a dense model.
    pub expert_intermediate: Option<(u64, u64)>,
    /// `vocab_size` (embedding and lm_head rows).
    pub vocab: (u64, u64),
}

impl HeadPadding {
    /// One line for a prediction's notes, e.g. `attention heads 64 -> 96 (16 a GPU at TP6)`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "attention heads {} -> {} ({} a GPU at TP{})",
            self.heads.0,
            self.heads.1,
            self.heads.1 / self.tp,
            self.tp
        );
        if let Some((a, b)) = self.expert_intermediate.filter(|(a, b)| a != b) {
            s.push_str(&format!(", expert intermediate size {a} -> {b}"));
        }
        if self.vocab.0 != self.vocab.1 {
            s.push_str(&format!(", vocab {} -> {}", self.vocab.0, self.vocab.1));
        }
        s
    }
}

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to.max(1)) * to.max(1)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl ModelSpec {
    /// Whether the fork pads this model at all: MLA with a DSA indexer (its
    /// `_is_sparse_mla_config`: `kv_lora_rank`, `qk_rope_head_dim` and a positive `index_topk`).
    pub fn head_padding_supported(&self) -> bool {
        matches!(
            self.attention,
            AttentionSpec::Mla {
                indexer: Some(_),
                ..
            }
        )
    }

    /// The padding at `tp` (experts sliced over `tp`), `None` where `tp` divides the heads
    /// already (the fork pads nothing then) or the model is not one the fork pads.
    pub fn head_padding(&self, tp: u32) -> Option<HeadPadding> {
        let heads = self.attention.num_heads();
        if tp == 0 || heads.is_multiple_of(tp) || !self.head_padding_supported() {
            return None;
        }
        let per_gpu = round_up(
            u64::from(heads.div_ceil(tp)),
            u64::from(HEADS_PER_GPU_ALIGNMENT),
        );
        let tp64 = u64::from(tp);
        let expert_intermediate = self.moe.map(|m| {
            let slice = round_up(
                m.expert_intermediate_size.div_ceil(tp64),
                EXPERT_SLICE_ALIGNMENT,
            );
            (m.expert_intermediate_size, slice * tp64)
        });
        let vocab_step = VOCAB_ALIGNMENT / gcd(VOCAB_ALIGNMENT, tp64) * tp64;
        Some(HeadPadding {
            tp,
            heads: (heads, per_gpu as u32 * tp),
            expert_intermediate,
            vocab: (self.vocab_size, round_up(self.vocab_size, vocab_step)),
        })
    }

    /// This model with `p`'s padded sizes: more heads (their q, kv-up and o projection rows, as
    /// zeros), wider experts (shared ones too: the fork pads `moe_intermediate_size`, which they
    /// are sized by) and a longer vocabulary; everything else as it was.
    pub fn with_head_padding(&self, p: &HeadPadding) -> ModelSpec {
        let mut s = self.clone();
        let (AttentionSpec::Mla { num_heads, .. } | AttentionSpec::Gqa { num_heads, .. }) =
            &mut s.attention;
        *num_heads = p.heads.1;
        if let (Some(m), Some((_, padded))) = (s.moe.as_mut(), p.expert_intermediate) {
            m.expert_intermediate_size = padded;
        }
        s.vocab_size = p.vocab.1;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fork's own start-up line for GLM-5.x at TP6 (rtx6kpro GLM-5.2 v13: `attention heads
    /// 64 -> 96`); the expert and vocabulary axes by its formulas.
    #[test]
    fn glm_at_tp6_pads_as_the_fork_prints() {
        let glm = ModelSpec::preset("glm-5.1-nvfp4").unwrap();
        let p = glm.head_padding(6).unwrap();
        assert_eq!(p.heads, (64, 96));
        // ceil(2048 / 6) = 342 -> 352 a GPU
        assert_eq!(p.expert_intermediate, Some((2048, 2112)));
        // lcm(64, 6) = 192: 154880 -> 154944
        assert_eq!(p.vocab, (154_880, 154_944));
        let padded = glm.with_head_padding(&p);
        assert_eq!(padded.attention.num_heads(), 96);
        assert!(models_layout_ok(&padded, 6));
        // TP8 divides 64: no padding
        assert_eq!(glm.head_padding(8), None);
    }

    #[test]
    fn only_dsa_models_are_padded() {
        let kimi = ModelSpec::preset("kimi-k2.5").unwrap();
        assert_eq!(kimi.head_padding(6), None);
    }

    fn models_layout_ok(spec: &ModelSpec, tp: u32) -> bool {
        crate::Layout::tp(tp).validate(spec).is_ok()
    }
}
