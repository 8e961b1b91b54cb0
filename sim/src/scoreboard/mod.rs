//! The scoreboard: every record of a records file ([`crate::records`]) that shardwise can
//! express is simulated and compared with its measurement, uncalibrated (default knobs).
//!
//! - `llm_decode_bench` records: steady decode tok/s of `concurrency` streams at the cached
//!   context ([`crate::cost::ServedModel::steady_decode_held`]), prefill excluded; the streams
//!   share one cached copy of the context where the engine's prefix cache is on
//!   ([`shared_context`]).
//! - `bench_serving` records: one simulated bench_serving run ([`crate::serving::simulate`]).
//!
//! Each record is simulated as its own engine ran it, or as `ScoreOptions::engine` says
//! ([`crate::engine`]). The statistics ([`stats`]) count each record's headline figure once
//! (`RecordComparison::primary`); figures the source flags (⚠) are shown and left out.

pub mod accept;
pub mod anchor;
mod kv_pool;
mod shared_context;
pub mod stats;
pub mod text;

use crate::cost::{Knobs, ServedModel, TimeBreakdown};
use crate::engine::Engine;
use crate::machine::Machine;
use crate::options::{ServerOptions, SpeculativeOptions};
use crate::records::acceptance::MeasuredAcceptance;
use crate::records::speculation::AcceptOrigin;
use crate::records::{
    Expressed, MetricFamily, Quantity, RecordSet, Unexpressible, UnexpressibleKind, express,
};
use crate::serving::{RunReport, simulate};
use crate::uncertainty::error_fit::{Residual, coverage, loso_check};
use crate::uncertainty::verdict::{PairCheck, check_pairs};
use crate::uncertainty::{
    Coverage, ErrorModel, FigureKind, Flag, Regime, context_band, machine_levels,
};
use models::ModelSpec;
use rayon::prelude::*;
use serde::Serialize;
use stats::{Group, GroupBy, SpecFamily, Stats, band, by_speculation, groups};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Schema version of [`Scoreboard`]; bump when a key changes meaning or disappears.
pub const SCOREBOARD_SCHEMA_VERSION: u32 = 1;
/// Worst records listed.
pub const WORST_SHOWN: usize = 10;

/// How to score.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScoreOptions {
    /// Simulate every record as this engine would run it; `None` = each record's own engine.
    pub engine: Option<Engine>,
}

/// One predicted-vs-measured pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordComparison {
    pub id: String,
    /// Model preset.
    pub model: String,
    pub family: MetricFamily,
    pub quantity: Quantity,
    /// The record's metric key.
    pub key: String,
    pub concurrency: u32,
    /// Concurrency band (`1`, `2`, `3-8`, `9-32`, `33+`).
    pub band: String,
    /// Cached context (`llm_decode_bench`) or prompt length (`bench_serving`), tokens.
    pub context_tokens: u32,
    /// Machine preset or profile.
    pub machine: String,
    /// Layout short name.
    pub layout: String,
    /// The engine whose behaviour was simulated.
    pub engine: Engine,
    pub predicted: f64,
    pub measured: f64,
    /// The measurement as the source printed it.
    pub measured_raw: String,
    /// (predicted − measured) / measured, percent.
    pub error_pct: f64,
    /// The record's headline figure (counted in the summary).
    pub primary: bool,
    /// The source flags the figure (⚠): left out of every statistic.
    pub flagged: bool,
    pub approximate: bool,
    /// Where the predicted time goes: one decode step (`llm_decode_bench`), or summed over every
    /// batch of the run (`bench_serving`).
    pub breakdown: TimeBreakdown,
    /// The decode step (`llm_decode_bench`) or the run's mean decode batch, ms.
    pub step_ms: f64,
    /// Speculative decoding as simulated (MTP-on records); `None` = off.
    pub speculation: Option<SpecUsed>,
    /// Assumptions and engine translations behind the prediction.
    pub notes: Vec<String>,
    /// The page or box the record came from (its `source` up to the table and row).
    pub source: String,
    /// The record's comparison group (same box, model and load; one choice different).
    pub comparison_group: Option<String>,
    /// What the error model splits this prediction by, extrapolation flags included.
    pub regime: Regime,
    /// The 80% interval of the prediction ([`ErrorModel::builtin`]).
    pub predicted_range: [f64; 2],
    /// The error-model cell that set the interval's width, and what widened it.
    pub range_set_by: String,
    pub range_widened_by: Vec<String>,
    /// What the interval's half-width is made of, in ln.
    pub range_parts: crate::uncertainty::RangeParts,
}

/// The speculation a comparison was predicted with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpecUsed {
    /// Tokens per request and step the prediction used.
    pub accept_length: f64,
    /// `measured` (the source's), `published-range` (the middle of the range the source gave for
    /// the series) or `assumed` (the draft kind's default).
    pub accept: AcceptOrigin,
    pub num_draft_tokens: u32,
}

/// A record that was not compared, with every reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unexpressed {
    pub id: String,
    /// The counted reason (the first).
    pub reason: UnexpressibleKind,
    pub reasons: Vec<Unexpressible>,
}

/// How many records a reason kept out (counted by each record's first reason).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReasonCount {
    pub reason: UnexpressibleKind,
    pub count: usize,
    /// One record's detail, as an example.
    pub example: String,
}

/// `sim validate --records … --format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scoreboard {
    /// Always [`SCOREBOARD_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub records_file: String,
    /// The `--engine` override: the engine every record was simulated as; without one,
    /// `each record's own` (each comparison's `engine` says which, and `engines` counts them).
    pub engine: String,
    /// Records compared, by the engine whose behaviour simulated them.
    pub engines: BTreeMap<String, usize>,
    /// Records in the file.
    pub records: usize,
    /// Records compared (at least one predicted figure).
    pub expressible: usize,
    /// Headline figures (one per record, flagged ones left out).
    pub summary: Stats,
    /// Headline figures by model × family × quantity, all concurrencies.
    pub families: Vec<Group>,
    /// Headline figures of the records predicted without and with speculative decoding.
    pub speculation: Vec<SpecFamily>,
    /// Headline figures of all models by family, quantity and concurrency band.
    pub bands: Vec<Group>,
    /// Every unflagged figure by model × family × quantity × concurrency band.
    pub groups: Vec<Group>,
    /// The [`WORST_SHOWN`] headline figures furthest off, worst first.
    pub worst: Vec<RecordComparison>,
    pub comparisons: Vec<RecordComparison>,
    pub unexpressible: Vec<Unexpressed>,
    /// Unexpressible records by counted reason, most first.
    pub reasons: Vec<ReasonCount>,
    /// The 80% intervals against the measurements ([`uncertainty`]).
    pub intervals: Intervals,
}

/// How the 80% intervals held on this file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Intervals {
    /// The records file the error model was fitted on.
    pub fitted_on: String,
    /// Whether this file is that file (then `coverage` is in sample; `loso` is the honest one).
    pub in_fit: bool,
    /// Whether this file is one of the first-contact files whose sources' spread set a new
    /// source's offset sigma (then `coverage` is not out of sample either).
    pub first_contact: bool,
    /// Headline figures inside their interval, with the stored model.
    pub coverage: Coverage,
    /// The file's time-to-first-token figures (not headline figures; flagged ones left out)
    /// inside their interval, each on the first-token ground
    /// ([`crate::uncertainty::FirstTokenGround`]); absent where the file has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token: Option<Coverage>,
    /// Leave one source out on this file, refitted (only for the file the model is fitted on).
    pub loso: Option<Coverage>,
    /// Equal-load pairs differing in one choice: stated confidence against outcomes.
    pub verdicts: PairCheck,
    /// The same pairs leaving one source out (each source's pairs judged by the model, pair
    /// correlations included, fitted on the others; only for the file the model is fitted on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loso_verdicts: Option<PairCheck>,
    /// Coverage with the stored model split by how far each figure sits from the dev set's
    /// ground: `dev ground` (a source it has), `new source` (a page, box, machine or model it
    /// lacks, no novelty), `novel` (a model family, engine × family, attention kind, MoE shape,
    /// machine kind or family band it lacks; [`crate::uncertainty::novelty`]).
    pub by_ground: Vec<GroundCoverage>,
    /// Coverage with the stored model split by first-contact ground
    /// ([`crate::uncertainty::FIRST_CONTACT_GROUNDS`]: kernels measured or extrapolated, the
    /// acceptance measured or a prior), the split a new source's first-contact sigma is fitted on.
    #[serde(default)]
    pub by_first_contact_ground: Vec<GroundCoverage>,
}

/// Coverage of the figures at one distance from the dev set's ground.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroundCoverage {
    pub ground: String,
    pub coverage: Coverage,
}

/// The machine and model of every expressed record, resolved once each.
struct Resolved {
    machines: HashMap<String, Result<Machine, String>>,
    models: HashMap<String, Result<ModelSpec, String>>,
}

impl Resolved {
    fn of(expressed: &[Expressed]) -> Resolved {
        let mut r = Resolved {
            machines: HashMap::new(),
            models: HashMap::new(),
        };
        for e in expressed {
            r.machines
                .entry(e.machine.clone())
                .or_insert_with(|| Machine::resolve(&e.machine).map_err(|x| x.to_string()));
            r.models
                .entry(e.model.clone())
                .or_insert_with(|| ModelSpec::resolve(&e.model).map_err(|x| x.to_string()));
        }
        r
    }
}

/// A record's model, with speculation as `spec` says (`None`: off).
fn model_of(
    e: &Expressed,
    resolved: &Resolved,
    spec: Option<SpeculativeOptions>,
) -> Option<ServedModel> {
    let machine = server_gpus(resolved.machines.get(&e.machine)?.as_ref().ok()?, e.layout).ok()?;
    let machine = &machine;
    let model = resolved.models.get(&e.model)?.as_ref().ok()?;
    let (mut opts, _) = e.engine.server_options(
        &e.knobs,
        e.layout.tp,
        machine.has_nvlink(),
        machine.memory_bytes(),
    );
    opts.speculative = spec;
    opts.streams_share_prompt = e.shared_prompt.is_some();
    waive_unstated_running_cap(&mut opts, &e.knobs);
    ServedModel::new(machine, model, e.layout, &opts, Knobs::default()).ok()
}

/// Why a measured acceptance length given for `e` (an acceptance file's or the record's own)
/// cannot be the engine's, if it cannot: a step accepts at most the tokens it verifies (the drafts
/// and the bonus token, as both engines count a length), so a length above them is a misread
/// figure (a rate, a sum over positions, another draft length's run), never a length to clamp to
/// the verified count and price as measured.
fn impossible_acceptance(e: &Expressed, model: &ServedModel) -> Option<String> {
    let s = e.speculation.as_ref()?;
    let given = s.options.accept_length?;
    let verified = model.spec_plan()?.num_draft_tokens.max(1);
    (given > f64::from(verified) + 1e-9).then(|| {
        format!(
            "record `{}`: acceptance length {given:.2} is above the {verified} tokens a step verifies (its drafts and the bonus token), the most a length can count; check the acceptance file or the record's {} (a rate, or a sum over positions?)",
            e.id,
            crate::records::acceptance::ACCEPT_LENGTH_METRIC
        )
    })
}

/// A record's flags that are its source's summary (not the whole launch,
/// [`crate::engine::LaunchKnobs::launch_complete`]): where they do not give
/// `--max-running-requests` to a speculative server whose engine caps it by default, the cap is
/// not applied (the record cannot say the launch left it out) and the note says so.
fn waive_unstated_running_cap(
    opts: &mut ServerOptions,
    knobs: &crate::engine::LaunchKnobs,
) -> Option<String> {
    if knobs.launch_complete || opts.speculative.is_none() || opts.max_running_requests.is_some() {
        return None;
    }
    let n = opts.engine.rules().speculative_running_cap()?;
    opts.running_cap_unstated = true;
    Some(format!(
        "{}'s own cap of {n} running requests under speculation not applied: the record does not say whether {} was given (public benchmark launches give it)",
        opts.engine.rules().display_name(),
        opts.engine.flag(crate::engine::Knob::MaxRunningRequests)
    ))
}

/// The decode tok/s measured for `e`.
fn measured_tok_s(e: &Expressed) -> Option<f64> {
    e.targets
        .iter()
        .find(|t| t.quantity == Quantity::OutputTokPerS)
        .map(|t| t.measured)
}

/// Scores every record of `set` (MTP-on records with their own `accept_length` where they state
/// one, else the draft kind's default).
pub fn score(set: &RecordSet, opts: &ScoreOptions) -> Scoreboard {
    score_with(set, opts, &MeasuredAcceptance::default())
}

/// [`score`], with the engine's acceptance the source published per record (an acceptance file,
/// [`MeasuredAcceptance`]) used for the MTP-on records it names.
pub fn score_with(
    set: &RecordSet,
    opts: &ScoreOptions,
    measured: &MeasuredAcceptance,
) -> Scoreboard {
    let mut expressed = Vec::new();
    let mut unexpressible: Vec<Unexpressed> = set
        .unreadable
        .iter()
        .map(|(id, why)| {
            let detail = format!("record `{id}`: {why}");
            unexpressed(
                id,
                vec![Unexpressible::new(
                    UnexpressibleKind::UnreadableValue,
                    detail,
                )],
            )
        })
        .collect();
    let origin: HashMap<&str, RecordOrigin> = set
        .records
        .iter()
        .map(|r| (r.id.as_str(), RecordOrigin::of(r)))
        .collect();
    for r in &set.records {
        match express(r) {
            Ok(mut e) => {
                if let (Some(s), Some(l)) = (e.speculation.as_mut(), measured.by_id.get(&r.id)) {
                    s.options.accept_length = Some(*l);
                    s.accept = match measured.range_of(&r.id) {
                        Some(_) => AcceptOrigin::PublishedRange,
                        None => AcceptOrigin::Measured,
                    };
                    s.pooled = measured.pooled.get(&r.id).map(|p| {
                        format!(
                            "the mean of the {} cells of the source's `{}` profile; this cell's own {:.2} is one window's, which its throughput does not follow",
                            p.cells, p.pool, p.own_length
                        )
                    });
                }
                expressed.push(e)
            }
            Err(reasons) => unexpressible.push(unexpressed(&r.id, reasons)),
        }
    }
    let resolved = Resolved::of(&expressed);
    let results: Vec<Result<Vec<RecordComparison>, Unexpressed>> = expressed
        .par_iter()
        .map(|e| predict(e, &resolved, opts, &origin[e.id.as_str()]))
        .collect();
    let mut comparisons = Vec::new();
    for r in results {
        match r {
            Ok(c) => comparisons.extend(c),
            Err(u) => unexpressible.push(u),
        }
    }
    finish(set, opts, comparisons, unexpressible)
}

/// Where a record came from and what it is compared with.
struct RecordOrigin {
    source: String,
    group: Option<String>,
}

impl RecordOrigin {
    fn of(r: &crate::records::Record) -> RecordOrigin {
        // a page or a box: the source up to the table and row it names
        let source = r.source.as_deref().unwrap_or(r.id.as_str());
        let source = source
            .split(" (")
            .next()
            .unwrap_or(source)
            .trim()
            .to_string();
        RecordOrigin {
            source,
            group: r.comparison_group.clone(),
        }
    }
}

fn unexpressed(id: &str, reasons: Vec<Unexpressible>) -> Unexpressed {
    Unexpressed {
        id: id.to_string(),
        reason: reasons
            .first()
            .map_or(UnexpressibleKind::MetricNotModelled, |u| u.kind),
        reasons,
    }
}

/// Simulates one expressed record and compares every target.
fn predict(
    e: &Expressed,
    resolved: &Resolved,
    opts: &ScoreOptions,
    origin: &RecordOrigin,
) -> Result<Vec<RecordComparison>, Unexpressed> {
    let failed = |kind: UnexpressibleKind, detail: String| {
        unexpressed(&e.id, vec![Unexpressible::new(kind, detail)])
    };
    let machine = match &resolved.machines[&e.machine] {
        Ok(m) => server_gpus(m, e.layout)
            .map_err(|x| failed(UnexpressibleKind::UnknownMachine, x.to_string()))?,
        Err(x) => return Err(failed(UnexpressibleKind::UnknownMachine, x.clone())),
    };
    let machine = &machine;
    let spec = match &resolved.models[&e.model] {
        Ok(s) => s,
        Err(x) => return Err(failed(UnexpressibleKind::UnknownModel, x.clone())),
    };
    let engine = opts.engine.unwrap_or(e.engine);
    let (mut server, mut notes) = engine.server_options(
        &e.knobs,
        e.layout.tp,
        machine.has_nvlink(),
        machine.memory_bytes(),
    );
    notes.splice(0..0, e.assumptions.iter().cloned());
    server.speculative = e.speculation.as_ref().map(|s| s.options.clone());
    server.streams_share_prompt = e.shared_prompt.is_some();
    notes.extend(waive_unstated_running_cap(&mut server, &e.knobs));
    notes.extend(kv_pool::from_record(e, machine, spec, &mut server));
    if server.streams_share_prompt {
        notes.push(format!(
            "MoE routing: every stream continues the same prompt, so a batch's tokens route alike (Zipf skew {} over the experts, {} for independent requests)",
            crate::cost::moe::SHARED_PROMPT_ROUTING_SKEW,
            crate::cost::moe::ROUTING_SKEW
        ));
    }
    let model = ServedModel::new(machine, spec, e.layout, &server, Knobs::default())
        .map_err(|x| failed(UnexpressibleKind::SimulationFailed, x.to_string()))?;
    if let Some(why) = impossible_acceptance(e, &model) {
        return Err(failed(UnexpressibleKind::UnreadableValue, why));
    }
    notes.extend(model.target().served_note().map(str::to_string));
    notes.extend(model.target().default_config_note().map(str::to_string));
    notes.extend(modelled_comm_notes(&model));
    let speculation = speculation_of(e, (spec, &model, &server), &mut notes);
    let (breakdown, step_ms, value) = predicted_value(e, engine, spec, &model, &server, &mut notes)
        .map_err(|x| failed(UnexpressibleKind::SimulationFailed, x))?;
    let regime = regime_of(
        e,
        (engine, spec),
        machine,
        &model,
        &notes,
        speculation,
        origin,
    );
    let errors = ErrorModel::builtin();
    let range_parts = errors.ln_interval(&regime).parts();
    Ok(e.targets
        .iter()
        .map(|t| {
            let predicted = value(t.quantity);
            let range = errors.figure_range(predicted, figure_kind(t.quantity), &regime);
            RecordComparison {
                id: e.id.clone(),
                model: e.model.clone(),
                family: e.family,
                quantity: t.quantity,
                key: t.key.clone(),
                concurrency: e.concurrency,
                band: band(e.concurrency).to_string(),
                context_tokens: e.context_tokens,
                machine: machine.name().to_string(),
                layout: e.layout.short_name(),
                engine,
                predicted,
                measured: t.measured,
                measured_raw: t.raw.clone(),
                error_pct: (predicted - t.measured) / t.measured * 100.0,
                primary: t.primary,
                flagged: t.flagged,
                approximate: t.approximate,
                breakdown,
                step_ms,
                speculation,
                notes: notes.clone(),
                source: origin.source.clone(),
                comparison_group: origin.group.clone(),
                regime: regime.clone(),
                predicted_range: range.range,
                range_set_by: range.set_by,
                range_widened_by: range.widened_by,
                range_parts,
            }
        })
        .collect())
}

/// The notes of the collectives no curve was measured for (NCCL's ring model,
/// `machine::nccl_model`): a prediction says what it did not measure.
fn modelled_comm_notes(model: &ServedModel) -> Vec<String> {
    model
        .target()
        .comm_notes()
        .iter()
        .filter(|n| n.contains("modelled, not measured"))
        .cloned()
        .collect()
}

/// A predicted step's breakdown, its length in ms, and each quantity's predicted figure.
type Predicted = (TimeBreakdown, f64, Box<dyn Fn(Quantity) -> f64>);

/// What one figure of the record would read: a bench_serving run replayed, or an
/// llm_decode_bench cell's steady decode (streams sharing one cached context where they do).
fn predicted_value(
    e: &Expressed,
    engine: Engine,
    spec: &ModelSpec,
    model: &ServedModel,
    server: &crate::options::ServerOptions,
    notes: &mut Vec<String>,
) -> Result<Predicted, String> {
    Ok(match (&e.family, &e.workload) {
        (MetricFamily::BenchServing, Some(w)) => {
            let run = simulate(model, server, w).map_err(|x| x.to_string())?;
            let b = run.breakdown;
            let step = b.decode_s / (b.decode_batches.max(1) as f64) * 1e3;
            (
                b.cost_parts,
                step,
                Box::new(move |q| serving_value(&run, q)),
            )
        }
        _ => {
            let holding = shared_context::holding_of(e, engine, spec, model, notes);
            let sd = model.steady_decode_held(e.concurrency, e.context_tokens, holding);
            if sd.running < e.concurrency {
                notes.push(format!(
                    "only {} of {} streams fit the KV pool at this context",
                    sd.running, e.concurrency
                ));
            }
            let tok = sd.tok_per_s;
            (
                sd.iteration.breakdown,
                sd.cycle_s * 1e3,
                Box::new(move |q| match q {
                    Quantity::OutputTokPerS => tok,
                    _ => f64::NAN,
                }),
            )
        }
    })
}

/// The regime a record's prediction falls in, for its 80% interval: engine, model, where the
/// acceptance came from, bands, machine and its kind, P2P state and the extrapolation flags its
/// notes raise.
fn regime_of(
    e: &Expressed,
    (engine, spec): (Engine, &models::ModelSpec),
    machine: &Machine,
    model: &ServedModel,
    notes: &[String],
    speculation: Option<SpecUsed>,
    origin: &RecordOrigin,
) -> Regime {
    let (machine_box, machine_kind, p2p) = machine_levels(machine);
    Regime {
        engine: engine.name().to_string(),
        model: e.model.clone(),
        model_family: crate::uncertainty::novelty::model_family(&e.model),
        attention: crate::uncertainty::novelty::attention_kind(spec),
        moe_shape: crate::uncertainty::novelty::moe_shape(spec),
        speculation: speculation.map_or("off".into(), |s| s.accept.name().to_string()),
        context: context_band(e.context_tokens).to_string(),
        concurrency: band(e.concurrency).to_string(),
        machine: machine_box,
        machine_kind,
        p2p,
        family: e.family.name().to_string(),
        flags: Flag::from_notes(
            notes
                .iter()
                .chain(model.target().memory_notes())
                .chain([&model
                    .target()
                    .decode_attention_note(e.concurrency, e.context_tokens)]),
        ),
        source: origin.source.clone(),
        calibrated_sigma_ln: None,
    }
}

/// The part of `m` a server of `layout` runs on: its first GPUs when the layout takes fewer than
/// the box has (where SGLang and vLLM start it, [`Machine::first_gpus`]), else all of it.
pub(crate) fn server_gpus(m: &Machine, layout: models::Layout) -> crate::error::Result<Machine> {
    let n = layout.gpus();
    if n < m.gpu_count {
        m.first_gpus(n)
    } else {
        Ok(m.clone())
    }
}

/// The speculation `model` runs for record `e`, with a note saying how it was set.
fn speculation_of(
    e: &Expressed,
    (spec, model, server): (
        &models::ModelSpec,
        &ServedModel,
        &crate::options::ServerOptions,
    ),
    notes: &mut Vec<String>,
) -> Option<SpecUsed> {
    let (s, plan) = (e.speculation.as_ref()?, model.spec_plan()?);
    notes.extend(
        server
            .engine
            .rules()
            .spec_caveat(spec, server)
            .map(str::to_string),
    );
    let (prior, pooled);
    notes.push(format!(
        "draft: {}; acceptance length {:.2} ({})",
        s.draft,
        plan.accept_length,
        match s.accept {
            AcceptOrigin::Measured => match &s.pooled {
                Some(p) => {
                    pooled = format!("measured by the source: {p}");
                    pooled.as_str()
                }
                None => "measured by the source",
            },
            AcceptOrigin::PublishedRange =>
                "the middle of the range the source published for these runs, not this run's own",
            AcceptOrigin::Assumed => {
                prior = format!("the source gives none: the {}", plan.accept_from);
                prior.as_str()
            }
        }
    ));
    Some(SpecUsed {
        accept_length: plan.accept_length,
        accept: s.accept,
        num_draft_tokens: plan.num_draft_tokens,
    })
}

/// A quantity of a simulated bench_serving run.
fn serving_value(r: &RunReport, q: Quantity) -> f64 {
    match q {
        Quantity::OutputTokPerS => r.output_throughput,
        Quantity::TotalTokPerS => r.total_throughput,
        Quantity::ItlMeanMs => r.mean_itl_ms,
        Quantity::TpotMeanMs => r.mean_tpot_ms,
        Quantity::TtftMeanMs => r.mean_ttft_ms,
        Quantity::TpotMedianMs => r.median_tpot_ms,
        Quantity::TtftMedianMs => r.median_ttft_ms,
    }
}

/// Statistics, worst records and reason counts.
fn finish(
    set: &RecordSet,
    opts: &ScoreOptions,
    mut comparisons: Vec<RecordComparison>,
    mut unexpressible: Vec<Unexpressed>,
) -> Scoreboard {
    // a prediction that came out non-finite is a bug upstream; keep it visible, not in the stats
    comparisons.retain(|c| c.predicted.is_finite() && c.measured > 0.0);
    let order: HashMap<&str, usize> = set
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    comparisons.sort_by_key(|c| (order.get(c.id.as_str()).copied(), c.quantity));
    unexpressible.sort_by_key(|u| order.get(u.id.as_str()).copied());
    let counted: Vec<&RecordComparison> = comparisons.iter().filter(|c| !c.flagged).collect();
    let primary: Vec<&RecordComparison> = counted.iter().copied().filter(|c| c.primary).collect();
    let errs: Vec<f64> = primary.iter().map(|c| c.error_pct).collect();
    let mut worst: Vec<RecordComparison> = primary.iter().map(|c| (*c).clone()).collect();
    worst.sort_by(|a, b| b.error_pct.abs().total_cmp(&a.error_pct.abs()));
    worst.truncate(WORST_SHOWN);
    let mut expressible: Vec<&str> = comparisons.iter().map(|c| c.id.as_str()).collect();
    expressible.dedup();
    let simulated_as: BTreeSet<(&str, &str)> = comparisons
        .iter()
        .map(|c| (c.id.as_str(), c.engine.name()))
        .collect();
    let mut engines: BTreeMap<String, usize> = BTreeMap::new();
    for (_, e) in simulated_as {
        *engines.entry(e.to_string()).or_default() += 1;
    }
    let mut reasons: Vec<ReasonCount> = Vec::new();
    for u in &unexpressible {
        match reasons.iter_mut().find(|r| r.reason == u.reason) {
            Some(r) => r.count += 1,
            None => reasons.push(ReasonCount {
                reason: u.reason,
                count: 1,
                example: u
                    .reasons
                    .first()
                    .map_or(String::new(), |x| x.detail.clone()),
            }),
        }
    }
    reasons.sort_by(|a, b| b.count.cmp(&a.count).then(a.reason.cmp(&b.reason)));
    let intervals = intervals(
        set,
        &headline_residuals_of(&comparisons),
        &first_token_residuals_of(&comparisons),
    );
    Scoreboard {
        schema_version: SCOREBOARD_SCHEMA_VERSION,
        records_file: set.path.display().to_string(),
        engine: opts
            .engine
            .map_or("each record's own".to_string(), |e| e.name().to_string()),
        engines,
        records: set.records.len() + set.unreadable.len(),
        expressible: expressible.len(),
        summary: Stats::of(&errs),
        families: groups(
            &primary,
            GroupBy {
                model: true,
                band: false,
            },
        ),
        speculation: by_speculation(&primary),
        bands: groups(
            &primary,
            GroupBy {
                model: false,
                band: true,
            },
        ),
        groups: groups(
            &counted,
            GroupBy {
                model: true,
                band: true,
            },
        ),
        worst,
        comparisons,
        unexpressible,
        reasons,
        intervals,
    }
}

/// The headline comparisons as the error model's residuals.
pub fn residuals(primary: &[&RecordComparison]) -> Vec<Residual> {
    primary
        .iter()
        .map(|c| Residual {
            id: c.id.clone(),
            source: c.source.clone(),
            regime: c.regime.clone(),
            predicted: c.predicted,
            measured: c.measured,
            higher_is_faster: c.quantity.higher_is_faster(),
            group: c.comparison_group.clone(),
        })
        .collect()
}

/// A records file the cost model was never tuned on, as the error model's first contact
/// (`sim validate --first-contact`): its headline residuals scored as the file is, its MTP-on
/// records at the prior (these sources published no acceptance file).
pub fn first_contact_set(
    set: &RecordSet,
    file: &str,
) -> crate::uncertainty::error_fit::FirstContactSet {
    let board = score_with(
        set,
        &ScoreOptions::default(),
        &MeasuredAcceptance::default(),
    );
    crate::uncertainty::error_fit::FirstContactSet {
        file: file.to_string(),
        residuals: headline_residuals(&board),
        first_token: first_token_residuals(&board),
    }
}

/// What kind of figure a quantity is, for its interval: a time to first token has a ground of
/// its own ([`crate::uncertainty::FirstTokenGround`]).
pub fn figure_kind(q: Quantity) -> FigureKind {
    match q {
        Quantity::TtftMeanMs | Quantity::TtftMedianMs => FigureKind::FirstToken,
        q if q.higher_is_faster() => FigureKind::Throughput,
        _ => FigureKind::Latency,
    }
}

/// A scoreboard's time-to-first-token figures (mean or median, headline or not, flagged ones
/// left out), which the error model's first-token ground is fitted on.
pub fn first_token_residuals(b: &Scoreboard) -> Vec<Residual> {
    first_token_residuals_of(&b.comparisons)
}

/// The headline residuals of a scoreboard (one per record, flagged figures left out; a
/// headline time to first token is on its own ground: [`first_token_residuals`]).
pub fn headline_residuals(b: &Scoreboard) -> Vec<Residual> {
    headline_residuals_of(&b.comparisons)
}

/// [`first_token_residuals`] of `cs`.
fn first_token_residuals_of(cs: &[RecordComparison]) -> Vec<Residual> {
    residuals_where(cs, |c| figure_kind(c.quantity) == FigureKind::FirstToken)
}

/// [`headline_residuals`] of `cs`.
fn headline_residuals_of(cs: &[RecordComparison]) -> Vec<Residual> {
    residuals_where(cs, |c| {
        c.primary && figure_kind(c.quantity) != FigureKind::FirstToken
    })
}

/// The residuals of the unflagged comparisons of `cs` that `keep`.
fn residuals_where(
    cs: &[RecordComparison],
    keep: impl Fn(&RecordComparison) -> bool,
) -> Vec<Residual> {
    let kept: Vec<&RecordComparison> = cs.iter().filter(|c| !c.flagged && keep(c)).collect();
    residuals(&kept)
}

/// Coverage and verdicts of the stored error model on `rs`; refitted leaving one source out only
/// where `set` is the file the model was fitted on (a held-out file is never fitted).
fn intervals(set: &RecordSet, rs: &[Residual], first_token: &[Residual]) -> Intervals {
    let m = ErrorModel::builtin();
    let refs: Vec<&Residual> = rs.iter().collect();
    let fitted_on = m.provenance.records_file.clone();
    let in_fit = set.path.ends_with(&fitted_on);
    let first_contact = m
        .first_contact
        .as_ref()
        .is_some_and(|f| f.files.iter().any(|file| set.path.ends_with(file)));
    let (loso, loso_verdicts) = in_fit.then(|| loso_check(&refs)).unzip();
    let ground_of = |r: &Residual| {
        if !m.novelties(&r.regime).is_empty() {
            "novel"
        } else if m.new_source(&r.regime).is_some() {
            "new source"
        } else {
            "dev ground"
        }
    };
    let split = |grounds: &[&str], of_ground: &dyn Fn(&Residual) -> &'static str| {
        grounds
            .iter()
            .filter_map(|&g| {
                let of: Vec<&Residual> =
                    refs.iter().copied().filter(|r| of_ground(r) == g).collect();
                (!of.is_empty()).then(|| GroundCoverage {
                    ground: g.to_string(),
                    coverage: coverage(m, &of),
                })
            })
            .collect::<Vec<_>>()
    };
    let by_ground = split(&["dev ground", "new source", "novel"], &ground_of);
    let by_first_contact_ground = split(&crate::uncertainty::FIRST_CONTACT_GROUNDS, &|r| {
        crate::uncertainty::first_contact_ground(&r.regime)
    });
    Intervals {
        by_ground,
        by_first_contact_ground,
        fitted_on,
        in_fit,
        first_contact,
        coverage: coverage(m, &refs),
        first_token: (!first_token.is_empty()).then(|| {
            crate::uncertainty::error_fit::first_token_coverage(
                m,
                &first_token.iter().collect::<Vec<_>>(),
            )
        }),
        loso,
        verdicts: check_pairs(m, &refs),
        loso_verdicts,
    }
}

/// The non-zero parts of `b` as shares of its total, largest first (`weights 61%, all-reduce
/// 38%`).
pub fn breakdown_shares(b: &TimeBreakdown) -> String {
    let total = b.total_s();
    if total <= 0.0 {
        return "-".into();
    }
    b.largest_parts(0.005)
        .iter()
        .map(|(k, x)| format!("{k} {:.0}%", x / total * 100.0))
        .collect::<Vec<_>>()
        .join(", ")
}
