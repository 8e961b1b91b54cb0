//! Kimi-K2's routed experts as the cost model prices them under vLLM on the RTX PRO 6000 (Marlin
//! W4A16, TP8: 7168 × 2048 / 8 a GPU, 384 experts, top-8) against vLLM 0.24's Marlin MoE measured
//! by NVIDIA's aiconfigurator collector under its three routings
//! (`data/observations/moe-vllm-0.24-rtx-pro-6000-routing.csv`: `balanced`, `power_law_1.01`,
//! `power_law_1.2`, 16–512 tokens, with the distinct experts each routing handed the kernel).
//! Each row is priced at its own touched experts and (token, expert) pairs, so the check is of
//! the kernel's price alone, the routing model ([`sim::cost::moe::Routing`]) left out.
//!
//! Why it is kept (issues 35, 36): the Kimi-K2.6 DCP1 dev cells at 16–128 streams are predicted
//! 11–17% too slow, and the MoE is the part of the step that grows with the batch. This says
//! the Marlin price per touched expert is not where that error lies: from 16 to 512 tokens it
//! stays within a few percent of the measured kernel at the same touched count
//! ([`sim::cost::marlin_moe`]). What is left is the count itself (the touched experts of a
//! batch of streams continuing one prompt).
//! `cargo test -p sim --test suite marlin_moe_routing:: -- --nocapture` prints the rows.

use crate::common;

use models::{Layout, ModelSpec};
use sim::cost::{CostModel, Knobs};
use sim::machine::Machine;
use sim::options::{Engine, ServerOptions};

/// (distribution, tokens, touched experts, measured µs).
fn rows() -> Vec<(String, f64, f64, f64)> {
    common::data_csv_rows("moe-vllm-0.24-rtx-pro-6000-routing.csv", |f, n| {
        (f[3].to_string(), n(4), n(5), n(6))
    })
}

fn kimi_tp8_vllm() -> CostModel {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal-nccl-ll128").unwrap();
    let kimi = ModelSpec::preset("kimi-k2.5").unwrap();
    let opts = ServerOptions {
        engine: Engine::Vllm,
        kv_cache_dtype: Some(models::KvDtype::Fp8),
        ..ServerOptions::default()
    };
    CostModel::new(&machine, &kimi, Layout::tp(8), &opts, Knobs::default()).unwrap()
}

/// At 16–512 tokens (a decode step of 16–128 streams, or 4–128 streams verifying 4 tokens
/// each) every row's price is within 8% of the measured kernel at its own touched count (the
/// worst, +7%, is balanced routing's 32-token row, which streams its 256 experts faster per
/// expert than any other row, at every TP) and the median within 2%. The 256–512-token rows,
/// where the pooled curve ran 2–13% under the kernel (its roofline flat once the touched
/// experts are streamed), are within 4%: Marlin's time per routed row adds on
/// ([`sim::cost::marlin_moe`]). Fails with the curve's price (`MoeRunner::Tables`): −12.9% at
/// power-law 512 tokens.
#[test]
fn marlin_price_per_touched_expert_matches_the_measured_routings() {
    let cm = kimi_tp8_vllm();
    let mut errs = Vec::new();
    for (dist, tokens, touched, us) in rows() {
        if tokens < 16.0 {
            continue;
        }
        let s = cm.routed_experts_s(touched, tokens * 8.0).unwrap();
        let err = s / (us * 1e-6) - 1.0;
        println!(
            "{dist:>15} {tokens:>4} tokens, {touched:>5.1} touched: model {:>6.1} µs, measured {us:>6.1} µs ({:+.1}%)",
            s * 1e6,
            err * 100.0
        );
        assert!(err.abs() < 0.08, "{dist} {tokens}: {err:+.3}");
        if tokens >= 256.0 {
            assert!(err.abs() < 0.04, "{dist} {tokens}: {err:+.3}");
        }
        errs.push(err.abs());
    }
    errs.sort_by(f64::total_cmp);
    let median = errs[errs.len() / 2];
    assert!(median < 0.02, "median |error| {median:.3}");
}
