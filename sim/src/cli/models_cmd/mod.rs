//! `sim models list|show`: model presets and HF configs — parameters and bytes by part, KV bytes
//! per token, and the per-GPU footprint of TP, TP×PP2 and EP layouts on a machine of N GPUs.
//!
//! Two stages as everywhere in the CLI: clap flags ([`ModelsCommand`]) → a validated
//! [`ShowConfig`] → output types ([`output`]) → a table or JSON.

use super::export::{Export, export};
use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};
use models::footprint::{FootprintOptions, footprint_with};
use models::format::KvDtype;
use models::spec::LayerAttention;
use models::{GpuSpec, Layout, ModelSpec};

pub mod output;
mod table;

use output::*;

/// Output format of `sim models`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Terminal tables.
    #[default]
    Table,
    /// JSON (schema in `output`, versioned).
    Json,
}

#[derive(Subcommand, Debug)]
pub enum ModelsCommand {
    /// List the embedded model presets.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Show one model: parameters and bytes by part, KV per token, per-GPU footprints.
    Show {
        /// A preset name (see `sim models list`), a HF model folder or a config.json path.
        model: String,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        /// GPUs in the machine; layouts shown: TP<n>, TP<n/2>×PP2, EP<n>.
        #[arg(long, default_value_t = 8)]
        gpus: u32,
        /// GPU preset (or an nvidia-smi name) whose memory the footprints must fit.
        #[arg(long, default_value = "rtx-pro-6000-server")]
        gpu: String,
        /// Share of the free GPU memory for weights + KV pool (SGLang `--mem-fraction-static`);
        /// default: SGLang's own for each layout on this GPU (0.848 at TP8 on the RTX PRO 6000),
        /// as `predict`, `advise` and `sweep` use.
        #[arg(long)]
        mem_fraction_static: Option<f64>,
        /// KV-cache dtype, SGLang's `--kv-cache-dtype` values (`auto`: the checkpoint's choice,
        /// FP8 when it declares an FP8 KV cache, else BF16).
        #[arg(long, default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(sim::engine::sglang::args::KV_CACHE_DTYPES))]
        kv_cache_dtype: String,
        /// Count the MTP draft layer (speculative decoding with NEXTN/EAGLE).
        #[arg(long)]
        speculative_mtp: bool,
    },
}

/// Validated `sim models show` settings.
#[derive(Debug)]
pub struct ShowConfig {
    pub spec: ModelSpec,
    pub gpu: GpuSpec,
    pub gpus: u32,
    /// `None`: SGLang's default for each layout.
    pub mem_fraction_static: Option<f64>,
    pub kv_dtype: KvDtype,
    pub options: FootprintOptions,
    pub format: Format,
}

pub fn run(cmd: ModelsCommand) -> Result<()> {
    match cmd {
        ModelsCommand::List { format } => {
            let list = list()?;
            export(format, &list)
        }
        ModelsCommand::Show {
            model,
            format,
            gpus,
            gpu,
            mem_fraction_static,
            kv_cache_dtype,
            speculative_mtp,
        } => {
            let spec = ModelSpec::resolve(&model)
                .with_context(|| format!("cannot load model `{model}`"))?;
            let gpu = GpuSpec::find_by_display_name(&gpu).with_context(|| {
                format!(
                    "unknown GPU `{gpu}`; use one of {}",
                    GpuSpec::preset_names().join(", ")
                )
            })?;
            if gpus == 0 || gpus > 1024 {
                bail!("--gpus {gpus}: give the number of GPUs in the machine (1-1024)");
            }
            if let Some(f) = mem_fraction_static.filter(|f| !(*f > 0.0 && *f <= 1.0)) {
                bail!(
                    "{} {f}: must be in (0, 1]",
                    super::own_flags::sim_flag(sim::engine::Knob::MemoryShare)
                );
            }
            let kv_dtype = sim::engine::sglang::args::kv_dtype(&kv_cache_dtype)
                .map_err(|p| anyhow::anyhow!("--kv-cache-dtype {kv_cache_dtype}: {p}"))?
                .unwrap_or(spec.default_kv_dtype);
            let cfg = ShowConfig {
                spec,
                gpu,
                gpus,
                mem_fraction_static,
                kv_dtype,
                options: FootprintOptions { speculative_mtp },
                format,
            };
            let shown = show(cfg.spec.clone(), &cfg);
            export(cfg.format, &shown)
        }
    }
}

impl From<Format> for super::export::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Table => Self::Table,
            Format::Json => Self::Json,
        }
    }
}

impl Export for ModelList {
    type Json = ModelList;
    const WHAT: &'static str = "`sim models list`";

    fn json(&self) -> &ModelList {
        self
    }

    fn print_table(&self) -> Result<()> {
        println!("{}", table::list(self));
        Ok(())
    }
}

impl Export for ModelShow {
    type Json = ModelShow;
    const WHAT: &'static str = "`sim models show`";

    fn json(&self) -> &ModelShow {
        self
    }

    fn print_table(&self) -> Result<()> {
        println!("{}", table::show(self));
        Ok(())
    }
}

/// Headline numbers of a model.
pub fn summary(spec: &ModelSpec) -> ModelSummary {
    ModelSummary {
        name: spec.name.clone(),
        model_type: spec.model_type.clone(),
        family: spec.family_summary(),
        total_params: spec.total_params(),
        total_params_without_mtp: spec.total_params_without_mtp(),
        active_params_per_token: spec.active_params_per_token(),
        weight_bytes_without_mtp: spec.total_weight_bytes_without_mtp(),
        formats: format!(
            "{} / {}",
            spec.formats.routed_experts.name(),
            spec.formats.attention.name()
        ),
        default_kv_dtype: spec.default_kv_dtype,
        kv_bytes_per_token: spec.kv_bytes_per_token(spec.default_kv_dtype),
        max_context_tokens: spec.max_context_tokens,
        source: spec.source.clone(),
    }
}

/// The engine `models show` sizes memory for (SGLang's `--mem-fraction-static` defaults) and
/// spells the layouts' flags in.
const SHOWN_ENGINE: sim::engine::Engine = sim::engine::Engine::Sglang;

/// All embedded presets.
pub fn list() -> Result<ModelList> {
    let models = ModelSpec::preset_names()
        .into_iter()
        .map(|n| ModelSpec::preset(n).map(|s| summary(&s)))
        .collect::<Result<Vec<_>, _>>()
        .context("an embedded model preset is broken (a bug)")?;
    Ok(ModelList {
        schema_version: MODELS_OUTPUT_SCHEMA_VERSION,
        models,
    })
}

/// The layouts shown for `gpus` GPUs: TP<n>, TP<n/2>×PP2 (n even), EP<n> (MoE models).
pub fn layouts_for(spec: &ModelSpec, gpus: u32) -> Vec<Layout> {
    let mut v = vec![Layout::tp(gpus)];
    if gpus >= 2 && gpus.is_multiple_of(2) {
        v.push(Layout {
            tp: gpus / 2,
            pp: 2,
            ep: 1,
            dp_attention: false,
        });
    }
    if spec.moe.is_some() && gpus > 1 {
        v.push(Layout {
            tp: gpus,
            pp: 1,
            ep: gpus,
            dp_attention: false,
        });
    }
    v
}

fn layout_fit(spec: &ModelSpec, layout: Layout, cfg: &ShowConfig) -> LayoutFit {
    let mut fit = LayoutFit {
        layout: layout.short_name(),
        flags: SHOWN_ENGINE.rules().launch_flags(&layout, 1, 1),
        parallel: layout,
        impossible_reason: None,
        max_weight_bytes_per_gpu: 0,
        kv_bytes_per_token_per_gpu: 0,
        indexer_cache_bytes_per_token_per_gpu: 0,
        kv_pool_bytes_per_gpu: 0,
        kv_capacity_tokens: 0,
        fits: false,
        fits_max_context: false,
        mem_fraction_static: 0.0,
        hybrid: None,
        stages: Vec::new(),
    };
    let f = match footprint_with(spec, &layout, cfg.options) {
        Ok(f) => f,
        Err(e) => {
            fit.impossible_reason = Some(match e {
                models::ModelsError::ImpossibleLayout { reason, .. } => reason,
                other => other.to_string(),
            });
            return fit;
        }
    };
    let weights = f.max_weight_bytes_per_gpu();
    let kv = f.kv_bytes_per_token_per_gpu(spec, cfg.kv_dtype);
    let idx = f.indexer_cache_bytes_per_token_per_gpu(spec);
    // SGLang's sizing (sim::cost::memory): a share of what is free before the weights load,
    // the layout's own default share unless one is given (sim::memory_fit, as every command).
    let defaults =
        sim::engine::sglang::args::from_words(&[], sim::engine::sglang::args::Origin::CommandLine)
            .and_then(|none| {
                sim::memory_fit::layout_options(&none, cfg.gpu.memory_bytes, &layout, spec)
            })
            .map(|r| r.options)
            .unwrap_or_default();
    let opts = sim::options::ServerOptions {
        mem_fraction_static: cfg
            .mem_fraction_static
            .unwrap_or(defaults.mem_fraction_static),
        kv_cache_dtype: Some(cfg.kv_dtype),
        ..defaults
    };
    fit.mem_fraction_static = opts.mem_fraction_static;
    let plan = sim::cost::memory::plan(spec, &f, cfg.gpu.memory_bytes, &opts);
    fit.max_weight_bytes_per_gpu = weights;
    fit.kv_bytes_per_token_per_gpu = kv;
    fit.indexer_cache_bytes_per_token_per_gpu = idx;
    fit.kv_pool_bytes_per_gpu = plan.kv_pool_bytes_per_gpu;
    fit.kv_capacity_tokens = plan.kv_tokens;
    fit.fits = plan.fits;
    fit.fits_max_context = plan.kv_tokens >= spec.max_context_tokens;
    if spec.is_hybrid_attention() {
        let c = f.fullest_stage_cache(spec, cfg.kv_dtype);
        let ctx = plan.context_len;
        fit.hybrid = Some(HybridFit {
            sliding_kv_bytes_per_token_per_gpu: c.sliding_kv_bytes_per_token,
            state_bytes_per_request_per_gpu: c.state_bytes_per_request,
            cache_bytes_per_max_context_request_per_gpu: c.kv_bytes_per_token * ctx
                + c.sliding_kv_bytes_per_token * spec.sliding_tokens(ctx)
                + c.state_bytes_per_request,
            swa_kv_tokens: plan.swa_kv_tokens,
            state_slots: plan.state_slots,
            state_pool_bytes_per_gpu: plan.state_pool_bytes_per_gpu,
            max_running_requests: plan.max_running_requests,
            context_len: ctx,
        });
    }
    fit.stages = f
        .per_gpu
        .iter()
        .filter(|g| g.tp_rank == 0)
        .map(|g| StageRow {
            stage: g.stage,
            first_layer: g.layers.start,
            end_layer: g.layers.end,
            weight_bytes_by_part: g.weight_bytes_by_part.clone(),
            total_weight_bytes: g.total_weight_bytes,
        })
        .collect();
    fit
}

/// Everything `sim models show` prints.
pub fn show(spec: ModelSpec, cfg: &ShowConfig) -> ModelShow {
    let params = spec.params_by_part();
    let bytes = spec.weight_bytes_by_part();
    let parts = params
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(&part, &n)| PartRow {
            part,
            params: n,
            format: spec.format_of(part).name(),
            bytes: bytes[&part],
        })
        .collect();
    let kv = KvSummary {
        default_kv_dtype: spec.default_kv_dtype,
        bf16_bytes_per_token: spec.kv_bytes_per_token(KvDtype::Bf16),
        fp8_bytes_per_token: spec.kv_bytes_per_token(KvDtype::Fp8),
        indexer_cache_bytes_per_token: spec.indexer_cache_bytes_per_token(),
        attended_tokens_cap: spec.attention.indexer().map(|ix| ix.topk as u64),
        full_attention_layers: spec
            .is_hybrid_attention()
            .then(|| spec.num_layers_of_kind(LayerAttention::Full)),
        sliding_layers: match spec.num_layers_of_kind(LayerAttention::Sliding) {
            0 => None,
            n => Some((n, spec.sliding_tokens(u64::MAX))),
        },
        linear_layers: match spec.num_layers_of_kind(LayerAttention::Linear) {
            0 => None,
            n => Some((n, spec.linear_state_bytes_per_request())),
        },
    };
    let layouts = layouts_for(&spec, cfg.gpus)
        .into_iter()
        .map(|l| layout_fit(&spec, l, cfg))
        .collect();
    ModelShow {
        schema_version: MODELS_OUTPUT_SCHEMA_VERSION,
        engine: SHOWN_ENGINE,
        summary: summary(&spec),
        parts,
        kv,
        machine: MachineSummary {
            gpus: cfg.gpus,
            gpu: cfg.gpu.name.clone(),
            memory_bytes_per_gpu: cfg.gpu.memory_bytes,
            mem_fraction_static: cfg.mem_fraction_static,
            kv_dtype: cfg.kv_dtype,
            speculative_mtp: cfg.options.speculative_mtp,
        },
        layouts,
        bf16_modules: models::spec::describe_bf16_modules(&spec),
        spec,
    }
}
