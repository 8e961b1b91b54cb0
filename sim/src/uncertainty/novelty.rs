//! How far a prediction sits from the ground the dev set validated, dimension by dimension.
//!
//! The error model's cells and its between-source spread are measured on the dev set
//! (`validation/public-records.json`): a handful of pages about a handful of model families, each
//! on one engine, on one kind of box. A prediction for a model family, an engine × family pair, an
//! attention kind, an MoE shape, a kind of machine knowledge, or a context or concurrency band of
//! its family that no dev record ran is further from that ground than a new page about a familiar
//! run is, and the between-source spread alone understates its error. Each such dimension
//! ([`DIMENSIONS`]) gets its own sigma, added in quadrature where the prediction is novel along it:
//!
//! - **measured** where the dev set has at least two groups of the dimension: each group (a family,
//!   an attention kind, …) of at least [`super::MIN_CELL`] figures is left out whole, predicted by
//!   the model fitted on the rest (with the dimensions before it in [`DIMENSIONS`] already in it),
//!   and what its figures' mean-square error about that model's centre exceeds the variance the
//!   model gave them is that group's excess; the groups weigh alike and the mean excess (never
//!   below 0) is the dimension's variance. A dimension nested in the model family (engine ×
//!   family, the family's context and concurrency bands) learns only from groups whose family
//!   and sources stay in the rest when they are left out (otherwise it would measure a new
//!   family or a new source again), and so is skipped for a new source, whose between-source
//!   offset already holds how far the dev sources sit apart at their own bands. A rest of fewer
//!   than three sources (whose between-source sigma is the bound, not a measurement) teaches
//!   nothing and is skipped;
//! - **a prior** where no group can be left out so: the spread of the dev families' median
//!   log-errors (one more family's offset as far as the dev families' offsets spread). It is
//!   stated as such in the stored model; it is never chosen from a held-out file.
//!
//! Bounded to [0, ln 2 / z80] like the between-source sigma (a factor of two either way at 80%).
//!
//! Two predictions novel along the same dimension in the same way (both Qwen3.5, both on a box
//! measured by no dev record) share that error whole: it widens each interval but cancels in a
//! verdict between them ([`super::verdict`]); only a novelty on one side adds to the verdict's
//! spread.
//!
//! The stored figures are fitted on the dev set only; the held-out files
//! (`validation/further-records.json`, `validation/glm52-records.json`) are never used to fit or
//! choose them.

use super::{ErrorModel, INTERVAL_LEVEL, MIN_CELL, Regime, Residual, Z_80, quantile};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The dimensions of novelty, in the order they are fitted (each beyond those before it), and
/// whether each is nested in the model family (skipped where the family itself is new: a new
/// family's measured sigma already holds its engine pairing and its bands).
pub const DIMENSIONS: [(&str, bool); 7] = [
    ("model family", false),
    ("attention", false),
    ("MoE shape", false),
    ("machine kind", false),
    ("engine × model family", true),
    ("model family × context", true),
    ("model family × concurrency", true),
];

/// One dimension of novelty as stored: which of its groups the dev set has, and the sigma a
/// prediction outside them takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Novelty {
    /// One of [`DIMENSIONS`].
    pub dimension: String,
    /// The groups (values) the dev set has figures of.
    pub seen: Vec<String>,
    /// The groups that measured the sigma, each left out whole.
    pub left_out: Vec<GroupOut>,
    /// Sigma (ln) a prediction outside `seen` adds in quadrature.
    pub sigma_ln: f64,
    /// `leave one group out` or `prior`.
    pub method: String,
    /// Measured with each left-out group's source (page or box) still in the rest: it is how far
    /// a known source errs off its measured bands, which a new source's between-source offset
    /// already holds (the dev sources' offsets come at their own bands), so a new source does
    /// not take it again.
    #[serde(default)]
    pub within_source: bool,
    /// What pinned `sigma_ln`.
    pub pinned_by: String,
}

/// One group left out of the dev set and predicted by the model of the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupOut {
    pub group: String,
    pub n: usize,
    /// Median of its figures' ln(measured / predicted) less the rest's model's centre.
    pub median_off_ln: f64,
    /// Its figures' sources all stay in the rest.
    #[serde(default)]
    pub source_kept: bool,
    /// Its mean-square error about that centre (robust: the 10–90% spread read as a sigma, plus
    /// the median offset squared) less the mean variance the rest's model gave its figures.
    pub excess_var_ln2: f64,
}

/// The model family of a model preset or folder name: its leading letters (`kimi-k2.5` →
/// `kimi`, `glm-5.1-nvfp4` → `glm`, `qwen3.5-397b-a17b` → `qwen`, `/models/Kimi-K2.6` → `kimi`).
pub fn model_family(name: &str) -> String {
    let base = name.rsplit('/').find(|s| !s.is_empty()).unwrap_or(name);
    base.chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The attention kind of a model: `mla`, `mla+dsa` (with DeepSeek sparse attention's indexer),
/// `gqa`, and a hybrid's layer mix (`gqa+linear` for Gated DeltaNet, `gqa+sliding`).
pub fn attention_kind(spec: &models::ModelSpec) -> String {
    use models::spec::{AttentionSpec, LayerAttention};
    let mut kind = match &spec.attention {
        AttentionSpec::Mla {
            indexer: Some(_), ..
        } => "mla+dsa".to_string(),
        AttentionSpec::Mla { .. } => "mla".to_string(),
        AttentionSpec::Gqa { .. } => "gqa".to_string(),
    };
    for (layer, name) in [
        (LayerAttention::Linear, "linear"),
        (LayerAttention::Sliding, "sliding"),
    ] {
        if spec.layer_attention.contains(&layer) {
            kind.push('+');
            kind.push_str(name);
        }
    }
    kind
}

/// The MoE shape of a model: `384 experts top-8`, or `dense`.
pub fn moe_shape(spec: &models::ModelSpec) -> String {
    spec.moe.as_ref().map_or("dense".to_string(), |m| {
        format!("{} experts top-{}", m.num_routed_experts, m.top_k)
    })
}

/// The group a regime falls in along `dimension`.
pub fn key(dimension: &str, r: &Regime) -> String {
    match dimension {
        "model family" => r.model_family.clone(),
        "attention" => r.attention.clone(),
        "MoE shape" => r.moe_shape.clone(),
        "machine kind" => r.machine_kind.clone(),
        "engine × model family" => format!("{} × {}", r.engine, r.model_family),
        "model family × context" => format!("{} at context {}", r.model_family, r.context),
        _ => format!("{} at concurrency {}", r.model_family, r.concurrency),
    }
}

fn nested(dimension: &str) -> bool {
    DIMENSIONS.iter().any(|(d, n)| *d == dimension && *n)
}

impl ErrorModel {
    /// The dimensions along which `r` is novel, each as `(what, sigma)`: `model family qwen`.
    /// Dimensions nested in the family are skipped where the family is new, and those measured
    /// inside a known source ([`Novelty::within_source`]) where the source is new.
    pub fn novelties(&self, r: &Regime) -> Vec<(String, f64)> {
        let new_source = self.new_source(r).is_some();
        let is_new = |n: &Novelty| {
            let unseen = !n.seen.contains(&key(&n.dimension, r));
            // a new source's offset already holds what a within-source dimension measured
            let held_by_source = new_source && n.within_source;
            unseen && !held_by_source
        };
        let family_new = self
            .novelty
            .iter()
            .any(|n| n.dimension == "model family" && is_new(n));
        self.novelty
            .iter()
            .filter(|n| is_new(n) && !(family_new && nested(&n.dimension)))
            .map(|n| {
                (
                    format!("{} {}", n.dimension, key(&n.dimension, r)),
                    n.sigma_ln,
                )
            })
            .collect()
    }
}

fn sorted(v: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = v.collect();
    v.sort_unstable_by(f64::total_cmp);
    v
}

fn r4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// The bound on every novelty sigma: a factor of two either way at 80%.
pub fn sigma_bounds() -> [f64; 2] {
    [0.0, std::f64::consts::LN_2 / Z_80]
}

/// `dims` with their `seen` groups read from `rs` (a fold's rest keeps the sigmas fitted on the
/// whole but sees only its own groups).
pub fn seen_in(dims: &[Novelty], rs: &[&Residual]) -> Vec<Novelty> {
    dims.iter()
        .map(|n| Novelty {
            seen: groups(&n.dimension, rs).into_keys().collect(),
            ..n.clone()
        })
        .collect()
}

fn groups<'a>(dimension: &str, rs: &[&'a Residual]) -> BTreeMap<String, Vec<&'a Residual>> {
    let mut by: BTreeMap<String, Vec<&'a Residual>> = BTreeMap::new();
    for r in rs {
        by.entry(key(dimension, &r.regime)).or_default().push(r);
    }
    by
}

/// The prior for a dimension the dev set cannot measure: the spread (sample standard deviation)
/// of the dev families' median log-errors, bounded; the upper bound with fewer than two families.
fn prior(rs: &[&Residual]) -> (f64, String) {
    let medians: Vec<(String, f64)> = groups("model family", rs)
        .into_iter()
        .map(|(f, v)| (f, quantile(&sorted(v.iter().map(|r| r.ln())), 0.5)))
        .collect();
    let k = medians.len();
    let [lo, hi] = sigma_bounds();
    if k < 2 {
        return (r4(hi), format!("{k} model family: the bound ln 2 / z80"));
    }
    let mean = medians.iter().map(|m| m.1).sum::<f64>() / k as f64;
    let var = medians.iter().map(|m| (m.1 - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    let listed: Vec<String> = medians
        .iter()
        .map(|(f, m)| format!("{f} {m:+.3}"))
        .collect();
    (
        r4(var.sqrt().clamp(lo, hi)),
        format!(
            "no dev group can be left out for it: the spread of the {k} dev families' median \
             ln errors ({}), one more family's offset taken as far as theirs spread",
            listed.join(", ")
        ),
    )
}

/// The excess of one left-out group over what `inner` (the rest's model) gave its figures.
fn group_out(group: &str, held: &[&Residual], inner: &ErrorModel) -> GroupOut {
    let source_kept = held
        .iter()
        .all(|r| inner.provenance.sources.contains(&r.source));
    let mut off = Vec::new();
    let mut got = 0.0;
    for r in held {
        let i = inner.ln_interval(&r.regime);
        off.push(r.ln() - i.centre());
        got += i.sigma.powi(2);
    }
    let off = sorted(off.into_iter());
    let tail = (1.0 - INTERVAL_LEVEL) / 2.0;
    let s = (quantile(&off, 1.0 - tail) - quantile(&off, tail)) / 2.0 / Z_80;
    let m = quantile(&off, 0.5);
    GroupOut {
        group: group.to_string(),
        n: held.len(),
        source_kept,
        median_off_ln: r4(m),
        excess_var_ln2: (((s * s + m * m) - got / held.len() as f64) * 1e6).round() / 1e6,
    }
}

/// Every dimension's sigma, fitted on `rs` in [`DIMENSIONS`]' order; `fit_rest` fits the table
/// and between-source spread of a subset (no novelty, no unseen sigma).
pub fn fit(rs: &[&Residual], fit_rest: impl Fn(&[&Residual]) -> ErrorModel) -> Vec<Novelty> {
    let mut done: Vec<Novelty> = Vec::new();
    let (prior_sigma, prior_why) = prior(rs);
    for (dimension, is_nested) in DIMENSIONS {
        let by = groups(dimension, rs);
        let mut left_out = Vec::new();
        if by.len() >= 2 {
            for (g, held) in by.iter().filter(|(_, v)| v.len() >= MIN_CELL) {
                let rest: Vec<&Residual> = rs
                    .iter()
                    .copied()
                    .filter(|r| key(dimension, &r.regime) != *g)
                    .collect();
                let family = &held[0].regime.model_family;
                if is_nested && !rest.iter().any(|r| &r.regime.model_family == family) {
                    continue;
                }
                let inner = ErrorModel {
                    novelty: seen_in(&done, &rest),
                    ..fit_rest(&rest)
                };
                // a rest of fewer than three sources has no measured between-source spread (its
                // sigma is the bound): it cannot say what the group adds beyond a new source
                if inner.provenance.sources.len() < 3 {
                    continue;
                }
                let out = group_out(g, held, &inner);
                // a nested dimension is measured inside known sources only: a group that takes a
                // whole source with it measures a new source again
                if is_nested && !out.source_kept {
                    continue;
                }
                left_out.push(out);
            }
        }
        let [lo, hi] = sigma_bounds();
        let (sigma_ln, method, pinned_by) = if left_out.is_empty() {
            (prior_sigma, "prior", prior_why.clone())
        } else {
            let k = left_out.len();
            let excess = left_out.iter().map(|g| g.excess_var_ln2).sum::<f64>() / k as f64;
            (
                r4(excess.max(0.0).sqrt().clamp(lo, hi)),
                "leave one group out",
                format!(
                    "{k} dev group(s) of at least {MIN_CELL} figures left out whole, each predicted \
                     by the model of the rest{}; the mean of their excess variances, groups alike \
                     (skipped: a group whose rest has fewer than 3 sources{})",
                    if done.is_empty() {
                        ""
                    } else {
                        " (the dimensions before this one included)"
                    },
                    if is_nested {
                        ", or that takes its family or a whole source with it"
                    } else {
                        ""
                    }
                ),
            )
        };
        let within_source = !left_out.is_empty() && left_out.iter().all(|g| g.source_kept);
        done.push(Novelty {
            within_source,
            dimension: dimension.to_string(),
            seen: by.into_keys().collect(),
            left_out,
            sigma_ln,
            method: method.to_string(),
            pinned_by,
        });
    }
    done
}
