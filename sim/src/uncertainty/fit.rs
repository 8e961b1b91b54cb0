//! Fitting the error model from residuals, out of sample.
//!
//! The cells are plain percentiles of the residuals in each factor level, pooled and less their
//! own source's median ([`table`]). What a new source adds ([`BetweenSource`]) is a random-effects
//! estimate over the sources' medians, each source weighing the same ([`between_source`]). What
//! another level the table has not seen adds ([`ErrorModel::unseen_ln`]) is measured leaving one
//! source out: each source (a page or a box) is predicted by the model of the others, and the
//! residuals of its figures whose regime had such a level, about the interval's centre, give a
//! spread whose excess over the intervals they got without it is the unseen width. [`fit`] then
//! reports the whole procedure's leave-one-source-out coverage: each source predicted by a model
//! (between-source and unseen widths included) fitted on the other sources alone.

pub use super::Residual;
use super::verdict::pairs;
use super::{
    BETWEEN_HALF_BOUNDS_LN, BetweenSource, Cell, Coverage, ERROR_MODEL_SCHEMA_VERSION, ErrorModel,
    FACTORS, INTERVAL_LEVEL, MIN_CELL, Provenance, SourceOffset, quantile,
};
use std::collections::{BTreeMap, BTreeSet};

/// Rounded to 4 decimals: the stored table is compared figure by figure.
fn r4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn sorted(v: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = v.collect();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Each source's median residual.
fn source_medians(rs: &[&Residual]) -> BTreeMap<String, f64> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rs {
        by.entry(r.source.clone()).or_default().push(r.ln());
    }
    by.into_iter()
        .map(|(s, v)| (s, quantile(&sorted(v.into_iter()), 0.5)))
        .collect()
}

fn cell(factor: &str, level: &str, rs: &[&Residual], medians: &BTreeMap<String, f64>) -> Cell {
    let v = sorted(rs.iter().map(|r| r.ln()));
    let w = sorted(rs.iter().map(|r| r.ln() - medians[&r.source]));
    let tail = (1.0 - INTERVAL_LEVEL) / 2.0;
    let sources: BTreeSet<&str> = rs.iter().map(|r| r.source.as_str()).collect();
    Cell {
        factor: factor.to_string(),
        level: level.to_string(),
        n: v.len(),
        sources: sources.len(),
        median_ln: r4(quantile(&v, 0.5)),
        lo_ln: r4(quantile(&v, tail)),
        hi_ln: r4(quantile(&v, 1.0 - tail)),
        within_lo_ln: r4(quantile(&w, tail)),
        within_hi_ln: r4(quantile(&w, 1.0 - tail)),
    }
}

/// The 90th percentile of Student's t with `df` degrees of freedom (tabulated to 10, then the
/// Cornish–Fisher expansion about the normal's, within 0.002 of the exact value).
pub fn t90(df: usize) -> f64 {
    const T: [f64; 10] = [
        3.0777, 1.8856, 1.6377, 1.5332, 1.4759, 1.4398, 1.4149, 1.3968, 1.3830, 1.3722,
    ];
    match df {
        0 => f64::INFINITY,
        1..=10 => T[df - 1],
        _ => {
            let (z, n) = (super::Z_80, df as f64);
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// The between-source spread of `rs` (see [`BetweenSource`]).
pub fn between_source(rs: &[&Residual]) -> BetweenSource {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rs {
        by.entry(r.source.clone()).or_default().push(r.ln());
    }
    let offsets: Vec<SourceOffset> = by
        .into_iter()
        .map(|(source, v)| {
            let n = v.len();
            let mean = v.iter().sum::<f64>() / n as f64;
            // one figure says nothing of its own spread: its median is read as exact
            let s2 = if n > 1 {
                v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
            } else {
                0.0
            };
            SourceOffset {
                source,
                n,
                median_ln: r4(quantile(&sorted(v.into_iter()), 0.5)),
                median_var_ln2: (std::f64::consts::FRAC_PI_2 * s2 / n as f64 * 1e6).round() / 1e6,
            }
        })
        .collect();
    let k = offsets.len();
    let mean = offsets.iter().map(|o| o.median_ln).sum::<f64>() / k.max(1) as f64;
    let var_medians = if k > 1 {
        offsets
            .iter()
            .map(|o| (o.median_ln - mean).powi(2))
            .sum::<f64>()
            / (k - 1) as f64
    } else {
        0.0
    };
    let sampling = offsets.iter().map(|o| o.median_var_ln2).sum::<f64>() / k.max(1) as f64;
    let tau2 = (var_medians - sampling).max(0.0);
    let df = k.saturating_sub(2);
    let t = t90(df);
    let [lo, hi] = BETWEEN_HALF_BOUNDS_LN;
    let half = if df == 0 {
        hi
    } else {
        (t * (tau2 + var_medians / k as f64).sqrt()).clamp(lo, hi)
    };
    BetweenSource {
        sources: offsets,
        mean_ln: r4(mean),
        tau_ln: r4(tau2.sqrt()),
        df,
        t_quantile: r4(t.min(1e3)),
        half_ln: r4(half),
        method: format!(
            "random effects over {k} sources weighted alike: tau^2 = var(medians) - mean sampling \
             variance ((pi/2) s^2 / n), half = t(0.9, k - 2) * sqrt(tau^2 + var(medians) / k) \
             (Higgins, Thompson & Spiegelhalter 2009), bounded to [0, ln 2]; pinned by the \
             sources' medians listed"
        ),
    }
}

/// The base cell and every factor level and flag with at least [`MIN_CELL`] residuals.
pub fn table(rs: &[&Residual]) -> (Cell, Vec<Cell>) {
    let medians = source_medians(rs);
    let mut by: BTreeMap<(String, String), Vec<&Residual>> = BTreeMap::new();
    for r in rs {
        for f in FACTORS {
            by.entry((f.to_string(), r.regime.level(f).to_string()))
                .or_default()
                .push(r);
        }
        for fl in &r.regime.flags {
            by.entry(("flag".to_string(), fl.clone()))
                .or_default()
                .push(r);
        }
    }
    let cells = by
        .iter()
        .filter(|(_, v)| v.len() >= MIN_CELL)
        .map(|((f, l), v)| cell(f, l, v, &medians))
        .collect();
    (cell("all", "all", rs, &medians), cells)
}

fn sources(rs: &[&Residual]) -> Vec<String> {
    let s: BTreeSet<&str> = rs.iter().map(|r| r.source.as_str()).collect();
    s.into_iter().map(str::to_string).collect()
}

/// The error model of `rs` without its leave-one-source-out coverage.
fn fit_table(rs: &[&Residual], provenance: Provenance) -> ErrorModel {
    let (base, cells) = table(rs);
    let mut m = ErrorModel {
        schema_version: ERROR_MODEL_SCHEMA_VERSION,
        provenance,
        level: INTERVAL_LEVEL,
        min_cell: MIN_CELL,
        base,
        cells,
        between: between_source(rs),
        unseen_ln: 0.0,
        unseen_n: 0,
        pair_correlation: 0.0,
        pairs: 0,
        loso: Coverage::default(),
    };
    // the unseen width, out of sample: each source against the model of the others, from its
    // figures with a level (other than a new machine or model) the others lack
    let mut off: Vec<f64> = Vec::new();
    let mut got: Vec<f64> = Vec::new();
    for s in sources(rs) {
        let rest: Vec<&Residual> = rs.iter().copied().filter(|r| r.source != s).collect();
        if rest.is_empty() {
            continue;
        }
        let (b, c) = table(&rest);
        let inner = ErrorModel {
            base: b,
            cells: c,
            between: between_source(&rest),
            provenance: Provenance {
                sources: sources(&rest),
                ..empty_provenance()
            },
            ..m.clone()
        };
        for r in rs.iter().filter(|r| r.source == s) {
            let i = inner.ln_interval(&r.regime);
            if i.unseen_levels > 0 {
                off.push(r.ln() - i.centre());
                got.push(i.half().powi(2));
            }
        }
    }
    let off = sorted(off.into_iter());
    let got = sorted(got.into_iter());
    m.unseen_n = off.len();
    m.unseen_ln = if off.len() >= MIN_CELL {
        let tail = (1.0 - INTERVAL_LEVEL) / 2.0;
        let h = (quantile(&off, 1.0 - tail) - quantile(&off, tail)) / 2.0;
        r4((h * h - quantile(&got, 0.5)).max(0.0).sqrt())
    } else {
        // too few to measure: an unseen level is taken to add as much as the base spread
        r4(m.base.half_ln())
    };
    let (rho, n) = pair_correlation(rs);
    m.pair_correlation = r4(rho);
    m.pairs = n;
    m
}

/// 1 − var(rA − rB) / (2 var r) over every pair of one comparison group: how much of two
/// predictions' error on one box and load is shared (0 when there are no pairs).
fn pair_correlation(rs: &[&Residual]) -> (f64, usize) {
    let ps = pairs(rs);
    if ps.len() < 2 {
        return (0.0, ps.len());
    }
    // less the source's offset, which both sides of a pair share whole
    let medians = source_medians(rs);
    let w = |r: &Residual| r.ln() - medians[&r.source];
    let var = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64
    };
    let all: Vec<f64> = ps.iter().flat_map(|(a, b)| [w(a), w(b)]).collect();
    let diff: Vec<f64> = ps.iter().map(|(a, b)| a.ln() - b.ln()).collect();
    let v = var(&all);
    if v <= 0.0 {
        return (0.0, ps.len());
    }
    ((1.0 - var(&diff) / (2.0 * v)).clamp(-1.0, 1.0), ps.len())
}

/// Coverage of `m`'s 80% intervals over `rs`.
pub fn coverage(m: &ErrorModel, rs: &[&Residual]) -> Coverage {
    let mut inside = 0;
    let mut half: Vec<f64> = Vec::with_capacity(rs.len());
    for r in rs {
        let i = m.ln_interval(&r.regime);
        inside += usize::from((i.lo..=i.hi).contains(&r.ln()));
        half.push((i.hi.exp() - i.lo.exp()) / 2.0 * 100.0);
    }
    half.sort_unstable_by(f64::total_cmp);
    Coverage {
        n: rs.len(),
        coverage_pct: if rs.is_empty() {
            0.0
        } else {
            r4(inside as f64 / rs.len() as f64 * 100.0)
        },
        median_half_width_pct: r4(quantile(&half, 0.5)),
    }
}

/// Leave one source out: each source's figures against the model fitted on the others.
pub fn loso(rs: &[&Residual]) -> Coverage {
    let mut inside = 0.0;
    let mut half: Vec<f64> = Vec::new();
    for s in sources(rs) {
        let rest: Vec<&Residual> = rs.iter().copied().filter(|r| r.source != s).collect();
        let held: Vec<&Residual> = rs.iter().copied().filter(|r| r.source == s).collect();
        if rest.is_empty() {
            continue;
        }
        let m = fit_table(
            &rest,
            Provenance {
                sources: sources(&rest),
                ..empty_provenance()
            },
        );
        let c = coverage(&m, &held);
        inside += c.coverage_pct / 100.0 * held.len() as f64;
        for r in &held {
            let i = m.ln_interval(&r.regime);
            half.push((i.hi.exp() - i.lo.exp()) / 2.0 * 100.0);
        }
    }
    half.sort_unstable_by(f64::total_cmp);
    Coverage {
        n: half.len(),
        coverage_pct: if half.is_empty() {
            0.0
        } else {
            r4(inside / half.len() as f64 * 100.0)
        },
        median_half_width_pct: r4(quantile(&half, 0.5)),
    }
}

fn empty_provenance() -> Provenance {
    Provenance {
        records_file: String::new(),
        acceptance: Vec::new(),
        command: String::new(),
        residuals: 0,
        sources: Vec::new(),
    }
}

/// The error model of `rs` (a records file's headline residuals), with its leave-one-source-out
/// coverage. Never called on `validation/further-records.json`: that file is held out.
pub fn fit(rs: &[Residual], records_file: &str, acceptance: &[String]) -> ErrorModel {
    let refs: Vec<&Residual> = rs.iter().collect();
    let mut cmd = format!("sim validate --records {records_file}");
    for a in acceptance {
        cmd.push_str(&format!(" --acceptance {a}"));
    }
    cmd.push_str(" --fit-error-model validation/error-model.json");
    let provenance = Provenance {
        records_file: records_file.to_string(),
        acceptance: acceptance.to_vec(),
        command: cmd,
        residuals: rs.len(),
        sources: sources(&refs),
    };
    let mut m = fit_table(&refs, provenance);
    m.loso = loso(&refs);
    m
}
