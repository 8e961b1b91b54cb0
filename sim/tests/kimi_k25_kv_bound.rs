//! Issue 23: Kimi-K2.5 (INT4 W4A16 on Marlin) at TP8 on the user's RTX PRO 6000s, eager, 256 in /
//! 100 out. Its server ran at SGLang's vision-adjusted 0.771, its pool held a few thousand tokens
//! and ~19 requests ran from c32 on: the measured throughput stopped growing there. The
//! prediction saturates from c32 too, at the requests the pool admits, and `run` says KV-bound.
//! The other Kimi run names bench_serving's random lengths (U{1..256} in, U{1..100} out:
//! `--random-range-ratio` at its default 0); read so, the pool admits the ~19 the log saw.

use crate::common;

use common::sim_output;
use serde_json::Value;

fn run_at(concurrency: u32) -> (Value, String) {
    run_with(concurrency, "1")
}

fn run_with(concurrency: u32, range_ratio: &str) -> (Value, String) {
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
        range_ratio,
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

/// bench_serving's default lengths (range ratio 0: prompts 128 and outputs 50 tokens on
/// average): about 19 run at once, as the log saw, and the throughput still saturates.
#[test]
fn kimi_k25_int4_with_bench_servings_random_lengths_runs_about_19() {
    let (r32, warn) = run_with(32, "0");
    // the sampled prompts and outputs, about 128 + 50 tokens
    assert!(warn.contains("prompt and remaining output (1"), "{warn}");
    let admitted: u64 = warn
        .split("so about ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{warn}"));
    assert!((16..=22).contains(&admitted), "{admitted}: {warn}");
    // the decode batches hold that many on average (first tokens come from prefill)
    let decoded = r32["total_output_tokens"].as_f64().unwrap() - r32["completed"].as_f64().unwrap();
    let mean_batch = decoded / r32["breakdown"]["decode_batches"].as_f64().unwrap();
    assert!((15.0..23.0).contains(&mean_batch), "{mean_batch:.1}");
    let (r1000, _) = run_with(1000, "0");
    let (a, b) = (
        r32["output_throughput"].as_f64().unwrap(),
        r1000["output_throughput"].as_f64().unwrap(),
    );
    assert!((b / a - 1.0).abs() < 0.05, "c1000 {b} vs c32 {a}");
}
