//! Every parallel layout of N GPUs the way SGLang's launch flags express it, each either feasible
//! for a model or rejected with the reason.
//!
//! A layout is `--tp T --pp-size P` with `T × P = N`, routed experts sliced by TP (`--ep-size 1`) or
//! split by expert parallelism (`--ep-size E`, E dividing T), and optionally attention data
//! parallelism (`--enable-dp-attention`, modelled as `--dp T`). The layouts people try first come
//! first: TP8, TP4×PP2, EP8, then the rest by pipeline depth.

use models::{Layout, ModelSpec};
use serde::{Deserialize, Serialize};

/// One layout of the GPUs and whether the model can run on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutCandidate {
    /// The layout (SGLang flags: [`Layout::sglang_flags`]).
    pub layout: Layout,
    /// Why it cannot run this model (heads or experts do not divide, …); `None` when it can.
    pub rejected: Option<String>,
}

impl LayoutCandidate {
    /// True when the model can run on this layout (memory fit is checked later by the cost model).
    pub fn is_feasible(&self) -> bool {
        self.rejected.is_none()
    }
}

/// Positive divisors of `n`, ascending.
fn divisors(n: u32) -> impl Iterator<Item = u32> {
    (1..=n).filter(move |d| n.is_multiple_of(*d))
}

/// Position of a layout in the listing: the three layouts users compare first, then shallower
/// pipelines, less expert parallelism, attention-DP last.
fn listing_rank(layout: &Layout, gpus: u32) -> (u32, u32, u32, bool, u32) {
    let first = [
        Layout::tp(gpus),
        Layout {
            tp: gpus / 2,
            pp: 2,
            ep: 1,
            dp_attention: false,
        },
        Layout {
            tp: gpus,
            pp: 1,
            ep: gpus,
            dp_attention: false,
        },
    ];
    let pinned = first
        .iter()
        .position(|l| l == layout)
        .map_or(first.len() as u32, |p| p as u32);
    (
        pinned,
        layout.pp,
        layout.ep,
        layout.dp_attention,
        u32::MAX - layout.tp,
    )
}

/// Every layout of `gpus` GPUs for `model`, feasible ones with `rejected: None`, the others with the
/// reason from [`Layout::validate`] or the engine rule they break. Expert-parallel and
/// attention-DP variants are listed only for MoE models (a dense model has nothing to split by
/// expert, and SGLang's DP attention exists to pair with a parallel MoE).
pub fn enumerate_layouts(gpus: u32, model: &ModelSpec) -> Vec<LayoutCandidate> {
    let is_moe = model.moe.is_some();
    let mut out = Vec::new();
    for tp in divisors(gpus) {
        let pp = gpus / tp;
        for ep in divisors(tp) {
            if ep > 1 && !is_moe {
                continue;
            }
            for dp_attention in [false, true] {
                if dp_attention && (!is_moe || tp == 1) {
                    continue;
                }
                let layout = Layout {
                    tp,
                    pp,
                    ep,
                    dp_attention,
                };
                out.push(LayoutCandidate {
                    layout,
                    rejected: check_layout(&layout, model).err(),
                });
            }
        }
    }
    out.sort_by_key(|c| listing_rank(&c.layout, gpus));
    out
}

/// Whether `model` can run on `layout` as SGLang would launch it, the reason when not
/// ([`Layout::validate`]: heads, KV heads, experts and intermediate sizes divide, `ep` divides
/// `tp`, enough layers for the stages).
pub fn check_layout(layout: &Layout, model: &ModelSpec) -> Result<(), String> {
    layout.validate(model).map_err(|e| match e {
        models::ModelsError::ImpossibleLayout { reason, .. } => reason,
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_gpus_list_the_usual_layouts_first() {
        let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
        let all = enumerate_layouts(8, &spec);
        let names: Vec<String> = all.iter().map(|c| c.layout.short_name()).collect();
        assert_eq!(&names[..3], &["TP8", "TP4xPP2", "EP8"]);
        for want in ["TP2xPP4", "TP1xPP8", "TP8+EP8+DPA", "TP8+DPA"] {
            assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
        }
        // every layout occupies all 8 GPUs and appears once
        for c in &all {
            assert_eq!(c.layout.gpus(), 8);
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }

    #[test]
    fn dense_model_gets_no_expert_layouts() {
        let spec = ModelSpec::preset("llama-3.1-70b").unwrap();
        let all = enumerate_layouts(8, &spec);
        assert!(
            all.iter()
                .all(|c| c.layout.ep == 1 && !c.layout.dp_attention)
        );
        assert_eq!(all.len(), 4); // TP8, TP4xPP2, TP2xPP4, TP1xPP8
    }

    #[test]
    fn bad_divisions_are_rejected_with_a_reason() {
        let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
        let tp3 = Layout::tp(3);
        let why = check_layout(&tp3, &spec).unwrap_err();
        assert!(!why.is_empty());
        let ep3 = Layout {
            tp: 6,
            pp: 1,
            ep: 4,
            dp_attention: false,
        };
        assert!(check_layout(&ep3, &spec).unwrap_err().contains("divide"));
    }
}
