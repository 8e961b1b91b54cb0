//! A record's stated KV pool (`engine.kv_cache_tokens`, the server's `GPU KV cache size: N
//! tokens`) names the KV dtype its launch leaves out, and checks the memory plan where the
//! launch names it; the rtx6kpro run scripts' upper-case variables are read as the flags they
//! pass (`GPU_MEMORY_UTILIZATION=0.94`).

use crate::common;
use sim::records::{RecordSet, express};
use sim::scoreboard::{ScoreOptions, score};

/// The spec file's record `id`.
fn spec_record(id: &str) -> sim::records::Record {
    let set = RecordSet::load(&common::validation_file("spec-records.json")).unwrap();
    set.records.into_iter().find(|r| r.id == id).unwrap()
}

fn comparisons(file: &str) -> Vec<sim::scoreboard::RecordComparison> {
    let set = RecordSet::load(&common::validation_file(file)).expect("the file parses");
    score(&set, &ScoreOptions::default()).comparisons
}

/// The Kimi-K2.6 v3 page's records launch through `run-kimi26-vllm` (whose `KV_CACHE_DTYPE`
/// default is fp8) and name no dtype themselves; the page's KV table (3,929,600 tokens at DCP 8,
/// 0.94 of the card) is what an fp8 cache plans: the script's default and the pool agree, so no
/// note.
#[test]
fn the_run_scripts_fp8_default_and_the_stated_pool_agree() {
    let r = spec_record("rtx-kimik26-v3-tp8-dcp8-mtp0-ctx64k-c32");
    assert_eq!(
        r.engine.kv_cache_tokens.as_ref().and_then(|w| w.get()),
        Some(3_929_600)
    );
    let e = express(&r).unwrap();
    assert_eq!(e.knobs.kv_cache_dtype, Some(models::KvDtype::Fp8));
    assert_eq!(
        e.knobs.memory_fraction.map(|m| m.1),
        Some(0.94),
        "GPU_MEMORY_UTILIZATION=0.94 is read"
    );
    let c = comparisons("spec-records.json")
        .into_iter()
        .find(|c| c.id == r.id && c.primary)
        .unwrap();
    assert!(
        !c.notes.iter().any(|n| n.contains("KV pool")),
        "{:?}",
        c.notes
    );
}

/// The same run written as a bare `vllm serve` line without `--kv-cache-dtype`: the stated
/// pool, twice what vLLM's bf16 default plans, names an fp8 cache, and the prediction says why
/// (and is the script-launched record's).
#[test]
fn a_pool_twice_the_bf16_plan_names_an_fp8_cache() {
    let mut r = spec_record("rtx-kimik26-v3-tp8-dcp8-mtp0-ctx64k-c32");
    r.engine.flags = Some(
        "vllm serve moonshotai/Kimi-K2.6 --tensor-parallel-size 8 --decode-context-parallel-size 8 \
         --gpu-memory-utilization 0.94 --max-model-len 262144 --max-num-batched-tokens 8192 \
         --max-num-seqs 128 --enable-prefix-caching VLLM_ENABLE_PCIE_ALLREDUCE=1 \
         VLLM_PCIE_ALLREDUCE_BACKEND=cpp"
            .into(),
    );
    assert_eq!(express(&r).unwrap().knobs.kv_cache_dtype, None);
    let bare = RecordSet {
        records: vec![r],
        ..RecordSet::load(&common::validation_file("spec-records.json")).unwrap()
    };
    let c = score(&bare, &ScoreOptions::default()).comparisons;
    let c = c.iter().find(|c| c.primary).unwrap();
    assert!(
        c.notes.iter().any(|n| n.starts_with("KV cache fp8")),
        "{:?}",
        c.notes
    );
    let scripted = comparisons("spec-records.json")
        .into_iter()
        .find(|x| x.id == c.id && x.primary)
        .unwrap();
    assert!(
        (c.predicted / scripted.predicted - 1.0).abs() < 0.02,
        "{} vs {}",
        c.predicted,
        scripted.predicted
    );
}

/// Where the launch names its dtype and the source states its pool, the plan is within the
/// match band (no "not corrected" note): the dev set's Kimi-K2.6 v4 runs, the further file's
/// Kimi-K2.6 TP16 and GLM-5.1 v2 runs.
#[test]
fn stated_pools_check_the_memory_plan() {
    for file in ["public-records.json", "further-records.json"] {
        let cs = comparisons(file);
        let stated = RecordSet::load(&common::validation_file(file))
            .unwrap()
            .records
            .iter()
            .filter(|r| r.engine.kv_cache_tokens.is_some())
            .count();
        assert!(stated >= 18, "{file}: {stated} records state a pool");
        for c in cs.iter().filter(|c| c.primary) {
            assert!(
                !c.notes.iter().any(|n| n.contains("not corrected")),
                "{}: {:?}",
                c.id,
                c.notes
            );
        }
    }
}

/// A pool between the two plans is no evidence: the engine's default stays and the prediction
/// says the pool matched neither (the crash-fix smoke's launch shows neither the dtype nor the
/// memory fraction).
#[test]
fn a_pool_that_matches_neither_plan_guesses_nothing() {
    let c = comparisons("first-contact-2-records.json")
        .into_iter()
        .find(|c| c.id == "rtx-kimik26-fp8draft-crashfix-tp8-dcp8-mtp3-ctx0-c1" && c.primary)
        .unwrap();
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("matches no KV dtype's plan")),
        "{:?}",
        c.notes
    );
}

/// A pool that is no whole number, or an empty one, is said and not used.
#[test]
fn an_unreadable_or_empty_pool_is_said_and_not_used() {
    let base = spec_record("rtx-kimik26-v7-tp8-dcp1-mtp0-ctx0-c1");
    for (value, said) in [
        (sim::records::Whole::Unreadable("abc".into()), "'abc'"),
        (sim::records::Whole::Stated(0), "empty pool"),
    ] {
        let mut r = base.clone();
        r.engine.kv_cache_tokens = Some(value);
        let e = express(&r).unwrap();
        assert_eq!(e.stated_kv_tokens, None);
        assert!(
            e.assumptions.iter().any(|a| a.contains(said)),
            "{:?}",
            e.assumptions
        );
    }
}
