//! Shared clap argument groups (machine, model, server flags, layout, format), reused by every
//! command. Raw flags here; `resolve`/`options`/`selection` turn them into validated values.

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use models::{KvDtype, Layout, ModelSpec};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;

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

/// `--model`: a model preset, a HF model folder or a `config.json` path.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArg {
    /// Model preset (e.g. glm-5-nvfp4; `sim models list`), a HF folder or a config.json path.
    #[arg(long, value_name = "PRESET|DIR|CONFIG.json")]
    pub model: String,
}

impl ModelArg {
    /// Loads the model description.
    pub fn resolve(&self) -> Result<ModelSpec> {
        ModelSpec::resolve(&self.model).with_context(|| format!("--model {}", self.model))
    }
}

/// Parallel layout flags, as SGLang spells them, or `--layout all` / a short name.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LayoutArgs {
    /// `--tp`: tensor-parallel size (default: every GPU of the machine).
    #[arg(long = "tp", visible_alias = "tp-size", value_name = "N")]
    pub tp: Option<u32>,
    /// `--pp-size`: pipeline stages.
    #[arg(long = "pp-size", visible_alias = "pp", value_name = "N")]
    pub pp: Option<u32>,
    /// `--ep-size`: expert-parallel size inside the TP group (1 = experts sliced by TP).
    #[arg(long = "ep-size", visible_alias = "ep", value_name = "N")]
    pub ep: Option<u32>,
    /// `--enable-dp-attention`: attention data-parallel over the TP group (`--dp` = `--tp`).
    #[arg(long = "enable-dp-attention")]
    pub dp_attention: bool,
    /// `--dp`: accepted for SGLang compatibility; must equal `--tp` with DP attention.
    #[arg(long = "dp", visible_alias = "dp-size", value_name = "N")]
    pub dp: Option<u32>,
    /// `all` ranks every layout of the machine's GPUs; a short name (TP8, TP4xPP2, EP8,
    /// TP8+EP8+DPA) picks one.
    #[arg(long, value_name = "all|NAME", conflicts_with_all = ["tp", "pp", "ep", "dp_attention"])]
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
            return all
                .iter()
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
                    "--dp {dp} without --enable-dp-attention: data-parallel replicas are not modelled; add --enable-dp-attention with --dp equal to --tp"
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

/// `--kv-cache-dtype` values, as SGLang names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KvCacheDtypeArg {
    /// The checkpoint's choice (FP8 when it ships FP8 KV scales, else BF16).
    Auto,
    Bf16,
    Bfloat16,
    Fp8E4m3,
    Fp8E5m2,
}

impl KvCacheDtypeArg {
    fn dtype(self) -> Option<KvDtype> {
        match self {
            KvCacheDtypeArg::Auto => None,
            KvCacheDtypeArg::Bf16 | KvCacheDtypeArg::Bfloat16 => Some(KvDtype::Bf16),
            KvCacheDtypeArg::Fp8E4m3 | KvCacheDtypeArg::Fp8E5m2 => Some(KvDtype::Fp8),
        }
    }
}

/// SGLang server flags that change cost, memory or scheduling, plus the layout flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// `--mem-fraction-static`: share of GPU memory for weights + KV pool.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.85)]
    pub mem_fraction_static: f64,
    /// `--kv-cache-dtype`.
    #[arg(long, value_enum, default_value_t = KvCacheDtypeArg::Auto)]
    pub kv_cache_dtype: KvCacheDtypeArg,
    /// `--chunked-prefill-size`: most prefill tokens per iteration.
    #[arg(long, value_name = "TOKENS", default_value_t = 8192)]
    pub chunked_prefill_size: u32,
    /// `--max-prefill-tokens`.
    #[arg(long, value_name = "TOKENS", default_value_t = 16384)]
    pub max_prefill_tokens: u32,
    /// `--max-running-requests` (default: what the KV pool holds).
    #[arg(long, value_name = "N")]
    pub max_running_requests: Option<u32>,
    /// `--cuda-graph-max-bs`: decode batches up to this size replay a CUDA graph.
    #[arg(long, value_name = "N", default_value_t = 160)]
    pub cuda_graph_max_bs: u32,
    /// `--disable-cuda-graph`.
    #[arg(long)]
    pub disable_cuda_graph: bool,
    /// `--disable-custom-all-reduce`.
    #[arg(long)]
    pub disable_custom_all_reduce: bool,
    /// `--moe-a2a-backend` (deepep, mooncake, …; `none` = all-reduce after the MoE).
    #[arg(long, value_name = "BACKEND")]
    pub moe_a2a_backend: Option<String>,
    /// `--pp-max-micro-batch-size`.
    #[arg(long, value_name = "N")]
    pub pp_max_micro_batch_size: Option<u32>,
    /// `--pp-async-batch-depth`: micro-batches in flight beyond `--pp-size`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub pp_async_batch_depth: u32,
    /// Overlap communication with compute (an option to explore; not SGLang's default).
    #[arg(long)]
    pub overlap_comm: bool,
}

impl ServerArgs {
    /// The validated server options.
    pub fn options(&self) -> Result<ServerOptions> {
        let f = self.mem_fraction_static;
        if !(f > 0.0 && f <= 1.0) {
            bail!("--mem-fraction-static {f}: must be a fraction in (0, 1], e.g. 0.85");
        }
        if self.chunked_prefill_size == 0 {
            bail!("--chunked-prefill-size 0: must be at least 1 token (SGLang default 8192)");
        }
        if self.max_running_requests == Some(0) {
            bail!("--max-running-requests 0: must be at least 1");
        }
        let a2a = self
            .moe_a2a_backend
            .as_deref()
            .filter(|b| !b.eq_ignore_ascii_case("none"))
            .map(str::to_string);
        Ok(ServerOptions {
            mem_fraction_static: f,
            kv_cache_dtype: self.kv_cache_dtype.dtype(),
            chunked_prefill_size: self.chunked_prefill_size,
            max_prefill_tokens: self.max_prefill_tokens,
            max_running_requests: self.max_running_requests,
            cuda_graph_max_bs: self.cuda_graph_max_bs,
            disable_cuda_graph: self.disable_cuda_graph,
            disable_custom_all_reduce: self.disable_custom_all_reduce,
            moe_a2a_backend: a2a,
            pp_max_micro_batch_size: self.pp_max_micro_batch_size,
            pp_async_batch_depth: self.pp_async_batch_depth,
            overlap_comm: self.overlap_comm,
            ..ServerOptions::default()
        })
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

/// `--format table|json|csv`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct FormatArg {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}
