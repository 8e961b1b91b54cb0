//! Fitting the error model from residuals, out of sample.
//!
//! The cells are plain percentiles of the residuals in each factor level ([`table`]). What a
//! level the table has not seen adds ([`ErrorModel::unseen_ln`]) is measured leaving one source
//! out: each source (a page or a box) is predicted by the table of the others, and the residuals
//! of its figures whose regime had an unseen level, about the interval's centre, give a spread
//! whose excess over the base spread is the unseen width. [`fit`] then reports the whole
//! procedure's leave-one-source-out coverage: each source predicted by a model (unseen width
//! included) fitted on the other sources alone.

pub use super::Residual;
use super::verdict::pairs;
use super::{
    Cell, Coverage, ERROR_MODEL_SCHEMA_VERSION, ErrorModel, FACTORS, INTERVAL_LEVEL, MIN_CELL,
    Provenance, quantile,
};
use std::collections::{BTreeMap, BTreeSet};

/// Rounded to 4 decimals: the stored table is compared figure by figure.
fn r4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn cell(factor: &str, level: &str, rs: &[&Residual]) -> Cell {
    let mut v: Vec<f64> = rs.iter().map(|r| r.ln()).collect();
    v.sort_unstable_by(f64::total_cmp);
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
    }
}

/// The base cell and every factor level and flag with at least [`MIN_CELL`] residuals.
pub fn table(rs: &[&Residual]) -> (Cell, Vec<Cell>) {
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
        .map(|((f, l), v)| cell(f, l, v))
        .collect();
    (cell("all", "all", rs), cells)
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
        unseen_ln: 0.0,
        unseen_n: 0,
        pair_correlation: 0.0,
        pairs: 0,
        loso: Coverage::default(),
    };
    // the unseen width, out of sample: each source against the table of the others
    let mut off: Vec<f64> = Vec::new();
    for s in sources(rs) {
        let rest: Vec<&Residual> = rs.iter().copied().filter(|r| r.source != s).collect();
        if rest.is_empty() {
            continue;
        }
        let (b, c) = table(&rest);
        let inner = ErrorModel {
            base: b,
            cells: c,
            ..m.clone()
        };
        for r in rs.iter().filter(|r| r.source == s) {
            let i = inner.ln_interval(&r.regime);
            if !i.widened_by.is_empty() {
                off.push(r.ln() - i.centre());
            }
        }
    }
    off.sort_unstable_by(f64::total_cmp);
    let base_h = m.base.half_ln();
    m.unseen_n = off.len();
    m.unseen_ln = if off.len() >= MIN_CELL {
        let tail = (1.0 - INTERVAL_LEVEL) / 2.0;
        let h = (quantile(&off, 1.0 - tail) - quantile(&off, tail)) / 2.0;
        r4((h * h - base_h * base_h).max(0.0).sqrt())
    } else {
        // too few to measure: an unseen level is taken to add as much as the base spread
        r4(base_h)
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
    let var = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64
    };
    let all: Vec<f64> = ps.iter().flat_map(|(a, b)| [a.ln(), b.ln()]).collect();
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
        let m = fit_table(&rest, empty_provenance());
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
