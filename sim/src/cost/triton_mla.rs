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

use std::sync::OnceLock;

use super::decode_table::{DecodeTables, FamilyKey, L2_BYTES, Row};

/// Heads one stage-1 program computes (`BLOCK_H` of `_decode_grouped_att_m_fwd`).
pub const BLOCK_H: f64 = 16.0;
/// vLLM TRITON_MLA's `num_kv_splits` (a constant in `triton_mla.py`).
pub const NUM_KV_SPLITS: f64 = 4.0;
/// MLA's latent per token (kv_lora_rank 512 + rope 64 values).
const LATENT_VALUES: f64 = 576.0;

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
}

impl TritonMlaDecode {
    /// Head blocks of 16 the grid runs.
    pub fn blocks(&self) -> f64 {
        (self.heads / BLOCK_H).ceil().max(1.0)
    }

    /// One layer's stage-1 time for `rows` decode rows of `cached` tokens each on this GPU,
    /// seconds without the launch floor. A verify pass's draft tokens arrive as rows of their
    /// own, each reading its request's cache in full (pricing those re-reads at a further head
    /// block's cost instead made the Kimi-K2.6 MTP slowdowns 10–30 points too small).
    pub fn time_s(&self, rows: f64, cached: f64) -> f64 {
        let f = TritonMlaFit::builtin();
        let per_value = bytes_per_value(if self.fp8 { "fp8" } else { "bf16" });
        let bw = f.cold_bytes_per_s * if self.fp8 { f.fp8_rate } else { 1.0 };
        let c = Cold {
            heads: self.heads,
            batch: rows.max(1.0),
            bytes: rows * cached * LATENT_VALUES * per_value,
            time_s: 0.0,
        };
        model_s(bw, f.half_streams, f.reread, &c)
    }

    /// What priced it, for `predict`'s note.
    pub fn note(&self, rows: f64, cached: f64, floor_s: f64) -> String {
        let f = TritonMlaFit::builtin();
        format!(
            "decode attention: vLLM TRITON_MLA by its grid ({:.0} heads a GPU = {:.0} block(s) of \
             16 × {} KV splits, {} KV; fitted on the aiconfigurator table's cold rows, median \
             |error| {:.0}%) at {} rows × {:.0} cached tokens: {:.1} µs a layer",
            self.heads,
            self.blocks(),
            NUM_KV_SPLITS,
            if self.fp8 { "fp8" } else { "bf16" },
            f.median_abs_err * 100.0,
            rows,
            cached,
            (self.time_s(rows, cached) + floor_s) * 1e6
        )
    }
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

    #[test]
    fn eight_heads_pay_for_sixteen_and_blocks_reread() {
        let d = |heads| TritonMlaDecode {
            heads,
            dcp: 1.0,
            fp8: true,
        };
        assert_eq!(d(8.0).time_s(4.0, 65_536.0), d(16.0).time_s(4.0, 65_536.0));
        let (one, two) = (d(16.0).time_s(8.0, 32_768.0), d(32.0).time_s(8.0, 32_768.0));
        assert!(two > one * 1.2 && two < one * 2.0, "{one} {two}");
    }
}
