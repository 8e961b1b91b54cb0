//! The routing skew the cost model assumes ([`sim::cost::moe::ROUTING_SKEW`]) against the skewed
//! routings NVIDIA's aiconfigurator collector measures vLLM 0.24's Marlin W4A16 MoE under
//! (`data/observations/moe-vllm-0.24-rtx-pro-6000-routing.csv`: Kimi-K2's shape at TP8, 8–512
//! tokens, `balanced`, `power_law_1.01`, `power_law_1.2`, with the distinct experts each routing
//! hands the kernel). Two checks: the tables' kernel time falls with the experts touched (the
//! premise of pricing skew by touched experts), and the skew stays inside the tables' range.

use crate::common;

use sim::cost::moe::{ROUTING_SKEW, Routing};
use std::collections::BTreeMap;

/// (distribution, tokens) → (touched experts, time µs).
fn rows() -> BTreeMap<(String, u32), (f64, f64)> {
    common::data_csv_rows("moe-vllm-0.24-rtx-pro-6000-routing.csv", |f, n| {
        ((f[3].to_string(), n(4) as u32), (n(5), n(6)))
    })
    .into_iter()
    .collect()
}

/// Under the power laws the kernel touches fewer experts and takes less time from 16 tokens
/// on, in proportion to the experts it leaves cold within 8 points (time over balanced 0.49–0.88
/// where the touched experts are 0.46–0.84 of balanced's; hot experts' extra rows cost up to
/// 0.08 more): what pricing a skew by the touched experts' weights assumes.
#[test]
fn skewed_routing_saves_time_with_the_experts_it_leaves_cold() {
    let rows = rows();
    let mut n = 0;
    for ((dist, tokens), (touched, time_us)) in &rows {
        if dist == "balanced" || *tokens < 16 {
            continue;
        }
        let (bal_touched, bal_us) = rows[&("balanced".to_string(), *tokens)];
        let (touched_ratio, time_ratio) = (touched / bal_touched, time_us / bal_us);
        println!("{dist} {tokens}: touched {touched_ratio:.2}, time {time_ratio:.2}");
        assert!(time_ratio < 1.0, "{dist} {tokens}: {time_ratio}");
        assert!(
            (touched_ratio - 0.02..=touched_ratio + 0.1).contains(&time_ratio),
            "{dist} {tokens}: time {time_ratio} against touched {touched_ratio}"
        );
        n += 1;
    }
    assert!(n >= 20, "{n} rows compared");
}

/// The assumed skew touches no fewer experts than the collector's `power_law_1.2` routing (the
/// most skewed the tables measure) and no more than uniform routing, at 16–512 tokens (within
/// 0.5%: the power law's touched counts are means of 400 draws of the collector's generator).
#[test]
fn routing_skew_sits_between_uniform_and_the_tables_power_law() {
    let rows = rows();
    let skewed = Routing::with_skew(384, 8, 1, ROUTING_SKEW);
    let uniform = Routing::with_skew(384, 8, 1, 0.0);
    for ((dist, tokens), (touched, _)) in &rows {
        if dist != "power_law_1.2" || *tokens < 16 {
            continue;
        }
        let t = f64::from(*tokens);
        let s = skewed.expected_touched(t);
        assert!(
            s >= *touched,
            "{tokens}: skew touches {s:.0} < power law's {touched}"
        );
        assert!(s <= uniform.expected_touched(t) + 1e-9);
    }
    // the bound itself: a skew of 0.5 would touch fewer than the power law somewhere
    let beyond = Routing::with_skew(384, 8, 1, 0.5);
    assert!(
        rows.iter()
            .any(|((d, t), (touched, _))| d == "power_law_1.2"
                && *t >= 16
                && beyond.expected_touched(f64::from(*t)) < *touched)
    );
}
