//! What every verdict of `sim advise` shares (the EP, MTP and scale questions): the
//! concurrencies a verdict is checked over, the confidence draws (one [`perturbed_knobs`] so that
//! every verdict's confidence means the same thing), the steady decode throughput a verdict
//! compares, and how a question builds its cost models ([`Build`]).

use crate::cost::{IterationBatch, IterationModel, Knobs};
use crate::options::ServerOptions;
use models::Layout;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Concurrent requests `sim advise` answers for when neither `--max-concurrency` nor
/// `--request-rate` is given (the questions read it where the workload has no concurrency).
pub const DEFAULT_CONCURRENCY: u32 = 64;
/// Concurrencies the EP verdict is checked over (plus the workload's own).
pub const VERDICT_CONCURRENCIES: [u32; 8] = [1, 4, 16, 32, 64, 128, 256, 512];
/// ± relative spread of compute and memory efficiency in confidence draws.
pub const EFFICIENCY_SPREAD: f64 = 0.2;
/// Draw `seed` of the confidence draws: `base` with compute and memory efficiency each scaled
/// uniformly within ±[`EFFICIENCY_SPREAD`] and communication time within ±`comm_spread`. The
/// generator is returned for draws that perturb more (an acceptance length). One function so
/// every verdict's confidence means the same thing.
pub fn perturbed_knobs(base: Knobs, seed: u64, comm_spread: f64) -> (Knobs, ChaCha8Rng) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut k = base;
    let mut u = |s: f64| 1.0 + s * (2.0 * rng.random::<f64>() - 1.0);
    k.compute_scale *= u(EFFICIENCY_SPREAD);
    k.memory_scale *= u(EFFICIENCY_SPREAD);
    k.comm_time_scale *= u(comm_spread);
    (k, rng)
}
/// ± relative spread of communication time when the profile has no measured spread (presets).
pub const PRESET_COMM_SPREAD: f64 = 0.3;

/// Relative spread of communication time for confidence draws: the median of the profile's
/// measured (p90 − p10) / 2·median over all collective points, or [`PRESET_COMM_SPREAD`] when the
/// profile has no repeated samples (presets, imports).
pub fn comm_spread(p: &models::MachineProfile) -> f64 {
    let v: Vec<f64> = p
        .collectives
        .iter()
        .flat_map(|c| &c.points)
        .filter(|pt| pt.time_us.samples > 1 && pt.time_us.median > 0.0)
        .map(|pt| (pt.time_us.p90 - pt.time_us.p10) / (2.0 * pt.time_us.median))
        .collect();
    models::stats::median_high(&v).map_or(PRESET_COMM_SPREAD, |m| m.max(0.02))
}

/// Requests of `context` tokens the server's KV pools hold at once (each attention-DP replica
/// has its own pool); 0 where one request does not fit.
pub fn requests_held(m: &dyn IterationModel, context: u32) -> u64 {
    let layout = m.layout();
    let replicas = if layout.dp_attention {
        layout.tp.max(1)
    } else {
        1
    };
    m.memory().kv_tokens * replicas as u64 / context.max(1) as u64
}

/// Steady decode tokens/s of `concurrency` requests at `context` tokens: running requests capped
/// by KV and `--max-running-requests`, split over the micro-batches; a cycle is one trip through
/// the pipeline or every micro-batch through the busiest stage, whichever is longer.
pub fn steady_tok_s(
    m: &dyn IterationModel,
    opts: &ServerOptions,
    concurrency: u32,
    context: u32,
    batch: &mut IterationBatch,
) -> f64 {
    let layout = m.layout();
    let mut running = (concurrency as u64).min(requests_held(m, context));
    if let Some(r) = crate::engine::running_cap_in_force(opts) {
        running = running.min(r as u64);
    }
    if running == 0 {
        return 0.0;
    }
    let pp = layout.pp.max(1);
    let depth = if pp > 1 { opts.pp_async_batch_depth } else { 0 };
    let micro = ((pp + depth) as u64).min(running);
    let per = running.div_ceil(micro) as usize;
    batch.prefill.clear();
    batch.decode_context_tokens.clear();
    batch.decode_context_tokens.resize(per, context);
    let c = m.iteration(batch);
    let busiest = c.stage_s.iter().copied().fold(0.0, f64::max).max(c.cpu_s);
    let cycle = c.latency_s.max(micro as f64 * busiest);
    if cycle > 0.0 {
        running as f64 / cycle
    } else {
        0.0
    }
}

/// Builds a cost model for a layout with given knobs.
pub type Build<'a> = dyn Fn(Layout, Knobs) -> Result<Box<dyn IterationModel>, String> + Sync + 'a;

/// The verdict the intervals' odds state between a question's two sides: `for_named` where the
/// side named `named` is the one found faster at or above the verdict bar, `for_other` where the
/// other is, `depends` below the bar; `None` without odds. The questions' own verdicts come from
/// knob draws, which say how robust a prediction is, not how often it is right.
pub fn verdict_from_odds<V: Copy>(
    odds: Option<&crate::uncertainty::verdict::Odds>,
    named: &str,
    [for_named, for_other, depends]: [V; 3],
) -> Option<V> {
    odds.map(|o| {
        if !o.sure {
            depends
        } else if o.faster == named {
            for_named
        } else {
            for_other
        }
    })
}

/// `sentence` with its leading verdict words `from` replaced by `to` (unchanged where it does not
/// start with them).
pub fn reheaded(sentence: &str, from: &str, to: &str) -> String {
    match sentence.strip_prefix(from) {
        Some(rest) => format!("{to}{rest}"),
        None => sentence.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uncertainty::verdict::Odds;

    fn odds(faster: &str, sure: bool) -> Odds {
        Odds {
            faster: faster.into(),
            slower: "b".into(),
            probability: if sure { 0.95 } else { 0.7 },
            sure,
            ranges: [[1.0, 2.0]; 2],
            set_by: [String::new(), String::new()],
            correlation: 0.5,
            decide_by: None,
            novel: Vec::new(),
            sentence: String::new(),
        }
    }

    /// Sure and the named side faster: its verdict; sure and the other: the other's; below the
    /// bar: depends; no odds: none.
    #[test]
    fn the_verdict_is_the_odds() {
        let v = |o: Option<&Odds>| verdict_from_odds(o, "a", ['A', 'B', 'D']);
        assert_eq!(v(Some(&odds("a", true))), Some('A'));
        assert_eq!(v(Some(&odds("b", true))), Some('B'));
        assert_eq!(v(Some(&odds("a", false))), Some('D'));
        assert_eq!(v(None), None);
        assert_eq!(
            reheaded("Yes: it pays", "Yes", "Depends"),
            "Depends: it pays"
        );
        assert_eq!(reheaded("No: it loses", "Yes", "Depends"), "No: it loses");
    }
}
