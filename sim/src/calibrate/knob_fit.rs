//! The fit: bounded knobs, the kernel tables as priors, what the samples could identify, and the
//! leave-one-out error.
//!
//! Objective: Σ over observations of (ln(predicted / measured) / σ_data)² + Σ over knobs of
//! (ln(knob) / σ_prior)², minimised by a bounded Nelder–Mead over ln(knob). σ_data = 5% (a
//! server's step time between log lines, a benchmark's throughput between runs); σ_prior per knob
//! in [`KnobParam::prior_sigma`].
//!
//! Identification: at the fitted knobs, the sensitivity s = ∂ln(predicted)/∂ln(knob) of every
//! observation (central difference). A knob is *pinned* when the data's information about it,
//! Σ (s/σ_data)², exceeds four times the prior's, 1/σ_prior²; otherwise it stayed near its prior
//! (e.g. samples that are all CPU-bound carry no information about memory bandwidth).

use super::knobs::{KnobBounds, KnobParam};
use crate::cost::Knobs;
use serde::{Deserialize, Serialize};

/// One measured quantity's error per unit of log error: 5%.
pub const SIGMA_DATA: f64 = 0.05;
/// A knob is pinned when the data's information exceeds the prior's by this factor.
pub const PINNED_INFO_RATIO: f64 = 4.0;
/// Samples whose sensitivity to a knob reaches this are listed as what pinned it.
pub const PINNING_SENSITIVITY: f64 = 0.2;

/// What the fit concluded about one knob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnobReport {
    pub knob: KnobParam,
    /// What it means physically.
    pub meaning: String,
    pub value: f64,
    /// Physical bounds it was kept in.
    pub bounds: (f64, f64),
    /// One standard deviation of ln(knob) before the data.
    pub prior_sigma: f64,
    /// Whether it was free in this fit (`--fit`).
    pub fitted: bool,
    /// Whether the data pinned it (see the module docs); false = it stayed near its prior.
    pub pinned: bool,
    /// Data information over prior information (≥ [`PINNED_INFO_RATIO`] = pinned).
    pub information_ratio: f64,
    /// At a bound after the fit.
    pub at_bound: bool,
    /// Observations whose prediction moves with it (|sensitivity| ≥ 0.2), by label.
    pub pinned_by: Vec<String>,
}

/// The fit's result.
#[derive(Debug, Clone, PartialEq)]
pub struct FitOutcome {
    pub knobs: Knobs,
    pub reports: Vec<KnobReport>,
    /// ln(predicted / measured) of each observation before and after.
    pub log_errors_before: Vec<f64>,
    pub log_errors_after: Vec<f64>,
    /// Leave-one-out ln error of each observation (refitted without it), when asked for.
    pub loo_log_errors: Option<Vec<f64>>,
    pub evaluations: u32,
}

/// ln(predicted / measured) of every observation at some knobs (None when the knobs make the
/// model impossible).
pub type Predict<'a> = dyn Fn(&Knobs) -> Option<Vec<f64>> + Sync + 'a;

/// Root mean square of a list.
pub fn rms(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt()
    }
}

/// Fits `params` of the knobs, starting at `start`. `predict(knobs)` returns the ln(predicted /
/// measured) of every observation; `labels` name them for the report. With `loo`, each
/// observation is also predicted from a fit without it.
pub fn fit(
    predict: &Predict,
    labels: &[String],
    params: &[KnobParam],
    start: Knobs,
    bounds: KnobBounds,
    loo: bool,
) -> Option<FitOutcome> {
    let n = labels.len();
    let all = vec![true; n];
    let before = predict(&start)?;
    let (knobs, evaluations) = minimise(predict, &all, params, start, bounds, 400);
    let after = predict(&knobs)?;
    let reports = identify(predict, labels, params, &knobs, bounds);
    let loo_log_errors = loo.then(|| {
        (0..n)
            .map(|i| {
                let mut mask = all.clone();
                mask[i] = false;
                let (k, _) = minimise(predict, &mask, params, knobs, bounds, 150);
                predict(&k).map_or(f64::NAN, |e| e[i])
            })
            .collect()
    });
    Some(FitOutcome {
        knobs,
        reports,
        log_errors_before: before,
        log_errors_after: after,
        loo_log_errors,
        evaluations,
    })
}

fn objective(errors: &[f64], mask: &[bool], x: &[f64], params: &[KnobParam]) -> f64 {
    let data: f64 = errors
        .iter()
        .zip(mask)
        .filter(|(_, m)| **m)
        .map(|(e, _)| (e / SIGMA_DATA).powi(2))
        .sum();
    let prior: f64 = x
        .iter()
        .zip(params)
        .map(|(v, p)| (v / p.prior_sigma()).powi(2))
        .sum();
    data + prior
}

fn knobs_at(start: Knobs, params: &[KnobParam], x: &[f64]) -> Knobs {
    let mut k = start;
    for (p, v) in params.iter().zip(x) {
        p.set(&mut k, v.exp());
    }
    k
}

/// Bounded Nelder–Mead over ln(knob) for the masked observations.
fn minimise(
    predict: &Predict,
    mask: &[bool],
    params: &[KnobParam],
    start: Knobs,
    bounds: KnobBounds,
    max_evals: u32,
) -> (Knobs, u32) {
    let lb: Vec<(f64, f64)> = params
        .iter()
        .map(|p| {
            let (lo, hi) = bounds.of_knob(*p);
            (lo.ln(), hi.ln())
        })
        .collect();
    let x0: Vec<f64> = params.iter().map(|p| p.get(&start).ln()).collect();
    let f = |x: &[f64]| match predict(&knobs_at(start, params, x)) {
        Some(e) => objective(&e, mask, x, params),
        None => f64::INFINITY,
    };
    let (x, evals) = nelder_mead(&f, &x0, &lb, max_evals);
    (knobs_at(start, params, &x), evals)
}

/// Sensitivities at the fit and what they say about each knob.
fn identify(
    predict: &Predict,
    labels: &[String],
    params: &[KnobParam],
    knobs: &Knobs,
    bounds: KnobBounds,
) -> Vec<KnobReport> {
    KnobParam::ALL
        .iter()
        .map(|&p| {
            let v = p.get(knobs);
            let h = 0.05_f64;
            let at = |f: f64| {
                let mut k = *knobs;
                p.set(&mut k, v * f);
                predict(&k)
            };
            let s: Vec<f64> = match (at(h.exp()), at((-h).exp())) {
                (Some(up), Some(down)) => up
                    .iter()
                    .zip(&down)
                    .map(|(a, b)| (a - b) / (2.0 * h))
                    .collect(),
                _ => vec![0.0; labels.len()],
            };
            let info: f64 = s.iter().map(|x| (x / SIGMA_DATA).powi(2)).sum();
            let ratio = info * p.prior_sigma().powi(2);
            let (lo, hi) = bounds.of_knob(p);
            let fitted = params.contains(&p);
            KnobReport {
                knob: p,
                meaning: p.meaning().to_string(),
                value: v,
                bounds: (lo, hi),
                prior_sigma: p.prior_sigma(),
                fitted,
                pinned: fitted && ratio >= PINNED_INFO_RATIO,
                information_ratio: ratio,
                at_bound: fitted && (v <= lo * 1.0001 || v >= hi * 0.9999),
                pinned_by: labels
                    .iter()
                    .zip(&s)
                    .filter(|(_, s)| s.abs() >= PINNING_SENSITIVITY)
                    .map(|(l, _)| l.clone())
                    .collect(),
            }
        })
        .collect()
}

/// Bounded Nelder–Mead (standard coefficients 1, 2, ½, ½; points clamped into the box).
/// Returns the best point and the number of evaluations.
pub fn nelder_mead(
    f: &dyn Fn(&[f64]) -> f64,
    x0: &[f64],
    bounds: &[(f64, f64)],
    max_evals: u32,
) -> (Vec<f64>, u32) {
    let n = x0.len();
    if n == 0 {
        return (Vec::new(), 0);
    }
    let clamp = |mut x: Vec<f64>| {
        for (v, (lo, hi)) in x.iter_mut().zip(bounds) {
            *v = v.clamp(*lo, *hi);
        }
        x
    };
    let evals = std::cell::Cell::new(0u32);
    let call = |x: &[f64]| {
        evals.set(evals.get() + 1);
        f(x)
    };
    let mut simplex: Vec<(Vec<f64>, f64)> = Vec::with_capacity(n + 1);
    let p0 = clamp(x0.to_vec());
    simplex.push((p0.clone(), call(&p0)));
    for i in 0..n {
        let mut p = p0.clone();
        let step = 0.25 * (bounds[i].1 - bounds[i].0).min(4.0);
        p[i] = if p[i] + step <= bounds[i].1 {
            p[i] + step
        } else {
            p[i] - step
        };
        let p = clamp(p);
        let v = call(&p);
        simplex.push((p, v));
    }
    while evals.get() < max_evals {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, worst) = (simplex[0].1, simplex[n].1);
        if (worst - best).abs() <= 1e-9 * (1.0 + best.abs()) {
            break;
        }
        let centroid: Vec<f64> = (0..n)
            .map(|j| simplex[..n].iter().map(|(p, _)| p[j]).sum::<f64>() / n as f64)
            .collect();
        let towards = |t: f64| -> Vec<f64> {
            clamp(
                (0..n)
                    .map(|j| centroid[j] + t * (simplex[n].0[j] - centroid[j]))
                    .collect(),
            )
        };
        let xr = towards(-1.0);
        let fr = call(&xr);
        if fr < simplex[0].1 {
            let xe = towards(-2.0);
            let fe = call(&xe);
            simplex[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (xr, fr);
        } else {
            let xc = towards(if fr < worst { -0.5 } else { 0.5 });
            let fc = call(&xc);
            if fc < worst.min(fr) {
                simplex[n] = (xc, fc);
            } else {
                let b = simplex[0].0.clone();
                for (p, v) in simplex.iter_mut().skip(1) {
                    *p = clamp(p.iter().zip(&b).map(|(x, y)| y + 0.5 * (x - y)).collect());
                    *v = call(p);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    (simplex.swap_remove(0).0, evals.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nelder_mead_finds_a_bounded_minimum() {
        let f = |x: &[f64]| (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2);
        let (x, _) = nelder_mead(&f, &[0.0, 0.0], &[(-5.0, 5.0), (-5.0, 5.0)], 500);
        assert!(
            (x[0] - 1.0).abs() < 1e-3 && (x[1] + 2.0).abs() < 1e-3,
            "{x:?}"
        );
        // The unconstrained minimum at x = -2 is outside [0, 5]: the fit stops at the bound.
        let (x, _) = nelder_mead(&f, &[3.0, 0.0], &[(-5.0, 5.0), (0.0, 5.0)], 500);
        assert!(x[1].abs() < 1e-3, "{x:?}");
    }

    #[test]
    fn a_knob_no_observation_depends_on_is_not_pinned() {
        // prediction = cpu knob only: memory has zero sensitivity, cpu is pinned
        let predict = |k: &Knobs| -> Option<Vec<f64>> {
            Some(vec![
                (k.cpu_scale * 1.0 / 3.0).ln(),
                (k.cpu_scale / 3.1).ln(),
            ])
        };
        let bounds = KnobBounds {
            compute: (0.25, 2.0),
            memory: (0.25, 2.0),
            comm: (0.5, 3.0),
            cpu: (0.2, 15.0),
        };
        let labels = vec!["a".to_string(), "b".to_string()];
        let out = fit(
            &predict,
            &labels,
            &KnobParam::ALL,
            Knobs::default(),
            bounds,
            true,
        )
        .unwrap();
        assert!((out.knobs.cpu_scale - 3.05).abs() < 0.1, "{:?}", out.knobs);
        let rep = |p| out.reports.iter().find(|r| r.knob == p).unwrap();
        assert!(rep(KnobParam::Cpu).pinned);
        assert_eq!(rep(KnobParam::Cpu).pinned_by, labels);
        assert!(!rep(KnobParam::Memory).pinned);
        assert!((out.knobs.memory_scale - 1.0).abs() < 0.05);
        let loo = out.loo_log_errors.unwrap();
        assert!(loo.iter().all(|e| e.abs() < 0.05), "{loo:?}");
    }
}
