//! A parallel layout of a model over GPUs, in SGLang's terms.

use crate::error::{ModelsError, Result};
use crate::format::WeightFormat;
use crate::spec::{AttentionSpec, ModelSpec};
use serde::{Deserialize, Serialize};

/// How a model is spread over GPUs, as SGLang's launch flags say it.
///
/// `tp * pp` GPUs in all. `ep` divides the TP group's GPUs among the routed experts (`--ep-size`):
/// `ep == 1` slices every expert by TP; `ep == tp` gives each GPU whole experts. `dp_attention`
/// (`--enable-dp-attention`) replicates attention per GPU of the TP group instead of sharding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Layout {
    /// `--tp`: tensor-parallel size (GPUs per pipeline stage).
    pub tp: u32,
    /// `--pp-size`: pipeline stages.
    pub pp: u32,
    /// `--ep-size`: expert-parallel size within the TP group (1 = experts sliced by TP).
    pub ep: u32,
    /// `--enable-dp-attention`: attention data-parallel across the TP group.
    pub dp_attention: bool,
}

impl Layout {
    /// Plain tensor parallelism over `tp` GPUs.
    pub fn tp(tp: u32) -> Self {
        Layout {
            tp,
            pp: 1,
            ep: 1,
            dp_attention: false,
        }
    }

    /// GPUs the layout occupies.
    pub fn gpus(&self) -> u32 {
        self.tp * self.pp
    }

    /// The SGLang flags that launch this layout on one node, e.g. `--tp 4 --pp-size 2`.
    pub fn sglang_flags(&self) -> String {
        self.sglang_flags_on_nodes(1)
    }

    /// The SGLang flags that launch this layout over `nnodes` nodes: [`Self::sglang_flags`] plus
    /// `--nnodes N` when N > 1 (each node then adds its own `--node-rank R` and the shared
    /// `--dist-init-addr HOST:PORT`), e.g. `--tp 8 --pp-size 2 --nnodes 2`.
    pub fn sglang_flags_on_nodes(&self, nnodes: u32) -> String {
        let mut s = format!("--tp {}", self.tp);
        if self.pp > 1 {
            s.push_str(&format!(" --pp-size {}", self.pp));
        }
        if self.ep > 1 {
            s.push_str(&format!(" --ep-size {}", self.ep));
        }
        if self.dp_attention {
            s.push_str(&format!(" --dp {} --enable-dp-attention", self.tp));
        }
        if nnodes > 1 {
            s.push_str(&format!(" --nnodes {nnodes}"));
        }
        s
    }

    /// A short name, e.g. `TP4xPP2`, `EP8`, `TP8+EP8+DPA`.
    pub fn short_name(&self) -> String {
        let mut s = if self.ep == self.tp && self.ep > 1 && !self.dp_attention {
            format!("EP{}", self.ep)
        } else {
            let mut t = format!("TP{}", self.tp);
            if self.ep > 1 {
                t.push_str(&format!("+EP{}", self.ep));
            }
            t
        };
        if self.pp > 1 {
            s.push_str(&format!("xPP{}", self.pp));
        }
        if self.dp_attention {
            s.push_str("+DPA");
        }
        s
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.short_name())
    }
}

impl Layout {
    /// Checks that SGLang can run `spec` with this layout; `ModelsError::ImpossibleLayout` says why.
    ///
    /// Rules: every size ≥ 1; attention heads divisible by the attention TP size (`tp`, or 1 with
    /// DP attention). GQA KV heads must be divisible by TP, or TP by KV heads: like SGLang we allow
    /// replicating KV heads when `num_kv_heads < tp` (each rank keeps one head). Routed experts
    /// divisible by `ep`; `ep` divides `tp`; expert and dense intermediate sizes divisible by the
    /// slice counts (`tp/ep` and `tp`); at least one layer per pipeline stage.
    pub fn validate(&self, spec: &ModelSpec) -> Result<()> {
        let fail = |reason: String| {
            Err(ModelsError::ImpossibleLayout {
                layout: self.sglang_flags(),
                model: spec.name.clone(),
                reason,
            })
        };
        if self.tp == 0 || self.pp == 0 || self.ep == 0 {
            return fail("--tp, --pp-size and --ep-size must each be at least 1".into());
        }
        let attn_tp = if self.dp_attention { 1 } else { self.tp };
        let heads = spec.attention.num_heads();
        if !heads.is_multiple_of(attn_tp) {
            let divisors: Vec<String> = (1..=heads)
                .filter(|d| heads.is_multiple_of(*d))
                .map(|d| d.to_string())
                .collect();
            return fail(format!(
                "--tp {attn_tp} does not divide the {heads} attention heads (TP sizes that do: {})",
                divisors.join(", ")
            ));
        }
        if let AttentionSpec::Gqa { num_kv_heads, .. } = spec.attention
            && num_kv_heads % attn_tp != 0
            && attn_tp % num_kv_heads.max(1) != 0
        {
            return fail(format!(
                "--tp {attn_tp} and the {num_kv_heads} KV heads do not divide one another"
            ));
        }
        if !self.tp.is_multiple_of(self.ep) {
            return fail(format!(
                "--ep-size {} must divide --tp {} (SGLang's EP group lives inside the TP group)",
                self.ep, self.tp
            ));
        }
        match spec.moe {
            Some(moe) => {
                if moe.num_routed_experts % self.ep != 0 {
                    return fail(format!(
                        "--ep-size {} does not divide the {} routed experts",
                        self.ep, moe.num_routed_experts
                    ));
                }
                let slices = (self.tp / self.ep) as u64;
                if moe.expert_intermediate_size % slices != 0 {
                    return fail(format!(
                        "tp/ep = {slices} does not divide the expert intermediate size {}",
                        moe.expert_intermediate_size
                    ));
                }
                check_block(
                    spec.formats.routed_experts,
                    moe.expert_intermediate_size / slices,
                    "routed expert",
                )
                .or_else(fail)?;
                let shared = moe.expert_intermediate_size * moe.num_shared_experts as u64;
                if shared > 0 {
                    check_block(
                        spec.formats.shared_experts,
                        shared / self.tp as u64,
                        "shared expert",
                    )
                    .or_else(fail)?;
                }
            }
            None if self.ep > 1 => {
                return fail(format!(
                    "--ep-size {} needs a MoE model; this one is dense",
                    self.ep
                ));
            }
            None => {}
        }
        if spec.num_dense_layers() > 0
            && !spec.dense_intermediate_size.is_multiple_of(self.tp as u64)
        {
            return fail(format!(
                "--tp {} does not divide the dense intermediate size {}",
                self.tp, spec.dense_intermediate_size
            ));
        }
        if spec.num_dense_layers() > 0 {
            check_block(
                spec.formats.dense_mlp,
                spec.dense_intermediate_size / self.tp as u64,
                "dense MLP",
            )
            .or_else(fail)?;
        }
        if spec.num_layers < self.pp {
            return fail(format!(
                "{} layers cannot fill {} pipeline stages",
                spec.num_layers, self.pp
            ));
        }
        Ok(())
    }

    /// [`Self::validate`], and that the layout fits a machine of `gpus` GPUs (`tp·pp ≤ gpus`). A
    /// layout of fewer GPUs runs as one replica on part of the machine, as SGLang would run
    /// `--tp 4` on an 8-GPU box; the other GPUs sit idle.
    pub fn validate_for_gpus(&self, spec: &ModelSpec, gpus: u32) -> Result<()> {
        self.validate(spec)?;
        if self.gpus() > gpus {
            return Err(ModelsError::ImpossibleLayout {
                layout: self.sglang_flags(),
                model: spec.name.clone(),
                reason: format!(
                    "--tp {} × --pp-size {} = {} GPUs, but the machine has {gpus}",
                    self.tp,
                    self.pp,
                    self.gpus()
                ),
            });
        }
        Ok(())
    }
}

/// Block-wise FP8 weights are sliced whole blocks at a time: SGLang refuses a TP slice whose
/// output size is not a multiple of the block (`… is not divisible by weight quantization
/// block_n`), e.g. Qwen3-235B-FP8's 1536-wide experts at TP8 (192 per rank, block 128).
fn check_block(format: WeightFormat, slice: u64, what: &str) -> std::result::Result<(), String> {
    match format {
        WeightFormat::Fp8 { block } if block > 0 && !slice.is_multiple_of(block as u64) => {
            Err(format!(
                "{what} slice of {slice} columns per GPU is not a multiple of the FP8 block size \
                 {block} (use a smaller --tp or --ep-size so each GPU holds whole blocks)"
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_gpus_than_the_machine_is_one_replica_not_an_error() {
        let glm = ModelSpec::preset("glm-5-nvfp4").unwrap();
        let tp4 = Layout::tp(4);
        assert!(tp4.validate_for_gpus(&glm, 8).is_ok());
        assert!(tp4.validate_for_gpus(&glm, 4).is_ok());
        let err = Layout::tp(16).validate_for_gpus(&glm, 8).unwrap_err();
        assert!(err.to_string().contains("16 GPUs"), "{err}");
    }

    #[test]
    fn flags_name_the_nodes_only_when_there_are_several() {
        let l = Layout {
            tp: 8,
            pp: 2,
            ep: 1,
            dp_attention: false,
        };
        assert_eq!(l.sglang_flags(), "--tp 8 --pp-size 2");
        assert_eq!(l.sglang_flags_on_nodes(1), l.sglang_flags());
        assert_eq!(l.sglang_flags_on_nodes(2), "--tp 8 --pp-size 2 --nnodes 2");
        let ep16 = Layout {
            tp: 16,
            pp: 1,
            ep: 16,
            dp_attention: true,
        };
        assert_eq!(
            ep16.sglang_flags_on_nodes(2),
            "--tp 16 --ep-size 16 --dp 16 --enable-dp-attention --nnodes 2"
        );
    }
}
