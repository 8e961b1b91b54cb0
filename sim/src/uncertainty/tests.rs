use super::fit::{Residual, fit};
use super::verdict::{Side, VERDICT_BAR, probability_faster, probability_with};
use super::*;
use proptest::prelude::*;

fn regime(model: &str, flags: &[&str]) -> Regime {
    Regime {
        engine: "vllm".into(),
        model: model.into(),
        speculation: "off".into(),
        context: "0".into(),
        concurrency: "1".into(),
        machine: "box".into(),
        machine_kind: "preset measured".into(),
        p2p: "real".into(),
        family: "llm_decode_bench".into(),
        flags: flags.iter().map(|s| s.to_string()).collect(),
        source: String::new(),
    }
}

/// Residuals from three sources whose errors spread by `spread` around 0, in a grid of
/// concurrencies, for one model.
fn residuals(spread: f64) -> Vec<Residual> {
    let mut out = Vec::new();
    for s in 0..3 {
        for i in 0..100 {
            // evenly spread, visited in a stride coprime to 100 so every cell samples all of it
            let u = ((i * 37) % 100) as f64 / 99.0;
            let e = spread * (u * 2.0 - 1.0) + 0.01 * s as f64;
            let mut r = regime("kimi", if i % 2 == 0 { &["p2p-assumed"] } else { &[] });
            r.concurrency = ["1", "2", "3-8", "9-32"][i % 4].into();
            out.push(Residual {
                id: format!("r{s}-{i}"),
                source: format!("page{s}"),
                regime: r,
                predicted: 100.0,
                measured: 100.0 * e.exp(),
                higher_is_faster: true,
                group: Some(format!("g{s}-{}", i / 4)),
            });
        }
    }
    out
}

#[test]
fn an_extrapolating_prediction_gets_a_wider_interval_than_a_measured_one() {
    let m = fit(&residuals(0.2), "dev.json", &[]);
    let measured = m.range(100.0, true, &regime("kimi", &[]));
    let flagged = m.range(100.0, true, &regime("kimi", &["moe-slice-extrapolated"]));
    let unseen = m.range(100.0, true, &regime("qwen", &["moe-slice-extrapolated"]));
    // relative width: the centres differ (a new source's is the sources' mean offset)
    let w = |r: &Range| (r.range[1] / r.range[0]).ln();
    assert!(w(&flagged) > w(&measured), "{flagged:?} vs {measured:?}");
    assert!(w(&unseen) > w(&flagged), "{unseen:?} vs {flagged:?}");
    assert!(
        unseen.widened_by.iter().any(|s| s.contains("model qwen")),
        "{unseen:?}"
    );
    assert!(measured.widened_by.is_empty(), "{measured:?}");
}

#[test]
fn the_interval_covers_about_80_percent_of_what_it_was_fitted_on() {
    let rs = residuals(0.3);
    let m = fit(&rs, "dev.json", &[]);
    let refs: Vec<&Residual> = rs.iter().collect();
    let c = fit::coverage(&m, &refs);
    assert!((75.0..=90.0).contains(&c.coverage_pct), "{c:?}");
    assert!((75.0..=95.0).contains(&m.loso.coverage_pct), "{:?}", m.loso);
}

#[test]
fn a_latency_interval_is_read_the_other_way_round() {
    let m = fit(&residuals(0.2), "dev.json", &[]);
    let r = regime("kimi", &[]);
    let tput = m.range(100.0, true, &r).range;
    let lat = m.range(100.0, false, &r).range;
    assert!((tput[0] * lat[1] - 1e4).abs() < 1e-6 && (tput[1] * lat[0] - 1e4).abs() < 1e-6);
}

#[test]
fn grouped_prints_thousands() {
    assert_eq!(
        with_range(1234.0, [1050.0, 1380.4], 0),
        "1,234 (1,050–1,380)"
    );
    assert_eq!(grouped(-1234567.25, 1), "-1,234,567.2");
    assert_eq!(grouped(12.0, 0), "12");
}

#[test]
fn flags_read_from_the_cost_models_notes() {
    let notes = [
        "MoE efficiency extrapolated: the expert slice per GPU …".to_string(),
        "bare metal with P2P assumed (record: p2p unknown)".to_string(),
        "something else".to_string(),
    ];
    assert_eq!(
        Flag::from_notes(&notes),
        vec!["moe-slice-extrapolated", "p2p-assumed"]
    );
}

proptest! {
    #[test]
    fn verdict_probability_is_symmetric_and_grows_with_the_gap(
        a in 1.0f64..1e4, gap in 0.0f64..1.0, rho in -0.5f64..0.99
    ) {
        let m = fit(&residuals(0.2), "dev.json", &[]);
        let r = regime("kimi", &[]);
        let b = a * (1.0 + gap);
        let p = probability_with(&m, Side { speed: b, regime: &r }, Side { speed: a, regime: &r }, rho);
        let q = probability_with(&m, Side { speed: a, regime: &r }, Side { speed: b, regime: &r }, rho);
        prop_assert!((p + q - 1.0).abs() < 1e-6);
        prop_assert!(p >= 0.5 - 1e-9);
        let wider = probability_with(&m, Side { speed: b * 1.1, regime: &r }, Side { speed: a, regime: &r }, rho);
        prop_assert!(wider >= p - 1e-9);
    }

    #[test]
    fn more_flags_never_narrow_an_interval(k in 0usize..3) {
        let m = fit(&residuals(0.2), "dev.json", &[]);
        let all = ["p2p-assumed", "moe-slice-extrapolated", "machine-figure-assumed"];
        let w = |n: usize| {
            let r = m.range(100.0, true, &regime("kimi", &all[..n])).range;
            r[1] - r[0]
        };
        prop_assert!(w(k + 1) >= w(k) - 1e-9);
    }
}

#[test]
fn a_big_gap_between_same_box_predictions_is_a_verdict() {
    let m = fit(&residuals(0.2), "dev.json", &[]);
    let r = regime("kimi", &[]);
    let p = probability_faster(
        &m,
        Side {
            speed: 300.0,
            regime: &r,
        },
        Side {
            speed: 100.0,
            regime: &r,
        },
    );
    assert!(p >= VERDICT_BAR, "{p}");
}

#[test]
fn normal_cdf_matches_known_values() {
    assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
    assert!((normal_cdf(Z_80) - 0.9).abs() < 1e-6);
    assert!((normal_cdf(-1.959_964) - 0.025).abs() < 1e-6);
}

/// Residuals of `k` sources, source `s` offset by `offsets[s]` and `n[s]` figures spread ±0.1.
fn offset_sources(offsets: &[f64], n: &[usize]) -> Vec<Residual> {
    let mut out = Vec::new();
    for (s, (&o, &count)) in offsets.iter().zip(n).enumerate() {
        for i in 0..count {
            let u = ((i * 37) % count.max(1)) as f64 / count.max(2) as f64;
            let mut r = regime("kimi", &[]);
            r.source = format!("page{s}");
            out.push(Residual {
                id: format!("r{s}-{i}"),
                source: format!("page{s}"),
                regime: r,
                predicted: 100.0,
                measured: 100.0 * (o + 0.1 * (2.0 * u - 1.0)).exp(),
                higher_is_faster: true,
                group: None,
            });
        }
    }
    out
}

#[test]
fn every_source_weighs_the_same_in_the_between_source_spread() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1], &[1000, 9, 9, 9]);
    let rs: Vec<&Residual> = refs.iter().collect();
    let b = fit::between_source(&rs);
    // the equal-weight mean of the medians, not the big source's 0
    assert!((b.mean_ln - 0.05).abs() < 0.01, "{b:?}");
    // medians 0, 0.2, -0.1, 0.1: their sd is 0.129; less the small sampling variance
    assert!((0.10..0.13).contains(&b.tau_ln), "{b:?}");
    assert_eq!(b.df, 2);
    assert!((b.t_quantile - 1.8856).abs() < 1e-4);
    assert!(b.half_ln > b.tau_ln * b.t_quantile, "{b:?}");
}

#[test]
fn the_t_quantile_meets_the_normal_one() {
    assert!((fit::t90(3) - 1.6377).abs() < 1e-4);
    assert!((fit::t90(30) - 1.3104).abs() < 2e-3, "{}", fit::t90(30));
    assert!((fit::t90(100_000) - Z_80).abs() < 1e-4);
    assert!(fit::t90(11) < fit::t90(10) && fit::t90(11) > fit::t90(12));
}

#[test]
fn a_new_source_is_widened_once_by_the_between_source_spread() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1, 0.05], &[100, 40, 30, 20, 10]);
    let m = fit(&refs, "dev.json", &[]);
    assert!(m.between.half_ln > 0.05, "{:?}", m.between);
    let w = |r: &Regime| {
        let i = m.ln_interval(r);
        (i.half(), i.source_half)
    };
    let mut seen = regime("kimi", &[]);
    seen.source = "page0".into();
    let mut other_page = seen.clone();
    other_page.source = "a page the dev set lacks".into();
    let mut other_box = regime("kimi", &[]);
    other_box.machine = "another box".into();
    let mut other_box_and_model = other_box.clone();
    other_box_and_model.model = "qwen".into();
    let (h_seen, s_seen) = w(&seen);
    assert_eq!(s_seen, 0.0);
    for r in [&other_page, &other_box, &other_box_and_model] {
        let (h, s) = w(r);
        assert_eq!(s, m.between.half_ln, "{r:?}");
        assert!(h > h_seen, "{r:?}: {h} vs {h_seen}");
    }
    // a new machine and a new model are one new source, not two widenings
    assert!((w(&other_box).0 - w(&other_box_and_model).0).abs() < 1e-12);
}

#[test]
fn a_new_sources_offset_cancels_between_two_predictions_of_one_box() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1, 0.05], &[100, 40, 30, 20, 10]);
    let m = fit(&refs, "dev.json", &[]);
    let mut new_box = regime("kimi", &[]);
    new_box.machine = "another box".into();
    let seen = regime("kimi", &[]);
    let p = |a: &Regime, b: &Regime| {
        probability_with(
            &m,
            Side {
                speed: 120.0,
                regime: a,
            },
            Side {
                speed: 100.0,
                regime: b,
            },
            0.0,
        )
    };
    // both on the new box: the offset is shared; one side only: it is not, so less sure
    assert!(
        p(&new_box, &new_box) > p(&new_box, &seen),
        "{} vs {}",
        p(&new_box, &new_box),
        p(&new_box, &seen)
    );
}

#[test]
fn machines_are_told_apart_by_how_they_are_known() {
    let kind = |name: &str| {
        let m = crate::machine::Machine::resolve(name).expect("preset");
        machine_kind(&m.profile)
    };
    assert_eq!(kind("rtx-pro-6000-x8-baremetal"), "preset measured");
    assert_eq!(
        kind("rtx-pro-6000-x8-baremetal-nccl-ll128"),
        "preset measured"
    );
    assert_eq!(kind("rtx-pro-6000-x8-vm-hostbounce"), "preset synthesized");
    assert_eq!(
        kind("rtx-pro-6000-x8-baremetal-p2p-off"),
        "preset synthesized"
    );
    assert_eq!(kind("h100-x8"), "preset synthesized");
    let m = crate::machine::Machine::resolve("rtx-pro-6000-x8-baremetal-p2p-routed").unwrap();
    assert_eq!(p2p_level(&m.profile), "routed");
}

#[test]
fn an_efficiency_curve_for_decode_attention_is_a_flag() {
    let notes = ["decode attention: efficiency curve (KV bytes over …)".to_string()];
    assert_eq!(
        Flag::from_notes(&notes),
        vec!["attention-without-kernel-data"]
    );
}

#[test]
fn the_stored_model_widens_a_model_the_dev_set_lacks() {
    let m = ErrorModel::builtin();
    let mut measured = regime("kimi-k2.5", &[]);
    measured.machine = "rtx-pro-6000-x8-baremetal-nccl-ll128".into();
    measured.source = m.provenance.sources[0].clone();
    let mut other_model = measured.clone();
    other_model.model = "qwen3.5-397b-a17b".into();
    other_model.source = String::new();
    let (a, b) = (m.ln_interval(&measured), m.ln_interval(&other_model));
    assert!(b.half() > a.half() + 0.05, "{a:?} vs {b:?}");
    assert_eq!(b.source_half, m.between.half_ln);
}
