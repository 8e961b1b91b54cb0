//! `sim advise`: rank layouts for a workload; `--question ep` answers "should we try EP?".
//!
//! With `--moe-a2a-backend`, the backend runs on the layouts it can run (EP over the whole TP
//! group) and the others run without it; the EP question compares EP with the backend against
//! the best layout without EP. Every answer says what it rests on (measured or modelled inputs)
//! and, where known, the model's own error.

use super::advise_table::print_advice;
use super::args::{FormatArg, TargetArgs};
use super::export::{Export, export};
use super::layouts::{label_rows, layouts};
use super::setup::{CalibrationArg, Setup};
use super::workload_args::WorkloadArgs;
use crate::cli::tables::wrap;
use anyhow::{Result, bail};
use models::Layout;
use sim::advise::verdict::DEFAULT_CONCURRENCY;
use sim::advise::{
    ADVICE_SCHEMA_VERSION, Advice, EpAnswer, EpQuestion, a2a_applies, a2a_notes, ep_question, rank,
};
use sim::cost::IterationModel;
use sim::layout::enumerate_layouts;

/// Questions `sim advise` answers beyond the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Question {
    /// Should we try expert parallelism (EP over all GPUs) instead of the best other layout?
    Ep,
    /// Should we turn on speculative decoding (MTP / EAGLE) at this load?
    Mtp,
    /// On a multi-node machine: what do the other boxes buy (best layout of all GPUs vs the best
    /// of one box, and one server per box)?
    Scale,
    /// One server on every GPU of the box (TP8), or two servers of half the GPUs each (TP4 ×2,
    /// SGLang's `--dp-size 2` without DP attention)?
    Replicas,
    /// What does the GPUs' P2P state (real / off / routed through the host) cost at this load,
    /// with NCCL and with the custom all-reduce, and what to change?
    P2p,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// A question to answer with a verdict.
    #[arg(long, value_enum)]
    pub question: Option<Question>,
    /// Perturbed draws for the verdict's confidence (1 to 10,000; 300 when not given; only
    /// with --question).
    #[arg(long, value_parser = super::args::bounded_u32(
        1,
        super::args::MAX_DRAWS,
        "10,000 draws pin a verdict's share to ±0.5%; more adds minutes, not certainty",
    ))]
    pub draws: Option<u32>,
    /// List every layout, not only the top ones and the EP ones.
    #[arg(long)]
    pub all: bool,
    /// With --question p2p: a throughput measured on this machine, CONCURRENCY:OUTPUT_TOK_S
    /// (e.g. `1:11`, `64:225`; repeatable): the host-path sweep says which latency and
    /// bandwidth bracket it.
    #[arg(long, value_name = "CONCURRENCY:OUTPUT_TOK_S")]
    pub observed: Vec<sim::advise::host_path::Observed>,
    /// The serving engine to advise for: `vllm` ranks vLLM's layouts with vLLM's defaults (as a
    /// `vllm serve` line without flags would; a vLLM --server-args line implies it).
    #[arg(long, value_enum)]
    pub engine: Option<super::args::EngineArg>,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    #[command(flatten)]
    pub format: FormatArg,
}

/// Perturbed draws of a verdict when `--draws` is not given.
const DEFAULT_DRAWS: u32 = 300;

/// Flags that only a question reads: `--draws` is said and ignored without one, `--observed`
/// is refused without `--question p2p`.
fn check_question_flags(args: &Args) -> Result<()> {
    if let (Some(d), None) = (args.draws, args.question) {
        // said, not refused: scripts pass one --draws to every advise call
        let w = format!(
            "--draws {d} is ignored without --question: the draws perturb a question's verdict (--question ep|mtp|scale|replicas)"
        );
        eprintln!("{}", wrap("warning: ", &w));
    }
    if !args.observed.is_empty() && !matches!(args.question, Some(Question::P2p)) {
        bail!(
            "--observed is read by --question p2p only (the host-path sweep brackets it); add --question p2p or drop --observed"
        );
    }
    Ok(())
}

pub fn run(args: Args) -> Result<()> {
    check_question_flags(&args)?;
    let mut setup = engine_setup(&args)?;
    let mut workload = args.workload.workloads(setup.max_context_tokens())?;
    if workload.len() != 1 {
        bail!("`sim advise` takes one --max-concurrency value");
    }
    let mut workload = workload.remove(0);
    setup.set_prompt_kind(args.workload.prompt_kind(&workload));
    let default_concurrency = workload.max_concurrency.is_none() && workload.request_rate.is_none();
    if default_concurrency {
        workload.max_concurrency = Some(DEFAULT_CONCURRENCY);
    }
    let mut flags_not_modelled = setup.flags_not_modelled();
    flags_not_modelled.extend(args.workload.not_modelled());
    if let Some(p) = &args.workload.bench.output_file {
        flags_not_modelled.push(format!(
            "--output-file {} (advise writes no runs; `sim run` and `sim sweep` do)",
            p.display()
        ));
    }
    let ls = layouts(&setup, &args.target.server)?;
    let spinner = indicatif::ProgressBar::new_spinner().with_message("simulating every layout");
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let mut ranking = rank(&ls, &setup.opts, &workload);
    label_rows(
        &setup,
        &ls,
        ranking.iter_mut().map(|r| (&mut r.layout, &mut r.flags)),
    );
    if ranking.iter().all(|r| r.run.is_none()) {
        spinner.finish_and_clear();
        let why = ranking
            .first()
            .and_then(|r| r.rejected.clone())
            .unwrap_or_default();
        bail!(
            "no layout of {} GPUs can run {} (first reason: {why})",
            setup.machine.gpu_count,
            setup.spec.name
        );
    }
    let engine = setup.launch.engine().rules();
    if !engine.answers_questions() && args.question.is_some() {
        spinner.finish_and_clear();
        let name = engine.display_name();
        bail!(
            "--question with a {name} launch line: the EP, MTP and scale questions are answered for SGLang servers only so far; drop --question to rank the {name} layouts"
        );
    }
    let answers = answer_question(&args, &setup, &ls, &ranking, &workload, &spinner)?;
    spinner.finish_and_clear();
    let mut notes = Vec::new();
    if let Some(b) = &setup.opts.moe_a2a_backend {
        notes.extend(a2a_notes(&setup.machine, b, setup.launch.deepep_mode()));
    }
    let advice = Advice {
        schema_version: ADVICE_SCHEMA_VERSION,
        engine: setup.opts.engine,
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        provenance: setup.provenance(&args.workload.lengths_provenance()),
        workload,
        ranking,
        ep: answers.ep,
        mtp: answers.mtp,
        notes,
        flags_not_modelled,
        scale: answers.scale,
        replicas: answers.replicas,
        p2p: answers.p2p,
    };
    if default_concurrency {
        let n = format!(
            "no --max-concurrency given; advised for {DEFAULT_CONCURRENCY} concurrent requests"
        );
        eprintln!("{}", wrap("note: ", &n));
    }
    setup.print_not_modelled();
    super::bench_out::print_bench_flags(&args.workload.not_modelled());
    if let Some(w) = kv_warning_for_best(&setup, &ls, &advice) {
        eprintln!("{}", wrap("warning: ", &w));
    }
    let shown = AdviceShown {
        advice: &advice,
        all: args.all,
        model_path: try_model(&setup),
        try_tail: try_tail(&setup),
    };
    export(args.format.format, &shown)
}

/// The advice with what its tables need beside it: every layout or the top ones, and the model
/// path the `try:` lines launch.
struct AdviceShown<'a> {
    advice: &'a Advice,
    all: bool,
    model_path: String,
    /// The user's own flags after the layout's on a vLLM `try:` line ([`try_tail`]).
    try_tail: String,
}

impl Export for AdviceShown<'_> {
    type Json = Advice;
    const WHAT: &'static str = "`sim advise`";

    fn json(&self) -> &Advice {
        self.advice
    }

    fn print_table(&self) -> Result<()> {
        print_advice(self.advice, self.all, &self.model_path, &self.try_tail);
        Ok(())
    }
}

/// The layout the ranking puts first (among those that ran), so that a question compares the
/// layout the table above it recommends.
fn top_ranked<'a>(
    setup: &Setup,
    ls: &'a [sim::sweep::SweepLayout],
    ranking: &[sim::advise::RankedLayout],
) -> Option<&'a sim::sweep::SweepLayout> {
    let best = ranking.iter().find(|r| r.run.is_some())?;
    // the ranking names a layout as `label_rows` did (`EP8+deepep` where the backend runs)
    ls.iter()
        .find(|l| setup.ranked_label(l.layout).0 == best.layout)
}

/// The KV-bound warning for the top-ranked layout that ran, if its pool admits fewer requests
/// than the workload asks for.
fn kv_warning_for_best(
    setup: &Setup,
    ls: &[sim::sweep::SweepLayout],
    advice: &Advice,
) -> Option<String> {
    let l = top_ranked(setup, ls, &advice.ranking)?;
    let model = l.model.as_ref().ok()?;
    sim::memory_fit::workload_kv_warning(
        &setup.spec.name,
        model.memory(),
        &l.layout,
        &setup.opts_ranking(l.layout),
        &advice.workload,
    )
}

/// The command `try:` lines start with: the launch's own (`vllm serve MODEL`, SGLang's
/// `launch_server --model-path`), with the user's model path, else the model's HF repository.
fn try_model(setup: &Setup) -> String {
    setup
        .launch
        .try_command(&super::server_args::launch_model_path(
            setup.launch.model_path(),
            &setup.spec,
        ))
}

/// What the ranking's `try:` line carries after the best layout's flags, so that it launches
/// what was ranked ([`sim::engine::Launch::other_flags`]).
fn try_tail(setup: &Setup) -> String {
    let flags = setup.launch.other_flags();
    flags.iter().map(|f| format!(" {f}")).collect()
}

/// The server to advise for: the engine `--engine` names, else the one whose launch line is
/// given, else SGLang.
fn engine_setup(args: &Args) -> Result<Setup> {
    let engine = args.engine.map(sim::engine::Engine::from);
    let line = args.target.server.line_engine()?;
    if let (Some(e), Some(l)) = (engine, line)
        && e != l
        && l != sim::engine::Engine::Sglang
    {
        bail!(
            "--engine {e} with a {} launch line: a {} line is simulated as {}; drop one of them",
            l.rules().display_name(),
            l.rules().display_name(),
            l.rules().display_name()
        )
    }
    Setup::for_engine(&args.target, &args.calibration, engine)
}

/// The answer to the `--question` asked (at most one is set).
#[derive(Default)]
struct Answers {
    ep: Option<EpAnswer>,
    mtp: Option<sim::advise::mtp::MtpAnswer>,
    scale: Option<sim::advise::scale::ScaleAnswer>,
    replicas: Option<sim::advise::replicas::ReplicasAnswer>,
    p2p: Option<sim::advise::p2p::P2pAnswer>,
}

/// A progress bar with a time estimate over a question's perturbed draws, in place of the
/// spinner; a thread follows [`sim::advise::draws_begun`] until it is dropped.
struct DrawsBar {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DrawsBar {
    fn start(spinner: &indicatif::ProgressBar, draws: u32) -> DrawsBar {
        sim::advise::reset_draws();
        spinner.set_length(u64::from(draws));
        spinner.set_position(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} draws, about {eta} left",
        ) {
            spinner.set_style(style);
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (bar, halt) = (spinner.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !halt.load(std::sync::atomic::Ordering::Relaxed) {
                bar.set_position(sim::advise::draws_begun().min(u64::from(draws)));
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        DrawsBar {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for DrawsBar {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers `args.question` over `args.draws` perturbed draws, saying so on the spinner.
fn answer_question(
    args: &Args,
    setup: &Setup,
    ls: &[sim::sweep::SweepLayout],
    ranking: &[sim::advise::RankedLayout],
    workload: &sim::workload::Workload,
    spinner: &indicatif::ProgressBar,
) -> Result<Answers> {
    let mut a = Answers::default();
    let draws = args.draws.unwrap_or(DEFAULT_DRAWS);
    let _bar = args.question.map(|_| DrawsBar::start(spinner, draws));
    match args.question {
        Some(Question::Ep) => {
            spinner.set_message(format!("EP verdict over {draws} draws"));
            let mut ep = answer_ep(setup, workload, draws)?;
            super::advise_odds::ep(setup, workload, &mut ep);
            a.ep = Some(ep);
        }
        Some(Question::Mtp) => {
            spinner.set_message(format!("MTP verdict over {draws} draws"));
            let kind = args.workload.prompt_kind(workload);
            let mut mtp = answer_mtp(setup, ls, ranking, workload, kind, draws)?;
            super::advise_odds::mtp(setup, &mut mtp);
            a.mtp = Some(mtp);
        }
        Some(Question::Scale) => {
            spinner.set_message(format!("scale answer over {draws} draws"));
            let top = top_ranked(setup, ls, ranking).map(|l| l.layout);
            let mut s = super::scale::answer(setup, workload, draws, top)?;
            super::advise_odds::scale(setup, workload, &mut s);
            a.scale = Some(s);
        }
        Some(Question::Replicas) => {
            spinner.set_message(format!("replicas verdict over {draws} draws"));
            let mut r = answer_replicas(setup, workload, draws)?;
            super::advise_odds::replicas(setup, &mut r);
            a.replicas = Some(r);
        }
        Some(Question::P2p) => {
            spinner.set_message("the layout in every P2P state");
            let mut p2p = answer_p2p(setup, ls, ranking, workload, &args.observed)?;
            super::advise_odds::p2p(setup, workload, &mut p2p);
            a.p2p = Some(p2p);
        }
        None => {}
    }
    Ok(a)
}

fn answer_ep(setup: &Setup, workload: &sim::workload::Workload, draws: u32) -> Result<EpAnswer> {
    let gpus = setup.machine.gpu_count;
    if setup.spec.moe.is_none() {
        bail!(
            "--question ep needs a mixture-of-experts model; {} is dense",
            setup.spec.name
        );
    }
    let candidates = enumerate_layouts(gpus, &setup.spec);
    let ep_layout = Layout {
        tp: gpus,
        pp: 1,
        ep: gpus,
        dp_attention: false,
    };
    if let Some(why) = candidates
        .iter()
        .find(|c| c.layout == ep_layout)
        .and_then(|c| c.rejected.clone())
    {
        bail!("EP{gpus} is impossible for {}: {why}", setup.spec.name);
    }
    // The best layout without EP, run without the a2a backend (it needs EP).
    let others: Vec<Layout> = candidates
        .iter()
        .filter(|c| c.rejected.is_none() && c.layout.ep == 1)
        .map(|c| c.layout)
        .collect();
    let ep_opts = setup.opts_ranking(ep_layout);
    let ep_a2a_backend = ep_opts
        .moe_a2a_backend
        .clone()
        .filter(|_| a2a_applies(&setup.spec, &ep_layout));
    let extra_flags: Vec<String> = setup.launch.other_flags();
    let q = EpQuestion {
        spec: &setup.spec,
        opts: &ep_opts,
        workload,
        knobs: setup.knobs,
        ep_layout,
        others,
        comm_spread: sim::advise::comm_spread(&setup.machine.profile),
        draws,
        seed: workload.seed,
        known_error: setup.known_error(),
        ep_a2a_backend,
        extra_flags,
    };
    let build = |l: Layout, k| {
        setup
            .model_ranking(l, k)
            .map(|m| Box::new(m) as Box<dyn IterationModel>)
            .map_err(|e| e.to_string())
    };
    ep_question(&q, &build).map_err(|e| anyhow::anyhow!("--question ep: {e}"))
}

/// The speculative options to ask about: the user's `--speculative-*` flags, else SGLang's
/// choice for this model (EAGLE on the checkpoint's MTP layers with `auto_choose_speculative_params`);
/// the prompt kind the user gave, else the workload's (random tokens, or ShareGPT's natural text).
/// A model with nothing to draft with is refused in the sentence `run` says
/// ([`sim::cost::spec::check_draft`]).
fn spec_options(
    setup: &Setup,
    kind: sim::acceptance::PromptKind,
) -> Result<sim::options::SpeculativeOptions> {
    let mut s = match &setup.opts.speculative {
        Some(s) => s.clone(),
        None => sim::engine::sglang::args::default_speculative_options(&setup.spec.model_type),
    };
    sim::cost::spec::check_draft(&setup.spec, &s)
        .map_err(|e| anyhow::anyhow!("--question mtp: {e}"))?;
    s.prompt_kind = Some(kind);
    Ok(s)
}

fn answer_mtp(
    setup: &Setup,
    ls: &[sim::sweep::SweepLayout],
    ranking: &[sim::advise::RankedLayout],
    workload: &sim::workload::Workload,
    kind: sim::acceptance::PromptKind,
    draws: u32,
) -> Result<sim::advise::mtp::MtpAnswer> {
    use sim::advise::mtp::{MtpQuestion, mtp_question};
    let spec_opts = spec_options(setup, kind)?;
    // the best-ranked layout SGLang can speculate on (no pipeline stages)
    let layout = ranking
        .iter()
        .filter(|r| r.run.is_some())
        .find_map(|r| {
            ls.iter()
                .map(|l| l.layout)
                .find(|l| l.pp == 1 && setup.ranked_label(*l).0 == r.layout)
        })
        .or_else(|| ls.iter().map(|l| l.layout).find(|l| l.pp == 1))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--question mtp: no layout without {} runs this model",
                super::own_flags::sim_flag(sim::engine::Knob::PipelineParallel)
            )
        })?;
    let base = setup.opts_ranking(layout);
    let without = sim::options::ServerOptions {
        speculative: None,
        ..base.clone()
    };
    let with = sim::options::ServerOptions {
        speculative: Some(spec_opts.clone()),
        ..base
    };
    let q = MtpQuestion {
        layout,
        with: &with,
        without: &without,
        plan: sim::cost::spec::SpecPlan::resolve(&setup.spec, &spec_opts),
        concurrency: workload.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY),
        context_tokens: workload.random_input_len + workload.random_output_len / 2,
        knobs: setup.knobs,
        comm_spread: sim::advise::comm_spread(&setup.machine.profile),
        draws,
        seed: workload.seed,
        known_error: setup.known_error(),
        extra_flags: setup
            .launch
            .sglang_args()
            .map_or_else(Vec::new, |a| a.modelled_flags()),
    };
    let build = |l: Layout, k, o: &sim::options::ServerOptions| {
        sim::cost::ServedModel::new(&setup.machine, &setup.spec, l, o, k)
            .map(|m| Box::new(m) as Box<dyn IterationModel>)
            .map_err(|e| e.to_string())
    };
    mtp_question(&q, &build).map_err(|e| anyhow::anyhow!("--question mtp: {e}"))
}

/// One server of the whole box against two of half of it, each half on its own GPUs.
/// `--question p2p` on the top-ranked layout: the machine in each P2P state (`real` from the
/// bare-metal preset of the same box where the machine lacks it), NCCL and the custom all-reduce.
fn answer_p2p(
    setup: &Setup,
    ls: &[sim::sweep::SweepLayout],
    ranking: &[sim::advise::RankedLayout],
    workload: &sim::workload::Workload,
    observed: &[sim::advise::host_path::Observed],
) -> Result<sim::advise::p2p::P2pAnswer> {
    let Some(top) = top_ranked(setup, ls, ranking).map(|l| l.layout) else {
        bail!("--question p2p: no layout ran");
    };
    let m = &setup.machine;
    let same_box = m.profile.gpu_preset.as_deref() == Some("rtx-pro-6000-server")
        && m.gpu_count == 8
        && m.node_count() == 1;
    let real_base = same_box
        .then(|| sim::machine::Machine::resolve("rtx-pro-6000-x8-baremetal").ok())
        .flatten();
    let oneshot = if top.tp <= 4 {
        sim::engine::SGLANG_PCIE_ONESHOT_4GPU_BYTES
    } else {
        sim::engine::SGLANG_PCIE_ONESHOT_8GPU_BYTES
    };
    let opts = setup.opts_ranking(top);
    let mut a = sim::advise::p2p::answer(&sim::advise::p2p::P2pQuestion {
        machine: m,
        real_base: real_base.as_ref(),
        spec: &setup.spec,
        layout: top,
        opts: &opts,
        knobs: setup.knobs,
        workload,
        oneshot_bytes: oneshot,
        observed,
    });
    a.launch_flags = ranking
        .iter()
        .find(|r| r.run.is_some())
        .map(|r| r.flags.clone())
        .unwrap_or_default();
    Ok(a)
}

fn answer_replicas(
    setup: &Setup,
    workload: &sim::workload::Workload,
    draws: u32,
) -> Result<sim::advise::replicas::ReplicasAnswer> {
    use sim::advise::replicas::{Replica, ReplicasQuestion, replicas_question};
    let gpus = setup.machine.gpu_count;
    if gpus < 2 || !gpus.is_multiple_of(2) || setup.machine.node_count() > 1 {
        bail!(
            "--question replicas compares one server of a box with two of half of it: `{}` has {gpus} GPU(s) on {} node(s); for several boxes ask --question scale",
            setup.machine.name(),
            setup.machine.node_count()
        );
    }
    let (whole, half) = (Layout::tp(gpus), Layout::tp(gpus / 2));
    let devices = setup.machine.device_indices();
    let halves = [
        setup.machine.with_gpus(&devices[..devices.len() / 2])?,
        setup.machine.with_gpus(&devices[devices.len() / 2..])?,
    ];
    let (whole_opts, half_opts) = (setup.opts_ranking(whole), setup.opts_ranking(half));
    let q = ReplicasQuestion {
        whole,
        half,
        whole_opts: &whole_opts,
        half_opts: &half_opts,
        concurrency: workload.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY),
        context_tokens: workload.random_input_len + workload.random_output_len / 2,
        input_tokens: workload.random_input_len,
        knobs: setup.knobs,
        comm_spread: sim::advise::comm_spread(&setup.machine.profile),
        draws,
        seed: workload.seed,
        known_error: setup.known_error(),
    };
    let build = |l: Layout, k, r: Replica| {
        let (m, o) = match r {
            Replica::Whole => (&setup.machine, &whole_opts),
            Replica::FirstHalf => (&halves[0], &half_opts),
            Replica::SecondHalf => (&halves[1], &half_opts),
        };
        sim::cost::CostModel::new(m, &setup.spec, l, o, k)
            .map(|m| Box::new(m) as Box<dyn IterationModel>)
            .map_err(|e| e.to_string())
    };
    replicas_question(&q, &build).map_err(|e| anyhow::anyhow!("--question replicas: {e}"))
}
