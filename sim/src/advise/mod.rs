//! `sim advise`: rank the layouts for a workload, and answer "should we try EP?" with a verdict,
//! the numbers behind it, and how often the verdict survives perturbing the uncertain inputs.
//!
//! The EP question compares EP (`--ep-size` = `--tp` over all GPUs) with the best layout that does
//! not use EP, by steady-state decode throughput over a grid of concurrencies (cheap: one cost
//! call per point), and at the workload's concurrency by a full serving simulation. Confidence
//! redraws the compute and memory efficiencies (±20%) and the communication time (the profile's
//! measured p10–p90 spread, ±30% for presets) a few hundred times, in parallel and seeded, and
//! counts the draws that give the same verdict. Where the model's own error is known (a
//! calibration's residual, the scoreboard's error for the model family: [`KnownModelError`]),
//! the answer says whether EP's margin is beyond it. [`provenance`] says which inputs were
//! measured and which modelled, and what an all-to-all backend needs from the machine.

pub mod host_path;
pub mod mtp;
pub mod p2p;
pub mod provenance;
pub mod replicas;
pub mod scale;
pub mod verdict;

use crate::cost::moe::Routing;
use crate::cost::{IterationBatch, IterationModel, Knobs, TimeBreakdown};
use crate::engine::Knob;
use crate::options::ServerOptions;
use crate::serving::RunReport;
use crate::sweep::{SweepLayout, sweep};
use crate::workload::Workload;
use models::spec::ModelPart;
use models::{Layout, ModelSpec};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use verdict::DEFAULT_CONCURRENCY;

pub use crate::options::{a2a_applies, runnable_on};

/// Perturbed draws begun since the last [`reset_draws`], over every question: what a progress
/// bar shows (a verdict of 10,000 draws takes minutes).
static DRAWS_BEGUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts one draw begun ([`draws_begun`]).
fn draw_begun() {
    DRAWS_BEGUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Draws begun since the last [`reset_draws`].
pub fn draws_begun() -> u64 {
    DRAWS_BEGUN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Starts the count of [`draws_begun`] again.
pub fn reset_draws() {
    DRAWS_BEGUN.store(0, std::sync::atomic::Ordering::Relaxed);
}
pub use provenance::{KnownModelError, a2a_notes, machine_provenance};
pub use verdict::{
    Build, EFFICIENCY_SPREAD, PRESET_COMM_SPREAD, VERDICT_CONCURRENCIES, comm_spread,
    perturbed_knobs, steady_tok_s,
};

/// Schema version of [`Advice`]: 2 adds `provenance`, `notes`, `flags_not_modelled` and the EP
/// answer's `known_error` / `margin_within_known_error`; 3 adds `engine` and names a ranked
/// layout's flags `flags`, in the engine's own spelling (was `sglang_flags`).
/// 4 names each EP side's flags `flags` too (was `sglang_flags`).
pub const ADVICE_SCHEMA_VERSION: u32 = 4;
/// One layout, ranked for the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankedLayout {
    pub layout: String,
    /// The flags that launch it, in the engine's own spelling ([`RunReport::flags`]).
    #[serde(alias = "sglang_flags")]
    pub flags: String,
    pub run: Option<RunReport>,
    pub rejected: Option<String>,
    /// GPUs of the machine the layout leaves idle (one replica on part of it).
    #[serde(default)]
    pub idle_gpus: u32,
}

/// EP's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Yes,
    No,
    DependsOnConcurrency,
}

/// One side of the EP comparison at the workload's concurrency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpSide {
    pub layout: String,
    /// The flags that launch it, in the engine's own spelling.
    #[serde(alias = "sglang_flags")]
    pub flags: String,
    /// From the full simulation of the workload.
    pub output_throughput: f64,
    pub mean_tpot_ms: f64,
    /// One decode iteration at the workload's concurrency and mean context, by part (seconds).
    pub decode_breakdown: TimeBreakdown,
    /// Bytes each GPU puts on the wire per generated token (collective formulas, see
    /// [`wire_bytes_per_token`]).
    pub wire_bytes_per_token_per_gpu: f64,
    /// Expert weight bytes the busiest GPU reads in one decode iteration.
    pub expert_read_bytes_per_gpu: f64,
    /// Busiest EP rank's (token, expert) pairs over the average (1.0 under TP).
    pub imbalance: f64,
    pub weight_bytes_per_gpu: u64,
    pub kv_tokens: u64,
}

/// Steady decode throughput of both sides at one concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyPoint {
    pub concurrency: u32,
    pub ep_tok_s: f64,
    pub other_tok_s: f64,
    /// The best non-EP layout at this concurrency.
    pub other_layout: Layout,
}

/// The answer to `--question ep`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpAnswer {
    pub verdict: Verdict,
    /// One sentence: the verdict and its main reason.
    pub sentence: String,
    pub concurrency: u32,
    pub ep: EpSide,
    pub other: EpSide,
    pub by_concurrency: Vec<ConcurrencyPoint>,
    /// Share of perturbed draws giving the same verdict.
    pub confidence: f64,
    /// Share of draws in which EP is slower than the best non-EP layout at the workload's
    /// concurrency.
    pub ep_slower_share: f64,
    pub draws: u32,
    /// Relative spread used for communication time.
    pub comm_spread: f64,
    /// SGLang flags to try first.
    pub flags_to_try: Vec<String>,
    /// EP's steady throughput over that of plain TP on the same GPUs (`--tp N`, no EP, no
    /// attention-DP: the layout most users run today) at the workload's concurrency.
    #[serde(default)]
    pub ratio_vs_plain_tp: Option<f64>,
    /// The model's own error where known (calibration residual, scoreboard).
    #[serde(default)]
    pub known_error: Option<KnownModelError>,
    /// Whether EP's margin over the best other layout at the workload's concurrency
    /// (|ratio − 1|) is inside the known error, i.e. the verdict is not sure.
    #[serde(default)]
    pub margin_within_known_error: Option<bool>,
    /// The verdict from the two predictions' 80% intervals and their error correlation
    /// ([`crate::uncertainty::verdict::odds`]): the chance the predicted-faster option is faster,
    /// or "Depends: measure both" with the measurement that decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub odds: Option<crate::uncertainty::verdict::Odds>,
}

/// `sim advise` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub schema_version: u32,
    /// The engine whose behaviour was simulated.
    #[serde(default)]
    pub engine: crate::options::Engine,
    pub machine: String,
    pub model: String,
    pub workload: Workload,
    /// Feasible layouts best first (by output throughput), then rejected ones.
    pub ranking: Vec<RankedLayout>,
    pub ep: Option<EpAnswer>,
    /// `--question mtp`: speculative decoding against plain decoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtp: Option<mtp::MtpAnswer>,
    /// Which inputs were measured and which modelled from published figures, one line each.
    #[serde(default)]
    pub provenance: Vec<String>,
    /// Warnings about the answer (an all-to-all backend's requirements, defaults SGLang picks).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Server and bench_serving flags given that do not change the prediction.
    #[serde(default)]
    pub flags_not_modelled: Vec<String>,
    /// `--question scale`: what the other boxes of a multi-node machine buy.
    #[serde(default)]
    pub scale: Option<scale::ScaleAnswer>,
    /// `--question replicas`: one server of the whole box or two of half of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<replicas::ReplicasAnswer>,
    /// `--question p2p`: the layout in every P2P state and all-reduce path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p: Option<p2p::P2pAnswer>,
}

/// Simulates the workload on every layout and orders them by output throughput.
pub fn rank(layouts: &[SweepLayout], opts: &ServerOptions, w: &Workload) -> Vec<RankedLayout> {
    let mut rows: Vec<RankedLayout> = sweep(layouts, opts, std::slice::from_ref(w), &[], &|| {})
        .into_iter()
        .map(|r| RankedLayout {
            layout: r.layout,
            flags: r.flags,
            run: r.run,
            rejected: r.rejected,
            idle_gpus: r.idle_gpus,
        })
        .collect();
    let key = |r: &RankedLayout| r.run.as_ref().map_or(-1.0, |x| x.output_throughput);
    rows.sort_by(|a, b| key(b).total_cmp(&key(a)));
    rows
}

/// Bytes one GPU sends per token per forward pass, by the ring formulas of the collectives SGLang
/// runs: without attention-DP, two all-reduces of `h` bf16 values per layer over the TP group
/// (`2(n−1)/n` of the buffer leaves each GPU), one after attention and one after the MLP/MoE, which
/// SGLang keeps for the MoE output under EP without `--moe-a2a-backend`. Attention-DP drops the
/// attention all-reduce and wraps the MLP/MoE in an all-gather plus a reduce-scatter of the tokens
/// (the same bytes as one all-reduce). With an a2a backend the MoE's collective becomes a dispatch of
/// `k·h` fp8 bytes plus a combine of `k·h` bf16 values, of which `(n−1)/n` leaves the GPU.
pub fn wire_bytes_per_token(spec: &ModelSpec, layout: &Layout, opts: &ServerOptions) -> f64 {
    let n = layout.tp as f64;
    if n <= 1.0 {
        return 0.0;
    }
    let h = spec.hidden_size as f64;
    let layers = spec.num_layers as f64 / layout.pp as f64;
    let moe_layers = spec.num_moe_layers() as f64 / layout.pp as f64;
    let all_reduce = h * 2.0 * 2.0 * (n - 1.0) / n;
    let attention = if layout.dp_attention {
        0.0
    } else {
        layers * all_reduce
    };
    let a2a = opts.moe_a2a_backend.is_some() && layout.ep > 1;
    let mlp = match spec.moe {
        Some(moe) if a2a => {
            let k = moe.top_k as f64;
            (layers - moe_layers) * all_reduce + moe_layers * (k * h * 3.0 * (n - 1.0) / n)
        }
        _ => layers * all_reduce,
    };
    attention + mlp
}

/// Expert weight bytes the busiest GPU reads for `tokens` decode tokens, and the EP imbalance.
pub fn expert_reads(spec: &ModelSpec, layout: &Layout, tokens: u32) -> (f64, f64) {
    let Some(moe) = spec.moe else {
        return (0.0, 1.0);
    };
    let bytes_per_expert = spec.params_per_routed_expert() as f64
        * spec.format_of(ModelPart::RoutedExperts).bytes_per_value();
    let layers = spec.num_moe_layers() as f64 / layout.pp as f64;
    let t = tokens as f64;
    if layout.ep <= 1 {
        let r = Routing::new(moe.num_routed_experts, moe.top_k, 1);
        let per_layer = r.expected_touched(t) * bytes_per_expert / layout.tp as f64;
        (per_layer * layers, 1.0)
    } else {
        let r = Routing::new(moe.num_routed_experts, moe.top_k, layout.ep);
        // Each EP group of tp/ep ranks slices its experts.
        let slice = (layout.tp / layout.ep) as f64;
        let per_layer = r.max_touched_per_rank(t) * bytes_per_expert / slice;
        (per_layer * layers, r.pair_imbalance(t))
    }
}

/// EP's cost model and those of the layouts it is compared with.
type Sides = (Box<dyn IterationModel>, Vec<Box<dyn IterationModel>>);

/// Steady throughput of EP and of the best non-EP layout at each concurrency.
fn grid(
    ep: &dyn IterationModel,
    others: &[Box<dyn IterationModel>],
    opts: &ServerOptions,
    concs: &[u32],
    context: u32,
) -> Vec<ConcurrencyPoint> {
    let mut batch = IterationBatch::default();
    concs
        .iter()
        .map(|&c| {
            let ep_tok_s = steady_tok_s(ep, opts, c, context, &mut batch);
            let (other_tok_s, other_layout) = others
                .iter()
                .map(|m| {
                    (
                        steady_tok_s(m.as_ref(), opts, c, context, &mut batch),
                        m.layout(),
                    )
                })
                .fold(
                    (0.0, others[0].layout()),
                    |a, b| if b.0 > a.0 { b } else { a },
                );
            ConcurrencyPoint {
                concurrency: c,
                ep_tok_s,
                other_tok_s,
                other_layout,
            }
        })
        .collect()
}

fn verdict_of(points: &[ConcurrencyPoint]) -> Verdict {
    let wins = points.iter().filter(|p| p.ep_tok_s > p.other_tok_s).count();
    match wins {
        0 => Verdict::No,
        w if w == points.len() => Verdict::Yes,
        _ => Verdict::DependsOnConcurrency,
    }
}

/// Inputs of the EP question.
pub struct EpQuestion<'a> {
    pub spec: &'a ModelSpec,
    pub opts: &'a ServerOptions,
    pub workload: &'a Workload,
    pub knobs: Knobs,
    /// EP over all GPUs.
    pub ep_layout: Layout,
    /// Feasible non-EP layouts.
    pub others: Vec<Layout>,
    pub comm_spread: f64,
    pub draws: u32,
    pub seed: u64,
    /// The model's own error where known, for the confidence line.
    pub known_error: Option<KnownModelError>,
    /// `--moe-a2a-backend` of the EP side (the other layouts run without it).
    pub ep_a2a_backend: Option<String>,
    /// The user's other modelled flags, for the other layout's `try:` line.
    pub extra_flags: Vec<String>,
    /// The same for the EP layout's, less a MoE runner that cannot run EP
    /// ([`crate::engine::Launch::other_flags_on`]).
    pub ep_extra_flags: Vec<String>,
}

/// Answers "should we try EP?".
pub fn ep_question(q: &EpQuestion<'_>, build: &Build<'_>) -> Result<EpAnswer, String> {
    let conc = q.workload.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY);
    let context = q.workload.random_input_len + q.workload.random_output_len / 2;
    let mut concs: Vec<u32> = VERDICT_CONCURRENCIES.to_vec();
    if !concs.contains(&conc) {
        concs.push(conc);
        concs.sort_unstable();
    }
    let build_all = |k: Knobs| -> Result<Sides, String> {
        let ep = build(q.ep_layout, k)?;
        let others: Vec<_> = q.others.iter().filter_map(|l| build(*l, k).ok()).collect();
        if others.is_empty() {
            return Err("no layout without EP fits this model on this machine".into());
        }
        Ok((ep, others))
    };
    let (ep, others) = build_all(q.knobs)?;
    let points = grid(ep.as_ref(), &others, q.opts, &concs, context);
    let verdict = verdict_of(&points);
    let at = *points
        .iter()
        .find(|p| p.concurrency == conc)
        .expect("conc is in the grid");
    // The user's question is usually "EP8 instead of my TP8?": give that ratio too.
    let plain_tp = Layout {
        ep: 1,
        dp_attention: false,
        ..q.ep_layout
    };
    let ratio_vs_plain_tp = others.iter().find(|m| m.layout() == plain_tp).map(|m| {
        let mut batch = IterationBatch::default();
        at.ep_tok_s / steady_tok_s(m.as_ref(), q.opts, conc, context, &mut batch).max(1e-12)
    });
    let other_model = others
        .iter()
        .find(|m| m.layout() == at.other_layout)
        .expect("best layout is built");
    let wl = Workload {
        max_concurrency: Some(conc),
        ..q.workload.clone()
    };
    let mut ep_side = side(q, ep.as_ref(), &wl, conc, context)?;
    if let Some(b) = &q.ep_a2a_backend {
        ep_side.layout = format!("{}+{b}", ep_side.layout);
        let a2a = q.opts.engine.flag(Knob::AllToAllBackend);
        ep_side.flags = format!("{} {a2a} {b}", ep_side.flags);
    }
    let other_side = side(q, other_model.as_ref(), &wl, conc, context)?;

    // Confidence: the same verdict under perturbed knobs.
    let outcomes: Vec<Option<(Verdict, bool)>> = (0..q.draws)
        .into_par_iter()
        .map(|i| {
            draw_begun();
            let (k, _) = perturbed_knobs(q.knobs, q.seed.wrapping_add(i as u64), q.comm_spread);
            let (ep, others) = build_all(k).ok()?;
            let pts = grid(ep.as_ref(), &others, q.opts, &concs, context);
            let here = pts.iter().find(|p| p.concurrency == conc)?;
            Some((verdict_of(&pts), here.ep_tok_s < here.other_tok_s))
        })
        .collect();
    let ok: Vec<(Verdict, bool)> = outcomes.into_iter().flatten().collect();
    let n = ok.len().max(1) as f64;
    let confidence = ok.iter().filter(|(v, _)| *v == verdict).count() as f64 / n;
    let ep_slower_share = ok.iter().filter(|(_, s)| *s).count() as f64 / n;
    let sentence = sentence(
        verdict,
        &points,
        &ep_side,
        &other_side,
        conc,
        (ep_slower_share, ok.len()),
        ratio_vs_plain_tp.map(|r| (plain_tp.short_name(), r)),
    );
    let flags_to_try = flags_to_try(
        verdict,
        (&ep_side, &q.ep_extra_flags),
        (&other_side, &q.extra_flags),
    );
    let margin = (at.ep_tok_s / at.other_tok_s.max(1e-12) - 1.0).abs();
    let margin_within_known_error = q.known_error.as_ref().map(|k| margin < k.relative_error);
    Ok(EpAnswer {
        verdict,
        sentence,
        concurrency: conc,
        ep: ep_side,
        other: other_side,
        by_concurrency: points,
        confidence,
        ep_slower_share,
        draws: ok.len() as u32,
        comm_spread: q.comm_spread,
        flags_to_try,
        ratio_vs_plain_tp,
        known_error: q.known_error.clone(),
        margin_within_known_error,
        odds: None,
    })
}

/// The winner's full flags: its layout, the a2a backend where it runs one, the user's other
/// flags for that side; both sides' where the answer depends on concurrency.
fn flags_to_try(
    verdict: Verdict,
    (ep, ep_extra): (&EpSide, &[String]),
    (other, other_extra): (&EpSide, &[String]),
) -> Vec<String> {
    let full = |layout_flags: &str, extra: &[String]| {
        std::iter::once(layout_flags.to_string())
            .chain(extra.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    match verdict {
        Verdict::Yes => vec![full(&ep.flags, ep_extra)],
        Verdict::No => vec![full(&other.flags, other_extra)],
        Verdict::DependsOnConcurrency => {
            vec![full(&ep.flags, ep_extra), full(&other.flags, other_extra)]
        }
    }
}

fn side(
    q: &EpQuestion<'_>,
    m: &dyn IterationModel,
    wl: &Workload,
    conc: u32,
    context: u32,
) -> Result<EpSide, String> {
    let layout = m.layout();
    let run = crate::serving::simulate(m, q.opts, wl).map_err(|e| e.to_string())?;
    let per_micro = conc.div_ceil(layout.pp.max(1)).max(1);
    let batch = IterationBatch {
        decode_context_tokens: vec![context; per_micro as usize],
        prefill: Vec::new(),
    };
    let (reads, imbalance) = expert_reads(q.spec, &layout, per_micro);
    Ok(EpSide {
        layout: layout.short_name(),
        flags: q
            .opts
            .engine
            .rules()
            .launch_flags(&layout, q.opts.decode_context_parallel, 1),
        output_throughput: run.output_throughput,
        mean_tpot_ms: run.mean_tpot_ms,
        decode_breakdown: m.iteration(&batch).breakdown,
        wire_bytes_per_token_per_gpu: wire_bytes_per_token(q.spec, &layout, q.opts),
        expert_read_bytes_per_gpu: reads,
        imbalance,
        weight_bytes_per_gpu: m.memory().weight_bytes_per_gpu,
        kv_tokens: m.memory().kv_tokens,
    })
}

/// The one-sentence answer with its main reason.
fn sentence(
    v: Verdict,
    points: &[ConcurrencyPoint],
    ep: &EpSide,
    other: &EpSide,
    conc: u32,
    (slower_share, draws): (f64, usize),
    plain_tp: Option<(String, f64)>,
) -> String {
    let at = points
        .iter()
        .find(|p| p.concurrency == conc)
        .expect("in grid");
    let ratio = at.ep_tok_s / at.other_tok_s.max(1e-12);
    let comm = |s: &EpSide| s.decode_breakdown.comm_s();
    // Name the part of a decode step that differs most, then the volumes behind it.
    let (a, b) = (&ep.decode_breakdown, &other.decode_breakdown);
    let mut deltas = [
        ("communication", comm(ep) - comm(other)),
        ("expert and weight reads", a.weight_read_s - b.weight_read_s),
        (
            "weights from host memory",
            a.host_weight_s - b.host_weight_s,
        ),
        ("KV reads", a.kv_read_s - b.kv_read_s),
        ("compute", a.compute_s - b.compute_s),
        ("kernel latency floors", a.kernel_floor_s - b.kernel_floor_s),
        ("launch overhead", a.overhead_s - b.overhead_s),
    ];
    let sign = if matches!(v, Verdict::Yes) { -1.0 } else { 1.0 };
    deltas.sort_by(|x, y| (sign * y.1).total_cmp(&(sign * x.1)));
    let (part, delta) = deltas[0];
    let reason = format!(
        "a decode step at {conc} concurrent spends {:.1} ms {} on {part} ({:.1} vs {:.1} ms in all); per token each GPU sends {:.0} KB vs {:.0} KB, and the busiest GPU reads {:.2} GB of expert weights per step vs {:.2} GB (imbalance {:.2}×)",
        delta.abs() * 1e3,
        if delta >= 0.0 { "more" } else { "less" },
        a.total_s() * 1e3,
        b.total_s() * 1e3,
        ep.wire_bytes_per_token_per_gpu / 1e3,
        other.wire_bytes_per_token_per_gpu / 1e3,
        ep.expert_read_bytes_per_gpu / 1e9,
        other.expert_read_bytes_per_gpu / 1e9,
        ep.imbalance
    );
    let conf = format!(
        "{} slower than {} at {conc} concurrent in {:.0}% of {draws} draws",
        ep.layout,
        other.layout,
        slower_share * 100.0
    );
    let (lo, hi) = (points[0].concurrency, points[points.len() - 1].concurrency);
    // Plain TP is named separately only when it is not already the layout compared against.
    let vs_tp = match plain_tp {
        Some((name, r)) if name != other.layout => format!(", {r:.2}× {name}"),
        _ => String::new(),
    };
    match v {
        Verdict::No => format!(
            "No: {} is slower than the best non-EP layout at every concurrency from {lo} to {hi} ({ratio:.2}× {}{vs_tp} at {conc}), because {reason}; {conf}.",
            ep.layout, other.layout
        ),
        Verdict::Yes => format!(
            "Yes: {} is faster than the best non-EP layout at every concurrency from {lo} to {hi} ({ratio:.2}× {}{vs_tp} at {conc}), because {reason}; {conf}.",
            ep.layout, other.layout
        ),
        Verdict::DependsOnConcurrency => {
            let wins: Vec<String> = points
                .iter()
                .filter(|p| p.ep_tok_s > p.other_tok_s)
                .map(|p| p.concurrency.to_string())
                .collect();
            format!(
                "Depends on concurrency: {} wins only at {} concurrent ({ratio:.2}× {}{vs_tp} at {conc}), because {reason}; {conf}.",
                ep.layout,
                wins.join(", "),
                other.layout
            )
        }
    }
}
