//! `sim advise`'s orchestration as library calls on a [`Scenario`], returning the plain
//! serializable [`Advice`] its exporters print: the layouts ranked for a workload
//! ([`Scenario::rank_layouts`]), the answer to one question ([`Scenario::answer_question`]: EP,
//! MTP, scale, replicas, P2P, each with its odds from the error model, [`odds`]), and the
//! advice put together ([`Scenario::advice`]). The CLI parses the flags, shows progress and
//! prints.
//!
//! With `--moe-a2a-backend`, the backend runs on the layouts it can run (EP over the whole TP
//! group) and the others run without it; the EP question compares EP with the backend against
//! the best layout without EP. Every answer says what it rests on (measured or modelled inputs)
//! and, where known, the model's own error.

pub mod odds;
pub mod scale;

use super::Scenario;
use crate::acceptance::PromptKind;
use crate::advise::host_path::Observed;
use crate::advise::mtp::{MtpAnswer, MtpQuestion, better_chain, mtp_question};
use crate::advise::p2p::{P2pAnswer, P2pQuestion};
use crate::advise::replicas::{Replica, ReplicasAnswer, ReplicasQuestion, replicas_question};
use crate::advise::scale::ScaleAnswer;
use crate::advise::verdict::DEFAULT_CONCURRENCY;
use crate::advise::{
    ADVICE_SCHEMA_VERSION, Advice, EpAnswer, EpQuestion, RankedLayout, a2a_applies, a2a_notes,
    ep_question, rank,
};
use crate::cost::IterationModel;
use crate::engine::Knob;
use crate::error::SimError;
use crate::layout::enumerate_layouts;
use crate::options::{ServerOptions, SpeculativeOptions};
use crate::sweep::SweepLayout;
use crate::workload::Workload;
use models::Layout;

/// Questions `sim advise` answers beyond the ranking (the CLI's `--question` values: their docs are
/// its help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Question {
    /// Should we try expert parallelism (EP over all GPUs) instead of the best other layout?
    Ep,
    /// Should we turn on speculative decoding (MTP / EAGLE) at this load?
    Mtp,
    /// On a multi-node machine: what do the other boxes buy (best layout of all GPUs vs the best
    /// of one box, and one server per box)?
    Scale,
    /// One server on every GPU of the box (TP8), or two servers of half the GPUs each (TP4 ×2,
    /// SGLang's `--dp-size 2` without DP attention)?
    Replicas,
    /// What does the GPUs' P2P state (real / off / routed through the host) cost at this load,
    /// with NCCL and with the custom all-reduce, and what to change?
    P2p,
}

/// Why advice cannot be given.
#[derive(Debug, thiserror::Error)]
pub enum AdviseError {
    /// Every layout was rejected or failed.
    #[error("no layout of {gpus} GPUs can run {model} (first reason: {why})")]
    NoLayoutRuns {
        gpus: u32,
        model: String,
        why: String,
    },
    /// A question asked of an engine whose servers the questions do not build yet.
    #[error(
        "--question with a {engine} launch line: not answered for {engine} servers yet; drop --question to rank the {engine} layouts"
    )]
    QuestionNotAnswered { engine: &'static str },
    /// `--question ep` of a dense model.
    #[error("--question ep needs a mixture-of-experts model; {model} is dense")]
    Dense { model: String },
    /// EP over every GPU cannot run the model.
    #[error("EP{gpus} is impossible for {model}: {why}")]
    EpImpossible {
        gpus: u32,
        model: String,
        why: String,
    },
    /// `--question mtp` with only pipeline-parallel layouts (SGLang cannot speculate on them).
    #[error("--question mtp: no layout without {pp_flag} runs this model")]
    NoLayoutWithoutPp { pp_flag: &'static str },
    /// `--question p2p` with no layout that ran.
    #[error("--question p2p: no layout ran")]
    NoLayoutRan,
    /// `--question scale` on one box.
    #[error(
        "--question scale compares one box with several, but `{machine}` is one box of {gpus} GPUs; use a multi-node preset (rtx-pro-6000-x8x2-400gbe, h200-x8x2-ib-ndr) or a profile that `probe run {nodes_flag} N` wrote"
    )]
    ScaleOneBox {
        machine: String,
        gpus: u32,
        nodes_flag: &'static str,
    },
    /// `--question replicas` on a machine that does not halve into two boxes' worth.
    #[error(
        "--question replicas compares one server of a box with two of half of it: `{machine}` has {gpus} GPU(s) on {nodes} node(s); for several boxes ask --question scale"
    )]
    ReplicasShape {
        machine: String,
        gpus: u32,
        nodes: u32,
    },
    /// A question's simulation failed, with why.
    #[error("--question {question}: {why}")]
    Failed { question: &'static str, why: String },
    /// The machine could not be split or a layout built.
    #[error(transparent)]
    Sim(#[from] SimError),
}

impl AdviseError {
    /// `--question QUESTION` failed because of `why`.
    pub fn failed(question: &'static str, why: impl std::fmt::Display) -> AdviseError {
        AdviseError::Failed {
            question,
            why: why.to_string(),
        }
    }
}

/// The answer to the question asked (at most one is set).
#[derive(Debug, Default)]
pub struct Answers {
    pub ep: Option<EpAnswer>,
    pub mtp: Option<MtpAnswer>,
    pub scale: Option<ScaleAnswer>,
    pub replicas: Option<ReplicasAnswer>,
    pub p2p: Option<P2pAnswer>,
}

/// What a question is asked with beside the scenario: the layouts ranked and their ranking, the
/// workload and its prompts, the perturbed draws of a verdict, and `--observed` throughputs for
/// the P2P question.
pub struct AskedOf<'a> {
    pub layouts: &'a [SweepLayout],
    pub ranking: &'a [RankedLayout],
    pub workload: &'a Workload,
    pub prompt_kind: PromptKind,
    pub draws: u32,
    pub observed: &'a [Observed],
}

impl Scenario {
    /// `layouts` ranked for `workload`, each named as the ranking shows it (`EP8+deepep` where
    /// the a2a backend runs); an error when none of them ran.
    pub fn rank_layouts(
        &self,
        layouts: &[SweepLayout],
        workload: &Workload,
    ) -> Result<Vec<RankedLayout>, AdviseError> {
        let mut ranking = rank(layouts, &self.opts, workload);
        self.label_rows(
            layouts,
            ranking.iter_mut().map(|r| (&mut r.layout, &mut r.flags)),
        );
        if ranking.iter().all(|r| r.run.is_none()) {
            return Err(AdviseError::NoLayoutRuns {
                gpus: self.machine.gpu_count,
                model: self.spec.name.clone(),
                why: ranking
                    .first()
                    .and_then(|r| r.rejected.clone())
                    .unwrap_or_default(),
            });
        }
        Ok(ranking)
    }

    /// Answers `question` (with its odds), or refuses it where the launch's engine has no
    /// answers yet ([`crate::engine::ServingEngine::answers_questions`]).
    pub fn answer_question(
        &self,
        question: Question,
        asked: &AskedOf<'_>,
    ) -> Result<Answers, AdviseError> {
        let engine = self.launch.engine().rules();
        let answered = engine.answers_questions();
        if !answered {
            return Err(AdviseError::QuestionNotAnswered {
                engine: engine.display_name(),
            });
        }
        let (w, draws) = (asked.workload, asked.draws);
        let mut a = Answers::default();
        match question {
            Question::Ep => {
                let mut ep = self.answer_ep(w, draws)?;
                odds::ep(self, w, &mut ep);
                a.ep = Some(ep);
            }
            Question::Mtp => {
                let mut mtp = self.answer_mtp(asked)?;
                odds::mtp(self, &mut mtp);
                // the verdict is the intervals' (issue 37); the draws say how robust it is
                mtp.follow_odds();
                a.mtp = Some(mtp);
            }
            Question::Scale => {
                let top = self.top_ranked(asked.layouts, asked.ranking);
                let mut s = scale::answer(self, w, draws, top.map(|l| l.layout))?;
                odds::scale(self, w, &mut s);
                a.scale = Some(s);
            }
            Question::Replicas => {
                let mut r = self.answer_replicas(w, draws)?;
                odds::replicas(self, &mut r);
                r.follow_odds();
                a.replicas = Some(r);
            }
            Question::P2p => {
                let mut p2p = self.answer_p2p(asked)?;
                odds::p2p(self, w, &mut p2p);
                a.p2p = Some(p2p);
            }
        }
        Ok(a)
    }

    /// The advice: the ranking, the answer and the notes on the a2a backend, with what the
    /// figures rest on (`lengths_provenance`: where the workload's lengths came from).
    pub fn advice(
        &self,
        workload: Workload,
        ranking: Vec<RankedLayout>,
        answers: Answers,
        lengths_provenance: &str,
        flags_not_modelled: Vec<String>,
    ) -> Advice {
        let notes = self
            .opts
            .moe_a2a_backend
            .as_ref()
            .map(|b| {
                a2a_notes(
                    &self.machine,
                    self.opts.engine,
                    b,
                    self.launch.deepep_mode(),
                )
            })
            .unwrap_or_default();
        Advice {
            schema_version: ADVICE_SCHEMA_VERSION,
            engine: self.opts.engine,
            machine: self.machine.name().to_string(),
            model: self.spec.name.clone(),
            provenance: self.provenance(lengths_provenance),
            workload,
            ranking,
            ep: answers.ep,
            mtp: answers.mtp,
            notes,
            flags_not_modelled,
            scale: answers.scale,
            replicas: answers.replicas,
            p2p: answers.p2p,
        }
    }

    /// The KV-bound warning for the top-ranked layout that ran, if its pool admits fewer
    /// requests than the workload asks for.
    pub fn kv_warning_for_best(&self, layouts: &[SweepLayout], advice: &Advice) -> Option<String> {
        let l = self.top_ranked(layouts, &advice.ranking)?;
        let model = l.model.as_ref().ok()?;
        crate::memory_fit::workload_kv_warning(
            &self.spec,
            model.memory(),
            &l.layout,
            &self.opts_ranking(l.layout),
            &advice.workload,
        )
    }

    /// The user's other flags on the `try:` line of the layout the ranking puts first
    /// ([`crate::engine::Launch::other_flags_on`]).
    pub fn other_flags_for_best(&self, layouts: &[SweepLayout], advice: &Advice) -> Vec<String> {
        match self.top_ranked(layouts, &advice.ranking) {
            Some(l) => self.launch.other_flags_on(&l.layout),
            None => self.launch.other_flags(),
        }
    }

    /// The layout the ranking puts first (among those that ran), so that a question compares the
    /// layout the table above it recommends.
    fn top_ranked<'a>(
        &self,
        layouts: &'a [SweepLayout],
        ranking: &[RankedLayout],
    ) -> Option<&'a SweepLayout> {
        let best = ranking.iter().find(|r| r.run.is_some())?;
        // the ranking names a layout as `rank_layouts` did (`EP8+deepep` where the backend runs)
        layouts
            .iter()
            .find(|l| self.ranked_label(l.layout).0 == best.layout)
    }

    fn answer_ep(&self, workload: &Workload, draws: u32) -> Result<EpAnswer, AdviseError> {
        let gpus = self.machine.gpu_count;
        if self.spec.moe.is_none() {
            return Err(AdviseError::Dense {
                model: self.spec.name.clone(),
            });
        }
        let candidates = enumerate_layouts(gpus, &self.spec);
        let ep_layout = Layout {
            tp: gpus,
            pp: 1,
            ep: gpus,
            dp_attention: false,
        };
        if let Some(why) = candidates
            .iter()
            .find(|c| c.layout == ep_layout)
            .and_then(|c| c.rejected.clone())
        {
            return Err(AdviseError::EpImpossible {
                gpus,
                model: self.spec.name.clone(),
                why,
            });
        }
        // The best layout without EP, run without the a2a backend (it needs EP).
        let others: Vec<Layout> = candidates
            .iter()
            .filter(|c| {
                c.rejected.is_none() && c.layout.ep == 1 && self.launch.can_launch(&c.layout)
            })
            .map(|c| c.layout)
            .collect();
        let ep_opts = self.opts_ranking(ep_layout);
        let ep_a2a_backend = ep_opts
            .moe_a2a_backend
            .clone()
            .filter(|_| a2a_applies(&ep_opts, &self.spec, &ep_layout));
        let q = EpQuestion {
            spec: &self.spec,
            opts: &ep_opts,
            workload,
            knobs: self.knobs,
            ep_layout,
            others,
            comm_spread: crate::advise::comm_spread(&self.machine.profile),
            draws,
            seed: workload.seed,
            known_error: self.known_error(),
            ep_a2a_backend,
            extra_flags: self.launch.other_flags(),
            ep_extra_flags: self.launch.other_flags_on(&ep_layout),
        };
        let build = |l: Layout, k| {
            self.model_ranking(l, k)
                .map(|m| Box::new(m) as Box<dyn IterationModel>)
                .map_err(|e| e.to_string())
        };
        ep_question(&q, &build).map_err(|e| AdviseError::failed("ep", e))
    }

    /// The speculative options to ask about: the user's `--speculative-*` flags, else SGLang's
    /// choice for this model (EAGLE on the checkpoint's MTP layers with
    /// `auto_choose_speculative_params`); the prompt kind the user gave, else the workload's
    /// (random tokens, or ShareGPT's natural text). A model with nothing to draft with is
    /// refused in the sentence `run` says ([`crate::cost::spec::check_draft`]).
    fn spec_options(&self, kind: PromptKind) -> Result<SpeculativeOptions, AdviseError> {
        let mut s = match &self.opts.speculative {
            Some(s) => s.clone(),
            None => self.opts.engine.rules().default_speculation(&self.spec),
        };
        crate::cost::spec::check_draft(&self.spec, &s, self.opts.engine)
            .map_err(|e| AdviseError::failed("mtp", e))?;
        s.prompt_kind = Some(kind);
        Ok(s)
    }

    /// What the engine's public runs say of speculation on this model, said with the MTP answer;
    /// else what a build the launch does not name may cost (no prediction is flagged for it).
    fn mtp_caveat(&self) -> Option<&'static str> {
        let rules = self.opts.engine.rules();
        rules
            .spec_caveat(&self.spec, &self.opts)
            .or_else(|| rules.spec_build_caveat(&self.spec, &self.opts))
    }

    fn answer_mtp(&self, asked: &AskedOf<'_>) -> Result<MtpAnswer, AdviseError> {
        let workload = asked.workload;
        let spec_opts = self.spec_options(asked.prompt_kind)?;
        let layout = self.speculating_layout(asked)?;
        let passed_over = self.stages_passed_over(asked, layout, &spec_opts);
        let base = self.opts_ranking(layout);
        let without = ServerOptions {
            speculative: None,
            ..base.clone()
        };
        let concurrency = workload.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY);
        let (capped, with, lift) = self.speculating(base, &spec_opts, concurrency);
        let q = MtpQuestion {
            layout,
            with: &with,
            without: &without,
            plan: crate::cost::spec::SpecPlan::resolve(&self.spec, &spec_opts),
            concurrency,
            context_tokens: workload.random_input_len + workload.random_output_len / 2,
            knobs: self.knobs,
            comm_spread: crate::advise::comm_spread(&self.machine.profile),
            draws: asked.draws,
            seed: workload.seed,
            known_error: self.known_error(),
            extra_flags: match (self.launch.sglang_args(), self.launch.vllm_line()) {
                (Some(a), _) => a.modelled_flags(),
                (None, Some(l)) => l.other_flags(),
                (None, None) => Vec::new(),
            },
            layout_flags: self.ranked_label(layout).1,
            engine: self.opts.engine,
            running_flag: lift.map(|_| {
                format!(
                    "{} {concurrency}",
                    self.opts.engine.flag(Knob::MaxRunningRequests)
                )
            }),
        };
        let build = |l: Layout, k, o: &ServerOptions| {
            crate::cost::ServedModel::new(&self.machine, &self.spec, l, o, k)
                .map(|m| Box::new(m) as Box<dyn IterationModel>)
                .map_err(|e| e.to_string())
        };
        let failed = |e| AdviseError::failed("mtp", e);
        // no speculative flag given: the question is whether speculation pays at all, so the
        // answer is about the chain draft length that pays best where it beats the default draft
        let better = if self.opts.speculative.is_none() {
            better_chain(&q, &build).map_err(failed)?
        } else {
            None
        };
        let caveat = self.mtp_caveat();
        let Some((best, default)) = better else {
            let mut a = mtp_question(&q, &build).map_err(failed)?;
            a.sentence
                .push_str(passed_over.as_deref().unwrap_or_default());
            a.caveat = caveat.map(str::to_string);
            self.say_running_cap(&mut a, &q, &capped, lift, &build)?;
            self.say_spec_overlap(&mut a, &q, &build)?;
            return Ok(a);
        };
        let mut chain_opts = spec_opts;
        (
            chain_opts.num_steps,
            chain_opts.eagle_topk,
            chain_opts.num_draft_tokens,
        ) = (best.num_steps, 1, best.num_draft_tokens);
        let chain = ServerOptions {
            speculative: Some(chain_opts.clone()),
            ..with.clone()
        };
        let chain_capped = ServerOptions {
            speculative: Some(chain_opts.clone()),
            ..capped
        };
        let q = MtpQuestion {
            with: &chain,
            plan: crate::cost::spec::SpecPlan::resolve(&self.spec, &chain_opts),
            ..q
        };
        let mut a = mtp_question(&q, &build).map_err(failed)?;
        a.sentence.push_str(&default.words());
        a.sentence
            .push_str(passed_over.as_deref().unwrap_or_default());
        a.instead_of_default = Some(default);
        a.caveat = caveat.map(str::to_string);
        self.say_running_cap(&mut a, &q, &chain_capped, lift, &build)?;
        self.say_spec_overlap(&mut a, &q, &build)?;
        Ok(a)
    }

    /// The layout the MTP question answers on: the best-ranked one the engine can speculate on
    /// (no pipeline stages), else the first such layout of the sweep.
    fn speculating_layout(&self, asked: &AskedOf<'_>) -> Result<Layout, AdviseError> {
        let ls = asked.layouts;
        asked
            .ranking
            .iter()
            .filter(|r| r.run.is_some())
            .find_map(|r| {
                ls.iter()
                    .map(|l| l.layout)
                    .find(|l| l.pp == 1 && self.ranked_label(*l).0 == r.layout)
            })
            .or_else(|| ls.iter().map(|l| l.layout).find(|l| l.pp == 1))
            .ok_or_else(|| AdviseError::NoLayoutWithoutPp {
                pp_flag: self.opts.engine.flag(Knob::PipelineParallel),
            })
    }

    /// Where the best-ranked layout that ran has pipeline stages and `layout` (the one the MTP
    /// question answers on) is another, the sentence that says why: the engine's reason for
    /// refusing speculation over stages. `None` where the answer is on the top layout.
    fn stages_passed_over(
        &self,
        asked: &AskedOf<'_>,
        layout: Layout,
        spec_opts: &SpeculativeOptions,
    ) -> Option<String> {
        let answered = self.ranked_label(layout).0;
        let top = asked
            .ranking
            .iter()
            .find(|r| r.run.is_some())
            .filter(|r| r.layout != answered)?;
        asked
            .layouts
            .iter()
            .any(|l| l.layout.pp > 1 && self.ranked_label(l.layout).0 == top.layout)
            .then(|| {
                let method = crate::cost::spec::draft_method(&self.spec, spec_opts);
                format!(
                    " The answer is on {answered}, the best-ranked layout without pipeline stages: {} ranks first, and {}.",
                    top.layout,
                    self.opts.engine.rules().speculation_with_stages_refusal(method)
                )
            })
    }

    /// Where the engine runs the answer's speculation without its overlap scheduler and a
    /// switch keeps it on (SGLang's `SGLANG_ENABLE_SPEC_V2=True` for a top-1 chain), what the
    /// switch gives at the load, in the answer and its words.
    fn say_spec_overlap(
        &self,
        a: &mut MtpAnswer,
        q: &MtpQuestion<'_>,
        build: &crate::advise::mtp::BuildWith<'_>,
    ) -> Result<(), AdviseError> {
        let Some(env) = self.opts.engine.rules().speculative_overlap_switch(q.with) else {
            return Ok(());
        };
        let o = crate::advise::mtp::spec_overlap(q, build, env, &a.at)
            .map_err(|e| AdviseError::failed("mtp", e))?;
        a.sentence.push_str(&o.words(self.opts.engine));
        a.spec_overlap = Some(o);
        Ok(())
    }

    /// The engine's own cap under speculation (SGLang's 48 without its flag)
    /// where it would hold back a load of `concurrency`: the answer then speculates with the flag
    /// raised to the load; `None` where the flag is given or the engine sets no cap.
    /// Returns the options speculating as launched (`capped`), as the answer speculates, and
    /// the cap lifted.
    fn speculating(
        &self,
        base: ServerOptions,
        spec_opts: &crate::options::SpeculativeOptions,
        concurrency: u32,
    ) -> (ServerOptions, ServerOptions, Option<u32>) {
        let capped = ServerOptions {
            speculative: Some(spec_opts.clone()),
            ..base
        };
        let lift = crate::engine::running_cap_to_lift(&capped, concurrency);
        let with = ServerOptions {
            max_running_requests: lift.map(|_| concurrency).or(capped.max_running_requests),
            ..capped.clone()
        };
        (capped, with, lift)
    }

    /// Where the answer lifted the engine's own cap under speculation (`lift`), what the capped
    /// server (`capped`: the options as launched) gives at the load, in the answer and its words.
    fn say_running_cap(
        &self,
        a: &mut MtpAnswer,
        q: &MtpQuestion<'_>,
        capped: &ServerOptions,
        lift: Option<u32>,
        build: &crate::advise::mtp::BuildWith<'_>,
    ) -> Result<(), AdviseError> {
        let Some(cap) = lift else {
            return Ok(());
        };
        let c = crate::advise::mtp::running_cap(q, build, capped, cap)
            .map_err(|e| AdviseError::failed("mtp", e))?;
        a.sentence.push_str(&c.words(self.opts.engine));
        a.running_cap = Some(c);
        Ok(())
    }

    /// `--question p2p` on the top-ranked layout: the machine in each P2P state (`real` from the
    /// preset of the same box with working P2P where the machine lacks it,
    /// [`crate::presets::real_p2p_preset_of`]), NCCL and the custom all-reduce.
    fn answer_p2p(&self, asked: &AskedOf<'_>) -> Result<P2pAnswer, AdviseError> {
        let Some(top) = self
            .top_ranked(asked.layouts, asked.ranking)
            .map(|l| l.layout)
        else {
            return Err(AdviseError::NoLayoutRan);
        };
        let m = &self.machine;
        let real_base = m
            .profile
            .gpu_preset
            .as_deref()
            .and_then(crate::presets::real_p2p_preset_of)
            .filter(|_| m.gpu_count == 8 && m.node_count() == 1)
            .and_then(|name| crate::machine::Machine::resolve(name).ok());
        let oneshot = self.launch.engine().rules().pcie_oneshot(top.tp);
        let opts = self.opts_ranking(top);
        let mut a = crate::advise::p2p::answer(&P2pQuestion {
            machine: m,
            real_base: real_base.as_ref(),
            spec: &self.spec,
            layout: top,
            opts: &opts,
            knobs: self.knobs,
            workload: asked.workload,
            oneshot,
            observed: asked.observed,
        });
        // the layout's flags and the user's others, as the ranking's `try:` line has them
        let ranked = asked
            .ranking
            .iter()
            .find(|r| r.run.is_some())
            .map(|r| r.flags.clone())
            .unwrap_or_default();
        a.launch_flags = std::iter::once(ranked)
            .chain(self.launch.other_flags_on(&top))
            .filter(|f| !f.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(a)
    }

    /// One server of the whole box against two of half of it, each half on its own GPUs.
    fn answer_replicas(
        &self,
        workload: &Workload,
        draws: u32,
    ) -> Result<ReplicasAnswer, AdviseError> {
        let gpus = self.machine.gpu_count;
        if gpus < 2 || !gpus.is_multiple_of(2) || self.machine.node_count() > 1 {
            return Err(AdviseError::ReplicasShape {
                machine: self.machine.name().to_string(),
                gpus,
                nodes: self.machine.node_count(),
            });
        }
        let (whole, half) = (Layout::tp(gpus), Layout::tp(gpus / 2));
        let devices = self.machine.device_indices();
        let halves = [
            self.machine.with_gpus(&devices[..devices.len() / 2])?,
            self.machine.with_gpus(&devices[devices.len() / 2..])?,
        ];
        let (whole_opts, half_opts) = (self.opts_ranking(whole), self.opts_ranking(half));
        let q = ReplicasQuestion {
            whole,
            half,
            whole_opts: &whole_opts,
            half_opts: &half_opts,
            concurrency: workload.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY),
            context_tokens: workload.random_input_len + workload.random_output_len / 2,
            input_tokens: workload.random_input_len,
            knobs: self.knobs,
            comm_spread: crate::advise::comm_spread(&self.machine.profile),
            draws,
            seed: workload.seed,
            known_error: self.known_error(),
            extra_flags: self.launch.other_flags(),
        };
        let build = |l: Layout, k, r: Replica| {
            let (m, o) = match r {
                Replica::Whole => (&self.machine, &whole_opts),
                Replica::FirstHalf => (&halves[0], &half_opts),
                Replica::SecondHalf => (&halves[1], &half_opts),
            };
            crate::cost::CostModel::new(m, &self.spec, l, o, k)
                .map(|m| Box::new(m) as Box<dyn IterationModel>)
                .map_err(|e| e.to_string())
        };
        replicas_question(&q, &build).map_err(|e| AdviseError::failed("replicas", e))
    }
}
