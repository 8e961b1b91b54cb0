//! What every prediction command resolves first: `--calibration FILE` ([`CalibrationArg`]) and
//! the [`Setup`] built from the shared flags, a [`sim::scenario::Scenario`] plus the parts that
//! need the command line (the layout flags, whether a launch line was given, stderr notes).

use super::args::{LayoutArgs, LayoutSelection, ServerArgs, TargetArgs};
use crate::cli::tables::wrap;
use anyhow::{Context, Result, bail};
use models::{Layout, ModelSpec};
use sim::calibrate::{Calibration, KnobBounds};
use sim::cost::{Knobs, ServedModel};
use sim::engine::Launch;
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
            eprintln!("{}", wrap("warning: ", &format!("{}: {w}", path.display())));
        }
        Ok(Some(cal))
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
    launch: &Launch,
    layout: Layout,
    replicas: u32,
    launch_line: bool,
) -> Result<sim::machine::Machine> {
    let (machine, notes) = sim::machine::nccl_env::apply(machine, launch.env())?;
    for n in notes {
        eprintln!("{}", wrap("note: ", &n));
    }
    // `--dp-size N` without DP attention: N engines on consecutive GPU sets
    let needed = (layout.gpus() * replicas.max(1)) as usize;
    Ok(match launch.visible_devices()? {
        // fewer visible than needed: check_environment says so
        Some(v) if v.len() >= needed => machine.with_gpus(&v[..needed])?,
        Some(_) => machine,
        None if launch_line
            && launch.runs_on_first_gpus()
            && needed < machine.gpu_count as usize =>
        {
            machine.first_gpus(needed as u32)?
        }
        None => machine,
    })
}

impl Setup {
    /// Resolves the shared flags: the server the registry reads from them
    /// ([`super::server_args::ServerArgs::launch`]).
    pub fn new(target: &TargetArgs, cal: &CalibrationArg) -> Result<Setup> {
        Setup::for_engine(target, cal, None)
    }

    /// [`Setup::new`] with the engine the command names (`--engine`): its reader reads the
    /// flags (vLLM's without a line: `vllm serve` with vLLM's defaults and the layouts `sim`'s
    /// own layout flags pick).
    pub fn for_engine(
        target: &TargetArgs,
        cal: &CalibrationArg,
        engine: Option<sim::engine::Engine>,
    ) -> Result<Setup> {
        let launch = target.server.launch(engine)?;
        // a launch line counts when its engine reads it (`--engine vllm` beside another
        // engine's line runs `vllm serve` with vLLM's defaults)
        let launch_line = target.server.line_engine()? == Some(launch.engine());
        Setup::from_launch(target, cal, launch, launch_line)
    }

    /// The setup of `launch` (`launch_line`: it came from a launch line or a log, so a layout
    /// smaller than the box runs on the first GPUs and an absent TP size is the engine's 1).
    fn from_launch(
        target: &TargetArgs,
        cal: &CalibrationArg,
        launch: Launch,
        launch_line: bool,
    ) -> Result<Setup> {
        let machine = target.machine.resolve()?;
        let spec = target.model.resolve_or(launch.model_path())?;
        let layout_args = target
            .server
            .layout
            .with_sizes(&launch.stated_sizes(launch_line, spec.moe.is_some())?);
        let primary = primary_layout(&layout_args, &machine, &spec)?;
        let machine = server_machine(
            machine,
            &launch,
            primary,
            layout_args.replicas(),
            launch_line,
        )?;
        let scenario = Scenario::new(machine, spec, launch, primary)?;
        let calibration =
            cal.load_for(&scenario.machine, &scenario.spec, primary, &scenario.opts)?;
        Ok(Setup {
            scenario: scenario.with_calibration(calibration),
            launch_line,
            layout_args,
        })
    }

    /// [`Setup::new`] with a server log's own launch arguments (`logged`, read by the log's
    /// engine): they state the layout and options the server ran. SGLang's dump is merged into
    /// the flags (a flag given on the command line that disagrees with the log is an error
    /// naming both values); a vLLM run's `non-default args` are the launch (a `--server-args`
    /// line of its own is refused: the log says what ran).
    pub fn with_logged(
        target: &TargetArgs,
        cal: &CalibrationArg,
        logged: Option<&Launch>,
    ) -> Result<Setup> {
        let Some(logged) = logged else {
            return Setup::new(target, cal);
        };
        let given = target.server.has_launch_line();
        let launch = target
            .server
            .launch(None)?
            .with_logged(logged.clone(), given)?;
        // a log's launch arguments stand for a launch line
        let launch_line = given || logged.sglang_args().is_none();
        Setup::from_launch(target, cal, launch, launch_line)
    }

    /// The one layout the flags select (`--layout all` is refused). A launch line without
    /// `--tp-size` runs TP1, SGLang's default.
    pub fn one_layout(&self, server: &ServerArgs, command: &str) -> Result<Layout> {
        let _ = server;
        let mut flags = self.layout_args.clone();
        let tp_defaulted = self.launch_line && flags.tp.is_none() && flags.layout.is_none();
        if tp_defaulted {
            flags.tp = Some(1);
        }
        let selected = flags
            .selection(self.machine.gpu_count, &self.spec)
            .with_context(|| {
                if tp_defaulted {
                    format!(
                        "the --server-args line gives no {}, so SGLang's default 1",
                        super::own_flags::sim_flag(sim::engine::Knob::TensorParallel)
                    )
                } else {
                    "layout flags".to_string()
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
            eprintln!("{}", wrap("note: ", n));
        }
    }

    /// [`Setup::print_notes`] for the one layout a command runs: the defaults of that layout.
    pub fn print_notes_for(&self, layout: Layout) {
        self.print_not_modelled();
        for n in self.default_notes_for(layout) {
            eprintln!("{}", wrap("note: ", &n));
        }
    }

    /// Prints, on stderr, the flags that were not modelled.
    pub fn print_not_modelled(&self) {
        if let Some(line) = self.launch.not_modelled_line() {
            eprintln!("{}", wrap("warning: ", &line));
        }
    }
}

/// The layout the flags pick, every GPU in TP when they pick none (`--layout all`).
fn primary_layout(layout_args: &LayoutArgs, machine: &Machine, spec: &ModelSpec) -> Result<Layout> {
    Ok(match layout_args.selection(machine.gpu_count, spec)? {
        LayoutSelection::One(l) => l,
        LayoutSelection::All => Layout::tp(machine.gpu_count),
    })
}
