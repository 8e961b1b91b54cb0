//! Which layouts of a report can run: the one place `sim report` decides fit. Every chart, the
//! ranking, the EP verdict, the speculation curve and the list of rejected layouts read the
//! [`Fit`] this module hands out, so they cannot disagree with each other.
//!
//! The decision uses what the report's simulation already computed per layout: whether the layout
//! is possible for the model, whether its cost model could be built, and its memory plan. A layout
//! fits when SGLang's static budget holds its weights with room for a KV pool (the plan's own
//! verdict) *and* weights + KV pool + the runtime reserves SGLang holds beside them stay within the
//! card: a layout that needs more than the card would run out of memory at start or under load,
//! and drawing its bar above the card's line beside a "fits" would contradict itself.

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
        Some(p) if !p.fits => return Fit::NoMemory(over_budget(p)),
        Some(p) if p.free_after_reserves_bytes < 0 => return Fit::NoMemory(over_card(p)),
        _ => {}
    }
    match model_error {
        Some(why) => Fit::Impossible(why.to_owned()),
        None => Fit::Fits,
    }
}

/// `--mem-fraction-static` as the plan applied it (its budget over the memory free before load).
fn fraction(p: &MemoryPlan) -> f64 {
    p.static_budget_bytes as f64 / (p.available_before_load_bytes.max(1)) as f64
}

fn over_budget(p: &MemoryPlan) -> String {
    let (w, budget) = (
        p.weight_bytes_per_gpu as f64 / GB,
        p.static_budget_bytes as f64 / GB,
    );
    if p.weight_bytes_per_gpu >= p.static_budget_bytes {
        format!(
            "needs {w:.1} GB of weights per GPU, over the static budget of {budget:.1} GB \
             (--mem-fraction-static {:.3} of the {:.1} GB free before loading)",
            fraction(p),
            p.available_before_load_bytes as f64 / GB
        )
    } else {
        format!(
            "its {w:.1} GB of weights per GPU leave {:.2} GB of the {budget:.1} GB static budget \
             (--mem-fraction-static {:.3}): no room for one page of KV cache",
            budget - w,
            fraction(p)
        )
    }
}

fn over_card(p: &MemoryPlan) -> String {
    let (w, kv, r) = (
        p.weight_bytes_per_gpu as f64 / GB,
        p.kv_pool_bytes_per_gpu as f64 / GB,
        p.reserve_bytes_per_gpu as f64 / GB,
    );
    format!(
        "needs {:.1} GB per GPU (weights {w:.1} + KV pool {kv:.1} + runtime reserves {r:.1}) on a \
         {:.1} GB card: the {:.1} GB left beside the static budget (--mem-fraction-static {:.3}) \
         cannot hold the reserves",
        w + kv + r,
        p.gpu_memory_bytes as f64 / GB,
        (p.available_before_load_bytes
            .saturating_sub(p.static_budget_bytes)) as f64
            / GB,
        fraction(p)
    )
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
            weight_bytes_per_gpu: b(weights_gb),
            reserve_bytes_per_gpu: b(reserve_gb),
            kv_pool_bytes_per_gpu: b(kv_gb),
            kv_tokens: if fits { 1000 } else { 0 },
            gpu_memory_bytes: card,
            fits,
            shortfall_bytes: b(weights_gb).saturating_sub(budget),
            available_before_load_bytes: available,
            static_budget_bytes: budget,
            reserves: Default::default(),
            kv_tokens_by_memory: 0,
            max_running_requests: 0,
            context_len: 0,
            free_after_reserves_bytes: card as i64 - b(weights_gb + kv_gb + reserve_gb) as i64,
            notes: Vec::new(),
        }
    }

    #[test]
    fn fits_only_within_budget_and_card() {
        assert_eq!(
            decide(None, None, Some(&plan(58.8, 26.8, 6.0, true))),
            Fit::Fits
        );
        // The TP8+DPA: within the budget, but 111 GB on a 102.6 GB card.
        let f = decide(None, None, Some(&plan(80.8, 4.9, 25.7, true)));
        let why = f.why().unwrap();
        assert!(matches!(f, Fit::NoMemory(_)), "{f:?}");
        assert!(
            why.contains("111.4 GB") && why.contains("102.6 GB card"),
            "{why}"
        );
        assert!(why.contains("--mem-fraction-static 0.848"), "{why}");
        let f = decide(None, None, Some(&plan(120.0, 0.0, 3.0, false)));
        let why = f.why().unwrap();
        assert!(
            why.contains("120.0 GB of weights") && why.contains("85.7 GB"),
            "{why}"
        );
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
