//! "Should we turn on MTP at our load?": speculative decoding against plain decoding on one
//! layout, by concurrency, with the acceptance length's uncertainty in the confidence.
//!
//! Decode throughput (prefill excluded) of the layout with and without the speculative flags at
//! the workload's context, over [`MTP_CONCURRENCIES`] and the workload's own concurrency. The
//! gain shrinks with the batch: a verify pass over `B × draft tokens` costs what a plain step
//! of that many requests would, while a plain step gains tokens for free until the weights
//! stop dominating. The concurrency where the gain crosses 1 is interpolated in log2.
//! Confidence: draws of the efficiency and communication knobs (as the EP question) and of the
//! acceptance length: ±10% around a given or measured one, the published prior's range otherwise
//! ([`crate::acceptance::prior`]). The answer also says the acceptance length at which it flips
//! (bisection on the gain at the workload's concurrency) and the gain of each chain draft length
//! ([`DRAFT_LENGTHS`]), the plan's per-position acceptance carried over by the chain.

use super::provenance::KnownModelError;
use super::verdict::{perturbed_knobs, steady_tok_s};
use crate::cost::spec::{AcceptSource, SpecPlan};
use crate::cost::{IterationBatch, IterationModel, Knobs};
use crate::engine::Engine;
use crate::options::ServerOptions;
use models::Layout;
use rand::RngExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Concurrencies the MTP gain is computed over (plus the workload's own).
pub const MTP_CONCURRENCIES: [u32; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MtpVerdict {
    /// Faster at this load in most draws.
    Yes,
    /// Slower at this load in most draws.
    No,
    /// Within the uncertainty (acceptance length, efficiencies): measure it.
    Depends,
}

/// Decode throughput with and without speculation at one concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MtpPoint {
    pub concurrency: u32,
    pub with_tok_s: f64,
    pub without_tok_s: f64,
    /// with ÷ without.
    pub gain: f64,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MtpAnswer {
    pub verdict: MtpVerdict,
    pub sentence: String,
    /// The layout compared (the engine's flags).
    pub layout: String,
    pub plan: SpecPlan,
    pub concurrency: u32,
    pub context_tokens: u32,
    pub at: MtpPoint,
    pub by_concurrency: Vec<MtpPoint>,
    /// Where the gain crosses 1 (log2-interpolated), if it does within the grid.
    pub crossover_concurrency: Option<f64>,
    /// Share of draws in which speculation is faster at the workload's concurrency.
    pub faster_share: f64,
    pub draws: u32,
    /// The acceptance lengths drawn from.
    pub accept_length_range: (f64, f64),
    /// The model's own error where known.
    pub known_error: Option<KnownModelError>,
    /// Which acceptance the answer assumed and where it came from, in words.
    pub accept_from: String,
    /// The acceptance length at which the answer at the workload's concurrency flips (gain 1),
    /// `None` when speculation wins (or loses) from 1 token a step to every drafted one accepted.
    pub flip_accept_length: Option<f64>,
    /// The same as a share of drafted tokens accepted (vLLM's acceptance rate).
    pub flip_accept_rate: Option<f64>,
    /// The chain draft lengths tried at the workload's concurrency, best gain first.
    pub by_draft_length: Vec<DraftLengthPoint>,
    /// The flags to try next.
    pub flags_to_try: String,
    /// The speculative flags of the configuration answered about (the engine's spelling), in
    /// `flags_to_try` unless the answer is No.
    #[serde(default)]
    pub speculative_flags: String,
    /// The verdict from the two predictions' 80% intervals and their error correlation
    /// ([`crate::uncertainty::verdict::odds`]): the chance the predicted-faster option is faster,
    /// or "Depends: measure both" with the measurement that decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub odds: Option<crate::uncertainty::verdict::Odds>,
    /// Where no speculative flag was given and a chain draft length pays more than the engine's
    /// default draft for the model at the workload's load, the answer is about that chain and this
    /// is the default it replaced ([`better_chain`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instead_of_default: Option<DefaultDraft>,
    /// What the engine's public runs say of speculation on this model that the answer does not
    /// price ([`crate::engine::ServingEngine::spec_caveat`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// The engine's own running-request cap under speculation, lifted in the flags to try.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_cap: Option<RunningCap>,
    /// Where the engine runs this speculation without its overlap scheduler and a switch keeps
    /// it on, what the switch gives at the load ([`SpecOverlap`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_overlap: Option<SpecOverlap>,
}

/// The engine's overlap scheduler kept on under the answer's speculation by a server-environment
/// switch (`SGLANG_ENABLE_SPEC_V2=True`): SGLang turns overlap off for EAGLE speculation unless
/// its v2 worker runs, so each step then pays its scheduler turn after the GPU's passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecOverlap {
    /// The assignment, as the engine's docs spell it.
    pub env: String,
    /// Decode tok/s with speculation and the switch at the workload's concurrency.
    pub tok_s: f64,
    /// That ÷ without speculation.
    pub gain: f64,
    /// That ÷ speculation as the answer prices it (overlap off).
    pub over_answer: f64,
}

impl SpecOverlap {
    /// The words the answer's sentence ends with.
    pub fn words(&self, engine: Engine) -> String {
        format!(
            " {} runs this speculation without its overlap scheduler; {} in the server's environment keeps it on for a top-1 chain (experimental in its docs): {:.0} tok/s here ({:.2}× without speculation, {:.2}× the answer's).",
            engine.rules().display_name(),
            self.env,
            self.tok_s,
            self.gain,
            self.over_answer
        )
    }
}

/// What `env` (the engine's switch, [`crate::engine::ServingEngine::speculative_overlap_switch`])
/// gives at the workload's concurrency: `q`'s speculation with the overlap scheduler kept on,
/// against `answered`, the answer's own point there (`q`'s options as they are).
pub fn spec_overlap(
    q: &MtpQuestion<'_>,
    build: &BuildWith<'_>,
    env: &str,
    answered: &MtpPoint,
) -> Result<SpecOverlap, String> {
    let on = ServerOptions {
        speculative_overlap: true,
        ..q.with.clone()
    };
    let p = point_with(q, build, &on, q.plan.accept_length)?;
    Ok(SpecOverlap {
        env: env.to_string(),
        tok_s: p.with_tok_s,
        gain: p.gain,
        over_answer: p.with_tok_s / answered.with_tok_s.max(f64::MIN_POSITIVE),
    })
}

/// The engine's default draft for the model, as the answer would have priced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefaultDraft {
    /// `EAGLE (5 steps, topk 4, 8 draft tokens; accept length 2.43, …)`.
    pub config: String,
    /// Its gain at the workload's concurrency.
    pub gain: f64,
}

impl DefaultDraft {
    /// The words the answer's sentence ends with.
    pub fn words(&self) -> String {
        format!(
            " No speculative flag was given: the engine's default draft for this model, {}, gives {:.2}× here, so the answer is about the chain that pays best.",
            self.config, self.gain
        )
    }
}

/// The gain of one draft length (a chain: `k` draft passes, top-1, `k + 1` tokens verified) at
/// the workload's concurrency, its acceptance length carried over from the plan's by the chain
/// ([`crate::acceptance::chain_probability`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DraftLengthPoint {
    pub num_steps: u32,
    pub num_draft_tokens: u32,
    pub accept_length: f64,
    pub gain: f64,
}

/// Draft lengths (tokens drafted a step) tried for the best one.
pub const DRAFT_LENGTHS: [u32; 6] = [1, 2, 3, 4, 5, 6];

/// Builds a layout's model with knobs and options.
pub type BuildWith<'a> =
    dyn Fn(Layout, Knobs, &ServerOptions) -> Result<Box<dyn IterationModel>, String> + Sync + 'a;

/// Inputs of the MTP question.
pub struct MtpQuestion<'a> {
    pub layout: Layout,
    /// Options with the speculative flags (the plan's configuration).
    pub with: &'a ServerOptions,
    /// The same options without them.
    pub without: &'a ServerOptions,
    pub plan: SpecPlan,
    pub concurrency: u32,
    pub context_tokens: u32,
    pub knobs: Knobs,
    pub comm_spread: f64,
    pub draws: u32,
    pub seed: u64,
    pub known_error: Option<KnownModelError>,
    /// The user's other modelled flags, for the `try:` line.
    pub extra_flags: Vec<String>,
    /// The layout's launch flags in the engine's spelling.
    pub layout_flags: String,
    /// The engine whose flags the answer speaks.
    pub engine: Engine,
    /// `--max-running-requests N` in the engine's spelling where the answer lifts the engine's
    /// own cap under speculation to the workload's concurrency ([`RunningCap`]): part of the
    /// speculative flags to try.
    pub running_flag: Option<String>,
}

/// The engine's own running-request cap under speculation (SGLang's 48 when
/// `--max-running-requests` is not given), where the workload keeps more requests open: the
/// answer speculates with the flag raised to the workload's concurrency, and says what the
/// capped server gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningCap {
    /// The cap the engine sets itself.
    pub cap: u32,
    /// What the answer raises it to (the workload's concurrency).
    pub lifted_to: u32,
    /// Decode tok/s with speculation at the workload's concurrency under the engine's cap.
    pub capped_tok_s: f64,
    /// That ÷ without speculation.
    pub capped_gain: f64,
}

impl RunningCap {
    /// The words the answer's sentence ends with.
    pub fn words(&self, engine: Engine) -> String {
        format!(
            " {} runs at most {} requests at once under speculation unless {} is given, so the flags to try raise it to {}: left at {} it gives {:.0} tok/s here ({:.2}×).",
            engine.rules().display_name(),
            self.cap,
            engine.flag(crate::engine::Knob::MaxRunningRequests),
            self.lifted_to,
            self.cap,
            self.capped_tok_s,
            self.capped_gain
        )
    }
}

/// The engine's cap at the workload's concurrency: speculation with `capped` (the options as the
/// user launched them) against `q`'s without.
pub fn running_cap(
    q: &MtpQuestion<'_>,
    build: &BuildWith<'_>,
    capped: &ServerOptions,
    cap: u32,
) -> Result<RunningCap, String> {
    let p = point_with(q, build, capped, q.plan.accept_length)?;
    Ok(RunningCap {
        cap,
        lifted_to: q.concurrency,
        capped_tok_s: p.with_tok_s,
        capped_gain: p.gain,
    })
}

/// The acceptance-length range of the draws: the plan's (±10% around a given or measured
/// length, the prior's published range otherwise).
pub fn accept_range(plan: &SpecPlan) -> (f64, f64) {
    plan.accept_range
}

/// The point at the workload's concurrency with options `with` (speculating) and acceptance
/// `accept`.
fn point_with(
    q: &MtpQuestion<'_>,
    build: &BuildWith<'_>,
    with: &ServerOptions,
    accept: f64,
) -> Result<MtpPoint, String> {
    let q2 = MtpQuestion {
        with,
        ..q.shallow()
    };
    Ok(grid(&q2, build, q.knobs, accept, &[q.concurrency])?[0])
}

/// The acceptance length where the gain at the workload's concurrency crosses 1, by bisection
/// between one token a step and every drafted token accepted (the gain grows with the length).
fn flip_length(q: &MtpQuestion<'_>, build: &BuildWith<'_>) -> Result<Option<f64>, String> {
    let (mut lo, mut hi) = (1.0, q.plan.num_draft_tokens.max(1) as f64);
    let g = |l: f64| point_with(q, build, q.with, l).map(|p| p.gain);
    if (g(lo)? - 1.0) * (g(hi)? - 1.0) > 0.0 {
        return Ok(None);
    }
    for _ in 0..14 {
        let mid = 0.5 * (lo + hi);
        if g(mid)? < 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(0.5 * (lo + hi)))
}

/// The gain of every chain draft length of [`DRAFT_LENGTHS`], best first: the plan's chain
/// probability (from its acceptance length over its draft passes) gives each length's
/// acceptance, so a measured length is carried over, not the prior re-read.
fn draft_lengths(
    q: &MtpQuestion<'_>,
    build: &BuildWith<'_>,
) -> Result<Vec<DraftLengthPoint>, String> {
    let p = crate::acceptance::chain_probability(q.plan.accept_length, q.plan.num_steps.max(1));
    let mut out = Vec::new();
    for k in DRAFT_LENGTHS {
        let mut with = q.with.clone();
        if let Some(s) = with.speculative.as_mut() {
            (s.num_steps, s.eagle_topk, s.num_draft_tokens) = (k, 1, k + 1);
        }
        let l = crate::acceptance::chain_length(p, k);
        out.push(DraftLengthPoint {
            num_steps: k,
            num_draft_tokens: k + 1,
            accept_length: l,
            gain: point_with(q, build, &with, l)?.gain,
        });
    }
    out.sort_by(|a, b| b.gain.total_cmp(&a.gain));
    Ok(out)
}

/// The chain draft length that pays more than `q`'s plan at the workload's concurrency (the best of
/// [`DRAFT_LENGTHS`], at the plan's acceptance per drafted token), with the plan as priced there;
/// `None` where the plan pays best. A user who gave no speculative flag asks whether speculation
/// pays at all, not whether the engine's default draft does: a tree of 8 draft tokens can lose at
/// 64 streams where a chain of 3 still gains.
pub fn better_chain(
    q: &MtpQuestion<'_>,
    build: &BuildWith<'_>,
) -> Result<Option<(DraftLengthPoint, DefaultDraft)>, String> {
    let gain = grid(q, build, q.knobs, q.plan.accept_length, &[q.concurrency])?[0].gain;
    let best = draft_lengths(q, build)?.into_iter().next();
    Ok(best.filter(|b| b.gain > gain).map(|b| {
        let default = DefaultDraft {
            config: config_words(&q.plan, q.engine),
            gain,
        };
        (b, default)
    }))
}

impl<'a> MtpQuestion<'a> {
    /// A copy of the question's fields (the options borrowed, the plan cloned).
    fn shallow(&self) -> MtpQuestion<'a> {
        MtpQuestion {
            layout: self.layout,
            with: self.with,
            without: self.without,
            plan: self.plan.clone(),
            concurrency: self.concurrency,
            context_tokens: self.context_tokens,
            knobs: self.knobs,
            comm_spread: self.comm_spread,
            draws: self.draws,
            seed: self.seed,
            known_error: self.known_error.clone(),
            extra_flags: Vec::new(),
            layout_flags: self.layout_flags.clone(),
            engine: self.engine,
            running_flag: self.running_flag.clone(),
        }
    }
}

fn with_accept(o: &ServerOptions, l: f64) -> ServerOptions {
    let mut o = o.clone();
    if let Some(s) = o.speculative.as_mut() {
        s.accept_length = Some(l);
    }
    o
}

/// Gains over the concurrencies for one set of knobs and one acceptance length.
fn grid(
    q: &MtpQuestion<'_>,
    build: &BuildWith<'_>,
    k: Knobs,
    accept: f64,
    concs: &[u32],
) -> Result<Vec<MtpPoint>, String> {
    let with_opts = with_accept(q.with, accept);
    let on = build(q.layout, k, &with_opts)?;
    let off = build(q.layout, k, q.without)?;
    let mut batch = IterationBatch::default();
    Ok(concs
        .iter()
        .map(|&c| {
            let w = steady_tok_s(on.as_ref(), &with_opts, c, q.context_tokens, &mut batch);
            let wo = steady_tok_s(off.as_ref(), q.without, c, q.context_tokens, &mut batch);
            MtpPoint {
                concurrency: c,
                with_tok_s: w,
                without_tok_s: wo,
                gain: w / wo.max(1e-12),
            }
        })
        .collect())
}

/// Every concurrency where the gain crosses 1, going up, log2-interpolated. The gain need not
/// be monotonic (graph capture sizes and MoE efficiency change with the verify pass's tokens), so
/// there may be several.
pub fn crossings(points: &[MtpPoint]) -> Vec<f64> {
    points
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (w[0], w[1]);
            if (a.gain - 1.0) * (b.gain - 1.0) > 0.0 || a.gain == b.gain {
                return None;
            }
            let (xa, xb) = ((a.concurrency as f64).log2(), (b.concurrency as f64).log2());
            let t = (1.0 - a.gain) / (b.gain - a.gain);
            Some((xa + t * (xb - xa)).exp2())
        })
        .collect()
}

/// The first concurrency where the gain crosses 1 (see [`crossings`]).
pub fn crossover(points: &[MtpPoint]) -> Option<f64> {
    crossings(points).first().copied()
}

/// The grid's concurrencies where speculation pays, as ranges: `1–4 and 16–64`.
fn paying_ranges(points: &[MtpPoint]) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut open = false;
    for p in points {
        match (p.gain >= 1.0, open) {
            (true, true) => ranges.last_mut().expect("open range").1 = p.concurrency,
            (true, false) => ranges.push((p.concurrency, p.concurrency)),
            _ => {}
        }
        open = p.gain >= 1.0;
    }
    let parts: Vec<String> = ranges
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}–{b}")
            }
        })
        .collect();
    match parts.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Where on the grid speculation pays, in words: `; the gain falls below 1 at ≈ 45 concurrent`.
fn crossing_words(points: &[MtpPoint], concs: &[u32], at: MtpPoint) -> String {
    let all_crossings = crossings(points);
    match crossover(points) {
        Some(_) if all_crossings.len() > 1 => format!(
            "; it pays at {} concurrent of the grid {}, not elsewhere (the gain crosses 1 at ≈ {})",
            paying_ranges(points),
            concs
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("/"),
            all_crossings
                .iter()
                .map(|c| format!("{c:.0}"))
                .collect::<Vec<_>>()
                .join(", ≈ ")
        ),
        Some(c) if at.gain >= 1.0 => format!("; the gain falls below 1 at ≈ {c:.0} concurrent"),
        Some(c) => format!("; it pays below ≈ {c:.0} concurrent"),
        None if points.iter().all(|p| p.gain >= 1.0) => {
            format!(
                "; it pays at every concurrency from 1 to {}",
                concs[concs.len() - 1]
            )
        }
        None => "; it never pays from 1 to 512 concurrent".to_string(),
    }
}

/// Answers "should we turn on MTP at our load?".
pub fn mtp_question(q: &MtpQuestion<'_>, build: &BuildWith<'_>) -> Result<MtpAnswer, String> {
    let mut concs = MTP_CONCURRENCIES.to_vec();
    if !concs.contains(&q.concurrency) {
        concs.push(q.concurrency);
        concs.sort_unstable();
    }
    let points = grid(q, build, q.knobs, q.plan.accept_length, &concs)?;
    let at = *points
        .iter()
        .find(|p| p.concurrency == q.concurrency)
        .expect("the workload's concurrency is in the grid");
    let range = accept_range(&q.plan);
    let faster: Vec<bool> = (0..q.draws)
        .into_par_iter()
        .filter_map(|i| {
            super::draw_begun();
            let seed = q.seed.wrapping_add(0x5eed + i as u64);
            let (k, mut rng) = perturbed_knobs(q.knobs, seed, q.comm_spread);
            let l = range.0 + (range.1 - range.0) * rng.random::<f64>();
            let p = grid(q, build, k, l, &[q.concurrency]).ok()?;
            Some(p[0].gain > 1.0)
        })
        .collect();
    let n = faster.len().max(1) as f64;
    let faster_share = faster.iter().filter(|f| **f).count() as f64 / n;
    let verdict = if faster_share >= 0.8 {
        MtpVerdict::Yes
    } else if faster_share <= 0.2 {
        MtpVerdict::No
    } else {
        MtpVerdict::Depends
    };
    let cross = crossover(&points);
    let p = &q.plan;
    let flip = flip_length(q, build)?;
    let by_draft_length = draft_lengths(q, build)?;
    let config = config_words(p, q.engine);
    let crossing = crossing_words(&points, &concs, at);
    let head = head_word(verdict);
    let tail = flip_and_best(p, flip, &by_draft_length);
    let sentence = format!(
        "{head}: {config} gives {:.2}× decode throughput at {} concurrent on {} ({:.0} vs {:.0} tok/s){crossing}; faster in {:.0}% of {} draws over the efficiencies and accept lengths {:.2}–{:.2}{tail}.",
        at.gain,
        q.concurrency,
        q.layout.short_name(),
        at.with_tok_s,
        at.without_tok_s,
        faster_share * 100.0,
        faster.len(),
        range.0,
        range.1,
    );
    let (try_flags, speculative_flags) = flags_to_try(q, verdict, &at, &by_draft_length);
    Ok(MtpAnswer {
        verdict,
        sentence,
        layout: q.layout_flags.clone(),
        plan: q.plan.clone(),
        concurrency: q.concurrency,
        context_tokens: q.context_tokens,
        at,
        by_concurrency: points,
        crossover_concurrency: cross,
        faster_share,
        draws: faster.len() as u32,
        accept_length_range: range,
        known_error: q.known_error.clone(),
        accept_from: p.accept_from.clone(),
        flip_accept_length: flip,
        flip_accept_rate: flip.map(|l| crate::acceptance::rate_from_length(l, p.num_steps)),
        by_draft_length,
        flags_to_try: try_flags.join(" "),
        speculative_flags,
        odds: None,
        instead_of_default: None,
        caveat: None,
        running_cap: None,
        spec_overlap: None,
    })
}

/// The speculative configuration in words, with where its acceptance came from.
fn config_words(p: &SpecPlan, engine: Engine) -> String {
    let shape = engine
        .rules()
        .draft_shape_words(p.num_steps, p.eagle_topk, p.num_draft_tokens);
    format!(
        "{} ({shape}; accept length {:.2}, {})",
        engine.rules().speculation_name(&p.algorithm, p.method),
        p.accept_length,
        match p.accept_source {
            AcceptSource::Given => "given".to_string(),
            AcceptSource::Measured => "measured".to_string(),
            AcceptSource::Forced => p.accept_from.clone(),
            AcceptSource::Prior => format!(
                "not measured: the published prior for {} prompts",
                p.prompt_kind.name()
            ),
        }
    )
}

/// The sentence's first word for a verdict.
fn head_word(v: MtpVerdict) -> &'static str {
    match v {
        MtpVerdict::Yes => "Yes",
        MtpVerdict::No => "No",
        MtpVerdict::Depends => "Depends (measure it)",
    }
}

impl MtpAnswer {
    /// The verdict as the two predictions' intervals state it ([`MtpAnswer::odds`]): Yes or No
    /// where the predicted-faster side is faster with at least the verdict bar's probability,
    /// else Depends — the knob draws (`faster_share`) then say only how robust the prediction is
    /// to the efficiencies and the acceptance. The sentence's first word and the flags to try
    /// follow.
    pub fn follow_odds(&mut self) {
        use MtpVerdict::{Depends, No, Yes};
        let odds = self.odds.as_ref();
        let Some(v) = super::verdict::verdict_from_odds(odds, WITH_SPECULATION, [Yes, No, Depends])
        else {
            return;
        };
        if v == self.verdict {
            return;
        }
        self.sentence =
            super::verdict::reheaded(&self.sentence, head_word(self.verdict), head_word(v));
        // the `try:` line carries the speculative flags unless the answer is No
        let with = self.flags_with_speculation();
        self.flags_to_try = if v == No {
            with.replacen(&format!(" {}", self.speculative_flags), "", 1)
        } else {
            with
        };
        self.verdict = v;
    }

    /// The launch flags with speculation on (the layout, the speculative flags, the rest).
    pub fn flags_with_speculation(&self) -> String {
        if self.verdict == MtpVerdict::No {
            let rest = self
                .flags_to_try
                .strip_prefix(self.layout.as_str())
                .unwrap_or("");
            format!("{} {}{rest}", self.layout, self.speculative_flags)
        } else {
            self.flags_to_try.clone()
        }
    }
}

/// The name the odds give the speculating side.
pub const WITH_SPECULATION: &str = "with speculation";

/// The launch flags to try: the layout, the speculative flags (at the draft length that pays best
/// where it beats the one asked about) unless the answer is No, and the user's other flags; and
/// the speculative flags alone.
fn flags_to_try(
    q: &MtpQuestion<'_>,
    verdict: MtpVerdict,
    at: &MtpPoint,
    by_draft_length: &[DraftLengthPoint],
) -> (Vec<String>, String) {
    let p = &q.plan;
    // the draft length that pays best where it beats the configuration asked about
    let (steps, topk, tokens) = match by_draft_length.first() {
        Some(b) if b.gain > at.gain => (b.num_steps, 1, b.num_draft_tokens),
        _ => (p.num_steps, p.eagle_topk, p.num_draft_tokens),
    };
    // the engine's spellings, as the layout's flags below
    let tried = crate::options::SpeculativeOptions {
        num_steps: steps,
        eagle_topk: topk,
        num_draft_tokens: tokens,
        ..q.with
            .speculative
            .clone()
            .unwrap_or_else(|| crate::engine::draft::recipe_draft(&p.algorithm, None))
    };
    let mut spec_flags = q.engine.rules().speculative_flags(&tried);
    if let Some(f) = &q.running_flag {
        spec_flags = format!("{spec_flags} {f}");
    }
    let mut try_flags = vec![q.layout_flags.clone()];
    if verdict != MtpVerdict::No {
        try_flags.push(spec_flags.clone());
    }
    try_flags.extend(
        q.extra_flags
            .iter()
            .filter(|f| !f.starts_with("--speculative"))
            .cloned(),
    );
    (try_flags, spec_flags)
}

/// `; the answer flips at 1.62 tokens a step (21% of drafted tokens accepted); the best draft
/// length here is 2 (1.27×)`.
fn flip_and_best(p: &SpecPlan, flip: Option<f64>, lengths: &[DraftLengthPoint]) -> String {
    let flip = match flip {
        Some(l) => format!(
            "; the answer flips at an accept length of {l:.2} ({:.0}% of drafted tokens accepted)",
            100.0 * crate::acceptance::rate_from_length(l, p.num_steps)
        ),
        None => "; no acceptance from 1 token a step to all drafted ones flips it".to_string(),
    };
    let best = lengths.first().map_or(String::new(), |b| {
        format!(
            "; the draft length that pays best here is {} ({} draft tokens, {:.2}×)",
            b.num_steps, b.num_draft_tokens, b.gain
        )
    });
    format!("{flip}{best}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(c: u32, gain: f64) -> MtpPoint {
        MtpPoint {
            concurrency: c,
            with_tok_s: gain,
            without_tok_s: 1.0,
            gain,
        }
    }

    #[test]
    fn crossover_is_log2_interpolated() {
        let pts = [pt(16, 1.5), pt(32, 1.2), pt(64, 0.8)];
        let c = crossover(&pts).unwrap();
        // halfway between 32 and 64 in log2
        assert!((c - 45.25).abs() < 0.1, "{c}");
        assert!(crossover(&[pt(1, 1.5), pt(2, 1.4)]).is_none());
    }

    #[test]
    fn a_gain_that_dips_and_recovers_names_every_crossing() {
        let pts = [
            pt(1, 2.0),
            pt(4, 1.1),
            pt(8, 0.9),
            pt(16, 1.1),
            pt(64, 1.05),
            pt(128, 0.8),
        ];
        assert_eq!(crossings(&pts).len(), 3);
        assert_eq!(paying_ranges(&pts), "1–4 and 16–64");
        assert_eq!(paying_ranges(&[pt(1, 0.5)]), "");
    }
}
