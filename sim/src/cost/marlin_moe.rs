//! vLLM's Marlin W4A16 MoE (`fused_marlin_moe`, `csrc/moe/marlin_moe_wna16/`) at decode and
//! verify sizes on SM120, priced as the kernel spends its time: a fixed cost a call, each
//! touched expert's INT4 weights streamed from DRAM once, and a cost per routed (token, expert)
//! row.
//!
//! Why not the fused-MoE curve scaled to Marlin ([`super::moe_table`]): the curve is a roofline,
//! `max(bytes / bandwidth, flops / rate)`, so once every touched expert is streamed its time is
//! flat in the rows each expert gets; Marlin's is not. vLLM 0.24's measured Marlin rows at
//! Kimi-K2's TP8 shape rise 14% from 48 to 512 balanced tokens with all 384 experts touched
//! throughout (824 → 938 µs), and the power-law rows at 256–512 tokens sit 8–13% above the
//! curve's price (`sim/tests/marlin_moe_routing.rs`). The source says why the rows add on
//! rather than overlap: Marlin packs each expert's rows into `moe_block_size` blocks (8 rows
//! while `M·topk/E/8 < 0.9`, then 16, …; `fused_marlin_moe.py`) and every block runs the
//! expert's whole K × N stripe — re-dequantising the INT4 tile for it and gathering its rows'
//! activations (`marlin_template.h`: A is read per block through `sorted_token_ids`, the output
//! scattered with the top-k weights) — while the grid is sized by the rows too
//! (`determine_exec_config` in `ops.cu`: `blocks_per_sm` falls with `prob_m · top_k`). The
//! weights are the DRAM stream; the per-row work is L2- and issue-bound and queues behind it.
//! (vllm-project/vllm at 00a130a03146d74300d01c0bcf806f323f887fbb for the Python side,
//! `csrc/moe/marlin_moe_wna16/ops.cu` at 025a1342d77ad3889f323446fc9911e2520a7f14.)
//!
//! The form `t = t0 + touched · bytes_per_expert / (f · peak) + pairs · (c0 + c1 · slice)` is
//! fitted (relative least squares, `scripts/fit-marlin-moe.py`, `t0` held at its bound below)
//! on every cold Marlin row of a
//! decode or verify size the project carries: vLLM 0.24 on the RTX PRO 6000 (aiconfigurator
//! 0.12.0), Kimi-K2's shape at TP 1/2/4/8 under balanced routing
//! (`data/observations/moe-vllm-0.24-rtx-pro-6000.csv`) and at TP8 under the collector's two
//! power-law routings at their own touched counts (`moe-vllm-0.24-rtx-pro-6000-routing.csv`),
//! 8–512 tokens, touched weights ≥ 2× the 128 MB L2 (the collector repeats one call; smaller
//! rows were partly read from L2, which a serving step, every layer its own experts, is not):
//! 81 rows, median |error| 0.5%, worst +8.6% (balanced routing's 32-token rows, at every TP).
//! Against the dev set (`validation/public-records.json`, Kimi-K2.6 on vLLM), the fixed cost
//! fitted free (33.7 µs) put the one-stream cells 3 points further under; held at the bound the
//! 1-token row sets, the other constants move by under 4% and the fit's median improves.

/// Fixed time of one Marlin MoE call (top-k sort and block alignment, the two GEMM launches,
/// the top-k weighted sum), seconds. Bounds: 0 up to the TP8 one-token row's whole 32.1 µs
/// (`moe-vllm-0.24-rtx-pro-6000.csv`), whose 8 experts' 25 MB the collector's repeated call
/// reads from L2 (~6 µs at L2 speed). Taken: 26 µs, that row less its weights.
pub const MARLIN_FIXED_S: f64 = 26.0e-6;
/// Share of the datasheet DRAM bandwidth Marlin streams the touched experts' INT4 weights (with
/// their g32 scales) at. Bounds: (0, 1]. Fitted: 0.856 (1,534 GB/s of the RTX PRO 6000's
/// 1,792), in line with the 86% the across-shape bound measured for NVFP4 ([`super::moe_bound`]).
pub const MARLIN_STREAM_FRACTION: f64 = 0.856;
/// Time each routed (token, expert) row adds regardless of the slice, seconds: its activation
/// row gathered and its output scattered with the top-k weight. Bounds: ≥ 0; at most the TP8
/// balanced rows' whole rise per row from 48 to 512 tokens plus TP1's extra (0.03–0.08 µs).
/// Fitted: 0.032 µs.
pub const MARLIN_PAIR_S: f64 = 0.032e-6;
/// Time each routed row adds per element of one GPU's expert slice (`hidden × moe_inter /
/// moe_tp`), seconds: the MMA and per-block dequantisation work of its block, which grows with
/// the slice. Bounds: ≥ 0, with TP1's rise per row (0.080 µs at 14.7 M elements) as the most.
/// Fitted: 3.4e-15 s (TP8's 1.84 M-element slice: +0.006 µs a row).
pub const MARLIN_PAIR_S_PER_ELEMENT: f64 = 3.4e-15;
/// Rows per touched expert up to which the form holds: the fitted rows reach 12.7 (power-law
/// routing at 512 tokens) and the balanced TP8 rows stay within 2% of it to 1,024 tokens (21
/// rows); prefill chunks beyond keep the tables' price, where Marlin turns compute-bound.
pub const MARLIN_MAX_ROWS_PER_EXPERT: f64 = 16.0;

/// vLLM's Marlin W4A16 MoE on one GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarlinMoe {
    /// Bandwidth the touched experts stream at, bytes/s.
    pub stream_bytes_per_s: f64,
    /// Time a routed row adds, seconds.
    pub pair_s: f64,
}

impl MarlinMoe {
    /// Marlin on a GPU of `peak_bytes_per_s` with `slice_elements` of each expert on it.
    pub fn of(peak_bytes_per_s: f64, slice_elements: f64) -> Self {
        MarlinMoe {
            stream_bytes_per_s: peak_bytes_per_s * MARLIN_STREAM_FRACTION,
            pair_s: MARLIN_PAIR_S + MARLIN_PAIR_S_PER_ELEMENT * slice_elements,
        }
    }

    /// Seconds of one call handed `touched` experts of `bytes_per_expert` and `pairs` routed
    /// rows; `None` past [`MARLIN_MAX_ROWS_PER_EXPERT`] (a prefill chunk) or with nothing routed.
    pub fn time_s(&self, touched: f64, pairs: f64, bytes_per_expert: f64) -> Option<f64> {
        if touched <= 0.0 || pairs / touched > MARLIN_MAX_ROWS_PER_EXPERT {
            return None;
        }
        Some(
            MARLIN_FIXED_S
                + touched * bytes_per_expert / self.stream_bytes_per_s
                + pairs * self.pair_s,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kimi-K2 at TP8 on the RTX PRO 6000 (3.10 MB of INT4 a GPU per expert): the balanced
    /// 512-token row (all 384 experts, 4,096 rows; 938 µs measured) comes back within 3%, a
    /// prefill chunk is left to the tables, and nothing routed costs nothing here.
    #[test]
    fn kimi_tp8_balanced_512_tokens() {
        let slice = 7168.0 * 2048.0 / 8.0;
        let m = MarlinMoe::of(1792e9, slice);
        let s = m.time_s(384.0, 4096.0, 3.0 * slice * 0.5625).unwrap();
        assert!((s / 938.2e-6 - 1.0).abs() < 0.03, "{s}");
        assert!(m.time_s(384.0, 8192.0 * 8.0, 3.1e6).is_none());
        assert!(m.time_s(0.0, 0.0, 3.1e6).is_none());
    }
}
