//! The numbers behind `sim report`: for one machine, every layout's memory plan, its decode step
//! broken down by part, a bench_serving run per concurrency, the ranking at the report's
//! concurrency and the answer to "should we try EP?". Chart code never simulates; it reads these.

use super::layout_fit::{self, Fit};
use crate::advise::{EpAnswer, EpQuestion, ep_question};
use crate::cost::report::{BreakdownMs, PredictQuery, describe};
use crate::cost::{IterationModel, Knobs, MemoryPlan, ServedModel, memory};
use crate::engine::Knob;
use crate::layout::{LayoutCandidate, enumerate_layouts};
use crate::machine::Machine;
use crate::memory_fit::OptionsFor;
use crate::options::ServerOptions;
use crate::serving::RunReport;
use crate::sweep::{SweepLayout, sweep};
use crate::workload::Workload;
use models::profile::MachineProfile;
use models::{Layout, ModelSpec};

/// What a report simulates, beyond machine and model.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportPlan {
    /// The workload (its `max_concurrency` is replaced by each entry of `concurrencies`).
    pub workload: Workload,
    /// Concurrencies of the throughput / TTFT / TPOT lines, ascending.
    pub concurrencies: Vec<u32>,
    /// Concurrency of the ranking, the decode breakdown and the EP verdict (one of
    /// `concurrencies`).
    pub at_concurrency: u32,
    /// Perturbed draws behind the EP verdict's confidence.
    pub draws: u32,
}

/// One layout on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutResult {
    /// The layout.
    pub layout: Layout,
    /// Whether it runs, decided once by [`super::layout_fit::decide`].
    pub fit: Fit,
    /// Memory per GPU, also for a layout that does not fit (`None` when the layout is impossible).
    pub memory: Option<MemoryPlan>,
    /// One steady decode step at the report's concurrency and mean context, by part.
    pub decode_step: Option<BreakdownMs>,
    /// Simulated bench_serving runs, one per concurrency that could run.
    pub runs: Vec<RunReport>,
    /// What the error model splits its predictions by (the charts' 80% bands).
    pub regime: crate::uncertainty::Regime,
}

impl LayoutResult {
    /// Short name (`TP8`, `TP4xPP2`, `EP8`).
    pub fn name(&self) -> String {
        self.layout.short_name()
    }

    /// Why it cannot run (impossible for the model, or does not fit), if so.
    pub fn rejected(&self) -> Option<&str> {
        self.fit.why()
    }

    /// The run at concurrency `c`, if simulated.
    pub fn run_at(&self, c: u32) -> Option<&RunReport> {
        self.runs.iter().find(|r| r.max_concurrency == Some(c))
    }
}

/// Everything a report shows about one machine.
#[derive(Debug, Clone)]
pub struct MachineResults {
    /// The preset name or profile file stem (chart titles, file names).
    pub label: String,
    /// The profile the machine came from (pair and collective charts).
    pub profile: MachineProfile,
    /// GPU model name (datasheet).
    pub gpu_name: String,
    /// GPUs in the machine.
    pub gpu_count: u32,
    /// Memory of one card, bytes.
    pub gpu_memory_bytes: u64,
    /// Every layout the machine's GPU count allows, in enumeration order.
    pub layouts: Vec<LayoutResult>,
    /// The EP answer, or why there is none (dense model, EP impossible, nothing else fits).
    pub ep: Result<EpAnswer, String>,
    /// Decode throughput with and without speculative decoding on TP over every GPU, by
    /// concurrency, or why there is none (no MTP layers, no flags).
    pub speculation: Result<SpeculationCurve, String>,
    /// Assumptions the machine was built with (derived curves, missing measurements).
    pub notes: Vec<String>,
}

impl MachineResults {
    /// Layouts that ran at `c`, best output throughput first.
    pub fn ranking_at(&self, c: u32) -> Vec<(&LayoutResult, &RunReport)> {
        let mut v: Vec<(&LayoutResult, &RunReport)> = self
            .layouts
            .iter()
            .filter_map(|l| l.run_at(c).map(|r| (l, r)))
            .collect();
        v.sort_by(|a, b| b.1.output_throughput.total_cmp(&a.1.output_throughput));
        v
    }
}

/// Simulates everything the report needs on `machine`, each layout with its own options
/// (`opts_for`, the ones `predict`, `advise` and `sweep` use: one memory verdict). `tick` is
/// called once per finished bench_serving run (progress bars).
pub fn simulate_machine(
    machine: &Machine,
    spec: &ModelSpec,
    opts_for: &OptionsFor<'_>,
    knobs: Knobs,
    plan: &ReportPlan,
    tick: &(dyn Fn() + Sync),
) -> MachineResults {
    // the scheduler's limits and the speculation curve: TP over every GPU
    let opts = &opts_for(&Layout::tp(machine.gpu_count));
    let candidates = enumerate_layouts(machine.gpu_count, spec);
    let context = plan.workload.random_input_len + plan.workload.random_output_len / 2;
    let query = PredictQuery {
        batch: plan.at_concurrency,
        context_tokens: context,
        prefill_tokens: 0,
    };
    let mut layouts = Vec::with_capacity(candidates.len());
    let mut sweep_layouts = Vec::with_capacity(candidates.len());
    for c in &candidates {
        let (layout, sweep_layout) = build_layout(machine, spec, opts_for, knobs, plan, c, &query);
        layouts.push(layout);
        sweep_layouts.push(sweep_layout);
    }
    let rows = sweep(
        &sweep_layouts,
        opts,
        std::slice::from_ref(&plan.workload),
        &plan.concurrencies,
        tick,
    );
    for row in rows {
        if let (Some(run), Some(l)) = (
            row.run,
            layouts
                .iter_mut()
                .find(|l| l.layout.short_name() == row.layout),
        ) {
            l.runs.push(run);
        }
    }
    let ep = answer_ep(machine, spec, opts_for, knobs, plan, &layouts);
    let speculation = speculation_curve(machine, spec, opts, knobs, plan, &layouts);
    MachineResults {
        label: machine.name().to_string(),
        profile: machine.profile.clone(),
        gpu_name: machine.gpu.name.clone(),
        gpu_count: machine.gpu_count,
        gpu_memory_bytes: machine.memory_bytes(),
        layouts,
        ep,
        speculation,
        notes: machine.notes().to_vec(),
    }
}

/// One candidate layout: its fit, memory plan, decode step and error regime for the report, and
/// the model the sweep replays (none where it does not fit: nothing downstream can draw it).
fn build_layout(
    machine: &Machine,
    spec: &ModelSpec,
    opts_for: &OptionsFor<'_>,
    knobs: Knobs,
    plan: &ReportPlan,
    c: &LayoutCandidate,
    query: &PredictQuery,
) -> (LayoutResult, SweepLayout) {
    let layout_opts = opts_for(&c.layout);
    let memory = c
        .rejected
        .is_none()
        .then(|| models::footprint::footprint(spec, &c.layout).ok())
        .flatten()
        .map(|fp| memory::plan(spec, &fp, machine.memory_bytes(), &layout_opts));
    let built = match &c.rejected {
        Some(why) => Err(why.clone()),
        None => ServedModel::new(
            machine,
            spec,
            c.layout,
            &crate::options::runnable_on(&layout_opts, spec, &c.layout),
            knobs,
        )
        .map_err(|e| e.to_string()),
    };
    let fit = layout_fit::decide(
        c.rejected.as_deref(),
        built.as_ref().err().map(String::as_str),
        memory.as_ref(),
    );
    // A layout that does not fit is not simulated: nothing downstream can draw it.
    let model = match (&fit, built) {
        (Fit::Fits, Ok(m)) => Ok(m),
        (f, built) => Err(f
            .why()
            .map_or_else(|| built.err().unwrap_or_default(), str::to_owned)),
    };
    let decode_step = model
        .as_ref()
        .ok()
        .and_then(|m| describe(m, query).breakdown);
    let load = crate::uncertainty::Load {
        family: "bench_serving",
        concurrency: plan.at_concurrency,
        context_tokens: plan.workload.random_input_len,
    };
    let regime =
        crate::uncertainty::Regime::of(machine, spec, &layout_opts, Some(c.layout), load, &[]);
    let layout = LayoutResult {
        layout: c.layout,
        fit,
        memory,
        decode_step,
        runs: Vec::new(),
        regime,
    };
    let sweep_layout = SweepLayout::new(
        machine,
        c.layout,
        model.map(|m| Box::new(m) as Box<dyn IterationModel>),
    );
    (layout, sweep_layout)
}

/// Decode throughput (prefill excluded) of one layout with and without speculation.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeculationCurve {
    /// The layout's flags and the speculative configuration, for the caption.
    pub layout: String,
    pub plan: crate::cost::spec::SpecPlan,
    pub context_tokens: u32,
    pub points: Vec<crate::advise::mtp::MtpPoint>,
}

/// Speculation on TP over every GPU: the `--speculative-*` flags given, else SGLang's choice
/// for a checkpoint with MTP layers.
fn speculation_curve(
    machine: &Machine,
    spec: &ModelSpec,
    opts: &ServerOptions,
    knobs: Knobs,
    plan: &ReportPlan,
    layouts: &[LayoutResult],
) -> Result<SpeculationCurve, String> {
    let layout = Layout::tp(machine.gpu_count);
    if let Some(why) = layouts
        .iter()
        .find(|l| l.layout == layout)
        .and_then(LayoutResult::rejected)
    {
        return Err(format!("{} cannot run: {why}", layout.short_name()));
    }
    let s = match &opts.speculative {
        Some(s) => s.clone(),
        None if spec.num_mtp_layers > 0 => {
            crate::engine::sglang::args::default_speculative_options(&spec.model_type)
        }
        None => {
            return Err(format!(
                "{} has no MTP layers and no --speculative-* flags were given",
                spec.name
            ));
        }
    };
    // the engine's own cap under speculation (SGLang's 48 without --max-running-requests) would
    // flatten the curve above it: the chart is of speculation's gain, so the flag is raised to
    // the largest concurrency drawn and the caption says so, as `advise --question mtp` does
    let top = plan.concurrencies.iter().copied().max().unwrap_or(0);
    let lifted = crate::engine::running_cap_to_lift(opts, top).map(|_| top);
    let with = ServerOptions {
        speculative: Some(s.clone()),
        max_running_requests: lifted.or(opts.max_running_requests),
        ..opts.clone()
    };
    let without = ServerOptions {
        speculative: None,
        ..opts.clone()
    };
    let on = ServedModel::new(machine, spec, layout, &with, knobs).map_err(|e| e.to_string())?;
    let off =
        ServedModel::new(machine, spec, layout, &without, knobs).map_err(|e| e.to_string())?;
    let context = plan.workload.random_input_len + plan.workload.random_output_len / 2;
    let points = plan
        .concurrencies
        .iter()
        .map(|&c| {
            let w = on.steady_decode(c, context).tok_per_s;
            let wo = off.steady_decode(c, context).tok_per_s;
            crate::advise::mtp::MtpPoint {
                concurrency: c,
                with_tok_s: w,
                without_tok_s: wo,
                gain: w / wo.max(1e-12),
            }
        })
        .collect();
    let running_flag = lifted
        .map(|n| format!(" {} {n}", opts.engine.flag(Knob::MaxRunningRequests)))
        .unwrap_or_default();
    Ok(SpeculationCurve {
        layout: format!("{}{running_flag}", layout.sglang_flags()),
        plan: crate::cost::spec::SpecPlan::resolve(spec, &s),
        context_tokens: context,
        points,
    })
}

/// "Should we try EP?" at the report's concurrency, as `sim advise --question ep` answers it.
fn answer_ep(
    machine: &Machine,
    spec: &ModelSpec,
    opts_for: &OptionsFor<'_>,
    knobs: Knobs,
    plan: &ReportPlan,
    layouts: &[LayoutResult],
) -> Result<EpAnswer, String> {
    let gpus = machine.gpu_count;
    if spec.moe.is_none() {
        return Err(format!(
            "{} is a dense model: there are no experts to spread",
            spec.name
        ));
    }
    let ep_layout = Layout {
        tp: gpus,
        pp: 1,
        ep: gpus,
        dp_attention: false,
    };
    match layouts.iter().find(|l| l.layout == ep_layout) {
        None => return Err(format!("EP{gpus} is not a layout of this machine")),
        Some(l) => match &l.fit {
            Fit::Fits => {}
            Fit::Impossible(why) => return Err(format!("EP{gpus} is impossible: {why}")),
            Fit::NoMemory(why) => return Err(format!("EP{gpus} does not fit: {why}")),
        },
    }
    let workload = Workload {
        max_concurrency: Some(plan.at_concurrency),
        ..plan.workload.clone()
    };
    let opts = &opts_for(&Layout::tp(gpus));
    let q = EpQuestion {
        spec,
        opts,
        workload: &workload,
        knobs,
        ep_layout,
        others: layouts
            .iter()
            .filter(|l| l.fit.fits() && l.layout.ep == 1)
            .map(|l| l.layout)
            .collect(),
        comm_spread: crate::advise::comm_spread(&machine.profile),
        draws: plan.draws,
        seed: workload.seed,
        known_error: None,
        ep_a2a_backend: None,
        extra_flags: Vec::new(),
        ep_extra_flags: Vec::new(),
    };
    let build = |l: Layout, k| {
        ServedModel::new(
            machine,
            spec,
            l,
            &crate::options::runnable_on(&opts_for(&l), spec, &l),
            k,
        )
        .map(|m| Box::new(m) as Box<dyn IterationModel>)
        .map_err(|e| e.to_string())
    };
    ep_question(&q, &build)
}
