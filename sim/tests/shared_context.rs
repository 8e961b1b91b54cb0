//! Issue 24 ("checked further"): `llm_decode_bench.py` sends every stream of a cell the same
//! cached messages, so with the engine's prefix cache on the KV pool holds the context once plus
//! each stream's own tokens. A long-context, many-stream record that a copy per stream would
//! cap at a few streams runs all of them; with the prefix cache off the old rule stays.

use models::Layout;
use proptest::prelude::*;
use sim::cost::MemoryPlan;
use sim::cost::memory::{max_requests_at_context, max_streams_sharing_prefix};
use sim::engine::{Engine, LaunchKnobs};
use sim::records::RecordSet;
use sim::scoreboard::{RecordComparison, ScoreOptions, score};
use std::path::Path;

/// A Qwen3.5-397B NVFP4 TP4 decode-bench cell on half an RTX PRO 6000 box, 64K of context,
/// `conc` streams, launched with `flags` under `engine`, measured at `tok_s`.
fn record(id: &str, engine: &str, flags: &str, conc: u32) -> String {
    format!(
        r#"{{"id": "{id}", "hardware": {{"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "count": 4, "p2p": "enabled", "virtualized": false}},
         "engine": {{"name": "{engine}", "flags": "--tensor-parallel-size 4 {flags}"}},
         "model": "lukealonso/Qwen3.5-397B-A17B-NVFP4", "quant": "nvfp4 (modelopt_fp4)",
         "parallel": {{"tp": 4, "pp": 1, "mtp": false}},
         "workload": {{"input_len": 65536, "concurrency": {conc},
                      "dataset": "decode matrix (llm_decode_bench.py)"}},
         "metrics": {{"output_tok_s": "1000"}}}}"#
    )
}

fn compare(records: &[String]) -> Vec<RecordComparison> {
    let text = format!(r#"{{"records": [{}]}}"#, records.join(","));
    let set = RecordSet::parse(text.as_bytes(), Path::new("shared.json")).unwrap();
    let b = score(&set, &ScoreOptions::default());
    assert_eq!(b.expressible, records.len(), "{:?}", b.unexpressible);
    b.comparisons
}

/// Streams running in a compared steady decode: tok/s × seconds per step.
fn running(c: &RecordComparison) -> f64 {
    c.predicted * c.step_ms / 1e3
}

fn find<'a>(cs: &'a [RecordComparison], id: &str) -> &'a RecordComparison {
    cs.iter().find(|c| c.id == id).unwrap()
}

#[test]
fn a_shared_cached_context_lets_every_stream_run() {
    let vllm_pc = "--max-num-seqs 128 --enable-prefix-caching";
    let cs = compare(&[
        record("shared-c64", "vllm", vllm_pc, 64),
        record("shared-c8", "vllm", vllm_pc, 8),
        record(
            "off-c64",
            "vllm",
            "--max-num-seqs 128 --no-enable-prefix-caching",
            64,
        ),
        // vLLM's default for a hybrid model (before v0.28): prefix caching off
        record("default-c64", "vllm", "--max-num-seqs 128", 64),
    ]);
    let (shared, off) = (find(&cs, "shared-c64"), find(&cs, "off-c64"));
    // a copy per stream: vLLM's pool (every layer sized as full attention) holds 15 of 64K
    assert!((running(off) - 15.0).abs() < 0.5, "{}", running(off));
    assert!(
        off.notes
            .iter()
            .any(|n| n.contains("only 15 of 64 streams")),
        "{:?}",
        off.notes
    );
    assert!(
        off.notes.iter().any(|n| n.contains("prefix cache off")),
        "{:?}",
        off.notes
    );
    // one shared copy: all 64 run, each still reading the whole context (a longer step)
    assert!((running(shared) - 64.0).abs() < 0.5, "{}", running(shared));
    assert!(shared.step_ms > off.step_ms);
    assert!(shared.predicted > 1.5 * off.predicted);
    assert!(
        shared
            .notes
            .iter()
            .any(|n| n.contains("share one cached copy") && n.contains("would fit 15")),
        "{:?}",
        shared.notes
    );
    assert!(!shared.notes.iter().any(|n| n.contains("streams fit")));
    let default = find(&cs, "default-c64");
    assert_eq!(default.predicted, off.predicted);
    assert!(
        default.notes.iter().any(|n| n.contains("hybrid model")),
        "{:?}",
        default.notes
    );
    // where one copy each already fits, nothing is said
    let small = find(&cs, "shared-c8");
    assert!((running(small) - 8.0).abs() < 0.5, "{}", running(small));
    assert!(
        !small
            .notes
            .iter()
            .any(|n| n.contains("share one cached copy")),
        "{:?}",
        small.notes
    );
}

#[test]
fn sglang_shares_through_its_radix_cache_unless_disabled() {
    // at 128K SGLang's pool of this server (2.2M tokens) holds 17 copies of the context
    let line = "--max-running-requests 64 --mem-fraction-static 0.93 --kv-cache-dtype fp8_e4m3";
    let mut on = record("radix", "sglang", line, 64);
    let mut off = record(
        "no-radix",
        "sglang",
        &format!("{line} --disable-radix-cache"),
        64,
    );
    for r in [&mut on, &mut off] {
        *r = r.replace("65536", "131072");
    }
    let cs = compare(&[on, off]);
    let (on, off) = (find(&cs, "radix"), find(&cs, "no-radix"));
    assert!(running(off) < 20.0, "{}", running(off));
    assert!((running(on) - 64.0).abs() < 0.5, "{}", running(on));
    assert!(
        on.notes.iter().any(|n| n.contains("SGLang's radix cache")),
        "{:?}",
        on.notes
    );
}

#[test]
fn the_engines_say_when_prompts_share_their_cache() {
    let k = |f: fn(&mut LaunchKnobs)| {
        let mut k = LaunchKnobs::default();
        f(&mut k);
        k
    };
    let none = LaunchKnobs::default();
    assert!(Engine::Sglang.prefix_cache(&none, true).0);
    assert!(
        !Engine::Sglang
            .prefix_cache(&k(|k| k.disable_radix_cache = true), false)
            .0
    );
    assert!(Engine::Vllm.prefix_cache(&none, false).0);
    assert!(!Engine::Vllm.prefix_cache(&none, true).0);
    assert!(
        Engine::Vllm
            .prefix_cache(&k(|k| k.prefix_caching = Some(true)), true)
            .0
    );
    assert!(
        !Engine::Vllm
            .prefix_cache(&k(|k| k.prefix_caching = Some(false)), false)
            .0
    );
}

fn pool(kv_tokens: u64, state_slots: u64, max_running_requests: u32) -> MemoryPlan {
    MemoryPlan {
        kv_tokens,
        state_slots,
        max_running_requests,
        ..MemoryPlan::default()
    }
}

proptest! {
    /// The streams admitted beside one shared prefix fit the pool and one more would not
    /// (pages rounded up); a copy per stream never admits more than sharing does once each
    /// stream's own tokens are no more than the context.
    #[test]
    fn shared_prefix_admission_fits_exactly(
        kv in 0u64..5_000_000,
        shared in 0u64..300_000,
        own in 1u64..50_000,
        page in prop::sample::select(vec![1u64, 16, 64]),
    ) {
        let plan = pool(kv, 0, 0);
        let l = Layout::tp(4);
        let n = max_streams_sharing_prefix(&plan, &l, shared, own, page);
        let (s, o) = (shared.div_ceil(page) * page, own.div_ceil(page) * page);
        prop_assert!(n == 0 || s + n * o <= kv);
        prop_assert!(s + (n + 1) * o > kv);
        if own <= shared && shared > 0 {
            let separate = max_requests_at_context(&plan, &l, shared + own);
            prop_assert!(n >= separate, "{n} < {separate}");
        }
    }

    /// Under attention-DP each replica holds its own copy; a hybrid model's state slots cap it.
    #[test]
    fn replicas_and_state_slots_cap_the_shared_streams(
        kv in 0u64..2_000_000,
        shared in 0u64..200_000,
        own in 1u64..8_192,
        max_running in 1u32..512,
    ) {
        let one = max_streams_sharing_prefix(&pool(kv, 0, 0), &Layout::tp(8), shared, own, 1);
        let dp = Layout { dp_attention: true, ..Layout::tp(8) };
        prop_assert_eq!(max_streams_sharing_prefix(&pool(kv, 0, 0), &dp, shared, own, 1), 8 * one);
        let hybrid = pool(kv, 3 * u64::from(max_running), max_running);
        let capped = max_streams_sharing_prefix(&hybrid, &Layout::tp(8), shared, own, 1);
        prop_assert_eq!(capped, one.min(u64::from(max_running)));
    }
}
