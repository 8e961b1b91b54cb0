//! `sim advise`: rank layouts for a workload; `--question ep` answers "should we try EP?". The
//! command parses its flags, shows progress and prints; the ranking and the answers are
//! [`sim::scenario::advice`]'s.

use super::advise_table::print_advice;
use super::args::{FormatArg, TargetArgs};
use super::export::{Export, export};
use super::layouts::layouts;
use super::setup::{CalibrationArg, Setup};
use super::workload_args::WorkloadArgs;
use crate::cli::tables::wrap;
use anyhow::{Result, bail};
use sim::advise::Advice;
use sim::advise::verdict::DEFAULT_CONCURRENCY;
use sim::scenario::advice::{Answers, AskedOf};

pub use sim::scenario::advice::Question;

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
    let answered = setup.rank_layouts(&ls, &workload).and_then(|ranking| {
        let answers = match args.question {
            Some(q) => {
                let asked = AskedOf {
                    layouts: &ls,
                    ranking: &ranking,
                    workload: &workload,
                    prompt_kind: args.workload.prompt_kind(&workload),
                    draws: args.draws.unwrap_or(DEFAULT_DRAWS),
                    observed: &args.observed,
                };
                let _bar = DrawsBar::start(&spinner, q, asked.draws);
                setup.answer_question(q, &asked)?
            }
            None => Answers::default(),
        };
        Ok((ranking, answers))
    });
    spinner.finish_and_clear();
    let (ranking, answers) = answered?;
    let advice = setup.advice(
        workload,
        ranking,
        answers,
        &args.workload.lengths_provenance(),
        flags_not_modelled,
    );
    if default_concurrency {
        let n = format!(
            "no --max-concurrency given; advised for {DEFAULT_CONCURRENCY} concurrent requests"
        );
        eprintln!("{}", wrap("note: ", &n));
    }
    setup.print_not_modelled();
    super::bench_out::print_bench_flags(&args.workload.not_modelled());
    if let Some(w) = setup.kv_warning_for_best(&ls, &advice) {
        eprintln!("{}", wrap("warning: ", &w));
    }
    let shown = AdviceShown {
        advice: &advice,
        all: args.all,
        model_path: try_model(&setup),
        try_tail: try_tail(&setup.other_flags_for_best(&ls, &advice)),
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
/// what was ranked (`flags`: [`sim::scenario::Scenario::other_flags_for_best`]).
fn try_tail(flags: &[String]) -> String {
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

/// A progress bar with a time estimate over a question's perturbed draws, in place of the
/// spinner; a thread follows [`sim::advise::draws_begun`] until it is dropped.
struct DrawsBar {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DrawsBar {
    fn start(spinner: &indicatif::ProgressBar, question: Question, draws: u32) -> DrawsBar {
        spinner.set_message(match question {
            Question::Ep => format!("EP verdict over {draws} draws"),
            Question::Mtp => format!("MTP verdict over {draws} draws"),
            Question::Scale => format!("scale answer over {draws} draws"),
            Question::Replicas => format!("replicas verdict over {draws} draws"),
            Question::P2p => "the layout in every P2P state".to_string(),
        });
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
