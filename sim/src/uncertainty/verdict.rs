//! Verdicts between two predictions, only as sure as their intervals allow.
//!
//! Each prediction's error is read from the error model as a normal in ln-space: the centre and
//! sigma of its regime inside one source ([`super::LnInterval::own_centre`], `own_sigma`). Two
//! predictions of one source share much of their error (the same kernels, the same
//! collectives), so the difference of their log errors has variance σa² + σb² − 2ρσaσb with ρ
//! the error model's correlation for that class of pair ([`ErrorModel::correlation`]: same
//! source and model, or different), measured on the dev set's equal-load pairs from the
//! median of their log-ratio differences (robust to their heavy tails); the offset a new source adds
//! ([`super::BetweenSource`]) is one draw for both sides of one box and cancels (one side on new
//! ground only: it adds). The chance that A is in fact faster is Φ(d / σd), d the predicted log
//! speed ratio with each centre's bias applied (and, where one side's ground has a centre of its
//! own, [`super::LnInterval::ground_offset`], that difference: it is not one draw for both). Below
//! [`VERDICT_BAR`] the verdict is "Depends: measure both".

use super::{ErrorModel, Regime, Residual, Z_80, normal_cdf};
use serde::Serialize;
use std::collections::BTreeMap;

/// Stated confidence at or above which a verdict is given; below it, "Depends: measure both".
pub const VERDICT_BAR: f64 = 0.9;

/// One side of a verdict: a predicted speed (tok/s, or 1 / latency) and its regime.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub speed: f64,
    pub regime: &'a Regime,
}

/// The probability that `a` is measured faster than `b`.
pub fn probability_faster(m: &ErrorModel, a: Side<'_>, b: Side<'_>) -> f64 {
    probability_with(m, a, b, m.correlation(a.regime, b.regime))
}

/// [`probability_faster`] with the correlation given.
pub fn probability_with(m: &ErrorModel, a: Side<'_>, b: Side<'_>, rho: f64) -> f64 {
    if !(a.speed > 0.0 && b.speed > 0.0) {
        return if a.speed > b.speed { 1.0 } else { 0.0 };
    }
    let (d, sd) = difference(m, a, b, rho);
    // a prior acceptance on one side only is that side's own error: the draft's acceptance on
    // this source is not the other side's, and the dev set's spreads (acceptance measured) never
    // saw it ([`super::FirstContact::acceptance_gain_sigma_ln`])
    let acc = if prior_acceptance(a.regime) != prior_acceptance(b.regime) {
        m.acceptance_gain_sigma_ln()
    } else {
        0.0
    };
    normal_cdf(d / (sd * sd + acc * acc).max(1e-12).sqrt())
}

/// Whether a prediction's speculative acceptance is only the published prior.
pub(super) fn prior_acceptance(r: &Regime) -> bool {
    r.speculation == crate::records::speculation::AcceptOrigin::Assumed.name()
}

/// The predicted log speed ratio of `a` over `b` with each centre's bias applied, and the
/// spread of its error from the two sides' intervals (without a prior acceptance's own).
pub(super) fn difference(m: &ErrorModel, a: Side<'_>, b: Side<'_>, rho: f64) -> (f64, f64) {
    let (ia, ib) = (m.ln_interval(a.regime), m.ln_interval(b.regime));
    // a new source's offset is one draw for the whole box, scaled by each side's spread: where
    // one side's ground spreads wider (its acceptance only the prior, its kernels extrapolated)
    // the difference of the scales does not cancel. One draw, not the wider side's own extra
    // draw: on the first-contact file of MTP on/off pairs of one box (spec-records.json) the
    // verdicts stated at >= 90% that way are right 20 of 20 (15 of 35 "Depends"), while an
    // independent extra (sqrt(sa^2 - sb^2)) left 26 of the 35 at "Depends" with every stated
    // bin right: under-confident.
    // On new ground an interval is `quantile_z` sigmas wide, fitted so that 80% of a new
    // source's figures fall inside: the error's spread as a normal is then `quantile_z / Z_80`
    // sigmas (on the dev set's own ground the cells' percentiles are read at Z_80 itself). The
    // verdict reads each side's sigmas at the scale its interval is calibrated at, so that how
    // the fit splits an interval between z and sigma does not change how sure a verdict is.
    let scale = |i: &super::LnInterval| {
        if i.source_sigma > 0.0 {
            m.quantile_z / Z_80
        } else {
            1.0
        }
    };
    let (ka, kb) = (scale(&ia), scale(&ib));
    let (sa, sb) = (ka * ia.own_sigma, kb * ib.own_sigma);
    let shared = ka * ia.source_sigma - kb * ib.source_sigma;
    // a novelty both sides share (both Qwen3.5, both on an unmeasured kind of box) is one draw for
    // both and cancels; one only one side has adds
    let one_sided: f64 = ia
        .novelties
        .iter()
        .filter(|n| !ib.novelties.contains(n))
        .map(|n| (ka * n.1).powi(2))
        .chain(
            ib.novelties
                .iter()
                .filter(|n| !ia.novelties.contains(n))
                .map(|n| (kb * n.1).powi(2)),
        )
        .sum();
    let d = a.speed.ln() + ia.own_centre + ia.ground_offset
        - b.speed.ln()
        - ib.own_centre
        - ib.ground_offset;
    let sd = (sa * sa + sb * sb - 2.0 * rho * sa * sb + shared * shared + one_sided)
        .max(0.0)
        .sqrt();
    (d, sd)
}

/// Every pair of residuals that share a comparison group (one box, model and load; one choice
/// different), in file order.
pub fn pairs<'a>(rs: &[&'a Residual]) -> Vec<(&'a Residual, &'a Residual)> {
    let mut by: BTreeMap<&str, Vec<&'a Residual>> = BTreeMap::new();
    for r in rs {
        if let Some(g) = &r.group {
            by.entry(g.as_str()).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for v in by.values() {
        for (i, a) in v.iter().enumerate() {
            for b in &v[i + 1..] {
                if a.higher_is_faster == b.higher_is_faster {
                    out.push((*a, *b));
                }
            }
        }
    }
    out
}

/// Verdicts stated in one band of confidence and how often they were right.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ConfidenceBin {
    /// `50-60%` … `90-100%`.
    pub stated: String,
    pub pairs: usize,
    pub right: usize,
}

/// How the verdicts' stated confidence matched outcomes over a file's equal-load pairs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct PairCheck {
    pub pairs: usize,
    /// Verdicts stated at or above [`VERDICT_BAR`].
    pub confident: usize,
    pub confident_right: usize,
    /// "Depends: measure both".
    pub depends: usize,
    /// Pairs whose two predictions are equal (the cost model does not tell the choices apart,
    /// e.g. MoE runner backends it prices alike): counted in `depends`, in no bin (a stated 50%
    /// is neither right nor wrong).
    #[serde(default)]
    pub ties: usize,
    /// Every pair by the confidence its verdict stated.
    pub bins: Vec<ConfidenceBin>,
    /// Every pair, in file order: which side was called faster, how sure, and what was
    /// measured (so a reader can see which pairs were "Depends" and how far apart they ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub list: Vec<PairVerdict>,
}

/// What a verdict said about one equal-load pair, and what was measured.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PairVerdict {
    /// The two records' ids, the one the verdict calls faster first (file order on a tie): the
    /// one predicted faster, unless their grounds' centres ([`super::LnInterval::ground_offset`])
    /// turn it.
    pub faster: String,
    pub slower: String,
    /// Stated chance that `faster` is measured faster (0.5 on a tie).
    pub probability: f64,
    pub verdict: Call,
    /// Whether `faster` was measured faster; `None` on a tie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<bool>,
    /// How much faster `faster` was predicted and measured than `slower`, in % of `slower`'s speed
    /// (negative: measured slower).
    pub predicted_gap_pct: f64,
    pub measured_gap_pct: f64,
}

/// What a verdict called: one side (stated at ≥ [`VERDICT_BAR`]), "Depends: measure both", or
/// nothing (the two predictions equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Call {
    Sure,
    Depends,
    Tie,
}

impl PairCheck {
    /// Pairs stated "Depends" (ties included) whose two measurements lie within `pct` % of
    /// each other: a near-tie the verdict was right not to call.
    pub fn depends_within(&self, pct: f64) -> usize {
        self.list
            .iter()
            .filter(|p| p.verdict != Call::Sure && p.measured_gap_pct.abs() <= pct)
            .count()
    }

    /// Verdicts stated at ≥ [`VERDICT_BAR`] that the measurements contradict.
    pub fn sure_but_wrong(&self) -> impl Iterator<Item = &PairVerdict> {
        self.list
            .iter()
            .filter(|p| p.verdict == Call::Sure && p.right == Some(false))
    }

    /// `other`'s pairs added to these (the folds of a leave-one-source-out check).
    pub fn merge(&mut self, other: &PairCheck) {
        self.pairs += other.pairs;
        self.confident += other.confident;
        self.confident_right += other.confident_right;
        self.depends += other.depends;
        self.ties += other.ties;
        self.list.extend(other.list.iter().cloned());
        for b in &other.bins {
            match self.bins.iter_mut().find(|x| x.stated == b.stated) {
                Some(x) => {
                    x.pairs += b.pairs;
                    x.right += b.right;
                }
                None => self.bins.push(b.clone()),
            }
        }
        // the labels are `50-60%` … `90-100%`: their text order is their order
        self.bins.sort_by(|x, y| x.stated.cmp(&y.stated));
    }
}

pub(super) fn speed(r: &Residual, v: f64) -> f64 {
    if r.higher_is_faster { v } else { 1.0 / v }
}

/// Every equal-load pair of `rs` judged with `m`: stated confidence against being right.
pub fn check_pairs(m: &ErrorModel, rs: &[&Residual]) -> PairCheck {
    let mut c = PairCheck::default();
    let mut bins = [(0usize, 0usize); 5];
    for (a, b) in pairs(rs) {
        let p = probability_faster(
            m,
            Side {
                speed: speed(a, a.predicted),
                regime: &a.regime,
            },
            Side {
                speed: speed(b, b.predicted),
                regime: &b.regime,
            },
        );
        c.pairs += 1;
        // the side called faster first; a tie keeps file order
        let (f, s, stated) = if p >= 0.5 { (a, b, p) } else { (b, a, 1.0 - p) };
        let gap = |v: fn(&Residual) -> f64| (speed(f, v(f)) / speed(s, v(s)) - 1.0) * 100.0;
        let (predicted_gap_pct, measured_gap_pct) = (gap(|r| r.predicted), gap(|r| r.measured));
        let tie = speed(a, a.predicted) == speed(b, b.predicted);
        // as before the list: an equal measurement is right only when `b` was called faster
        let right = (speed(a, a.measured) > speed(b, b.measured)) == (p >= 0.5);
        let verdict = if tie {
            c.ties += 1;
            c.depends += 1;
            Call::Tie
        } else if stated >= VERDICT_BAR {
            c.confident += 1;
            c.confident_right += usize::from(right);
            Call::Sure
        } else {
            c.depends += 1;
            Call::Depends
        };
        c.list.push(PairVerdict {
            faster: f.id.clone(),
            slower: s.id.clone(),
            probability: if tie { 0.5 } else { stated },
            verdict,
            right: (!tie).then_some(right),
            predicted_gap_pct,
            measured_gap_pct,
        });
        if tie {
            continue;
        }
        let i = (((stated - 0.5) * 10.0).floor() as usize).min(4);
        bins[i].0 += 1;
        bins[i].1 += usize::from(right);
    }
    c.bins = bins
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(i, (n, r))| ConfidenceBin {
            stated: format!("{}-{}%", 50 + 10 * i, 60 + 10 * i),
            pairs: *n,
            right: *r,
        })
        .collect();
    c
}

/// One option of a verdict: its name, predicted tokens/s, regime and how to measure it.
#[derive(Debug, Clone, Copy)]
pub struct Choice<'a> {
    pub name: &'a str,
    pub tok_s: f64,
    pub regime: &'a Regime,
    /// The measurement that settles this side (`bench_serving at --max-concurrency 64 on
    /// --tp 8 --ep-size 8`).
    pub measure: &'a str,
}

/// A verdict between two options, only as sure as their intervals allow.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Odds {
    /// The option called faster, and the other: the one predicted faster unless the grounds'
    /// centres ([`super::LnInterval::ground_offset`]) turn the odds, as [`check_pairs`] calls it.
    pub faster: String,
    pub slower: String,
    /// Chance that `faster` is measured faster.
    pub probability: f64,
    /// `probability` ≥ [`VERDICT_BAR`]; else "Depends: measure both".
    pub sure: bool,
    /// 80% intervals of both options' tokens/s (faster first).
    pub ranges: [[f64; 2]; 2],
    /// The error-model cells that set each interval.
    pub set_by: [String; 2],
    /// Correlation of the two predictions' errors used (same box, same kernels).
    pub correlation: f64,
    /// What to measure when not sure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide_by: Option<String>,
    /// Where the two predictions sit off the dev set's ground ([`ErrorModel::novelties`]):
    /// `attention gqa+linear (both)` widens each interval but is one error for both, so it does
    /// not move the odds; one only one side has does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub novel: Vec<String>,
    pub sentence: String,
}

/// The odds that the option predicted faster is faster.
pub fn odds(m: &ErrorModel, a: Choice<'_>, b: Choice<'_>) -> Odds {
    let (f, s) = if a.tok_s >= b.tok_s { (a, b) } else { (b, a) };
    let p = probability_faster(
        m,
        Side {
            speed: f.tok_s,
            regime: f.regime,
        },
        Side {
            speed: s.tok_s,
            regime: s.regime,
        },
    );
    // a ground centred below its figures (an unpriced speculative step) can turn the odds: the
    // side called faster is the likelier one, as `check_pairs` calls it, and the sentence says
    // that its point is the lower
    let (f, s, p, turned) = if p < 0.5 {
        (s, f, 1.0 - p, true)
    } else {
        (f, s, p, false)
    };
    let (rf, rs) = (
        m.range(f.tok_s, true, f.regime),
        m.range(s.tok_s, true, s.regime),
    );
    let correlation = m.correlation(f.regime, s.regime);
    let novel = novel_of(m, f, s);
    let sure = p >= VERDICT_BAR;
    let decide_by = (!sure).then(|| format!("{} and {}", f.measure, s.measure));
    let off_ground = if novel.is_empty() {
        String::new()
    } else {
        format!(
            "; off the dev set's ground: {}, where a novelty both share widens each interval but not the odds",
            novel.join(", ")
        )
    };
    let turn = if turned {
        format!(
            ", though {} is predicted higher: its error model's ground sits below its figure",
            s.name
        )
    } else {
        String::new()
    };
    let sentence = if sure {
        format!(
            "{} is faster than {} with probability {:.0}% ({} vs {} tok/s, 80% intervals; their errors on one box correlate {:.2}{off_ground}{turn})",
            f.name,
            s.name,
            p * 100.0,
            super::with_range(f.tok_s, rf.range, 0),
            super::with_range(s.tok_s, rs.range, 0),
            correlation
        )
    } else {
        // the side predicted higher first, whichever the odds favour
        let (hi, lo, rhi, rlo) = if turned {
            (s, f, &rs, &rf)
        } else {
            (f, s, &rf, &rs)
        };
        let odds_on = if turned {
            format!(
                ", but its error model's ground sits below its figure: {} is the likelier faster, with",
                f.name
            )
        } else {
            " but only with".to_string()
        };
        format!(
            "Depends: measure both. {} is predicted faster than {} ({} vs {} tok/s, 80% intervals{off_ground}){odds_on} probability {:.0}%, below the {:.0}% bar; what decides it: {}",
            hi.name,
            lo.name,
            super::with_range(hi.tok_s, rhi.range, 0),
            super::with_range(lo.tok_s, rlo.range, 0),
            p * 100.0,
            VERDICT_BAR * 100.0,
            decide_by.as_deref().unwrap_or_default()
        )
    };
    Odds {
        faster: f.name.to_string(),
        slower: s.name.to_string(),
        probability: p,
        sure,
        ranges: [rf.range, rs.range],
        set_by: [rf.set_by, rs.set_by],
        correlation,
        decide_by,
        novel,
        sentence,
    }
}

/// The novelties of two options that widen their intervals, each once: `(both)` where they share
/// it, else the option's name.
fn novel_of(m: &ErrorModel, a: Choice<'_>, b: Choice<'_>) -> Vec<String> {
    // only the novelties that add something (a sigma of 0 widened nothing)
    let adding = |r: &Regime| -> Vec<(String, f64)> {
        m.novelties(r).into_iter().filter(|n| n.1 > 0.0).collect()
    };
    let (na, nb) = (adding(a.regime), adding(b.regime));
    let mut out: Vec<String> = na
        .iter()
        .map(|n| {
            let whose = if nb.contains(n) { "both" } else { a.name };
            format!("{} ({whose})", n.0)
        })
        .collect();
    out.extend(
        nb.iter()
            .filter(|n| !na.contains(n))
            .map(|n| format!("{} ({})", n.0, b.name)),
    );
    out
}
