//! `sim advise --question scale`: what the other boxes of a multi-node machine buy for this model
//! and workload. Three ways to use N boxes are compared at every concurrency of a grid (steady
//! decode throughput, one cost call per point) and, at the workload's own concurrency, by a full
//! serving simulation:
//!
//! - **one box**: the best layout of one node's GPUs; the other boxes idle;
//! - **all boxes**: the best layout of all GPUs as one server (`--nnodes N`), its collectives over
//!   the network as `sim::machine` costs them;
//! - **replicas**: the best one-box layout as an independent server on every box, the requests
//!   split evenly between them (N servers behind a router such as sglang_router).
//!
//! The answer is the option with the most output tokens/s in the full simulation. Its confidence
//! is the share of perturbed draws (compute and memory ±20%, communication ± the profile's
//! spread) in which the same option still comes first when each option's simulated throughput is
//! scaled by how much its steady decode throughput moves under the draw (each option keeps the
//! layout it was simulated with).

use super::verdict::{
    Build, DEFAULT_CONCURRENCY, VERDICT_CONCURRENCIES, perturbed_knobs, steady_tok_s,
};
use crate::cost::{IterationBatch, IterationModel, Knobs, TimeBreakdown};
use crate::engine::Knob;
use crate::options::ServerOptions;
use crate::workload::Workload;
use models::{Layout, ModelSpec};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// A way to use the boxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleChoice {
    /// One box; the others idle.
    OneBox,
    /// One server over all boxes.
    AllBoxes,
    /// An independent server on every box.
    Replicas,
}

impl ScaleChoice {
    /// Words for sentences and tables.
    pub fn describe(&self) -> &'static str {
        match self {
            ScaleChoice::OneBox => "one box",
            ScaleChoice::AllBoxes => "one server over all boxes",
            ScaleChoice::Replicas => "one server per box",
        }
    }
}

/// One option at the workload's concurrency, from the full simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleOption {
    pub choice: ScaleChoice,
    pub layout: String,
    /// The flags of one server (`--nnodes N` over all boxes), in the engine's own spelling.
    #[serde(alias = "sglang_flags")]
    pub flags: String,
    /// GPUs in use, all servers together.
    pub gpus: u32,
    /// Independent servers.
    pub servers: u32,
    /// Requests in flight at each server.
    pub concurrency_per_server: Vec<u32>,
    /// Output tokens/s of all servers together.
    pub output_throughput: f64,
    /// Means over all requests of all servers.
    pub mean_ttft_ms: f64,
    pub mean_tpot_ms: f64,
    /// KV tokens one server holds.
    pub kv_tokens: u64,
    pub weight_bytes_per_gpu: u64,
    /// One decode iteration of one server at its concurrency and the mean context, by part.
    pub decode_breakdown: TimeBreakdown,
}

/// Steady decode throughput of each option at one concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScalePoint {
    pub concurrency: u32,
    /// 0 when the model fits no layout of one box.
    pub one_box_tok_s: f64,
    pub one_box_layout: Option<Layout>,
    pub all_boxes_tok_s: f64,
    pub all_boxes_layout: Layout,
    pub replicas_tok_s: f64,
    pub replica_layout: Option<Layout>,
    /// The option with the most steady throughput here.
    pub leader: ScaleChoice,
}

/// The answer to `--question scale`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleAnswer {
    /// The option with the most output tokens/s at the workload's concurrency.
    pub best: ScaleChoice,
    /// One sentence: the answer and the numbers behind it.
    pub sentence: String,
    pub concurrency: u32,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// `None` when the model fits no layout of one box.
    pub one_box: Option<ScaleOption>,
    pub all_boxes: ScaleOption,
    pub replicas: Option<ScaleOption>,
    pub by_concurrency: Vec<ScalePoint>,
    /// Share of perturbed draws in which `best` still comes first (see the module docs).
    pub confidence: f64,
    pub draws: u32,
    /// Relative spread used for communication time.
    pub comm_spread: f64,
    /// Server flags to try, one line per server to launch.
    pub flags_to_try: Vec<String>,
    /// Where the network figures come from and how groups across boxes were costed.
    pub notes: Vec<String>,
    /// The best option against the runner-up from their 80% intervals
    /// ([`crate::uncertainty::verdict::odds`]); "Depends: measure both" below the bar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub odds: Option<crate::uncertainty::verdict::Odds>,
}

/// Inputs of the scale question.
pub struct ScaleQuestion<'a> {
    pub spec: &'a ModelSpec,
    /// The server options of each layout (SGLang's defaults depend on it).
    pub opts_for: &'a (dyn Fn(Layout) -> ServerOptions + Sync),
    pub workload: &'a Workload,
    pub knobs: Knobs,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// Feasible layouts of one box's GPUs (costed on the best-placed box).
    pub one_box: Vec<Layout>,
    /// Feasible layouts of all GPUs.
    pub all_boxes: Vec<Layout>,
    pub comm_spread: f64,
    pub draws: u32,
    pub seed: u64,
    /// Machine notes to pass on (network provenance).
    pub notes: Vec<String>,
    /// The user's other modelled server flags for a layout, appended to its flags to try
    /// ([`crate::engine::Launch::other_flags_on`]).
    pub extra_flags: &'a (dyn Fn(&Layout) -> Vec<String> + Sync),
}

type Models = Vec<Box<dyn IterationModel>>;

/// `concurrency` requests split evenly over `servers` servers (busy ones only).
fn shares(concurrency: u32, servers: u32) -> Vec<u32> {
    (0..servers)
        .map(|i| concurrency / servers + u32::from(i < concurrency % servers))
        .filter(|&c| c > 0)
        .collect()
}

/// The best model by steady throughput of `f(model)`, with that throughput.
fn best_by(
    models: &[Box<dyn IterationModel>],
    f: impl Fn(&dyn IterationModel) -> f64,
) -> Option<(&dyn IterationModel, f64)> {
    models
        .iter()
        .map(|m| (m.as_ref(), f(m.as_ref())))
        .fold(None, |acc, (m, t)| match acc {
            Some((_, best)) if best >= t => acc,
            _ => Some((m, t)),
        })
}

struct Grid<'q> {
    opts_for: &'q (dyn Fn(Layout) -> ServerOptions + Sync),
    context: u32,
    nodes: u32,
}

impl Grid<'_> {
    /// Steady decode tok/s of `m` summed over option `o`'s servers.
    fn option_tok_s(&self, m: &dyn IterationModel, o: &ScaleOption) -> f64 {
        o.concurrency_per_server
            .iter()
            .map(|&c| self.tok_s(m, c))
            .sum()
    }

    fn tok_s(&self, m: &dyn IterationModel, c: u32) -> f64 {
        steady_tok_s(
            m,
            &(self.opts_for)(m.layout()),
            c,
            self.context,
            &mut IterationBatch::default(),
        )
    }

    fn replicas_tok_s(&self, m: &dyn IterationModel, c: u32) -> f64 {
        shares(c, self.nodes)
            .iter()
            .map(|&s| self.tok_s(m, s))
            .sum()
    }

    fn point(&self, one: &[Box<dyn IterationModel>], all: &Models, c: u32) -> ScalePoint {
        let (a, at) = best_by(all, |m| self.tok_s(m, c)).expect("all-box models are present");
        let o = best_by(one, |m| self.tok_s(m, c));
        let r = best_by(one, |m| self.replicas_tok_s(m, c));
        let mut p = ScalePoint {
            concurrency: c,
            one_box_tok_s: o.map_or(0.0, |x| x.1),
            one_box_layout: o.map(|x| x.0.layout()),
            all_boxes_tok_s: at,
            all_boxes_layout: a.layout(),
            replicas_tok_s: r.map_or(0.0, |x| x.1),
            replica_layout: r.map(|x| x.0.layout()),
            leader: ScaleChoice::AllBoxes,
        };
        p.leader = leader(&p);
        p
    }
}

/// The built model of layout `l` (one the grid chose, so it is there).
fn find(ms: &Models, l: Layout) -> &dyn IterationModel {
    ms.iter()
        .find(|m| m.layout() == l)
        .expect("the grid's layout is built")
        .as_ref()
}

/// The leader of a grid point (ties go to one box, then to one server).
fn leader(p: &ScalePoint) -> ScaleChoice {
    let mut best = (ScaleChoice::AllBoxes, p.all_boxes_tok_s);
    if p.one_box_layout.is_some() && p.one_box_tok_s >= best.1 {
        best = (ScaleChoice::OneBox, p.one_box_tok_s);
    }
    if p.replica_layout.is_some() && p.replicas_tok_s > best.1 {
        best = (ScaleChoice::Replicas, p.replicas_tok_s);
    }
    best.0
}

/// Answers "what does the second box buy?".
pub fn scale_question(q: &ScaleQuestion<'_>, build: &Build<'_>) -> Result<ScaleAnswer, String> {
    let conc = q.workload.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY);
    let grid = Grid {
        opts_for: q.opts_for,
        context: q.workload.random_input_len + q.workload.random_output_len / 2,
        nodes: q.nodes,
    };
    let mut concs: Vec<u32> = VERDICT_CONCURRENCIES.to_vec();
    if !concs.contains(&conc) {
        concs.push(conc);
        concs.sort_unstable();
    }
    let build_all = |k: Knobs, ls: &[Layout]| -> Models {
        ls.iter().filter_map(|l| build(*l, k).ok()).collect()
    };
    let one = build_all(q.knobs, &q.one_box);
    let all = build_all(q.knobs, &q.all_boxes);
    if all.is_empty() {
        return Err(format!(
            "{} fits no layout of all {} GPUs on this machine",
            q.spec.name,
            q.nodes * q.gpus_per_node
        ));
    }
    let by_concurrency: Vec<ScalePoint> =
        concs.iter().map(|&c| grid.point(&one, &all, c)).collect();
    let at = *by_concurrency
        .iter()
        .find(|p| p.concurrency == conc)
        .expect("conc is in the grid");
    let sim = |choice, m: &dyn IterationModel, servers: u32| {
        simulate_option(q, &grid, choice, m, &shares(conc, servers), conc)
    };
    let all_boxes = sim(ScaleChoice::AllBoxes, find(&all, at.all_boxes_layout), 1)?;
    let one_box = match at.one_box_layout {
        Some(l) => Some(sim(ScaleChoice::OneBox, find(&one, l), 1)?),
        None => None,
    };
    let replicas = match at.replica_layout {
        Some(l) => Some(sim(ScaleChoice::Replicas, find(&one, l), q.nodes)?),
        None => None,
    };
    let options: Vec<&ScaleOption> = [one_box.as_ref(), Some(&all_boxes), replicas.as_ref()]
        .into_iter()
        .flatten()
        .collect();
    let best = options
        .iter()
        .fold(None::<&ScaleOption>, |acc, o| match acc {
            Some(b) if b.output_throughput >= o.output_throughput => Some(b),
            _ => Some(o),
        })
        .expect("all boxes is an option")
        .choice;

    let picked: Vec<(&ScaleOption, Layout, f64)> = options
        .iter()
        .map(|o| {
            let m = match o.choice {
                ScaleChoice::AllBoxes => find(&all, at.all_boxes_layout),
                ScaleChoice::OneBox => find(&one, at.one_box_layout.expect("one box fits")),
                ScaleChoice::Replicas => find(&one, at.replica_layout.expect("one box fits")),
            };
            (*o, m.layout(), grid.option_tok_s(m, o).max(1e-12))
        })
        .collect();
    let (confidence, draws) = confidence(q, &grid, build, &picked, best);
    let (chosen, chosen_layout, _) = picked
        .iter()
        .find(|(o, _, _)| o.choice == best)
        .expect("best is an option");
    let flags_to_try = flags_to_try(q, chosen, chosen_layout);
    let sentence = sentence(
        q,
        best,
        one_box.as_ref(),
        &all_boxes,
        replicas.as_ref(),
        (confidence, draws),
    );
    Ok(ScaleAnswer {
        best,
        sentence,
        concurrency: conc,
        nodes: q.nodes,
        gpus_per_node: q.gpus_per_node,
        one_box,
        all_boxes,
        replicas,
        by_concurrency,
        confidence,
        draws: draws as u32,
        comm_spread: q.comm_spread,
        flags_to_try,
        notes: q.notes.clone(),
        odds: None,
    })
}

/// Confidence in `best`: each option's chosen layout (`picked`: option, layout, nominal steady
/// tok/s) rebuilt under perturbed knobs, its simulated throughput moving as its steady decode
/// throughput does. The share of draws where `best` stays best, and the draws that built.
fn confidence(
    q: &ScaleQuestion<'_>,
    grid: &Grid<'_>,
    build: &Build<'_>,
    picked: &[(&ScaleOption, Layout, f64)],
    best: ScaleChoice,
) -> (f64, usize) {
    let outcomes: Vec<Option<ScaleChoice>> = (0..q.draws)
        .into_par_iter()
        .map(|i| {
            super::draw_begun();
            let (k, _) = perturbed_knobs(q.knobs, q.seed.wrapping_add(i as u64), q.comm_spread);
            let mut best: Option<(ScaleChoice, f64)> = None;
            for (o, layout, nominal) in picked {
                let m = build(*layout, k).ok()?;
                let t = o.output_throughput * grid.option_tok_s(m.as_ref(), o) / nominal;
                if best.is_none_or(|(_, b)| t > b) {
                    best = Some((o.choice, t));
                }
            }
            best.map(|b| b.0)
        })
        .collect();
    let ok: Vec<ScaleChoice> = outcomes.into_iter().flatten().collect();
    let share = ok.iter().filter(|c| **c == best).count() as f64 / ok.len().max(1) as f64;
    (share, ok.len())
}

/// Simulates `servers.len()` servers of `m`, server `i` at `servers[i]` concurrent requests and
/// its share of the prompts (and of the request rate).
fn simulate_option(
    q: &ScaleQuestion<'_>,
    grid: &Grid<'_>,
    choice: ScaleChoice,
    m: &dyn IterationModel,
    servers: &[u32],
    conc: u32,
) -> Result<ScaleOption, String> {
    let layout = m.layout();
    let (mut out_tok_s, mut ttft, mut tpot, mut prompts) = (0.0, 0.0, 0.0, 0.0);
    // Servers with the same share run the same simulation.
    let mut distinct: Vec<u32> = servers.to_vec();
    distinct.dedup();
    for &share in &distinct {
        let count = servers.iter().filter(|&&s| s == share).count() as f64;
        let frac = share as f64 / conc.max(1) as f64;
        let wl = Workload {
            max_concurrency: Some(share),
            num_prompts: ((q.workload.num_prompts as f64 * frac).ceil() as u32).max(1),
            request_rate: q.workload.request_rate.map(|r| r * frac),
            ..q.workload.clone()
        };
        let run =
            crate::serving::simulate(m, &(q.opts_for)(layout), &wl).map_err(|e| e.to_string())?;
        let n = wl.num_prompts as f64 * count;
        out_tok_s += run.output_throughput * count;
        ttft += run.mean_ttft_ms * n;
        tpot += run.mean_tpot_ms * n;
        prompts += n;
    }
    let share = servers.first().copied().unwrap_or(1);
    let per_micro = share.div_ceil(layout.pp.max(1)).max(1);
    let batch = IterationBatch {
        decode_context_tokens: vec![grid.context; per_micro as usize],
        prefill: Vec::new(),
    };
    let nnodes = if choice == ScaleChoice::AllBoxes {
        q.nodes
    } else {
        1
    };
    Ok(ScaleOption {
        choice,
        layout: layout.short_name(),
        flags: {
            let o = (q.opts_for)(layout);
            let f = o
                .engine
                .rules()
                .launch_flags(&layout, o.decode_context_parallel, nnodes);
            match o.moe_a2a_backend {
                Some(b) => format!("{f} {} {b}", o.engine.flag(Knob::AllToAllBackend)),
                None => f,
            }
        },
        gpus: layout.gpus() * servers.len().max(1) as u32,
        servers: servers.len() as u32,
        concurrency_per_server: servers.to_vec(),
        output_throughput: out_tok_s,
        mean_ttft_ms: ttft / prompts.max(1.0),
        mean_tpot_ms: tpot / prompts.max(1.0),
        kv_tokens: m.memory().kv_tokens,
        weight_bytes_per_gpu: m.memory().weight_bytes_per_gpu,
        decode_breakdown: m.iteration(&batch).breakdown,
    })
}

/// One launch line per server (or per node of a server over all boxes) of `o`, run as `layout`,
/// the user's other modelled flags for it appended, in the engine's words.
fn flags_to_try(q: &ScaleQuestion<'_>, o: &ScaleOption, layout: &Layout) -> Vec<String> {
    let (nodes, extra) = (q.nodes, (q.extra_flags)(layout).join(" "));
    let rules = (q.opts_for)(*layout).engine.rules();
    let line = |f: String| {
        if extra.is_empty() {
            f
        } else {
            format!("{f} {extra}")
        }
    };
    match o.choice {
        ScaleChoice::OneBox => vec![line(o.flags.clone())],
        ScaleChoice::AllBoxes => (0..nodes)
            .map(|r| line(format!("{} {}", o.flags, rules.node_join_flags(r))))
            .collect(),
        ScaleChoice::Replicas => vec![format!(
            "{}  (on each of the {nodes} boxes; {})",
            line(o.flags.clone()),
            rules.router_hint(nodes)
        )],
    }
}

/// The answer in one sentence, with the numbers behind it.
fn sentence(
    q: &ScaleQuestion<'_>,
    best: ScaleChoice,
    one: Option<&ScaleOption>,
    all: &ScaleOption,
    rep: Option<&ScaleOption>,
    (confidence, draws): (f64, usize),
) -> String {
    let conc = q.workload.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY);
    let step = |o: &ScaleOption| {
        format!(
            "{:.1} of its {:.1} ms decode step communicating, {} KV tokens",
            o.decode_breakdown.comm_s() * 1e3,
            o.decode_breakdown.total_s() * 1e3,
            o.kv_tokens
        )
    };
    let head = format!("Best at {conc} concurrent: {}", best.describe());
    let body = match one {
        None => format!(
            "{} fits no layout of one box's {} GPUs; over {} boxes {} ({}) gives {:.0} output tok/s ({})",
            q.spec.name,
            q.gpus_per_node,
            q.nodes,
            all.layout,
            all.flags,
            all.output_throughput,
            step(all)
        ),
        Some(one) => {
            let r = |o: &ScaleOption| o.output_throughput / one.output_throughput.max(1e-12);
            let reps = rep.map_or(String::new(), |rep| {
                format!(
                    "; {} separate {} servers, one per box, give {:.2}× ({:.0} tok/s)",
                    rep.servers,
                    rep.layout,
                    r(rep),
                    rep.output_throughput
                )
            });
            format!(
                "{} over {} boxes ({}) gives {:.2}× the output tok/s of {} on one box ({:.0} vs {:.0} tok/s){reps}. Over the boxes the server spends {}; on one box {}",
                all.layout,
                q.nodes,
                all.flags,
                r(all),
                one.layout,
                all.output_throughput,
                one.output_throughput,
                step(all),
                step(one)
            )
        }
    };
    // Name a near tie: the simulation is not that precise.
    let mut ranked: Vec<&ScaleOption> = [one, Some(all), rep].into_iter().flatten().collect();
    ranked.sort_by(|a, b| b.output_throughput.total_cmp(&a.output_throughput));
    let tie = match ranked.as_slice() {
        [a, b, ..] if b.output_throughput >= 0.95 * a.output_throughput => format!(
            " {} is within {:.1}% of it: treat the two as a tie.",
            capitalized(b.choice.describe()),
            (1.0 - b.output_throughput / a.output_throughput.max(1e-12)) * 100.0
        ),
        _ => String::new(),
    };
    format!(
        "{head}. {body}. {} wins in {:.0}% of {draws} perturbed draws.{tie}",
        capitalized(best.describe()),
        confidence * 100.0
    )
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_split_evenly_over_busy_servers() {
        assert_eq!(shares(64, 2), vec![32, 32]);
        assert_eq!(shares(5, 2), vec![3, 2]);
        assert_eq!(shares(1, 2), vec![1]);
    }
}
