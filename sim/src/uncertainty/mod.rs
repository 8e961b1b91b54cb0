//! How far to trust one prediction: an 80% interval from an error model measured on public
//! data, by regime ([`ErrorModel`]), and verdicts between two predictions only as sure as their
//! intervals allow ([`verdict`]).
//!
//! The model is a table of log-ratio spreads. A residual is `ln(measured / predicted)` of a
//! throughput (for a latency `ln(predicted / measured)`, so positive always means "faster than
//! predicted"). For every level of every regime factor (engine, model, speculation and where the
//! acceptance came from, context band, concurrency band, machine, metric family, and the
//! extrapolation flags the cost model raises) the table keeps the residuals' 10th and 90th
//! percentiles when at least [`MIN_CELL`] headline figures fall in it; a cell's spread is read as
//! a sigma (half the central 80% over [`Z_80`]). The independent parts of a prediction's error
//! combine as variances add (in quadrature on the log scale), never as widths stack:
//! - the regime's own spread: the mean of the variances of the factor cells its regime falls in
//!   (each cell is one estimate of how spread such figures are; the mean, not the widest, since
//!   the widest of nine estimates is biased wide), centred on the mean of their centres (bias);
//! - each extrapolation flag: what its cell's variance adds over all residuals' (nothing where
//!   the dev residuals show the flag does not matter);
//! - each factor level or flag the table has not seen: [`ErrorModel::unseen_sigma_ln`]², measured
//!   out of sample;
//! - a new source (a box, model or page the dev set lacks): the between-source variance
//!   ([`BetweenSource`]), with the spreads inside one source in place of the pooled ones (never
//!   narrower than the pooled spread of the dev set's own sources).
//! - each dimension along which the prediction is off the dev set's ground (a model family, an
//!   engine × family pair, an attention kind, an MoE shape, a machine kind, or a band of its
//!   family no dev record ran): that dimension's sigma², measured by leaving the dev set's groups
//!   of it out whole, or a stated prior where none can be ([`novelty`]).
//! - a time to first token (never a headline figure): its regime's interval moved and widened
//!   on a ground of its own ([`FirstTokenGround`], [`ErrorModel::ln_interval_of`]), since the
//!   replay leaves out the time before a real server starts and returns a prefill.
//!
//! The 80% interval is the centre ± z · sigma: on the dev set's own ground z is [`Z_80`] (the
//! cells' own 10th–90th percentiles); for a new source z is [`ErrorModel::quantile_z`], the
//! smallest for which the dev set's leave-one-source-out coverage (every held-out page a new
//! source) reaches 80% ([`fit`]).
//!
//! The stored table (`validation/error-model.json`) is fitted on `validation/public-records.json`
//! only (the dev set); `validation/further-records.json` and `validation/glm52-records.json` are
//! held out and never used to fit it (they are only scored against it). `sim validate --records validation/public-records.json --acceptance …
//! --fit-error-model validation/error-model.json` regenerates it; `sim/tests/error_model.rs`
//! fails when it is stale.

pub mod error_fit;
pub mod novelty;
pub mod verdict;

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The interval's coverage: 80% of measurements should fall inside.
pub const INTERVAL_LEVEL: f64 = 0.8;
/// Headline figures a cell needs before its percentiles are used (fewer: the level counts as
/// unseen). Eight is the fewest for which the 10th and 90th percentiles are not the extremes.
pub const MIN_CELL: usize = 8;
/// Schema version of [`ErrorModel`].
pub const ERROR_MODEL_SCHEMA_VERSION: u32 = 3;
/// z of the 90th percentile of a standard normal: an 80% half-width over this is one sigma.
pub const Z_80: f64 = 1.281_551_565_544_600_4;
/// z of the 75th percentile of a standard normal: the median of |z|.
pub const Z_50: f64 = 0.674_489_750_196_081_7;

/// The regime factors a residual is split by, in the order the table lists them.
pub const FACTORS: [&str; 9] = [
    "engine",
    "model",
    "speculation",
    "context",
    "concurrency",
    "machine",
    "machine kind",
    "p2p",
    "family",
];

/// The factors whose unseen level makes a prediction one of a source the dev set does not have
/// (another box, another model's kernels): it takes the between-source spread once
/// ([`BetweenSource`]), not a width per level.
pub const SOURCE_FACTORS: [&str; 2] = ["machine", "model"];

/// What a prediction is, as the error model splits residuals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    /// `sglang` or `vllm`.
    pub engine: String,
    /// Model preset.
    pub model: String,
    /// The model's family ([`novelty::model_family`]: `kimi`, `glm`, `qwen`, …).
    #[serde(default)]
    pub model_family: String,
    /// The model's attention kind ([`novelty::attention_kind`]: `mla`, `mla+dsa`, `gqa+linear`, …).
    #[serde(default)]
    pub attention: String,
    /// The model's MoE shape ([`novelty::moe_shape`]: `384 experts top-8`, `dense`).
    #[serde(default)]
    pub moe_shape: String,
    /// `off`, or where the acceptance length came from: `measured`, `published range`, `prior`
    /// (the published prior for the draft method and prompt kind, [`crate::acceptance::prior`]).
    pub speculation: String,
    /// Context band ([`context_band`]).
    pub context: String,
    /// Concurrency band (`1`, `2`, `3-8`, `9-32`, `33+`).
    pub concurrency: String,
    /// The box: a machine preset's or profile's name, a preset's P2P or NCCL set-up variant
    /// folded into the preset it varies ([`crate::presets::box_of`]; the set-up is the records'
    /// own and the P2P state the `p2p` factor's).
    pub machine: String,
    /// How the machine is known ([`machine_kind`]): `probe profile`, `preset measured` or
    /// `preset synthesized`.
    #[serde(default)]
    pub machine_kind: String,
    /// The machine's P2P state (`real`, `off`, `routed`; `unknown` where nothing says).
    #[serde(default)]
    pub p2p: String,
    /// How the figure is measured: `llm_decode_bench` (steady decode) or `bench_serving`.
    pub family: String,
    /// Extrapolation flags ([`Flag`] names).
    pub flags: Vec<String>,
    /// The page or box a records comparison came from; empty for a prediction of the user's own
    /// (`run`, `predict`, `advise`), which counts as a new source only where its machine or
    /// model is not one the dev set has.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// For a prediction on the machine and model a calibration was fitted on (`--calibration`):
    /// that calibration's out-of-sample spread ([`crate::calibrate::Calibration::out_of_sample_rms_ln`]),
    /// which replaces a new source's first-contact spread: the box's own offset is what the
    /// calibration measured and fitted away, and what is left is what its held-out figures show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated_sigma_ln: Option<f64>,
}

/// How a machine is known: `probe profile` (measured on the box by `probe run`), `preset
/// measured` (a preset whose collective curves are a published measurement of that box) or
/// `preset synthesized` (curves modelled from published figures, taken from another box, or
/// put in another P2P state by `sim::p2p_variant`).
pub fn machine_kind(profile: &models::profile::MachineProfile) -> &'static str {
    let notes = &profile.provenance.notes;
    if profile.provenance.tool != "preset" {
        "probe profile"
    } else if notes
        .iter()
        .any(|n| n.starts_with("Collective curves are the measured"))
        && !notes.iter().any(|n| n.contains("on the changed pairs"))
    {
        "preset measured"
    } else {
        "preset synthesized"
    }
}

/// A machine's levels in a regime: (`machine`, `machine_kind`, `p2p`) — its box
/// ([`crate::presets::box_of`]), how it is known ([`machine_kind`]) and its P2P state
/// ([`p2p_level`]). Every regime takes them from here, so none keys on a set-up variant's name.
pub fn machine_levels(machine: &crate::machine::Machine) -> (String, String, String) {
    (
        crate::presets::box_of(machine.name()).to_string(),
        machine_kind(&machine.profile).to_string(),
        p2p_level(&machine.profile),
    )
}

/// The machine's P2P state as the error model splits by it.
pub fn p2p_level(profile: &models::profile::MachineProfile) -> String {
    profile
        .p2p_state()
        .map_or_else(|| "unknown".to_string(), |s| s.to_string())
}

/// What a prediction is asked for: how it is measured and at what load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// `llm_decode_bench` (a steady decode) or `bench_serving` (a simulated run).
    pub family: &'static str,
    pub concurrency: u32,
    pub context_tokens: u32,
}

impl Regime {
    /// The regime of a prediction of `spec` on `machine` under `opts` (the engine its tag
    /// names); with a `layout` the MoE slice it gives each GPU is checked against the measured
    /// ones; `notes` (the scenario's own) and the machine's raise the other flags.
    pub fn of(
        machine: &crate::machine::Machine,
        spec: &models::ModelSpec,
        opts: &crate::options::ServerOptions,
        layout: Option<models::Layout>,
        load: Load,
        notes: &[String],
    ) -> Regime {
        let mut shape: Vec<String> = Vec::new();
        // what prices the routed experts (their own table rows, or an extrapolated curve) and
        // decode attention (a kernel table or the efficiency curve) at this load
        if let Some(l) = layout {
            let knobs = crate::cost::Knobs::default();
            match crate::cost::CostModel::new(machine, spec, l, opts, knobs) {
                Ok(cm) => {
                    shape.extend(cm.moe_note(&machine.gpu, spec));
                    shape.push(cm.decode_attention_note(load.concurrency, load.context_tokens));
                }
                Err(_) => shape.extend(crate::cost::moe::shape_note(&machine.gpu, spec, &l)),
            }
        }
        let speculation = match &opts.speculative {
            None => "off",
            Some(s) if s.accept_length.is_some() => "measured",
            Some(_) => "prior",
        };
        // a speculative step the engine's public runs say is not priced is this prediction's
        // too, whichever path asks (a record, a launch line, a sweep): one ground for all
        let caveat: Option<String> = opts
            .speculative
            .as_ref()
            .and_then(|_| opts.engine.rules().spec_caveat(spec, opts))
            .map(str::to_string);
        let (machine_box, machine_kind, p2p) = machine_levels(machine);
        Regime {
            engine: opts.engine.name().into(),
            model: spec.name.clone(),
            model_family: novelty::model_family(&spec.name),
            attention: novelty::attention_kind(spec),
            moe_shape: novelty::moe_shape(spec),
            speculation: speculation.into(),
            context: context_band(load.context_tokens).into(),
            concurrency: concurrency_band(load.concurrency).into(),
            machine: machine_box,
            machine_kind,
            p2p,
            family: load.family.into(),
            flags: Flag::from_notes(
                notes
                    .iter()
                    .chain(machine.notes())
                    .chain(&shape)
                    .chain(&caveat),
            ),
            source: String::new(),
            calibrated_sigma_ln: None,
        }
    }

    /// The same regime at another concurrency.
    pub fn at_concurrency(&self, concurrency: u32) -> Regime {
        Regime {
            concurrency: concurrency_band(concurrency).into(),
            ..self.clone()
        }
    }

    /// The level of factor `f` (one of [`FACTORS`]).
    pub fn level(&self, f: &str) -> &str {
        match f {
            "engine" => &self.engine,
            "model" => &self.model,
            "speculation" => &self.speculation,
            "context" => &self.context,
            "concurrency" => &self.concurrency,
            "machine" => &self.machine,
            "machine kind" => &self.machine_kind,
            "p2p" => &self.p2p,
            _ => &self.family,
        }
    }
}

/// One predicted-vs-measured headline figure, as the error model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Residual {
    pub id: String,
    /// The page or box it came from (the record's `source` up to its table and row).
    pub source: String,
    pub regime: Regime,
    pub predicted: f64,
    pub measured: f64,
    /// A throughput (higher is faster); else a latency.
    pub higher_is_faster: bool,
    /// The record's comparison group (same box, model and load; one choice different).
    pub group: Option<String>,
}

impl Residual {
    /// ln(measured / predicted), read so that positive is faster than predicted.
    pub fn ln(&self) -> f64 {
        let r = (self.measured / self.predicted).ln();
        if self.higher_is_faster { r } else { -r }
    }
}

/// Where a prediction leaves the ground the cost model was measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// The MoE expert slice per GPU lies outside the slices the kernel tables measured.
    MoeSliceExtrapolated,
    /// The record does not say whether P2P was on; the machine's P2P state is assumed.
    P2pAssumed,
    /// A machine figure (launch floor, host path, …) is assumed, not measured.
    MachineFigureAssumed,
    /// Decode attention priced by the efficiency curve: no measured kernel table for the
    /// engine's backend, GPU and shape (the cost model's decode-attention note).
    AttentionWithoutKernelData,
    /// Decode attention priced from a measured table past its rows: beyond the longest context
    /// or the largest batch it measured (the table's note says which), where the kernel's
    /// growth is the last segment's carried on, not a measurement.
    AttentionExtrapolated,
    /// The engine's speculative step is known from public runs to cost what the cost model does
    /// not price (the engine's own caveat, [`crate::engine::ServingEngine::spec_caveat`]).
    SpeculativeStepUnpriced,
    /// The same under decode context parallelism: public runs measured the speculative step
    /// under DCP dearer than priced ([`crate::engine::ServingEngine::dcp_spec_caveats`]), a cause
    /// whose error is measured apart from the other unpriced steps'.
    SpeculativeStepUnderDcpUnpriced,
}

impl Flag {
    pub fn name(self) -> &'static str {
        match self {
            Flag::MoeSliceExtrapolated => "moe-slice-extrapolated",
            Flag::P2pAssumed => "p2p-assumed",
            Flag::MachineFigureAssumed => "machine-figure-assumed",
            Flag::AttentionWithoutKernelData => "attention-without-kernel-data",
            Flag::AttentionExtrapolated => "attention-extrapolated",
            Flag::SpeculativeStepUnpriced => "speculative-step-unpriced",
            Flag::SpeculativeStepUnderDcpUnpriced => "speculative-step-under-dcp-unpriced",
        }
    }

    /// The flag an engine's speculative-step caveat raises (the one under DCP its own), `None`
    /// where `note` is not one.
    pub fn of_spec_caveat(note: &str) -> Option<Flag> {
        if crate::engine::is_dcp_spec_caveat(note) {
            Some(Flag::SpeculativeStepUnderDcpUnpriced)
        } else if crate::engine::is_spec_caveat(note) {
            Some(Flag::SpeculativeStepUnpriced)
        } else {
            None
        }
    }

    /// The flags of a speculative step left unpriced, one per cause.
    pub const UNPRICED_STEPS: [Flag; 2] = [
        Flag::SpeculativeStepUnpriced,
        Flag::SpeculativeStepUnderDcpUnpriced,
    ];

    /// The flags a prediction's notes raise (the cost model's and the record mapping's own
    /// wording: one place reads them so a reworded note shows here as a failing test).
    pub fn from_notes<'a>(notes: impl IntoIterator<Item = &'a String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in notes {
            let f = if n.starts_with("MoE efficiency extrapolated") {
                Flag::MoeSliceExtrapolated
            } else if n.contains("P2P assumed") {
                Flag::P2pAssumed
            } else if n.starts_with("assumed") && n.contains("not measured") {
                Flag::MachineFigureAssumed
            } else if n.starts_with("decode attention: efficiency curve") {
                Flag::AttentionWithoutKernelData
            } else if n.starts_with("decode attention:")
                && (n.contains(super::cost::decode_table::Basis::ContextExtrapolated.describe())
                    || n.contains(super::cost::decode_table::Basis::BatchExtrapolated.describe()))
            {
                Flag::AttentionExtrapolated
            } else if let Some(f) = Flag::of_spec_caveat(n) {
                f
            } else {
                continue;
            };
            if !out.iter().any(|x| x == f.name()) {
                out.push(f.name().to_string());
            }
        }
        out
    }
}

/// The flags that mark a kernel priced outside its measured shapes (an MoE slice the tables lack,
/// decode attention without a kernel table): a prediction carrying one stands on extrapolated
/// kernels, whose error on sources never tuned on is measured apart ([`FirstContactGround`]).
/// P2P and machine flags are the machine's, not a kernel's: they stay out.
pub const KERNEL_FLAGS: [Flag; 3] = [
    Flag::MoeSliceExtrapolated,
    Flag::AttentionWithoutKernelData,
    Flag::AttentionExtrapolated,
];

/// The grounds a first-contact spread is fitted on, in order: every kernel on a measured table or
/// shape or at least one extrapolated ([`KERNEL_FLAGS`]), each with the speculative acceptance
/// measured or published (or no speculation) or only the published prior for the draft method and
/// prompt kind (the regime's speculation `prior`), which on a source never seen is a second
/// unknown as large as the kernels'. Last, a speculative step the engine says is not priced
/// ([`Flag::SpeculativeStepUnpriced`]), on whichever of the others, and the one it says is not
/// priced under decode context parallelism ([`Flag::SpeculativeStepUnderDcpUnpriced`]): a cause
/// of its own (the DCP group's steps, not a kernel's), whose figures sit further below the
/// others' than the rest of the unpriced steps' do, so its error is measured apart; each stacks
/// on all the kernel and acceptance grounds ([`ground_stacks_on`]).
pub const FIRST_CONTACT_GROUNDS: [&str; 6] = [
    "kernels measured",
    "kernels measured, acceptance a prior",
    "kernels extrapolated",
    "kernels extrapolated, acceptance a prior",
    "speculative step unpriced",
    "speculative step under DCP unpriced",
];

/// Index in [`FIRST_CONTACT_GROUNDS`] of the unpriced speculative step.
pub(crate) const SPEC_UNPRICED_GROUND: usize = 4;
/// Index in [`FIRST_CONTACT_GROUNDS`] of the unpriced speculative step under DCP.
pub(crate) const SPEC_DCP_UNPRICED_GROUND: usize = 5;

/// Whether ground `i` of [`FIRST_CONTACT_GROUNDS`] is an unpriced speculative step's (its error
/// has a sign: the step costs more than priced, never less).
pub(crate) fn unpriced_ground(i: usize) -> bool {
    i == SPEC_UNPRICED_GROUND || i == SPEC_DCP_UNPRICED_GROUND
}

/// The first-contact ground of `regime` (one of [`FIRST_CONTACT_GROUNDS`]).
pub fn first_contact_ground(regime: &Regime) -> &'static str {
    let has = |f: Flag| regime.flags.iter().any(|x| x == f.name());
    if has(Flag::SpeculativeStepUnderDcpUnpriced) {
        return FIRST_CONTACT_GROUNDS[SPEC_DCP_UNPRICED_GROUND];
    }
    if has(Flag::SpeculativeStepUnpriced) {
        return FIRST_CONTACT_GROUNDS[SPEC_UNPRICED_GROUND];
    }
    let extrapolated = KERNEL_FLAGS.iter().any(|&k| has(k));
    let prior = regime.speculation == crate::records::speculation::AcceptOrigin::Assumed.name();
    FIRST_CONTACT_GROUNDS[2 * usize::from(extrapolated) + usize::from(prior)]
}

/// Whether ground `i` of [`FIRST_CONTACT_GROUNDS`] adds a flag to ground `j` (so its interval is
/// never narrower): the four kernels × acceptance grounds by their bits (2 = kernels
/// extrapolated, 1 = acceptance a prior), each unpriced speculative step on top of every one of
/// those (the two unpriced causes are not stacked on each other: one step has one caveat).
pub fn ground_stacks_on(i: usize, j: usize) -> bool {
    i != j && !unpriced_ground(j) && (unpriced_ground(i) || j & i == j)
}

/// Concurrency bands the scoreboard groups by and the error model splits residuals by: 1, 2,
/// 3–8, 9–32, 33+.
pub const BANDS: [(u32, u32, &str); 5] = [
    (1, 1, "1"),
    (2, 2, "2"),
    (3, 8, "3-8"),
    (9, 32, "9-32"),
    (33, u32::MAX, "33+"),
];

/// The band of a concurrency.
pub fn concurrency_band(concurrency: u32) -> &'static str {
    BANDS
        .iter()
        .find(|(lo, hi, _)| (*lo..=*hi).contains(&concurrency))
        .map_or("33+", |b| b.2)
}

/// The context band of a cached context or prompt length: `0`, `1-8K`, `8K-64K`, `64K+`.
pub fn context_band(tokens: u32) -> &'static str {
    match tokens {
        0 => "0",
        1..=8192 => "1-8K",
        8193..=65536 => "8K-64K",
        _ => "64K+",
    }
}

/// Residuals of one cell: where the central 80% of `ln(measured / predicted)` lies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// One of [`FACTORS`], `flag`, or `all`.
    pub factor: String,
    pub level: String,
    /// Headline figures in the cell.
    pub n: usize,
    /// Sources (pages, boxes) they come from.
    pub sources: usize,
    /// Median residual.
    pub median_ln: f64,
    /// 10th percentile of the residuals.
    pub lo_ln: f64,
    /// 90th percentile of the residuals.
    pub hi_ln: f64,
    /// 10th and 90th percentiles of the residuals less their own source's median: the spread
    /// inside one page or box, which a new source's offset ([`BetweenSource`]) comes on top of.
    pub within_lo_ln: f64,
    pub within_hi_ln: f64,
}

impl Cell {
    /// Half the width of the central 80%, in ln.
    pub fn half_ln(&self) -> f64 {
        (self.hi_ln - self.lo_ln) / 2.0
    }

    /// Half the width of the central 80% inside one source, in ln.
    pub fn within_half_ln(&self) -> f64 {
        (self.within_hi_ln - self.within_lo_ln) / 2.0
    }

    /// `engine vllm (n 229)`.
    pub fn describe(&self) -> String {
        if self.factor == "all" {
            format!("all residuals (n {})", self.n)
        } else {
            format!("{} {} (n {})", self.factor, self.level, self.n)
        }
    }
}

/// How the stored table was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The records file whose residuals were fitted (never `further-records.json`).
    pub records_file: String,
    /// The acceptance files its MTP-on records were scored with.
    pub acceptance: Vec<String>,
    /// The command that regenerates the table.
    pub command: String,
    /// Headline figures and their sources (pages or boxes).
    pub residuals: usize,
    pub sources: Vec<String>,
}

/// Coverage of the 80% interval over a set of comparisons.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub n: usize,
    /// Share of measurements inside their interval, percent.
    pub coverage_pct: f64,
    /// Median of (hi − lo) / 2 / predicted, percent.
    pub median_half_width_pct: f64,
}

impl Coverage {
    /// How many of the `n` measurements were inside (the share is what is stored).
    pub fn inside(&self) -> usize {
        (self.coverage_pct / 100.0 * self.n as f64).round() as usize
    }
}

/// One dev source's offset: the median residual of its headline figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceOffset {
    pub source: String,
    pub n: usize,
    pub median_ln: f64,
    /// Sampling variance of that median, (π/2)·s²/n (s the source's own spread).
    pub median_var_ln2: f64,
}

/// The error a new source (another page or box) adds: each dev source's median residual is read
/// as one draw from a between-source distribution (a random-effects view). Every source weighs
/// the same whatever its figure count; τ² is the method-of-moments estimate (the variance of the
/// medians less their mean sampling variance). A new source's offset is expected at the median
/// of the sources' medians (robust to one page far off) and spreads about it by
/// σ = √(τ² + (π/2)·var(medians)/k): the sources' own spread plus that centre's sampling
/// variance, bounded to [`BETWEEN_HALF_BOUNDS_LN`] / [`Z_80`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BetweenSource {
    pub sources: Vec<SourceOffset>,
    /// Median of the sources' medians: the expected offset of a new source.
    pub centre_ln: f64,
    /// σ_between (τ).
    pub tau_ln: f64,
    /// The sigma a new source's offset adds (ln), in quadrature with the spread inside one
    /// source.
    pub sigma_ln: f64,
    /// What the figures are and what pinned them.
    pub method: String,
}

/// Sources the cost model was never tuned on, scored by the build that fitted the table: their
/// offsets are what a source the dev set lacks really does (the dev set's own sources, left out
/// one at a time, still had the cost model tuned on them, so their spread understates it). Only
/// the between-source spread is taken from them; the regime table stays the dev set's. Never
/// `further-records.json`, which checks the intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstContact {
    /// The records files, as given to `--first-contact`.
    pub files: Vec<String>,
    /// Their headline figures.
    pub residuals: usize,
    /// Their sources' offsets and spread (the same random-effects estimate as the dev set's).
    /// Its centre, the median of their medians, is where the search for `centre_ln` starts; its
    /// sigma is shown, not used (a few sources of one or two figures far off set it: `sigma_ln`
    /// below is the quantile that covers).
    pub between: BetweenSource,
    /// The offset (ln) a new source's interval is centred on
    /// ([`ErrorModel::new_source_centre_ln`]): of the offsets within the interquartile range of
    /// the sources' medians (where the middle half of the pages sit), in steps of
    /// [`FIRST_CONTACT_STEP_LN`], the one at which the smallest `sigma_ln` covers these figures
    /// at [`INTERVAL_LEVEL`] (the shortest interval that covers: an interval centred where the
    /// sources' medians sit but most figures do not pays width on one side for misses on the
    /// other); ties go to the one nearest the median of the medians. `None` in a model fitted
    /// before it existed: the median of the medians.
    #[serde(default)]
    pub centre_ln: Option<f64>,
    /// The new-source sigma (ln) at which these figures, each a new source to the dev set's
    /// table, are first covered at [`INTERVAL_LEVEL`]: the smallest in steps of
    /// [`FIRST_CONTACT_STEP_LN`] within [`BETWEEN_HALF_BOUNDS_LN`] / [`Z_80`]. A quantile, like
    /// [`ErrorModel::quantile_z`], so a source off by 2× widens it only as far as 80% needs.
    #[serde(default)]
    pub sigma_ln: f64,
    /// Their coverage and median half-width at that sigma (in sample).
    #[serde(default)]
    pub coverage: Coverage,
    /// The same sigma fitted apart on each ground ([`FIRST_CONTACT_GROUNDS`]) that has at least
    /// [`MIN_CELL`] figures of [`FIRST_CONTACT_MIN_SOURCES`] sources: a new source whose kernels
    /// were all measured (the tables' shapes, on their GPU) is off by less than one whose
    /// attention or MoE kernel is extrapolated, and one whose acceptance is measured by less than
    /// one run on the prior. A ground without enough data takes `sigma_ln`; one narrower than it
    /// is pulled toward it by how few sources it has (`error_fit::shrunk_toward_pooled`).
    #[serde(default)]
    pub grounds: Vec<FirstContactGround>,
    /// The spread (ln) a prior acceptance adds to a verdict between a prediction on it and one
    /// not on it (MTP on against off at equal load), from these files' such pairs: the smallest
    /// (in steps of [`FIRST_CONTACT_STEP_LN`]) at which their gain misses, ln(measured gain /
    /// predicted gain) (a gain missed one way on average is a miss too), each over its pair's
    /// own spread with it added, have a standard normal's median |z|; 0 with fewer than
    /// [`MIN_CELL`] pairs. The dev set's MTP runs state their acceptance, so its spreads never
    /// saw this: on the prior, the draft's acceptance on a source is that side's own error.
    #[serde(default)]
    pub acceptance_gain_sigma_ln: f64,
    /// The equal-load pairs that measured it.
    #[serde(default)]
    pub acceptance_gain_pairs: usize,
}

/// The first-contact sigma of one ground.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstContactGround {
    /// One of [`FIRST_CONTACT_GROUNDS`].
    pub ground: String,
    /// Its headline figures and the sources they came from.
    pub residuals: usize,
    pub sources: usize,
    /// The smallest sigma (same search as [`FirstContact::sigma_ln`]) at which its figures are
    /// covered at [`INTERVAL_LEVEL`].
    pub sigma_ln: f64,
    /// Their coverage and median half-width at that sigma (in sample).
    pub coverage: Coverage,
    /// The ground's own centre (ln), where its error has a known sign: an unpriced speculative
    /// step ([`Flag::SpeculativeStepUnpriced`]) leaves out time the step spends, never time it
    /// saves, so its figures sit below the others'. Of the offsets from the pooled
    /// [`FirstContact::centre_ln`] down to the median of this ground's figures, in steps of
    /// [`FIRST_CONTACT_STEP_LN`], the one at which the smallest covering sigma is least (ties to
    /// the pooled centre). `None`: the pooled centre (a ground whose error has no known sign,
    /// or a model fitted before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centre_ln: Option<f64>,
}

/// What an interval is drawn for: a throughput (more is faster), a per-token latency, or a
/// request's time to first token, whose error has a ground of its own ([`FirstTokenGround`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind {
    Throughput,
    Latency,
    FirstToken,
}

impl FigureKind {
    /// A throughput, not a latency: how a residual of it is read.
    pub fn higher_is_faster(self) -> bool {
        matches!(self, FigureKind::Throughput)
    }
}

/// Where a predicted time to first token sits beyond its regime's interval. The replay ends a
/// request's wait for its first token when its prefill batch ends: it leaves out the request's
/// path through the server (HTTP, tokenizer, detokenizer, the client) and whatever in a real run
/// keeps a prefill from starting as soon as the replay's does; each only adds time, so these
/// figures sit on the slow side of their regime's centre, and the headline figures' spreads
/// (throughputs and per-token latencies) never saw it. Fitted on the time-to-first-token
/// figures (mean or median, unflagged) of the dev file and the first-contact files, never on
/// `further-records.json` or first-contact-4…8.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstTokenGround {
    /// The figures that pinned it, and the sources they came from.
    pub residuals: usize,
    pub sources: usize,
    /// Its centre (ln, positive faster), beyond each figure's regime centre: of the offsets from
    /// 0 down to the median of the figures' own offsets, in steps of [`FIRST_CONTACT_STEP_LN`],
    /// the one at which the least `half_ln` covers them at [`INTERVAL_LEVEL`] (ties to the one
    /// nearer 0: the time left out only adds).
    pub centre_ln: f64,
    /// The half-width (ln) it adds in quadrature to the regime's 80% half-width: the least, in
    /// steps of [`FIRST_CONTACT_STEP_LN`], at which [`INTERVAL_LEVEL`] of the figures are
    /// inside, within [`FIRST_TOKEN_HALF_BOUND_LN`].
    pub half_ln: f64,
    /// Their coverage and median half-width at that ground (in sample).
    pub coverage: Coverage,
    /// Each source's figures against the ground fitted on the others (out of sample; sources
    /// whose others are too few to fit one are left out).
    pub loso: Coverage,
}

/// A regime's interval (`centre`, `half`, ln) moved onto a first-token ground of centre `by`
/// and half-width `widen`: the centres add, the half-widths add in quadrature.
pub fn on_first_token_ground(centre: f64, half: f64, by: f64, widen: f64) -> (f64, f64) {
    (centre + by, half.hypot(widen))
}

/// The largest half-width a first-token ground may add: a factor of ten either way (beyond it
/// the figure is not predicted at all, and the fit takes the bound).
pub const FIRST_TOKEN_HALF_BOUND_LN: f64 = std::f64::consts::LN_10;

/// Sources a ground needs before its own first-contact sigma is fitted (fewer: one page
/// far off would set it; the pooled sigma is used).
pub const FIRST_CONTACT_MIN_SOURCES: usize = 3;

/// Step of the first-contact sigma search (ln).
pub const FIRST_CONTACT_STEP_LN: f64 = 0.005;

/// Bounds on a new source's 80% half-width at the nominal quantile ([`BetweenSource::sigma_ln`]
/// · [`Z_80`]): no less than nothing, no more than ln 2 (a factor of two either way, the largest
/// out-of-source error the issue reports for any kind of run); with fewer than three sources (too
/// few to tell a spread from one far page) the upper bound is taken.
pub const BETWEEN_HALF_BOUNDS_LN: [f64; 2] = [0.0, std::f64::consts::LN_2];

/// Bounds on [`ErrorModel::quantile_z`]: an 80% interval is at least ±0.8 sigma of the combined
/// spread and at most ±2 (a normal's 58% and 95%). The lower bound was ±1 until the dev set's
/// leave-one-source-out coverage sat at that bound above the 80% it is fitted to (90.1% at z = 1,
/// seventh session, after the b12x, DCP and NCCL changes): below about 0.8 the dev set's own
/// pooled band (the floor of every new-source interval) sets the coverage alone (85.7% at z = 0.5,
/// 86.1% at 0.8), so the quantile is not identified there and the bound marks where the floor
/// takes over. A new source's spread is fitted at this quantile (first contact), so its intervals
/// keep their width (z·sigma 0.29 ln either way).
pub const QUANTILE_Z_BOUNDS: [f64; 2] = [0.8, 2.0];

/// How correlated two predictions' errors are, for one class of pair: `same source and model`
/// (one page or box, one model and engine: the same kernels and collectives) or `different`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairClass {
    pub class: String,
    /// Equal-load pairs of the dev set that measured it.
    pub pairs: usize,
    /// ρ of their errors beyond the source's offset: the ρ at which the median over the pairs
    /// of |eA − eB| / √(σa² + σb² − 2ρσaσb) is a normal's median |z| (e a residual less its
    /// regime's centre; a median, not a variance, match: the differences are heavy-tailed and
    /// a few far pairs would otherwise set every verdict's width); 0 where fewer than
    /// [`MIN_CELL`] pairs (taken as independent).
    pub correlation: f64,
    /// The median |eA − eB| (ln) of those pairs: what pinned `correlation`.
    #[serde(default)]
    pub median_abs_diff_ln: f64,
}

/// The class names of [`PairClass`].
pub const PAIR_CLASSES: [&str; 2] = ["same source and model", "different"];

/// One fitted figure of the stored model: what it means, its bounds and what pinned it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FittedFigure {
    pub name: String,
    pub value: f64,
    pub meaning: String,
    pub bounds: [f64; 2],
    pub pinned_by: String,
}

/// The error model: the table, the width unseen levels add, and the correlation of two
/// predictions' errors on one box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorModel {
    /// Always [`ERROR_MODEL_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub provenance: Provenance,
    pub level: f64,
    pub min_cell: usize,
    /// All residuals.
    pub base: Cell,
    /// Every factor level and flag with at least `min_cell` residuals.
    pub cells: Vec<Cell>,
    /// What a new source (a machine, model or page the dev set does not have) adds, as the dev
    /// set's own sources spread (leaving one out: sources the cost model was tuned on).
    pub between: BetweenSource,
    /// The same spread over first-contact sources: records files the cost model was never tuned
    /// on, scored as they came ([`FirstContact`]). A user's box is such a source, so a new
    /// source's sigma is the larger of the two ([`ErrorModel::new_source_sigma_ln`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_contact: Option<FirstContact>,
    /// The ground of a predicted time to first token ([`FirstTokenGround`]); `None` in a model
    /// fitted before it existed or on too few such figures: they take their regime's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token: Option<FirstTokenGround>,
    /// Sigma (ln) added in quadrature for each other factor level or flag the table has not
    /// seen (speculation, bands, family, machine kind, P2P state, flags): measured leaving one
    /// source out, from the held-out source's figures whose level was unseen (their spread
    /// about the interval's centre beyond the sigma they got without it).
    pub unseen_sigma_ln: f64,
    /// Held-out figures that measured `unseen_sigma_ln` (fewer than `min_cell`: the base sigma
    /// is used).
    pub unseen_n: usize,
    /// How far from the dev set's ground a prediction may sit, dimension by dimension (model
    /// family, engine × family, attention, MoE shape, machine kind, the family's bands), and the
    /// sigma each novelty adds ([`novelty`]).
    #[serde(default)]
    pub novelty: Vec<novelty::Novelty>,
    /// A new source's 80% interval half-width in sigmas of the combined spread: the smallest (in
    /// steps of 0.01 within [`QUANTILE_Z_BOUNDS`]) for which the leave-one-source-out coverage
    /// of the fitted file reaches [`INTERVAL_LEVEL`] (on the dev set's own ground: [`Z_80`]).
    pub quantile_z: f64,
    /// Correlation of two predictions' errors by class of pair ([`PAIR_CLASSES`]).
    pub pair_classes: Vec<PairClass>,
    /// Leave-one-source-out coverage of the fitted file (each source predicted by the table
    /// fitted on the others, at `quantile_z`).
    pub loso: Coverage,
    /// Every fitted figure above with its meaning, bounds and the data that pinned it.
    pub figures: Vec<FittedFigure>,
}

/// A prediction's 80% interval and what set it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Range {
    /// `[lo, hi]` in the figure's own unit.
    pub range: [f64; 2],
    /// The cell whose spread set the width.
    pub set_by: String,
    /// Flags and unseen levels that widened it.
    pub widened_by: Vec<String>,
}

/// One named figure of a prediction with its 80% interval (`run`, `sweep`, `predict` JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureRange {
    /// bench_serving's key (`output_throughput`, `mean_tpot_ms`, …).
    pub figure: String,
    pub value: f64,
    pub range: [f64; 2],
    /// The error-model cell that set the width, and what widened it.
    pub set_by: String,
    pub widened_by: Vec<String>,
}

/// The interval in ln-space of a regime: centre and half-width of ln(measured/predicted).
#[derive(Debug, Clone, PartialEq)]
pub struct LnInterval {
    pub lo: f64,
    pub hi: f64,
    /// Sigma of the whole error (ln).
    pub sigma: f64,
    /// The quantile it is taken at ([`Z_80`] on the dev set's own ground, else
    /// [`ErrorModel::quantile_z`]).
    pub z: f64,
    /// The least half-width a new source gets: the dev set's own ground's 80% band in this
    /// regime (0 on that ground).
    pub floor_half: f64,
    /// Centre and sigma of the error inside one source (no new source's offset): what two
    /// predictions of one box do not share by the offset.
    pub own_centre: f64,
    pub own_sigma: f64,
    /// How far the new-source centre of this prediction's ground sits from the pooled one
    /// ([`FirstContactGround::centre_ln`]; 0 on the dev set's own ground or a ground without
    /// its own centre): unlike the pooled offset, it is not shared by a prediction on another
    /// ground of the same box, so a verdict between the two counts it.
    pub ground_offset: f64,
    /// The sigma a new source's offset makes (0 on the dev set's own ground): two predictions
    /// of one box share it whole.
    pub source_sigma: f64,
    /// Levels (other than a new machine or model) and flags the table has not seen.
    pub unseen_levels: usize,
    /// The dimensions along which the prediction is novel ([`ErrorModel::novelties`]), each with
    /// its sigma: two predictions novel in the same way share that error whole.
    pub novelties: Vec<(String, f64)>,
    pub set_by: String,
    pub widened_by: Vec<String>,
}

/// The parts of an interval's width in ln, as `validate --records` gives them per comparison:
/// the spread inside one source (or pooled, on the dev set's own ground) in quadrature with a
/// new source's offset, times the quantile, never under the floor.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RangeParts {
    /// Sigma of the regime's own spread (cells, flags, unseen levels).
    pub regime_sigma_ln: f64,
    /// Sigma a new source's offset adds (0 on the dev set's own ground).
    pub source_sigma_ln: f64,
    /// Sigma the prediction's novelties add (model family, engine × family, architecture,
    /// machine kind, bands the dev set lacks; 0 on its ground).
    pub novelty_sigma_ln: f64,
    /// The quantile the combined sigma is taken at.
    pub z: f64,
    /// The least half-width (a new source's: the dev ground's band; else 0).
    pub floor_half_ln: f64,
    /// The half-width: max(z · √(regime² + source²), floor).
    pub half_ln: f64,
}

impl LnInterval {
    /// What the half-width is made of.
    pub fn parts(&self) -> RangeParts {
        let novelty = self.novelty_var().sqrt();
        let regime = (self.sigma.powi(2) - self.source_sigma.powi(2) - novelty.powi(2))
            .max(0.0)
            .sqrt();
        RangeParts {
            regime_sigma_ln: regime,
            source_sigma_ln: self.source_sigma,
            novelty_sigma_ln: novelty,
            z: self.z,
            floor_half_ln: self.floor_half,
            half_ln: self.half(),
        }
    }

    /// The variance the novelties add.
    pub fn novelty_var(&self) -> f64 {
        self.novelties.iter().map(|n| n.1.powi(2)).sum()
    }

    pub fn centre(&self) -> f64 {
        (self.lo + self.hi) / 2.0
    }
    pub fn half(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }
}

/// A regime's spread from the table: centre and variance of its residual, before a new source.
struct Spread<'a> {
    centre: f64,
    var: f64,
    /// The cells averaged and the widest of them.
    cells: usize,
    widest: &'a Cell,
    widened_by: Vec<String>,
    unseen: Vec<String>,
}

static BUILTIN: OnceLock<ErrorModel> = OnceLock::new();

impl ErrorModel {
    /// The table stored in the repository (`validation/error-model.json`).
    pub fn builtin() -> &'static ErrorModel {
        BUILTIN.get_or_init(|| {
            serde_json::from_str(include_str!("../../../validation/error-model.json"))
                .expect("validation/error-model.json is valid (sim/tests/error_model.rs reads it)")
        })
    }

    fn cell(&self, factor: &str, level: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.factor == factor && c.level == level)
    }

    /// Whether `regime` is of a source the dev set does not have: its machine or model has no
    /// cell, or its records' page or box is not one of the fitted sources.
    pub fn new_source(&self, regime: &Regime) -> Option<String> {
        for f in SOURCE_FACTORS {
            if self.cell(f, regime.level(f)).is_none() {
                return Some(format!("{f} {} unseen", regime.level(f)));
            }
        }
        let known = self.provenance.sources.contains(&regime.source);
        (!regime.source.is_empty() && !known).then(|| "a source the dev set lacks".to_string())
    }

    /// The sigma (ln) a new source's offset adds to a prediction in `regime`: the dev set's
    /// between-source sigma, or the first-contact sources' where they spread wider (they were
    /// never tuned on) — that of the regime's ground where one was fitted, else pooled.
    pub fn new_source_sigma_ln(&self, regime: &Regime) -> f64 {
        let fc = self.first_contact.as_ref().map_or(0.0, |f| {
            let ground = first_contact_ground(regime);
            f.grounds
                .iter()
                .find(|g| g.ground == ground)
                .map_or(f.sigma_ln, |g| g.sigma_ln)
        });
        self.between.sigma_ln.max(fc)
    }

    /// The expected `ln(measured / predicted)` offset of a source the dev set lacks: the
    /// first-contact centre where they were fitted ([`FirstContact::centre_ln`]: near the median
    /// of their sources' medians, where the interval covering them is shortest), else the median
    /// of the dev set's sources' medians. The
    /// dev set's own sources, even left out one at a time, had the cost model tuned on them, so
    /// their centre (+2%: a touch pessimistic) is not what a page it was never tuned on does;
    /// the sources it never saw measure, at their median, below its figure (builds, drivers
    /// and settings a page does not state cost more often than they gain). The point
    /// prediction stays the cost model's: only the interval moves.
    pub fn new_source_centre_ln(&self) -> f64 {
        self.first_contact
            .as_ref()
            .map_or(self.between.centre_ln, |f| {
                f.centre_ln.unwrap_or(f.between.centre_ln)
            })
    }

    /// [`Self::new_source_centre_ln`] for a prediction in `regime`: its first-contact ground's own
    /// centre where one was fitted ([`FirstContactGround::centre_ln`]), else the pooled one.
    pub fn new_source_centre_ln_of(&self, regime: &Regime) -> f64 {
        let ground = first_contact_ground(regime);
        self.first_contact
            .as_ref()
            .and_then(|f| f.grounds.iter().find(|g| g.ground == ground))
            .and_then(|g| g.centre_ln)
            .unwrap_or_else(|| self.new_source_centre_ln())
    }

    /// The spread a prior acceptance adds to a verdict against a prediction not on it
    /// ([`FirstContact::acceptance_gain_sigma_ln`]; 0 without first-contact files).
    pub fn acceptance_gain_sigma_ln(&self) -> f64 {
        self.first_contact
            .as_ref()
            .map_or(0.0, |f| f.acceptance_gain_sigma_ln)
    }

    /// The interval of `ln(measured / predicted)` for a prediction in `regime`.
    pub fn ln_interval(&self, regime: &Regime) -> LnInterval {
        let new_source = self.new_source(regime);
        // on new ground the spread inside one source is the regime's and the offset comes on top
        let s = self.spread(regime, new_source.is_some());
        let own = self.spread(regime, true);
        let mut widened_by = s.widened_by;
        // a level unseen is named only where unseen levels were measured to add something
        if self.unseen_sigma_ln > 0.0 {
            widened_by.extend(s.unseen.iter().cloned());
        }
        let mut centre = s.centre;
        let mut ground_offset = 0.0;
        let source_sigma = match (new_source, regime.calibrated_sigma_ln) {
            (None, _) => 0.0,
            // a calibration measured the box's own offset and fitted it away: what is left is
            // its out-of-sample spread, about no new-source centre
            (Some(why), Some(calibrated)) => {
                widened_by.push(format!(
                    "{why}: new source ±{:.3} ln (calibrated on this box: its out-of-sample error)",
                    self.quantile_z * calibrated
                ));
                calibrated
            }
            (Some(why), None) => {
                let sigma = self.new_source_sigma_ln(regime);
                let offset = self.new_source_centre_ln_of(regime);
                ground_offset = offset - self.new_source_centre_ln();
                widened_by.push(format!(
                    "{why}: new source {offset:+.3} ±{:.3} ln ({})",
                    self.quantile_z * sigma,
                    first_contact_ground(regime)
                ));
                centre += offset;
                sigma
            }
        };
        let novelties = self.novelties(regime);
        let novelty_var: f64 = novelties.iter().map(|n| n.1.powi(2)).sum();
        let sigma = (s.var + source_sigma.powi(2) + novelty_var).sqrt();
        // on the dev set's own ground the cells' percentiles are the 80% band as measured; on new
        // ground the quantile measured leaving one source out, and never surer than the dev
        // set's own ground (its pooled 80% band is a floor)
        let floor_half = if source_sigma > 0.0 {
            Z_80 * self.spread(regime, false).var.sqrt()
        } else {
            0.0
        };
        let z = if source_sigma > 0.0 {
            self.quantile_z
        } else {
            Z_80
        };
        // each novelty that widened it, named with what it adds at this quantile
        widened_by.extend(
            novelties
                .iter()
                .filter(|n| n.1 > 0.0)
                .map(|(what, s)| format!("{what} unseen in the dev set: ±{:.3} ln", z * s)),
        );
        let half = (z * sigma).max(floor_half);
        LnInterval {
            lo: centre - half,
            hi: centre + half,
            sigma,
            z,
            floor_half,
            own_centre: own.centre,
            ground_offset,
            own_sigma: own.var.sqrt(),
            source_sigma,
            unseen_levels: s.unseen.len(),
            novelties,
            set_by: if s.cells > 1 {
                format!(
                    "{}, the widest of {} cells averaged",
                    s.widest.describe(),
                    s.cells
                )
            } else {
                s.widest.describe()
            },
            widened_by,
        }
    }

    /// The regime's spread from its cells (`within`: the spreads inside one source, else pooled
    /// over the sources): the mean variance and centre of the factor cells it falls in, each
    /// flag's excess variance over all residuals', and the unseen levels' variance.
    fn spread(&self, regime: &Regime, within: bool) -> Spread<'_> {
        let sigma_of = |c: &Cell| {
            let half = if within {
                c.within_half_ln()
            } else {
                c.half_ln()
            };
            half / Z_80
        };
        let centre_of = |c: &Cell| {
            if within {
                (c.within_lo_ln + c.within_hi_ln) / 2.0
            } else {
                (c.lo_ln + c.hi_ln) / 2.0
            }
        };
        let mut seen: Vec<&Cell> = vec![&self.base];
        let mut unseen: Vec<String> = Vec::new();
        for f in FACTORS {
            match self.cell(f, regime.level(f)) {
                Some(c) => seen.push(c),
                // a new machine or model is a new source; a machine kind is a novelty dimension
                None if SOURCE_FACTORS.contains(&f) || f == "machine kind" => {}
                None => unseen.push(format!("{f} {} unseen", regime.level(f))),
            }
        }
        let k = seen.len() as f64;
        let mut var = seen.iter().map(|c| sigma_of(c).powi(2)).sum::<f64>() / k;
        let centre = seen.iter().map(|c| centre_of(c)).sum::<f64>() / k;
        let widest = seen
            .iter()
            .copied()
            .max_by(|a, b| sigma_of(a).total_cmp(&sigma_of(b)))
            .unwrap_or(&self.base);
        let base_var = sigma_of(&self.base).powi(2);
        let mut widened_by = Vec::new();
        for fl in &regime.flags {
            match self.cell("flag", fl) {
                Some(c) => {
                    let extra = (sigma_of(c).powi(2) - base_var).max(0.0);
                    if extra > 0.0 {
                        var += extra;
                        widened_by.push(format!("flag {fl}"));
                    }
                }
                None => unseen.push(format!("{fl} unseen")),
            }
        }
        var += unseen.len() as f64 * self.unseen_sigma_ln.powi(2);
        Spread {
            centre,
            var,
            cells: seen.len(),
            widest,
            widened_by,
            unseen,
        }
    }

    /// The correlation of two predictions' errors: of the `same source and model` class where
    /// both are of one source (page or box: the same source, or for a user's own predictions the
    /// same machine), one model and one engine; else of the `different` class.
    pub fn correlation(&self, a: &Regime, b: &Regime) -> f64 {
        let class = PAIR_CLASSES[usize::from(!same_class(a, b))];
        self.pair_classes
            .iter()
            .find(|c| c.class == class)
            .map_or(0.0, |c| c.correlation)
    }

    /// The 80% interval of a predicted figure: a throughput when `higher_is_faster`, else a
    /// per-token latency (whose residual is read the other way round).
    pub fn range(&self, predicted: f64, higher_is_faster: bool, regime: &Regime) -> Range {
        let kind = if higher_is_faster {
            FigureKind::Throughput
        } else {
            FigureKind::Latency
        };
        self.figure_range(predicted, kind, regime)
    }

    /// The interval of `ln(measured / predicted)` (positive faster) of a figure of `kind`: a
    /// time to first token's moved onto its own ground ([`FirstTokenGround`]) where one is
    /// fitted, its regime's otherwise.
    pub fn ln_interval_of(&self, kind: FigureKind, regime: &Regime) -> LnInterval {
        let mut i = self.ln_interval(regime);
        if let (FigureKind::FirstToken, Some(g)) = (kind, &self.first_token) {
            let (centre, half) =
                on_first_token_ground(i.centre(), i.half(), g.centre_ln, g.half_ln);
            i.lo = centre - half;
            i.hi = centre + half;
            i.widened_by.push(format!(
                "time to first token {:+.3} ±{:.3} ln (the request's path and waits before its prefill, which the replay leaves out; {} figures of {} sources)",
                g.centre_ln, g.half_ln, g.residuals, g.sources
            ));
        }
        i
    }

    /// The 80% interval of a predicted figure of `kind`.
    pub fn figure_range(&self, predicted: f64, kind: FigureKind, regime: &Regime) -> Range {
        let i = self.ln_interval_of(kind, regime);
        let range = if kind.higher_is_faster() {
            [predicted * i.lo.exp(), predicted * i.hi.exp()]
        } else {
            [predicted * (-i.hi).exp(), predicted * (-i.lo).exp()]
        };
        Range {
            range,
            set_by: i.set_by,
            widened_by: i.widened_by,
        }
    }
}

/// Whether two predictions are of one source, model and engine (the `same source and model`
/// class of [`PairClass`]): a records page or box (one source, even where its runs differ in a
/// machine preset such as an NCCL setting), or for a user's own predictions one machine.
pub fn same_class(a: &Regime, b: &Regime) -> bool {
    let one_source = if a.source.is_empty() && b.source.is_empty() {
        a.machine == b.machine
    } else {
        a.source == b.source
    };
    one_source && a.model == b.model && a.engine == b.engine
}
impl ErrorModel {
    /// Every `(key, value, higher_is_faster)` figure with its 80% interval in `regime`.
    pub fn figure_ranges(
        &self,
        regime: &Regime,
        figures: &[(&str, f64, FigureKind)],
    ) -> Vec<FigureRange> {
        figures
            .iter()
            .filter(|(_, v, _)| v.is_finite() && *v > 0.0)
            .map(|(k, v, kind)| {
                let r = self.figure_range(*v, *kind, regime);
                FigureRange {
                    figure: k.to_string(),
                    value: *v,
                    range: r.range,
                    set_by: r.set_by,
                    widened_by: r.widened_by,
                }
            })
            .collect()
    }
}

/// The figures of a run that get an interval: bench_serving's keys and what kind each is.
pub fn run_figures(r: &crate::serving::RunReport) -> Vec<(&'static str, f64, FigureKind)> {
    use FigureKind::{FirstToken, Latency, Throughput};
    vec![
        ("output_throughput", r.output_throughput, Throughput),
        ("total_throughput", r.total_throughput, Throughput),
        ("request_throughput", r.request_throughput, Throughput),
        ("mean_ttft_ms", r.mean_ttft_ms, FirstToken),
        ("mean_tpot_ms", r.mean_tpot_ms, Latency),
        ("mean_itl_ms", r.mean_itl_ms, Latency),
        ("mean_e2e_latency_ms", r.mean_e2e_latency_ms, Latency),
    ]
}

/// Quantile `p` of sorted `v`, linearly interpolated between order statistics (NaN when empty).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let x = p * (n - 1) as f64;
            let i = x.floor() as usize;
            let j = (i + 1).min(n - 1);
            sorted[i] + (sorted[j] - sorted[i]) * (x - i as f64)
        }
    }
}

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 erf, |error| < 1.5e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// `1,234 (1,050–1,380)`: a figure with its interval, as the tables print it.
pub fn with_range(value: f64, range: [f64; 2], decimals: usize) -> String {
    format!(
        "{} ({}–{})",
        grouped(value, decimals),
        grouped(range[0], decimals),
        grouped(range[1], decimals)
    )
}

/// `x` with `decimals` decimals and its integer digits in groups of three (`12,345.6`).
pub fn grouped(x: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(a, b)| (a, b));
    let mut out = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    if x < 0.0 && s.chars().any(|c| c != '0' && c != '.') {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests;
