//! [`ServedModel`]: one layout as the server runs it, the one constructor every caller builds
//! its models through. With speculation off it costs forward passes ([`CostModel`]); with
//! `--speculative-*` a decode iteration is a speculative step over a target and a draft
//! ([`SpeculativeModel`]). Which one is decided here, from the options, and nowhere else.

use super::batch_stats::BatchStats;
use super::spec::SpecPlan;
use super::speculative::SpeculativeModel;
use super::steady::{ContextHolding, SteadyDecode, logged_step_s, steady_decode_with};
use super::{CostModel, IterationBatch, IterationCost, IterationModel, Knobs, MemoryPlan};
use crate::error::Result;
use crate::machine::Machine;
use crate::options::ServerOptions;
use models::{Layout, ModelSpec};

/// A costed layout: forward passes, or speculative decoding over them.
#[derive(Debug, Clone)]
pub enum ServedModel {
    // boxed: a cost model is a few kB, and speculation holds two
    Forward(Box<CostModel>),
    Speculative(Box<SpeculativeModel>),
}

impl ServedModel {
    /// `model` under `layout` on `machine` with SGLang `opts` and calibration `knobs`:
    /// speculative where `opts.speculative` is set. Fails as [`CostModel::new`] and
    /// [`SpeculativeModel::new`] do.
    pub fn new(
        machine: &Machine,
        model: &ModelSpec,
        layout: Layout,
        opts: &ServerOptions,
        knobs: Knobs,
    ) -> Result<ServedModel> {
        Ok(match opts.speculative {
            None => Self::Forward(Box::new(CostModel::new(
                machine, model, layout, opts, knobs,
            )?)),
            Some(_) => Self::Speculative(Box::new(SpeculativeModel::new(
                machine, model, layout, opts, knobs,
            )?)),
        })
    }

    /// The model whose forward passes serve (verify, under speculation): layout, memory plan,
    /// options, knobs, placement and the notes on them.
    pub fn target(&self) -> &CostModel {
        match self {
            Self::Forward(m) => m,
            Self::Speculative(s) => s.target(),
        }
    }

    /// The speculative model, when speculation is on.
    pub fn speculative(&self) -> Option<&SpeculativeModel> {
        match self {
            Self::Forward(_) => None,
            Self::Speculative(s) => Some(s),
        }
    }

    /// The speculative plan in force.
    pub fn spec_plan(&self) -> Option<&SpecPlan> {
        self.speculative().map(SpeculativeModel::plan)
    }

    /// Cost of an iteration already summed into [`BatchStats`].
    pub fn cost_stats(&self, st: &BatchStats) -> IterationCost {
        match self {
            Self::Forward(m) => m.cost_stats(st),
            Self::Speculative(s) => s.cost_stats(st),
        }
    }

    /// Steady decode of `concurrency` requests each at `context_tokens` tokens of context.
    pub fn steady_decode(&self, concurrency: u32, context_tokens: u32) -> SteadyDecode {
        self.steady_decode_held(concurrency, context_tokens, ContextHolding::Own)
    }

    /// [`Self::steady_decode`] with the context held as `holding` says.
    pub fn steady_decode_held(
        &self,
        concurrency: u32,
        context_tokens: u32,
        holding: ContextHolding,
    ) -> SteadyDecode {
        steady_decode_with(self.target(), concurrency, context_tokens, holding, &|st| {
            self.cost_stats(st)
        })
    }

    /// Requests the pools hold at once at `context_tokens` held as `holding`.
    pub fn kv_capacity(&self, context_tokens: u32, holding: ContextHolding) -> u64 {
        self.target().kv_capacity(context_tokens, holding)
    }

    /// The decode step a server log reports ([`logged_step_s`]).
    pub fn logged_step_s(&self, running: u32, context_tokens: u32) -> f64 {
        logged_step_s(self, running, context_tokens)
    }
}

impl IterationModel for ServedModel {
    fn layout(&self) -> Layout {
        self.target().layout()
    }

    fn iteration(&self, batch: &IterationBatch) -> IterationCost {
        match self {
            Self::Forward(m) => m.cost(batch),
            Self::Speculative(s) => s.cost(batch),
        }
    }

    fn memory(&self) -> &MemoryPlan {
        self.target().memory()
    }

    fn tokens_per_decode_step(&self) -> f64 {
        self.spec_plan().map_or(1.0, |p| p.accept_length)
    }
}
