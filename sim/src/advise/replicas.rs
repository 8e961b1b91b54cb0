//! "One TP8 server, or two TP4 servers behind a router?": one server on every GPU of the box
//! against two servers of half the GPUs each on disjoint GPU sets (the box's first half and its
//! second, as two launch lines with `CUDA_VISIBLE_DEVICES`, or SGLang's `--dp-size 2` without
//! `--enable-dp-attention`: two engines behind its router, `python/sglang/srt/managers/
//! data_parallel_controller.py`, each on `base_gpu_id + i × tp_size`).
//!
//! Each replica is costed on its own GPUs ([`crate::machine::Machine::with_gpus`]: its
//! collectives between exactly those GPUs) with its own KV pool; the router splits the load
//! evenly (SGLang's default round-robin), so at `c` concurrent requests each replica decodes
//! `c / 2`. Compared per box: steady decode throughput at the workload's context (prefill
//! excluded), each request's decode time per token, the time to first token of a lone prompt
//! (its prefill), and memory per replica (weights per GPU, KV tokens). Confidence: the same
//! perturbed draws as the EP question ([`super::verdict::perturbed_knobs`]).

use super::provenance::KnownModelError;
use super::verdict::{perturbed_knobs, reheaded, requests_held, steady_tok_s, verdict_from_odds};
use crate::cost::{IterationBatch, IterationModel, Knobs, PrefillChunk};
use crate::options::ServerOptions;
use models::Layout;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Which server a model is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replica {
    /// One server on every GPU.
    Whole,
    /// The server on the box's first half of the GPUs.
    FirstHalf,
    /// The server on the second half.
    SecondHalf,
}

/// Builds a model of `layout` with knobs for one replica's GPUs.
pub type BuildOn<'a> =
    dyn Fn(Layout, Knobs, Replica) -> Result<Box<dyn IterationModel>, String> + Sync + 'a;

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplicasVerdict {
    /// Two servers of half the box give more throughput in most draws.
    TwoReplicas,
    /// One server of the whole box does (or half the box cannot hold the model).
    OneServer,
    /// Within the uncertainty: measure both.
    Depends,
}

/// One side of the comparison at the workload's load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicasSide {
    /// The flags of one server, in the engine's spelling.
    pub flags: String,
    pub servers: u32,
    /// Decode tokens/s of the whole box (all servers).
    pub box_tok_s: f64,
    /// Each request's decode time per output token, ms.
    pub tpot_ms: f64,
    /// A lone prompt's prefill, ms (the TTFT without queueing).
    pub ttft_ms: f64,
    /// Weights on each GPU of one server, bytes.
    pub weight_bytes_per_gpu: u64,
    /// KV tokens of one server's pool.
    pub kv_tokens_per_server: u64,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicasAnswer {
    pub verdict: ReplicasVerdict,
    pub sentence: String,
    pub concurrency: u32,
    pub context_tokens: u32,
    pub input_tokens: u32,
    pub one: ReplicasSide,
    /// `None` when half the box cannot hold the model (the reason in `sentence`).
    pub two: Option<ReplicasSide>,
    /// Share of draws in which two servers give more throughput per box.
    pub two_faster_share: f64,
    pub draws: u32,
    pub known_error: Option<KnownModelError>,
    /// What to launch.
    pub flags_to_try: Vec<String>,
    /// The verdict from the two predictions' 80% intervals and their error correlation
    /// ([`crate::uncertainty::verdict::odds`]): the chance the predicted-faster option is faster,
    /// or "Depends: measure both" with the measurement that decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub odds: Option<crate::uncertainty::verdict::Odds>,
}

/// Inputs of the question.
pub struct ReplicasQuestion<'a> {
    /// The one server (every GPU).
    pub whole: Layout,
    /// Each of the two servers (half the GPUs).
    pub half: Layout,
    pub whole_opts: &'a ServerOptions,
    pub half_opts: &'a ServerOptions,
    pub concurrency: u32,
    pub context_tokens: u32,
    pub input_tokens: u32,
    pub knobs: Knobs,
    pub comm_spread: f64,
    pub draws: u32,
    pub seed: u64,
    pub known_error: Option<KnownModelError>,
    /// The user's other flags, after each server's own on the `try:` lines.
    pub extra_flags: Vec<String>,
}

/// One server's throughput, per-request decode time and lone-prompt prefill at `c` requests.
fn serve(
    m: &dyn IterationModel,
    o: &ServerOptions,
    c: u32,
    q: &ReplicasQuestion,
) -> (f64, f64, f64) {
    let mut batch = IterationBatch::default();
    let tok_s = steady_tok_s(m, o, c, q.context_tokens, &mut batch);
    let kv_cap = m.memory().kv_tokens / q.context_tokens.max(1) as u64;
    let running = (c as u64).min(kv_cap).max(1) as f64;
    let tpot_ms = if tok_s > 0.0 {
        running / tok_s * 1e3
    } else {
        f64::INFINITY
    };
    batch.decode_context_tokens.clear();
    batch.prefill = vec![PrefillChunk {
        new_tokens: q.input_tokens.max(1),
        cached_tokens: 0,
    }];
    let ttft_ms = m.iteration(&batch).latency_s * 1e3;
    (tok_s, tpot_ms, ttft_ms)
}

/// One server's model, or why it cannot serve the workload: it does not build (the model does
/// not fit its GPUs), or its KV pool holds no request of the workload's context (a half box can
/// hold the weights and leave too little cache).
fn serving(
    q: &ReplicasQuestion,
    build: &BuildOn,
    layout: Layout,
    k: Knobs,
    r: Replica,
) -> Result<Box<dyn IterationModel>, String> {
    let m = build(layout, k, r)?;
    if requests_held(m.as_ref(), q.context_tokens) == 0 {
        return Err(format!(
            "its KV pool holds {} tokens, less than one request's {} at this workload",
            m.memory().kv_tokens,
            q.context_tokens
        ));
    }
    Ok(m)
}

/// Box throughput of one server vs two at knobs `k`: `(one, two)`, `two` `None` when a half
/// cannot serve the workload ([`serving`]).
fn box_tok_s(
    q: &ReplicasQuestion,
    build: &BuildOn,
    k: Knobs,
) -> Result<(f64, Option<f64>), String> {
    let one = serving(q, build, q.whole, k, Replica::Whole)?;
    let one_tok = serve(one.as_ref(), q.whole_opts, q.concurrency, q).0;
    let halves = [Replica::FirstHalf, Replica::SecondHalf];
    let loads = [q.concurrency.div_ceil(2), q.concurrency / 2];
    let mut two = 0.0;
    for (r, c) in halves.into_iter().zip(loads) {
        let Ok(m) = serving(q, build, q.half, k, r) else {
            return Ok((one_tok, None));
        };
        if c > 0 {
            two += serve(m.as_ref(), q.half_opts, c, q).0;
        }
    }
    Ok((one_tok, Some(two)))
}

fn side(
    m: &dyn IterationModel,
    o: &ServerOptions,
    layout: Layout,
    servers: u32,
    q: &ReplicasQuestion,
) -> ReplicasSide {
    let per_server = q.concurrency.div_ceil(servers);
    let (tok_s, tpot_ms, ttft_ms) = serve(m, o, per_server, q);
    ReplicasSide {
        flags: o
            .engine
            .rules()
            .launch_flags(&layout, o.decode_context_parallel, 1),
        servers,
        box_tok_s: 0.0_f64.max(tok_s),
        tpot_ms,
        ttft_ms,
        weight_bytes_per_gpu: m.memory().weight_bytes_per_gpu,
        kv_tokens_per_server: m.memory().kv_tokens,
    }
}

/// Answers "one server of the whole box, or two of half of it?".
pub fn replicas_question(
    q: &ReplicasQuestion<'_>,
    build: &BuildOn<'_>,
) -> Result<ReplicasAnswer, String> {
    let whole = serving(q, build, q.whole, q.knobs, Replica::Whole)
        .map_err(|e| format!("one {} server: {e}", q.whole.short_name()))?;
    let mut one = side(whole.as_ref(), q.whole_opts, q.whole, 1, q);
    let (one_tok, two_tok) = box_tok_s(q, build, q.knobs)?;
    one.box_tok_s = one_tok;
    let half = serving(q, build, q.half, q.knobs, Replica::FirstHalf);
    let two = match (&half, two_tok) {
        (Ok(m), Some(t)) => {
            let mut s = side(m.as_ref(), q.half_opts, q.half, 2, q);
            s.box_tok_s = t;
            Some(s)
        }
        _ => None,
    };
    let faster: Vec<bool> = (0..q.draws)
        .into_par_iter()
        .filter_map(|i| {
            super::draw_begun();
            let (k, _) = perturbed_knobs(
                q.knobs,
                q.seed.wrapping_add(0x2e91 + i as u64),
                q.comm_spread,
            );
            let (a, b) = box_tok_s(q, build, k).ok()?;
            Some(b? > a)
        })
        .collect();
    let share = faster.iter().filter(|f| **f).count() as f64 / faster.len().max(1) as f64;
    let verdict = match &two {
        None => ReplicasVerdict::OneServer,
        Some(_) if share >= 0.8 => ReplicasVerdict::TwoReplicas,
        Some(_) if share <= 0.2 => ReplicasVerdict::OneServer,
        Some(_) => ReplicasVerdict::Depends,
    };
    let sentence = sentence(q, verdict, &one, two.as_ref(), &half, share, faster.len());
    let with_extra = |flags: &str| {
        std::iter::once(flags.to_string())
            .chain(q.extra_flags.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut flags_to_try = vec![with_extra(&one.flags)];
    if let Some(t) = &two {
        let router = q.half_opts.engine.rules().replicas_flag(2);
        flags_to_try.push(format!("{} {router}", with_extra(&t.flags)));
        if verdict == ReplicasVerdict::TwoReplicas {
            flags_to_try.reverse();
        }
    }
    Ok(ReplicasAnswer {
        verdict,
        sentence,
        concurrency: q.concurrency,
        context_tokens: q.context_tokens,
        input_tokens: q.input_tokens,
        one,
        two,
        two_faster_share: share,
        draws: faster.len() as u32,
        known_error: q.known_error.clone(),
        flags_to_try,
        odds: None,
    })
}

/// The sentence's first words for a verdict.
fn head_word(v: ReplicasVerdict) -> &'static str {
    match v {
        ReplicasVerdict::TwoReplicas => "Two servers",
        ReplicasVerdict::OneServer => "One server",
        ReplicasVerdict::Depends => "Depends (measure both)",
    }
}

/// The names the odds give the two sides.
pub const ONE_SERVER: &str = "one server";
pub const TWO_SERVERS: &str = "two servers";

impl ReplicasAnswer {
    /// The verdict as the two predictions' intervals state it ([`ReplicasAnswer::odds`]): the
    /// predicted-faster side where it is faster with at least the verdict bar's probability, else
    /// Depends — the knob draws (`two_faster_share`) then say only how robust the prediction is.
    /// The sentence's first words and the order of the flags to try follow. An answer without
    /// odds (half the box cannot hold the model) keeps its verdict.
    pub fn follow_odds(&mut self) {
        use ReplicasVerdict::{Depends, OneServer, TwoReplicas};
        let odds = self.odds.as_ref();
        let Some(v) = verdict_from_odds(odds, TWO_SERVERS, [TwoReplicas, OneServer, Depends])
        else {
            return;
        };
        if v == self.verdict {
            return;
        }
        self.sentence = reheaded(&self.sentence, head_word(self.verdict), head_word(v));
        // two servers first only where they are the answer
        if (v == ReplicasVerdict::TwoReplicas) != (self.verdict == ReplicasVerdict::TwoReplicas) {
            self.flags_to_try.reverse();
        }
        self.verdict = v;
    }
}

fn sentence(
    q: &ReplicasQuestion,
    verdict: ReplicasVerdict,
    one: &ReplicasSide,
    two: Option<&ReplicasSide>,
    half: &Result<Box<dyn IterationModel>, String>,
    share: f64,
    draws: usize,
) -> String {
    let (w, h) = (q.whole.short_name(), q.half.short_name());
    let Some(t) = two else {
        let why = half.as_ref().err().cloned().unwrap_or_default();
        return format!(
            "One server: {h} on half the box cannot run the model ({why}); one {w} server it is."
        );
    };
    let head = head_word(verdict);
    format!(
        "{head}: two {h} servers give {:.0} tok/s per box at {} concurrent ({:.2}× one {w} server's {:.0}); per request {:.1} vs {:.1} ms per output token, a lone prompt's prefill {:.0} vs {:.0} ms; each {h} server holds {} KV tokens ({w}: {}); two servers faster in {:.0}% of {draws} draws over the efficiencies.",
        t.box_tok_s,
        q.concurrency,
        t.box_tok_s / one.box_tok_s.max(1e-12),
        one.box_tok_s,
        t.tpot_ms,
        one.tpot_ms,
        t.ttft_ms,
        one.ttft_ms,
        t.kv_tokens_per_server,
        one.kv_tokens_per_server,
        share * 100.0,
    )
}
