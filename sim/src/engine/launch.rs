//! One engine's typed launch: what a scenario simulates ([`Launch`]). The registry reads it from
//! the words a user gave ([`super::Engine::read_launch`]: the engine whose launch line it is
//! reads the line and the flags beside it), and every question about it — its model, its
//! layout sizes, its options on a layout, the flags it leaves unmodelled, its version, the flags
//! a ranked layout is launched with — is answered here, by the engine whose launch it is.

use super::sglang::args::{
    DefaultsContext, LayoutSizes, Origin, SglangArgs, SglangArgsError, from_launch_line, from_words,
};
use super::vllm::args::{VLLM_VERSION, VllmLine};
use super::{Engine, Launch, LaunchError};
use crate::machine::Machine;
use crate::options::ServerOptions;
use models::{Layout, ModelSpec};

/// What a user gave for the server: a pasted launch line, flags one by one in SGLang's spelling
/// (`sim`'s command line), a measured run's recorded flags, and whether `sim`'s own layout
/// sizes (`--tp`, …) were given.
#[derive(Debug, Clone, Copy, Default)]
pub struct LaunchWords<'a> {
    pub line: Option<&'a str>,
    pub words: &'a [String],
    pub recorded: &'a [String],
    pub layout_sizes_given: bool,
}

impl Engine {
    /// The launch `given` describes, read by `engine` when the command names one, else by the
    /// engine whose launch line it is ([`Engine::of_launch_line`]), SGLang's without a line.
    pub fn read_launch(
        engine: Option<Engine>,
        given: &LaunchWords<'_>,
    ) -> Result<Launch, LaunchError> {
        let engine = engine
            .or_else(|| given.line.map(Engine::of_launch_line))
            .unwrap_or_default();
        match engine {
            Engine::Sglang => Ok(Launch::Sglang(read_sglang(given)?)),
            Engine::Vllm => read_vllm(given).map(Launch::Vllm),
        }
    }
}

/// SGLang's flags: the command line's, a launch line's (SGLang's only: another engine's line
/// is that engine's) and the recorded ones, merged (a disagreement is an error).
pub fn read_sglang(given: &LaunchWords<'_>) -> Result<SglangArgs, SglangArgsError> {
    let cli = from_words(given.words, Origin::CommandLine)?;
    let merged = match given.line {
        Some(line) if Engine::of_launch_line(line) != Engine::Sglang => return Ok(cli),
        Some(line) => cli.merge(from_launch_line(line)?)?,
        None => cli,
    };
    if given.recorded.is_empty() {
        return Ok(merged);
    }
    merged.merge(from_words(given.recorded, Origin::MeasuredRun)?)
}

/// vLLM's launch line, `vllm serve` with vLLM's defaults when none is given; SGLang's server
/// flags beside it are refused (vLLM's flags belong on the vLLM line).
fn read_vllm(given: &LaunchWords<'_>) -> Result<VllmLine, LaunchError> {
    let line = match given.line {
        Some(text) => VllmLine::parse(text)?,
        None => None,
    };
    let Some(line) = line else {
        if !given.words.is_empty() {
            return Err(LaunchError::Refused(format!(
                "SGLang server flags for a vLLM server ({}): give vLLM's flags in a `vllm serve` --server-args line",
                given.words.join(" ")
            )));
        }
        return Ok(VllmLine::parse("vllm serve")?.expect("`vllm serve` is a vLLM line"));
    };
    if !given.words.is_empty() || given.layout_sizes_given {
        return Err(LaunchError::Refused(format!(
            "SGLang server flags beside a vLLM launch line ({}): give vLLM's flags (-tp, -pp, -dcp, --gpu-memory-utilization, …) inside the `vllm serve` line",
            if given.words.is_empty() {
                "layout sizes".to_string()
            } else {
                given.words.join(" ")
            }
        )));
    }
    Ok(line)
}

impl Launch {
    /// The engine whose launch this is.
    pub fn engine(&self) -> Engine {
        match self {
            Launch::Sglang(_) => Engine::Sglang,
            Launch::Vllm(_) => Engine::Vllm,
        }
    }

    /// SGLang's flags, when this is SGLang's launch.
    pub fn sglang_args(&self) -> Option<&SglangArgs> {
        match self {
            Launch::Sglang(a) => Some(a),
            Launch::Vllm(_) => None,
        }
    }

    /// The `vllm serve` line, when this is vLLM's launch.
    pub fn vllm_line(&self) -> Option<&VllmLine> {
        match self {
            Launch::Vllm(l) => Some(l),
            Launch::Sglang(_) => None,
        }
    }

    /// The model the launch names (`--model-path`, `vllm serve MODEL`).
    pub fn model_path(&self) -> Option<&str> {
        match self {
            Launch::Sglang(a) => a.model_path(),
            Launch::Vllm(l) => l.model.as_deref(),
        }
    }

    /// The DeepEP mode the launch gives (SGLang's `--deepep-mode`), for the all-to-all
    /// backend's notes; `None` where it gives none (the engine's `auto`).
    pub fn deepep_mode(&self) -> Option<&str> {
        let given = self
            .sglang_args()?
            .get(&super::sglang::args::flags::DEEPEP_MODE)?;
        match &given.value {
            super::sglang::args::Value::Str(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The environment before the command (`NCCL_P2P_DISABLE=1 …`).
    pub fn env(&self) -> &[(String, String)] {
        match self {
            Launch::Sglang(a) => &a.env,
            Launch::Vllm(l) => &l.env,
        }
    }

    /// The layout sizes the launch states for a model with routed experts (`moe`) or not (vLLM's
    /// DP ranks mean attention DP for the one, independent servers for the other).
    pub fn sizes(&self, moe: bool) -> Result<LayoutSizes, LaunchError> {
        Ok(match self {
            Launch::Sglang(a) => a.sizes(),
            Launch::Vllm(l) => l.sizes(moe)?,
        })
    }

    /// The layout sizes the launch states for choosing a layout: SGLang's flags' own; a vLLM
    /// line's (vLLM's defaults where the line is silent) when it came from a line or a log
    /// (`from_line`), none for the bare `vllm serve` run when no line was given (the command's
    /// layout flags pick then).
    pub fn stated_sizes(&self, from_line: bool, moe: bool) -> Result<LayoutSizes, LaunchError> {
        match self {
            Launch::Vllm(_) if !from_line => Ok(LayoutSizes::default()),
            _ => self.sizes(moe),
        }
    }

    /// The GPUs the launch names (SGLang's `CUDA_VISIBLE_DEVICES`); `None` = not named, or an
    /// engine whose placement on named GPUs is not read (vLLM's layouts go on the
    /// best-connected GPUs).
    pub fn visible_devices(&self) -> Result<Option<Vec<u32>>, LaunchError> {
        match self {
            Launch::Sglang(a) => Ok(a.visible_devices()?),
            Launch::Vllm(_) => Ok(None),
        }
    }

    /// Whether a launch line of a layout smaller than the box runs on the box's first GPUs
    /// (SGLang's `--base-gpu-id 0`); vLLM's is placed on the best-connected GPUs.
    pub fn runs_on_first_gpus(&self) -> bool {
        matches!(self, Launch::Sglang(_))
    }

    /// The options this launch runs `layout` with on `machine` serving `spec`, the engine's
    /// defaults for that layout filled in, and one note per default taken or knob translated.
    pub fn options(
        &self,
        layout: &Layout,
        machine: &Machine,
        spec: &ModelSpec,
    ) -> Result<(ServerOptions, Vec<String>), LaunchError> {
        match self {
            Launch::Sglang(a) => {
                let ctx = DefaultsContext {
                    gpu_memory_bytes: machine.memory_bytes(),
                    tp: layout.tp,
                    pp: layout.pp,
                    dp_attention_size: if layout.dp_attention { layout.tp } else { 1 },
                };
                let r = a.server_options(&ctx, spec)?;
                Ok((r.options, r.notes))
            }
            Launch::Vllm(l) => {
                let (o, mut notes) = l.server_options(layout, machine)?;
                notes.insert(
                    0,
                    "engine: vLLM (the launch line is a vLLM command; vLLM main's defaults and memory sizing)"
                        .into(),
                );
                Ok((o, notes))
            }
        }
    }

    /// `(name, flags)` of `layout` in a ranked table, where its options run the MoE all-to-all
    /// backend `a2a` (SGLang's `--moe-a2a-backend`) and `flags` are SGLang's layout flags as the
    /// command spells them; vLLM's line spells its own (none for EP over part of the TP group).
    pub fn ranked_label(
        &self,
        layout: &Layout,
        flags: String,
        a2a: Option<&str>,
    ) -> (String, String) {
        match (self, a2a) {
            (Launch::Vllm(v), a2a) => (
                layout.short_name(),
                v.layout_flags(layout).map_or_else(
                    || "(no vLLM flags: EP over part of the TP group)".into(),
                    |f| match a2a {
                        Some(b) => format!(
                            "{f} {} {b}",
                            self.engine().flag(super::Knob::AllToAllBackend)
                        ),
                        None => f,
                    },
                ),
            ),
            (Launch::Sglang(_), Some(b)) => (
                format!("{}+{b}", layout.short_name()),
                format!("{flags} --moe-a2a-backend {b}"),
            ),
            (Launch::Sglang(_), None) => (layout.short_name(), flags),
        }
    }

    /// Whether the engine has launch flags for `layout` (vLLM has none for EP over part of the
    /// TP group).
    pub fn can_launch(&self, layout: &Layout) -> bool {
        match self {
            Launch::Vllm(v) => v.layout_flags(layout).is_some(),
            Launch::Sglang(_) => true,
        }
    }

    /// The flags given that the model does not act on, as written once each.
    pub fn not_modelled(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        match self {
            Launch::Sglang(a) => {
                for s in a.not_modelled().iter().map(|e| e.spelled()) {
                    if !v.contains(&s) {
                        v.push(s);
                    }
                }
            }
            Launch::Vllm(l) => v.extend(l.not_modelled()),
        }
        v
    }

    /// The warning line naming the flags not modelled; `None` when every flag is.
    pub fn not_modelled_line(&self) -> Option<String> {
        match self {
            Launch::Sglang(a) => a.not_modelled_line(),
            Launch::Vllm(l) => l.not_modelled_line(),
        }
    }

    /// The command a `try:` line starts with, serving `model_path`: the engine's
    /// [`super::ServingEngine::launch_command`].
    pub fn try_command(&self, model_path: &str) -> String {
        self.engine().rules().launch_command(model_path)
    }

    /// The flags a `try:` line carries after a ranked layout's own, so that it launches what
    /// was ranked: a vLLM line's other flags as given (`--gpu-memory-utilization 0.94
    /// --kv-cache-dtype fp8 …`); SGLang's known flags given (`SglangArgs::modelled_flags`:
    /// `--trust-remote-code`, the backends …); on both, not the a2a backend, which the ranked
    /// layout's own flags carry where it ran.
    pub fn other_flags(&self) -> Vec<String> {
        match self {
            Launch::Vllm(v) => v.other_flags(),
            Launch::Sglang(a) => a
                .modelled_flags()
                .into_iter()
                .filter(|f| !f.starts_with("--moe-a2a-backend"))
                .collect(),
        }
    }

    /// [`Launch::other_flags`] on a `try:` line for `layout`: without a MoE runner that cannot
    /// run it (b12x where the experts are expert-parallel, [`crate::options::runner_applies`]),
    /// so that the engine picks its own kernels, as the ranking priced them.
    pub fn other_flags_on(&self, layout: &Layout) -> Vec<String> {
        let runner = self.engine().flag(super::Knob::MoeRunner);
        let b12x = crate::options::B12X_RUNNER;
        let drops = |f: &String| {
            let mut words = f.splitn(2, [' ', '=']);
            layout.ep > 1 && words.next() == Some(runner) && words.next() == Some(b12x)
        };
        self.other_flags()
            .into_iter()
            .filter(|f| !drops(f))
            .collect()
    }

    /// The engine version whose defaults fill in what the launch leaves unsaid.
    pub fn version(&self) -> &'static str {
        match self {
            Launch::Vllm(_) => VLLM_VERSION,
            Launch::Sglang(_) => super::sglang::args::SGLANG_VERSION
                .split(" (")
                .next()
                .unwrap_or_default(),
        }
    }

    /// `self` (the command's launch; `line_given`: from a launch line) with a measured run's
    /// `logged` launch, as its server log states it: SGLang's dump merged into SGLang's flags
    /// (a disagreement is an error naming both values); a vLLM run's arguments are its whole
    /// launch, and a launch line beside them is refused (the log says what ran).
    pub fn with_logged(self, logged: Launch, line_given: bool) -> Result<Launch, LaunchError> {
        Ok(match (self, logged) {
            (Launch::Sglang(given), Launch::Sglang(l)) => Launch::Sglang(given.merge(l)?),
            (_, Launch::Vllm(_)) if line_given => {
                return Err(LaunchError::Refused(
                    "--server-args with a vLLM --server-log: the log's non-default args say how the server ran; drop --server-args"
                        .into(),
                ));
            }
            (_, logged) => logged,
        })
    }
}

/// The words of `flags` that turn CPU weight offload on in either engine (a budget or a group
/// size above 0), as written; `None` where none does.
pub fn offload_words(flags: &str) -> Option<String> {
    let words: Vec<&str> = flags.split_whitespace().collect();
    let on: Vec<String> = words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let (key, inline) = match w.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (*w, None),
            };
            let value = inline.or_else(|| words.get(i + 1).copied())?;
            let positive = value
                .trim_matches(['\'', '"'])
                .parse::<f64>()
                .is_ok_and(|v| v > 0.0);
            let offload = [
                crate::engine::vllm::args::table::CPU_OFFLOAD_GB,
                crate::engine::vllm::args::table::OFFLOAD_GROUP_SIZE,
                crate::engine::sglang::args::flags::CPU_OFFLOAD_GB,
                crate::engine::sglang::args::flags::OFFLOAD_GROUP_SIZE,
            ]
            .iter()
            .any(|s| s.flags.contains(&key));
            (offload && positive).then(|| format!("{key} {value}"))
        })
        .collect();
    (!on.is_empty()).then(|| on.join(" "))
}
