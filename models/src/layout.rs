//! A parallel layout of a model over GPUs, in SGLang's terms.

use crate::error::{ModelsError, Result};
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

    /// The SGLang flags that launch this layout, e.g. `--tp 4 --pp-size 2`.
    pub fn sglang_flags(&self) -> String {
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
            return fail(format!(
                "{heads} attention heads are not divisible by --tp {attn_tp}"
            ));
        }
        if let AttentionSpec::Gqa { num_kv_heads, .. } = spec.attention
            && num_kv_heads % attn_tp != 0
            && attn_tp % num_kv_heads.max(1) != 0
        {
            return fail(format!(
                "{num_kv_heads} KV heads neither divide nor are divisible by --tp {attn_tp}"
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
                        "{} routed experts are not divisible by --ep-size {}",
                        moe.num_routed_experts, self.ep
                    ));
                }
                let slices = (self.tp / self.ep) as u64;
                if moe.expert_intermediate_size % slices != 0 {
                    return fail(format!(
                        "expert intermediate size {} is not divisible by tp/ep = {slices}",
                        moe.expert_intermediate_size
                    ));
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
                "dense intermediate size {} is not divisible by --tp {}",
                spec.dense_intermediate_size, self.tp
            ));
        }
        if spec.num_layers < self.pp {
            return fail(format!(
                "{} layers cannot fill {} pipeline stages",
                spec.num_layers, self.pp
            ));
        }
        Ok(())
    }

    /// [`Self::validate`], and that the layout uses exactly `gpus` GPUs (`tp·pp == gpus`).
    pub fn validate_for_gpus(&self, spec: &ModelSpec, gpus: u32) -> Result<()> {
        self.validate(spec)?;
        if self.gpus() != gpus {
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
