//! The attention core of models whose layers do not all run the same attention (gpt-oss's
//! sliding-window layers, Qwen3-Next / Qwen3.5's Gated-DeltaNet layers): a layer's attention
//! is costed as the layer-weighted mean of its kinds, since the stage sums one layer's cost
//! times its layers.
//!
//! - full layers read every cached key (DSA-capped), as [`super::attn_core`] says;
//! - sliding layers read at most `window` keys per query (SGLang's SWA pool keeps no more);
//! - linear layers read and write each request's fixed state once per decode step (fla's
//!   fused recurrent gated-delta-rule kernel, called from SGLang's
//!   `hybrid_linear_attn_backend.py`), not the context, and prefill with the chunked kernel
//!   (FLOPs [`models::spec::LinearAttentionSpec::prefill_flops_per_token`]) reading and
//!   writing the state once per chunk.
//!
//! Sliding keys come from the batch's sums: `min(mean context, window)` per decode query and
//! `min(pairs, queries × window)` in prefill, exact when every request is on the same side of the
//! window.

use super::batch_stats::BatchStats;
use super::gdn_table::GdnFamily;
use super::kernel::{KernelCurve, OpTime};
use models::spec::LayerAttention;
use models::{Layout, ModelSpec};

/// Shares of the layers by attention kind, and what the non-full kinds read per GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerMix {
    /// Share of full-attention layers (1 for every model without other kinds).
    pub full: f64,
    /// Share of sliding-window layers.
    pub sliding: f64,
    /// Share of Gated-DeltaNet layers.
    pub linear: f64,
    /// The sliding window, tokens (0 without sliding layers).
    pub window: f64,
    /// One request's state bytes in one linear layer on one GPU.
    pub state_bytes_per_request: f64,
    /// Decode and prefill FLOPs per token in one linear layer on one GPU.
    pub linear_decode_flops_per_token: f64,
    pub linear_prefill_flops_per_token: f64,
    /// The engine's measured recurrent decode kernel for this GPU's heads, where one exists
    /// ([`super::gdn_table`]): linear layers' decode is priced from it, not from the curve.
    pub gdn_decode: Option<&'static GdnFamily>,
}

impl LayerMix {
    /// Every layer full attention.
    pub const FULL: LayerMix = LayerMix {
        full: 1.0,
        sliding: 0.0,
        linear: 0.0,
        window: 0.0,
        state_bytes_per_request: 0.0,
        linear_decode_flops_per_token: 0.0,
        linear_prefill_flops_per_token: 0.0,
        gdn_decode: None,
    };

    /// The mix of `spec`'s main-model layers on one GPU of `layout`.
    pub fn of(spec: &ModelSpec, layout: &Layout) -> LayerMix {
        if !spec.is_hybrid_attention() {
            return LayerMix::FULL;
        }
        let n = spec.num_layers.max(1) as f64;
        let share = |k| spec.num_layers_of_kind(k) as f64 / n;
        let attn_tp = if layout.dp_attention { 1 } else { layout.tp };
        let la = spec.linear_attention;
        LayerMix {
            full: share(LayerAttention::Full),
            sliding: share(LayerAttention::Sliding),
            linear: share(LayerAttention::Linear),
            window: spec.sliding_window.map_or(0.0, f64::from),
            state_bytes_per_request: la.map_or(0.0, |l| l.state_bytes_per_request(attn_tp) as f64),
            linear_decode_flops_per_token: la
                .map_or(0.0, |l| l.decode_flops_per_token() / attn_tp as f64),
            linear_prefill_flops_per_token: la
                .map_or(0.0, |l| l.prefill_flops_per_token() / attn_tp as f64),
            gdn_decode: None,
        }
    }

    /// The mix with its linear layers' decode priced by `table` where one was measured.
    pub fn with_gdn_table(mut self, table: Option<&'static GdnFamily>) -> LayerMix {
        if self.linear > 0.0 {
            self.gdn_decode = table;
        }
        self
    }

    /// Decode keys a sliding layer reads for `st`'s queries (see the module docs).
    pub fn sliding_decode_keys(&self, st: &BatchStats) -> f64 {
        if st.decode <= 0.0 {
            return 0.0;
        }
        st.decode * (st.decode_context / st.decode).min(self.window)
    }

    /// (query-key pairs, cached keys read) of a sliding layer in `st`'s prefill.
    pub fn sliding_prefill(&self, st: &BatchStats) -> (f64, f64) {
        (
            st.prefill_pairs.min(st.prefill * self.window),
            st.prefill_cached.min(st.chunks * self.window),
        )
    }

    /// A linear layer's decode of `requests` requests (`tokens` query tokens): the state read
    /// once per request and stored after every query token, the delta-rule FLOPs per token; from
    /// the measured kernel where there is one ([`super::gdn_table`]: its time per request count,
    /// above the state's DRAM traffic).
    ///
    /// A speculative verify pass (k + 1 tokens a request) keeps the state after each of its tokens
    /// so that the one after the last accepted token can be resumed: vLLM's
    /// `fused_recurrent_gated_delta_rule_fwd_kernel` stores the full fp32 state inside its token
    /// loop (`vllm/model_executor/layers/fla/ops/fused_recurrent.py` @03c6dad, "keep the states for
    /// multi-query tokens"), SGLang's verify writes each step's state to its
    /// `intermediate_states_buffer`. So a verify pass streams k more states a request than a decode
    /// step, which one token a request (the kernel tables' case) never shows. SGLang's commit copy
    /// of the accepted state (one more read and write) is left out.
    pub fn linear_decode(&self, curve: &KernelCurve, requests: f64, tokens: f64) -> OpTime {
        let extra_states = (tokens - requests).max(0.0);
        if let Some(g) = self.gdn_decode {
            return OpTime {
                s: g.decode_s(requests) + g.stores_s(extra_states),
                memory_bound: true,
            };
        }
        curve.time_monotone(
            requests,
            tokens * self.linear_decode_flops_per_token,
            (2.0 * requests + extra_states) * self.state_bytes_per_request,
        )
    }

    /// A linear layer's chunked prefill of `tokens` tokens in `chunks` chunks.
    pub fn linear_prefill(&self, curve: &KernelCurve, tokens: f64, chunks: f64) -> OpTime {
        curve.time_monotone(
            tokens,
            tokens * self.linear_prefill_flops_per_token,
            2.0 * chunks * self.state_bytes_per_request,
        )
    }
}

/// `t` weighted by `share` (a layer kind's share of the layers).
pub fn weighted(mut t: OpTime, share: f64) -> OpTime {
    t.s *= share;
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::gdn_table::{GDN_STATE_DRAM_BYTES_PER_S, GdnKey};
    use crate::efficiency::{EfficiencyModel, KernelKind};

    /// A verify pass of 4 tokens a request (3 drafts) keeps the state after each token: on 64
    /// requests at TP4 that is 3 × 64 MiB stored more than a decode step, at the kernel's DRAM
    /// rate, by the measured kernel and by the efficiency curve alike; one token a request is the
    /// table's own time.
    #[test]
    fn a_verify_pass_stores_a_state_per_token() {
        let f = GdnFamily::find(&GdnKey {
            engine: "vllm".into(),
            k_heads: 4,
            v_heads: 16,
            head_k_dim: 128,
            head_v_dim: 128,
        })
        .unwrap();
        let gpu = models::gpu::GpuSpec::preset("rtx-pro-6000-server").unwrap();
        let curve = KernelCurve::new(
            EfficiencyModel::builtin(),
            &gpu,
            KernelKind::GqaDecode,
            "bf16",
            gpu.memory_gb_per_s * 1e9,
            1.0,
        );
        let mix = LayerMix {
            linear: 0.75,
            state_bytes_per_request: f.state_bytes(),
            ..LayerMix::FULL
        };
        let tabled = mix.with_gdn_table(Some(f));
        assert_eq!(tabled.linear_decode(&curve, 64.0, 64.0).s, f.decode_s(64.0));
        let extra = tabled.linear_decode(&curve, 64.0, 256.0).s - f.decode_s(64.0);
        let want = 3.0 * 64.0 * f.state_bytes() / GDN_STATE_DRAM_BYTES_PER_S;
        assert!((extra / want - 1.0).abs() < 1e-9, "{extra} vs {want}");
        let decode = mix.linear_decode(&curve, 64.0, 64.0).s;
        let verify = mix.linear_decode(&curve, 64.0, 256.0).s;
        assert!(verify > 1.5 * decode, "{verify} vs {decode}");
    }
}
