//! `sim run`: simulate one bench_serving run of a workload on one layout.

use super::args::{FormatArg, LayoutArgs, LayoutSelection, OutputFormat, ServerArgs, Target};
use super::server_args::options_for;
use super::workload_args::WorkloadArgs;
use anyhow::{Context, Result, bail};
use comfy_table::Table;
use models::{Layout, ModelSpec};
use sim::calibrate::{Calibration, KnobBounds};
use sim::cost::{CostModel, IterationModel, Knobs};
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::serving::{RunOutput, RunReport, simulate};
use sim::sglang_args::SglangArgs;
use std::path::PathBuf;

/// `--calibration FILE` written by `sim calibrate`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CalibrationArg {
    /// Apply the knobs fitted by `sim calibrate` (JSON).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

impl CalibrationArg {
    /// The calibration file, if one was given, checked against what it is applied to: knobs
    /// outside their bounds on `machine` with `spec` at `layout` are refused; a calibration
    /// fitted on another machine, model or graph mode is a warning on stderr.
    pub fn load_for(
        &self,
        machine: &Machine,
        spec: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
    ) -> Result<Option<Calibration>> {
        let Some(path) = &self.calibration else {
            return Ok(None);
        };
        let cal = Calibration::load(path)?;
        // the bounds of the cost model it is applied to; a layout that cannot be built fails
        // later with its own message, and the knobs are then only checked to be positive
        let bounds = CostModel::new(machine, spec, layout, opts, Knobs::default())
            .ok()
            .map(|m| KnobBounds::of(&m));
        cal.check_knobs(path, bounds.as_ref())?;
        if let Some(w) = cal.mismatch(machine.name(), &spec.name, opts) {
            eprintln!("warning: {}: {w}", path.display());
        }
        Ok(Some(cal))
    }

    /// The knobs to use: the file's ([`CalibrationArg::load_for`]), or the defaults.
    pub fn knobs_for(
        &self,
        machine: &Machine,
        spec: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
    ) -> Result<Knobs> {
        let cal = self.load_for(machine, spec, layout, opts)?;
        Ok(cal.map_or_else(Knobs::default, |c| c.knobs))
    }
}

/// Machine, model, server flags (command line and launch line merged) and knobs, resolved once
/// per command.
pub struct Setup {
    pub machine: Machine,
    pub spec: ModelSpec,
    /// Every SGLang flag given, classified (`sim::sglang_args`).
    pub sglang: SglangArgs,
    /// The layout flags, with a launch line's filled in.
    pub layout_args: LayoutArgs,
    /// Options of the layout the flags pick (every GPU in TP when they pick none), SGLang's
    /// defaults filled in; the serving simulation's scheduler limits come from these.
    pub opts: ServerOptions,
    /// Which options took SGLang's defaults, and how SGLang adjusts others.
    pub default_notes: Vec<String>,
    pub knobs: Knobs,
    /// The `--calibration` file, when given (its residual is the model's known error).
    pub calibration: Option<Calibration>,
    launch_line: bool,
}

impl Setup {
    /// Resolves the shared flags.
    pub fn new(target: &Target, cal: &CalibrationArg) -> Result<Setup> {
        Setup::from_sglang(target, cal, target.server.sglang()?)
    }

    /// [`Setup::new`] with the SGLang flags already read.
    fn from_sglang(target: &Target, cal: &CalibrationArg, sglang: SglangArgs) -> Result<Setup> {
        let Target {
            machine,
            model,
            server,
        } = target;
        let machine = machine.resolve()?;
        let spec = model.resolve_or(sglang.model_path())?;
        let layout_args = server.layout.with_sizes(&sglang.sizes());
        let primary = match layout_args.selection(machine.gpu_count, &spec)? {
            LayoutSelection::One(l) => l,
            LayoutSelection::All => Layout::tp(machine.gpu_count),
        };
        let resolved = options_for(&sglang, machine.memory_bytes(), &primary, &spec)?;
        let calibration = cal.load_for(&machine, &spec, primary, &resolved.options)?;
        Ok(Setup {
            knobs: calibration
                .as_ref()
                .map_or_else(Knobs::default, |c| c.knobs),
            calibration,
            opts: resolved.options,
            default_notes: resolved.notes,
            launch_line: server.has_launch_line(),
            machine,
            spec,
            sglang,
            layout_args,
        })
    }

    /// [`Setup::new`] with a server log's own `server_args` merged into the flags: they state
    /// the layout and options the server ran; a flag given on the command line that disagrees
    /// with the log is an error naming both values.
    pub fn with_server_log(
        target: &Target,
        cal: &CalibrationArg,
        logged: Option<&SglangArgs>,
    ) -> Result<Setup> {
        let Some(logged) = logged else {
            return Setup::new(target, cal);
        };
        let sglang = target.server.sglang()?.merge(logged.clone())?;
        Setup::from_sglang(target, cal, sglang)
    }

    /// The server options of `layout`: SGLang's defaults depend on the layout (graph batch size
    /// and the static memory share on `--tp`, `--pp-size` and DP attention).
    pub fn opts_for(&self, layout: Layout) -> ServerOptions {
        // Validation does not depend on the layout, and passed in `Setup::new`.
        options_for(
            &self.sglang,
            self.machine.memory_bytes(),
            &layout,
            &self.spec,
        )
        .expect("server flags were validated in Setup::new")
        .options
    }

    /// The cost model of `layout` with `knobs`.
    pub fn model(&self, layout: Layout, knobs: Knobs) -> sim::error::Result<CostModel> {
        CostModel::new(
            &self.machine,
            &self.spec,
            layout,
            &self.opts_for(layout),
            knobs,
        )
    }

    /// The options of `layout` when several are ranked: `--moe-a2a-backend` applies to the
    /// layouts it can run (experts EP over the whole TP group of a MoE model); the others run
    /// without it, as SGLang would have to.
    pub fn opts_ranking(&self, layout: Layout) -> ServerOptions {
        sim::advise::a2a_where_applicable(&self.opts_for(layout), &self.spec, &layout)
    }

    /// The cost model of `layout` among several ranked ([`Setup::opts_ranking`]).
    pub fn model_ranking(&self, layout: Layout, knobs: Knobs) -> sim::error::Result<CostModel> {
        CostModel::new(
            &self.machine,
            &self.spec,
            layout,
            &self.opts_ranking(layout),
            knobs,
        )
    }

    /// `(name, flags)` of `layout` as ranked: with `+backend` where the a2a backend runs.
    pub fn ranked_label(&self, layout: Layout) -> (String, String) {
        self.ranked_label_with(layout, layout.sglang_flags())
    }

    /// [`Setup::ranked_label`] with `flags` as the layout's launch flags (`--nnodes` where it
    /// spans nodes).
    pub fn ranked_label_with(&self, layout: Layout, flags: String) -> (String, String) {
        match self.opts_ranking(layout).moe_a2a_backend {
            Some(b) => (
                format!("{}+{b}", layout.short_name()),
                format!("{flags} --moe-a2a-backend {b}"),
            ),
            None => (layout.short_name(), flags),
        }
    }

    /// The model's own error, where known: the `--calibration` file's residual.
    pub fn known_error(&self) -> Option<sim::advise::KnownModelError> {
        let c = self.calibration.as_ref()?;
        Some(sim::advise::KnownModelError::from_rms_log_error(
            format!(
                "calibration of {} on {} over {} measured point(s), RMS ln error {:.3}",
                c.layout,
                c.machine,
                c.measured.len(),
                c.rms_log_error_after
            ),
            c.rms_log_error_after,
        ))
    }

    /// The longest request the server takes: `--context-length`, else the model's.
    pub fn max_context_tokens(&self) -> u64 {
        self.opts
            .context_length
            .map_or(self.spec.max_context_tokens, u64::from)
    }

    /// The one layout the flags select (`--layout all` is refused). A launch line without
    /// `--tp-size` runs TP1, SGLang's default.
    pub fn one_layout(&self, server: &ServerArgs, command: &str) -> Result<Layout> {
        let mut flags = server.layout.with_sizes(&self.sglang.sizes());
        let tp_defaulted = self.launch_line && flags.tp.is_none() && flags.layout.is_none();
        if tp_defaulted {
            flags.tp = Some(1);
        }
        let selected = flags
            .selection(self.machine.gpu_count, &self.spec)
            .with_context(|| {
                if tp_defaulted {
                    "the --server-args line gives no --tp-size, so SGLang's default 1"
                } else {
                    "layout flags"
                }
            })?;
        match selected {
            LayoutSelection::One(l) => Ok(l),
            LayoutSelection::All => {
                bail!(
                    "`sim {command}` simulates one layout; use `sim sweep --layout all` to compare them"
                )
            }
        }
    }

    /// Prints, on stderr, the flags that were not modelled and the defaults SGLang would pick.
    pub fn print_notes(&self) {
        self.print_not_modelled();
        for n in &self.default_notes {
            eprintln!("note: {n}");
        }
    }

    /// Prints, on stderr, the flags that were not modelled.
    pub fn print_not_modelled(&self) {
        if let Some(line) = self.sglang.not_modelled_line() {
            eprintln!("warning: {line}");
        }
    }

    /// What a prediction rests on: the machine's and the model's sources, the knobs, the
    /// workload's lengths, the defaults SGLang filled in.
    pub fn provenance(&self, w: &WorkloadArgs) -> Vec<String> {
        let mut v = vec![sim::advise::machine_provenance(&self.machine)];
        v.push(format!(
            "model {}: {}",
            self.spec.name,
            if self.spec.source.is_empty() {
                "a HF config"
            } else {
                &self.spec.source
            }
        ));
        v.push(match &self.calibration {
            Some(c) => format!(
                "efficiency knobs fitted by `sim calibrate` to {} measured run(s) of {} on {} ({})",
                c.measured.len(),
                c.layout,
                c.machine,
                c.measured.first().cloned().unwrap_or_default()
            ),
            None => "efficiency knobs: defaults, not fitted to any measured run of this machine (`sim calibrate` fits them)".into(),
        });
        v.push(format!("workload: {}", w.lengths_provenance()));
        v.extend(self.defaults_provenance());
        v
    }

    /// Provenance lines on the server options SGLang's defaults filled in or adjusted.
    pub fn defaults_provenance(&self) -> Vec<String> {
        let version = sim::sglang_args::SGLANG_VERSION
            .split(" (")
            .next()
            .unwrap_or_default();
        self.default_notes
            .iter()
            .map(|n| format!("server options: {n} ({version}; each layout gets its own)"))
            .collect()
    }

    /// The not-modelled flags, as written, for JSON outputs.
    pub fn flags_not_modelled(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for s in self.sglang.not_modelled().iter().map(|e| e.spelled()) {
            if !v.contains(&s) {
                v.push(s);
            }
        }
        v
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub calibration: CalibrationArg,
    #[command(flatten)]
    pub format: FormatArg,
}

pub fn run(args: Args) -> Result<()> {
    args.workload.bench.check_output_file()?;
    let setup = Setup::new(&args.target, &args.calibration)?;
    let layout = setup.one_layout(&args.target.server, "run")?;
    let workload = args.workload.one(setup.max_context_tokens())?;
    let model = setup.model(layout, setup.knobs)?;
    let opts = setup.opts_for(layout);
    let mut run = simulate(&model, &opts, &workload)
        .with_context(|| format!("simulating {}", layout.short_name()))?;
    run.sglang_flags = model.placement().sglang_flags(&layout);
    if let Some(path) = &args.workload.bench.output_file {
        write_bench_line(path, &setup, &args.workload, &run, &workload, layout)?;
    }
    setup.print_notes();
    if let Some(plan) = model.spec_plan() {
        eprintln!("note: {plan}");
    }
    if let Some(w) =
        sim::fit::workload_kv_warning(&setup.spec.name, model.memory(), &layout, &opts, &workload)
    {
        eprintln!("warning: {w}");
    }
    let bench_flags = args.workload.not_modelled();
    print_bench_flags(&bench_flags);
    let mut flags_not_modelled = setup.flags_not_modelled();
    flags_not_modelled.extend(bench_flags);
    let out = RunOutput {
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        knobs: setup.knobs,
        flags_not_modelled,
        provenance: setup.provenance(&args.workload),
        idle_gpus: model.placement().idle_gpus,
        run,
    };
    match args.format.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&out)?),
        _ => println!("{}", table(&out)),
    }
    Ok(())
}

/// Warns, on stderr, of bench_serving flags given that do not change the simulation.
pub fn print_bench_flags(flags: &[String]) {
    if !flags.is_empty() {
        eprintln!(
            "warning: bench_serving flags not modelled: {}",
            flags.join(", ")
        );
    }
}

/// Appends `run` to `--output-file` as bench_serving would.
pub fn write_bench_line(
    path: &std::path::Path,
    setup: &Setup,
    w: &WorkloadArgs,
    run: &RunReport,
    workload: &sim::workload::Workload,
    layout: Layout,
) -> Result<()> {
    let opts = setup.opts_ranking(layout);
    let ctx = sim::bench_out::BenchLineContext {
        backend: w.bench.backend.as_deref().unwrap_or("sglang"),
        random_input_len: w.random_input_len,
        random_output_len: w.random_output_len,
        sharegpt_output_len: w.sharegpt_output_len,
        model_path: setup.sglang.model_path().unwrap_or(&setup.spec.name),
        machine: setup.machine.name(),
        layout,
        opts: &opts,
    };
    let line = sim::bench_out::jsonl_line(run, workload, &ctx);
    sim::bench_out::append_jsonl(path, &line)
        .with_context(|| format!("--output-file {}", path.display()))
}

/// The run as bench_serving's summary would show it, plus the engine's view.
fn table(o: &RunOutput) -> Table {
    let r: &RunReport = &o.run;
    let mut t = crate::cli::tables::table();
    t.set_header(vec![
        format!("{} on {}", o.model, o.machine),
        format!("{} ({})", r.layout, r.sglang_flags),
    ]);
    let conc = r
        .max_concurrency
        .map_or("unlimited".to_string(), |c| c.to_string());
    let mut rows: Vec<(&str, String)> = vec![
        ("Maximum request concurrency", conc),
        (
            "Input / output length",
            format!(
                "{} / {} (range ratio {})",
                r.random_input_len, r.random_output_len, r.random_range_ratio
            ),
        ),
        ("Successful requests", r.completed.to_string()),
        ("Benchmark duration (s)", format!("{:.2}", r.duration)),
        (
            "Request throughput (req/s)",
            format!("{:.2}", r.request_throughput),
        ),
        (
            "Input token throughput (tok/s)",
            format!("{:.2}", r.input_throughput),
        ),
        (
            "Output token throughput (tok/s)",
            format!("{:.2}", r.output_throughput),
        ),
        (
            "Total token throughput (tok/s)",
            format!("{:.2}", r.total_throughput),
        ),
        (
            "TTFT mean / median / p99 (ms)",
            format!(
                "{:.1} / {:.1} / {:.1}",
                r.mean_ttft_ms, r.median_ttft_ms, r.p99_ttft_ms
            ),
        ),
        (
            "TPOT mean / median / p99 (ms)",
            format!(
                "{:.2} / {:.2} / {:.2}",
                r.mean_tpot_ms, r.median_tpot_ms, r.p99_tpot_ms
            ),
        ),
        (
            "ITL mean / median / p99 (ms)",
            format!(
                "{:.2} / {:.2} / {:.2}",
                r.mean_itl_ms, r.median_itl_ms, r.p99_itl_ms
            ),
        ),
        ("Peak running requests", r.peak_running_requests.to_string()),
        (
            "Peak KV use",
            format!(
                "{} of {} tokens ({:.1}%)",
                r.peak_kv_tokens,
                r.kv_capacity_tokens,
                r.peak_kv_usage * 100.0
            ),
        ),
        (
            "Time: prefill / decode / idle (s)",
            format!(
                "{:.2} / {:.2} / {:.2} ({} prefill, {} decode batches; {} CPU-bound)",
                r.breakdown.prefill_s,
                r.breakdown.decode_s,
                r.breakdown.idle_s,
                r.breakdown.prefill_batches,
                r.breakdown.decode_batches,
                r.breakdown.cpu_bound_turns
            ),
        ),
        (
            "GPU time by part (s, summed over batches)",
            parts(&r.breakdown.cost_parts),
        ),
    ];
    if o.idle_gpus > 0 {
        rows.insert(
            0,
            (
                "GPUs",
                format!("one replica; {}", super::sweep::idle_note(o.idle_gpus)),
            ),
        );
    }
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), v]);
    }
    for (i, p) in o.provenance.iter().enumerate() {
        let k = if i == 0 { "Based on" } else { "" };
        t.add_row(vec![k.to_string(), p.clone()]);
    }
    if let Some(s) = r
        .micro_batch_samples
        .iter()
        .max_by_key(|s| s.sizes.iter().sum::<u32>())
        && s.sizes.len() > 1
    {
        t.add_row(vec![
            "Micro-batch sizes at peak".to_string(),
            format!("{:?} at {:.1} s", s.sizes, s.t_s),
        ]);
    }
    t
}

/// The non-zero parts of a breakdown, largest first.
pub fn parts(b: &sim::cost::TimeBreakdown) -> String {
    b.largest_parts(0.0)
        .iter()
        .map(|(k, x)| format!("{k} {x:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}
