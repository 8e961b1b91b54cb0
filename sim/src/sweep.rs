//! Sweeps: every layout × workload × concurrency, simulated in parallel (rayon). Each (layout,
//! workload) task runs its concurrencies in turn and shares one cost cache across them.

use crate::cost::IterationModel;
use crate::machine::Machine;
use crate::machine::placement::Placement;
use crate::options::ServerOptions;
use crate::serving::{CostCache, RunReport, simulate_with};
use crate::workload::Workload;
use models::Layout;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Concurrencies a sweep (and a report's lines) runs when `--max-concurrency` is not given.
pub const DEFAULT_CONCURRENCIES: [u32; 6] = [1, 8, 32, 64, 128, 256];

/// A layout to sweep: its cost model, or why it was rejected.
pub struct SweepLayout {
    pub layout: Layout,
    pub model: Result<Box<dyn IterationModel>, String>,
    /// Where it runs on the machine (`None` when it cannot be placed there).
    pub placement: Option<Placement>,
}

impl SweepLayout {
    /// `layout` with its cost model (or why it has none), placed on `machine`.
    pub fn new(
        machine: &Machine,
        layout: Layout,
        model: Result<Box<dyn IterationModel>, String>,
    ) -> SweepLayout {
        SweepLayout {
            layout,
            model,
            placement: machine.place(&layout).ok(),
        }
    }

    /// The SGLang flags that launch it (`--nnodes N` when it spans nodes); the rows of a sweep
    /// are labelled in the engine's own spelling by the scenario that ran it.
    pub fn sglang_flags(&self) -> String {
        match &self.placement {
            Some(p) => p.sglang_flags(&self.layout),
            None => self.layout.sglang_flags(),
        }
    }
}

/// One row of a sweep: a layout, a workload at one concurrency, and what the simulation says (or
/// why it could not run).
/// The schema of `sim sweep --format json` (an object with `schema_version`, `engine` and
/// `rows`; before it, a bare array of rows).
pub const SWEEP_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub layout: String,
    /// The flags that launch the layout, in the engine's own spelling ([`RunReport::flags`]).
    #[serde(alias = "sglang_flags")]
    pub flags: String,
    pub max_concurrency: Option<u32>,
    pub random_input_len: u32,
    pub random_output_len: u32,
    /// The run, when it could be simulated.
    pub run: Option<RunReport>,
    /// Why not, otherwise (layout rejected, does not fit, request too large for KV).
    pub rejected: Option<String>,
    /// GPUs of the machine the layout leaves idle (it runs as one replica on the others).
    #[serde(default)]
    pub idle_gpus: u32,
}

/// Simulates every layout × workload × concurrency. `concurrencies` replace each workload's
/// `max_concurrency` (empty = keep it). `tick` is called once per finished row (progress bars).
pub fn sweep(
    layouts: &[SweepLayout],
    opts: &ServerOptions,
    workloads: &[Workload],
    concurrencies: &[u32],
    tick: &(dyn Fn() + Sync),
) -> Vec<SweepRow> {
    let tasks: Vec<(usize, usize)> = (0..layouts.len())
        .flat_map(|l| (0..workloads.len()).map(move |w| (l, w)))
        .collect();
    let mut rows: Vec<Vec<SweepRow>> = tasks
        .par_iter()
        .map(|&(l, w)| {
            let sl = &layouts[l];
            let variants: Vec<Workload> = if concurrencies.is_empty() {
                vec![workloads[w].clone()]
            } else {
                concurrencies
                    .iter()
                    .map(|&c| Workload {
                        max_concurrency: Some(c),
                        ..workloads[w].clone()
                    })
                    .collect()
            };
            let flags = sl.sglang_flags();
            let row = |wl: &Workload, run: Option<RunReport>, rejected: Option<String>| SweepRow {
                layout: sl.layout.short_name(),
                flags: flags.clone(),
                max_concurrency: wl.max_concurrency,
                random_input_len: wl.random_input_len,
                random_output_len: wl.random_output_len,
                run: run.map(|r| RunReport {
                    flags: flags.clone(),
                    ..r
                }),
                rejected,
                idle_gpus: sl.placement.as_ref().map_or(0, |p| p.idle_gpus),
            };
            match &sl.model {
                Err(why) => variants
                    .iter()
                    .map(|wl| {
                        tick();
                        row(wl, None, Some(why.clone()))
                    })
                    .collect(),
                Ok(model) => {
                    let mut cache = CostCache::new(model.as_ref());
                    variants
                        .iter()
                        .map(|wl| {
                            let r = simulate_with(&mut cache, opts, wl);
                            tick();
                            match r {
                                Ok(run) => row(wl, Some(run), None),
                                Err(e) => row(wl, None, Some(e.to_string())),
                            }
                        })
                        .collect()
                }
            }
        })
        .collect();
    rows.iter_mut().flat_map(std::mem::take).collect()
}
