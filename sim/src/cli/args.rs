//! Shared clap argument groups (machine, model, server flags, layout, format), reused by every
//! command. Raw flags here; `resolve`/`options`/`selection` turn them into validated values.

use super::own_flags::sim_flag;
use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use models::ModelSpec;
use sim::engine::{Engine, Knob};
use sim::machine::Machine;

pub use super::layout_args::{LayoutArgs, LayoutSelection};

pub use super::server_args::ServerArgs;

/// What every simulating command is about: the machine, the model and the server's flags.
#[derive(clap::Args, Debug, Clone)]
pub struct TargetArgs {
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
    /// Loads the model description: `--model`, else the launch line's model path.
    pub fn resolve_or(&self, launch_model_path: Option<&str>) -> Result<ModelSpec> {
        let model_path = sim_flag(Knob::ModelPath);
        let (flag, name) = match (&self.model, launch_model_path) {
            (Some(m), Some(p)) if m != p => {
                let spec = ModelSpec::resolve(m).with_context(|| format!("--model {m}"))?;
                return match ModelSpec::resolve(p) {
                    Ok(other) if other.name == spec.name => Ok(spec),
                    Ok(other) => bail!(
                        "--model {m} ({}) disagrees with the launch line's {model_path} {p} ({}): give one model, or the same both ways",
                        spec.name,
                        other.name
                    ),
                    Err(e) => bail!(
                        "--model {m} ({}) and the launch line's {model_path} {p}: cannot tell whether they are the same model ({e}); drop one of them",
                        spec.name
                    ),
                };
            }
            (Some(m), _) => ("--model".to_string(), m.as_str()),
            (None, Some(m)) => (format!("--server-args {model_path}"), m),
            (None, None) => bail!(
                "no model: give --model (a preset, e.g. glm-5-nvfp4, or a HF folder) or a --server-args line with {model_path}"
            ),
        };
        ModelSpec::resolve(name).with_context(|| format!("{flag} {name}"))
    }

    /// Loads the model description given by `--model`.
    pub fn resolve(&self) -> Result<ModelSpec> {
        self.resolve_or(None)
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

/// The most requests one simulated run sends (`--num-prompts`, [`sim::workload::MAX_NUM_PROMPTS`]).
pub const MAX_NUM_PROMPTS: u32 = sim::workload::MAX_NUM_PROMPTS;

/// The largest decode batch `predict` costs (`--batch`): no engine runs more requests at once
/// (SGLang's `--max-running-requests` and vLLM's `--max-num-seqs` default to at most a few
/// thousand), and a 2M-token KV pool holds 65,536 requests of only 32 tokens each.
pub const MAX_BATCH: u32 = 65_536;

/// Why `--batch` stops at [`MAX_BATCH`], naming each engine's running-batch cap as it spells
/// it ([`sim::engine::ServingEngine::max_requests_flag`]).
pub fn max_batch_why() -> String {
    let caps: Vec<String> = Engine::ALL
        .iter()
        .map(|e| {
            let r = e.rules();
            format!("{}'s {}", r.display_name(), r.max_requests_flag())
        })
        .collect();
    format!(
        "no engine runs more requests at once ({}), and a 2M-token KV pool holds 65,536 requests of 32 tokens",
        caps.join(", ")
    )
}

/// The most perturbed draws a verdict takes (`--draws`): 10,000 pin its share to ±0.5% (one
/// standard error, 0.5/√n); more adds minutes, not certainty.
pub const MAX_DRAWS: u32 = 10_000;

/// A clap value parser for a whole number in `[min, max]`, whose error says why the bound is
/// there (`why`), in one line.
pub fn bounded_u32(
    min: u32,
    max: u32,
    why: impl std::fmt::Display + Clone + Send + Sync + 'static,
) -> impl Fn(&str) -> std::result::Result<u32, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let n: u64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a whole number"))?;
        if n < u64::from(min) || n > u64::from(max) {
            return Err(format!("{n} is outside {min}..={max}: {why}"));
        }
        Ok(n as u32)
    }
}
