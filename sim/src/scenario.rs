//! One prediction's fixed inputs, resolved once per command: the machine, the model, every
//! SGLang flag given (classified by [`crate::engine::sglang::args`]), the server options of the layout
//! the flags pick with SGLang's defaults filled in, and the efficiency knobs (a calibration's,
//! or the defaults).
//!
//! Each layout gets its own server options ([`Scenario::opts_for`]): SGLang's defaults depend on
//! the layout (graph batch size and the static memory share on `--tp`, `--pp-size` and DP
//! attention). When several layouts are ranked, `--moe-a2a-backend` applies only to those that
//! can run it ([`Scenario::opts_ranking`]).

use crate::advise::KnownModelError;
use crate::calibrate::Calibration;
use crate::cost::{Knobs, ServedModel};
use crate::engine::sglang::args::{SglangArgs, SglangArgsError};
use crate::engine::vllm::args::{VllmArgsError, VllmLine};
use crate::machine::Machine;
use crate::options::ServerOptions;
use crate::options::a2a_where_applicable;
use models::{Layout, ModelSpec};

/// Machine, model, server flags and knobs of one prediction.
pub struct Scenario {
    pub machine: Machine,
    pub spec: ModelSpec,
    /// Every SGLang flag given, classified (`sim::engine::sglang::args`).
    pub sglang: SglangArgs,
    /// Options of the layout the flags pick (every GPU in TP when they pick none), SGLang's
    /// defaults filled in; the serving simulation's scheduler limits come from these.
    pub opts: ServerOptions,
    /// Which options took SGLang's defaults, and how SGLang adjusts others.
    pub default_notes: Vec<String>,
    pub knobs: Knobs,
    /// The calibration file's content, when one was given (its residual is the model's known
    /// error).
    pub calibration: Option<Calibration>,
    /// A vLLM launch line: every layout is simulated as vLLM runs it ([`crate::engine::vllm::args`]),
    /// `sglang` then holds only `sim`'s own command-line flags.
    pub vllm: Option<VllmLine>,
    /// The prompts the workload sends, for the speculative acceptance prior of every layout's
    /// options ([`Scenario::set_prompt_kind`]); `None` = the options' own (random).
    pub prompt_kind: Option<crate::acceptance::PromptKind>,
}

impl Scenario {
    /// The scenario of `sglang`'s flags with `primary` as the layout they pick, default knobs.
    /// The flags are validated here, once: a value SGLang would refuse is an error.
    pub fn new(
        machine: Machine,
        spec: ModelSpec,
        sglang: SglangArgs,
        primary: Layout,
    ) -> Result<Scenario, SglangArgsError> {
        let resolved =
            crate::memory_fit::layout_options(&sglang, machine.memory_bytes(), &primary, &spec)?;
        Ok(Scenario {
            machine,
            spec,
            sglang,
            opts: resolved.options,
            default_notes: resolved.notes,
            knobs: Knobs::default(),
            calibration: None,
            vllm: None,
            prompt_kind: None,
        })
    }

    /// The scenario of a vLLM launch line with `primary` as its layout: vLLM's options and
    /// defaults, the notes of what was translated.
    pub fn vllm(
        machine: Machine,
        spec: ModelSpec,
        line: VllmLine,
        primary: Layout,
    ) -> Result<Scenario, VllmArgsError> {
        let (opts, mut notes) = line.server_options(&primary, &machine)?;
        notes.insert(
            0,
            "engine: vLLM (the launch line is a vLLM command; vLLM main's defaults and memory sizing)"
                .into(),
        );
        Ok(Scenario {
            machine,
            spec,
            sglang: SglangArgs::default(),
            opts,
            default_notes: notes,
            knobs: Knobs::default(),
            calibration: None,
            vllm: Some(line),
            prompt_kind: None,
        })
    }

    /// The scenario with `calibration`'s knobs (the defaults when there is none).
    pub fn with_calibration(self, calibration: Option<Calibration>) -> Scenario {
        Scenario {
            knobs: calibration
                .as_ref()
                .map_or_else(Knobs::default, |c| c.knobs),
            calibration,
            ..self
        }
    }

    /// Speculative decoding's prompt kind for every layout (the workload's), in the options.
    pub fn set_prompt_kind(&mut self, kind: crate::acceptance::PromptKind) {
        self.prompt_kind = Some(kind);
        if let Some(s) = self.opts.speculative.as_mut() {
            s.prompt_kind = Some(kind);
        }
    }

    /// The server options of `layout`: SGLang's defaults depend on the layout (graph batch size
    /// and the static memory share on `--tp`, `--pp-size` and DP attention).
    pub fn opts_for(&self, layout: Layout) -> ServerOptions {
        let mut o = self.flags_opts_for(layout);
        if let (Some(s), Some(k)) = (o.speculative.as_mut(), self.prompt_kind) {
            s.prompt_kind = Some(k);
        }
        o
    }

    fn flags_opts_for(&self, layout: Layout) -> ServerOptions {
        if let Some(v) = &self.vllm {
            // validated for the primary layout; another layout of more GPUs than a
            // CUDA_VISIBLE_DEVICES lists keeps the primary's options
            return v
                .server_options(&layout, &self.machine)
                .map_or_else(|_| self.opts.clone(), |(o, _)| o);
        }
        // Validation does not depend on the layout, and passed in `Scenario::new`.
        crate::memory_fit::layout_options(
            &self.sglang,
            self.machine.memory_bytes(),
            &layout,
            &self.spec,
        )
        .expect("server flags were validated in Scenario::new")
        .options
    }

    /// The cost model of `layout` with `knobs`.
    pub fn model(&self, layout: Layout, knobs: Knobs) -> crate::error::Result<ServedModel> {
        ServedModel::new(
            &self.machine,
            &self.spec,
            layout,
            &self.opts_for(layout),
            knobs,
        )
    }

    /// The cost model of engine `replica` of several engines of `layout` behind SGLang's router
    /// (`--dp-size` without DP attention): on the machine's GPUs `replica × g .. (replica + 1) × g`
    /// for `g` GPUs per engine (`data_parallel_controller.py`: `base_gpu_id + i × tp × pp`), its
    /// collectives between exactly those GPUs.
    pub fn replica_model(
        &self,
        layout: Layout,
        knobs: Knobs,
        replica: u32,
    ) -> crate::error::Result<ServedModel> {
        let g = layout.gpus() as usize;
        let devices = self.machine.device_indices();
        let start = (replica as usize * g).min(devices.len());
        let end = (start + g).min(devices.len());
        let machine = self.machine.with_gpus(&devices[start..end])?;
        ServedModel::new(&machine, &self.spec, layout, &self.opts_for(layout), knobs)
    }

    /// The options of `layout` when several are ranked: `--moe-a2a-backend` applies to the
    /// layouts it can run (experts EP over the whole TP group of a MoE model); the others run
    /// without it, as SGLang would have to.
    pub fn opts_ranking(&self, layout: Layout) -> ServerOptions {
        a2a_where_applicable(&self.opts_for(layout), &self.spec, &layout)
    }

    /// The cost model of `layout` among several ranked ([`Scenario::opts_ranking`]).
    pub fn model_ranking(&self, layout: Layout, knobs: Knobs) -> crate::error::Result<ServedModel> {
        ServedModel::new(
            &self.machine,
            &self.spec,
            layout,
            &self.opts_ranking(layout),
            knobs,
        )
    }

    /// `(name, flags)` of `layout` as ranked: with `+backend` where the a2a backend runs.
    pub fn ranked_label(&self, layout: Layout) -> (String, String) {
        self.ranked_label_with(layout, layout.sglang_flags())
    }

    /// [`Scenario::ranked_label`] with `flags` as the layout's launch flags (`--nnodes` where it
    /// spans nodes).
    pub fn ranked_label_with(&self, layout: Layout, flags: String) -> (String, String) {
        if let Some(v) = &self.vllm {
            return (
                layout.short_name(),
                v.layout_flags(&layout)
                    .unwrap_or_else(|| "(no vLLM flags: EP over part of the TP group)".into()),
            );
        }
        match self.opts_ranking(layout).moe_a2a_backend {
            Some(b) => (
                format!("{}+{b}", layout.short_name()),
                format!("{flags} --moe-a2a-backend {b}"),
            ),
            None => (layout.short_name(), flags),
        }
    }

    /// The model's own error, where known: the calibration's residual.
    pub fn known_error(&self) -> Option<KnownModelError> {
        let c = self.calibration.as_ref()?;
        Some(KnownModelError::from_rms_log_error(
            format!(
                "calibration of {} on {} over {} measured point(s), RMS ln error {:.3}",
                c.layout,
                c.machine,
                c.measured.len(),
                c.rms_log_error_after
            ),
            c.rms_log_error_after,
        ))
    }

    /// The longest request the server takes: `--context-length`, else the model's.
    pub fn max_context_tokens(&self) -> u64 {
        self.opts
            .context_length
            .map_or(self.spec.max_context_tokens, u64::from)
    }

    /// The notes on the defaults the engine fills in for `layout` itself (a run of one layout
    /// that is not the primary: a launch line without `--tp-size` runs TP1, and SGLang's
    /// defaults then follow TP1); the primary's notes when they cannot be derived.
    pub fn default_notes_for(&self, layout: Layout) -> Vec<String> {
        let notes = match &self.vllm {
            Some(v) => v
                .server_options(&layout, &self.machine)
                .ok()
                .map(|(_, mut n)| {
                    n.insert(0, self.default_notes.first().cloned().unwrap_or_default());
                    n
                }),
            None => crate::memory_fit::layout_options(
                &self.sglang,
                self.machine.memory_bytes(),
                &layout,
                &self.spec,
            )
            .ok()
            .map(|r| r.notes),
        };
        notes.unwrap_or_else(|| self.default_notes.clone())
    }

    /// Provenance lines on the server options SGLang's defaults filled in or adjusted.
    pub fn defaults_provenance(&self) -> Vec<String> {
        let version = match self.vllm {
            Some(_) => crate::engine::vllm::args::VLLM_VERSION,
            None => crate::engine::sglang::args::SGLANG_VERSION
                .split(" (")
                .next()
                .unwrap_or_default(),
        };
        self.default_notes
            .iter()
            .map(|n| format!("server options: {n} ({version}; each layout gets its own)"))
            .collect()
    }

    /// The not-modelled flags, as written once each, for JSON outputs.
    pub fn flags_not_modelled(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for s in self.sglang.not_modelled().iter().map(|e| e.spelled()) {
            if !v.contains(&s) {
                v.push(s);
            }
        }
        if let Some(line) = &self.vllm {
            v.extend(line.not_modelled());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sglang::args::{Origin, from_words};

    fn scenario(words: &[&str], primary: Layout) -> Scenario {
        let machine = Machine::resolve("rtx-pro-6000-x8-vm-hostbounce").unwrap();
        let spec = ModelSpec::preset("qwen3-30b-a3b").unwrap();
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let sglang = from_words(&words, Origin::CommandLine).unwrap();
        Scenario::new(machine, spec, sglang, primary).unwrap()
    }

    #[test]
    fn the_primary_layout_gets_the_options_it_would_get_alone() {
        let s = scenario(&[], Layout::tp(8));
        assert_eq!(s.opts, s.opts_for(Layout::tp(8)));
        assert_eq!(s.knobs, Knobs::default());
        assert!(s.known_error().is_none());
        assert_eq!(s.max_context_tokens(), s.spec.max_context_tokens);
    }

    #[test]
    fn context_length_bounds_the_requests() {
        let s = scenario(&["--context-length", "4096"], Layout::tp(8));
        assert_eq!(s.max_context_tokens(), 4096);
    }

    #[test]
    fn no_calibration_keeps_the_default_knobs() {
        let s = scenario(&[], Layout::tp(8)).with_calibration(None);
        assert_eq!(s.knobs, Knobs::default());
        assert!(s.calibration.is_none());
    }
}
