//! Gated DeltaNet decode (Qwen3.5 / Qwen3-Next linear-attention layers) from the engines' measured
//! recurrent kernel on the RTX PRO 6000 (`data/observations/gdn-decode-rtx-pro-6000.csv`,
//! distilled by `scripts/distill-gdn-decode.py` from aiconfigurator-core 0.12.0's vLLM 0.24.0 and
//! SGLang 0.5.14 `gdn` tables: `fused_recurrent_gated_delta_rule_packed_decode`, one token per
//! request, batch 1–1024, every Qwen3.5 head split at TP 1–16).
//!
//! One decode token per request reads and writes each request's fp32 state once
//! (`v_heads × dk × dv × 4` bytes on a GPU; 1 MiB for Qwen3.5-397B at TP4) and does 8 FLOPs per
//! state value — memory-bound at every batch. Small batches are the kernel's launch and
//! per-request latency (4 µs at one request); from there the table's time grows with the state it
//! streams. The collector repeats one call, so a batch whose state traffic fits the 128 MB L2
//! streams from L2 (397B TP4, 64 requests: 128 MiB in 24 µs, 5.6 TB/s), which a serving step,
//! every layer its own state between two calls, does not see. The row is therefore never taken
//! below the state traffic at the bandwidth the same kernel streams from DRAM
//! ([`GDN_STATE_DRAM_BYTES_PER_S`]).
//!
//! The conv-state update (`causal_conv1d_update`, 1.7–3 µs up to 128 requests in the same tables)
//! stays one of the layer's small kernels ([`super::inventory`]); the FLOPs of a verify pass's
//! extra tokens per request (8 per state value per token, 2 MFLOP a token on a 397B TP4 layer)
//! are left out: microseconds against the state's traffic.

use std::collections::BTreeMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../../../data/observations/gdn-decode-rtx-pro-6000.csv");

/// Bandwidth the recurrent decode kernel streams its state at from DRAM, bytes/s: the median over
/// the 234 rows of both engines' tables whose state traffic (read + write) is at least twice the
/// 128 MB L2 (1,452–2,462 GB/s, median 1,457; `scripts/distill-gdn-decode.py --cold`): 81% of the
/// RTX PRO 6000's 1,792 GB/s datasheet. Bounds: above 0 (a state read at all), at most the
/// datasheet.
pub const GDN_STATE_DRAM_BYTES_PER_S: f64 = 1457e9;

/// What one table is measured for: the engine and the heads one GPU holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GdnKey {
    pub engine: String,
    pub k_heads: u32,
    pub v_heads: u32,
    pub head_k_dim: u32,
    pub head_v_dim: u32,
}

/// The recurrent kernel's rows of one key: the mean time per batch over the models measured with
/// those heads (the kernel does not see the model's hidden size).
#[derive(Debug, Clone, PartialEq)]
pub struct GdnFamily {
    pub key: GdnKey,
    /// (requests, seconds), ascending.
    points: Vec<(f64, f64)>,
}

fn families() -> &'static BTreeMap<GdnKey, GdnFamily> {
    static F: OnceLock<BTreeMap<GdnKey, GdnFamily>> = OnceLock::new();
    F.get_or_init(|| {
        let mut sums: BTreeMap<GdnKey, BTreeMap<u32, (f64, f64)>> = BTreeMap::new();
        for l in TABLE.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 9 || f[1] != "recurrent" {
                continue;
            }
            let u = |i: usize| f[i].trim().parse::<u32>().ok();
            let (Some(k), Some(v), Some(dk), Some(dv), Some(b), Ok(us)) =
                (u(3), u(4), u(5), u(6), u(7), f[8].trim().parse::<f64>())
            else {
                continue;
            };
            let key = GdnKey {
                engine: f[0].to_string(),
                k_heads: k,
                v_heads: v,
                head_k_dim: dk,
                head_v_dim: dv,
            };
            let e = sums.entry(key).or_default().entry(b).or_insert((0.0, 0.0));
            e.0 += us * 1e-6;
            e.1 += 1.0;
        }
        sums.into_iter()
            .map(|(key, by_batch)| {
                let points = by_batch
                    .into_iter()
                    .map(|(b, (s, n))| (f64::from(b), s / n))
                    .collect();
                (key.clone(), GdnFamily { key, points })
            })
            .collect()
    })
}

impl GdnFamily {
    /// The family measured for `key`, if any.
    pub fn find(key: &GdnKey) -> Option<&'static GdnFamily> {
        families().get(key).filter(|f| f.points.len() >= 2)
    }

    /// Bytes of one request's recurrent state on the GPU (fp32).
    pub fn state_bytes(&self) -> f64 {
        f64::from(self.key.v_heads)
            * f64::from(self.key.head_k_dim)
            * f64::from(self.key.head_v_dim)
            * 4.0
    }

    /// The table's time of `requests` (linear between rows; the first row below them; past the
    /// last row, proportional to the requests, as the state traffic is).
    pub fn table_s(&self, requests: f64) -> f64 {
        let p = &self.points;
        let i = p.partition_point(|&(x, _)| x < requests);
        if i == 0 {
            return p[0].1;
        }
        if i == p.len() {
            let (x, y) = p[p.len() - 1];
            return y * requests / x;
        }
        let ((x0, y0), (x1, y1)) = (p[i - 1], p[i]);
        y0 + (y1 - y0) * (requests - x0) / (x1 - x0)
    }

    /// One layer's recurrent decode of `requests` requests, seconds: the table's time, never
    /// below the state read and written once from DRAM (module docs).
    pub fn decode_s(&self, requests: f64) -> f64 {
        if requests <= 0.0 {
            return 0.0;
        }
        let dram_s = 2.0 * requests * self.state_bytes() / GDN_STATE_DRAM_BYTES_PER_S;
        self.table_s(requests).max(dram_s)
    }

    /// `states` more states stored from DRAM, seconds (a verify pass's states after its draft
    /// tokens, which the layer mix's linear decode adds).
    pub fn stores_s(&self, states: f64) -> f64 {
        states * self.state_bytes() / GDN_STATE_DRAM_BYTES_PER_S
    }

    /// Where the price came from, for the cost model's notes.
    pub fn note(&self, requests: f64) -> String {
        let k = &self.key;
        format!(
            "GDN decode: kernel table ({} fused recurrent gated delta rule, {} k / {} v heads x {}x{}) at {} requests: {:.1} µs a linear layer (never below the fp32 state read and written at {:.0} GB/s)",
            k.engine,
            k.k_heads,
            k.v_heads,
            k.head_k_dim,
            k.head_v_dim,
            requests,
            self.decode_s(requests) * 1e6,
            GDN_STATE_DRAM_BYTES_PER_S / 1e9
        )
    }
}

/// The family for `model`'s linear layers under `layout` on `machine` with `opts`: the tables are
/// the RTX PRO 6000's (SM120) and each engine's own (vLLM 0.24, SGLang 0.5.14); other GPUs and
/// head splits the tables lack keep the efficiency curve ([`super::layer_mix`]).
pub fn for_model(
    machine: &crate::machine::Machine,
    opts: &crate::options::ServerOptions,
    model: &models::ModelSpec,
    layout: &models::Layout,
) -> Option<&'static GdnFamily> {
    let la = model.linear_attention?;
    if super::attn_backend::sm_major(machine) != Some(12) {
        return None;
    }
    let tp = if layout.dp_attention {
        1
    } else {
        layout.tp.max(1)
    };
    if la.num_key_heads % tp != 0 || la.num_value_heads % tp != 0 {
        return None;
    }
    GdnFamily::find(&GdnKey {
        engine: opts.engine.name().to_string(),
        k_heads: la.num_key_heads / tp,
        v_heads: la.num_value_heads / tp,
        head_k_dim: la.key_head_dim,
        head_v_dim: la.value_head_dim,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen35_tp4(engine: &str) -> &'static GdnFamily {
        GdnFamily::find(&GdnKey {
            engine: engine.into(),
            k_heads: 4,
            v_heads: 16,
            head_k_dim: 128,
            head_v_dim: 128,
        })
        .unwrap()
    }

    /// Qwen3.5-397B's heads at TP4 (4 k / 16 v heads of 128, as 122B-A10B's at TP4: the rows
    /// of both are averaged): one request costs the rows' 4 µs; 64 requests' 128 MiB of state,
    /// which the collector served from L2 in 24 µs, cost their DRAM traffic (92 µs); 256
    /// requests (537 MB, cold in the table too) the rows' 368 µs.
    #[test]
    fn rows_above_the_dram_floor() {
        let f = qwen35_tp4("vllm");
        assert_eq!(f.state_bytes(), 1024.0 * 1024.0);
        assert!(
            (f.decode_s(1.0) / 3.9638e-6 - 1.0).abs() < 0.05,
            "{}",
            f.decode_s(1.0)
        );
        let dram_64 = 2.0 * 64.0 * 1024.0 * 1024.0 / GDN_STATE_DRAM_BYTES_PER_S;
        assert!(f.table_s(64.0) < 0.3 * dram_64);
        assert!((f.decode_s(64.0) - dram_64).abs() < 1e-12);
        assert!((f.decode_s(256.0) / 367.877e-6 - 1.0).abs() < 0.02);
        assert!(qwen35_tp4("sglang").decode_s(256.0) > 360e-6);
        // the table's last row is 1,024 requests; past it the time scales with the state
        assert!((f.decode_s(2048.0) / f.decode_s(1024.0) - 2.0).abs() < 1e-9);
    }
}
