//! Which layouts of a report can run: the one place `sim report` decides fit. Every chart, the
//! ranking, the EP verdict, the speculation curve and the list of rejected layouts read the
//! [`Fit`] this module hands out, so they cannot disagree with each other.
//!
//! The decision uses what the report's simulation already computed per layout: whether the layout
//! is possible for the model, whether its cost model could be built, and its memory plan, whose
//! own verdict (`MemoryPlan::fits`, the one `predict`, `advise`, `sweep` and `run` use, each layout
//! with its own SGLang defaults: `sim::memory_fit::layout_options`) decides. A plan that fits but leaves
//! too little beside the static budget for SGLang's reserves carries that warning in its notes, as
//! it does in every other command; it is not a second, report-only verdict.

use crate::cost::MemoryPlan;

const GB: f64 = 1e9;

/// Whether a layout runs on the machine, and why not.
#[derive(Debug, Clone, PartialEq)]
pub enum Fit {
    /// It fits and was simulated.
    Fits,
    /// Not a layout of this model (heads or experts do not divide, a stage has no layer, …).
    Impossible(String),
    /// It does not fit in memory: the budget against the need, in words.
    NoMemory(String),
}

impl Fit {
    /// `true` for [`Fit::Fits`].
    pub fn fits(&self) -> bool {
        matches!(self, Fit::Fits)
    }

    /// Why it cannot run, if so.
    pub fn why(&self) -> Option<&str> {
        match self {
            Fit::Fits => None,
            Fit::Impossible(w) | Fit::NoMemory(w) => Some(w),
        }
    }
}

/// The fit of one layout from the simulation's findings: `impossible` (the enumeration's reason),
/// `model_error` (why its cost model could not be built) and its memory plan (`None` when the
/// layout is impossible).
pub fn decide(
    impossible: Option<&str>,
    model_error: Option<&str>,
    memory: Option<&MemoryPlan>,
) -> Fit {
    if let Some(why) = impossible {
        return Fit::Impossible(why.to_owned());
    }
    match memory {
        // the cost model's own refusal, word for word what every other command prints
        Some(p) if !p.fits => {
            return Fit::NoMemory(model_error.map_or_else(|| over_budget(p), str::to_owned));
        }
        _ => {}
    }
    match model_error {
        Some(why) => Fit::Impossible(why.to_owned()),
        None => Fit::Fits,
    }
}

/// `--mem-fraction-static` (vLLM: `--gpu-memory-utilization`) as the plan applied it.
fn fraction(p: &MemoryPlan) -> f64 {
    crate::cost::memory::shown_fraction(p.mem_fraction_static)
}

fn over_budget(p: &MemoryPlan) -> String {
    let (w, budget) = (
        p.weight_bytes_per_gpu as f64 / GB,
        p.static_budget_bytes as f64 / GB,
    );
    if p.weight_bytes_per_gpu >= p.static_budget_bytes {
        format!(
            "needs {w:.1} GB of weights per GPU, over the static budget of {budget:.1} GB \
             ({} {} of the {:.1} GB free before loading)",
            p.fraction_flag(),
            fraction(p),
            p.available_before_load_bytes as f64 / GB
        )
    } else {
        format!(
            "its {w:.1} GB of weights per GPU leave {:.2} GB of the {budget:.1} GB static budget \
             ({} {}): no room for one page of KV cache",
            budget - w,
            p.fraction_flag(),
            fraction(p)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(weights_gb: f64, kv_gb: f64, reserve_gb: f64, fits: bool) -> MemoryPlan {
        let b = |g: f64| (g * GB) as u64;
        let card = b(102.6);
        let available = card - b(1.57);
        let budget = (0.848 * available as f64) as u64;
        MemoryPlan {
            engine: crate::options::Engine::Sglang,
            weight_bytes_per_gpu: b(weights_gb),
            reserve_bytes_per_gpu: b(reserve_gb),
            kv_pool_bytes_per_gpu: b(kv_gb),
            kv_tokens: if fits { 1000 } else { 0 },
            kv_block_tokens: 1,
            gpu_memory_bytes: card,
            fits,
            shortfall_bytes: b(weights_gb).saturating_sub(budget),
            available_before_load_bytes: available,
            static_budget_bytes: budget,
            mem_fraction_static: 0.848,
            reserves: Default::default(),
            kv_tokens_by_memory: 0,
            max_running_requests: 0,
            context_len: 0,
            free_after_reserves_bytes: card as i64 - b(weights_gb + kv_gb + reserve_gb) as i64,
            notes: Vec::new(),
            kv_cache_given_bytes: None,
            ..MemoryPlan::default()
        }
    }

    #[test]
    fn fits_only_within_budget_and_card() {
        assert_eq!(
            decide(None, None, Some(&plan(58.8, 26.8, 6.0, true))),
            Fit::Fits
        );
        // Within the budget but short of the reserves beside it: the plan's verdict (fits, with
        // its warning note), as in every other command.
        assert_eq!(
            decide(None, None, Some(&plan(80.8, 4.9, 25.7, true))),
            Fit::Fits
        );
        let f = decide(None, None, Some(&plan(120.0, 0.0, 3.0, false)));
        let why = f.why().unwrap();
        assert!(
            why.contains("120.0 GB of weights") && why.contains("85.7 GB"),
            "{why}"
        );
        assert!(why.contains("--mem-fraction-static 0.848"), "{why}");
    }

    #[test]
    fn impossible_before_memory_and_model_errors_last() {
        let p = plan(58.8, 26.8, 6.0, true);
        assert_eq!(
            decide(Some("tp 3 does not divide 64 heads"), None, Some(&p)),
            Fit::Impossible("tp 3 does not divide 64 heads".into())
        );
        assert!(matches!(
            decide(None, Some("bad"), Some(&p)),
            Fit::Impossible(_)
        ));
    }
}
