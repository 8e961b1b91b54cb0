//! `sim report`: simulate every layout of a model on one or more machines and write SVG charts plus
//! an `index.html` summary (verdict, best layout, headline bandwidths) into a folder.

use super::args::{FormatArg, MachineArg, ModelArg, ServerArgs};
use super::export::{Export, export};
use super::setup::CalibrationArg;
use super::workload_args::WorkloadArgs;
use crate::cli::tables::wrap;
use anyhow::{Context, Result, bail};
use sim::report::{
    MachineResults, MeasuredRuns, REPORT_SCHEMA_VERSION, ReportInputs, ReportOutput, ReportPlan,
    build_report, simulate_machine, write_report,
};
use std::path::PathBuf;

/// Model drawn when `--model` is absent: the user's GLM-5 NVFP4 checkpoint.
const DEFAULT_MODEL: &str = "glm-5-nvfp4";
/// Most machines one report compares (solid, dashed, dotted lines).
const MAX_MACHINES: usize = 3;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Machine preset or probe profile JSON; repeat to compare machines (up to 3; the first is
    /// drawn solid, the second dashed, the third dotted).
    #[arg(long = "machine", value_name = "PRESET|PROFILE.json", required = true)]
    pub machines: Vec<String>,
    /// Model preset, HF folder or config.json (default: glm-5-nvfp4).
    #[arg(long, value_name = "PRESET|DIR|CONFIG.json")]
    pub model: Option<String>,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Concurrency of the ranking, the decode breakdown and the EP verdict (added to the
    /// --max-concurrency list if missing).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub at_concurrency: u32,
    /// Perturbed draws behind the EP verdict's confidence (1 to 10,000).
    #[arg(long, default_value_t = 300, value_parser = super::args::bounded_u32(
        1,
        super::args::MAX_DRAWS,
        "10,000 draws pin a verdict's share to ±0.5%; more adds minutes, not certainty",
    ))]
    pub draws: u32,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    /// Add the scoreboard of a records file (as `sim validate --records`): predicted against
    /// measured scatter charts and the worst records.
    #[arg(long, value_name = "FILE")]
    pub records: Option<PathBuf>,
    /// With --records: simulate every record as this engine would run it (default: each record's
    /// own engine).
    #[arg(long, value_enum, requires = "records")]
    pub engine: Option<super::args::EngineArg>,
    /// The user's own measured runs, drawn as markers on the first --machine's throughput, TTFT
    /// and TPOT charts beside the prediction: a bench_serving JSONL, its printed summary, a CSV
    /// (concurrency,input_len,output_len,output_tok_s,…) or `user-box.json#run-id`, as `sim
    /// validate --measured` reads them; repeatable.
    #[arg(long, value_name = "FILE[#RUN]")]
    pub measured: Vec<String>,
    /// Folder for the SVG charts and index.html (created if missing; files in it are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub format: FormatArg,
}

/// Validated `sim report` flags.
struct Config {
    machines: Vec<sim::machine::Machine>,
    spec: models::ModelSpec,
    /// Every SGLang flag given: each machine and layout resolves its own defaults from them.
    sglang: sim::engine::sglang::args::SglangArgs,
    /// `--calibration`, checked against the first machine (its knobs apply there and on any
    /// machine of the name it was fitted on; its out-of-sample spread sets the bands where it
    /// was fitted on that machine and model).
    calibration: Option<sim::calibrate::Calibration>,
    plan: ReportPlan,
    records: Option<sim::records::RecordSet>,
    measured: Option<MeasuredRuns>,
    /// `--model-path` of the launch lines.
    model_path: String,
}

impl Args {
    fn validate(&self) -> Result<Config> {
        if self.out.exists() && !self.out.is_dir() {
            bail!(
                "--out {} is a file; give a folder for the report",
                self.out.display()
            );
        }
        if self.machines.len() > MAX_MACHINES {
            bail!(
                "{} --machine flags: a report compares at most {MAX_MACHINES} machines",
                self.machines.len()
            );
        }
        let l = &self.server.layout;
        if l.layout.is_some()
            || l.tp.is_some()
            || l.pp.is_some()
            || l.ep.is_some()
            || l.dp_attention
        {
            use sim::engine::Knob;
            let flag = super::own_flags::sim_flag;
            bail!(
                "`sim report` draws every layout: drop --tp/{}/{}/--layout/{}",
                flag(Knob::PipelineParallel),
                flag(Knob::ExpertParallelSize),
                flag(Knob::DpAttention)
            );
        }
        if self.at_concurrency == 0 {
            bail!("--at-concurrency 0: must be at least 1");
        }
        if self.draws == 0 {
            bail!("--draws 0: the EP verdict needs at least 1 draw (default 300)");
        }
        let machines = self
            .machines
            .iter()
            .map(|m| MachineArg { machine: m.clone() }.resolve())
            .collect::<Result<Vec<_>>>()?;
        let spec = ModelArg {
            model: Some(
                self.model
                    .clone()
                    .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            ),
        }
        .resolve()?;
        let mut workload = self.workload.workloads(spec.max_context_tokens)?.remove(0);
        workload.max_concurrency = None;
        let mut concurrencies = if self.workload.max_concurrency.is_empty() {
            sim::sweep::DEFAULT_CONCURRENCIES.to_vec()
        } else {
            self.workload.max_concurrency.clone()
        };
        if !concurrencies.contains(&self.at_concurrency) {
            concurrencies.push(self.at_concurrency);
        }
        concurrencies.sort_unstable();
        concurrencies.dedup();
        // validates the flags (the options themselves are resolved per machine and layout); the
        // first machine's all-GPU TP options are what a calibration is checked against
        let (opts, _) = self.server.options(&machines[0], &spec)?;
        let sglang = self.server.sglang()?;
        let records = self
            .records
            .as_deref()
            .map(sim::records::RecordSet::load)
            .transpose()?;
        let calibration = self.calibration.load_for(
            &machines[0],
            &spec,
            models::Layout::tp(machines[0].gpu_count),
            &opts,
        )?;
        let measured = self.load_measured(&machines[0], spec.max_context_tokens)?;
        let model_path =
            super::server_args::launch_model_path(self.server.sglang()?.model_path(), &spec);
        Ok(Config {
            records,
            measured,
            model_path,
            machines,
            spec,
            sglang,
            calibration,
            plan: ReportPlan {
                workload,
                concurrencies,
                at_concurrency: self.at_concurrency,
                draws: self.draws,
            },
        })
    }
}

impl Args {
    /// `--measured` runs, read as `sim validate --measured` reads them, for the first machine.
    fn load_measured(
        &self,
        machine: &sim::machine::Machine,
        max_context_tokens: u64,
    ) -> Result<Option<MeasuredRuns>> {
        if self.measured.is_empty() {
            return Ok(None);
        }
        // the report's workload lengths fill those a run did not record (as `sim validate
        // --measured … --random-input-len …` takes them; a run's own lengths win), said once
        let (input, output) = (
            self.workload.random_input_len,
            self.workload.random_output_len,
        );
        let points = super::measured_args::MeasuredArgs {
            measured: self.measured.clone(),
            server_log: None,
            random_input_len: Some(input),
            random_output_len: Some(output),
            num_prompts: None,
        }
        .load(max_context_tokens)?;
        let n = format!(
            "--measured runs that do not record their lengths are simulated at --random-input-len {input} / --random-output-len {output}"
        );
        eprintln!("{}", wrap("note: ", &n));
        if !points.iter().any(|p| p.workload.max_concurrency.is_some()) {
            bail!(
                "--measured {}: no run states its concurrency, so none can be drawn against \
                 --max-concurrency; give runs that record it (bench_serving's max_concurrency)",
                self.measured.join(", ")
            );
        }
        Ok(Some(MeasuredRuns {
            machine: machine.name().to_string(),
            sources: self.measured.clone(),
            points,
        }))
    }
}

pub fn run(args: Args) -> Result<()> {
    let cfg = args.validate()?;
    let layouts = sim::layout::enumerate_layouts(cfg.machines[0].gpu_count, &cfg.spec).len();
    let total = cfg.machines.len() * layouts * cfg.plan.concurrencies.len();
    let bar = indicatif::ProgressBar::new(total as u64).with_message("simulating layouts");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} runs {msg} [{elapsed}]")
            .expect("template"),
    );
    let mut results: Vec<MachineResults> = Vec::with_capacity(cfg.machines.len());
    for (i, m) in cfg.machines.iter().enumerate() {
        bar.set_message(format!("on {}, then the EP verdict", m.name()));
        // a calibration is a fit of one box: the other machines of a comparison keep the
        // cost model's own knobs
        let cal = cfg
            .calibration
            .as_ref()
            .filter(|c| i == 0 || c.machine == m.name());
        let opts_for = |l: &models::Layout| {
            sim::memory_fit::layout_options(&cfg.sglang, m.memory_bytes(), l, &cfg.spec)
                .map(|r| r.options)
                .unwrap_or_default()
        };
        let mut r = simulate_machine(
            m,
            &cfg.spec,
            &opts_for,
            cal.map_or_else(sim::cost::Knobs::default, |c| c.knobs),
            &cfg.plan,
            &|| bar.inc(1),
        );
        // where it was fitted on this machine and model, its out-of-sample spread sets the
        // bands in place of a new source's (as `run`, `sweep` and `advise` take it)
        let sigma = cal.and_then(|c| c.own_sigma_ln(m.name(), &cfg.spec.name));
        for l in &mut r.layouts {
            l.regime.calibrated_sigma_ln = sigma;
        }
        results.push(r);
    }
    let board = cfg.records.as_ref().map(|set| {
        bar.set_message("scoring the records");
        sim::scoreboard::score(
            set,
            &sim::scoreboard::ScoreOptions {
                engine: args.engine.map(sim::engine::Engine::from),
            },
        )
    });
    bar.set_message("drawing charts");
    let report = build_report(&ReportInputs {
        model: &cfg.spec.name,
        plan: &cfg.plan,
        machines: &results,
        scoreboard: board.as_ref(),
        measured: cfg.measured.as_ref(),
        model_path: &cfg.model_path,
        engine: sim::engine::Engine::Sglang,
    })
    .context("drawing the report")?;
    let files = write_report(&args.out, &report)?;
    bar.finish_and_clear();
    let out = ReportOutput {
        schema_version: REPORT_SCHEMA_VERSION,
        engine: sim::engine::Engine::Sglang,
        out_dir: args.out.display().to_string(),
        files: files.iter().map(|f| f.display().to_string()).collect(),
        skipped: report.skipped,
        machines: report.summary,
    };
    export(args.format.format, &out)
}

impl Export for ReportOutput {
    type Json = ReportOutput;
    const WHAT: &'static str = "`sim report`";

    fn json(&self) -> &ReportOutput {
        self
    }

    fn print_table(&self) -> Result<()> {
        print_summary(self);
        Ok(())
    }
}

fn print_summary(o: &ReportOutput) {
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        "machine",
        "best layout",
        "output tok/s",
        "should we try EP?",
    ]);
    for m in &o.machines {
        t.add_row(vec![
            m.machine.clone(),
            m.best.as_ref().map_or("none fits".into(), |b| {
                format!("{} ({})", b.layout, b.flags)
            }),
            m.best
                .as_ref()
                .map_or("-".into(), |b| format!("{:.0}", b.output_throughput)),
            m.ep_verdict.clone(),
        ]);
    }
    println!("{t}");
    for s in &o.skipped {
        let n = format!("{}: {}", s.title, s.reason);
        println!("{}", wrap("not drawn: ", &n));
    }
    println!(
        "{} charts and index.html written to {}",
        o.files.len().saturating_sub(1),
        o.out_dir
    );
}
