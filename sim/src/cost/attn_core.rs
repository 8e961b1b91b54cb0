//! The attention core of one GPU: decode and prefill attention over the KV cache and, for DSA
//! checkpoints where sparse attention runs, the indexer's scoring and top-k.
//!
//! Whether DSA runs is a property of the serving stack, not the checkpoint: SGLang's `nsa`
//! backend needs DeepGEMM's paged MQA logits and FlashMLA's sparse kernels, built for SM90 and
//! SM100 only, so on workstation cards (SM120) SGLang serves a DSA checkpoint (GLM-5,
//! DeepSeek-V3.2) as dense MLA with FlashInfer's kernels and never invokes the indexer
//! (local-inference-lab/rtx6kpro models/glm5.md @18af540, "SGLang bypasses all DSA backends …
//! computing full attention", with `--attention-backend flashinfer`), unless an SM120 build is
//! told `--attention-backend nsa`. vLLM admits only sparse backends for a DSA checkpoint, so it
//! runs sparse everywhere, scoring with B12X's sparse indexer on SM120
//! ([`crate::engine::ServingEngine::dsa_always_sparse`]); no SM120 sparse-MLA kernel timing is
//! carried, so its top-k keys are priced on the efficiency curve.

use super::curves::Curves;
use super::decode_table::{DecodeTables, Family, FamilyKey};
use super::dsa_module_table::{DsaModule, DsaShape, ModuleKey};
use super::kernel::KernelCurve;
use super::layer_mix::LayerMix;
use super::memory;
use super::triton_mla::TritonMlaDecode;
use crate::efficiency::KernelKind;
use crate::machine::Machine;
use crate::options::ServerOptions;
use models::ModelSpec;
use models::footprint::Footprint;
use models::spec::AttentionSpec;

/// Attention-core constants per GPU and layer.
#[derive(Debug, Clone)]
pub(crate) struct AttnCore {
    /// Decode attention (MLA or GQA) in the KV-cache dtype.
    pub decode: KernelCurve,
    /// DSA indexer scoring in decode (streams the fp8 index-key cache).
    pub indexer_decode: KernelCurve,
    /// Prefill attention core (bf16 tensor cores) and the indexer's fp8 scoring.
    pub prefill: KernelCurve,
    pub indexer_prefill: KernelCurve,
    /// FLOPs per (query, attended key) pair in decode, for the rows the GPU holds.
    pub decode_flops_per_pair: f64,
    /// How the decode kernel lays (query token × head) rows on its MMA tiles: the padded rows
    /// are computed too ([`DecodeRows::factor`] scales [`Self::decode_flops_per_pair`]).
    pub decode_rows: DecodeRows,
    /// FLOPs per (query, attended key) pair in prefill.
    pub prefill_flops_per_pair: f64,
    /// How SGLang's DSA backend runs a sparse checkpoint's prefill on this GPU (dense for a
    /// batch that fits the top-k, else a head-padded sparse kernel); `None` where the absorbed
    /// FLOPs above price it as they are.
    pub sparse_prefill: Option<SparsePrefill>,
    /// KV bytes read per attended key.
    pub kv_bytes_per_key: f64,
    /// DSA: keys a query attends at most (`index_topk`).
    pub topk_cap: Option<u64>,
    /// DSA indexer: FLOPs per scored (query, key) pair, and bytes per cached key read once per
    /// request (the fp8 index key and, unfused, its dequantization; 0 without an indexer).
    pub indexer_flops_per_key: f64,
    pub indexer_bytes_per_key: f64,
    /// DSA indexer: logits and top-k traffic per scored (query, key) pair, by implementation
    /// ([`indexer_logit_bytes_per_pair`]).
    pub indexer_logit_bytes_per_pair: f64,
    /// A verify pass reads each request's cache once per draft token (vLLM's Triton MLA on
    /// SM120, [`ServerOptions::verify_rows_per_draft_token`]) rather than once for all of them.
    /// Under vLLM's sparse MLA on SM120 the same holds by another road: every verify row is a
    /// decode row of B12X's kernel with a top-k of its own (the keys are capped per row).
    pub verify_rereads_cache: bool,
    /// FLOPs per (query, key) pair of a prefill chunk that extends a cached prefix (the
    /// backend's path for it; [`Self::prefill_flops_per_pair`] without a prefix).
    pub prefill_flops_per_pair_cached: f64,
    /// SGLang's Triton MLA decode: its split-KV partials ([`TritonSplitKv`]); `None` for the
    /// other backends. FlashInfer's MLA decode (`BatchMLAPagedAttentionWrapper`, the `fa2`
    /// template on SM120: `include/flashinfer/attention/mla.cuh`) also splits KV where its planner
    /// (`MLAPlan`) finds too few requests for the SMs, but it is one cooperative kernel: the
    /// partials (bf16 output, fp32 log-sum-exp) are merged by `DevicePersistentMergeStates` after
    /// a `grid.sync()`, with no second launch; that traffic (at most half of Triton's fp32 one)
    /// is left in the kernel tables' MLA decode curve (whose backend they do not state), not
    /// added here.
    pub triton_split_kv: Option<TritonSplitKv>,
    /// The measured decode-attention table of the engine's backend for this GPU's heads and KV
    /// dtype, where one exists ([`super::decode_table`]): full-attention decode is priced from
    /// it instead of the efficiency curve's bytes over bandwidth.
    pub decode_table: Option<TableDecode>,
    /// vLLM's TRITON_MLA on SM120, priced by its grid ([`super::triton_mla`]).
    pub triton_mla: Option<TritonMlaDecode>,
    /// SGLang's DSA decode attention as the module it measures on HGX boxes
    /// ([`super::dsa_module_table`]): a pure decode step's attention block and indexer are
    /// priced from it instead of their kernels.
    pub dsa_module: Option<DsaModule>,
    /// Whether the attention is MLA (what [`Self::decode_note`] says priced it).
    pub mla: bool,
    /// The layers' attention kinds (sliding window, Gated DeltaNet) beside full attention.
    pub mix: LayerMix,
    /// DCP shards: each GPU holds 1/dcp of a request's keys, and its DSA indexer scores only
    /// those ([`super::dcp`]).
    pub dcp: f64,
}

/// SGLang's Triton MLA decode (`--attention-backend triton`;
/// `layers/attention/triton_ops/decode_attention.py::_decode_grouped_att_m_fwd` and
/// `_decode_softmax_reducev_fwd`): stage 1 runs a grid of (request, ⌈heads / 16⌉, KV split) and
/// writes each split's fp32 partial output (`v_head_dim` values) and log-sum-exp per head;
/// stage 2, a second kernel, reads them back and merges. The split count is
/// `triton_backend.py::get_num_kv_splits_triton`'s: for equal lengths,
/// `min(⌈SMs · max(log2(context / 64), 1) / (requests · ⌈heads / 16⌉)⌉, max_kv_splits)`, with
/// `--triton-attention-num-kv-splits` 8 by default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TritonSplitKv {
    pub heads: f64,
    pub v_head_dim: f64,
    pub sm_count: f64,
    pub max_splits: f64,
}

impl AttnCore {
    /// What priced one full-attention layer's decode core for `requests` requests of `context`
    /// cached tokens: the table row or the extrapolation ([`super::decode_table::Basis`]), or the
    /// efficiency curve where no table was measured for the engine's backend and shape.
    pub fn decode_note(&self, requests: f64, context: f64) -> String {
        if let Some(m) = self.dsa_module {
            return m.note(requests, context, true);
        }
        if let Some(tm) = self.triton_mla {
            return tm.note(requests, context / tm.dcp, self.decode.floor_s());
        }
        match self.decode_table {
            Some(td) => {
                let cached = context / td.dcp;
                let p = td.family.price(requests, cached, self.decode.floor_s());
                format!(
                    "decode attention: kernel table ({}) at {} requests × {:.0} cached tokens: {}, {:.1} µs a layer",
                    td.family.key,
                    requests,
                    cached,
                    p.basis.describe(),
                    p.s * 1e6
                )
            }
            None if self.mla => match self.topk_cap {
                // the cap is d × topk under rank-local DCP: each rank's own top-k of its 1/d
                // (the error model reads the note's start as an extrapolation: keep it)
                Some(cap) => format!(
                    "decode attention: efficiency curve, DSA sparse MLA: each query's top-k keys \
                     ({:.0} of {:.0} cached{}) and the indexer scoring the context (no \
                     sparse-MLA kernel timing carried for this GPU)",
                    context.min(cap as f64) / self.dcp,
                    context / self.dcp,
                    if self.dcp > 1.0 {
                        " on each DCP rank's shard"
                    } else {
                        ""
                    }
                ),
                None => "decode attention: efficiency curve (MLA other than vLLM's TRITON_MLA on \
                     SM120: the carried SGLang MLA table is not the kernel the public runs used, \
                     README 'Decode attention by shape')"
                    .to_string(),
            },
            None => {
                "decode attention: efficiency curve (KV bytes over the fitted bandwidth by batch; \
                     no measured table for this engine, backend, GPU and shape)"
                    .to_string()
            }
        }
    }
}

/// Decode attention priced from a measured table ([`super::decode_table`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TableDecode {
    pub family: &'static Family,
    /// DCP shards: each GPU reads 1/dcp of a request's keys.
    pub dcp: f64,
}

/// How an MLA decode kernel lays a request's (query token × head) rows on its MMA tiles. MLA has
/// one latent KV head, so the rows are the query heads a GPU holds times the query tokens of a
/// request (1, or 1 + draft tokens in a verify pass); a tile computes all its rows whether or
/// not the GPU has heads for them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum DecodeRows {
    /// The rows the GPU holds, no padding modelled (SM120's kernels, Triton's own grid, SM100's
    /// trtllm-gen MLA, whose heads are the MMA's N side in tiles of 8 or 16).
    Exact,
    /// A request's query tokens × heads packed into tiles of `rows` (SM90: FlashMLA's dense
    /// decode, `Config::BLOCK_SIZE_M = 64` over `s_q · h_q`, deepseek-ai/FlashMLA @9241ae3
    /// `csrc/sm90/decode/dense/config.h`; FA3's MLA path, `tile_size_fwd_sm90` 64 rows for a
    /// 512-wide V with PackGQA, vllm-project/flash-attention `hopper/tile_size.h`; FlashInfer's
    /// SM90 MLA, `CTA_TILE_Q = 64` over packed `qo_len × num_heads`, `mla_hopper.cuh`).
    Packed { heads: f64, rows: f64 },
    /// Each query token's heads padded to a multiple of `rows`, tokens not packed (SM90 DSA
    /// decode: FlashMLA's sparse kernels take 64 or 128 heads only, `sparse_decode.h`, and vLLM
    /// pads to them, `flashmla_sparse.py` `_compute_fp8_decode_padded_heads`; SGLang's `fa3` DSA
    /// decode runs each query token as its own sequence over the same 64-row tiles).
    PerToken { heads: f64, rows: f64 },
}

impl DecodeRows {
    /// Rows computed ÷ rows held, at `queries` query tokens a request (≥ 1).
    pub fn factor(self, queries: f64) -> f64 {
        let q = queries.max(1.0);
        match self {
            DecodeRows::Exact => 1.0,
            DecodeRows::Packed { heads, rows } => {
                let held = q * heads;
                (held / rows).ceil() * rows / held
            }
            DecodeRows::PerToken { heads, rows } => (heads / rows).ceil() * rows / heads,
        }
    }

    /// The rows of an MLA decode kernel on `machine` for `heads` query heads a GPU computes
    /// (DCP's gathered heads included), DSA's sparse decode or dense: SM90's kernels pad (see
    /// the variants); elsewhere none is modelled.
    fn of(machine: &Machine, heads: f64, sparse: bool) -> DecodeRows {
        if super::attn_backend::sm_major(machine) != Some(9) || heads <= 0.0 {
            return DecodeRows::Exact;
        }
        if sparse {
            DecodeRows::PerToken {
                heads,
                rows: if heads <= 64.0 { 64.0 } else { 128.0 },
            }
        } else {
            DecodeRows::Packed { heads, rows: 64.0 }
        }
    }
}

/// SGLang's DSA (NSA) backend's prefill on datacenter parts (sgl-project/sglang
/// `python/sglang/srt/layers/attention/nsa_backend.py` @46ee4423, `set_nsa_prefill_impl`,
/// `_forward_flashmla_sparse`, `_forward_standard_mha`):
/// - a prefill batch whose longest sequence (cached + new tokens) is at most the index's top-k,
///   on SM90 or SM100, runs `MHA_ONE_SHOT`: dense multi-head attention over the up-projected K
///   and V (every key is in the top-k), FA3 on SM90, trtllm-gen's ragged kernel on SM100; no
///   padding;
/// - a longer one runs the sparse kernel `--nsa-prefill-backend` names, by default
///   `flashmla_auto` for an fp8 cache (FlashMLA's `flashmla_sparse` or `flashmla_kv`) and
///   `flashmla_sparse` for bf16 (`server_args.py` `_set_default_nsa_backends`), `trtllm` on
///   SM100 with an fp8 cache since 2026-04-02 ([`default_prefill_backend`]). FlashMLA's
///   sparse kernels take 64 or 128 query heads only (deepseek-ai/FlashMLA @9241ae3,
///   `csrc/api/sparse_fwd.h`, `sparse_decode.h`: "Unsupported h_q"), and SGLang pads the heads
///   a GPU holds with zeros to 64 on SM90 and 128 on SM100 (`required_padding = 128 if
///   device_sm_major >= 10 else 64`): GLM-5's 64 heads at TP8 are 8 a GPU, computed as 64
///   (8×) on an H200 and 128 (16×) on a B200. `fa3` on SM90 lays each token's heads on FA3's
///   64-row tiles alike. `trtllm` (trtllm-gen's sparse MLA, heads on the MMA's N side in tiles
///   of 8 or 16) and `tilelang` pad nothing that is modelled.
/// - `trtllm` on SM100 is a decode kernel run over the prefill: `_forward_trtllm(…, is_prefill)`
///   views every new token as a batch row of one query (the page table's rows the token's own
///   top-k, `transform_index_page_table_prefill`) and calls FlashInfer's
///   `trtllm_batch_decode_with_kv_cache_mla` with `sparse_mla_top_k` (sgl-project/sglang #21783,
///   5e12c4e08, 2026-04-01, in v0.5.11 and v0.5.12; from #18389, 2026-02-15, GLM-5's forced
///   sparse prefill took the same kernel). Each token gathers its top-k cached keys (576 B each
///   in this layout, fp8 latent and rope) as a decode query does, whatever the heads a GPU
///   holds, so the pass is priced as the decode kernel's: the token's keys' bytes at the decode
///   curve's bandwidth, its (unpadded) FLOPs as a floor. Tokens of one sequence pick
///   overlapping keys, which an L2 may serve; no such reuse is priced (an upper bound on the
///   reads; not measured on SM100).
/// - GLM-5 (`glm_moe_dsa`) on SM100 never runs the dense path: SGLang's server arguments set the
///   dense bound (`SGLANG_NSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD`) to 0 for it on Blackwell,
///   over a user's value (#18521, 2026-02-10, as `SGLANG_NSA_FORCE_MLA`; #20062, be63f982b,
///   2026-03-09, as the threshold); elsewhere the bound is the index top-k.
///
/// Physical meaning: the padded rows' FLOPs are computed and thrown away; a gathered key is read
/// once per query token that attends it. Not fitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SparsePrefill {
    /// Rows computed ÷ heads held, for a query token of the sparse kernel.
    pub rows_factor: f64,
    /// `MHA_ONE_SHOT`'s bound: a batch whose longest sequence is at most this runs dense.
    pub dense_up_to: f64,
    /// The dense path's FLOPs per (query, key) pair (non-absorbed MHA).
    pub dense_flops_per_pair: f64,
    /// The sparse kernel is a decode kernel over one-query rows (`trtllm` on SM100): every
    /// (query, key) pair reads the key's bytes ([`Self::gathers`]).
    pub decode_gather: bool,
}

impl SparsePrefill {
    /// SGLang's DSA prefill on `machine` for `heads` query heads a GPU holds, a top-k of `topk`
    /// keys and a dense path of `mha` FLOPs a pair; `None` where it is not SGLang's sparse
    /// backend on SM90 / SM100 (vLLM's sparse prefill and SM120's kernels keep the absorbed
    /// FLOPs as they are).
    fn of(
        (machine, opts): (&Machine, &ServerOptions),
        (model_type, kv_name): (&str, &str),
        heads: f64,
        topk: u32,
        mha: f64,
    ) -> Option<Self> {
        let sm = super::attn_backend::sm_major(machine)?;
        if opts.engine != crate::engine::Engine::Sglang || !(sm == 9 || sm == 10) || heads <= 0.0 {
            return None;
        }
        let backend = opts
            .nsa
            .prefill
            .as_deref()
            .or_else(|| default_prefill_backend(sm, kv_name, opts.dsa_build.flashmla_default));
        let pad_to = |rows: f64| (heads / rows).ceil() * rows / heads;
        // FlashMLA's sparse kernels, by their names old and new, pad; FA3's tiles on SM90 too
        let flashmla = matches!(
            backend,
            None | Some(
                "flashmla_auto"
                    | "flashmla_sparse"
                    | "flashmla_kv"
                    | "flashmla_prefill"
                    | "flashmla_decode"
            )
        );
        let fa3 = backend == Some("fa3");
        let rows_factor = match sm {
            9 if flashmla || fa3 => pad_to(64.0),
            10 if flashmla => pad_to(128.0),
            _ => 1.0,
        };
        Some(SparsePrefill {
            rows_factor,
            dense_up_to: if sm == 10 && model_type == GLM_DSA_MODEL_TYPE {
                0.0
            } else {
                f64::from(topk)
            },
            dense_flops_per_pair: mha,
            decode_gather: sm == 10 && backend == Some("trtllm"),
        })
    }

    /// A prefill batch whose longest sequence is `max_kv` tokens runs the sparse kernel as
    /// decode rows that gather their keys (`trtllm` on SM100, past the dense bound).
    pub fn gathers(&self, max_kv: f64) -> bool {
        self.decode_gather && max_kv > self.dense_up_to
    }

    /// FLOPs per (query, key) pair of a prefill batch whose longest sequence is `max_kv`
    /// tokens, where the sparse kernel's own (unpadded) is `absorbed`.
    pub fn flops_per_pair(&self, max_kv: f64, absorbed: f64) -> f64 {
        if max_kv <= self.dense_up_to {
            self.dense_flops_per_pair
        } else {
            absorbed * self.rows_factor
        }
    }

    /// What prices the prefill, where it is not the absorbed FLOPs as they are.
    pub fn note(&self) -> Option<String> {
        let kernel = if self.decode_gather {
            "trtllm-gen's sparse MLA decode kernel, one row a token, each reading its top-k keys \
             (priced as decode reads, no L2 reuse)"
                .to_string()
        } else if self.rows_factor > 1.0 {
            format!(
                "SGLang's FlashMLA sparse kernel with the heads a GPU holds padded {:.0}× (it \
                 takes 64 or 128 heads only)",
                self.rows_factor
            )
        } else {
            return None;
        };
        Some(if self.dense_up_to > 0.0 {
            format!(
                "DSA prefill: sequences of at most {:.0} tokens as dense attention, longer ones on \
                 {kernel}",
                self.dense_up_to
            )
        } else {
            format!("DSA prefill: every sequence sparse (GLM-5 on Blackwell), on {kernel}")
        })
    }
}

/// SGLang's DSA prefill backend when `--nsa-prefill-backend` names none, for the backends this
/// module tells apart (`server_args.py` `_set_default_nsa_backends`): `trtllm` on SM100 with an
/// fp8 cache since #21914 (2026-04-02; #22430 lets a named backend win), FlashMLA otherwise
/// (`flashmla_auto` / `flashmla_sparse`; `None` here, as every FlashMLA name prices alike) and
/// on builds before that day (`flashmla_default`). The window from #20086 (2026-03-07) in which
/// a one-replica server with a named fp8 cache was moved to `trtllm` is not modelled.
fn default_prefill_backend(sm: u32, kv_name: &str, flashmla_default: bool) -> Option<&'static str> {
    (sm == 10 && kv_name == "fp8" && !flashmla_default).then_some("trtllm")
}

/// GLM-5's HF `model_type` (`GlmMoeDsaForCausalLM`), whose prefill SGLang keeps sparse on
/// Blackwell ([`SparsePrefill`]).
const GLM_DSA_MODEL_TYPE: &str = "glm_moe_dsa";

/// Heads one stage-1 program computes (`BLOCK_H`): the MMA's rows, padded when a GPU has fewer.
const TRITON_BLOCK_H: f64 = 16.0;
/// `--triton-attention-num-kv-splits` default.
const TRITON_MAX_KV_SPLITS: f64 = 8.0;

impl TritonSplitKv {
    /// KV splits per request of a decode batch of `requests` at `context` tokens each.
    pub fn splits(&self, requests: f64, context: f64) -> f64 {
        let programs = requests.max(1.0) * (self.heads / TRITON_BLOCK_H).ceil().max(1.0);
        let cores = (self.sm_count * (context / 64.0).log2().max(1.0)).floor();
        (cores / programs).ceil().clamp(1.0, self.max_splits)
    }

    /// Bytes the partials cost per request: written by stage 1, read by stage 2 (fp32 output
    /// and log-sum-exp per head and split).
    pub fn partial_bytes_per_request(&self, requests: f64, context: f64) -> f64 {
        2.0 * self.heads * self.splits(requests, context) * (self.v_head_dim + 1.0) * 4.0
    }
}

/// Streaming multiprocessors of the GPU (the Triton split heuristic's `device_core_count`), from
/// the datasheets: RTX PRO 6000 Blackwell 188, B200 148, H100 / H200 132, A100 108; 132 when
/// unknown.
fn sm_count(machine: &Machine) -> f64 {
    let name = machine.gpu.name.to_ascii_lowercase();
    [("rtx-pro-6000", 188.0), ("b200", 148.0), ("a100", 108.0)]
        .iter()
        .find(|(k, _)| name.contains(k))
        .map_or(132.0, |&(_, n)| n)
}

/// Whether the attention backend is SGLang's Triton one (`--attention-backend triton`).
fn triton_backend(opts: &ServerOptions) -> bool {
    opts.attention_backend.as_deref() == Some("triton")
}

/// Attention-core constants of one GPU: heads it computes, KV bytes it reads per key (the
/// cache one GPU holds per token and layer, from `fp`, split further by DCP).
pub(super) fn attn_core(
    model: &ModelSpec,
    fp: &Footprint,
    opts: &ServerOptions,
    curves: &Curves,
    machine: &Machine,
) -> AttnCore {
    let kv_dtype = memory::kv_dtype(model, opts);
    let attn_tp = if fp.layout.dp_attention {
        1.0
    } else {
        fp.layout.tp as f64
    };
    let kv_name = match kv_dtype {
        models::KvDtype::Bf16 => "bf16",
        models::KvDtype::Fp8 => "fp8",
    };
    let dcp = f64::from(super::dcp::shards(opts));
    // MLA's latent is replicated on every TP rank, so TP does not shrink it, DCP does (each rank
    // scores d× the heads over its 1/d of the keys, [`super::dcp`]); GQA's heads are split by TP
    let kv_bytes_per_key = fp.kv_bytes_per_token_per_layer_per_gpu(model, kv_dtype) as f64 / dcp;
    let decode_kind = if model.attention.is_mla() {
        KernelKind::MlaDecode
    } else {
        KernelKind::GqaDecode
    };
    // decode attention and the indexer core run two kernels each (split-KV + combine; logits +
    // top-k), a prefill core one: each at least the small-kernel floor
    let f = curves.floor_s;
    let decode = curves
        .of(
            decode_kind,
            decode_curve_dtype(model, opts, machine, kv_name),
        )
        .with_floor(2.0 * f);
    let indexer_decode = curves.of(KernelKind::GqaDecode, "fp8").with_floor(2.0 * f);
    let prefill = curves.of(KernelKind::Prefill, "bf16").with_floor(f);
    let indexer_prefill = curves.of(KernelKind::Prefill, "fp8").with_floor(2.0 * f);
    let k = Kernels {
        decode,
        indexer_decode,
        prefill,
        indexer_prefill,
        attn_tp,
        kv_name,
        dcp,
        kv_bytes_per_key,
    };
    match model.attention {
        AttentionSpec::Mla {
            num_heads,
            kv_lora_rank,
            indexer,
            ..
        } => mla_core(
            model,
            fp,
            opts,
            machine,
            k,
            (num_heads, kv_lora_rank, indexer),
        ),
        AttentionSpec::Gqa {
            num_heads,
            num_kv_heads,
            head_dim,
            ..
        } => gqa_core(
            model,
            fp,
            opts,
            machine,
            k,
            (num_heads, num_kv_heads, head_dim),
        ),
    }
}

/// What both attention kinds share: the kernels' curves (each at its floor), the attention TP,
/// the KV dtype's name, the DCP shards and the KV bytes per attended key.
struct Kernels {
    decode: KernelCurve,
    indexer_decode: KernelCurve,
    prefill: KernelCurve,
    indexer_prefill: KernelCurve,
    attn_tp: f64,
    kv_name: &'static str,
    dcp: f64,
    kv_bytes_per_key: f64,
}

/// The KV dtype whose measured decode curve prices a step's decode attention. The only fp8-cache
/// MLA decode measured (SGLang 0.5.14 on an H200, `data/observations/mla-decode-kernels-sglang-0.5.14.csv`)
/// streams at ~6% of bandwidth, a quirk of the kernel SGLang ran there, kept for SGLang's dense
/// MLA on SM90 (its DSA decode there is FlashMLA's fp8 sparse kernel, `flashmla_kv`).
/// The other engines' and GPUs' MLA kernels read an fp8 cache as they read a bf16 one, at the
/// bf16 kernel's bandwidth share over half the bytes: vLLM's SM100 default, FlashInfer's
/// trtllm-gen MLA (`trtllm_batch_decode_with_kv_cache_mla`, e4m3 KV), SGLang's `trtllm_mla`
/// and DSA `trtllm` / `flashmla_kv` decode on SM100, FlashMLA's fp8 sparse kernels
/// (deepseek-ai/FlashMLA @9241ae3, `csrc/sm100/decode/head64`: a dequantising warp group
/// pipelined with the MMAs). GQA decode takes the bf16 curve whatever its cache (its own
/// kernels, none measured in fp8).
fn decode_curve_dtype(
    model: &ModelSpec,
    opts: &ServerOptions,
    machine: &Machine,
    kv_name: &'static str,
) -> &'static str {
    let measured_quirk = model.attention.is_mla()
        && model.attention.indexer().is_none()
        && opts.engine == crate::engine::Engine::Sglang
        && super::attn_backend::sm_major(machine) == Some(9);
    if kv_name == "fp8" && !measured_quirk {
        "bf16"
    } else {
        kv_name
    }
}

/// MLA (and DSA): absorbed decode, Triton's padded head blocks, vLLM's TRITON_MLA grid on SM120,
/// the indexer where sparse attention runs.
fn mla_core(
    model: &ModelSpec,
    fp: &Footprint,
    opts: &ServerOptions,
    machine: &Machine,
    k: Kernels,
    (num_heads, kv_lora_rank, indexer): (u32, u32, Option<models::spec::DsaIndexer>),
) -> AttnCore {
    let layout = &fp.layout;
    // vLLM serves a DSA checkpoint with its sparse MLA backend, not TRITON_MLA
    let triton_mla = vllm_triton_mla(machine, opts, indexer.is_some());
    let indexer = indexer.filter(|_| sparse_attention(machine, opts));
    let heads = num_heads as f64 / k.attn_tp;
    let triton = triton_backend(opts) && indexer.is_none();
    // Triton's stage 1 computes 16 head rows per program however few heads a GPU holds
    let padded = if triton {
        (heads / TRITON_BLOCK_H).ceil().max(1.0) * TRITON_BLOCK_H / heads
    } else {
        1.0
    };
    // absorbed MLA: scores over (kv_lora + rope) dims, values over kv_lora dims; prefill
    // without DSA runs MLA as multi-head attention over up-projected K and V
    let absorbed = model.attention_flops_per_pair(true) / k.attn_tp;
    let mha = model.attention_flops_per_pair(false) / k.attn_tp;
    let dsa_module = indexer.and_then(|ix| dsa_module(model, fp, opts, machine, (&k, ix)));
    AttnCore {
        decode: k.decode,
        indexer_decode: k.indexer_decode,
        prefill: k.prefill,
        indexer_prefill: k.indexer_prefill,
        decode_flops_per_pair: absorbed * padded,
        // Triton's own head blocks are in `padded`; the other kernels' tiles by arch
        decode_rows: if triton || triton_mla {
            DecodeRows::Exact
        } else {
            DecodeRows::of(machine, heads * k.dcp, indexer.is_some())
        },
        prefill_flops_per_pair: if indexer.is_some() { absorbed } else { mha },
        sparse_prefill: indexer.and_then(|i| {
            let kinds = (model.model_type.as_str(), k.kv_name);
            SparsePrefill::of((machine, opts), kinds, heads, i.topk, mha)
        }),
        // with a cached prefix, deepseek_v2.py's `dispatch_attn_forward_method` sends a
        // Triton-backend extend to the absorbed MLA path (MHA only without a prefix)
        prefill_flops_per_pair_cached: if indexer.is_some() || triton {
            absorbed
        } else {
            mha
        },
        // SGLang's MLA stays on the efficiency curve ([`super::decode_table`]'s notes);
        // vLLM's dense TRITON_MLA on SM120 is priced by its grid
        decode_table: None,
        triton_mla: triton_mla.then(|| TritonMlaDecode {
            heads: heads * k.dcp,
            dcp: k.dcp,
            fp8: k.kv_name == "fp8",
            max_model_len: opts
                .context_length
                .map_or(model.max_context_tokens as f64, f64::from),
        }),
        dsa_module,
        mla: true,
        triton_split_kv: triton.then(|| TritonSplitKv {
            heads,
            v_head_dim: kv_lora_rank as f64,
            sm_count: sm_count(machine),
            max_splits: TRITON_MAX_KV_SPLITS,
        }),
        kv_bytes_per_key: k.kv_bytes_per_key,
        // under DCP each rank keeps its own top-k of its shard where the indexer does not merge
        // over the group (SM120's B12X, [`super::dcp`]): min(context / d, topk) keys a rank,
        // the cap of `d × topk` over the 1/d bytes a key costs here; merged, topk in all
        topk_cap: indexer.map(|i| {
            let rank_local = k.dcp > 1.0 && !indexer_merges_topk(machine);
            u64::from(i.topk) * if rank_local { k.dcp as u64 } else { 1 }
        }),
        indexer_flops_per_key: indexer
            .map_or(0.0, |i| 2.0 * i.num_heads as f64 * i.head_dim as f64),
        // the index key read once per request, with its bf16 dequantization when unfused
        indexer_bytes_per_key: model.indexer_cache_bytes_per_token_per_layer() as f64
            + indexer.map_or(0.0, |i| {
                indexer_key_dequant_bytes(i, fused_indexer(machine, opts))
            }),
        indexer_logit_bytes_per_pair: indexer.map_or(0.0, |i| {
            indexer_logit_bytes_per_pair(i, fused_indexer(machine, opts))
        }),
        verify_rereads_cache: opts.verify_rows_per_draft_token && !fused_indexer_logits(machine),
        mix: LayerMix::of(model, layout),
        dcp: k.dcp,
    }
}

/// SGLang's measured DSA decode module for this layer ([`super::dsa_module_table`]), where the
/// tables hold its GPU, attention weights (fp8 block-scaled or bf16), cache, the decode kernel
/// the engine runs ([`crate::engine::ServingEngine::dsa_decode_backend`]) and the heads a GPU
/// holds, for GLM-5's shape or DeepSeek-V3.2's (measured whole: only where every layer runs its
/// own indexer); not under DCP (the module gathers no heads and merges no top-k) and not for a
/// layer mix other than all full attention.
fn dsa_module(
    model: &ModelSpec,
    fp: &Footprint,
    opts: &ServerOptions,
    machine: &Machine,
    (k, ix): (&Kernels, models::spec::DsaIndexer),
) -> Option<DsaModule> {
    let d = model.attention.mla_dims()?;
    let full_only = LayerMix::of(model, &fp.layout);
    if k.dcp > 1.0 || full_only.sliding > 0.0 || full_only.linear > 0.0 {
        return None;
    }
    let sm = super::attn_backend::sm_major(machine)?;
    let backend =
        opts.engine
            .rules()
            .dsa_decode_backend(sm, k.kv_name, opts.nsa.decode.as_deref())?;
    let weights = match model
        .format_of(models::ModelPart::Attention)
        .name()
        .as_str()
    {
        n if n.starts_with("fp8") => "fp8",
        "bf16" => "bf16",
        _ => return None,
    };
    let heads = f64::from(d.heads as u32) / k.attn_tp;
    let narrow = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    let shape = DsaShape {
        heads: narrow(d.heads),
        q_lora_rank: d.q_lora_rank.map_or(0, narrow),
        kv_lora_rank: narrow(d.kv_lora_rank),
        qk_nope: narrow(d.nope),
        qk_rope: narrow(d.rope),
        v_head_dim: narrow(d.v),
        index_heads: ix.num_heads,
        index_head_dim: ix.head_dim,
        index_topk: ix.topk,
    };
    let key = ModuleKey {
        gpu: &machine.gpu.name,
        weights,
        kv_dtype: k.kv_name,
        backend,
        heads_per_gpu: (heads.fract() == 0.0).then_some(heads as u32)?,
    };
    // a module measured only whole carries its indexer in every layer it prices
    DsaModule::find(&key, shape)
        .filter(|m| !m.whole() || model.num_indexer_layers() == model.num_layers)
}

/// GQA: heads split by TP, decode priced by the kernel tables where they hold the shape.
fn gqa_core(
    model: &ModelSpec,
    fp: &Footprint,
    opts: &ServerOptions,
    machine: &Machine,
    k: Kernels,
    (num_heads, num_kv_heads, head_dim): (u32, u32, u32),
) -> AttnCore {
    let layout = &fp.layout;
    AttnCore {
        decode: k.decode,
        indexer_decode: k.indexer_decode,
        prefill: k.prefill,
        indexer_prefill: k.indexer_prefill,
        decode_flops_per_pair: model.attention_flops_per_pair(true) / k.attn_tp,
        decode_rows: DecodeRows::Exact,
        prefill_flops_per_pair: model.attention_flops_per_pair(false) / k.attn_tp,
        sparse_prefill: None,
        kv_bytes_per_key: k.kv_bytes_per_key,
        topk_cap: None,
        indexer_flops_per_key: 0.0,
        indexer_bytes_per_key: 0.0,
        indexer_logit_bytes_per_pair: 0.0,
        verify_rereads_cache: false,
        prefill_flops_per_pair_cached: model.attention_flops_per_pair(false) / k.attn_tp,
        triton_split_kv: None,
        decode_table: table_decode(
            machine,
            opts,
            FamilyKey {
                engine: String::new(),
                backend: String::new(),
                kind: "gqa".into(),
                kv_dtype: k.kv_name.into(),
                q_heads: ((num_heads as f64 / k.attn_tp).ceil() as u32).max(1),
                kv_heads: ((num_kv_heads as f64 / k.attn_tp).ceil() as u32).max(1),
                head_dim,
            },
            k.dcp,
        ),
        triton_mla: None,
        dsa_module: None,
        mla: false,
        mix: LayerMix::of(model, layout)
            .with_gdn_table(super::gdn_table::for_model(machine, opts, model, layout)),
        dcp: k.dcp,
    }
}

/// The decode table of the backend the engine runs on this GPU, where one was measured: the
/// tables are the RTX PRO 6000's (SM120), so other GPUs keep the efficiency curves.
/// Which backend is the engine's rule ([`crate::engine::ServingEngine::decode_table_backend`]):
/// - SGLang: `--attention-backend flashinfer` (its default on SM120 for GQA) or `triton` for GQA;
///   for MLA its 0.5.14 MLA decode table (`--attention-backend triton` keeps
///   [`TritonSplitKv`]);
/// - vLLM: FlashAttention-2 for a bf16 cache, FlashInfer for fp8 (FA2 reads no fp8 cache), and
///   TRITON_MLA for MLA (the MLA kernel built for SM120).
fn table_decode(
    machine: &Machine,
    opts: &ServerOptions,
    mut want: FamilyKey,
    dcp: f64,
) -> Option<TableDecode> {
    if super::attn_backend::sm_major(machine) != Some(12) {
        return None;
    }
    let backend = opts.engine.rules().decode_table_backend(
        &want.kind,
        &want.kv_dtype,
        opts.attention_backend.as_deref(),
    )?;
    want.engine = opts.engine.name().into();
    want.backend = backend.into();
    DecodeTables::builtin()
        .find(&want)
        .map(|family| TableDecode { family, dcp })
}

/// Whether decode attention is vLLM's TRITON_MLA, the MLA backend vLLM builds for SM120: dense
/// MLA checkpoints (Kimi-K2, DeepSeek-V3); a DSA checkpoint (`dsa`: GLM-5, DeepSeek-V3.2) runs
/// vLLM's sparse MLA kernels over its top-k keys and stays on the efficiency curve.
pub fn vllm_triton_mla(machine: &Machine, opts: &ServerOptions, dsa: bool) -> bool {
    opts.engine.rules().sm120_mla_decode_by_grid()
        && !dsa
        && super::attn_backend::sm_major(machine) == Some(12)
}

/// Whether a DSA checkpoint runs sparse attention (indexer, top-k) on `machine`: always under an
/// engine that admits only sparse backends for it (vLLM,
/// [`crate::engine::ServingEngine::dsa_always_sparse`]); SGLang's `nsa` backend on datacenter
/// parts (SM90 / SM100), on workstation parts (SM120) only when asked for with
/// `--attention-backend nsa`, else dense MLA (the module docs say why).
pub fn sparse_attention(machine: &Machine, opts: &ServerOptions) -> bool {
    opts.engine.rules().dsa_always_sparse()
        || fused_indexer_logits(machine)
        || opts.attention_backend.as_deref() == Some("nsa")
}

/// Whether the DSA indexer merges each rank's top-k into a global one over the DCP group:
/// vLLM's DeepGEMM indexer on datacenter parts does; SM120's B12X keeps each rank's own
/// ([`super::dcp`]).
pub fn indexer_merges_topk(machine: &Machine) -> bool {
    fused_indexer_logits(machine)
}

/// Whether the DSA indexer scores with a fused kernel (fp8 keys read as they are, one logit a
/// pair): DeepGEMM's on datacenter parts, the engine's own where it always runs sparse (vLLM's
/// B12X sparse indexer on SM120); else the unfused fallback.
fn fused_indexer(machine: &Machine, opts: &ServerOptions) -> bool {
    fused_indexer_logits(machine) || opts.engine.rules().dsa_always_sparse()
}

/// Whether the DSA indexer's logits run as DeepGEMM's fused paged-MQA-logits kernel: DeepGEMM
/// supports SM90 and SM100 (datacenter Hopper / Blackwell) only, so workstation cards (SM120: RTX
/// PRO 6000, RTX 5090) run the unfused fallback.
pub fn fused_indexer_logits(machine: &Machine) -> bool {
    crate::efficiency::family_key_for(&machine.gpu) == crate::efficiency::FAMILY_DATACENTER
}

/// Bytes the unfused DSA indexer spends per cached key to dequantize it to bf16 (written and
/// read, 4·d B), once per request whatever its query tokens; 0 fused (DeepGEMM reads fp8).
pub fn indexer_key_dequant_bytes(ix: models::spec::DsaIndexer, fused: bool) -> f64 {
    if fused { 0.0 } else { 4.0 * ix.head_dim as f64 }
}

/// Logits and top-k bytes the DSA indexer moves per scored (query, key) pair, beyond reading
/// (and dequantizing) the index key:
/// - fused (DeepGEMM): one fp32 logit written, read back by the top-k over two passes: 12 B;
/// - unfused: per-head fp32 scores (written by the matmul, read and rewritten by ReLU × head
///   weight, read by the head sum: 16·heads B), then the logit as above.
pub fn indexer_logit_bytes_per_pair(ix: models::spec::DsaIndexer, fused: bool) -> f64 {
    let logit = 4.0 + 2.0 * 4.0;
    if fused {
        logit
    } else {
        16.0 * ix.num_heads as f64 + logit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SM90's MLA decode tiles: 8 heads a GPU pack 1 query token into a 64-row tile (8× the
    /// held rows), a 4-token verify into half of one (2×), 8 tokens fill it; DSA's sparse decode
    /// pads each token's heads to 64 (8× whatever the tokens), 96 heads to 128. SM100 and SM120
    /// pad nothing that is modelled.
    #[test]
    fn hopper_mla_decode_computes_its_padded_rows() {
        let h200 = Machine::resolve("h200-x8").unwrap();
        let dense = DecodeRows::of(&h200, 8.0, false);
        assert_eq!(
            [dense.factor(1.0), dense.factor(4.0), dense.factor(8.0)],
            [8.0, 2.0, 1.0]
        );
        let sparse = DecodeRows::of(&h200, 8.0, true);
        assert_eq!([sparse.factor(1.0), sparse.factor(4.0)], [8.0, 8.0]);
        let wide = DecodeRows::of(&h200, 96.0, true);
        assert!((wide.factor(1.0) - 128.0 / 96.0).abs() < 1e-12);
        for other in ["b200-x8", "rtx-pro-6000-x8-baremetal"] {
            let m = Machine::resolve(other).unwrap();
            assert_eq!(DecodeRows::of(&m, 8.0, true), DecodeRows::Exact, "{other}");
            assert_eq!(DecodeRows::of(&m, 8.0, false), DecodeRows::Exact, "{other}");
        }
    }

    /// SGLang's DSA prefill: GLM-5's 8 heads a GPU at TP8 padded to FlashMLA's 64 on an H200
    /// (8×) and 128 on a B200 (16×) by default and under `flashmla_sparse` / `flashmla_kv`,
    /// `fa3` on SM90 alike; `trtllm` pads nothing; 64 heads a GPU (DP attention) fill SM90's
    /// tiles and half SM100's; a batch whose longest sequence fits the top-k runs dense at the
    /// MHA FLOPs, except GLM-5's on Blackwell; `trtllm` on SM100 gathers each token's keys as a
    /// decode row does; vLLM and SM120 have no such path.
    #[test]
    fn sglang_dsa_prefill_pads_flashmla_heads_and_runs_short_batches_dense() {
        let h200 = Machine::resolve("h200-x8").unwrap();
        let b200 = Machine::resolve("b200-x8").unwrap();
        let sglang = |backend: Option<&str>| ServerOptions {
            engine: crate::engine::Engine::Sglang,
            nsa: crate::options::NsaBackends {
                prefill: backend.map(str::to_string),
                decode: None,
            },
            ..ServerOptions::default()
        };
        let rows = |m: &Machine, o: &ServerOptions, heads: f64| {
            SparsePrefill::of((m, o), ("deepseek_v32", "bf16"), heads, 2048, 1.0)
                .map(|s| s.rows_factor)
        };
        assert_eq!(rows(&h200, &sglang(None), 8.0), Some(8.0));
        assert_eq!(rows(&b200, &sglang(None), 8.0), Some(16.0));
        for b in [
            "flashmla_sparse",
            "flashmla_kv",
            "flashmla_auto",
            "flashmla_prefill",
        ] {
            assert_eq!(rows(&h200, &sglang(Some(b)), 8.0), Some(8.0), "{b}");
            assert_eq!(rows(&b200, &sglang(Some(b)), 8.0), Some(16.0), "{b}");
        }
        assert_eq!(rows(&h200, &sglang(Some("fa3")), 8.0), Some(8.0));
        assert_eq!(rows(&b200, &sglang(Some("fa3")), 8.0), Some(1.0));
        assert_eq!(rows(&b200, &sglang(Some("trtllm")), 8.0), Some(1.0));
        assert_eq!(rows(&h200, &sglang(Some("tilelang")), 8.0), Some(1.0));
        assert_eq!(rows(&h200, &sglang(None), 64.0), Some(1.0));
        assert_eq!(rows(&b200, &sglang(None), 64.0), Some(2.0));
        let vllm = ServerOptions {
            engine: crate::engine::Engine::Vllm,
            ..ServerOptions::default()
        };
        assert_eq!(rows(&h200, &vllm, 8.0), None);
        let rtx = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        assert_eq!(rows(&rtx, &sglang(None), 8.0), None);
        let of = |m: &Machine, o: ServerOptions, model: &str| {
            SparsePrefill::of((m, &o), (model, "bf16"), 8.0, 2048, 3.0).unwrap()
        };
        let sp = of(&b200, sglang(None), "deepseek_v32");
        assert_eq!(sp.flops_per_pair(2048.0, 5.0), 3.0);
        assert_eq!(sp.flops_per_pair(2049.0, 5.0), 80.0);
        assert!(sp.note().unwrap().contains("16×"));
        let trt = of(&b200, sglang(Some("trtllm")), "deepseek_v32");
        assert_eq!(trt.flops_per_pair(8192.0, 5.0), 5.0);
        assert!(trt.gathers(2049.0) && !trt.gathers(2048.0));
        assert!(trt.note().unwrap().contains("decode kernel"));
        assert!(!sp.gathers(8192.0));
        assert!(!of(&h200, sglang(Some("trtllm")), "deepseek_v32").gathers(8192.0));
        // GLM-5 on Blackwell: sparse however short the prompt; on Hopper the top-k bound holds
        let glm = of(&b200, sglang(Some("trtllm")), "glm_moe_dsa");
        assert!(glm.gathers(100.0));
        assert_eq!(
            of(&b200, sglang(None), "glm_moe_dsa").flops_per_pair(100.0, 5.0),
            80.0
        );
        assert_eq!(
            of(&h200, sglang(None), "glm_moe_dsa").flops_per_pair(100.0, 5.0),
            3.0
        );
        // no backend named: today's SGLang runs trtllm on SM100 with an fp8 cache; a build
        // before 2026-04-02, a bf16 cache or SM90 runs FlashMLA
        let fp8 = |m: &Machine, o: ServerOptions| {
            SparsePrefill::of((m, &o), ("deepseek_v32", "fp8"), 8.0, 2048, 3.0).unwrap()
        };
        assert!(fp8(&b200, sglang(None)).gathers(8192.0));
        let older = ServerOptions {
            dsa_build: crate::options::DsaBuild {
                flashmla_default: true,
                ..Default::default()
            },
            ..sglang(None)
        };
        assert_eq!(fp8(&b200, older).rows_factor, 16.0);
        assert_eq!(of(&b200, sglang(None), "deepseek_v32").rows_factor, 16.0);
        assert_eq!(fp8(&h200, sglang(None)).rows_factor, 8.0);
    }

    /// `get_num_kv_splits_triton` for equal lengths on 188 SMs, 8 heads per GPU (one program
    /// per request): 8 splits at 32 requests of 356 tokens, ⌈465 / 128⌉ = 4 at 128, 1 at 1024.
    #[test]
    fn triton_splits_follow_sglang_heuristic() {
        let t = TritonSplitKv {
            heads: 8.0,
            v_head_dim: 512.0,
            sm_count: 188.0,
            max_splits: TRITON_MAX_KV_SPLITS,
        };
        assert_eq!(t.splits(32.0, 356.0), 8.0);
        assert_eq!(t.splits(128.0, 356.0), 4.0);
        assert_eq!(t.splits(1024.0, 356.0), 1.0);
        // a short context still gets the log2 floor of 1
        assert_eq!(t.splits(100.0, 64.0), 2.0);
        // written and read back: 2 × 8 heads × 8 splits × 513 fp32
        assert_eq!(
            t.partial_bytes_per_request(32.0, 356.0),
            2.0 * 8.0 * 8.0 * 513.0 * 4.0
        );
    }
}
