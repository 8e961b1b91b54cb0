//! Implied acceptance lengths of speculative-decoding records (`sim validate --records FILE
//! --implied-accept-length`).
//!
//! Acceptance belongs to the model, the data and the draft settings, not to the load. For every
//! record whose only reason not to be compared is "MTP on", the acceptance length that makes the
//! record's prediction match is computed ([`CostModel::implied_accept_length`]); a correct step
//! model gives the same length across a series (one model, box and engine flags swept over
//! concurrency or context), inside `[1, draft tokens]`. Per series: the lengths' spread
//! (max/min − 1), those out of range, and every record's error when predicted with the
//! series' median length.
//!
//! The records do not state their draft configuration; the one assumed is [`draft_config`]'s,
//! said in every series row.
//!
//! Where the engine's own acceptance was published for a record ([`MeasuredAcceptance`]: an
//! acceptance file or the record's `accept_length` metric), the record is also predicted with
//! it: acceptance moves from run to run with the prompts (vLLM's EAGLE-3 acceptance on the Kimi
//! page varies 0.21–0.58 between cells), so a constant length is not the whole check.

use super::Resolved;
use crate::cost::{CostModel, Knobs};
use crate::options::SpeculativeOptions;
use crate::records::acceptance::MeasuredAcceptance;
use crate::records::mapping::{Expressed, MetricFamily, Quantity, express};
use crate::records::{Record, RecordSet};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// Schema version of [`AcceptReport`].
pub const ACCEPT_SCHEMA_VERSION: u32 = 2;

/// The draft configuration assumed for a record's model and engine, and why.
pub fn draft_config(model: &str, engine: &str) -> (SpeculativeOptions, &'static str) {
    let spec = |algorithm: &str, draft: Option<&str>| SpeculativeOptions {
        algorithm: algorithm.into(),
        num_steps: 3,
        eagle_topk: 1,
        num_draft_tokens: 4,
        draft_model_path: draft.map(str::to_string),
        accept_length: None,
    };
    if engine == "vllm" {
        (
            spec("EAGLE3", Some("EAGLE-3 draft (one decoder layer)")),
            "vLLM EAGLE-3 with 3 speculative tokens (a chain: 3 drafts, 4 verified), the common recipe; the records do not say",
        )
    } else if model.starts_with("glm-5") || model.starts_with("deepseek") {
        (
            spec("EAGLE", None),
            "the checkpoint's MTP layer with the model card's SGLang flags (--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4); the records do not say",
        )
    } else {
        (
            spec("EAGLE", None),
            "SGLang's (3, 1, 4) for MTP checkpoints; the records do not say",
        )
    }
}

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
    let mut out = Vec::new();
    for axis in [SweepAxis::Concurrency, SweepAxis::Context] {
        let mut by: BTreeMap<u32, Vec<&ImpliedRecord>> = BTreeMap::new();
        for r in records {
            let fixed = match axis {
                SweepAxis::Concurrency => r.context_tokens,
                SweepAxis::Context => r.concurrency,
            };
            by.entry(fixed).or_default().push(r);
        }
        for (fixed, rs) in by.into_iter().filter(|(_, rs)| rs.len() >= 2) {
            let implied: Vec<f64> = rs.iter().map(|r| r.implied_accept_length).collect();
            let measured: Option<Vec<f64>> = rs.iter().map(|r| r.measured_accept_length).collect();
            let (min, max) = range_of(&implied);
            out.push(Sweep {
                axis,
                fixed,
                n: rs.len(),
                median_accept_length: median(implied.clone()),
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
    pub draft: String,
    pub num_draft_tokens: u32,
    pub records: Vec<ImpliedRecord>,
    pub median_accept_length: f64,
    pub min: f64,
    pub max: f64,
    /// max / min − 1.
    pub spread: f64,
    pub out_of_range: usize,
    /// MAPE of the series' records predicted with its median length, percent.
    pub mape_with_median_pct: f64,
    /// Records with a measured acceptance length.
    pub with_measured: usize,
    /// MAPE and bias of those records predicted with their measured lengths, percent.
    pub mape_with_measured_pct: Option<f64>,
    pub bias_with_measured_pct: Option<f64>,
    /// max / min − 1 of the measured lengths, where every record has one.
    pub measured_spread: Option<f64>,
    /// The series cut into one-knob sweeps.
    pub sweeps: Vec<Sweep>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AcceptReport {
    pub schema_version: u32,
    pub records_file: String,
    pub series: Vec<Series>,
    /// MTP-on records not analysed, with why (another reason besides MTP).
    pub skipped: Vec<(String, String)>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
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
/// `measured` ones where known.
pub fn implied_accept_lengths(set: &RecordSet, measured: &MeasuredAcceptance) -> AcceptReport {
    let measured_by_id: BTreeMap<String, f64> = set
        .records
        .iter()
        .filter_map(|r| Some((r.id.clone(), measured.of(r)?)))
        .collect();
    let mut ok: Vec<(Expressed, String)> = Vec::new();
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
                ok.push((e, key));
            }
            Err(why) if r.parallel.mtp == Some(true) => skipped.push((r.id.clone(), why)),
            Err(_) => {}
        }
    }
    let exprs: Vec<Expressed> = ok.iter().map(|(e, _)| e.clone()).collect();
    let resolved = Resolved::of(&exprs);
    let mut by_key: BTreeMap<String, Vec<&Expressed>> = BTreeMap::new();
    for (e, k) in &ok {
        by_key.entry(k.clone()).or_default().push(e);
    }
    let series = by_key
        .into_par_iter()
        .filter_map(|(key, es)| series_of(&key, &es, &resolved, &measured_by_id))
        .collect();
    AcceptReport {
        schema_version: ACCEPT_SCHEMA_VERSION,
        records_file: set.path.display().to_string(),
        series,
        skipped,
    }
}

/// A record's model with speculation on (`accept`: the acceptance length, or the default).
fn spec_model(e: &Expressed, resolved: &Resolved, accept: Option<f64>) -> Option<CostModel> {
    let machine = resolved.machines.get(&e.machine)?.as_ref().ok()?;
    let spec = resolved.models.get(&e.model)?.as_ref().ok()?;
    let (mut s, _) = draft_config(&e.model, e.engine.name());
    s.accept_length = accept;
    let (mut opts, _) = e
        .engine
        .server_options(&e.knobs, e.layout.tp, machine.has_nvlink());
    opts.speculative = Some(s);
    CostModel::new(machine, spec, e.layout, &opts, Knobs::default()).ok()
}

fn series_of(
    key: &str,
    es: &[&Expressed],
    resolved: &Resolved,
    measured_by_id: &BTreeMap<String, f64>,
) -> Option<Series> {
    let first = es.first()?;
    let (cfg, why) = draft_config(&first.model, first.engine.name());
    let nd = cfg.num_draft_tokens as f64;
    let measured = |e: &Expressed| {
        e.targets
            .iter()
            .find(|t| t.quantity == Quantity::OutputTokPerS)
            .map(|t| t.measured)
    };
    let implied: Vec<(&Expressed, f64, f64)> = es
        .iter()
        .filter_map(|e| {
            let m = measured(e)?;
            let model = spec_model(e, resolved, None)?;
            let l = model.implied_accept_length(e.concurrency, e.context_tokens, m)?;
            Some((*e, m, l))
        })
        .collect();
    if implied.is_empty() {
        return None;
    }
    let med = median(implied.iter().map(|x| x.2).collect());
    let records: Vec<ImpliedRecord> = implied
        .iter()
        .map(|(e, m, l)| {
            let predict = |l: f64| {
                spec_model(e, resolved, Some(l.clamp(0.05, nd))).map_or(f64::NAN, |cm| {
                    cm.steady_decode(e.concurrency, e.context_tokens).tok_per_s
                })
            };
            let pred = predict(med);
            let measured_l = measured_by_id.get(&e.id).copied();
            let pred_measured = measured_l.map(predict).filter(|p| p.is_finite());
            ImpliedRecord {
                id: e.id.clone(),
                concurrency: e.concurrency,
                context_tokens: e.context_tokens,
                measured_tok_s: *m,
                implied_accept_length: *l,
                in_range: (1.0..=nd).contains(l),
                predicted_with_median_tok_s: pred,
                error_with_median_pct: (pred / m - 1.0) * 100.0,
                measured_accept_length: measured_l,
                predicted_with_measured_tok_s: pred_measured,
                error_with_measured_pct: pred_measured.map(|p| (p / m - 1.0) * 100.0),
            }
        })
        .collect();
    let implied_all: Vec<f64> = records.iter().map(|r| r.implied_accept_length).collect();
    let (min, max) = range_of(&implied_all);
    let errs: Vec<f64> = records
        .iter()
        .map(|r| r.error_with_median_pct.abs())
        .filter(|e| e.is_finite())
        .collect();
    let with_measured: Vec<f64> = records
        .iter()
        .filter_map(|r| r.error_with_measured_pct)
        .collect();
    let mean = |f: &dyn Fn(f64) -> f64| {
        (!with_measured.is_empty())
            .then(|| with_measured.iter().map(|e| f(*e)).sum::<f64>() / with_measured.len() as f64)
    };
    let measured_all: Option<Vec<f64>> = records.iter().map(|r| r.measured_accept_length).collect();
    Some(Series {
        measured_spread: measured_all.map(|m| spread_of(&m)),
        sweeps: sweeps(&records),
        with_measured: with_measured.len(),
        mape_with_measured_pct: mean(&f64::abs),
        bias_with_measured_pct: mean(&|e| e),
        key: key.to_string(),
        draft: why.to_string(),
        num_draft_tokens: cfg.num_draft_tokens,
        out_of_range: records.iter().filter(|r| !r.in_range).count(),
        median_accept_length: med,
        min,
        max,
        spread: spread_of(&implied_all),
        mape_with_median_pct: errs.iter().sum::<f64>() / errs.len().max(1) as f64,
        records,
    })
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
