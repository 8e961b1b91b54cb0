//! One prediction's fixed inputs, resolved once per command: the machine, the model, the one
//! engine's launch ([`Launch`]: SGLang's flags classified by [`crate::engine::sglang::args`], or a
//! `vllm serve` line), the server options of the layout it picks with that engine's defaults
//! filled in, and the efficiency knobs (a calibration's, or the defaults).
//!
//! Each layout gets its own server options ([`Scenario::opts_for`]): the defaults depend on
//! the layout (graph batch size and the static memory share on `--tp`, `--pp-size` and DP
//! attention). When several layouts are ranked, `--moe-a2a-backend` applies only to those that
//! can run it ([`Scenario::opts_ranking`]).

use crate::advise::KnownModelError;
use crate::calibrate::Calibration;
use crate::cost::{Knobs, ServedModel};
use crate::engine::{Launch, LaunchError};
use crate::machine::Machine;
use crate::options::ServerOptions;
use crate::options::runnable_on;
use models::{Layout, ModelSpec};

pub mod advice;
pub mod bench;
pub mod calibrate;
pub mod predict;
pub mod validate;
pub use bench::{BenchRun, BenchRunError};
pub use calibrate::MeasuredError;
pub use validate::Validation;

/// Machine, model, server flags and knobs of one prediction.
pub struct Scenario {
    pub machine: Machine,
    pub spec: ModelSpec,
    /// The server simulated: one engine's launch (every layout is simulated as that engine
    /// runs it).
    pub launch: Launch,
    /// Options of the layout the launch picks (every GPU in TP when it picks none), the
    /// engine's defaults filled in; the serving simulation's scheduler limits come from these.
    pub opts: ServerOptions,
    /// Which options took the engine's defaults, and how it adjusts others.
    pub default_notes: Vec<String>,
    pub knobs: Knobs,
    /// The calibration file's content, when one was given (its residual is the model's known
    /// error).
    pub calibration: Option<Calibration>,
    /// The prompts the workload sends, for the speculative acceptance prior of every layout's
    /// options ([`Scenario::set_prompt_kind`]); `None` = the options' own (random).
    pub prompt_kind: Option<crate::acceptance::PromptKind>,
}

impl Scenario {
    /// The scenario of `launch` with `primary` as the layout it picks, default knobs. The
    /// launch is validated here, once: a value its engine would refuse is an error.
    pub fn new(
        machine: Machine,
        spec: ModelSpec,
        launch: Launch,
        primary: Layout,
    ) -> Result<Scenario, LaunchError> {
        let (opts, default_notes) = launch.options(&primary, &machine, &spec)?;
        Ok(Scenario {
            machine,
            spec,
            launch,
            opts,
            default_notes,
            knobs: Knobs::default(),
            calibration: None,
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
        // validated for the primary layout (SGLang's validation does not depend on the
        // layout); another layout of more GPUs than a vLLM line's CUDA_VISIBLE_DEVICES lists
        // keeps the primary's options
        self.launch
            .options(&layout, &self.machine, &self.spec)
            .map_or_else(|_| self.opts.clone(), |(o, _)| o)
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
        runnable_on(&self.opts_for(layout), &self.spec, &layout)
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
        let a2a = self.opts_ranking(layout).moe_a2a_backend;
        self.launch.ranked_label(&layout, flags, a2a.as_deref())
    }

    /// Names each row of `layouts`' results as a ranking shows it (`EP8+deepep`, its flags with
    /// `--moe-a2a-backend deepep`, where the a2a backend runs; the engine's own spelling):
    /// `rows` are each row's `(layout name, flags)`.
    pub fn label_rows<'a>(
        &self,
        layouts: &[crate::sweep::SweepLayout],
        rows: impl Iterator<Item = (&'a mut String, &'a mut String)>,
    ) {
        for (name, flags) in rows {
            if let Some(l) = layouts.iter().find(|l| l.layout.short_name() == *name) {
                (*name, *flags) = self.ranked_label_with(l.layout, l.sglang_flags());
            }
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
        self.launch
            .options(&layout, &self.machine, &self.spec)
            .map_or_else(|_| self.default_notes.clone(), |(_, n)| n)
    }

    /// The error model's regime of a prediction of this scenario under `opts` (on `layout`,
    /// when one is simulated) at `load` ([`crate::uncertainty::Regime::of`]).
    pub fn regime(
        &self,
        opts: &ServerOptions,
        layout: Option<Layout>,
        load: crate::uncertainty::Load,
    ) -> crate::uncertainty::Regime {
        let mut r = crate::uncertainty::Regime::of(
            &self.machine,
            &self.spec,
            opts,
            layout,
            load,
            &self.default_notes,
        );
        // a calibration of this machine and model measured its offset: its out-of-sample spread
        // stands in for a new source's
        r.calibrated_sigma_ln = self
            .calibration
            .as_ref()
            .and_then(|c| c.own_sigma_ln(self.machine.name(), &self.spec.name));
        r
    }

    /// What a prediction rests on: the machine's and the model's sources, the knobs, the
    /// workload's lengths (`workload_lengths`: where they came from), the defaults the engine
    /// filled in.
    pub fn provenance(&self, workload_lengths: &str) -> Vec<String> {
        let mut v = vec![crate::advise::machine_provenance(&self.machine)];
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
        v.push(format!("workload: {workload_lengths}"));
        v.extend(self.defaults_provenance());
        v
    }

    /// Provenance lines on the server options the engine's defaults filled in or adjusted.
    pub fn defaults_provenance(&self) -> Vec<String> {
        let version = self.launch.version();
        self.default_notes
            .iter()
            .map(|n| format!("server options: {n} ({version}; each layout gets its own)"))
            .collect()
    }

    /// The not-modelled flags, as written once each, for JSON outputs.
    pub fn flags_not_modelled(&self) -> Vec<String> {
        self.launch.not_modelled()
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
        Scenario::new(machine, spec, Launch::Sglang(sglang), primary).unwrap()
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

    fn closed(concurrency: u32, prompts: u32) -> crate::workload::Workload {
        crate::workload::Workload {
            num_prompts: prompts,
            random_input_len: 512,
            random_output_len: 64,
            random_range_ratio: 1.0,
            max_concurrency: Some(concurrency),
            ..crate::workload::Workload::default()
        }
    }

    /// `sim run`'s orchestration as a library call: the run, its engine's launch flags and
    /// its intervals, a plain serializable value; replicas behind the router add the router's
    /// flag and serve the same prompts with more engines.
    #[test]
    fn a_bench_run_is_one_library_call_with_a_serializable_result() {
        let s = scenario(&[], Layout::tp(4));
        let one = s.run_bench(Layout::tp(4), &closed(8, 32), 1).unwrap();
        assert_eq!(one.run.completed, 32);
        assert_eq!(one.run.flags, "--tp 4");
        assert!(one.ranges.iter().any(|r| r.figure == "output_throughput"));
        let json = serde_json::to_value(&one).unwrap();
        assert!(json["run"]["output_throughput"].as_f64().unwrap() > 0.0);
        let two = s.run_bench(Layout::tp(4), &closed(8, 32), 2).unwrap();
        assert_eq!(two.run.flags, "--tp 4 --dp-size 2");
        assert_eq!(two.run.completed, 32);
        // a layout the machine cannot hold is the engine's error, not a panic
        let err = s.run_bench(Layout::tp(16), &closed(8, 32), 1).unwrap_err();
        assert!(matches!(err, BenchRunError::Engine(_)), "{err}");
    }

    /// `sim calibrate`'s orchestration as a library call refuses, with the cost model's or the
    /// fit's own typed error, what it cannot fit (the fit itself: the calibrate command's tests).
    #[test]
    fn a_calibration_refuses_a_layout_and_an_empty_set_with_typed_errors() {
        use crate::calibrate::{CalibrateError, KnobParam, Observations};
        let s = scenario(&[], Layout::tp(4));
        let none = Observations {
            rounds: Vec::new(),
            runs: Vec::new(),
            hold_out_running: Vec::new(),
        };
        let fit = [KnobParam::Compute];
        let err = s.calibrate_to(Layout::tp(16), &none, &fit, Vec::new());
        assert!(matches!(err, Err(MeasuredError::Engine(_))));
        let err = s.calibrate_to(Layout::tp(4), &none, &fit, Vec::new());
        assert!(
            matches!(err, Err(MeasuredError::Fit(CalibrateError::NothingToFit))),
            "{err:?}"
        );
    }

    /// `sim validate --measured`'s orchestration as a library call: its JSON keeps the command's
    /// keys in the command's order; a layout the box cannot hold is the engine's typed error.
    #[test]
    fn a_validation_is_one_library_call_with_the_command_s_json() {
        let s = scenario(&[], Layout::tp(4));
        let v = s.validate_against(Layout::tp(4), &[]).unwrap();
        let json = serde_json::to_string(&v).unwrap();
        assert!(
            json.starts_with(r#"{"schema_version":1,"engine":"sglang","layout":"TP4","knobs":"#),
            "{json}"
        );
        assert!(json.contains(r#""rms_log_error":"#) && json.ends_with(r#""points":[]}"#));
        let err = s.validate_against(Layout::tp(16), &[]);
        assert!(matches!(err, Err(MeasuredError::Engine(_))));
    }

    #[test]
    fn no_calibration_keeps_the_default_knobs() {
        let s = scenario(&[], Layout::tp(8)).with_calibration(None);
        assert_eq!(s.knobs, Knobs::default());
        assert!(s.calibration.is_none());
    }
}
