//! A server's own log checked against the cost model (`sim validate --server-log`, and the
//! samples `sim calibrate --server-log` fits): each run's options through its engine's reader
//! ([`crate::engine::ServingEngine::logged_options`]), its memory plan beside the logged figures, each decode
//! sample's logged step time beside the prediction, what limits the server (`doctor`), and a
//! vLLM run's measured acceptance. The orchestration beside [`Scenario`]; the CLI prints it.

use crate::cost::{IterationModel, Knobs, MemoryPlan, ServedModel, memory};
use crate::engine::Engine;
use crate::options::ServerOptions;
use crate::scenario::Scenario;
use crate::server_log::batch::{MemoryCheck, check_memory, predicted_step_s};
use crate::server_log::{DecodeSample, ServerLog, ServerRun, SkipCounts};
use models::footprint::footprint;

/// Why a log cannot be checked at all.
#[derive(Debug, thiserror::Error)]
pub enum LogCheckError {
    /// Every run failed; the first run's reason.
    #[error("no run can be costed: {0}")]
    NoRunCosted(String),
}

/// Schema version of the `--server-log --format json` output (2 adds `engine`).
pub const SERVER_LOG_REPORT_SCHEMA_VERSION: u32 = 2;

/// `--format json` output of the server-log mode.
#[derive(serde::Serialize)]
pub struct ServerLogReport {
    pub schema_version: u32,
    /// The engine that wrote the log.
    pub engine: crate::engine::Engine,
    pub source: String,
    pub machine: String,
    pub model: String,
    pub knobs: Knobs,
    pub lines: usize,
    pub skipped: SkipCounts,
    pub runs: Vec<LoggedRunReport>,
}

/// One run of the log, checked.
#[derive(serde::Serialize)]
pub struct LoggedRunReport {
    pub index: usize,
    pub first_line: usize,
    /// `model_path` of the run's `ServerArgs`.
    pub model_path: Option<String>,
    /// Layout short name (`TP8`), `None` without a `ServerArgs` dump.
    pub layout: Option<String>,
    pub decode_samples: usize,
    /// Steady samples of the reporting ranks ([`ServerRun::steady_samples`]).
    pub steady_samples: usize,
    pub flagged_samples: usize,
    pub prefill_samples: usize,
    /// Prompt tokens found in the radix cache over all prefill batches.
    pub prefix_cache_hit_fraction: f64,
    pub memory_lines: usize,
    /// The memory plan for the run's options, and it beside the log.
    pub memory_plan: Option<MemoryPlan>,
    pub memory: Vec<MemoryCheck>,
    /// Why the run could not be costed, if it could not.
    pub error: Option<String>,
    pub samples: Vec<SampleRow>,
    /// Median |error| of the predicted step over the steady samples, %.
    pub median_abs_error_pct: Option<f64>,
    /// What limits this server at the highest steady load the log shows, with the flags to try
    /// (`sim::doctor`).
    pub limits: Vec<crate::doctor::Limit>,
    /// vLLM's measured speculative acceptance (`SpecDecoding metrics` lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<MeasuredAcceptance>,
    /// What the log's own lines say against its `server_args` dump ([`log_notes`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The acceptance a vLLM log measured over its `SpecDecoding metrics` lines.
#[derive(serde::Serialize)]
pub struct MeasuredAcceptance {
    pub lines: usize,
    /// Tokens per request and step, the bonus token included (drafted-weighted).
    pub mean_acceptance_length: f64,
    /// Per draft position, the share accepted (drafted-weighted mean over the lines).
    pub per_position: Vec<f64>,
}

/// [`MeasuredAcceptance`] of a vLLM run; `None` without speculative lines.
fn vllm_acceptance(run: &ServerRun) -> Option<MeasuredAcceptance> {
    let mean = crate::server_log::vllm::mean_acceptance_length(&run.spec_decode)?;
    let k = run.spec_decode.iter().map(|s| s.per_position.len()).max()?;
    let mut sums = vec![0.0; k];
    let mut weight = 0.0;
    for s in run.spec_decode.iter().filter(|s| s.per_position.len() == k) {
        let w = s.drafted_tokens as f64;
        weight += w;
        for (sum, r) in sums.iter_mut().zip(&s.per_position) {
            *sum += r * w;
        }
    }
    Some(MeasuredAcceptance {
        lines: run.spec_decode.len(),
        mean_acceptance_length: mean,
        per_position: sums.iter().map(|x| x / weight.max(1.0)).collect(),
    })
}

/// A decode sample and its prediction.
#[derive(serde::Serialize)]
pub struct SampleRow {
    #[serde(flatten)]
    pub sample: DecodeSample,
    /// From the reporting ranks (see [`ServerRun::is_reporting_rank`]).
    pub reporting: bool,
    pub predicted_step_ms: Option<f64>,
    pub error_pct: Option<f64>,
}

fn check_run(setup: &Scenario, run: &ServerRun, log_engine: Engine) -> LoggedRunReport {
    let mut report = empty_report(run);
    let rows = |predict: &dyn Fn(&DecodeSample) -> Option<f64>| {
        run.decode
            .iter()
            .map(|s| {
                let predicted = predict(s);
                SampleRow {
                    sample: s.clone(),
                    reporting: run.is_reporting_rank(s),
                    predicted_step_ms: predicted.map(|p| p * 1e3),
                    error_pct: predicted.zip(s.step_s).map(|(p, m)| (p / m - 1.0) * 100.0),
                }
            })
            .collect::<Vec<_>>()
    };
    let Some(layout) = run.layout() else {
        // the log's engine says why (a run with vLLM's arguments is in a vLLM log)
        report.error = Some(log_engine.rules().run_layout_unknown(run).into());
        report.samples = rows(&|_| None);
        return report;
    };
    let opts = match run.logged_options(&setup.opts, &layout, &setup.machine) {
        Ok((o, notes)) => {
            report.notes.extend(notes);
            o
        }
        Err(e) => {
            report.error = Some(e);
            report.samples = rows(&|_| None);
            return report;
        }
    };
    report.acceptance = vllm_acceptance(run);
    if let Ok(fp) = footprint(&setup.spec, &layout) {
        // the weights the server held on the GPU: less what it offloaded to the host
        let fp = match &opts.weight_offload {
            Some(o) => crate::cost::offload::footprint_on_gpu(&setup.spec, &fp, o),
            None => fp,
        };
        let plan = memory::plan(&setup.spec, &fp, setup.machine.memory_bytes(), &opts);
        report.memory = check_memory(&plan, &run.memory);
        report.memory_plan = Some(plan);
    }
    match ServedModel::new(&setup.machine, &setup.spec, layout, &opts, setup.knobs) {
        Ok(model) => {
            report
                .notes
                .extend(model.target().default_config_note().map(str::to_string));
            report.samples = rows(&|s| (s.running > 0).then(|| predicted_step_s(&model, s)));
            let errors: Vec<f64> = report
                .samples
                .iter()
                .filter(|r| r.reporting && r.sample.steady)
                .filter_map(|r| r.error_pct.map(f64::abs))
                .collect();
            report.median_abs_error_pct = models::stats::median(&errors);
            report.limits = diagnose_run(setup, run, layout, &opts, &model);
        }
        Err(e) => {
            report.error = Some(e.to_string());
            report.samples = rows(&|_| None);
        }
    }
    report
}

/// The run as the log describes it, before anything is costed.
fn empty_report(run: &ServerRun) -> LoggedRunReport {
    let prompt: u64 = run
        .prefill
        .iter()
        .map(|p| p.new_tokens + p.cached_tokens)
        .sum();
    let cached: u64 = run.prefill.iter().map(|p| p.cached_tokens).sum();
    LoggedRunReport {
        index: run.index,
        first_line: run.first_line,
        model_path: logged_model(run),
        layout: run.layout().map(|l| l.short_name()),
        decode_samples: run.decode.len(),
        steady_samples: run.steady_samples().count(),
        flagged_samples: run.flagged_samples().count(),
        prefill_samples: run.prefill.len(),
        prefix_cache_hit_fraction: if prompt > 0 {
            cached as f64 / prompt as f64
        } else {
            0.0
        },
        memory_lines: run.memory.lines,
        memory_plan: None,
        memory: Vec::new(),
        error: None,
        samples: Vec::new(),
        median_abs_error_pct: None,
        limits: Vec::new(),
        acceptance: None,
        notes: moe_default_note(run).into_iter().collect(),
    }
}

/// The engine's own script that tunes its fused MoE and writes the config file it missed.
fn tuning_script(run: &ServerRun) -> &'static str {
    match run.engine() {
        Engine::Vllm => "vLLM's benchmarks/kernels/benchmark_moe.py --tune",
        Engine::Sglang => "SGLang's benchmark/kernels/fused_moe_triton",
    }
}

/// The files a run's Triton fused MoE found missing, and what writes them; `None` where the log
/// shows no such warning. What it costs is the cost model's note
/// ([`crate::cost::CostModel::default_config_note`]), added once the run is costed.
fn moe_default_note(run: &ServerRun) -> Option<String> {
    if run.moe_default_configs.is_empty() {
        return None;
    }
    let tune = tuning_script(run);
    Some(format!(
        "the fused MoE ran on the engine's default Triton config (no tuned file: {}); {tune} \
         writes the missing file",
        run.moe_default_configs.join(", ")
    ))
}

/// What limits the logged server at its steady load (the doctor), with the CUDA-graph step beside
/// an eager one.
fn diagnose_run(
    setup: &Scenario,
    run: &ServerRun,
    layout: models::Layout,
    opts: &ServerOptions,
    model: &ServedModel,
) -> Vec<crate::doctor::Limit> {
    let graphs = ServerOptions {
        disable_cuda_graph: false,
        ..opts.clone()
    };
    let graph_model =
        ServedModel::new(&setup.machine, &setup.spec, layout, &graphs, setup.knobs).ok();
    let reporting: Vec<_> = run
        .steady_samples()
        .filter(|s| run.is_reporting_rank(s))
        .collect();
    let Some(load) = crate::doctor::Load::of(reporting.iter().copied()) else {
        return Vec::new();
    };
    let mut load = load.with_prompts(run.prefill.iter());
    load.larger_dcp = crate::cost::dcp::largest_above(&setup.spec, &layout, opts);
    load.pool_tokens = run
        .memory
        .pool
        .as_ref()
        .and_then(|p| p.max_total_num_tokens);
    // under SGLang's PP every line is one micro-batch, so none is "steady": all of them (a vLLM
    // line is the whole server's: no split to read)
    let lines: Vec<_> = run
        .decode
        .iter()
        .filter(|s| run.is_reporting_rank(s))
        .collect();
    load.pp_split = opts
        .engine
        .rules()
        .decode_line_per_micro_batch()
        .then(|| crate::doctor::PpSplit::of(&lines, layout.pp))
        .flatten();
    let (running, context) = (load.running, load.context_tokens);
    let mut limits = crate::doctor::diagnose(
        model,
        opts,
        graph_model.as_ref().map(|g| g as &dyn IterationModel),
        load,
    );
    if let (Some(first), Some(t)) = (
        limits.first_mut(),
        tuned_moe_try(setup, run, layout, opts, model, (running, context)),
    ) {
        first.try_flags.push(t);
    }
    limits
}

/// What tuning the fused MoE would give where the run ran its default config and the cost model
/// prices that ([`crate::cost::moe_config`]): the step at the diagnosed load with the tuned
/// kernel, beside the run's.
fn tuned_moe_try(
    setup: &Scenario,
    run: &ServerRun,
    layout: models::Layout,
    opts: &ServerOptions,
    model: &ServedModel,
    (running, context): (u32, u32),
) -> Option<String> {
    if !model.target().prices_default_config() {
        return None;
    }
    let tuned_opts = ServerOptions {
        moe_default_config: false,
        ..opts.clone()
    };
    let tuned = ServedModel::new(
        &setup.machine,
        &setup.spec,
        layout,
        &tuned_opts,
        setup.knobs,
    )
    .ok()?;
    let (now, then) = (
        model.logged_step_s(running, context),
        tuned.logged_step_s(running, context),
    );
    let script = tuning_script(run);
    Some(format!(
        "tune the fused MoE ({script} writes {}): {:.1} ms per step predicted, {:.2}× the decode \
         throughput",
        run.moe_default_configs.join(", "),
        then * 1e3,
        now / then
    ))
}

/// The model a run's launch arguments name.
pub fn logged_model(run: &ServerRun) -> Option<String> {
    run.model()
}

/// Every run of `log` checked under `setup`; an error when no run can be costed.
pub fn check_log(setup: &Scenario, log: &ServerLog) -> Result<ServerLogReport, LogCheckError> {
    let log_engine = log.engine.unwrap_or_default();
    let runs: Vec<LoggedRunReport> = log
        .runs
        .iter()
        .map(|r| check_run(setup, r, log_engine))
        .collect();
    if let Some(first) = runs.iter().find_map(|r| r.error.as_ref())
        && runs.iter().all(|r| r.error.is_some())
    {
        return Err(LogCheckError::NoRunCosted(first.clone()));
    }
    Ok(ServerLogReport {
        schema_version: SERVER_LOG_REPORT_SCHEMA_VERSION,
        engine: log.engine.unwrap_or_default(),
        source: log.source.clone(),
        machine: setup.machine.name().to_string(),
        model: setup.spec.name.clone(),
        knobs: setup.knobs,
        lines: log.lines,
        skipped: log.skipped.clone(),
        runs,
    })
}
