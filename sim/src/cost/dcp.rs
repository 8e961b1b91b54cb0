//! vLLM's decode context parallelism (DCP, `--decode-context-parallel-size d`): the KV cache of
//! every request is sharded along the sequence over `d` consecutive ranks of the TP group, so
//! each GPU holds `1/d` of the cache and `d×` as many tokens fit. Read from vLLM's
//! `v1/attention/backends/mla/common.py` (`MLACommonImpl.forward`, decode branch) and
//! `attention/ops/common.py` (`cp_lse_ag_out_rs`):
//!
//! 1. the decode queries (`heads/tp × (kv_lora_rank + rope)` per token, bf16) are all-gathered
//!    over the DCP group along the head axis, so every rank scores the `d·heads/tp` heads of the
//!    group against its own shard;
//! 2. each rank's partial outputs come with their log-sum-exp: the LSEs (`d·heads/tp` fp32 per
//!    token) are all-gathered, the outputs rescaled, and the outputs (`d·heads/tp × kv_lora_rank`
//!    bf16 per token) reduce-scattered back to each rank's own heads.
//!
//! So decode attention reads `1/d` of the cache per GPU for the same FLOPs (d× the heads over
//! 1/d of the keys), and every layer adds three NCCL collectives over the DCP group. On SM120
//! vLLM's TRITON_MLA reads that shard once per block of heads ([`super::triton_mla`]): Kimi-K2
//! at TP8 in the SM120 build runs one block at DCP 1–2 (two at one row at DCP2), four of 8 heads
//! at DCP4, four of 16 at DCP8. Prefill is left as it is (the
//! records that use DCP are decode benchmarks).
//!
//! Which communicator and what overlaps, as vLLM runs it (read at v0.11–0.13 and main):
//! - The DCP group is a `GroupCoordinator` named `dcp` (`distributed/parallel_state.py`, groups of
//!   `d` consecutive ranks of the TP group). `CudaCommunicator.__init__`
//!   (`distributed/device_communicators/cuda_communicator.py`) turns custom all-reduce, symmetric
//!   memory and FlashInfer all-reduce off for every group whose name is not `tp`, so the three
//!   collectives are NCCL's (PyNccl): the PCIe one-shot all-reduce of the community builds serves
//!   the TP all-reduce only. Their cost is the machine's NCCL all-gather / reduce-scatter curves
//!   on the group; for the tuned rtx6kpro states those are derived from the published tuned
//!   all-reduce (`examples/machine_presets/pcie_tuned.rs`, `ring_half_us`).
//! - Nothing overlaps them: `MLAAttention.forward` (`model_executor/layers/attention/
//!   mla_attention.py`) runs gather → `forward_mqa` → `cp_lse_ag_out_rs` → `_v_up_proj` in order
//!   on the compute stream, each consuming the previous output. Under a CUDA graph (the rtx6kpro
//!   Kimi recipe captures full graphs, `splitting_ops: []`) they cost no launch.
//! - `--dcp-comm-backend` defaults to `ag_rs` (`config/parallel.py`), the path above; `a2a`
//!   (`v1/attention/ops/dcp_alltoall.py`, `dcp_a2a_lse_reduce`) replaces the LSE gather and the
//!   reduce-scatter by one all-to-all and is not modelled (no record names it).
//!
//! The kernels the DCP path adds around its collectives (each a small kernel at the machine's
//! floor or its bytes, [`super::block::SmallKernelRates::file_kernels`]), read from vLLM's `GroupCoordinator` path
//! (`distributed/device_communicators/base_device_communicator.py` `all_gather`,
//! `cuda_communicator.py` `reduce_scatter`, as read at main) and `cp_lse_ag_out_rs`:
//! - the query all-gather runs NCCL into a `(d·rows, heads, 576)` buffer, then
//!   `movedim(0, 1).reshape(...)` to `(rows, d·heads, 576)`: a copy of the gathered queries;
//! - `correct_attn_out` (a Triton kernel) rescales the partial outputs by the gathered LSEs:
//!   reads and rewrites `d·heads/tp × 512` bf16 per row and reads the `d × d·heads/tp` LSEs;
//! - the reduce-scatter along the head axis makes its input contiguous first
//!   (`input_.movedim(0, dim).contiguous()`) and its output after (`output.movedim(0,
//!   dim).contiguous()`): two copies, of `d·heads/tp × 512` and `heads/tp × 512` bf16 per row.
//!
//! With one decode row the three layout copies are no-ops (a size-1 axis moved keeps the tensor
//! contiguous, PyTorch makes no copy); from two rows on they run. So a DCP layer launches seven
//! kernels beyond DCP1 (three NCCL, four of its own), not three.
//!
//! DSA (sparse MLA) under DCP, from vLLM's `model_executor/layers/sparse_attn_indexer.py`
//! (@006475f) and `v1/attention/backends/mla/indexer.py`: the indexer's decode metadata carries
//! each rank's local sequence lengths (`dcp_local_seq_lens`), so every rank scores only its own
//! `1/d` of the index keys and takes a local top-k over them; then `_merge_dcp_topk_global` packs
//! each row's `index_topk` local candidates as (fp32 score, global id) pairs, all-gathers them over
//! the DCP group (`get_dcp_group().all_gather(packed, dim=1)`: `d × topk × 8` bytes a row) and a
//! stable top-k selector picks the global top-k from the `d·topk` candidates: a fourth collective
//! and three more kernels (pack, relayout, select) on every layer that runs its own indexer
//! ([`DcpComm::topk_merge_s`], [`DcpComm::topk_merge_kernel_bytes`]). The sparse kernel then
//! keeps only the selected tokens its rank owns (`_convert_req_index_to_global_index_kernel` in
//! `v1/attention/backends/mla/sparse_utils.py` @02a26fa: `owning_rank = (tok // interleave) %
//! d`, the rest masked), about `topk / d` of them. The SM120 B12X backend does not merge
//! (`v1/attention/backends/mla/b12x_indexer.py` @284d714 requires "rank-local physical indexer
//! output"; `b12x_mla_sparse.py` @0f1bad9 clamps each rank's selected length to
//! `min(local length, topk)`): each rank attends its own local top-k, `min(context / d, topk)`
//! keys ([`super::attn_core`] caps the keys at `d × topk` over the `1/d` bytes a key costs), and
//! that path has no merge here. The GLM-5.2 v13 page (rtx6kpro `models/glm5.2_v13.md`) says
//! its June build merges a global top-k by default (`VLLM_DCP_GLOBAL_TOPK`); that build's code is
//! not public, so it is not modelled.
//! The VMM top-k exchange (`VLLM_DCP_TOPK_VMM`, off by default) is not modelled.

use crate::engine::{Engine, Knob};
use crate::machine::Machine;
use crate::machine::curve::CommCurve;
use crate::machine::placement::Placement;
use crate::options::ServerOptions;
use models::profile::CollectiveOp;
use models::spec::AttentionSpec;
use models::{Layout, ModelSpec};

/// KV shards of the DCP group in force (1 = no DCP).
pub fn shards(opts: &ServerOptions) -> u32 {
    opts.decode_context_parallel.max(1)
}

/// The largest decode-context-parallel size above the launch's that `layout` of `spec` admits
/// ([`refusal`]: it divides TP, no DP attention, enough copies of each KV head), for the remedies
/// a KV bound is told (`run`'s warning, a log's diagnosis); `None` where there is none (a GQA
/// model whose KV heads already fill the TP group, DP attention, or the launch at its largest).
pub fn largest_above(spec: &ModelSpec, layout: &Layout, opts: &ServerOptions) -> Option<u32> {
    (shards(opts) + 1..=layout.tp)
        .rev()
        .find(|&d| layout.tp.is_multiple_of(d) && refusal(spec, layout, d).is_none())
}

/// Why `dcp` cannot run `layout` of `spec`, as vLLM's config checks refuse it; `None` = it can.
pub fn refusal(spec: &ModelSpec, layout: &Layout, dcp: u32) -> Option<String> {
    if dcp <= 1 {
        return None;
    }
    let flag = Engine::Vllm.flag(Knob::DecodeContextParallel);
    if layout.dp_attention {
        return Some(format!(
            "{flag} {dcp} with attention data parallelism: each attention \
             rank holds its own requests, there is no TP group to shard the KV cache over"
        ));
    }
    if !layout.tp.is_multiple_of(dcp) {
        return Some(format!(
            "{flag} {dcp} must divide the tensor-parallel size {} \
             (vLLM shards the KV cache inside the TP group)",
            layout.tp
        ));
    }
    match spec.attention {
        AttentionSpec::Gqa { num_kv_heads, .. } if layout.tp / num_kv_heads.max(1) < dcp => {
            let (tp, kv) = (layout.tp, num_kv_heads.max(1));
            let copies = tp / kv;
            Some(if copies == 0 {
                format!(
                    "{flag} {dcp}: TP {tp} splits the {kv} KV heads, {} on each GPU, none \
                     copied, so there is nothing to shard (vLLM requires dcp ≤ tp / \
                     num_kv_heads = 0)",
                    kv / tp
                )
            } else {
                format!(
                    "{flag} {dcp}: TP {tp} holds each of the {kv} KV heads {copies} time{}, \
                     so DCP {copies} at most (vLLM requires dcp ≤ tp / num_kv_heads)",
                    if copies == 1 { "" } else { "s" }
                )
            })
        }
        _ => None,
    }
}

/// The per-layer decode collectives of DCP on each stage's DCP group, and their bytes per
/// decode token (nccl-tests' size convention, as [`super::comm`]).
#[derive(Debug, Clone)]
pub struct DcpComm {
    /// All-gather over each stage's first DCP group.
    all_gather: Vec<CommCurve>,
    /// Reduce-scatter over the same group.
    reduce_scatter: Vec<CommCurve>,
    /// KV shards of the group (`d`).
    shards: f64,
    /// Gathered query bytes per token: `d·heads/tp × (kv_lora_rank + rope) × 2`.
    query_bytes_per_token: f64,
    /// Gathered LSE bytes per token: `d × d·heads/tp × 4` (fp32; × 2 where the backend returns
    /// them in bf16, [`DcpComm::with_lse_bytes`]).
    lse_bytes_per_token: f64,
    /// Reduce-scatter input bytes per token: `d·heads/tp × kv_lora_rank × 2`.
    out_bytes_per_token: f64,
    /// DSA's gathered top-k candidates per indexer row: `d × index_topk × 8` (fp32 score and
    /// global id); 0 where the indexer does not merge over the group (no DSA, or a rank-local
    /// backend).
    topk_candidate_bytes_per_token: f64,
}

impl DcpComm {
    /// The DCP collectives of `layout` placed as `placement`, or `None` without DCP.
    pub fn new(
        machine: &Machine,
        spec: &ModelSpec,
        layout: &Layout,
        placement: &Placement,
        opts: &ServerOptions,
    ) -> Option<DcpComm> {
        let d = shards(opts);
        if d <= 1 {
            return None;
        }
        let (heads, q_dim, v_dim) = match spec.attention {
            AttentionSpec::Mla {
                num_heads,
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            } => (num_heads, kv_lora_rank + qk_rope_head_dim, kv_lora_rank),
            AttentionSpec::Gqa {
                num_heads,
                head_dim,
                ..
            } => (num_heads, head_dim, head_dim),
        };
        let group_heads = f64::from(heads) / f64::from(layout.tp.max(1)) * f64::from(d);
        let groups: Vec<&[u32]> = placement
            .stages
            .iter()
            .map(|g| &g[..(d as usize).min(g.len())])
            .collect();
        Some(DcpComm {
            all_gather: groups
                .iter()
                .map(|g| machine.collective(CollectiveOp::AllGather, g))
                .collect(),
            reduce_scatter: groups
                .iter()
                .map(|g| machine.collective(CollectiveOp::ReduceScatter, g))
                .collect(),
            shards: f64::from(d),
            query_bytes_per_token: group_heads * f64::from(q_dim) * 2.0,
            lse_bytes_per_token: f64::from(d) * group_heads * 4.0,
            out_bytes_per_token: group_heads * f64::from(v_dim) * 2.0,
            topk_candidate_bytes_per_token: 0.0,
        })
    }

    /// With the partial outputs' log-sum-exps of `bytes` each (fp32 unless the backend returns
    /// them in the query's dtype, as TRITON_MLA does).
    pub fn with_lse_bytes(mut self, bytes: f64) -> DcpComm {
        self.lse_bytes_per_token *= bytes / 4.0;
        self
    }

    /// With DSA's global top-k merge of `topk` candidates a row, where the indexer merges over
    /// the group (vLLM's DeepGEMM `sparse_attn_indexer`; the caller knows which backend runs,
    /// the module docs say which merge).
    pub fn merging_topk(mut self, topk: u32) -> DcpComm {
        self.topk_candidate_bytes_per_token = self.shards * f64::from(topk) * 8.0;
        self
    }

    /// One layer's DCP collectives on stage `s` for `decode` decode tokens.
    pub fn layer_s(&self, s: usize, decode: f64) -> f64 {
        if decode <= 0.0 {
            return 0.0;
        }
        let (ag, rs) = (&self.all_gather[s], &self.reduce_scatter[s]);
        ag.time_s(decode * self.query_bytes_per_token)
            + ag.time_s(decode * self.lse_bytes_per_token)
            + rs.time_s(decode * self.out_bytes_per_token)
    }

    /// Bytes one rank sends in one layer's DCP collectives for `decode` decode tokens (the ring
    /// formulas nccl-tests' bus bandwidth rests on, as `super::traffic` counts the others): the
    /// query and LSE all-gathers and the output reduce-scatter over the `d` shards.
    pub fn layer_wire_bytes(&self, decode: f64) -> f64 {
        let d = self.shards as u32;
        decode
            * ((self.query_bytes_per_token + self.lse_bytes_per_token)
                * CollectiveOp::AllGather.busbw_factor(d)
                + self.out_bytes_per_token * CollectiveOp::ReduceScatter.busbw_factor(d))
    }

    /// Bytes one rank sends in one indexer layer's top-k merge for `decode` rows (0 where the
    /// indexer does not merge over the group).
    pub fn topk_merge_wire_bytes(&self, decode: f64) -> f64 {
        decode
            * self.topk_candidate_bytes_per_token
            * CollectiveOp::AllGather.busbw_factor(self.shards as u32)
    }

    /// Bytes each of one layer's own DCP kernels moves for `decode` decode rows (read + written,
    /// module docs): the LSE correction, then, from two rows on, the gathered queries' relayout
    /// and the reduce-scatter's input and output copies.
    pub fn kernel_bytes(&self, decode: f64) -> Vec<f64> {
        if decode <= 0.0 {
            return Vec::new();
        }
        let mut k = vec![decode * (2.0 * self.out_bytes_per_token + self.lse_bytes_per_token)];
        if decode > 1.0 {
            k.push(decode * 2.0 * self.query_bytes_per_token);
            k.push(decode * 2.0 * self.out_bytes_per_token);
            k.push(decode * 2.0 * self.out_bytes_per_token / self.shards);
        }
        k
    }

    /// DSA's global top-k merge of one indexer layer on stage `s` for `decode` indexer rows:
    /// the candidates' all-gather (0 where the backend does not merge).
    pub fn topk_merge_s(&self, s: usize, decode: f64) -> f64 {
        if decode <= 0.0 || self.topk_candidate_bytes_per_token <= 0.0 {
            return 0.0;
        }
        self.all_gather[s].time_s(decode * self.topk_candidate_bytes_per_token)
    }

    /// Bytes of the merge's own kernels for `decode` rows: the pack (writes this rank's
    /// candidates), the gathered candidates' relayout (from two rows on) and the selector (reads
    /// them all).
    pub fn topk_merge_kernel_bytes(&self, decode: f64) -> Vec<f64> {
        if decode <= 0.0 || self.topk_candidate_bytes_per_token <= 0.0 {
            return Vec::new();
        }
        let gathered = decode * self.topk_candidate_bytes_per_token;
        let mut k = vec![gathered / self.shards, gathered];
        if decode > 1.0 {
            k.push(2.0 * gathered);
        }
        k
    }

    /// Kernels a decode step launches per layer beyond DCP1 (for the eager launch count): three
    /// collectives, the LSE correction and three layout copies (module docs).
    pub const LAUNCHES_PER_LAYER: f64 = 7.0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcp_must_divide_tp_and_fit_the_kv_head_copies() {
        let kimi = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
        let tp8 = Layout::tp(8);
        for d in [1, 2, 4, 8] {
            assert_eq!(refusal(&kimi, &tp8, d), None, "dcp {d}");
        }
        assert!(refusal(&kimi, &tp8, 3).unwrap().contains("divide"));
        assert!(refusal(&kimi, &Layout::tp(4), 8).is_some());
    }

    /// A GQA model's refusal counts the KV heads as they sit on the TP group: split with no copy
    /// (TP below the KV heads), or copied fewer times than the DCP asked.
    #[test]
    fn a_gqa_refusal_says_how_the_kv_heads_sit_on_the_tp_group() {
        let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
        let AttentionSpec::Gqa { num_kv_heads, .. } = spec.attention else {
            panic!("GLM-4.7 is GQA: {:?}", spec.attention);
        };
        assert_eq!(num_kv_heads, 8);
        let split = refusal(&spec, &Layout::tp(4), 2).unwrap();
        assert!(
            split.contains("TP 4 splits the 8 KV heads, 2 on each GPU, none copied"),
            "{split}"
        );
        let few = refusal(&spec, &Layout::tp(8), 2).unwrap();
        assert!(
            few.contains("TP 8 holds each of the 8 KV heads 1 time, so DCP 1 at most"),
            "{few}"
        );
    }
}
