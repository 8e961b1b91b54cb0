//! Shared clap argument groups (machine, model, server flags, layout, format), reused by every
//! command. Raw flags here; `resolve`/`options`/`selection` turn them into validated values.

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use models::{Layout, ModelSpec};
use sim::engine::Engine;
use sim::layout::enumerate_layouts;
use sim::machine::Machine;

pub use super::server_args::ServerArgs;

/// What every simulating command is about: the machine, the model and the server's flags.
#[derive(clap::Args, Debug, Clone)]
pub struct Target {
    #[command(flatten)]
    pub machine: MachineArg,
    #[command(flatten)]
    pub model: ModelArg,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `--machine`: a machine preset or a probe profile.
#[derive(clap::Args, Debug, Clone)]
pub struct MachineArg {
    /// Machine preset name (e.g. rtx-pro-6000-x8-vm-hostbounce, h200-x8) or a profile JSON path
    /// written by `probe run`.
    #[arg(long, value_name = "PRESET|PROFILE.json")]
    pub machine: String,
}

impl MachineArg {
    /// Loads the machine.
    pub fn resolve(&self) -> Result<Machine> {
        Machine::resolve(&self.machine).with_context(|| format!("--machine {}", self.machine))
    }
}

/// `--model` (SGLang's and bench_serving's `--model-path` / `--model`): a model preset, a HF
/// model folder, a `config.json` path or the HF repository id of a preset.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ModelArg {
    /// Model preset (e.g. glm-5-nvfp4; `sim models list`), a HF folder, a config.json path or a
    /// HF repository id of a preset (zai-org/GLM-4.7-FP8); may come from `--server-args`.
    #[arg(
        long,
        visible_alias = "model-path",
        value_name = "PRESET|DIR|CONFIG.json|ORG/NAME"
    )]
    pub model: Option<String>,
}

impl ModelArg {
    /// Loads the model description: `--model`, else the launch line's `--model-path`.
    pub fn resolve_or(&self, launch_model_path: Option<&str>) -> Result<ModelSpec> {
        let (flag, name) = match (&self.model, launch_model_path) {
            (Some(m), Some(p)) if m != p => {
                let spec = ModelSpec::resolve(m).with_context(|| format!("--model {m}"))?;
                return match ModelSpec::resolve(p) {
                    Ok(other) if other.name == spec.name => Ok(spec),
                    Ok(other) => bail!(
                        "--model {m} ({}) disagrees with the launch line's --model-path {p} ({}): give one model, or the same both ways",
                        spec.name,
                        other.name
                    ),
                    Err(e) => bail!(
                        "--model {m} ({}) and the launch line's --model-path {p}: cannot tell whether they are the same model ({e}); drop one of them",
                        spec.name
                    ),
                };
            }
            (Some(m), _) => ("--model", m.as_str()),
            (None, Some(m)) => ("--server-args --model-path", m),
            (None, None) => bail!(
                "no model: give --model (a preset, e.g. glm-5-nvfp4, or a HF folder) or a --server-args line with --model-path"
            ),
        };
        ModelSpec::resolve(name).with_context(|| format!("{flag} {name}"))
    }

    /// Loads the model description given by `--model`.
    pub fn resolve(&self) -> Result<ModelSpec> {
        self.resolve_or(None)
    }
}

/// The parallel layout as asked for: `--layout all` / a short name, or the sizes SGLang's flags
/// gave (`--tp`, `--pp-size`, `--ep-size`, `--dp`, `--enable-dp-attention`, from the flag table
/// through [`ServerArgs`]).
#[derive(Debug, Clone, Default)]
pub struct LayoutArgs {
    /// Tensor-parallel size (default: every GPU of the machine; with --server-args, SGLang's 1).
    pub tp: Option<u32>,
    /// Pipeline stages.
    pub pp: Option<u32>,
    /// Expert-parallel size inside the TP group (1 = experts sliced by TP).
    pub ep: Option<u32>,
    /// Attention data-parallel over the TP group (`--dp` = `--tp`).
    pub dp_attention: bool,
    /// `--dp`: must equal `--tp` with DP attention.
    pub dp: Option<u32>,
    /// `all` or a short name (TP8, TP4xPP2, EP8, TP8+EP8+DPA).
    pub layout: Option<String>,
}

/// What the layout flags asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum LayoutSelection {
    /// One layout.
    One(Layout),
    /// Every layout of the machine's GPUs.
    All,
}

impl LayoutArgs {
    /// The layout(s) asked for on a machine of `gpus` GPUs running `model` (names are matched
    /// against the enumerated layouts, case-insensitively).
    pub fn selection(&self, gpus: u32, model: &ModelSpec) -> Result<LayoutSelection> {
        if let Some(name) = &self.layout {
            if name.eq_ignore_ascii_case("all") {
                return Ok(LayoutSelection::All);
            }
            let all = enumerate_layouts(gpus, model);
            // A name of fewer GPUs (TP4 on 8) is one replica on part of the machine.
            let fewer = (1..gpus).rev().flat_map(|g| enumerate_layouts(g, model));
            return all
                .iter()
                .cloned()
                .chain(fewer)
                .find(|c| c.layout.short_name().eq_ignore_ascii_case(name))
                .map(|c| LayoutSelection::One(c.layout))
                .with_context(|| {
                    let names: Vec<String> = all.iter().map(|c| c.layout.short_name()).collect();
                    format!(
                        "--layout {name}: not a layout of {gpus} GPUs for this model; use `all` or one of {}",
                        names.join(", ")
                    )
                });
        }
        let pp = self.pp.unwrap_or(1);
        if pp == 0 {
            bail!("--pp-size 0: must be at least 1");
        }
        let tp = self.tp.unwrap_or(gpus / pp);
        if tp == 0 {
            bail!("--tp 0: must be at least 1");
        }
        let ep = self.ep.unwrap_or(1);
        if ep == 0 {
            bail!("--ep-size 0: must be at least 1 (1 = experts sliced by TP)");
        }
        if let Some(dp) = self.dp {
            if dp > 1 && !self.dp_attention {
                bail!(
                    "--dp {dp} without --enable-dp-attention: {dp} engines behind SGLang's router are not simulated one by one here; `sim advise --question replicas` compares two servers of half the box with one of all of it, or add --enable-dp-attention with --dp equal to --tp"
                );
            }
            if self.dp_attention && dp != tp {
                bail!(
                    "--dp {dp} with --enable-dp-attention: only --dp equal to --tp ({tp}) is modelled"
                );
            }
        }
        Ok(LayoutSelection::One(Layout {
            tp,
            pp,
            ep,
            dp_attention: self.dp_attention,
        }))
    }
}

/// Output format of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// A terminal table.
    #[default]
    Table,
    /// JSON for scripts (schema-versioned output types).
    Json,
    /// CSV, one row per result.
    Csv,
}

/// `--format table|json`, for commands without a CSV output.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct FormatArg {
    /// Output format.
    #[arg(long, default_value = "table", value_parser = table_or_json)]
    pub format: OutputFormat,
}

/// `--format table|json|csv`, for commands that write CSV (`predict`, `sweep`).
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct CsvFormatArg {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

fn table_or_json(s: &str) -> std::result::Result<OutputFormat, String> {
    match s {
        "table" => Ok(OutputFormat::Table),
        "json" => Ok(OutputFormat::Json),
        "csv" => Err(
            "this command prints table or json; CSV is offered by `sim sweep` and `sim predict`"
                .into(),
        ),
        other => Err(format!("`{other}` is not a format: use table or json")),
    }
}

impl LayoutArgs {
    /// These flags with the ones a launch line gave filled in where the command line left them
    /// out (the two already agree where both gave one: `ServerArgs::sglang` checks).
    pub fn with_sizes(&self, s: &sim::sglang_args::LayoutSizes) -> LayoutArgs {
        LayoutArgs {
            tp: self.tp.or(s.tp),
            pp: self.pp.or(s.pp),
            ep: self.ep.or(s.ep),
            dp: self.dp.or(s.dp),
            dp_attention: self.dp_attention || s.enable_dp_attention,
            layout: self.layout.clone(),
        }
    }

    /// Whether any flag picks a layout.
    pub fn is_explicit(&self) -> bool {
        self.layout.is_some()
            || self.tp.is_some()
            || self.pp.is_some()
            || self.ep.is_some()
            || self.dp_attention
    }
}

/// `--engine` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    Sglang,
    Vllm,
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Engine {
        match e {
            EngineArg::Sglang => Engine::Sglang,
            EngineArg::Vllm => Engine::Vllm,
        }
    }
}

/// `sim validate --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ValidateFormat {
    /// Terminal tables.
    #[default]
    Table,
    /// JSON (schema-versioned).
    Json,
    /// GitHub markdown: the scoreboard's summary tables (--records).
    Markdown,
    /// One row per compared figure (--records).
    Csv,
}
