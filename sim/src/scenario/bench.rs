//! `sim run`'s orchestration as a library function: one bench_serving run of a workload on a
//! layout of the [`Scenario`] — its engines (one, or several behind SGLang's router), the
//! replay, the launch flags the run stands for, and the notes and warnings its reader needs —
//! returned as plain serializable values for whichever exporter prints them.

use super::Scenario;
use crate::cost::IterationModel;
use crate::error::SimError;
use crate::serving::{RunReport, ServingError};
use crate::uncertainty::{ErrorModel, FigureRange, Load, run_figures};
use crate::workload::Workload;
use models::Layout;

/// Why a bench_serving run could not be simulated.
#[derive(Debug, thiserror::Error)]
pub enum BenchRunError {
    /// One of the engines behind the router could not be built on its GPUs.
    #[error("building the engines behind the router")]
    Replicas(#[source] SimError),
    /// The layout's engine could not be built.
    #[error(transparent)]
    Engine(#[from] SimError),
    /// The replay refused the workload.
    #[error("simulating {layout}")]
    Simulation {
        layout: String,
        #[source]
        source: ServingError,
    },
}

/// One simulated bench_serving run and what its reader is told beside the figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchRun {
    /// The run, with the launch flags of its layout in the engine's spelling.
    pub run: RunReport,
    /// GPUs of the machine the layout leaves idle.
    pub idle_gpus: u32,
    /// What the prediction assumed (the speculative draft's plan).
    pub notes: Vec<String>,
    /// What the workload asks that the server may not give (a KV pool it outgrows).
    pub warnings: Vec<String>,
    /// Each throughput and mean latency with its 80% interval (`validation/error-model.json`).
    pub ranges: Vec<FigureRange>,
}

impl Scenario {
    /// Simulates `workload` against `layout` served by `replicas` engines (more than one: SGLang's
    /// `--dp-size` without DP attention, each on its own GPUs behind the router), with the
    /// scenario's knobs.
    pub fn run_bench(
        &self,
        layout: Layout,
        workload: &Workload,
        replicas: u32,
    ) -> Result<BenchRun, BenchRunError> {
        let engines = if replicas > 1 {
            (0..replicas)
                .map(|r| self.replica_model(layout, self.knobs, r))
                .collect::<Result<Vec<_>, _>>()
                .map_err(BenchRunError::Replicas)?
        } else {
            vec![self.model(layout, self.knobs)?]
        };
        let model = &engines[0];
        let opts = self.opts_for(layout);
        let mut run = if replicas > 1 {
            let refs: Vec<&dyn IterationModel> = engines.iter().map(|m| m as _).collect();
            crate::serving::simulate_replicas(&refs, &opts, workload)
        } else {
            crate::serving::simulate(model, &opts, workload)
        }
        .map_err(|source| BenchRunError::Simulation {
            layout: layout.short_name(),
            source,
        })?;
        let rules = opts.engine.rules();
        let placement = model.target().placement();
        run.flags = rules.launch_flags(&layout, opts.decode_context_parallel, placement.nodes);
        if replicas > 1 {
            run.flags = format!("{} {}", run.flags, rules.replicas_flag(replicas));
        }
        let warnings = crate::memory_fit::workload_kv_warning(
            &self.spec,
            model.memory(),
            &layout,
            &opts,
            workload,
        );
        let regime = self.regime(
            &opts,
            Some(layout),
            Load {
                family: "bench_serving",
                concurrency: workload.max_concurrency.unwrap_or(u32::MAX),
                context_tokens: workload.random_input_len,
            },
        );
        Ok(BenchRun {
            ranges: ErrorModel::builtin().figure_ranges(&regime, &run_figures(&run)),
            run,
            idle_gpus: placement.idle_gpus,
            notes: model
                .spec_plan()
                .map(|p| p.to_string())
                .into_iter()
                .collect(),
            warnings: warnings.into_iter().collect(),
        })
    }
}
