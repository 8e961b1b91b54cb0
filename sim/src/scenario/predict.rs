//! `sim predict`'s orchestration as a library function: one iteration's cost (a decode batch at a
//! context, an optional prefill chunk) on one layout or on every layout of the machine, each
//! layout with its engine's options for its own sizes, and the 80% interval of each layout's
//! steady figures, returned as plain serializable values for whichever exporter prints them.

use crate::cost::Knobs;
use crate::cost::report::{
    PREDICT_SCHEMA_VERSION, PredictOutput, PredictQuery, predict_all, predict_layout,
};
use crate::engine::{Engine, Knob, Launch};
use crate::error::SimError;
use crate::machine::Machine;
use crate::options::ServerOptions;
use crate::uncertainty::{ErrorModel, FigureKind, FigureRange, Load, Regime};
use models::{Layout, ModelSpec};
use serde::Serialize;

/// Why a prediction query cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// Nothing to cost.
    #[error(
        "--batch 0 and --prefill 0: nothing to cost; give at least one decode request or prefill token"
    )]
    Empty,
    /// A context longer than the model's positions.
    #[error("--context {context}: {model} supports at most {max} tokens (max_position_embeddings)")]
    ModelContext {
        context: u32,
        model: String,
        max: u64,
    },
    /// A context longer than the server's own limit: it refuses such a request, and its
    /// `req_to_token` table is sized for the limit.
    #[error(
        "--context {context} is above the server's context length {limit} ({flags}): the server refuses such a request; raise it or lower --context"
    )]
    ServerContext {
        context: u32,
        limit: u32,
        /// Each engine's context-length flag, `a / b`.
        flags: String,
    },
    /// The one layout asked for could not be built.
    #[error(transparent)]
    Layout(#[from] SimError),
}

/// What one prediction takes: the machine with the layout placed on it, the model, the
/// server's launch and its options (with the notes reading them gave), and the query.
pub struct PredictInputs<'a> {
    pub machine: &'a Machine,
    pub model: &'a ModelSpec,
    pub launch: &'a Launch,
    pub opts: &'a ServerOptions,
    /// The notes the options came with (the interval's regime weighs them).
    pub notes: &'a [String],
    /// One layout, or `None` for every layout of the machine's GPUs.
    pub layout: Option<Layout>,
    pub query: PredictQuery,
    pub knobs: Knobs,
}

/// `sim predict`'s answer with the 80% interval of each layout's steady figures.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    #[serde(flatten)]
    pub out: PredictOutput,
    /// Per layout that runs: steady output tok/s and ms per token with their 80% intervals
    /// (`validation/error-model.json`).
    pub ranges: Vec<LayoutRanges>,
}

/// One layout's steady figures with their intervals.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutRanges {
    pub layout: String,
    pub ranges: Vec<FigureRange>,
}

/// Refuses a query the model and the server cannot answer: nothing to cost, or a context beyond
/// the model's or the server's limit.
pub fn check_query(
    q: &PredictQuery,
    model: &ModelSpec,
    opts: &ServerOptions,
) -> Result<(), PredictError> {
    if q.batch == 0 && q.prefill_tokens == 0 {
        return Err(PredictError::Empty);
    }
    if u64::from(q.context_tokens) > model.max_context_tokens {
        return Err(PredictError::ModelContext {
            context: q.context_tokens,
            model: model.name.clone(),
            max: model.max_context_tokens,
        });
    }
    if let Some(limit) = opts.context_length.filter(|l| q.context_tokens > *l) {
        let flags: Vec<&str> = Engine::ALL
            .iter()
            .map(|e| e.flag(Knob::ContextLength))
            .collect();
        return Err(PredictError::ServerContext {
            context: q.context_tokens,
            limit,
            flags: flags.join(" / "),
        });
    }
    Ok(())
}

/// Predicts the query on the layout asked for (or every layout, each with the launch's options
/// for its own sizes, those of `opts` where they cannot be had), best first, with each layout's
/// steady figures' 80% intervals.
pub fn predict(p: &PredictInputs<'_>) -> Result<Prediction, PredictError> {
    check_query(&p.query, p.model, p.opts)?;
    let (machine, model, q) = (p.machine, p.model, &p.query);
    let layouts = match p.layout {
        None => {
            // each layout with its engine's defaults for its own sizes (validated with the first)
            let opts_for = |l: &Layout| {
                p.launch
                    .options(l, machine, model)
                    .map_or_else(|_| p.opts.clone(), |(o, _)| o)
            };
            predict_all(machine, model, &opts_for, p.knobs, q)
        }
        Some(l) => vec![predict_layout(machine, model, l, p.opts, p.knobs, q)?],
    };
    let out = PredictOutput {
        schema_version: PREDICT_SCHEMA_VERSION,
        engine: p.opts.engine,
        machine: machine.name().to_string(),
        gpu: machine.gpu.display_name.clone(),
        gpu_count: machine.gpu_count,
        model: model.name.clone(),
        query: p.query,
        layouts,
        machine_notes: machine.notes().to_vec(),
        bf16_modules: models::spec::describe_bf16_modules(model),
    };
    let load = Load {
        family: "llm_decode_bench",
        concurrency: q.batch,
        context_tokens: q.context_tokens,
    };
    let regime = Regime::of(machine, model, p.opts, p.layout, load, p.notes);
    let ranges = layout_ranges(&out, &regime);
    Ok(Prediction { out, ranges })
}

/// Each layout's steady-decode throughput and TPOT with its 80% interval.
fn layout_ranges(out: &PredictOutput, regime: &Regime) -> Vec<LayoutRanges> {
    out.layouts
        .iter()
        .filter_map(|p| {
            let st = p.steady.as_ref()?;
            Some(LayoutRanges {
                layout: p.layout.clone(),
                ranges: ErrorModel::builtin().figure_ranges(
                    regime,
                    &[
                        (
                            "output_tok_per_s",
                            st.output_tok_per_s,
                            FigureKind::Throughput,
                        ),
                        ("tpot_ms", st.cycle_ms, FigureKind::Latency),
                    ],
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(batch: u32, context_tokens: u32, prefill_tokens: u32) -> PredictQuery {
        PredictQuery {
            batch,
            context_tokens,
            prefill_tokens,
        }
    }

    #[test]
    fn a_query_beyond_a_limit_is_refused_and_one_within_them_is_not() {
        let model = ModelSpec::resolve("glm-5-nvfp4").unwrap();
        let opts = ServerOptions {
            context_length: Some(8192),
            ..ServerOptions::default()
        };
        assert!(matches!(
            check_query(&query(0, 100, 0), &model, &opts),
            Err(PredictError::Empty)
        ));
        let server = check_query(&query(8, 8193, 0), &model, &opts).unwrap_err();
        assert!(
            server
                .to_string()
                .contains("(--context-length / --max-model-len)"),
            "{server}"
        );
        let over_model = model.max_context_tokens as u32 + 1;
        let no_limit = ServerOptions::default();
        assert!(matches!(
            check_query(&query(8, over_model, 0), &model, &no_limit),
            Err(PredictError::ModelContext { .. })
        ));
        assert!(check_query(&query(8, 8192, 0), &model, &opts).is_ok());
    }
}
