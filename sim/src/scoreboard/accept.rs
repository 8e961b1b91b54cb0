//! Implied acceptance lengths of speculative-decoding records (`sim validate --records FILE
//! --implied-accept-length`).
//!
//! Acceptance belongs to the model, the data and the draft settings, not to the load. For every
//! record whose only reason not to be compared is "MTP on", the acceptance length that makes the
//! record's prediction match is computed ([`SpeculativeModel::implied_accept_length`]); a
//! correct step model gives the same length across a series (one model, box and engine flags swept over
//! concurrency or context), inside `[1, draft tokens]`. Per series: the lengths' spread
//! (max/min − 1), those out of range, and every record's error when predicted with the
//! series' median length.
//!
//! The draft configuration is what a record's flags state, the rest assumed ([`draft_config`]),
//! said in every series row.
//!
//! Where the engine's own acceptance was published for a record ([`MeasuredAcceptance`]: an
//! acceptance file or the record's `accept_length` metric), the record is also predicted with
//! it: acceptance moves from run to run with the prompts (vLLM's EAGLE-3 acceptance on the Kimi
//! page varies 0.21–0.58 between cells), so a constant length is not the whole check.
//!
//! Where the same page measured the same server with speculation off, every record is also
//! anchored on those runs ([`super::anchor`]): the verify pass takes the off runs' measured ÷
//! modelled step time, so the implied length tests the speculative part of the step alone.

use super::anchor::{Anchor, OffRuns, off_runs, server_key};
use super::stats::Stats;
use super::{Resolved, measured_tok_s, model_of};
use crate::cost::{ServedModel, SpeculativeModel};
pub use crate::engine::draft::draft_config;
use crate::options::SpeculativeOptions;
use crate::records::acceptance::MeasuredAcceptance;
use crate::records::mapping::{Expressed, MetricFamily, express};
use crate::records::{Record, RecordSet};
use models::stats::median_or_nan;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// Schema version of [`AcceptReport`].
pub const ACCEPT_SCHEMA_VERSION: u32 = 3;

/// One record's implied acceptance length.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImpliedRecord {
    pub id: String,
    pub concurrency: u32,
    pub context_tokens: u32,
    pub measured_tok_s: f64,
    pub implied_accept_length: f64,
    /// Inside `[1, num_draft_tokens]`.
    pub in_range: bool,
    /// Predicted with the series' median length.
    pub predicted_with_median_tok_s: f64,
    pub error_with_median_pct: f64,
    /// The acceptance length the engine measured for this record, where published.
    pub measured_accept_length: Option<f64>,
    /// Predicted with that measured length.
    pub predicted_with_measured_tok_s: Option<f64>,
    pub error_with_measured_pct: Option<f64>,
    /// The same, anchored on the server's runs with speculation off, where the file has them.
    pub anchored: Option<AnchoredRecord>,
}

/// One record with its verify pass anchored on the off runs ([`super::anchor`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnchoredRecord {
    #[serde(flatten)]
    pub anchor: Anchor,
    pub implied_accept_length: f64,
    pub in_range: bool,
    /// Predicted with the anchored lengths' median.
    pub predicted_with_median_tok_s: f64,
    pub error_with_median_pct: f64,
}

/// A set of implied lengths: where they sit, how far apart, and how well their median predicts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LengthStats {
    pub median_accept_length: f64,
    pub min: f64,
    pub max: f64,
    /// max / min − 1.
    pub spread: f64,
    /// Outside `[1, num_draft_tokens]`.
    pub out_of_range: usize,
    /// MAPE of the records predicted with the median length, percent.
    pub mape_with_median_pct: f64,
}

impl LengthStats {
    /// Of `lengths` (not empty) inside `[1, nd]`, with the median's `errors_pct`.
    fn of(lengths: &[f64], nd: f64, errors_pct: impl Iterator<Item = f64>) -> LengthStats {
        let (min, max) = range_of(lengths);
        LengthStats {
            median_accept_length: median_or_nan(lengths),
            min,
            max,
            spread: spread_of(lengths),
            out_of_range: lengths.iter().filter(|l| !(1.0..=nd).contains(*l)).count(),
            mape_with_median_pct: Stats::of(
                &errors_pct.filter(|e| e.is_finite()).collect::<Vec<_>>(),
            )
            .mape_pct,
        }
    }
}

/// A series' anchored lengths.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnchoredSeries {
    /// Records anchored: those whose verify pass the off runs bracket.
    pub n: usize,
    #[serde(flatten)]
    pub lengths: LengthStats,
    pub sweeps: Vec<Sweep>,
}

/// What a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepAxis {
    /// Concurrency, at one context length.
    Concurrency,
    /// Cached context, at one concurrency.
    Context,
}

/// The records of a series that vary one knob (the "swept over concurrency or context"):
/// a table row, or a table column, of a concurrency × context matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    pub axis: SweepAxis,
    /// The other knob's value (context tokens for a concurrency sweep, streams for a context one).
    pub fixed: u32,
    pub n: usize,
    pub median_accept_length: f64,
    pub min: f64,
    pub max: f64,
    /// max / min − 1 of the implied lengths.
    pub spread: f64,
    /// max / min − 1 of the measured lengths, where every record of the sweep has one: how much
    /// the engine's own acceptance moved (a floor under any implied spread).
    pub measured_spread: Option<f64>,
}

/// (min, max) of `v`.
fn range_of(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

/// `max / min − 1` of `v` (0 for fewer than two values).
fn spread_of(v: &[f64]) -> f64 {
    let (min, max) = range_of(v);
    if v.len() < 2 { 0.0 } else { max / min - 1.0 }
}

/// The sweeps of a series' records: every context with two or more concurrencies, every
/// concurrency with two or more contexts.
pub fn sweeps(records: &[ImpliedRecord]) -> Vec<Sweep> {
    sweeps_of(records, |r| Some(r.implied_accept_length))
}

/// [`sweeps`] of the value `length` gives, over the records that have one.
fn sweeps_of(
    records: &[ImpliedRecord],
    length: impl Fn(&ImpliedRecord) -> Option<f64>,
) -> Vec<Sweep> {
    let mut out = Vec::new();
    for axis in [SweepAxis::Concurrency, SweepAxis::Context] {
        let mut by: BTreeMap<u32, Vec<(&ImpliedRecord, f64)>> = BTreeMap::new();
        for (r, l) in records.iter().filter_map(|r| Some((r, length(r)?))) {
            let fixed = match axis {
                SweepAxis::Concurrency => r.context_tokens,
                SweepAxis::Context => r.concurrency,
            };
            by.entry(fixed).or_default().push((r, l));
        }
        for (fixed, rs) in by.into_iter().filter(|(_, rs)| rs.len() >= 2) {
            let implied: Vec<f64> = rs.iter().map(|x| x.1).collect();
            let measured: Option<Vec<f64>> =
                rs.iter().map(|x| x.0.measured_accept_length).collect();
            let (min, max) = range_of(&implied);
            out.push(Sweep {
                axis,
                fixed,
                n: rs.len(),
                median_accept_length: median_or_nan(&implied),
                min,
                max,
                spread: spread_of(&implied),
                measured_spread: measured.map(|m| spread_of(&m)),
            });
        }
    }
    out
}

/// One series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Model, machine, engine and its flags.
    pub key: String,
    /// The engine its records ran, whose behaviour simulated them.
    pub engine: crate::engine::Engine,
    pub draft: String,
    pub num_draft_tokens: u32,
    pub records: Vec<ImpliedRecord>,
    /// The modelled implied lengths.
    #[serde(flatten)]
    pub lengths: LengthStats,
    /// Records with a measured acceptance length.
    pub with_measured: usize,
    /// MAPE and bias of those records predicted with their measured lengths, percent.
    pub mape_with_measured_pct: Option<f64>,
    pub bias_with_measured_pct: Option<f64>,
    /// max / min − 1 of the measured lengths, where every record has one.
    pub measured_spread: Option<f64>,
    /// The series cut into one-knob sweeps.
    pub sweeps: Vec<Sweep>,
    /// Its records anchored on the off runs, where any could be.
    pub anchored: Option<AnchoredSeries>,
    /// The range of acceptance lengths the source published for the series' runs as a whole
    /// (not per run), where it gave one: what the implied lengths should fall in.
    pub published_range: Option<(f64, f64)>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AcceptReport {
    pub schema_version: u32,
    pub records_file: String,
    /// Always `each record's own`: every series is simulated as its records' engine ran them
    /// (each series' `engine`); the analysis takes no `--engine` override.
    pub engine: String,
    pub series: Vec<Series>,
    /// MTP-on records not analysed, with why (another reason besides MTP).
    pub skipped: Vec<(String, String)>,
}

/// An MTP-on decode record as if MTP were off, when that is its only obstacle.
fn expressible_but_for_mtp(r: &Record) -> Result<Expressed, String> {
    if r.parallel.mtp != Some(true) {
        return Err("MTP off".into());
    }
    let mut plain = r.clone();
    plain.parallel.mtp = Some(false);
    let e = express(&plain).map_err(|why| {
        why.first()
            .map_or_else(|| "not expressible".into(), |u| u.detail.clone())
    })?;
    if e.family != MetricFamily::LlmDecodeBench {
        return Err("not a decode-throughput record".into());
    }
    Ok(e)
}

/// The implied acceptance lengths of every MTP-on decode record of `set`, by series, beside the
/// `measured` ones where known. A length that is only the middle of a range the source published
/// for a whole series is not a run's measurement and is left out here (the implied lengths are
/// what to hold against that range).
pub fn implied_accept_lengths(set: &RecordSet, measured: &MeasuredAcceptance) -> AcceptReport {
    let measured_by_id: BTreeMap<String, f64> = set
        .records
        .iter()
        .filter(|r| measured.range_of(&r.id).is_none())
        .filter_map(|r| {
            // a record's own rate is over the drafted tokens its flags state (the common
            // recipe's 3 where they are silent, as `draft_config` assumes)
            let flags = r.engine.flags.as_deref().unwrap_or("");
            let stated = crate::engine::record::stated_speculation(flags).num_draft_tokens;
            let drafted = stated.map_or(3, |n| n.saturating_sub(1));
            Some((r.id.clone(), measured.of(r, drafted)?))
        })
        .collect();
    let off = off_runs(set);
    let mut ok: Vec<(Expressed, String, Option<&OffRuns>, String)> = Vec::new();
    let mut skipped = Vec::new();
    for r in &set.records {
        match expressible_but_for_mtp(r) {
            Ok(e) => {
                let key = format!(
                    "{} on {} ({} {})",
                    e.model,
                    e.machine,
                    e.engine.name(),
                    r.engine.flags.as_deref().unwrap_or("")
                );
                let runs = off.get(&server_key(r, &e));
                let flags = r.engine.flags.clone().unwrap_or_default();
                ok.push((e, key, runs, flags));
            }
            Err(why) if r.parallel.mtp == Some(true) => skipped.push((r.id.clone(), why)),
            Err(_) => {}
        }
    }
    let exprs: Vec<Expressed> = ok.iter().map(|(e, ..)| e.clone()).collect();
    let resolved = Resolved::of(&exprs);
    let mut by_key: BTreeMap<String, (&str, Vec<Anchorable>)> = BTreeMap::new();
    for (e, k, runs, flags) in &ok {
        let entry = by_key
            .entry(k.clone())
            .or_insert((flags.as_str(), Vec::new()));
        entry.1.push((e, *runs));
    }
    let series = by_key
        .into_par_iter()
        .filter_map(|(key, (flags, es))| {
            let draft = draft_config(&es.first()?.0.model, es.first()?.0.engine, flags);
            let mut s = series_of(&key, &draft, &es, &resolved, &measured_by_id)?;
            s.published_range = s.records.iter().find_map(|r| measured.range_of(&r.id));
            Some(s)
        })
        .collect();
    AcceptReport {
        schema_version: ACCEPT_SCHEMA_VERSION,
        records_file: set.path.display().to_string(),
        engine: "each record's own".to_string(),
        series,
        skipped,
    }
}

/// A record's model with speculation `cfg` on (`accept`: the acceptance length, or the default).
fn spec_model(
    e: &Expressed,
    resolved: &Resolved,
    cfg: &SpeculativeOptions,
    accept: Option<f64>,
) -> Option<SpeculativeModel> {
    let s = SpeculativeOptions {
        accept_length: accept,
        prompt_kind: None,
        ..cfg.clone()
    };
    match model_of(e, resolved, Some(s))? {
        ServedModel::Speculative(m) => Some(*m),
        ServedModel::Forward(_) => None,
    }
}

/// A record of a series and the off runs of its server, if the file has any.
type Anchorable<'a> = (&'a Expressed, Option<&'a OffRuns>);

/// One record's implied length, with its anchor where the off runs give one.
struct Implied<'a> {
    e: &'a Expressed,
    measured_tok_s: f64,
    length: f64,
    anchored: Option<(Anchor, f64)>,
}

fn series_of(
    key: &str,
    (cfg, why): &(SpeculativeOptions, String),
    es: &[Anchorable],
    resolved: &Resolved,
    measured_by_id: &BTreeMap<String, f64>,
) -> Option<Series> {
    let nd = cfg.num_draft_tokens as f64;
    let implied: Vec<Implied> = es
        .iter()
        .filter_map(|(e, runs)| {
            let m = measured_tok_s(e)?;
            let model = spec_model(e, resolved, cfg, None)?;
            let length = model.implied_accept_length(e.concurrency, e.context_tokens, m);
            let anchored = runs
                .and_then(|o| {
                    let reads = model.verify_cache_reads_per_request();
                    o.anchor(e.concurrency, nd, reads, e.context_tokens)
                })
                .map(|a| {
                    let l = model.implied_accept_length_scaled(
                        e.concurrency,
                        e.context_tokens,
                        m,
                        a.verify_scale,
                    );
                    (a, l)
                });
            Some(Implied {
                e,
                measured_tok_s: m,
                length,
                anchored,
            })
        })
        .collect();
    if implied.is_empty() {
        return None;
    }
    let med = median_or_nan(implied.iter().map(|x| x.length).collect::<Vec<f64>>());
    let anchored_lengths: Vec<f64> = implied
        .iter()
        .filter_map(|x| x.anchored.as_ref().map(|a| a.1))
        .collect();
    let anchored_med = (!anchored_lengths.is_empty()).then(|| median_or_nan(&anchored_lengths));
    let records: Vec<ImpliedRecord> = implied
        .iter()
        .map(|x| record_of(x, resolved, cfg, med, anchored_med, measured_by_id))
        .collect();
    let implied_all: Vec<f64> = records.iter().map(|r| r.implied_accept_length).collect();
    let with_measured: Vec<f64> = records
        .iter()
        .filter_map(|r| r.error_with_measured_pct)
        .collect();
    let at_measured = (!with_measured.is_empty()).then(|| Stats::of(&with_measured));
    let measured_all: Option<Vec<f64>> = records.iter().map(|r| r.measured_accept_length).collect();
    let anchored = (!anchored_lengths.is_empty()).then(|| AnchoredSeries {
        n: anchored_lengths.len(),
        lengths: LengthStats::of(
            &anchored_lengths,
            nd,
            records
                .iter()
                .filter_map(|r| Some(r.anchored.as_ref()?.error_with_median_pct)),
        ),
        sweeps: sweeps_of(&records, |r| {
            r.anchored.as_ref().map(|a| a.implied_accept_length)
        }),
    });
    Some(Series {
        measured_spread: measured_all.map(|m| spread_of(&m)),
        sweeps: sweeps(&records),
        with_measured: with_measured.len(),
        mape_with_measured_pct: at_measured.map(|st| st.mape_pct),
        bias_with_measured_pct: at_measured.map(|st| st.bias_pct),
        key: key.to_string(),
        // the series key holds one engine's records (its name is part of the key)
        engine: es.first()?.0.engine,
        draft: why.clone(),
        num_draft_tokens: cfg.num_draft_tokens,
        lengths: LengthStats::of(
            &implied_all,
            nd,
            records.iter().map(|r| r.error_with_median_pct),
        ),
        anchored,
        records,
        published_range: None,
    })
}

/// One record's row: predicted with the series' median length, its measured length and, where
/// anchored, the anchored median.
fn record_of(
    x: &Implied,
    resolved: &Resolved,
    cfg: &SpeculativeOptions,
    med: f64,
    anchored_med: Option<f64>,
    measured_by_id: &BTreeMap<String, f64>,
) -> ImpliedRecord {
    let (e, m) = (x.e, x.measured_tok_s);
    let nd = cfg.num_draft_tokens as f64;
    let with = |l: f64| spec_model(e, resolved, cfg, Some(l.clamp(0.05, nd)));
    let predict = |l: f64| {
        with(l).map_or(f64::NAN, |cm| {
            cm.steady_decode(e.concurrency, e.context_tokens).tok_per_s
        })
    };
    let pred = predict(med);
    let measured_l = measured_by_id.get(&e.id).copied();
    let pred_measured = measured_l.map(predict).filter(|p| p.is_finite());
    let anchored = x.anchored.as_ref().map(|(a, l)| {
        let p = anchored_med
            .and_then(|med| {
                with(med)?.spec_tok_per_s_scaled(e.concurrency, e.context_tokens, a.verify_scale)
            })
            .unwrap_or(f64::NAN);
        AnchoredRecord {
            anchor: a.clone(),
            implied_accept_length: *l,
            in_range: (1.0..=nd).contains(l),
            predicted_with_median_tok_s: p,
            error_with_median_pct: (p / m - 1.0) * 100.0,
        }
    });
    ImpliedRecord {
        id: e.id.clone(),
        concurrency: e.concurrency,
        context_tokens: e.context_tokens,
        measured_tok_s: m,
        implied_accept_length: x.length,
        in_range: (1.0..=nd).contains(&x.length),
        predicted_with_median_tok_s: pred,
        error_with_median_pct: (pred / m - 1.0) * 100.0,
        measured_accept_length: measured_l,
        predicted_with_measured_tok_s: pred_measured,
        error_with_measured_pct: pred_measured.map(|p| (p / m - 1.0) * 100.0),
        anchored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        concurrency: u32,
        context_tokens: u32,
        implied: f64,
        measured: Option<f64>,
    ) -> ImpliedRecord {
        ImpliedRecord {
            id: format!("c{concurrency}-x{context_tokens}"),
            concurrency,
            context_tokens,
            measured_tok_s: 100.0,
            implied_accept_length: implied,
            in_range: true,
            predicted_with_median_tok_s: 100.0,
            error_with_median_pct: 0.0,
            measured_accept_length: measured,
            predicted_with_measured_tok_s: None,
            error_with_measured_pct: None,
            anchored: None,
        }
    }

    #[test]
    fn a_matrix_cuts_into_its_rows_and_columns() {
        let rs = [
            rec(1, 0, 2.0, Some(2.0)),
            rec(2, 0, 2.4, Some(2.2)),
            rec(4, 0, 3.0, Some(2.0)),
            rec(1, 65536, 2.5, None),
            rec(2, 65536, 2.5, Some(2.1)),
        ];
        let w = sweeps(&rs);
        let row0 = w
            .iter()
            .find(|s| s.axis == SweepAxis::Concurrency && s.fixed == 0)
            .unwrap();
        assert_eq!(row0.n, 3);
        assert!((row0.spread - 0.5).abs() < 1e-12);
        assert!((row0.measured_spread.unwrap() - 0.1).abs() < 1e-12);
        // a sweep with a record lacking a measurement has no measured spread
        let row64 = w.iter().find(|s| s.fixed == 65536).unwrap();
        assert_eq!(row64.measured_spread, None);
        // columns: 1 and 2 streams over two contexts; 4 streams has one record, no sweep
        let cols: Vec<u32> = w
            .iter()
            .filter(|s| s.axis == SweepAxis::Context)
            .map(|s| s.fixed)
            .collect();
        assert_eq!(cols, [1, 2]);
    }
}
