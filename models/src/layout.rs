//! A parallel layout of a model over GPUs, in SGLang's terms.

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
