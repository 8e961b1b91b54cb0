//! Costing one iteration: per-layer kernels (latency floor + roofline with size-dependent
//! efficiency), the layout's communication, summed per pipeline stage, then each stage's GPU time
//! against its own CPU time.
//!
//! Each weight GEMM takes `floor + max(FLOPs / achievable FLOP/s, bytes / achievable bandwidth)`;
//! small kernels take the machine's small-kernel floor plus their activation bytes; the breakdown
//! files floors under `kernel_floor_s`, the rest under `compute_s` when the FLOPs side wins, else
//! under `weight_read_s` (weight GEMMs, experts) or `kv_read_s` (attention core, DSA indexer).
//!
//! The CPU of each stage (its own process): eager (`--disable-cuda-graph`), every kernel is one
//! launch from Python ([`super::floors::CpuCosts::per_launch_s`] × the cpu knob); under a CUDA
//! graph, one replay. Then the scheduler turn and its per-request work. With SGLang's overlap
//! scheduler (the default) the CPU prepares the next batch while the GPU runs this one, so a
//! stage lasts `max(GPU, CPU)`; `--disable-overlap-schedule` serializes the scheduler part.

use super::batch_stats::BatchStats;
use super::block::add_weight_op;
use super::kernel::OpTime;
use super::layer_mix::weighted;
use super::model::{CostModel, GPU_GAP_PER_KERNEL_S};
use super::{IterationBatch, IterationCost, IterationModel, MemoryPlan, TimeBreakdown};
use models::Layout;

impl CostModel {
    /// Files an attention-core op: under `kernel_floor_s` when its floor binds, else KV reads
    /// (memory-bound) or compute.
    fn add_kv_op(b: &mut TimeBreakdown, t: OpTime, floor_s: f64) {
        if t.s <= 0.0 {
            return;
        }
        if t.s <= floor_s * (1.0 + 1e-9) {
            b.kernel_floor_s += t.s;
        } else if t.memory_bound {
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

    /// Shares of the batch's decode and prefill tokens the busiest attention rank computes: under
    /// attention-DP it decodes ⌈b/dp⌉ requests (at the average context) and a prefill chunk stays
    /// on one rank.
    fn attention_shares(&self, st: &BatchStats) -> (f64, f64) {
        let dp = self.dp();
        let dec = if st.decode > 0.0 {
            (st.decode / dp).ceil() / st.decode
        } else {
            0.0
        };
        let pre = if st.prefill > 0.0 {
            (st.largest_chunk / st.prefill).max(1.0 / dp)
        } else {
            0.0
        };
        (dec, pre)
    }

    /// One layer's attention on the busiest GPU: projections, small kernels and the core, the
    /// core weighted over the layers' attention kinds ([`super::layer_mix`]).
    pub(super) fn attention(&self, st: &BatchStats, b: &mut TimeBreakdown) {
        let (dec_share, pre_share) = self.attention_shares(st);
        let tokens = st.decode * dec_share + st.prefill * pre_share;
        let fused = self.fused_norm_kernels(st);
        if let Some((m, rows, cached)) = self.measured_dsa_module(st) {
            // the module is the block less its input add + RMSNorm
            if fused < 1.0 {
                self.small.file_kernels(&[8.0 * self.hidden * rows], b);
            }
            let t = m.attention(rows, cached).s;
            Self::add_module_part(b, t, m.attention(rows, 1.0).s);
            return;
        }
        self.attention
            .cost_fewer_small(tokens, self.small, fused, b);
        let c = &self.core;
        let mix = c.mix;
        let q = st.queries_per_request.max(1.0);
        if st.decode > 0.0 {
            let requests = st.decode * dec_share / q;
            // Triton MLA's split-KV partials, written and read back (full-attention layers)
            let partials = c.triton_split_kv.map_or(0.0, |t| {
                requests * t.partial_bytes_per_request(requests, st.decode_context / st.decode)
            });
            let softmax = |keys: f64, extra_bytes: f64| {
                let keys = keys * dec_share;
                c.decode.time_monotone(
                    requests,
                    keys * c.decode_flops_per_pair * c.decode_rows.factor(q),
                    keys / q * c.kv_bytes_per_key + extra_bytes,
                )
            };
            let full = match (c.decode_table, c.triton_mla) {
                (Some(td), _) => self.table_decode(td, st, dec_share, requests),
                (None, Some(tm)) => self.triton_mla_decode(tm, st, requests),
                (None, None) => softmax(st.decode_keys, partials),
            };
            let mut ops = vec![(full, mix.full)];
            if mix.sliding > 0.0 {
                ops.push((softmax(mix.sliding_decode_keys(st), 0.0), mix.sliding));
            }
            if mix.linear > 0.0 {
                let t = mix.linear_decode(&c.decode, requests, st.decode * dec_share);
                ops.push((t, mix.linear));
            }
            for (t, share) in ops {
                Self::add_kv_op(b, weighted(t, share), c.decode.floor_s() * share);
            }
        }
        if st.prefill > 0.0 {
            let per_pair = if st.prefill_cached > 0.0 {
                c.prefill_flops_per_pair_cached
            } else {
                c.prefill_flops_per_pair
            };
            let per_pair = c.sparse_prefill.map_or(per_pair, |sp| {
                sp.flops_per_pair(st.prefill_max_kv, per_pair)
            });
            let softmax = |pairs: f64, cached: f64| {
                c.prefill.time_monotone(
                    st.prefill * pre_share,
                    pairs * pre_share * per_pair,
                    cached * pre_share * c.kv_bytes_per_key,
                )
            };
            let full = match c.sparse_prefill {
                // trtllm's sparse prefill: every token a decode row gathering its top-k keys
                Some(sp) if sp.gathers(st.prefill_max_kv) => c.decode.time_monotone(
                    st.prefill * pre_share,
                    st.prefill_pairs * pre_share * per_pair,
                    st.prefill_pairs * pre_share * c.kv_bytes_per_key,
                ),
                _ => softmax(st.prefill_pairs, st.prefill_cached),
            };
            let mut ops = vec![(full, mix.full)];
            if mix.sliding > 0.0 {
                let (pairs, cached) = mix.sliding_prefill(st);
                ops.push((softmax(pairs, cached), mix.sliding));
            }
            if mix.linear > 0.0 {
                let t = mix.linear_prefill(&c.prefill, st.prefill * pre_share, st.chunks);
                ops.push((t, mix.linear));
            }
            for (t, share) in ops {
                Self::add_kv_op(b, weighted(t, share), c.prefill.floor_s() * share);
            }
        }
    }

    /// A pure decode step's DSA attention as SGLang's measured module prices it
    /// ([`super::dsa_module_table`]): the module, the decode rows on the busiest GPU (requests ×
    /// query tokens; a verify pass's every token scores and attends its own top-k) and their
    /// mean cached tokens. `None` for a step with a prefill (the module measures decode rows) or
    /// where no module was measured.
    fn measured_dsa_module(
        &self,
        st: &BatchStats,
    ) -> Option<(super::dsa_module_table::DsaModule, f64, f64)> {
        let m = self.core.dsa_module?;
        if st.prefill > 0.0 || st.decode <= 0.0 {
            return None;
        }
        let (dec_share, _) = self.attention_shares(st);
        Some((m, st.decode * dec_share, st.decode_context / st.decode))
    }

    /// Files a measured module part: what it costs at no cached context (projections, kernel
    /// floors) under `kernel_floor_s`, its growth with the cache under `kv_read_s`.
    fn add_module_part(b: &mut TimeBreakdown, total_s: f64, no_context_s: f64) {
        let base = no_context_s.min(total_s);
        b.kernel_floor_s += base;
        b.kv_read_s += total_s - base;
    }

    /// One full-attention layer's decode core from its measured table
    /// ([`super::decode_table`]): `requests` decode rows (a verify pass that re-reads the cache
    /// per draft token arrives with one row per token) at the batch's mean context on this GPU,
    /// never below the FLOPs the efficiency curve gives (a verify pass's extra query rows).
    fn table_decode(
        &self,
        td: super::attn_core::TableDecode,
        st: &BatchStats,
        dec_share: f64,
        requests: f64,
    ) -> OpTime {
        let c = &self.core;
        let cached = st.decode_keys / st.decode / td.dcp;
        let floor = c.decode.floor_s();
        let mut s = td.family.price(requests, cached, floor).s;
        if td.family.key.context_part_only() {
            s += floor;
        }
        let flops = st.decode_keys
            * dec_share
            * c.decode_flops_per_pair
            * c.decode_rows.factor(st.queries_per_request);
        let compute = c.decode.time_monotone(requests, flops, 0.0);
        OpTime {
            s: s.max(compute.s),
            memory_bound: s >= compute.s,
        }
    }

    /// One full-attention layer's vLLM TRITON_MLA decode by its grid ([`super::triton_mla`]):
    /// `requests` decode rows at the batch's mean context on this GPU, plus the launch floor.
    /// No FLOPs floor from the efficiency curve: the fitted rows are the kernel's whole time,
    /// its (padded) head blocks' MMAs included.
    fn triton_mla_decode(
        &self,
        tm: super::triton_mla::TritonMlaDecode,
        st: &BatchStats,
        requests: f64,
    ) -> OpTime {
        let cached = st.decode_keys / st.decode / tm.dcp;
        OpTime {
            s: tm.time_s(requests, st.rows_per_request, cached) + self.core.decode.floor_s(),
            memory_bound: true,
        }
    }

    /// One layer's DSA indexer on the busiest GPU (layers that run their own): its projections
    /// and small kernels, then logits over the cached context this GPU holds (1/dcp of it under
    /// DCP: vLLM's indexer scores each rank's own shard) and the top-k, and under DCP the
    /// global top-k merge over the group ([`super::dcp`]; stage 0's group: every stage's has
    /// the same shape).
    fn indexer(&self, st: &BatchStats, b: &mut TimeBreakdown) {
        let c = &self.core;
        if c.indexer_flops_per_key <= 0.0 {
            return;
        }
        if let Some((m, rows, cached)) = self.measured_dsa_module(st) {
            let t = m.indexer(rows, cached).s;
            Self::add_module_part(b, t, m.indexer(rows, 1.0).s);
            return;
        }
        let (dec_share, pre_share) = self.attention_shares(st);
        let tokens = st.decode * dec_share + st.prefill * pre_share;
        self.indexer.cost(tokens, self.small, b);
        if let Some(d) = &self.dcp {
            let rows = st.decode * dec_share;
            b.dp_attention_comm_s += d.topk_merge_s(0, rows) * self.knobs.comm_time_scale;
            self.small.file_kernels(&d.topk_merge_kernel_bytes(rows), b);
        }
        let q = st.queries_per_request.max(1.0);
        if st.decode > 0.0 {
            let scored = st.decode_context * dec_share / c.dcp;
            let t = c.indexer_decode.time_monotone(
                st.decode * dec_share / q,
                scored * c.indexer_flops_per_key,
                scored / q * c.indexer_bytes_per_key + scored * c.indexer_logit_bytes_per_pair,
            );
            Self::add_kv_op(b, t, c.indexer_decode.floor_s());
        }
        if st.prefill > 0.0 {
            let pairs = st.prefill_index_pairs * pre_share / c.dcp;
            let t = c.indexer_prefill.time_monotone(
                st.prefill * pre_share,
                pairs * c.indexer_flops_per_key,
                st.prefill_cached * pre_share / c.dcp * c.indexer_bytes_per_key
                    + pairs * c.indexer_logit_bytes_per_pair,
            );
            Self::add_kv_op(b, t, c.indexer_prefill.floor_s());
        }
    }

    /// One layer's MLP on the busiest GPU (dense MLP, or shared experts + router + routed experts).
    pub(super) fn mlp(&self, st: &BatchStats, moe: bool, b: &mut TimeBreakdown) {
        let t = st.tokens();
        let fused = self.fused_norm_kernels(st);
        if !moe {
            self.dense_mlp.cost_fewer_small(t, self.small, fused, b);
            return;
        }
        self.moe.cost_fewer_small(t, self.small, fused, b);
        if let Some(e) = &self.experts {
            add_weight_op(b, e.envelope.at(t), e.curve.floor_s());
        }
    }

    /// The small kernels a block (attention, or the MLP) does not run on its own under the b12x
    /// fork's fused all-reduce ([`crate::options::ServerOptions::fused_add_rms_norm_max_bytes`]):
    /// the residual add + RMSNorm that opens it follows the previous block's all-reduce and runs
    /// inside that kernel, on a one-token decode step whose BF16 hidden state fits the cap.
    fn fused_norm_kernels(&self, st: &BatchStats) -> f64 {
        match self.opts.fused_add_rms_norm_max_bytes {
            Some(cap)
                if self.layout.tp > 1
                    && st.prefill <= 0.0
                    && st.tokens() <= 1.0
                    && 2.0 * self.hidden <= cap as f64 =>
            {
                1.0
            }
            _ => 0.0,
        }
    }

    /// The rows this pass's GEMMs run, for the weights held on the host
    /// ([`super::offload::PassRows`]): the tokens; the share of a MoE layer's routed experts
    /// they reach on the busiest GPU, and the tokens each of those takes.
    fn offload_rows(&self, st: &BatchStats) -> super::offload::PassRows {
        let tokens = st.tokens();
        let (touched, expert_rows) = self.experts.as_ref().map_or((1.0, tokens), |e| {
            let r = &e.routing;
            let held = r.experts_per_rank().max(1.0);
            let touched = r.max_touched_per_rank(tokens).clamp(1.0, held);
            (
                touched / held,
                tokens * r.top_k / f64::from(self.layout.ep.max(1)) / touched,
            )
        });
        super::offload::PassRows {
            tokens,
            touched,
            expert_rows,
        }
    }

    /// One layer's collectives on stage `s`.
    pub(super) fn layer_comm(&self, s: usize, st: &BatchStats, moe: bool, b: &mut TimeBreakdown) {
        let c = &self.comm.stages[s];
        let t = st.tokens();
        let act = t * self.hidden * 2.0;
        let scale = self.knobs.comm_time_scale;
        if !self.layout.dp_attention {
            b.all_reduce_s += c.all_reduce_s(act) * scale;
        }
        if let Some(d) = &self.dcp {
            b.dp_attention_comm_s += d.layer_s(s, st.decode) * scale;
            self.small.file_kernels(&d.kernel_bytes(st.decode), b);
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
        if shape.first {
            self.embed.cost(st.tokens(), self.small, b);
            if !self.layout.dp_attention {
                b.all_reduce_s += c.all_reduce_s(st.tokens() * self.hidden * 2.0) * scale;
            }
        }
        if shape.last {
            let th = st.decode + st.chunks;
            self.head.cost(th, self.small, b);
            b.all_reduce_s += c.all_gather.time_s(th * self.vocab * 2.0) * scale;
        }
    }

    /// Whether this batch replays a CUDA graph (pure decode, b ≤ cuda_graph_max_bs, graphs on).
    pub fn uses_cuda_graph(&self, st: &BatchStats) -> bool {
        !self.opts.disable_cuda_graph
            && st.prefill == 0.0
            && st.decode <= self.opts.cuda_graph_max_bs as f64
    }

    /// Kernels stage `s` launches eagerly for one batch.
    pub fn stage_launches(&self, s: usize) -> f64 {
        let shape = self.stages[s];
        // two-batch overlap launches every kernel of a sparse layer once per micro-batch
        let split = if self.two_batch_overlap { 2.0 } else { 1.0 };
        let dcp = if self.dcp.is_some() {
            super::dcp::DcpComm::LAUNCHES_PER_LAYER
        } else {
            0.0
        };
        shape.dense_layers * (self.attention.launches + dcp + self.dense_mlp.launches)
            + split * shape.moe_layers * (self.attention.launches + dcp + self.moe.launches)
            + shape.indexer_layers * self.indexer.launches
            + if shape.first {
                self.embed.launches
            } else {
                0.0
            }
            + if shape.last { self.head.launches } else { 0.0 }
    }

    /// CPU time of one stage's turn: launches (eager) or a graph replay, then the scheduler.
    /// Returns (launch part, scheduler part).
    fn stage_cpu(&self, s: usize, st: &BatchStats, graph: bool) -> (f64, f64) {
        let launch = if graph {
            self.cpu.graph_replay_s
        } else {
            self.stage_launches(s) * self.cpu.per_launch_s * self.knobs.cpu_scale
        };
        let sched = self.cpu.scheduler_turn_s + self.cpu.per_request_s * (st.decode + st.chunks);
        (launch, sched)
    }

    /// Cost of one iteration (see [`IterationModel::iteration`]).
    pub fn cost(&self, batch: &IterationBatch) -> IterationCost {
        let st = BatchStats::of(batch, self.core.topk_cap);
        self.cost_stats(&st)
    }

    /// Cost of an iteration already summed into [`BatchStats`]: one forward pass.
    pub fn cost_stats(&self, st: &BatchStats) -> IterationCost {
        self.cost_pass(st, self.uses_cuda_graph(st))
    }

    /// One forward pass of `st`, replaying a CUDA graph or not, with its scheduler turn.
    pub(super) fn cost_pass(&self, st: &BatchStats, graph: bool) -> IterationCost {
        self.cost_pass_with(st, graph, true)
    }

    /// One forward pass; `scheduler`: whether this pass carries the step's scheduler turn (a
    /// speculative step's draft passes do not: the scheduler runs once per step).
    pub(super) fn cost_pass_with(
        &self,
        st: &BatchStats,
        graph: bool,
        scheduler: bool,
    ) -> IterationCost {
        let pp = self.stages.len();
        let mut total = TimeBreakdown::default();
        if st.tokens() <= 0.0 {
            return IterationCost {
                stage_s: vec![0.0; pp],
                stage_gpu_s: vec![0.0; pp],
                stage_cpu_s: vec![0.0; pp],
                ..IterationCost::default()
            };
        }
        let overlap = self.opts.engine.rules().overlap_scheduled(&self.opts);
        let mut dense = TimeBreakdown::default();
        self.attention(st, &mut dense);
        let mut moe = dense;
        self.mlp(st, false, &mut dense);
        self.mlp(st, true, &mut moe);
        let mut indexer = TimeBreakdown::default();
        self.indexer(st, &mut indexer);
        let (mut stage_s, mut stage_gpu_s, mut stage_cpu_s) = (
            Vec::with_capacity(pp),
            Vec::with_capacity(pp),
            Vec::with_capacity(pp),
        );
        let (mut cpu_s, mut launches_max): (f64, f64) = (0.0, 0.0);
        for (s, shape) in self.stages.iter().enumerate() {
            let mut b = TimeBreakdown::default();
            let mut dense_c = TimeBreakdown::default();
            let mut moe_c = TimeBreakdown::default();
            self.layer_comm(s, st, false, &mut dense_c);
            self.layer_comm(s, st, true, &mut moe_c);
            b.add_scaled(&dense, shape.dense_layers);
            b.add_scaled(&dense_c, shape.dense_layers);
            match self.two_batch_layer(s, st) {
                Some(split) => b.add_scaled(&split, shape.moe_layers),
                None => {
                    b.add_scaled(&moe, shape.moe_layers);
                    b.add_scaled(&moe_c, shape.moe_layers);
                }
            }
            b.add_scaled(&indexer, shape.indexer_layers);
            self.ends(s, st, &mut b);
            let launches = self.stage_launches(s);
            if !graph {
                b.overhead_s += launches * GPU_GAP_PER_KERNEL_S;
                launches_max = launches_max.max(launches);
            }
            if self.opts.overlap_comm {
                b.overlap_comm();
            }
            if let Some(plan) = &self.offload {
                plan.add_pass_time(s as u32, self.offload_rows(st), graph, &mut b);
            }
            let gpu = b.total_s();
            let (launch, sched) = self.stage_cpu(s, st, graph);
            let sched = if scheduler { sched } else { 0.0 };
            let time = match (overlap, graph) {
                (true, _) => gpu.max(launch + sched),
                (false, false) => gpu.max(launch) + sched,
                (false, true) => gpu + launch + sched,
            };
            // the GPU waits for its CPU: the gap shows as overhead on the critical path
            b.overhead_s += time - gpu;
            cpu_s = cpu_s.max(launch + sched);
            stage_s.push(time);
            stage_gpu_s.push(gpu);
            stage_cpu_s.push(launch + sched);
            total.add_scaled(&b, 1.0);
        }
        let hops_s = self.pp_hops_total_s(st.tokens());
        total.pp_send_s += hops_s;
        let hop = if pp > 1 {
            hops_s / (pp - 1) as f64
        } else {
            0.0
        };
        IterationCost {
            latency_s: stage_s.iter().sum::<f64>() + hops_s,
            stage_s,
            stage_gpu_s,
            stage_cpu_s,
            pp_hop_s: hop,
            cpu_s,
            eager_launches: launches_max,
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

impl BatchStats {
    /// One of two equal micro-batches of this batch.
    fn half(&self) -> BatchStats {
        BatchStats {
            decode: self.decode / 2.0,
            decode_keys: self.decode_keys / 2.0,
            decode_context: self.decode_context / 2.0,
            prefill: self.prefill / 2.0,
            chunks: self.chunks / 2.0,
            largest_chunk: self.largest_chunk,
            prefill_pairs: self.prefill_pairs / 2.0,
            prefill_index_pairs: self.prefill_index_pairs / 2.0,
            prefill_cached: self.prefill_cached / 2.0,
            prefill_max_kv: self.prefill_max_kv,
            queries_per_request: self.queries_per_request,
            rows_per_request: self.rows_per_request,
        }
    }
}

impl CostModel {
    /// One sparse layer of stage `s` split in two overlapped micro-batches ([`super::tbo`]), compute and
    /// communication together; `None` where the layer runs whole (off, or fewer than two
    /// tokens: one micro-batch would be empty).
    pub(super) fn two_batch_layer(&self, s: usize, st: &BatchStats) -> Option<TimeBreakdown> {
        if !self.two_batch_overlap || st.tokens() < 2.0 {
            return None;
        }
        let h = st.half();
        let mut compute = TimeBreakdown::default();
        self.attention(&h, &mut compute);
        self.mlp(&h, true, &mut compute);
        let mut comm = TimeBreakdown::default();
        self.layer_comm(s, &h, true, &mut comm);
        let (c, a) = (compute.total_s(), comm.all_to_all_s);
        comm.all_to_all_s = 0.0;
        let mut layer = TimeBreakdown::default();
        layer.add_scaled(&compute, 2.0);
        layer.add_scaled(&comm, 2.0);
        layer.all_to_all_s = (2.0 * c).max(2.0 * a) + c.min(a) - 2.0 * c;
        Some(layer)
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
