//! Costing one iteration: per-layer op times (roofline with size-dependent efficiency), the
//! layout's communication, launch overheads, summed per pipeline stage.
//!
//! Each op takes `max(FLOPs / achievable FLOP/s, bytes / achievable bandwidth)`; the breakdown
//! files it under `compute_s` when the FLOPs side wins, else under `weight_read_s` (weight GEMMs,
//! experts) or `kv_read_s` (attention core, DSA indexer).

use super::kernel::OpTime;
use super::model::{
    CPU_PER_KERNEL_S, CPU_PER_REQUEST_S, CostModel, ENVELOPE_KNOTS, Envelope, Experts,
    GPU_GAP_PER_KERNEL_S, GRAPH_LAUNCH_S, Gemm, KERNELS_DENSE_MLP, KERNELS_HEAD, KERNELS_MOE,
    SAMPLING_S, SCHEDULER_TURN_S,
};
use super::{IterationBatch, IterationCost, IterationModel, MemoryPlan, TimeBreakdown};
use models::Layout;

/// What an iteration holds, summed once from the batch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchStats {
    /// Decode tokens (one per running request).
    pub decode: f64,
    /// Σ keys each decode token attends (DSA-capped).
    pub decode_keys: f64,
    /// Σ context of decode tokens (what the DSA indexer scores).
    pub decode_context: f64,
    /// New prefill tokens.
    pub prefill: f64,
    /// Prefill chunks (each samples / computes logits for its last token).
    pub chunks: f64,
    /// Largest chunk's new tokens.
    pub largest_chunk: f64,
    /// Σ over prefill queries of keys attended (causal, DSA-capped).
    pub prefill_pairs: f64,
    /// Σ over prefill queries of keys the DSA indexer scores (causal, uncapped).
    pub prefill_index_pairs: f64,
    /// Cached keys prefill chunks read from the KV cache.
    pub prefill_cached: f64,
}

/// A weight op's time at `tokens` from its tabulated envelope: linear in tokens between the
/// knots 2^k around it, proportional to tokens beyond the last knot, 0 without tokens.
fn from_envelope(env: &Envelope, tokens: f64) -> OpTime {
    if tokens <= 0.0 {
        return OpTime {
            s: 0.0,
            memory_bound: true,
        };
    }
    let t = tokens.max(1.0);
    let k = (t.log2().floor() as usize).min(ENVELOPE_KNOTS - 1);
    let lo = (1u64 << k) as f64;
    let s = if k + 1 < ENVELOPE_KNOTS {
        env.s[k] + (env.s[k + 1] - env.s[k]) * (t - lo) / lo
    } else {
        env.s[k] * t / lo
    };
    OpTime {
        s,
        memory_bound: env.memory_bound[k],
    }
}

/// Σ_{pos=a..=b} min(pos, cap).
fn capped_sum(a: u64, b: u64, cap: Option<u64>) -> f64 {
    if b < a {
        return 0.0;
    }
    let tri = |lo: u64, hi: u64| (lo + hi) as f64 * (hi - lo + 1) as f64 / 2.0;
    match cap {
        None => tri(a, b),
        Some(c) if b <= c => tri(a, b),
        Some(c) if a > c => c as f64 * (b - a + 1) as f64,
        Some(c) => tri(a, c) + c as f64 * (b - c) as f64,
    }
}

impl BatchStats {
    /// Sums `batch` with DSA cap `cap` (keys a query attends at most).
    pub fn of(batch: &IterationBatch, cap: Option<u64>) -> Self {
        let mut s = BatchStats::default();
        for &c in &batch.decode_context_tokens {
            let c = c as u64;
            s.decode += 1.0;
            s.decode_context += c as f64;
            s.decode_keys += cap.map_or(c, |k| c.min(k)) as f64;
        }
        for ch in &batch.prefill {
            if ch.new_tokens == 0 {
                continue;
            }
            let (k, n) = (ch.cached_tokens as u64, ch.new_tokens as u64);
            s.prefill += n as f64;
            s.chunks += 1.0;
            s.largest_chunk = s.largest_chunk.max(n as f64);
            s.prefill_pairs += capped_sum(k + 1, k + n, cap);
            s.prefill_index_pairs += capped_sum(k + 1, k + n, None);
            s.prefill_cached += k as f64;
        }
        s
    }

    /// All tokens of the iteration.
    pub fn tokens(&self) -> f64 {
        self.decode + self.prefill
    }
}

impl CostModel {
    /// A weight GEMM of `tokens` rows, without the monotone envelope.
    pub(super) fn gemm_raw(&self, g: &Gemm, tokens: f64) -> OpTime {
        g.curve.time(tokens, 2.0 * tokens * g.params, g.bytes)
    }

    /// A weight GEMM of `tokens` rows, from its envelope (non-decreasing in `tokens`).
    fn gemm(&self, g: &Gemm, tokens: f64) -> OpTime {
        from_envelope(&g.envelope, tokens)
    }

    /// Routed experts of a MoE layer entered by `t` tokens, on the busiest GPU, without envelope.
    pub(super) fn moe_raw(&self, e: &Experts, t: f64) -> OpTime {
        let r = &e.routing;
        let touched = r.max_touched_per_rank(t);
        let pairs = r.max_pairs_per_rank(t);
        // the efficiency is keyed by the tokens entering the layer (every rank sees all of them
        // without an all-to-all backend), as the kernel measurements were
        e.curve.time(
            t,
            2.0 * pairs * e.params_per_expert,
            touched * e.bytes_per_expert,
        )
    }

    fn add_weight_op(b: &mut TimeBreakdown, t: OpTime) {
        if t.memory_bound {
            b.weight_read_s += t.s;
        } else {
            b.compute_s += t.s;
        }
    }

    fn add_kv_op(b: &mut TimeBreakdown, t: OpTime) {
        if t.memory_bound {
            b.kv_read_s += t.s;
        } else {
            b.compute_s += t.s;
        }
    }

    /// Attention-DP ranks (1 without DP attention).
    fn dp(&self) -> f64 {
        if self.layout.dp_attention {
            self.layout.tp as f64
        } else {
            1.0
        }
    }

    /// One layer's attention on the busiest GPU: projections, DSA indexer, core.
    fn attention(&self, st: &BatchStats, b: &mut TimeBreakdown) {
        let dp = self.dp();
        // under attention-DP the busiest rank decodes ⌈b/dp⌉ requests (at the average context)
        // and a prefill chunk stays on one rank
        let dec_share = if st.decode > 0.0 {
            (st.decode / dp).ceil() / st.decode
        } else {
            0.0
        };
        let pre_share = if st.prefill > 0.0 {
            (st.largest_chunk / st.prefill).max(1.0 / dp)
        } else {
            0.0
        };
        let tokens = st.decode * dec_share + st.prefill * pre_share;
        Self::add_weight_op(b, self.gemm(&self.attn, tokens));
        Self::add_weight_op(b, self.gemm(&self.indexer, tokens));
        let c = &self.core;
        if st.decode > 0.0 {
            let keys = st.decode_keys * dec_share;
            let t = c.decode.time_monotone(
                st.decode * dec_share,
                keys * c.decode_flops_per_pair,
                keys * c.kv_bytes_per_key,
            );
            Self::add_kv_op(b, t);
            if c.indexer_flops_per_key > 0.0 {
                let scored = st.decode_context * dec_share;
                let t = c.indexer_decode.time_monotone(
                    st.decode * dec_share,
                    scored * c.indexer_flops_per_key,
                    scored * c.indexer_bytes_per_key,
                );
                Self::add_kv_op(b, t);
            }
        }
        if st.prefill > 0.0 {
            let t = c.prefill.time_monotone(
                st.prefill * pre_share,
                st.prefill_pairs * pre_share * c.prefill_flops_per_pair,
                st.prefill_cached * pre_share * c.kv_bytes_per_key,
            );
            Self::add_kv_op(b, t);
            if c.indexer_flops_per_key > 0.0 {
                let t = c.indexer_prefill.time_monotone(
                    st.prefill * pre_share,
                    st.prefill_index_pairs * pre_share * c.indexer_flops_per_key,
                    st.prefill_cached * pre_share * c.indexer_bytes_per_key,
                );
                Self::add_kv_op(b, t);
            }
        }
    }

    /// One layer's MLP on the busiest GPU (dense MLP, or shared experts + router + routed experts).
    fn mlp(&self, st: &BatchStats, moe: bool, b: &mut TimeBreakdown) {
        let t = st.tokens();
        if !moe {
            Self::add_weight_op(b, self.gemm(&self.dense_mlp, t));
            return;
        }
        Self::add_weight_op(b, self.gemm(&self.shared, t));
        Self::add_weight_op(b, self.gemm(&self.router, t));
        if let Some(e) = &self.experts {
            Self::add_weight_op(b, from_envelope(&e.envelope, t));
        }
    }

    /// One layer's collectives on stage `s`.
    fn layer_comm(&self, s: usize, st: &BatchStats, moe: bool, b: &mut TimeBreakdown) {
        let c = &self.comm.stages[s];
        let t = st.tokens();
        let act = t * self.hidden * 2.0;
        let scale = self.knobs.comm_time_scale;
        if !self.layout.dp_attention {
            b.all_reduce_s += c.all_reduce_s(act) * scale;
        }
        let a2a = moe && self.opts.moe_a2a_backend.is_some() && self.experts.is_some();
        if a2a {
            let k = self.experts.as_ref().map_or(1.0, |e| e.routing.top_k);
            let ep = self.layout.ep as f64;
            let dispatch = t * k * self.hidden / ep;
            b.all_to_all_s +=
                (c.all_to_all.time_s(dispatch) + c.all_to_all.time_s(2.0 * dispatch)) * scale;
            if !self.layout.dp_attention {
                b.all_reduce_s += c.all_gather.time_s(act) * scale;
            }
        } else if self.layout.dp_attention {
            b.dp_attention_comm_s +=
                (c.all_gather.time_s(act) + c.reduce_scatter.time_s(act)) * scale;
        } else {
            b.all_reduce_s += c.all_reduce_s(act) * scale;
        }
    }

    /// Embedding (first stage) and lm_head + sampling (last stage).
    fn ends(&self, s: usize, st: &BatchStats, b: &mut TimeBreakdown) {
        let shape = self.stages[s];
        let c = &self.comm.stages[s];
        let scale = self.knobs.comm_time_scale;
        if shape.first && !self.layout.dp_attention {
            b.all_reduce_s += c.all_reduce_s(st.tokens() * self.hidden * 2.0) * scale;
        }
        if shape.last {
            let th = st.decode + st.chunks;
            Self::add_weight_op(b, self.gemm(&self.lm_head, th));
            b.all_reduce_s += c.all_gather.time_s(th * self.vocab * 2.0) * scale;
            b.overhead_s += SAMPLING_S + th * self.vocab * 4.0 / self.peak_bytes_per_s;
        }
    }

    /// Whether this batch replays a CUDA graph (pure decode, b ≤ cuda_graph_max_bs, graphs on).
    pub fn uses_cuda_graph(&self, st: &BatchStats) -> bool {
        !self.opts.disable_cuda_graph
            && st.prefill == 0.0
            && st.decode <= self.opts.cuda_graph_max_bs as f64
    }

    /// Kernels launched per MoE / dense layer and per stage end, for launch overheads.
    fn kernels(&self, moe: bool) -> f64 {
        // two collectives per layer (all-reduces, or DP gather + scatter, or dispatch + combine)
        self.kernels_attn + if moe { KERNELS_MOE } else { KERNELS_DENSE_MLP } + 2.0
    }

    /// Cost of one iteration (see [`IterationModel::iteration`]).
    pub fn cost(&self, batch: &IterationBatch) -> IterationCost {
        let st = BatchStats::of(batch, self.core.topk_cap);
        self.cost_stats(&st)
    }

    /// Cost of an iteration already summed into [`BatchStats`].
    pub fn cost_stats(&self, st: &BatchStats) -> IterationCost {
        let pp = self.stages.len();
        let mut total = TimeBreakdown::default();
        let mut stage_s = Vec::with_capacity(pp);
        if st.tokens() <= 0.0 {
            return IterationCost {
                stage_s: vec![0.0; pp],
                ..IterationCost::default()
            };
        }
        let graph = self.uses_cuda_graph(st);
        let mut cpu_s: f64 = 0.0;
        let mut dense = TimeBreakdown::default();
        self.attention(st, &mut dense);
        let mut moe = dense;
        self.mlp(st, false, &mut dense);
        self.mlp(st, true, &mut moe);
        for (s, shape) in self.stages.iter().enumerate() {
            let mut b = TimeBreakdown::default();
            let mut dense_c = TimeBreakdown::default();
            let mut moe_c = TimeBreakdown::default();
            self.layer_comm(s, st, false, &mut dense_c);
            self.layer_comm(s, st, true, &mut moe_c);
            b.add_scaled(&dense, shape.dense_layers);
            b.add_scaled(&dense_c, shape.dense_layers);
            b.add_scaled(&moe, shape.moe_layers);
            b.add_scaled(&moe_c, shape.moe_layers);
            self.ends(s, st, &mut b);
            let kernels = shape.dense_layers * self.kernels(false)
                + shape.moe_layers * self.kernels(true)
                + if shape.last { KERNELS_HEAD } else { 0.0 };
            if !graph {
                b.overhead_s += kernels * GPU_GAP_PER_KERNEL_S;
            }
            if shape.last {
                b.overhead_s += self.knobs.iteration_overhead_s;
            }
            if self.opts.overlap_comm {
                b.overlap_comm();
            }
            let launch = if graph {
                GRAPH_LAUNCH_S
            } else {
                kernels * CPU_PER_KERNEL_S
            };
            let sched = SCHEDULER_TURN_S + CPU_PER_REQUEST_S * (st.decode + st.chunks);
            cpu_s = cpu_s.max((launch + sched) * self.knobs.cpu_scale);
            stage_s.push(b.total_s());
            total.add_scaled(&b, 1.0);
        }
        let hops_s = self.pp_hops_total_s(st.tokens());
        total.pp_send_s += hops_s;
        let hop = if pp > 1 {
            hops_s / (pp - 1) as f64
        } else {
            0.0
        };
        let gpu_s: f64 = stage_s.iter().sum::<f64>() + hops_s;
        if cpu_s > gpu_s {
            // the GPU waits for launches: the gap shows as overhead on the critical path
            total.overhead_s += cpu_s - gpu_s;
        }
        IterationCost {
            stage_s,
            pp_hop_s: hop,
            cpu_s,
            latency_s: gpu_s.max(cpu_s),
            breakdown: total,
        }
    }

    /// Time of all `pp − 1` stage-to-stage hands of `tokens` tokens' activations (hidden states +
    /// residual): each TP rank sends its 1/tp slice to its peer, then the receiving stage
    /// all-gathers. Each hop uses its own pair's curve (on the user's box TP2×PP4 crosses sockets
    /// once, inside a socket twice).
    pub fn pp_hops_total_s(&self, tokens: f64) -> f64 {
        let bytes = pp_hop_bytes(tokens, self.hidden);
        let tp = self.layout.tp as f64;
        let hops: f64 = self
            .comm
            .stages
            .windows(2)
            .map(|w| w[0].hop_send.time_s(bytes / tp) + w[1].all_gather.time_s(bytes))
            .sum();
        hops * self.knobs.comm_time_scale
    }
}

/// Bytes SGLang hands from one pipeline stage to the next for `tokens` tokens: hidden states and
/// residual, bf16.
pub fn pp_hop_bytes(tokens: f64, hidden: f64) -> f64 {
    2.0 * tokens * hidden * 2.0
}

impl IterationModel for CostModel {
    fn layout(&self) -> Layout {
        self.layout
    }

    fn iteration(&self, batch: &IterationBatch) -> IterationCost {
        self.cost(batch)
    }

    fn memory(&self) -> &MemoryPlan {
        &self.memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_sums_match_brute_force() {
        for (a, b, cap) in [
            (1, 10, None),
            (1, 10, Some(4)),
            (5, 9, Some(3)),
            (2, 2, Some(9)),
        ] {
            let brute: u64 = (a..=b).map(|p: u64| cap.map_or(p, |c| p.min(c))).sum();
            assert_eq!(capped_sum(a, b, cap), brute as f64, "{a} {b} {cap:?}");
        }
    }
}
