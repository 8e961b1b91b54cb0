//! The KV cache dtype a record's run cached in, where its launch does not name one, from the
//! KV pool its server reported at start-up ([`crate::records::EngineInfo::kv_cache_tokens`]).
//!
//! A page that lists its launch through a wrapper script (`run-kimi26-vllm`, whose
//! `KV_CACHE_DTYPE` default is `fp8`: local-inference-lab/vllm @3ff722e55
//! `scripts/run-kimi26-vllm` lines 42–43) often leaves the cache dtype out, and the engine's
//! own default (`auto`: the checkpoint's, bf16 for Kimi-K2.6) halves the pool and doubles the
//! bytes every decode step reads. The pool the server printed settles it: the memory left for
//! the cache is fixed by the card, `--gpu-memory-utilization` and the weights, so an fp8 cache
//! holds twice the tokens of a bf16 one. The dtype whose plan lands within [`MATCH`] of the
//! stated pool is taken when the other lands [`MISS`] or further from it; otherwise nothing is
//! guessed and the prediction says so.
//!
//! Where the launch does name a dtype, the stated pool checks the memory plan instead: a plan
//! off by more than [`MATCH`] is said beside the prediction (weights, activation peak or CUDA
//! graphs not as planned), never corrected.

use crate::options::ServerOptions;
use models::KvDtype;

/// How far (as a ratio either way) a dtype's planned pool may sit from the stated one and still
/// name the dtype. The plans of the records that name their dtype and state their pool sit at
/// 0.98–1.21 of it (the Kimi-K2.6 v4 and v7 pages, Kimi-K2.6 TP16, GLM-5.1 v2; the EAGLE-3
/// runs highest, the draft's own memory under-planned: the test
/// `stated_pools_check_the_memory_plan`), and a bf16 plan is half an fp8 one: 1.25 takes the
/// first and leaves the second at least 1.6 off.
pub const MATCH: f64 = 1.25;
/// How far the other dtype's plan must sit from the stated pool for the match to decide.
pub const MISS: f64 = 1.5;

/// The KV dtypes a pool can name.
const DTYPES: [KvDtype; 2] = [KvDtype::Bf16, KvDtype::Fp8];

fn dtype_name(d: KvDtype) -> &'static str {
    match d {
        KvDtype::Bf16 => "bf16",
        KvDtype::Fp8 => "fp8",
    }
}

/// |ln(plan / stated)|.
fn distance(plan: u64, stated: u64) -> f64 {
    (plan.max(1) as f64 / stated.max(1) as f64).ln().abs()
}

/// [`pin_kv_dtype`] for record `e` on `machine` of `spec`, where it states a pool; the note.
pub(super) fn from_record(
    e: &crate::records::Expressed,
    machine: &crate::machine::Machine,
    spec: &models::ModelSpec,
    server: &mut ServerOptions,
) -> Option<String> {
    let stated = e.stated_kv_tokens?;
    let plan_tokens = |o: &ServerOptions| {
        use crate::cost::IterationModel;
        crate::cost::ServedModel::new(machine, spec, e.layout, o, crate::cost::Knobs::default())
            .ok()
            .map(|m| m.memory().kv_tokens)
    };
    let default = crate::cost::memory::kv_dtype(spec, server);
    pin_kv_dtype(stated, server, default, plan_tokens)
}

/// Set `server`'s KV dtype from a `stated` pool where the launch names none (the engine then
/// caches in `default`, the checkpoint's), by the pools `plan_tokens` gives for each dtype (the
/// memory plan's `kv_tokens`, counted as the engine prints it); the note to say, if any.
pub(super) fn pin_kv_dtype(
    stated: u64,
    server: &mut ServerOptions,
    default: KvDtype,
    plan_tokens: impl Fn(&ServerOptions) -> Option<u64>,
) -> Option<String> {
    if let Some(d) = server.kv_cache_dtype {
        let plan = plan_tokens(server)?;
        return (distance(plan, stated) > MATCH.ln()).then(|| {
            format!(
                "the source's KV pool, {stated} tokens, is {:.2}× the {plan} the memory plan gives a {} cache: weights, activation peak or CUDA graphs did not take what is planned (not corrected)",
                stated as f64 / plan.max(1) as f64,
                dtype_name(d)
            )
        });
    }
    let plans: Vec<(KvDtype, u64)> = DTYPES
        .iter()
        .filter_map(|&d| {
            let mut o = server.clone();
            o.kv_cache_dtype = Some(d);
            plan_tokens(&o).map(|p| (d, p))
        })
        .collect();
    let listed = plans
        .iter()
        .map(|(d, p)| format!("{} {p}", dtype_name(*d)))
        .collect::<Vec<_>>()
        .join(", ");
    let best = plans
        .iter()
        .min_by(|a, b| distance(a.1, stated).total_cmp(&distance(b.1, stated)))?;
    let decided = distance(best.1, stated) <= MATCH.ln()
        && plans
            .iter()
            .filter(|p| p.0 != best.0)
            .all(|p| distance(p.1, stated) >= MISS.ln());
    if !decided {
        return Some(format!(
            "the source's KV pool, {stated} tokens, matches no KV dtype's plan ({listed}): the engine's default dtype kept"
        ));
    }
    if best.0 == default {
        // the engine's default already caches in it
        return None;
    }
    server.kv_cache_dtype = Some(best.0);
    Some(format!(
        "KV cache {}: the launch names no --kv-cache-dtype, and the source's KV pool, {stated} tokens, is what that dtype plans (planned: {listed})",
        dtype_name(best.0)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan holding `bf16_tokens` in a bf16 cache and twice that in fp8.
    fn plan(bf16_tokens: u64) -> impl Fn(&ServerOptions) -> Option<u64> {
        move |o: &ServerOptions| {
            Some(match o.kv_cache_dtype {
                Some(KvDtype::Fp8) => 2 * bf16_tokens,
                _ => bf16_tokens,
            })
        }
    }

    proptest::proptest! {
        /// Whatever the pool, a dtype is only ever taken where its plan is within MATCH of it
        /// and the other's is MISS off; a named dtype is never changed.
        #[test]
        fn a_dtype_is_taken_only_where_its_plan_holds_the_pool(
            bf16 in 1_000u64..10_000_000,
            stated in 1u64..40_000_000,
            named in proptest::bool::ANY,
        ) {
            let mut o = ServerOptions {
                kv_cache_dtype: named.then_some(KvDtype::Bf16),
                ..ServerOptions::default()
            };
            let _ = pin_kv_dtype(stated, &mut o, KvDtype::Bf16, plan(bf16));
            match o.kv_cache_dtype {
                Some(KvDtype::Fp8) => {
                    proptest::prop_assert!(!named);
                    proptest::prop_assert!(distance(2 * bf16, stated) <= MATCH.ln());
                    proptest::prop_assert!(distance(bf16, stated) >= MISS.ln());
                }
                Some(KvDtype::Bf16) => proptest::prop_assert!(named),
                None => proptest::prop_assert!(!named),
            }
        }
    }

    #[test]
    fn a_pool_twice_the_default_plan_names_fp8() {
        let mut o = ServerOptions::default();
        let note = pin_kv_dtype(3_929_600, &mut o, KvDtype::Bf16, plan(1_900_000)).unwrap();
        assert_eq!(o.kv_cache_dtype, Some(KvDtype::Fp8));
        assert!(note.contains("KV cache fp8"), "{note}");
    }

    #[test]
    fn a_pool_the_default_plans_changes_nothing() {
        let mut o = ServerOptions::default();
        assert_eq!(
            pin_kv_dtype(1_950_000, &mut o, KvDtype::Bf16, plan(1_900_000)),
            None
        );
        assert_eq!(o.kv_cache_dtype, None);
    }

    #[test]
    fn a_pool_between_the_plans_guesses_nothing() {
        let mut o = ServerOptions::default();
        let note = pin_kv_dtype(2_700_000, &mut o, KvDtype::Bf16, plan(1_900_000)).unwrap();
        assert_eq!(o.kv_cache_dtype, None);
        assert!(note.contains("matches no KV dtype"), "{note}");
    }

    #[test]
    fn a_named_dtype_is_kept_and_a_far_pool_is_said() {
        let mut o = ServerOptions {
            kv_cache_dtype: Some(KvDtype::Bf16),
            ..ServerOptions::default()
        };
        let note = pin_kv_dtype(3_929_600, &mut o, KvDtype::Bf16, plan(1_900_000)).unwrap();
        assert_eq!(o.kv_cache_dtype, Some(KvDtype::Bf16));
        assert!(note.contains("not corrected"), "{note}");
        assert_eq!(
            pin_kv_dtype(2_000_000, &mut o, KvDtype::Bf16, plan(1_900_000)),
            None
        );
    }
}
