//! SGLang's server flags on `sim`'s command line, spelled as SGLang spells them (long names,
//! aliases, value sets), plus `--server-args "python -m sglang.launch_server …"` /
//! `--server-args-file F` for a whole launch command. Both become one [`SglangArgs`] through
//! `sim::engine::sglang::args`, which knows SGLang's names, values and defaults; a flag given both ways
//! with different values is refused naming both.

use super::layout_args::LayoutArgs;
use anyhow::Result;
use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Command};
use sim::engine::sglang::args::flags::{DP_SIZE, ENABLE_DP_ATTENTION, EP_SIZE, PP_SIZE, TP_SIZE};
use sim::engine::sglang::args::{CliFlag, Kind, SPECS, SglangArgs, Spec};
use sim::engine::{Engine, Launch, LaunchWords};
use std::path::PathBuf;

/// SGLang server flags that change cost, memory or scheduling, the layout flags, the flags kept
/// without effect, and a whole launch line. Absent flags take SGLang's defaults for the GPU and
/// layout (e.g. `--mem-fraction-static`, `--cuda-graph-max-bs`).
///
/// The flags are not declared here: each flag of `sim::engine::sglang::args`' table that has a `cli`
/// entry becomes a clap argument (its canonical spelling, SGLang's aliases and `sim`'s short
/// ones, its value set), and what was given goes back to `sim::engine::sglang::args` as words, the way a
/// launch line does. A new modelled flag is one row of that table.
#[derive(Debug, Clone, Default)]
pub struct ServerArgs {
    /// `--layout`, and the layout sizes as given on this command line.
    pub layout: LayoutArgs,
    /// A whole SGLang launch command (`--server-args`).
    pub server_args: Option<String>,
    /// A file holding the launch command (`--server-args-file`).
    pub server_args_file: Option<PathBuf>,
    /// The table's flags as given, canonically spelled, in the table's order.
    words: Vec<String>,
    /// The flags a measured run was recorded with (`--measured FILE#RUN`), as launch-line words.
    recorded: Vec<String>,
    /// `--server-args-file`'s text (or why it could not be read), read once: a `<(…)` process
    /// substitution can be read only once, and every command asks for the line more than once.
    file_text: std::sync::Arc<std::sync::OnceLock<std::result::Result<String, String>>>,
}

/// clap's id of the `--layout` argument (the table's flags use their SGLang `dest`).
const LAYOUT_ID: &str = "layout";

fn table_arg(spec: &'static Spec, cli: &CliFlag) -> Arg {
    let long = spec.canonical().trim_start_matches("--");
    let aliases = spec.flags[1..]
        .iter()
        .map(|f| f.trim_start_matches("--"))
        .chain(cli.aliases.iter().copied());
    let arg = Arg::new(spec.dest)
        .long(long)
        .visible_aliases(aliases)
        .help(cli.help);
    match spec.kind {
        Kind::Flag => arg.action(ArgAction::SetTrue),
        Kind::Choice(values) => arg
            .value_name(cli.value_name)
            .value_parser(PossibleValuesParser::new(values)),
        Kind::Int => arg
            .value_name(cli.value_name)
            .allow_negative_numbers(true)
            .value_parser(number_text::<i64>),
        Kind::Float => arg
            .value_name(cli.value_name)
            .allow_negative_numbers(true)
            .value_parser(number_text::<f64>),
        // one word on `sim`'s own command line (`1,2,4,8`); a launch line takes several
        Kind::Str | Kind::Ints | Kind::Strs | Kind::HumanInt { .. } => {
            arg.value_name(cli.value_name)
        }
    }
}

/// A value that parses as `T`, kept as written (the table checks its range and names the flag).
fn number_text<T: std::str::FromStr>(s: &str) -> std::result::Result<String, String> {
    s.parse::<T>()
        .map(|_| s.to_string())
        .map_err(|_| format!("`{s}` is not a number"))
}

impl clap::Args for ServerArgs {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd
            .arg(
                Arg::new("server_args")
                    .long("server-args")
                    .value_name("COMMAND")
                    .conflicts_with("server_args_file")
                    .help(format!(
                        "A whole SGLang launch command (`{} --tp 8 …`), read as SGLang reads it; flags shardwise does not model are listed, never refused",
                        Engine::Sglang.rules().launch_command("…")
                    )),
            )
            .arg(
                Arg::new("server_args_file")
                    .long("server-args-file")
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help("A file holding the launch command (a shell script with `\\` continuations is fine)"),
            )
            .arg(
                Arg::new(LAYOUT_ID)
                    .long("layout")
                    .value_name("all|NAME")
                    .conflicts_with_all([
                        TP_SIZE.dest,
                        PP_SIZE.dest,
                        EP_SIZE.dest,
                        ENABLE_DP_ATTENTION.dest,
                    ])
                    .help("`all` ranks every layout of the machine's GPUs; a short name (TP8, TP4xPP2, EP8, TP8+EP8+DPA) picks one"),
            );
        for spec in SPECS {
            if let Some(cli) = &spec.cli {
                cmd = cmd.arg(table_arg(spec, cli));
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for ServerArgs {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let mut words = Vec::new();
        for spec in SPECS.iter().filter(|s| s.cli.is_some()) {
            match spec.kind {
                Kind::Flag if m.get_flag(spec.dest) => words.push(spec.canonical().to_string()),
                Kind::Flag => {}
                _ => {
                    if let Some(v) = m.get_one::<String>(spec.dest) {
                        words.push(spec.canonical().to_string());
                        words.push(v.clone());
                    }
                }
            }
        }
        let size = |spec: &Spec| {
            m.get_one::<String>(spec.dest)
                .and_then(|v| v.parse::<u32>().ok())
        };
        Ok(ServerArgs {
            layout: LayoutArgs {
                tp: size(&TP_SIZE),
                pp: size(&PP_SIZE),
                ep: size(&EP_SIZE),
                dp: size(&DP_SIZE),
                dp_attention: m.get_flag(ENABLE_DP_ATTENTION.dest),
                layout: m.get_one::<String>(LAYOUT_ID).cloned(),
                replicas_allowed: false,
            },
            server_args: m.get_one::<String>("server_args").cloned(),
            server_args_file: m.get_one::<PathBuf>("server_args_file").cloned(),
            words,
            recorded: Vec::new(),
            file_text: Default::default(),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl ServerArgs {
    /// The launch command of `--server-args` / `--server-args-file`, if any.
    fn launch_line(&self) -> Result<Option<String>> {
        if let Some(t) = &self.server_args {
            return Ok(Some(t.clone()));
        }
        let Some(p) = &self.server_args_file else {
            return Ok(None);
        };
        let text = self.file_text.get_or_init(|| {
            models::io::read_text_limited(p, models::io::CONFIG_LIMIT_BYTES)
                .map_err(|e| format!("--server-args-file {}: {e}", p.display()))
        });
        match text {
            Ok(t) => Ok(Some(t.clone())),
            Err(e) => Err(anyhow::anyhow!("{e}")),
        }
    }

    /// The server these flags describe, read by the registry ([`sim::engine::Engine::read_launch`]):
    /// by `engine` when the command names one, else by the engine whose launch line it is.
    pub fn launch(&self, engine: Option<Engine>) -> Result<Launch> {
        let line = self.launch_line()?;
        let l = &self.layout;
        let given = LaunchWords {
            line: line.as_deref(),
            words: &self.words,
            recorded: &self.recorded,
            layout_sizes_given: l.tp.is_some()
                || l.pp.is_some()
                || l.ep.is_some()
                || l.dp.is_some()
                || l.dp_attention,
        };
        Ok(Engine::read_launch(engine, &given)?)
    }

    /// The engine whose launch line `--server-args` holds; `None` without one.
    pub fn line_engine(&self) -> Result<Option<Engine>> {
        Ok(self.launch_line()?.map(|l| Engine::of_launch_line(&l)))
    }

    /// SGLang's flags: the command line's, an SGLang launch line's and the recorded ones,
    /// merged (a disagreement is an error); only the command line's beside another engine's
    /// launch line. For the commands that speak SGLang only (`report`).
    pub fn sglang(&self) -> Result<SglangArgs> {
        let line = self.launch_line()?;
        let given = LaunchWords {
            line: line.as_deref(),
            words: &self.words,
            recorded: &self.recorded,
            layout_sizes_given: false,
        };
        Ok(sim::engine::launch::read_sglang(&given)?)
    }

    /// These arguments with the flags a measured run was recorded with: they apply where this
    /// command does not set them, and a modelled flag it sets otherwise is an error naming both.
    pub fn with_recorded(mut self, words: Vec<String>) -> Self {
        self.recorded.extend(words);
        self
    }

    /// The options of the layout these flags pick on `machine` (every GPU in TP when they pick
    /// none; commands that cost several layouts resolve each with
    /// [`sim::scenario::Scenario::opts_for`]), read by the launch's engine
    /// ([`Launch::options`]), and the lines to print once the command succeeded (flags not
    /// modelled, the engine's defaults).
    pub fn options(
        &self,
        machine: &sim::machine::Machine,
        spec: &models::ModelSpec,
    ) -> Result<(sim::options::ServerOptions, Vec<String>)> {
        let launch = self.launch(None)?;
        let (layout, all) = match self
            .layout
            .with_sizes(&launch.sizes(spec.moe.is_some())?)
            .selection(machine.gpu_count, spec)?
        {
            super::args::LayoutSelection::One(l) => (l, false),
            super::args::LayoutSelection::All => (models::Layout::tp(machine.gpu_count), true),
        };
        let (o, notes) = launch.options(&layout, machine, spec)?;
        // a backend the server would not run on this GPU is refused before anything is costed
        // (the check knows SGLang's backend names; vLLM's upper-case ones pass it)
        let backend_note = sim::cost::attn_backend::check(machine, spec, &o)?;
        let mut lines: Vec<String> = launch
            .not_modelled_line()
            .map(|l| format!("warning: {l}"))
            .into_iter()
            .collect();
        let engine = launch.engine().rules().display_name();
        lines.extend(notes.iter().map(|n| {
            if all {
                format!(
                    "note: {n} (for {}; every other layout gets {engine}'s defaults for its own --tp, {} and DP attention)",
                    layout.short_name(),
                    super::own_flags::sim_flag(sim::engine::Knob::PipelineParallel)
                )
            } else {
                format!("note: {n}")
            }
        }));
        lines.extend(backend_note.map(|n| format!("note: {n}")));
        Ok((o, lines))
    }

    /// Whether a launch line was given (SGLang's defaults then apply to absent layout flags).
    pub fn has_launch_line(&self) -> bool {
        self.server_args.is_some() || self.server_args_file.is_some()
    }
}

/// The `--model-path` of a launch line: the user's own, else the checkpoint's HuggingFace
/// repository (`nvidia/GLM-5-NVFP4`) from the model's source, else its name.
pub fn launch_model_path(user: Option<&str>, spec: &models::ModelSpec) -> String {
    if let Some(p) = user {
        return p.to_owned();
    }
    spec.source
        .split_whitespace()
        .next()
        .and_then(|url| url.strip_prefix("https://huggingface.co/"))
        .map(|repo| repo.trim_end_matches('/'))
        .filter(|repo| repo.split('/').count() == 2)
        .unwrap_or(&spec.name)
        .to_owned()
}
