//! The layout flags (`--layout`, `--tp`, `--pp-size`, `--ep-size`, `--dp`,
//! `--enable-dp-attention`) and the layout(s) they select. Its own module so that the server's
//! flags ([`super::server_args`]) and the arguments every command shares ([`super::args`]) both
//! hold them without importing each other.

use super::own_flags::sim_flag;
use anyhow::{Context, Result, bail};
use models::{Layout, ModelSpec};
use sim::engine::Knob;
use sim::layout::enumerate_layouts;

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
    /// Whether `--dp N` without DP attention (N engines behind SGLang's router) is accepted:
    /// only by the commands that replay the engines one by one (`sim run`).
    pub replicas_allowed: bool,
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
        let (pp_flag, dpa_flag) = (
            sim_flag(Knob::PipelineParallel),
            sim_flag(Knob::DpAttention),
        );
        let pp = self.pp.unwrap_or(1);
        if pp == 0 {
            bail!("{pp_flag} 0: must be at least 1");
        }
        let replicas = self.replicas();
        let tp = self.tp.unwrap_or(gpus / (pp * replicas).max(1));
        if tp == 0 {
            bail!("--tp 0: must be at least 1");
        }
        let ep = self.ep.unwrap_or(1);
        if ep == 0 {
            bail!(
                "{} 0: must be at least 1 (1 = experts sliced by TP)",
                sim_flag(Knob::ExpertParallelSize)
            );
        }
        if let Some(dp) = self.dp {
            if dp > 1 && !self.dp_attention && !self.replicas_allowed {
                bail!(
                    "--dp {dp} without {dpa_flag}: {dp} engines behind SGLang's router; `sim run` replays them one by one, and `sim advise --question replicas` compares two servers of half the box with one of all of it (or add {dpa_flag} with --dp equal to --tp)"
                );
            }
            if replicas > 1 && tp * pp * replicas > gpus {
                bail!(
                    "--dp {dp} engines of --tp {tp} × {pp_flag} {pp} need {} GPUs; the machine has {gpus}: lower --dp or --tp",
                    tp * pp * replicas
                );
            }
            if self.dp_attention && dp != tp {
                bail!("--dp {dp} with {dpa_flag}: only --dp equal to --tp ({tp}) is modelled");
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

impl LayoutArgs {
    /// These flags with the ones a launch line gave filled in where the command line left them
    /// out (the two already agree where both gave one: `ServerArgs::sglang` checks).
    pub fn with_sizes(&self, s: &sim::engine::sglang::args::LayoutSizes) -> LayoutArgs {
        LayoutArgs {
            tp: self.tp.or(s.tp),
            pp: self.pp.or(s.pp),
            ep: self.ep.or(s.ep),
            dp: self.dp.or(s.dp),
            dp_attention: self.dp_attention || s.enable_dp_attention,
            layout: self.layout.clone(),
            replicas_allowed: self.replicas_allowed,
        }
    }

    /// Engines behind SGLang's router: `--dp` without DP attention, else 1.
    pub fn replicas(&self) -> u32 {
        match self.dp {
            Some(dp) if dp > 1 && !self.dp_attention => dp,
            _ => 1,
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
