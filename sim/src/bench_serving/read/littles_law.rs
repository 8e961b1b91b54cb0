//! Little's law on every measured point whose latency is known: requests in flight =
//! arrival rate × time in the system. A closed-loop benchmark that kept `C` requests in flight
//! shows `completed × mean latency ÷ duration ≈ C` (or, from throughput,
//! `output tok/s × mean latency ÷ output tokens per request ≈ C`). When that disagrees with the
//! stated concurrency by more than [`TOLERANCE`], the label is probably wrong (the user's table
//! said 32 where the server ran 64) and the point would calibrate against the wrong load.

use super::MeasuredPoint;

/// Relative disagreement between stated and implied concurrency that earns a warning.
pub const TOLERANCE: f64 = 0.25;

/// Requests in flight that the point's own numbers imply, when a latency is known: from
/// duration and completed requests, else from output throughput and output length; the mean
/// latency is bench_serving's `mean_e2e_latency_ms`, else TTFT + (output − 1) × TPOT.
pub fn implied_in_flight(p: &MeasuredPoint) -> Option<f64> {
    let m = &p.metrics;
    let out = p.workload.random_output_len.max(1) as f64;
    let latency_s = m.mean_e2e_latency_ms.map(|l| l / 1e3).or_else(|| {
        let ttft = m.mean_ttft_ms?;
        let tpot = m.mean_tpot_ms?;
        Some((ttft + (out - 1.0) * tpot) / 1e3)
    })?;
    if !(latency_s.is_finite() && latency_s > 0.0) {
        return None;
    }
    let by_requests = match (m.duration, m.request_throughput) {
        (Some(d), _) if d > 0.0 => Some(p.workload.num_prompts as f64 * latency_s / d),
        (_, Some(r)) if r > 0.0 => Some(r * latency_s),
        _ => None,
    };
    by_requests
        .or_else(|| {
            m.output_throughput
                .filter(|t| *t > 0.0)
                .map(|t| t * latency_s / out)
        })
        .filter(|n| n.is_finite())
}

/// A warning when `stated` (what the point is labelled with, `what` names it) disagrees with
/// Little's law by more than [`TOLERANCE`]; `None` when it agrees or no latency is known.
/// Open-loop points (a finite request rate) only warn when more is in flight than stated.
pub fn check(p: &MeasuredPoint, stated: f64, what: &str) -> Option<String> {
    let implied = implied_in_flight(p)?;
    let ratio = implied / stated.max(f64::MIN_POSITIVE);
    let open_loop = p.workload.request_rate.is_some();
    let disagrees = ratio > 1.0 + TOLERANCE || (!open_loop && ratio < 1.0 - TOLERANCE);
    disagrees.then(|| {
        format!(
            "{}: {what} {stated} but Little's law on its own latency says {implied:.1} requests were in flight ({:+.0}%); check the concurrency label",
            p.source,
            (ratio - 1.0) * 100.0
        )
    })
}

/// [`check`] against each point's `--max-concurrency`.
pub fn warnings(points: &[MeasuredPoint]) -> Vec<String> {
    points
        .iter()
        .filter_map(|p| {
            let c = p.workload.max_concurrency?;
            check(p, c as f64, "concurrency")
        })
        .collect()
}
