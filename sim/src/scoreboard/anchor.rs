//! Speculative records anchored on the same server's runs with speculation off.
//!
//! A verify pass is the target model's forward over `B × draft tokens` tokens, the same kernels
//! a plain decode step of that many tokens runs. Where the records file holds the same page's
//! box, engine and flags measured with speculation off, the step model's error on that forward
//! is measured rather than assumed: `k = predicted ÷ measured tok/s` of an off run is its
//! measured ÷ modelled step time. Multiplying the verify pass by `k` leaves only the speculative
//! part of the step (draft passes, draft extend, acceptance) to the model, so the implied
//! acceptance length checks the speculation physics apart from the kernel model (the b12x MoE
//! kernel's regimes, which the off runs show as plainly as the on runs, stay out of it).
//!
//! The verify pass of `B` requests at context `x` carries `t = B × draft` tokens through the
//! weights but reads `B` requests' caches. The weights' error is taken from the off runs at the
//! reference context `x₀` (the smallest with off runs, context 0 on the matrices of the dev
//! set) at `t` streams, the cache's from the off runs at `x` and `B` streams relative to `x₀`:
//!
//! `k(t, B, x) = k(t, x₀) · k(B, x) / k(B, x₀)`,
//!
//! where the cache rows `B` become `B × draft` for an engine whose verify reads the cache once
//! per draft token (vLLM's Triton MLA): then `k` is the off run's at `B × draft` streams and
//! context `x`, the very kernel shapes. Between measured concurrencies `k` is interpolated
//! linearly in `ln concurrency`; outside them there is no anchor (said per record). Nothing is
//! fitted: every factor is one to three measurements of the same file.

use super::{Resolved, measured_tok_s, model_of};
use crate::records::{Expressed, MetricFamily, Record, RecordSet, express};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// The step-model error of one off run: modelled ÷ measured tok/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffRun {
    pub concurrency: u32,
    pub context_tokens: u32,
    /// Predicted ÷ measured tok/s (= measured ÷ modelled step time).
    pub step_ratio: f64,
}

/// The off runs of one server configuration, by context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OffRuns {
    by_context: BTreeMap<u32, Vec<(u32, f64)>>,
}

/// The verify-pass scale for one record, and the off runs that gave it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Anchor {
    /// Measured ÷ modelled time of the target forward the verify pass is.
    pub verify_scale: f64,
    /// Which off runs pinned it, e.g. `off c16 at 0 × off c1 at 65536 / off c1 at 0`.
    pub pinned_by: String,
}

impl OffRuns {
    pub fn push(&mut self, run: OffRun) {
        if run.step_ratio.is_finite() && run.step_ratio > 0.0 {
            let row = self.by_context.entry(run.context_tokens).or_default();
            row.push((run.concurrency.max(1), run.step_ratio));
            row.sort_by_key(|p| p.0);
            row.dedup_by_key(|p| p.0);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_context.is_empty()
    }

    /// The scale of the verify pass of `requests` requests at `context_tokens`, each carrying
    /// `tokens_per_request` tokens through the weights and reading its cache
    /// `cache_reads_per_request` times; `None` without off runs bracketing it (outside the
    /// measured concurrencies an anchor would be a guess).
    pub fn anchor(
        &self,
        requests: u32,
        tokens_per_request: f64,
        cache_reads_per_request: f64,
        context_tokens: u32,
    ) -> Option<Anchor> {
        let (&x0, row0) = self.by_context.iter().next()?;
        let b = requests.max(1) as f64;
        let t = b * tokens_per_request.max(1.0);
        let rows = b * cache_reads_per_request.max(1.0);
        let (k_t, by_t) = interpolate(row0, t)?;
        let at = |x: u32, s: &str| format!("{s} at {x}");
        if context_tokens == x0 {
            return Some(Anchor {
                verify_scale: k_t,
                pinned_by: at(x0, &by_t),
            });
        }
        let row = self.by_context.get(&context_tokens)?;
        let (k_rx, by_rx) = interpolate(row, rows)?;
        let (k_r0, by_r0) = interpolate(row0, rows)?;
        Some(Anchor {
            verify_scale: k_t * k_rx / k_r0,
            pinned_by: format!(
                "{} × {} / {}",
                at(x0, &by_t),
                at(context_tokens, &by_rx),
                at(x0, &by_r0)
            ),
        })
    }
}

/// `k` at concurrency `c` on a row sorted by concurrency, linear in `ln c` between measured
/// points, with the points used; `None` outside them.
fn interpolate(row: &[(u32, f64)], c: f64) -> Option<(f64, String)> {
    let i = row.partition_point(|p| (p.0 as f64) < c);
    let hi = *row.get(i)?;
    if hi.0 as f64 == c {
        return Some((hi.1, format!("off c{}", hi.0)));
    }
    let lo = *row.get(i.checked_sub(1)?)?;
    let (l0, l1) = ((lo.0 as f64).ln(), (hi.0 as f64).ln());
    let w = (c.ln() - l0) / (l1 - l0);
    Some((
        lo.1 + w * (hi.1 - lo.1),
        format!("off c{}–c{} at c{c:.0}", lo.0, hi.0),
    ))
}

/// The server a record ran, as far as the model and the page tell: the same key for a page's
/// runs with speculation on and off.
pub(super) fn server_key(r: &Record, e: &Expressed) -> String {
    let page = r.source.as_deref().unwrap_or("");
    let page = page.split(" (").next().unwrap_or(page);
    // a switch that acts only under speculation (SGLang's SGLANG_ENABLE_SPEC_V2) is the
    // speculative run's, not the server's: its off runs are the same server's
    let knobs = crate::engine::LaunchKnobs {
        speculative_overlap: false,
        ..e.knobs.clone()
    };
    format!(
        "{page}|{}|{}|{}|{}|{:?}",
        e.model,
        e.machine,
        e.engine.name(),
        e.layout.short_name(),
        knobs
    )
}

/// The off runs of `set` (decode records that say speculation was off), by [`server_key`]; each
/// one's modelled ÷ measured tok/s.
pub(super) fn off_runs(set: &RecordSet) -> BTreeMap<String, OffRuns> {
    let plain: Vec<(Expressed, String)> = set
        .records
        .iter()
        .filter(|r| r.parallel.mtp == Some(false))
        .filter_map(|r| {
            let e = express(r).ok()?;
            (e.family == MetricFamily::LlmDecodeBench).then(|| {
                let k = server_key(r, &e);
                (e, k)
            })
        })
        .collect();
    let exprs: Vec<Expressed> = plain.iter().map(|(e, _)| e.clone()).collect();
    let resolved = Resolved::of(&exprs);
    let runs: Vec<(String, OffRun)> = plain
        .par_iter()
        .filter_map(|(e, key)| {
            let m = measured_tok_s(e)?;
            let sd = model_of(e, &resolved, None)?.steady_decode(e.concurrency, e.context_tokens);
            // a run the model cannot fit whole says nothing about the step
            (sd.running == e.concurrency && m > 0.0).then(|| {
                let run = OffRun {
                    concurrency: e.concurrency,
                    context_tokens: e.context_tokens,
                    step_ratio: sd.tok_per_s / m,
                };
                (key.clone(), run)
            })
        })
        .collect();
    let mut out: BTreeMap<String, OffRuns> = BTreeMap::new();
    for (k, run) in runs {
        out.entry(k).or_default().push(run);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(points: &[(u32, u32, f64)]) -> OffRuns {
        let mut o = OffRuns::default();
        for &(c, x, k) in points {
            o.push(OffRun {
                concurrency: c,
                context_tokens: x,
                step_ratio: k,
            });
        }
        o
    }

    #[test]
    fn the_weights_error_comes_from_the_reference_row_at_the_pass_tokens() {
        let o = runs(&[(1, 0, 1.0), (4, 0, 0.8), (16, 0, 0.6)]);
        // 1 request × 4 tokens = the off run at 4 streams
        let a = o.anchor(1, 4.0, 1.0, 0).unwrap();
        assert!((a.verify_scale - 0.8).abs() < 1e-12, "{a:?}");
        assert_eq!(a.pinned_by, "off c4 at 0");
        // 2 × 4 = 8: halfway in ln c between 4 and 16
        let a = o.anchor(2, 4.0, 1.0, 0).unwrap();
        assert!((a.verify_scale - 0.7).abs() < 1e-12, "{a:?}");
        assert_eq!(a.pinned_by, "off c4–c16 at c8 at 0");
        // beyond the last run: no anchor
        assert!(o.anchor(8, 4.0, 1.0, 0).is_none());
    }

    #[test]
    fn the_cache_error_comes_from_the_context_column_at_the_cache_rows() {
        // at 64K one stream runs 20% slower than modelled, relative to context 0
        let o = runs(&[(1, 0, 1.0), (4, 0, 0.8), (1, 65536, 1.2), (4, 65536, 1.5)]);
        let a = o.anchor(1, 4.0, 1.0, 65536).unwrap();
        assert!((a.verify_scale - 0.8 * 1.2).abs() < 1e-12, "{a:?}");
        assert_eq!(a.pinned_by, "off c4 at 0 × off c1 at 65536 / off c1 at 0");
        // a verify that reads the cache once per draft token is the off run at 4 streams
        let a = o.anchor(1, 4.0, 4.0, 65536).unwrap();
        assert!((a.verify_scale - 1.5).abs() < 1e-12, "{a:?}");
        // a context without off runs gives no anchor
        assert!(o.anchor(1, 4.0, 1.0, 32768).is_none());
    }

    proptest::proptest! {
        /// Between two measured concurrencies the scale lies between their ratios; at a
        /// measured one it is that one's; outside the measured ones there is none.
        #[test]
        fn interpolation_stays_between_its_neighbours(
            ks in proptest::collection::vec(0.2f64..3.0, 2..8),
            at in 0.5f64..300.0,
        ) {
            let row: Vec<(u32, f64)> = ks.iter().enumerate().map(|(i, k)| (1u32 << i, *k)).collect();
            let last = row[row.len() - 1].0 as f64;
            match interpolate(&row, at) {
                None => proptest::prop_assert!(at < 1.0 || at > last),
                Some((k, _)) => {
                    let i = row.partition_point(|p| (p.0 as f64) < at);
                    let lo = row[i.saturating_sub(1)].1.min(row[i].1);
                    let hi = row[i.saturating_sub(1)].1.max(row[i].1);
                    proptest::prop_assert!(k >= lo - 1e-12 && k <= hi + 1e-12, "{k} not in [{lo}, {hi}]");
                }
            }
        }
    }

    #[test]
    fn no_off_runs_no_anchor_and_bad_ratios_are_dropped() {
        let mut o = OffRuns::default();
        assert!(o.anchor(1, 4.0, 1.0, 0).is_none());
        o.push(OffRun {
            concurrency: 1,
            context_tokens: 0,
            step_ratio: f64::NAN,
        });
        assert!(o.is_empty());
    }
}
