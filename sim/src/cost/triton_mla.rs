//! vLLM's TRITON_MLA decode on SM120, priced by its grid: the MLA backend vLLM builds for RTX
//! PRO 6000 (`v1/attention/ops/triton_decode_attention.py`, `_decode_grouped_att_m_fwd`).
//!
//! Stage 1 runs a grid of (decode rows, ⌈heads / `BLOCK_H`⌉, `num_kv_splits`) with `BLOCK_H = 16`
//! and `num_kv_splits = 4` (fixed by vLLM's TRITON_MLA); every program streams its split of one
//! row's latent cache (576 values a token) for its block of 16 heads. So:
//! - a GPU with 8 heads pays the same as one with 16 (the block is padded): in the carried
//!   aiconfigurator table the 8- and 16-head rows agree within a few per cent at every shape;
//! - each further head block reads the same latent again. Under vLLM's DCP a rank scores all
//!   `d · heads / tp` heads of its group over its `1/d` of the keys ([`super::dcp`]): Kimi-K2 at
//!   TP8 is one block at DCP 1–2, two at DCP4, four at DCP8;
//! - with few rows the grid is a handful of KV streams (rows × 4 splits) on 188 SMs and cannot
//!   reach the bandwidth; more head blocks add programs over the same bytes, not streams (with
//!   `rows × blocks × 4` instead, the fit misses the 32- and 64-head rows by −8% and −13%, and
//!   64–128 heads held back by 10% instead of 5%).
//!
//! The time of one call, cold (a serving step never finds a layer's cache in L2):
//! `bytes / cold_bw × (1 + half_streams / streams) × (1 + reread × (blocks − 1))`, with
//! `streams = rows × 4`. The three constants are fitted, at first use, to the carried
//! table's own cold rows (vLLM 0.24 TRITON_MLA module, bf16 KV, 8–128 heads, caches ≥ 2× L2), by
//! median |error| over a bounded grid:
//! - `cold_bw`: the bandwidth one head block reaches with the GPU full (1.00–1.58 TB/s, under the
//!   1.79 TB/s DRAM peak);
//! - `half_streams`: the KV streams at which it reaches half of that (0–10);
//! - `reread`: what a further head block costs against the first (0.2–0.78: partly served from
//!   L2, as the table's 32–128-head rows show, faster than the first read).
//!
//! FP8 KV is read at the bandwidth the same module's one-head (MHA kernel) rows reach in fp8
//! against bf16 at the same shape (the fp8 cache is dequantised in the kernel): the table has
//! no grouped fp8 rows, so the grouped kernel is assumed to dequantise at the same cost.
//! Every head block dequantises again: a program loads its tile of the latent and converts it
//! (`k = (k.to(tl.float32) * ks).to(q.dtype)`, the same for the V tile, in
//! `_fwd_grouped_kernel_stage1` of vLLM's `triton_decode_attention.py`), so only the bytes of a
//! re-read halve in fp8, not the conversion. A further fp8 block costs half the bf16 re-read
//! (its bytes) plus the conversion the one-head rows show (the fp8 first read's excess over
//! half a bf16 read): `reread/2 + (1/(2·fp8_rate) − 1/2)` of a bf16 read, i.e.
//! `reread·fp8_rate + 1 − fp8_rate` of the fp8 first read ([`TritonMlaFit::reread_for`]).
//! Priced with the bf16 re-read scaled by the bytes alone, the dev Kimi-K2.6 DCP4 and DCP8 runs
//! (four head blocks, fp8 KV) gained a median 15% less step time from context at 64k–128k and
//! 4–32 streams than measured (0.74–1.00 of it, 12 runs; 0.86–1.16, median 0.99, now), while
//! DCP2 without speculation (one block) matched.
//!
//! The RTX PRO 6000 records ran the community SM120 build (voipmonitor/vllm
//! `v1/attention/backends/mla/triton_mla.py` @2fe72a2, local-inference-lab/rtx6kpro
//! `models/kimi-k26-mtp-long-ctx-wip/README.md`), not upstream's kernel launch. Priced as it
//! runs there ([`TritonMlaDecode::blocks`], [`TritonMlaDecode::time_s`]):
//! - its programs hold `BLOCK_H` heads from a tuned table (fp8 KV: 16, 64 and 128 heads, by
//!   `--max-model-len` bucket and rows; [`sm120_block_h`]), else its fallback config's 8: Kimi-K2
//!   TP8 at DCP4 (32 heads a GPU) reads its shard once per 8 heads, four blocks, not two (the dev
//!   set's DCP4 runs were 10–40% faster in the model than measured with two);
//! - a verify pass's `k + 1` tokens a request are rows of their own reading the request's cache
//!   side by side: one DRAM read and `k` re-reads, the rows filling the grid as requests do;
//! - its split count (up to 64, ~576 programs) does not set the small-grid term, which stays the
//!   fit's (`streams = rows × 4`, ×2.06 at one row). With the build's fallback splits
//!   the grid is full from one request (×1.07) and the dev set came out worse (MAPE 9.8 → 11.0%,
//!   MTP off 8.4 → 9.2%): the one-stream long-context runs are as slow as the 4-split fit says,
//!   for a reason the kernel's source does not show;
//! - its split count does set the partials ([`TritonMlaDecode::partials_s`]): stage 1 writes
//!   `rows × heads × splits × 513` fp32 (`attn_logits`, one shared buffer) and stage 2 reads them
//!   back, priced at the fitted bandwidth whatever the context. The splits are the tuned table's
//!   where it has the heads (Kimi-K2 TP8 DCP2's 16, DCP8's 64: [`sm120_splits`]), else
//!   `_pick_num_kv_splits`' ~576 programs (DCP1's 8 heads, DCP4's 32: about 9 MB written a layer). DCP8's
//!   64 heads at 16–64 rows write 34 MB a layer and at 128 rows, where the table goes back from
//!   4 splits to 8, 134 MB: the dev runs' step at context 0 gains 11.1 / 13.9 / 19.7 / 40.8 ms
//!   from DCP1 to DCP8 at 16 / 32 / 64 / 128 streams, the model gave 6.7 / 9.5 / 15.8 / 27.9 ms
//!   without the partials and 9.1 / 11.9 / 18.2 / 40.0 with them. The table's own rows (upstream
//!   vLLM 0.24, 4 splits) are fitted as before, their partials inside the fitted bandwidth:
//!   fitting them as DRAM traffic made the fit worse (median |error| 4.0 → 4.05%, 64k+ held back
//!   8.7 → 11.0%), so this term prices only the build's split counts, from the build's source.

use std::sync::OnceLock;

use super::decode_table::{DecodeTables, FamilyKey, L2_BYTES, Row};

/// Heads one stage-1 program computes (`BLOCK_H` of `_decode_grouped_att_m_fwd`).
pub const BLOCK_H: f64 = 16.0;
/// vLLM TRITON_MLA's `num_kv_splits` (a constant in `triton_mla.py`).
pub const NUM_KV_SPLITS: f64 = 4.0;
/// MLA's latent per token (kv_lora_rank 512 + rope 64 values).
const LATENT_VALUES: f64 = 576.0;
/// MLA's `kv_lora_rank`: the values of a head's partial output.
const KV_LORA_RANK: f64 = 512.0;

/// The model's constants, fitted on the carried table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TritonMlaFit {
    /// One head block's bandwidth on a full GPU, bf16 KV, bytes/s.
    pub cold_bytes_per_s: f64,
    /// KV streams (rows × splits) at which a call reaches half of it.
    pub half_streams: f64,
    /// A further head block's cost against the first.
    pub reread: f64,
    /// fp8 KV's bytes/s against bf16's (the one-head rows).
    pub fp8_rate: f64,
    /// Median |error| on the rows fitted.
    pub median_abs_err: f64,
    /// Rows fitted.
    pub rows: usize,
}

/// A cold row of the grouped kernel: heads, rows (batch), bytes read once, time.
#[derive(Debug, Clone, Copy)]
struct Cold {
    heads: f64,
    batch: f64,
    bytes: f64,
    time_s: f64,
}

/// Bytes of the stage-1 partials (`attn_logits`: fp32 output and log-sum-exp, `kv_lora_rank + 1`
/// values per row, head and split), written by stage 1 and read back by stage 2
/// (`_decode_softmax_reducev_fwd`).
fn partial_bytes(rows: f64, heads: f64, splits: f64) -> f64 {
    2.0 * rows * heads * splits * (KV_LORA_RANK + 1.0) * 4.0
}

fn bytes_per_value(kv_dtype: &str) -> f64 {
    if kv_dtype == "fp8" { 1.0 } else { 2.0 }
}

fn is_module(key: &FamilyKey) -> bool {
    key.engine == "vllm" && key.backend == "triton_mla_ctx"
}

fn cold_rows(rows: &[Row], keep: impl Fn(&Row) -> bool) -> Vec<Cold> {
    rows.iter()
        .filter(|r| is_module(&r.key) && r.key.kv_dtype == "bf16" && r.key.q_heads >= 2)
        .filter(|r| keep(r))
        .filter_map(|r| {
            let bytes = f64::from(r.batch) * f64::from(r.cached_tokens) * LATENT_VALUES * 2.0;
            (bytes >= 2.0 * L2_BYTES && r.time_s > 0.0).then_some(Cold {
                heads: f64::from(r.key.q_heads),
                batch: f64::from(r.batch),
                bytes,
                time_s: r.time_s,
            })
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The call time of the model for `c`'s shape (bf16 rate).
fn model_s(cold_bw: f64, half: f64, reread: f64, c: &Cold) -> f64 {
    let blocks = (c.heads / BLOCK_H).ceil().max(1.0);
    // the head blocks of one chunk read the same bytes: they add programs, not DRAM streams
    let streams = c.batch * NUM_KV_SPLITS;
    c.bytes / cold_bw * (1.0 + half / streams) * (1.0 + reread * (blocks - 1.0))
}

/// fp8 bytes/s against bf16's at the same (batch, cached tokens) of the one-head rows whose fp8
/// cache is ≥ 2× L2 (median); 1 where none.
fn fp8_rate(rows: &[Row]) -> f64 {
    let one_head = |dtype: &'static str| {
        rows.iter()
            .filter(move |r| is_module(&r.key) && r.key.q_heads == 1 && r.key.kv_dtype == dtype)
    };
    let ratios: Vec<f64> = one_head("fp8")
        .filter(|r| {
            f64::from(r.batch) * f64::from(r.cached_tokens) * LATENT_VALUES >= 2.0 * L2_BYTES
        })
        .filter_map(|f| {
            one_head("bf16")
                .find(|b| b.batch == f.batch && b.cached_tokens == f.cached_tokens)
                .map(|b| b.time_s / f.time_s / 2.0)
        })
        .collect();
    if ratios.is_empty() {
        1.0
    } else {
        median(ratios)
    }
}

impl TritonMlaFit {
    /// Fitted on the carried table's rows.
    pub fn builtin() -> &'static TritonMlaFit {
        static F: OnceLock<TritonMlaFit> = OnceLock::new();
        F.get_or_init(|| TritonMlaFit::fit(DecodeTables::builtin_rows(), |_| true))
    }

    /// Fitted on the rows `keep` passes (a test holds some back by shape).
    pub fn fit(rows: &[Row], keep: impl Fn(&Row) -> bool) -> TritonMlaFit {
        let cold = cold_rows(rows, keep);
        let err = |bw: f64, half: f64, reread: f64| {
            median(
                cold.iter()
                    .map(|c| (model_s(bw, half, reread, c) / c.time_s - 1.0).abs())
                    .collect(),
            )
        };
        let mut best = (f64::INFINITY, 1.28e12, 4.0, 0.5);
        for i in 0..30 {
            let bw = (1.0 + 0.02 * f64::from(i)) * 1e12;
            for j in 0..40 {
                let half = 0.25 * f64::from(j);
                for k in 0..30 {
                    let reread = 0.2 + 0.02 * f64::from(k);
                    let e = err(bw, half, reread);
                    if e < best.0 {
                        best = (e, bw, half, reread);
                    }
                }
            }
        }
        TritonMlaFit {
            cold_bytes_per_s: best.1,
            half_streams: best.2,
            reread: best.3,
            fp8_rate: fp8_rate(rows),
            median_abs_err: best.0,
            rows: cold.len(),
        }
    }

    /// A further head block's cost against the first read in `fp8` or bf16 KV: bf16's fitted
    /// re-read; in fp8 half its bytes plus the dequantisation every block repeats (module docs).
    pub fn reread_for(&self, fp8: bool) -> f64 {
        if fp8 {
            self.reread * self.fp8_rate + 1.0 - self.fp8_rate
        } else {
            self.reread
        }
    }

    /// Median |error| of this fit on the rows `keep` passes.
    pub fn median_abs_err_on(&self, rows: &[Row], keep: impl Fn(&Row) -> bool) -> f64 {
        let cold = cold_rows(rows, keep);
        median(
            cold.iter()
                .map(|c| {
                    (model_s(self.cold_bytes_per_s, self.half_streams, self.reread, c) / c.time_s
                        - 1.0)
                        .abs()
                })
                .collect(),
        )
    }
}

/// One GPU's TRITON_MLA decode: the heads it scores and its KV dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TritonMlaDecode {
    /// Heads a GPU scores (`heads / tp`, × DCP).
    pub heads: f64,
    /// KV shards of the DCP group (each GPU reads 1/dcp of a request's keys).
    pub dcp: f64,
    pub fp8: bool,
    /// `--max-model-len`: the SM120 build's tuned configs are bucketed by it.
    pub max_model_len: f64,
}

impl TritonMlaDecode {
    /// Head blocks one request's chunk is read for at `rows` decode rows: the heads over the
    /// build's `BLOCK_H` ([`sm120_block_h`]), counted in blocks of at most 16 heads, the block the
    /// fit's re-read cost was measured on. A program of 8 heads (the fallback config; the tuned
    /// 16-head config at one row) reads the chunk once per 8 heads. A program of 32 (the tuned
    /// configs at many rows) reads it once but computes two 16-head blocks' scores and softmax;
    /// the fitted re-read cost does not separate a block's bytes from that work, and priced as
    /// one read the Kimi-K2.6 DCP8 MTP runs at ≥ 16 rows came out 20–40% too fast, so it is
    /// priced as two blocks.
    pub fn blocks(&self, rows: f64) -> f64 {
        let block_h = sm120_block_h(self.heads, rows, self.max_model_len, self.fp8).min(BLOCK_H);
        (self.heads / block_h).ceil().max(1.0)
    }

    /// One layer's stage-1 time for `rows` decode rows of `cached` tokens each on this GPU,
    /// seconds without the launch floor; `rows_per_request` of them read one request's cache (a
    /// verify pass's draft tokens, each a row of its own).
    ///
    /// The SM120 build runs a verify pass's `k + 1` tokens a request as rows of their own with
    /// the request's block-table row repeated (`TritonMLAMetadataBuilder._build_decode`, voipmonitor/vllm
    /// `v1/attention/backends/mla/triton_mla.py` @2fe72a2; upstream vLLM's TRITON_MLA declares
    /// `QueryLenSupport.SINGLE_ONLY`, so there a verify batch takes the MLA prefill path). The
    /// grid's first axis is the row, so a request's rows of one head block and split are
    /// neighbouring programs streaming the same pages at the same time: the cache comes from
    /// DRAM once and the further rows re-read it, each priced as a further head block. The rows,
    /// not the requests, are the streams of the small-grid term: each row's programs are in
    /// flight, pulling the pages (the first from DRAM, the rest from L2), so a one-request verify
    /// fills the grid as four requests would. With the requests as the streams the dev Kimi-K2.6
    /// MTP runs at 1 stream lost 16–36 points of error from context 0 to 128k (DCP1 +2 → −20%,
    /// DCP4 +20 → −16%, DCP8 +12 → −4%): a one-request verify's context cost was priced at 2.8×
    /// a single row's, where DCP1 measures 1.8× (+19.3 ms a step at 2.16 tokens accepted against
    /// +10.9 ms without MTP); with the rows, +2 → +5%, +20 → +7%, +12 → +12%.
    pub fn time_s(&self, rows: f64, rows_per_request: f64, cached: f64) -> f64 {
        let f = TritonMlaFit::builtin();
        let per_value = bytes_per_value(if self.fp8 { "fp8" } else { "bf16" });
        let bw = f.cold_bytes_per_s * if self.fp8 { f.fp8_rate } else { 1.0 };
        let rows = rows.max(1.0);
        let per_request = rows_per_request.clamp(1.0, rows);
        let requests = rows / per_request;
        let c = Cold {
            heads: BLOCK_H * self.blocks(rows) * per_request,
            batch: rows,
            bytes: requests * cached * LATENT_VALUES * per_value,
            time_s: 0.0,
        };
        model_s(bw, f.half_streams, f.reread_for(self.fp8), &c) + self.partials_s(rows)
    }

    /// The split partials of `rows` rows, written and read back at the fitted bandwidth: the
    /// build's `num_kv_splits` ([`sm120_splits`]) × the heads a GPU scores, whatever the
    /// context (the Kimi-K2.6 DCP8 runs at 128 streams pay 8 splits × 64 heads, 134 MB a layer).
    pub fn partials_s(&self, rows: f64) -> f64 {
        let rows = rows.max(1.0);
        let splits = sm120_splits(self.heads, rows, self.max_model_len, self.fp8);
        partial_bytes(rows, self.heads, splits) / TritonMlaFit::builtin().cold_bytes_per_s
    }

    /// What priced it, for `predict`'s note.
    pub fn note(&self, rows: f64, cached: f64, floor_s: f64) -> String {
        let f = TritonMlaFit::builtin();
        format!(
            "decode attention: vLLM TRITON_MLA by its grid ({:.0} heads a GPU, BLOCK_H {} = {:.0} \
             block(s) of at most 16 × {} KV splits, {} KV; fitted on the aiconfigurator table's \
             cold rows, median |error| {:.0}%) at {} rows × {:.0} cached tokens: {:.1} µs a layer",
            self.heads,
            sm120_block_h(self.heads, rows, self.max_model_len, self.fp8),
            self.blocks(rows),
            NUM_KV_SPLITS,
            if self.fp8 { "fp8" } else { "bf16" },
            f.median_abs_err * 100.0,
            rows,
            cached,
            (self.time_s(rows, 1.0, cached) + floor_s) * 1e6
        )
    }
}

/// `BLOCK_H` and `num_kv_splits` of the SM120 fp8 build's tuned configs, by (heads,
/// `--max-model-len` bucket), for row buckets 1, 2, 4, …, 256 (voipmonitor/vllm
/// `v1/attention/backends/mla/triton_mla_tuning.py` @2fe72a2, `TUNED_KV_CONFIGS`).
#[rustfmt::skip]
const TUNED: [(f64, f64, [f64; 9], [f64; 9]); 12] = [
    (16.0, 16_000.0, [8., 16., 16., 16., 16., 16., 16., 16., 16.], [64., 64., 32., 16., 32., 16., 8., 4., 2.]),
    (16.0, 64_000.0, [8., 16., 16., 16., 16., 16., 16., 16., 16.], [64., 64., 32., 64., 32., 16., 8., 4., 2.]),
    (16.0, 128_000.0, [8., 16., 16., 16., 16., 16., 16., 16., 16.], [64., 64., 32., 64., 32., 16., 8., 4., 8.]),
    (16.0, 262_144.0, [8., 16., 16., 16., 16., 16., 16., 16., 16.], [64., 64., 32., 64., 32., 16., 8., 4., 8.]),
    (64.0, 16_000.0, [16., 16., 16., 16., 16., 16., 16., 16., 32.], [32., 16., 32., 16., 8., 4., 2., 1., 1.]),
    (64.0, 64_000.0, [16., 16., 16., 16., 16., 16., 32., 32., 32.], [32., 64., 32., 16., 8., 4., 4., 2., 1.]),
    (64.0, 128_000.0, [16., 16., 16., 16., 16., 32., 32., 32., 32.], [32., 64., 32., 16., 8., 8., 4., 2., 4.]),
    (64.0, 262_144.0, [16., 16., 16., 16., 32., 32., 32., 32., 32.], [32., 64., 32., 16., 16., 8., 4., 8., 4.]),
    (128.0, 16_000.0, [16., 16., 16., 16., 16., 16., 16., 32., 16.], [16., 32., 16., 8., 4., 2., 1., 1., 1.]),
    (128.0, 64_000.0, [16., 16., 16., 16., 16., 32., 32., 32., 32.], [64., 32., 16., 8., 4., 4., 2., 1., 2.]),
    (128.0, 128_000.0, [16., 16., 16., 16., 32., 32., 32., 32., 32.], [64., 32., 16., 8., 8., 4., 2., 4., 2.]),
    (128.0, 262_144.0, [16., 16., 16., 32., 32., 32., 32., 32., 32.], [64., 32., 16., 16., 8., 4., 8., 4., 2.]),
];

/// The SM120 build's tuned (`BLOCK_H`, `num_kv_splits`) for `heads` at `rows` rows, where its
/// table has the heads (fp8 KV only; `lookup_config` floors the max-model-len and the rows to
/// its buckets, the smallest bucket below the first).
fn sm120_tuned(heads: f64, rows: f64, max_model_len: f64, fp8: bool) -> Option<(f64, f64)> {
    if !fp8 {
        return None;
    }
    let mmls = TUNED.iter().filter(|(h, _, _, _)| *h == heads);
    let (_, _, block_h, splits) = mmls
        .clone()
        .rfind(|(_, m, _, _)| *m <= max_model_len)
        .or_else(|| mmls.clone().next())?;
    let bucket = (rows.max(1.0).log2().floor() as usize).min(block_h.len() - 1);
    Some((block_h[bucket], splits[bucket]))
}

/// The SM120 build's fallback split count where its table has no config
/// (`_pick_num_kv_splits`): the largest power of two ≤ 576 / (rows × ⌈heads / 8⌉), 1–64, so
/// rows × head blocks × splits stays about 576 programs.
fn sm120_fallback_splits(heads: f64, rows: f64) -> f64 {
    let target = (576.0 / (rows.max(1.0).round() * (heads / 8.0).ceil().max(1.0))).floor();
    let mut p = 1.0;
    while p * 2.0 <= target {
        p *= 2.0;
    }
    p.min(64.0)
}

/// `num_kv_splits` the SM120 build runs for `heads` at `rows` rows: the tuned table's, else the
/// fallback's.
pub fn sm120_splits(heads: f64, rows: f64, max_model_len: f64, fp8: bool) -> f64 {
    sm120_tuned(heads, rows, max_model_len, fp8)
        .map_or_else(|| sm120_fallback_splits(heads, rows), |(_, s)| s)
}

/// Heads one stage-1 program computes in the SM120 build the RTX PRO 6000 records ran: its tuned
/// table's where it has the heads (fp8 KV; `lookup_config` floors the max-model-len and the rows
/// to its buckets), else the fallback config's 8 (`forward_mqa`'s default `BLOCK_H: 8`).
pub fn sm120_block_h(heads: f64, rows: f64, max_model_len: f64, fp8: bool) -> f64 {
    sm120_tuned(heads, rows, max_model_len, fp8).map_or(8.0, |(b, _)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> &'static [Row] {
        DecodeTables::builtin_rows()
    }

    #[test]
    fn fit_explains_the_cold_rows_and_stays_in_bounds() {
        let f = TritonMlaFit::builtin();
        println!("{f:?}");
        assert!(f.rows >= 100, "{} cold rows", f.rows);
        assert!(
            f.median_abs_err < 0.10,
            "median |error| {}",
            f.median_abs_err
        );
        assert!(f.cold_bytes_per_s < 1.79e12 && f.cold_bytes_per_s > 1.0e12);
        assert!(f.reread > 0.2 && f.reread < 0.78, "reread {}", f.reread);
        assert!(
            f.fp8_rate > 0.5 && f.fp8_rate < 1.0,
            "fp8 rate {}",
            f.fp8_rate
        );
    }

    #[test]
    fn held_back_by_shape() {
        let few_heads = TritonMlaFit::fit(rows(), |r| r.key.q_heads <= 32);
        let e_heads = few_heads.median_abs_err_on(rows(), |r| r.key.q_heads >= 64);
        let short = TritonMlaFit::fit(rows(), |r| r.cached_tokens <= 32_768);
        let e_ctx = short.median_abs_err_on(rows(), |r| r.cached_tokens >= 65_536);
        println!(
            "held back: 64-128 heads from <= 32: {:.1}%; >= 64k tokens from <= 32k: {:.1}%",
            e_heads * 100.0,
            e_ctx * 100.0
        );
        assert!(e_heads < 0.15 && e_ctx < 0.15);
    }

    /// The SM120 build's `BLOCK_H`: the fallback config's 8 heads a program (Kimi-K2 TP8 at DCP
    /// 1 and 4: 8 and 32 heads), the tuned configs' 8 / 16 / 32 (DCP2's 16 heads, DCP8's 64);
    /// blocks of at most 16 heads are priced, each further one a re-read.
    #[test]
    fn head_blocks_follow_the_sm120_build() {
        let d = |heads| TritonMlaDecode {
            heads,
            dcp: 1.0,
            fp8: true,
            max_model_len: 262_144.0,
        };
        assert_eq!(sm120_block_h(8.0, 4.0, 262_144.0, true), 8.0);
        assert_eq!(sm120_block_h(32.0, 4.0, 262_144.0, true), 8.0);
        assert_eq!(sm120_block_h(16.0, 1.0, 262_144.0, true), 8.0);
        assert_eq!(sm120_block_h(16.0, 2.0, 262_144.0, true), 16.0);
        assert_eq!(sm120_block_h(64.0, 8.0, 262_144.0, true), 16.0);
        assert_eq!(sm120_block_h(64.0, 16.0, 262_144.0, true), 32.0);
        // a shorter --max-model-len bucket keeps 16 heads a program to more rows
        assert_eq!(sm120_block_h(64.0, 16.0, 64_000.0, true), 16.0);
        assert_eq!(sm120_block_h(64.0, 16.0, 8_192.0, true), 16.0);
        // bf16 KV runs the fallback config
        assert_eq!(sm120_block_h(64.0, 16.0, 262_144.0, false), 8.0);
        let blocks = |h: f64, rows: f64| d(h).blocks(rows);
        assert_eq!(
            [blocks(8.0, 4.0), blocks(16.0, 1.0), blocks(16.0, 4.0)],
            [1.0, 2.0, 1.0]
        );
        assert_eq!(
            [blocks(32.0, 4.0), blocks(64.0, 8.0), blocks(64.0, 16.0)],
            [4.0; 3]
        );
        // the padded block reads as much as a full one; only the partials follow the heads
        let t = |h: f64, rows: f64| d(h).time_s(rows, 1.0, 32_768.0) - d(h).partials_s(rows);
        assert!((t(4.0, 4.0) - t(8.0, 4.0)).abs() < 1e-12);
        assert!((t(8.0, 8.0) - t(16.0, 8.0)).abs() < 1e-12);
        let (one, four) = (t(16.0, 8.0), t(32.0, 8.0));
        assert!(four > one * 2.0 && four < one * 4.0, "{one} {four}");
    }

    /// The build's split counts: its tuned table where it has the heads (fp8), else
    /// `_pick_num_kv_splits`' ~576 programs; the partials follow rows × heads × splits.
    #[test]
    fn splits_follow_the_sm120_build() {
        let s = |h: f64, rows: f64| sm120_splits(h, rows, 262_144.0, true);
        // Kimi-K2 TP8: DCP1 8 heads and DCP4 32 heads run the fallback
        assert_eq!(
            [s(8.0, 1.0), s(8.0, 16.0), s(8.0, 128.0)],
            [64.0, 32.0, 4.0]
        );
        assert_eq!(
            [s(32.0, 1.0), s(32.0, 8.0), s(32.0, 128.0)],
            [64.0, 16.0, 1.0]
        );
        // DCP8's 64 heads: the tuned table, 8 splits again at 128 rows
        assert_eq!(
            [s(64.0, 1.0), s(64.0, 64.0), s(64.0, 128.0)],
            [32.0, 4.0, 8.0]
        );
        assert_eq!(sm120_splits(64.0, 128.0, 64_000.0, true), 2.0);
        let d = |heads| TritonMlaDecode {
            heads,
            dcp: 1.0,
            fp8: true,
            max_model_len: 262_144.0,
        };
        let f = TritonMlaFit::builtin();
        let bytes = d(64.0).partials_s(128.0) * f.cold_bytes_per_s;
        assert!(
            (bytes - 2.0 * 128.0 * 64.0 * 8.0 * 513.0 * 4.0).abs() < 1.0,
            "{bytes}"
        );
        assert!(d(64.0).partials_s(128.0) > 10.0 * d(32.0).partials_s(128.0));
    }

    /// Every head block dequantises the fp8 latent again, so fp8's saving over bf16 shrinks
    /// with the blocks: one block at the one-head rows' rate, four blocks nearer bf16's time.
    #[test]
    fn an_fp8_head_block_dequantises_again() {
        let f = TritonMlaFit::builtin();
        assert!(f.reread_for(true) > f.reread && f.reread_for(true) < 1.0);
        let t = |heads: f64, fp8: bool| {
            let d = TritonMlaDecode {
                heads,
                dcp: 1.0,
                fp8,
                max_model_len: 262_144.0,
            };
            d.time_s(8.0, 1.0, 65_536.0) - d.partials_s(8.0)
        };
        let (one, four) = (t(8.0, true) / t(8.0, false), t(32.0, true) / t(32.0, false));
        assert!((one - 0.5 / f.fp8_rate).abs() < 1e-9, "{one}");
        assert!(four > one && four < 1.0, "{one} {four}");
    }

    /// A verify pass's rows of one request re-read its cache: dearer than one row (though its rows
    /// fill the grid as requests do), cheaper than as many requests (each its own DRAM read).
    #[test]
    fn verify_rows_of_one_request_reread_its_cache() {
        let d = TritonMlaDecode {
            heads: 8.0,
            dcp: 1.0,
            fp8: true,
            max_model_len: 262_144.0,
        };
        let one_row = d.time_s(1.0, 1.0, 65_536.0);
        let verify = d.time_s(4.0, 4.0, 65_536.0);
        let four_requests = d.time_s(4.0, 1.0, 65_536.0);
        assert!(verify > 1.5 * one_row, "{verify} vs {one_row}");
        assert!(verify < 4.0 * one_row, "{verify} vs {one_row}");
        let (v8, r32) = (d.time_s(32.0, 4.0, 65_536.0), d.time_s(32.0, 1.0, 65_536.0));
        assert!(v8 < r32, "{v8} {r32}");
        assert!(four_requests < 4.0 * one_row);
    }
}
