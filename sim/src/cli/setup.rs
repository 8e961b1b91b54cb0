//! What every prediction command resolves first: `--calibration FILE` ([`CalibrationArg`]) and
//! the [`Setup`] built from the shared flags, a [`sim::scenario::Scenario`] plus the parts that
//! need the command line (the layout flags, whether a launch line was given, stderr notes).

use super::args::{LayoutArgs, LayoutSelection, ServerArgs, TargetArgs};
use super::workload_args::WorkloadArgs;
use anyhow::{Context, Result, bail};
use models::{Layout, ModelSpec};
use sim::calibrate::{Calibration, KnobBounds};
use sim::cost::{Knobs, ServedModel};
use sim::engine::sglang::args::SglangArgs;
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::scenario::Scenario;
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
        let bounds = ServedModel::new(machine, spec, layout, opts, Knobs::default())
            .ok()
            .map(|m| KnobBounds::of(m.target()));
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

/// The command's [`Scenario`] (machine, model, server flags with a launch line's merged, knobs),
/// resolved once per command, with the layout flags it was picked from.
pub struct Setup {
    scenario: Scenario,
    /// The layout flags, with a launch line's filled in.
    pub layout_args: LayoutArgs,
    launch_line: bool,
}

impl std::ops::Deref for Setup {
    type Target = Scenario;
    fn deref(&self) -> &Scenario {
        &self.scenario
    }
}

impl std::ops::DerefMut for Setup {
    fn deref_mut(&mut self) -> &mut Scenario {
        &mut self.scenario
    }
}

/// The GPUs a launch line's server gets: the first of `CUDA_VISIBLE_DEVICES` it needs, else the
/// box's first ones when the layout takes fewer than the box (SGLang's `--base-gpu-id 0`); without
/// a launch line the whole machine, its layouts placed on the best-connected GPUs.
pub fn server_machine(
    machine: sim::machine::Machine,
    sglang: &SglangArgs,
    layout: Layout,
    replicas: u32,
    launch_line: bool,
) -> Result<sim::machine::Machine> {
    let (machine, notes) = sim::machine::nccl_env::apply(machine, &sglang.env)?;
    for n in notes {
        eprintln!("note: {n}");
    }
    // `--dp-size N` without DP attention: N engines on consecutive GPU sets
    let needed = (layout.gpus() * replicas.max(1)) as usize;
    Ok(match sglang.visible_devices()? {
        // fewer visible than needed: check_environment says so
        Some(v) if v.len() >= needed => machine.with_gpus(&v[..needed])?,
        Some(_) => machine,
        None if launch_line && needed < machine.gpu_count as usize => {
            machine.first_gpus(needed as u32)?
        }
        None => machine,
    })
}

impl Setup {
    /// The error model's regime of a prediction of this setup under `opts` at `load`
    /// ([`sim::uncertainty::Regime::of`]).
    pub fn regime(
        &self,
        opts: &sim::options::ServerOptions,
        layout: Option<Layout>,
        load: sim::uncertainty::Load,
    ) -> sim::uncertainty::Regime {
        sim::uncertainty::Regime::of(
            &self.machine,
            &self.spec,
            opts,
            layout,
            load,
            &self.default_notes,
        )
    }

    /// Resolves the shared flags.
    pub fn new(target: &TargetArgs, cal: &CalibrationArg) -> Result<Setup> {
        if let Some(line) = target.server.vllm()? {
            return Setup::from_vllm(target, cal, line);
        }
        Setup::from_sglang(target, cal, target.server.sglang()?)
    }

    /// The setup of a vLLM server (`--engine vllm`): the vLLM launch line when one was given,
    /// else `vllm serve` with vLLM's defaults and the layouts `sim`'s own layout flags pick.
    pub fn vllm(target: &TargetArgs, cal: &CalibrationArg) -> Result<Setup> {
        if let Some(line) = target.server.vllm()? {
            return Setup::from_vllm(target, cal, line);
        }
        target.server.refuse_sglang_flags()?;
        let line = sim::engine::vllm::args::VllmLine::parse("vllm serve")?
            .expect("`vllm serve` is a vLLM line");
        let machine = target.machine.resolve()?;
        let spec = target.model.resolve_or(None)?;
        let layout_args = target.server.layout.clone();
        let primary = primary_layout(&layout_args, &machine, &spec)?;
        let scenario = Scenario::vllm(machine, spec, line, primary)?;
        Setup::finish(scenario, cal, primary, false, layout_args)
    }

    /// [`Setup::new`] for a vLLM launch line: its model, layout and options as vLLM reads them.
    fn from_vllm(
        target: &TargetArgs,
        cal: &CalibrationArg,
        line: sim::engine::vllm::args::VllmLine,
    ) -> Result<Setup> {
        let (machine, notes) = sim::machine::nccl_env::apply(target.machine.resolve()?, &line.env)?;
        for n in notes {
            eprintln!("note: {n}");
        }
        let spec = target.model.resolve_or(line.model.as_deref())?;
        let layout_args = target.server.layout.with_sizes(&line.sizes()?);
        let primary = primary_layout(&layout_args, &machine, &spec)?;
        let scenario = Scenario::vllm(machine, spec, line, primary)?;
        Setup::finish(scenario, cal, primary, true, layout_args)
    }

    /// The setup of `scenario` at `primary` with `cal`'s calibration checked against it.
    fn finish(
        scenario: Scenario,
        cal: &CalibrationArg,
        primary: Layout,
        launch_line: bool,
        layout_args: LayoutArgs,
    ) -> Result<Setup> {
        let calibration =
            cal.load_for(&scenario.machine, &scenario.spec, primary, &scenario.opts)?;
        Ok(Setup {
            scenario: scenario.with_calibration(calibration),
            launch_line,
            layout_args,
        })
    }

    /// [`Setup::new`] with the SGLang flags already read.
    fn from_sglang(target: &TargetArgs, cal: &CalibrationArg, sglang: SglangArgs) -> Result<Setup> {
        let TargetArgs {
            machine,
            model,
            server,
        } = target;
        let machine = machine.resolve()?;
        let spec = model.resolve_or(sglang.model_path())?;
        let layout_args = server.layout.with_sizes(&sglang.sizes());
        let primary = primary_layout(&layout_args, &machine, &spec)?;
        let machine = server_machine(
            machine,
            &sglang,
            primary,
            layout_args.replicas(),
            server.has_launch_line(),
        )?;
        let scenario = Scenario::new(machine, spec, sglang, primary)?;
        Setup::finish(
            scenario,
            cal,
            primary,
            server.has_launch_line(),
            layout_args,
        )
    }

    /// [`Setup::new`] with a server log's own `server_args` merged into the flags: they state
    /// the layout and options the server ran; a flag given on the command line that disagrees
    /// with the log is an error naming both values.
    pub fn with_server_log(
        target: &TargetArgs,
        cal: &CalibrationArg,
        logged: Option<&SglangArgs>,
    ) -> Result<Setup> {
        let Some(logged) = logged else {
            return Setup::new(target, cal);
        };
        let sglang = target.server.sglang()?.merge(logged.clone())?;
        Setup::from_sglang(target, cal, sglang)
    }

    /// [`Setup::new`] for a vLLM server log: its `non-default args` are the launch line (a
    /// `--server-args` line of its own is refused: the log says what ran).
    pub fn with_vllm_log(
        target: &TargetArgs,
        cal: &CalibrationArg,
        logged: sim::engine::vllm::args::VllmLine,
    ) -> Result<Setup> {
        if target.server.has_launch_line() {
            bail!(
                "--server-args with a vLLM --server-log: the log's non-default args say how the server ran; drop --server-args"
            );
        }
        Setup::from_vllm(target, cal, logged)
    }

    /// The one layout the flags select (`--layout all` is refused). A launch line without
    /// `--tp-size` runs TP1, SGLang's default.
    pub fn one_layout(&self, server: &ServerArgs, command: &str) -> Result<Layout> {
        let mut flags = match &self.vllm {
            Some(_) => self.layout_args.clone(),
            None => server.layout.with_sizes(&self.sglang.sizes()),
        };
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

    /// [`Setup::print_notes`] for the one layout a command runs: the defaults of that layout.
    pub fn print_notes_for(&self, layout: Layout) {
        self.print_not_modelled();
        for n in self.default_notes_for(layout) {
            eprintln!("note: {n}");
        }
    }

    /// Prints, on stderr, the flags that were not modelled.
    pub fn print_not_modelled(&self) {
        if let Some(line) = self.sglang.not_modelled_line() {
            eprintln!("warning: {line}");
        }
        if let Some(line) = self.vllm.as_ref().and_then(|v| v.not_modelled_line()) {
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
}

/// The layout the flags pick, every GPU in TP when they pick none (`--layout all`).
fn primary_layout(layout_args: &LayoutArgs, machine: &Machine, spec: &ModelSpec) -> Result<Layout> {
    Ok(match layout_args.selection(machine.gpu_count, spec)? {
        LayoutSelection::One(l) => l,
        LayoutSelection::All => Layout::tp(machine.gpu_count),
    })
}
