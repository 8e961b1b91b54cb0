//! What an iteration moves, in bytes: on the wire per GPU (by collective, from the ring formulas
//! nccl-tests' bus bandwidth is based on) and expert weights read per GPU, with the EP imbalance.
//! These are the numbers behind "why is EP8 slower than TP8 here".

use super::CostModel;
use super::batch_stats::BatchStats;
use super::iteration::pp_hop_bytes;
use models::profile::CollectiveOp;
use serde::Serialize;

/// Bytes one rank sends for a collective of nccl-tests size `bytes` over `n` ranks (ring
/// algorithms: all-reduce 2(n−1)/n, all-gather / reduce-scatter / all-to-all (n−1)/n, send 1).
pub fn wire_bytes_per_rank(op: CollectiveOp, bytes: f64, n: u32) -> f64 {
    if n <= 1 && op != CollectiveOp::SendRecv {
        return 0.0;
    }
    bytes * op.busbw_factor(n)
}

/// Bytes and expert reads of one iteration on one GPU of the stage with the most layers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Traffic {
    /// Bytes this GPU sends in all-reduces (and TP all-gathers) per iteration.
    pub all_reduce_wire_bytes: f64,
    /// Bytes this GPU sends in EP dispatch / combine all-to-alls.
    pub all_to_all_wire_bytes: f64,
    /// Bytes this GPU sends in attention-DP gathers / scatters, and in DCP's collectives.
    pub dp_attention_wire_bytes: f64,
    /// Bytes one GPU sends to the next stage per hop (its 1/tp slice).
    pub pp_send_bytes_per_hop: f64,
    /// Sum of the above (pp counted once).
    pub total_wire_bytes: f64,
    /// Routed-expert weight bytes this GPU reads per iteration (busiest rank).
    pub expert_read_bytes: f64,
    /// Distinct experts the busiest rank touches per MoE layer.
    pub experts_touched_per_layer: f64,
    /// Experts the rank holds per MoE layer.
    pub experts_held_per_layer: f64,
    /// Busiest rank's routed (token, expert) pairs ÷ the average rank's (1 = balanced).
    pub expert_imbalance: f64,
}

impl CostModel {
    /// Traffic of an iteration of `st`.
    pub fn traffic(&self, st: &BatchStats) -> Traffic {
        let t = st.tokens();
        let act = t * self.hidden * 2.0;
        let n = self.layout.tp;
        let shape = self
            .stages
            .iter()
            .copied()
            .max_by(|a, b| {
                (a.dense_layers + a.moe_layers).total_cmp(&(b.dense_layers + b.moe_layers))
            })
            .expect("at least one stage");
        let layers = shape.dense_layers + shape.moe_layers;
        let ar = |bytes: f64| wire_bytes_per_rank(CollectiveOp::AllReduce, bytes, n);
        let ag = |bytes: f64| wire_bytes_per_rank(CollectiveOp::AllGather, bytes, n);
        let mut out = Traffic::default();
        let a2a = self.opts.moe_a2a_backend.is_some() && self.experts.is_some();
        let dpa = self.layout.dp_attention;
        if !dpa {
            out.all_reduce_wire_bytes += layers * ar(act);
        }
        // MLP side: dense layers never use the a2a backend
        let mlp_ar_layers = if a2a { shape.dense_layers } else { layers };
        if dpa {
            out.dp_attention_wire_bytes += mlp_ar_layers * 2.0 * ag(act);
        } else {
            out.all_reduce_wire_bytes += mlp_ar_layers * ar(act);
        }
        if a2a {
            let k = self.experts.as_ref().map_or(1.0, |e| e.routing.top_k);
            let per_rank = t * k * self.hidden / self.layout.ep as f64;
            let one = |b: f64| wire_bytes_per_rank(CollectiveOp::AllToAll, b, self.layout.ep);
            out.all_to_all_wire_bytes += shape.moe_layers * (one(per_rank) + one(2.0 * per_rank));
            if !dpa {
                out.all_reduce_wire_bytes += shape.moe_layers * ag(act);
            }
        }
        // DCP's collectives are the attention's own, beside DP attention's: every layer's query
        // and LSE all-gathers and output reduce-scatter, and each indexer layer's top-k merge
        if let Some(d) = &self.dcp {
            out.dp_attention_wire_bytes += layers * d.layer_wire_bytes(st.decode)
                + shape.indexer_layers * d.topk_merge_wire_bytes(st.decode);
        }
        if self.stages.len() > 1 {
            out.pp_send_bytes_per_hop = pp_hop_bytes(t, self.hidden) / n as f64;
        }
        out.total_wire_bytes = out.all_reduce_wire_bytes
            + out.all_to_all_wire_bytes
            + out.dp_attention_wire_bytes
            + out.pp_send_bytes_per_hop;
        if let Some(e) = &self.experts {
            let r = &e.routing;
            out.experts_touched_per_layer = r.max_touched_per_rank(t);
            out.experts_held_per_layer = r.experts_per_rank();
            out.expert_read_bytes =
                shape.moe_layers * out.experts_touched_per_layer * e.bytes_per_expert;
            out.expert_imbalance = r.pair_imbalance(t);
        }
        out
    }
}
