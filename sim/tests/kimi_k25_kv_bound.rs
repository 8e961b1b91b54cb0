//! Issue 23: Kimi-K2.5 (INT4 W4A16 on Marlin) at TP8 on the user's RTX PRO 6000s, eager, 256 in /
//! 100 out. Its server ran at SGLang's vision-adjusted 0.771, its pool held a few thousand tokens
//! and ~19 requests ran from c32 on: the measured throughput stopped growing there. The
//! prediction saturates from c32 too, at the requests the pool admits, and `run` says KV-bound.

mod common;

use common::sim_output;
use serde_json::Value;

fn run_at(concurrency: u32) -> (Value, String) {
    let c = concurrency.to_string();
    let prompts = (concurrency * 4).max(400).to_string();
    let (code, out, err) = sim_output(&[
        "run",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "kimi-k2.5",
        "--tp",
        "8",
        "--disable-cuda-graph",
        "--random-input-len",
        "256",
        "--random-output-len",
        "100",
        "--random-range-ratio",
        "1",
        "--num-prompts",
        &prompts,
        "--max-concurrency",
        &c,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    (serde_json::from_str(&out).unwrap(), err)
}

#[test]
fn kimi_k25_int4_saturates_from_c32_and_says_kv_bound() {
    let (base, warn) = run_at(32);
    let pool = base["kv_capacity_tokens"].as_u64().unwrap();
    assert!(
        (2_000..10_000).contains(&pool),
        "a few thousand tokens: {pool}"
    );
    let running = base["peak_running_requests"].as_u64().unwrap();
    // SGLang reserves prompt + output (356 tokens) per admitted request
    assert!(
        running < 32 && running.abs_diff(pool / 356) <= 2,
        "{running} of {pool}"
    );
    assert!(warn.contains("KV-bound: kimi-k2.5 on TP8"), "{warn}");
    assert!(
        warn.contains(&format!("about {} of the 32 requests", pool / 356)),
        "{warn}"
    );
    // the pool is ~0.3 GB of a 78 GB budget: the warning says how fragile the count is
    assert!(warn.contains("thin remainder"), "{warn}");
    let tok_s = base["output_throughput"].as_f64().unwrap();
    for c in [128, 1000] {
        let (r, w) = run_at(c);
        assert_eq!(
            r["peak_running_requests"].as_u64().unwrap(),
            running,
            "c{c}"
        );
        let t = r["output_throughput"].as_f64().unwrap();
        assert!(
            (t / tok_s - 1.0).abs() < 0.03,
            "c{c}: {t} vs {tok_s} at c32"
        );
        assert!(
            w.contains(&format!("of the {c} requests run at once")),
            "{w}"
        );
    }
}
