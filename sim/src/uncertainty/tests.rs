use super::error_fit::{self, Residual, fit};
use super::verdict::{Side, VERDICT_BAR, probability_faster, probability_with};
use super::*;
use proptest::prelude::*;

fn regime(model: &str, flags: &[&str]) -> Regime {
    Regime {
        engine: "vllm".into(),
        model: model.into(),
        model_family: novelty::model_family(model),
        attention: "mla".into(),
        moe_shape: "384 experts top-8".into(),
        speculation: "off".into(),
        context: "0".into(),
        concurrency: "1".into(),
        machine: "box".into(),
        machine_kind: "preset measured".into(),
        p2p: "real".into(),
        family: "llm_decode_bench".into(),
        flags: flags.iter().map(|s| s.to_string()).collect(),
        source: String::new(),
        calibrated_sigma_ln: None,
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
            // the pages' offsets differ (as the dev set's do), so a new source adds something
            let e = spread * (u * 2.0 - 1.0) + 0.05 * s as f64;
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
    let m = fit(&residuals(0.2), "dev.json", &[], &[]);
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
    let m = fit(&rs, "dev.json", &[], &[]);
    let refs: Vec<&Residual> = rs.iter().collect();
    let c = error_fit::coverage(&m, &refs);
    assert!((75.0..=90.0).contains(&c.coverage_pct), "{c:?}");
    assert!((75.0..=95.0).contains(&m.loso.coverage_pct), "{:?}", m.loso);
}

#[test]
fn a_latency_interval_is_read_the_other_way_round() {
    let m = fit(&residuals(0.2), "dev.json", &[], &[]);
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

/// The engines' speculative-step caveats raise their own flag, and a prediction carrying it
/// stands on an unpriced-step ground whatever its kernels and acceptance: decode context
/// parallelism's caveat on its own ground, every other caveat on the other; each stacks on the
/// four kernels × acceptance grounds (not on each other), and those stack by their flags.
#[test]
fn an_unpriced_speculative_step_is_its_own_ground_on_top_of_the_others() {
    let attention = "decode attention: efficiency curve, DSA sparse MLA".to_string();
    let cases = [
        (
            crate::engine::vllm::VLLM_DSA_DCP_SPEC_CAVEAT,
            "speculative-step-under-dcp-unpriced",
            "speculative step under DCP unpriced",
        ),
        (
            crate::engine::vllm::VLLM_B12X_EXTEND_VERIFY_CAVEAT,
            "speculative-step-unpriced",
            "speculative step unpriced",
        ),
        (
            crate::engine::vllm::VLLM_HYBRID_SPEC_CAVEAT,
            "speculative-step-unpriced",
            "speculative step unpriced",
        ),
    ];
    for (caveat, flag, ground) in cases {
        let flags = Flag::from_notes(&[caveat.to_string(), attention.clone()]);
        assert_eq!(flags, vec![flag, "attention-without-kernel-data"]);
        let names: Vec<&str> = flags.iter().map(String::as_str).collect();
        assert_eq!(
            first_contact_ground(&regime("glm-5.2-nvfp4", &names)),
            ground
        );
        assert_eq!(
            first_contact_ground(&regime("glm-5.2-nvfp4", &names[1..])),
            "kernels extrapolated"
        );
    }
    let unpriced = [super::SPEC_UNPRICED_GROUND, super::SPEC_DCP_UNPRICED_GROUND];
    for u in unpriced {
        for j in 0..4 {
            assert!(ground_stacks_on(u, j), "{u} on {j}");
            assert!(!ground_stacks_on(j, u), "{j} on {u}");
        }
    }
    assert!(
        !ground_stacks_on(unpriced[0], unpriced[1]) && !ground_stacks_on(unpriced[1], unpriced[0])
    );
    assert!(ground_stacks_on(3, 1) && ground_stacks_on(3, 2) && ground_stacks_on(1, 0));
    assert!(!ground_stacks_on(1, 2) && !ground_stacks_on(2, 1) && !ground_stacks_on(0, 0));
}

/// b12x's builds priced off their benchmark's slice, or without any public timing, raise the
/// extrapolated-MoE flag as the tables' extrapolated slices do.
#[test]
fn b12x_builds_off_their_measured_ground_raise_the_moe_flag() {
    use crate::b12x_build::B12xBuild;
    use crate::cost::moe::{B12xKernels, MoeRunner};
    for build in [
        B12xBuild::Static640,
        B12xBuild::UnderfillTiles,
        B12xBuild::MicroDynamic,
    ] {
        let glm5_tp8 = MoeRunner::B12x(B12xKernels {
            hidden: 6144.0,
            inter_per_gpu: 256.0,
            dynamic_bytes_per_s: 0.5e12,
            cold_bytes_per_s: 1.5e12,
            build,
        });
        let notes: Vec<String> = glm5_tp8.benchmark_shape_note().into_iter().collect();
        assert_eq!(
            Flag::from_notes(&notes),
            vec!["moe-slice-extrapolated"],
            "{build:?}"
        );
    }
}

proptest! {
    #[test]
    fn verdict_probability_is_symmetric_and_grows_with_the_gap(
        a in 1.0f64..1e4, gap in 0.0f64..1.0, rho in -0.5f64..0.99
    ) {
        let m = fit(&residuals(0.2), "dev.json", &[], &[]);
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
        let m = fit(&residuals(0.2), "dev.json", &[], &[]);
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
    let m = fit(&residuals(0.2), "dev.json", &[], &[]);
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
/// A verdict's two sides, `a` predicted at 120 tok/s against `b` at 100 (a 20% gap).
fn sides_120_100<'a>(a: &'a Regime, b: &'a Regime) -> (Side<'a>, Side<'a>) {
    (
        Side {
            speed: 120.0,
            regime: a,
        },
        Side {
            speed: 100.0,
            regime: b,
        },
    )
}

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

/// `rs` as one first-contact records file.
fn fc_set(rs: Vec<Residual>) -> error_fit::FirstContactSet {
    error_fit::FirstContactSet {
        file: "fc.json".into(),
        residuals: rs,
        first_token: Vec::new(),
    }
}

#[test]
fn every_source_weighs_the_same_in_the_between_source_spread() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1], &[1000, 9, 9, 9]);
    let rs: Vec<&Residual> = refs.iter().collect();
    let b = error_fit::between_source(&rs);
    // the median of the medians (0, 0.2, -0.1, 0.1), not the big source's 0
    assert!((b.centre_ln - 0.05).abs() < 0.01, "{b:?}");
    // medians 0, 0.2, -0.1, 0.1: their sd is 0.129; less the small sampling variance
    assert!((0.10..0.13).contains(&b.tau_ln), "{b:?}");
    // tau and the centre's own sampling variance, (pi/2) 0.129^2 / 4, in quadrature
    let want = (b.tau_ln.powi(2) + std::f64::consts::FRAC_PI_2 * 0.0167 / 4.0).sqrt();
    assert!((b.sigma_ln - want).abs() < 0.005, "{b:?} vs {want}");
}

#[test]
fn two_sources_are_too_few_to_tell_a_spread_and_take_the_bound() {
    let refs = offset_sources(&[0.0, 0.01], &[50, 50]);
    let rs: Vec<&Residual> = refs.iter().collect();
    let b = error_fit::between_source(&rs);
    assert!(
        (b.sigma_ln * Z_80 - std::f64::consts::LN_2).abs() < 1e-3,
        "{b:?}"
    );
}

#[test]
fn a_new_source_is_widened_once_by_the_between_source_spread() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1, 0.05], &[100, 40, 30, 20, 10]);
    let m = fit(&refs, "dev.json", &[], &[]);
    assert!(m.between.sigma_ln > 0.05, "{:?}", m.between);
    let w = |r: &Regime| {
        let i = m.ln_interval(r);
        (i.half(), i.source_sigma)
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
        assert_eq!(s, m.between.sigma_ln, "{r:?}");
        assert!(h > h_seen, "{r:?}: {h} vs {h_seen}");
    }
    // a new machine and a new model are one new source, not two widenings
    assert!((w(&other_box).0 - w(&other_box_and_model).0).abs() < 1e-12);
}

#[test]
fn a_new_sources_offset_cancels_between_two_predictions_of_one_box() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1, 0.05], &[100, 40, 30, 20, 10]);
    let m = fit(&refs, "dev.json", &[], &[]);
    let mut new_box = regime("kimi", &[]);
    new_box.machine = "another box".into();
    let seen = regime("kimi", &[]);
    let p = |a: &Regime, b: &Regime| {
        let (a, b) = sides_120_100(a, b);
        probability_with(&m, a, b, 0.0)
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
    // the box the dev set's Kimi pages ran on (under NCCL with LL128: a set-up of that box)
    measured.machine = crate::presets::box_of("rtx-pro-6000-x8-baremetal-nccl-ll128").into();
    measured.source = m.provenance.sources[0].clone();
    let mut other_model = measured.clone();
    other_model.model = "qwen3.5-397b-a17b".into();
    other_model.source = String::new();
    let (a, b) = (m.ln_interval(&measured), m.ln_interval(&other_model));
    // the new source's offset (sigma 0.09-0.12 ln as the dev pages agree more or less) on the
    // spread inside one source, root-sum-square, at the quantile measured leaving one source
    // out, against the dev ground's own 80% band: wider (0.010 ln at sigma_between 0.089)
    assert!(b.half() > a.half(), "{a:?} vs {b:?}");
    let new_sigma = m.new_source_sigma_ln(&other_model);
    assert_eq!(b.source_sigma, new_sigma);
    let rss = (b.own_sigma.powi(2) + new_sigma.powi(2)).sqrt();
    assert!((b.sigma - rss).abs() < 1e-9, "{b:?}");
    assert!(b.sigma > a.sigma + 0.2 * new_sigma, "{a:?} vs {b:?}");
}

#[test]
fn independent_parts_combine_in_quadrature_not_as_stacked_widths() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1, 0.05], &[100, 40, 30, 20, 10]);
    let m = fit(&refs, "dev.json", &[], &[]);
    let mut seen = regime("kimi", &[]);
    seen.source = "page0".into();
    let mut other_box = regime("kimi", &[]);
    other_box.machine = "another box".into();
    let (a, b) = (m.ln_interval(&seen), m.ln_interval(&other_box));
    // the new box: the spread inside one source and the new source's offset, root-sum-square
    let want = (b.own_sigma.powi(2) + m.between.sigma_ln.powi(2)).sqrt();
    // (here wider than the pooled spread of the known pages, which is only a floor)
    assert!((b.sigma - want).abs() < 1e-12, "{b:?}");
    assert!((b.half() - (m.quantile_z * want).max(b.floor_half)).abs() < 1e-12);
    assert!(b.half() < m.quantile_z * (b.own_sigma + m.between.sigma_ln));
    // on the dev set's own ground: the cells' own 80% band
    assert!((a.half() - Z_80 * a.sigma).abs() < 1e-12);
    assert!(b.half() > a.half());
}

#[test]
fn the_quantile_is_the_smallest_that_covers_80_percent_leaving_one_source_out() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1, 0.05], &[100, 40, 30, 20, 10]);
    let m = fit(&refs, "dev.json", &[], &[]);
    let [lo, hi] = QUANTILE_Z_BOUNDS;
    assert!((lo..=hi).contains(&m.quantile_z), "{}", m.quantile_z);
    assert!(
        m.loso.coverage_pct >= 80.0 || m.quantile_z == hi,
        "{:?}",
        m.loso
    );
    assert!(
        m.figures
            .iter()
            .any(|f| f.name == "quantile_z" && f.value == m.quantile_z)
    );
}

/// Pairs of one group whose errors are `shared` alike plus a small own part.
fn paired(shared: f64) -> Vec<Residual> {
    let mut out = Vec::new();
    for s in 0..4 {
        for g in 0..30 {
            let common = shared * (((g * 37 + s * 11) % 30) as f64 / 29.0 * 2.0 - 1.0);
            for side in 0..2 {
                let own = 0.02 * (side as f64 * 2.0 - 1.0) * if g % 2 == 0 { 1.0 } else { -1.0 };
                let mut r = regime("kimi", &[]);
                r.source = format!("page{s}");
                out.push(Residual {
                    id: format!("r{s}-{g}-{side}"),
                    source: format!("page{s}"),
                    regime: r,
                    predicted: 100.0 + side as f64,
                    measured: 100.0 * (common + own).exp(),
                    higher_is_faster: true,
                    group: Some(format!("g{s}-{g}")),
                });
            }
        }
    }
    out
}

#[test]
fn pairs_that_share_their_error_measure_a_high_correlation() {
    let m = fit(&paired(0.3), "dev.json", &[], &[]);
    let same = &m.pair_classes[0];
    assert_eq!(same.class, PAIR_CLASSES[0]);
    assert_eq!(same.pairs, 120);
    assert!(same.correlation > 0.9, "{:?}", m.pair_classes);
    // no pairs of different sources: taken as independent
    assert_eq!(m.pair_classes[1].pairs, 0);
    assert_eq!(m.pair_classes[1].correlation, 0.0);
    let (mut a, mut b) = (regime("kimi", &[]), regime("kimi", &[]));
    a.source = "page0".into();
    b.source = "page0".into();
    assert_eq!(m.correlation(&a, &b), same.correlation);
    b.source = "page1".into();
    assert_eq!(m.correlation(&a, &b), 0.0);
}

/// A few far pairs (one in ten, one side off by ±40% in ln, as the dev set's heavy-tailed pairs
/// are) barely move the correlation: it is matched on the median of the pairs' error
/// differences, which the tails do not set (0.95 -> 0.93 here; a variance match fell 0.98 -> 0.74).
#[test]
fn a_few_far_pairs_do_not_set_the_correlation() {
    let body = fit(&paired(0.3), "dev.json", &[], &[]).pair_classes[0].clone();
    let mut rs = paired(0.3);
    for (i, r) in rs.iter_mut().enumerate() {
        let g: usize = r
            .group
            .as_deref()
            .unwrap()
            .split('-')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        if g.is_multiple_of(10) && r.id.ends_with("-1") {
            r.measured *= (if i % 4 == 1 { 0.4f64 } else { -0.4 }).exp();
        }
    }
    let tailed = fit(&rs, "dev.json", &[], &[]).pair_classes[0].clone();
    assert!(
        (tailed.correlation - body.correlation).abs() < 0.05,
        "{body:?} -> {tailed:?}"
    );
    assert!(
        tailed.median_abs_diff_ln > 0.0 && tailed.median_abs_diff_ln < 0.1,
        "{tailed:?}"
    );
}

#[test]
fn a_tie_is_neither_right_nor_wrong() {
    let rs = paired(0.3);
    let m = fit(&rs, "dev.json", &[], &[]);
    let mut tied = rs.clone();
    for r in &mut tied {
        r.predicted = 100.0;
    }
    let refs: Vec<&Residual> = tied.iter().collect();
    let c = verdict::check_pairs(&m, &refs);
    assert_eq!((c.pairs, c.ties, c.depends), (120, 120, 120));
    assert!(c.bins.is_empty(), "{c:?}");
}

#[test]
fn every_pair_is_listed_with_the_side_called_faster_and_what_was_measured() {
    let rs = paired(0.3);
    let m = fit(&rs, "dev.json", &[], &[]);
    // every third pair predicted far apart (a sure call, right or wrong by its measured sides),
    // the rest 1% apart (depends)
    let mut rs = rs;
    for r in &mut rs {
        let g: usize = r.id.split('-').nth(1).unwrap().parse().unwrap();
        if g.is_multiple_of(3) && r.predicted > 100.0 {
            r.predicted = 200.0;
        }
    }
    let refs: Vec<&Residual> = rs.iter().collect();
    let c = verdict::check_pairs(&m, &refs);
    assert_eq!(c.list.len(), c.pairs);
    assert!(
        c.confident > c.confident_right && c.confident_right > 0,
        "{c:?}"
    );
    assert!(c.depends > 0, "{c:?}");
    let count = |call: verdict::Call| c.list.iter().filter(|p| p.verdict == call).count();
    assert_eq!(count(verdict::Call::Sure), c.confident);
    assert_eq!(
        count(verdict::Call::Depends) + count(verdict::Call::Tie),
        c.depends
    );
    let sure_right = c
        .list
        .iter()
        .filter(|p| p.verdict == verdict::Call::Sure && p.right == Some(true))
        .count();
    assert_eq!(sure_right, c.confident_right);
    assert_eq!(c.sure_but_wrong().count(), c.confident - c.confident_right);
    let by_id: std::collections::BTreeMap<&str, &Residual> =
        rs.iter().map(|r| (r.id.as_str(), r)).collect();
    for p in &c.list {
        let (f, s) = (by_id[p.faster.as_str()], by_id[p.slower.as_str()]);
        // the side called faster is the one predicted faster, and the gaps are read off the two
        let gap = |a: f64, b: f64| (a / b - 1.0) * 100.0;
        assert!(p.probability >= 0.5, "{p:?}");
        assert!((p.predicted_gap_pct - gap(f.predicted, s.predicted)).abs() < 1e-9);
        assert!((p.measured_gap_pct - gap(f.measured, s.measured)).abs() < 1e-9);
        assert_eq!(p.right, Some(f.measured > s.measured), "{p:?}");
    }
    // a near-tie count can only cover the pairs said "Depends"
    assert!(c.depends_within(5.0) <= c.depends);
    assert_eq!(c.depends_within(f64::INFINITY), c.depends);
}

/// Residuals of three model families, two pages each, 40 figures a page spread ±0.1 ln: the
/// first two families predicted alike, the third off by `off` ln.
fn families(off: f64) -> Vec<Residual> {
    let mut out = Vec::new();
    for (f, family) in ["fa", "fb", "fc"].iter().enumerate() {
        for s in 0..2 {
            for i in 0..40 {
                let u = ((i * 37) % 40) as f64 / 39.0;
                let e = 0.1 * (u * 2.0 - 1.0) + 0.01 * s as f64 + if f == 2 { off } else { 0.0 };
                let mut r = regime("m", &[]);
                r.model_family = family.to_string();
                r.concurrency = ["1", "2", "3-8", "9-32"][i % 4].into();
                out.push(Residual {
                    id: format!("{family}{s}-{i}"),
                    source: format!("{family}-page{s}"),
                    regime: r,
                    predicted: 100.0,
                    measured: 100.0 * e.exp(),
                    higher_is_faster: true,
                    group: Some(format!("{family}{s}-{}", i / 4)),
                });
            }
        }
    }
    out
}

fn with_family(family: &str) -> Regime {
    let mut r = regime("m", &[]);
    r.model_family = family.into();
    r
}

#[test]
fn a_model_family_the_dev_set_lacks_gets_a_wider_interval_measured_by_leaving_families_out() {
    let m = fit(&families(0.4), "dev.json", &[], &[]);
    let fam = m
        .novelty
        .iter()
        .find(|n| n.dimension == "model family")
        .unwrap();
    assert_eq!(fam.method, "leave one group out", "{fam:?}");
    assert_eq!(fam.left_out.len(), 3, "{fam:?}");
    assert!(fam.sigma_ln > 0.05, "{fam:?}");
    let (seen, unseen) = (
        m.ln_interval(&with_family("fa")),
        m.ln_interval(&with_family("fz")),
    );
    assert!(unseen.half() > seen.half() + 0.05, "{unseen:?} vs {seen:?}");
    assert!(
        unseen
            .widened_by
            .iter()
            .any(|w| w.starts_with("model family fz unseen")),
        "{unseen:?}"
    );
    // a new family's measured sigma holds its engine pairing and bands: not counted again
    assert!(
        !unseen.widened_by.iter().any(|w| w.contains(" × ")),
        "{unseen:?}"
    );
    assert!(seen.novelties.is_empty(), "{seen:?}");
}

#[test]
fn a_dimension_no_dev_group_can_measure_takes_the_spread_of_the_families_medians() {
    let rs = families(0.4);
    let m = fit(&rs, "dev.json", &[], &[]);
    // every dev family runs on one engine: leaving a pair out leaves its family out too
    let pair = m
        .novelty
        .iter()
        .find(|n| n.dimension == "engine × model family")
        .unwrap();
    assert_eq!(pair.method, "prior", "{pair:?}");
    let medians: Vec<f64> = ["fa", "fb", "fc"]
        .iter()
        .map(|f| {
            let mut v: Vec<f64> = rs
                .iter()
                .filter(|r| r.regime.model_family == *f)
                .map(|r| r.ln())
                .collect();
            v.sort_unstable_by(f64::total_cmp);
            quantile(&v, 0.5)
        })
        .collect();
    let mean = medians.iter().sum::<f64>() / 3.0;
    let sd = (medians.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    assert!((pair.sigma_ln - sd).abs() < 1e-3, "{pair:?} vs {sd}");
    // a dev family on an engine no dev record ran it on takes it
    let mut sglang = with_family("fa");
    sglang.engine = "sglang".into();
    let i = m.ln_interval(&sglang);
    assert!(
        i.novelties
            .iter()
            .any(|n| n.0 == "engine × model family sglang × fa"),
        "{i:?}"
    );
}

#[test]
fn a_novelty_both_sides_share_widens_each_interval_but_cancels_in_the_verdict() {
    let m = fit(&families(0.4), "dev.json", &[], &[]);
    let (seen, novel) = (with_family("fa"), with_family("fz"));
    let p = |a: &Regime, b: &Regime| {
        probability_faster(
            &m,
            Side {
                speed: 110.0,
                regime: a,
            },
            Side {
                speed: 100.0,
                regime: b,
            },
        )
    };
    assert!(m.ln_interval(&novel).half() > m.ln_interval(&seen).half());
    assert!((p(&novel, &novel) - p(&seen, &seen)).abs() < 1e-12);
    assert!(p(&novel, &seen) < p(&seen, &seen) - 0.01);
}

#[test]
fn family_attention_and_moe_shape_are_read_from_the_model() {
    assert_eq!(novelty::model_family("kimi-k2.5-nvfp4"), "kimi");
    assert_eq!(novelty::model_family("/models/Qwen3.5-397B-A17B"), "qwen");
    let spec = |name: &str| models::ModelSpec::preset(name).expect("preset");
    let qwen = spec("qwen3.5-397b-a17b-nvfp4");
    assert_eq!(novelty::attention_kind(&qwen), "gqa+linear");
    assert_eq!(novelty::attention_kind(&spec("kimi-k2.5")), "mla");
    assert_eq!(novelty::attention_kind(&spec("glm-5-nvfp4")), "mla+dsa");
    assert_eq!(novelty::moe_shape(&spec("kimi-k2.5")), "384 experts top-8");
}

/// The stored model (fitted on the dev set): a Qwen3.5 prediction on the dev set's box (a model
/// family, attention kind and MoE shape no dev record ran) is wider than the same prediction for
/// Kimi-K2.5, and names each novelty that widened it.
#[test]
fn the_stored_model_names_each_novelty_of_a_family_the_dev_set_lacks() {
    let m = ErrorModel::builtin();
    let mut kimi = regime("kimi-k2.5", &[]);
    kimi.machine = "rtx-pro-6000-x8-baremetal-nccl-ll128".into();
    let mut qwen = kimi.clone();
    qwen.model = "qwen3.5-397b-a17b-nvfp4".into();
    qwen.model_family = "qwen".into();
    qwen.attention = "gqa+linear".into();
    qwen.moe_shape = "512 experts top-10".into();
    let (a, b) = (m.ln_interval(&kimi), m.ln_interval(&qwen));
    assert!(b.half() > a.half(), "{a:?} vs {b:?}");
    assert!(a.novelties.is_empty(), "{a:?}");
    for (what, sigma) in &b.novelties {
        assert_eq!(
            b.widened_by.iter().any(|w| w.starts_with(what.as_str())),
            *sigma > 0.0,
            "{what}: {b:?}"
        );
    }
    assert_eq!(b.novelties.len(), 3, "{b:?}");
}

fn choice<'a>(name: &'a str, tok_s: f64, regime: &'a Regime) -> verdict::Choice<'a> {
    verdict::Choice {
        name,
        tok_s,
        regime,
        measure: "bench_serving",
    }
}

#[test]
fn a_verdict_names_the_novelties_and_whether_both_sides_share_them() {
    let m = fit(&families(0.4), "dev.json", &[], &[]);
    let (novel, seen) = (with_family("fz"), with_family("fa"));
    let both = verdict::odds(&m, choice("a", 120.0, &novel), choice("b", 100.0, &novel));
    assert_eq!(both.novel, vec!["model family fz (both)".to_string()]);
    assert!(
        both.sentence.contains("off the dev set's ground"),
        "{both:?}"
    );
    let one = verdict::odds(&m, choice("a", 120.0, &novel), choice("b", 100.0, &seen));
    assert_eq!(one.novel, vec!["model family fz (a)".to_string()]);
    assert!(one.probability < both.probability, "{one:?} vs {both:?}");
    let none = verdict::odds(&m, choice("a", 120.0, &seen), choice("b", 100.0, &seen));
    assert!(none.novel.is_empty() && !none.sentence.contains("ground"));
}

/// First-contact sources (never tuned on) that spread wider than the dev set's own widen a new
/// source's interval, and only a new source's: the dev set's own ground keeps its band, and a
/// narrower first-contact spread never narrows anything.
#[test]
fn first_contact_spread_widens_new_sources_only() {
    let dev = offset_sources(&[0.0, 0.05, -0.05, 0.02, -0.02], &[60, 40, 30, 20, 10]);
    let far = offset_sources(&[0.3, -0.25, 0.2, -0.3], &[20, 20, 20, 20]);
    let near = offset_sources(&[0.01, -0.01, 0.0, 0.02], &[20, 20, 20, 20]);
    let plain = fit(&dev, "dev.json", &[], &[]);
    let wide = fit(&dev, "dev.json", &[], &[fc_set(far.clone())]);
    let narrow = fit(&dev, "dev.json", &[], &[fc_set(near.clone())]);
    assert!(wide.first_contact.as_ref().unwrap().sigma_ln > plain.between.sigma_ln);
    let mut seen = regime("kimi", &[]);
    seen.source = "page0".into();
    let mut other_box = regime("kimi", &[]);
    other_box.machine = "another box".into();
    assert_eq!(wide.ln_interval(&seen), plain.ln_interval(&seen));
    assert!(wide.ln_interval(&other_box).half() > plain.ln_interval(&other_box).half() + 0.05);
    // a narrower spread never narrows (the centre is the first-contact sources' own: next test)
    let (n, p) = (
        narrow.ln_interval(&other_box),
        plain.ln_interval(&other_box),
    );
    assert!((n.half() - p.half()).abs() < 1e-12, "{n:?} vs {p:?}");
    // the leave-one-source-out check is the dev set's own
    assert_eq!(wide.loso, plain.loso);
}

/// A new source's interval is centred where the first-contact sources (never tuned on) sit, the
/// median of their medians, not where the dev set's own sources do: first-contact pages that all
/// measure below their predictions move a new source's interval down by their centre, leave the
/// dev set's own ground alone, and cancel in a verdict between two predictions of one new box.
#[test]
fn a_new_sources_interval_is_centred_on_the_first_contact_sources() {
    let dev = offset_sources(&[0.0, 0.05, -0.05, 0.02, -0.02], &[60, 40, 30, 20, 10]);
    let low = offset_sources(&[-0.1, -0.15, -0.05, -0.12, -0.2], &[20; 5]);
    let set = fc_set(low);
    let plain = fit(&dev, "dev.json", &[], &[]);
    let m = fit(&dev, "dev.json", &[], &[set]);
    let fc = m.first_contact.as_ref().unwrap();
    assert!(
        (fc.between.centre_ln + 0.12).abs() < 0.02,
        "{:?}",
        fc.between
    );
    assert_eq!(m.new_source_centre_ln(), fc.between.centre_ln);
    assert_eq!(plain.new_source_centre_ln(), plain.between.centre_ln);
    let mut other_box = regime("kimi", &[]);
    other_box.machine = "another box".into();
    let (a, b) = (m.ln_interval(&other_box), plain.ln_interval(&other_box));
    let mid = |i: &LnInterval| (i.lo + i.hi) / 2.0;
    let moved = mid(&a) - mid(&b);
    assert!(
        (moved - (fc.between.centre_ln - plain.between.centre_ln)).abs() < 1e-9,
        "{a:?} vs {b:?}"
    );
    assert!(
        a.widened_by.iter().any(|w| w.contains("new source -0.1")),
        "{a:?}"
    );
    let mut seen = regime("kimi", &[]);
    seen.source = "page0".into();
    assert_eq!(m.ln_interval(&seen), plain.ln_interval(&seen));
    let faster = verdict::odds(
        &m,
        choice("a", 115.0, &other_box),
        choice("b", 100.0, &other_box),
    );
    let before = verdict::odds(
        &plain,
        choice("a", 115.0, &other_box),
        choice("b", 100.0, &other_box),
    );
    assert!(faster.probability > 0.5 && faster.probability <= before.probability + 1e-9);
}

/// A new source's interval sits where the interval covering the first-contact figures is
/// shortest, not at the median of their sources' medians when that is pulled off by a few pages
/// of a few figures each: three pages of 40 figures near +5% and four of two figures each far
/// below put the median of the medians at -0.2, where covering 80% of the figures would take a
/// sigma wide enough for both; the centre moves up (within the medians' interquartile range), the
/// sigma narrows, and the figures are still covered.
#[test]
fn a_new_sources_centre_is_where_the_covering_interval_is_shortest() {
    let dev = offset_sources(&[0.0, 0.05, -0.05, 0.02, -0.02], &[60, 40, 30, 20, 10]);
    let mut fc_rs = offset_sources(
        &[0.05, 0.06, 0.04, -0.15, -0.2, -0.25, -0.3],
        &[40, 40, 40, 2, 2, 2, 2],
    );
    for r in &mut fc_rs {
        r.source = format!("fc-{}", r.source);
        r.regime.source = r.source.clone();
    }
    let set = fc_set(fc_rs.clone());
    let m = fit(&dev, "dev.json", &[], &[set]);
    let fc = m.first_contact.as_ref().unwrap();
    assert!(
        (fc.between.centre_ln + 0.2).abs() < 0.01,
        "{:?}",
        fc.between
    );
    let centre = fc.centre_ln.unwrap();
    assert!(
        centre > fc.between.centre_ln + 0.1 && centre < 0.06,
        "{centre}"
    );
    assert_eq!(m.new_source_centre_ln(), centre);
    let refs: Vec<&Residual> = fc_rs.iter().collect();
    assert!(error_fit::coverage(&m, &refs).coverage_pct >= 80.0);
    // the same sigma about the median of the medians leaves most figures out
    let mut at_median = m.clone();
    at_median.first_contact.as_mut().unwrap().centre_ln = None;
    assert_eq!(at_median.new_source_centre_ln(), fc.between.centre_ln);
    assert!(error_fit::coverage(&at_median, &refs).coverage_pct < 50.0);
}

/// First-contact sources whose predictions stand on extrapolated kernels (decode attention
/// without a kernel table) spread wider than those on measured kernels: each kernel ground's
/// sigma is fitted apart, so a new source's prediction on measured kernels gets a narrower
/// interval than the pooled one and one on extrapolated kernels a wider one; a ground with
/// fewer than three sources takes the pooled sigma.
#[test]
fn first_contact_sigma_is_fitted_by_kernel_ground() {
    let dev = offset_sources(&[0.0, 0.05, -0.05, 0.02, -0.02], &[60, 40, 30, 20, 10]);
    // first-contact pages the dev set lacks, their predictions' kernels extrapolated or not
    let pages = |offsets: &[f64], tag: &str, extrapolated: bool| {
        let mut rs = offset_sources(offsets, &vec![20; offsets.len()]);
        for r in &mut rs {
            r.source = format!("{tag}-{}", r.source);
            r.regime.source = r.source.clone();
            if extrapolated {
                r.regime.flags = vec![Flag::AttentionWithoutKernelData.name().to_string()];
            }
        }
        rs
    };
    let measured = pages(&[0.08, -0.06, 0.04], "m", false);
    let extrapolated = pages(&[0.4, -0.35, 0.3, -0.3], "x", true);
    let both: Vec<Residual> = measured.iter().chain(&extrapolated).cloned().collect();
    let m = fit(&dev, "dev.json", &[], &[fc_set(both)]);
    let fc = m.first_contact.as_ref().unwrap();
    let ground = |g: &str| fc.grounds.iter().find(|x| x.ground == g).unwrap();
    let (on, off) = (ground("kernels measured"), ground("kernels extrapolated"));
    assert!(
        on.sigma_ln < fc.sigma_ln && fc.sigma_ln < off.sigma_ln,
        "{fc:?}"
    );
    assert_eq!((on.sources, off.sources), (3, 4));
    let mut plain = regime("kimi", &[]);
    plain.machine = "another box".into();
    let mut extrapolating = plain.clone();
    extrapolating.flags = vec![Flag::AttentionWithoutKernelData.name().to_string()];
    let (a, b) = (m.ln_interval(&plain), m.ln_interval(&extrapolating));
    assert_eq!(a.source_sigma, on.sigma_ln.max(m.between.sigma_ln));
    assert_eq!(b.source_sigma, off.sigma_ln);
    assert!(b.half() > a.half() + 0.1, "{a:?} vs {b:?}");
    // two sources on measured kernels are too few for a ground of their own
    let few = pages(&[0.08, -0.06], "m", false);
    let thin = fit(
        &dev,
        "dev.json",
        &[],
        &[fc_set(few.into_iter().chain(extrapolated).collect())],
    );
    let fc = thin.first_contact.as_ref().unwrap();
    assert_eq!(fc.grounds.len(), 1, "{fc:?}");
    assert_eq!(
        thin.new_source_sigma_ln(&plain),
        fc.sigma_ln.max(thin.between.sigma_ln)
    );
}

/// The step under decode context parallelism is a cause of its own: its figures, further below
/// the prediction than the other unpriced steps', set its ground's centre, and neither cause's
/// spread is narrower than every unpriced step's pooled (a cause of a few sources is known no
/// better than all of them together): the other cause, narrower alone, is held there.
#[test]
fn an_unpriced_step_under_dcp_has_its_own_ground_and_neither_cause_is_narrower_than_both() {
    let dev = offset_sources(&[0.0, 0.05, -0.05, 0.02, -0.02], &[60, 40, 30, 20, 10]);
    let pages = |offsets: &[f64], tag: &str, flag: Option<Flag>| {
        let mut rs = offset_sources(offsets, &vec![20; offsets.len()]);
        for r in &mut rs {
            r.source = format!("{tag}-{}", r.source);
            r.regime.source = r.source.clone();
            r.regime.flags = flag.iter().map(|f| f.name().to_string()).collect();
        }
        rs
    };
    let priced = pages(&[0.05, -0.05, 0.0, 0.02], "p", None);
    let extend = pages(
        &[-0.1, -0.05, -0.15],
        "e",
        Some(Flag::SpeculativeStepUnpriced),
    );
    let dcp = pages(
        &[-0.5, -0.2, -0.7],
        "d",
        Some(Flag::SpeculativeStepUnderDcpUnpriced),
    );
    let all: Vec<Residual> = priced.iter().chain(&extend).chain(&dcp).cloned().collect();
    let m = fit(&dev, "dev.json", &[], &[fc_set(all.clone())]);
    let fc = m.first_contact.as_ref().unwrap();
    let ground = |g: &str| fc.grounds.iter().find(|x| x.ground == g).unwrap().clone();
    let (e, d) = (
        ground("speculative step unpriced"),
        ground("speculative step under DCP unpriced"),
    );
    let e_centre = e.centre_ln.unwrap_or_else(|| m.new_source_centre_ln());
    assert!(d.centre_ln.unwrap() < e_centre - 0.1, "{e:?} {d:?}");
    assert!(d.coverage.coverage_pct >= 80.0, "{d:?}");
    // every unpriced step on one ground: its spread is the other cause's floor
    let pooled: Vec<Residual> = all
        .iter()
        .cloned()
        .map(|mut r| {
            if r.regime
                .flags
                .iter()
                .any(|f| f == Flag::SpeculativeStepUnderDcpUnpriced.name())
            {
                r.regime.flags = vec![Flag::SpeculativeStepUnpriced.name().to_string()];
            }
            r
        })
        .collect();
    let one = fit(&dev, "dev.json", &[], &[fc_set(pooled)]);
    let both = one.first_contact.as_ref().unwrap().grounds.iter();
    let both = both
        .clone()
        .find(|g| g.ground == "speculative step unpriced")
        .unwrap();
    for g in [&e, &d] {
        assert!(g.sigma_ln >= both.sigma_ln - 1e-12, "{g:?} vs {both:?}");
    }
    // predicted a little faster, the side on the DCP ground is the likelier slower: the odds
    // call the other side faster and say why, as the pair check calls it
    let mut plain = regime("kimi", &[]);
    plain.machine = "another box".into();
    let mut under_dcp = plain.clone();
    under_dcp.flags = vec![Flag::SpeculativeStepUnderDcpUnpriced.name().to_string()];
    let o = verdict::odds(
        &m,
        verdict::Choice {
            name: "with speculation",
            tok_s: 104.0,
            regime: &under_dcp,
            measure: "a",
        },
        verdict::Choice {
            name: "without",
            tok_s: 100.0,
            regime: &plain,
            measure: "b",
        },
    );
    assert_eq!(o.faster, "without", "{o:?}");
    assert!(o.probability > 0.5, "{o:?}");
    assert!(
        o.sentence
            .starts_with("without is faster than with speculation")
            && o.sentence.contains("ground sits below its figure"),
        "{}",
        o.sentence
    );
    // and the extend cause alone would have been narrower: the floor is what holds it
    let alone: Vec<Residual> = priced.iter().chain(&extend).cloned().collect();
    let own = fit(&dev, "dev.json", &[], &[fc_set(alone)]);
    let own = own.first_contact.as_ref().unwrap().grounds.iter();
    let own = own
        .clone()
        .find(|g| g.ground == "speculative step unpriced")
        .unwrap();
    assert!(own.sigma_ln < e.sigma_ln, "{own:?} vs {e:?}");
}

/// An unpriced speculative step leaves out time the step spends, never time it saves: its
/// first-contact figures sit below the others', and the ground is centred where they are (never
/// above the pooled centre), which covers them with a shorter interval than one about the pooled
/// centre. A verdict between a prediction on it and one not on it (MTP on against off on one
/// box) counts the difference; a ground without a known sign keeps the pooled centre.
#[test]
fn an_unpriced_speculative_steps_interval_is_centred_below_where_its_figures_sit() {
    let dev = offset_sources(&[0.0, 0.05, -0.05, 0.02, -0.02], &[60, 40, 30, 20, 10]);
    let pages = |offsets: &[f64], tag: &str, flags: &[Flag]| {
        let mut rs = offset_sources(offsets, &vec![20; offsets.len()]);
        for r in &mut rs {
            r.source = format!("{tag}-{}", r.source);
            r.regime.source = r.source.clone();
            r.regime.flags = flags.iter().map(|f| f.name().to_string()).collect();
        }
        rs
    };
    let priced = pages(&[0.05, -0.05, 0.0, 0.02], "p", &[]);
    // measured 25-45% below the prediction: the verify step costs more than priced
    let unpriced = pages(
        &[-0.3, -0.45, -0.25, -0.4],
        "u",
        &[Flag::SpeculativeStepUnpriced],
    );
    let all: Vec<Residual> = priced.iter().chain(&unpriced).cloned().collect();
    let m = fit(&dev, "dev.json", &[], &[fc_set(all)]);
    let fc = m.first_contact.as_ref().unwrap();
    let ground = |g: &str| fc.grounds.iter().find(|x| x.ground == g).unwrap();
    let pooled = m.new_source_centre_ln();
    let own = ground("speculative step unpriced")
        .centre_ln
        .expect("a centre of its own");
    assert!(own < pooled - 0.1, "{own} vs {pooled}");
    assert_eq!(ground("kernels measured").centre_ln, None);
    let mut plain = regime("kimi", &[]);
    plain.machine = "another box".into();
    let mut step = plain.clone();
    step.flags = vec![Flag::SpeculativeStepUnpriced.name().to_string()];
    assert_eq!(m.new_source_centre_ln_of(&plain), pooled);
    assert_eq!(m.new_source_centre_ln_of(&step), own);
    let i = m.ln_interval(&step);
    assert!((i.ground_offset - (own - pooled)).abs() < 1e-12, "{i:?}");
    assert_eq!(m.ln_interval(&plain).ground_offset, 0.0);
    // its own figures are covered, with a shorter interval than about the pooled centre
    let refs: Vec<&Residual> = unpriced.iter().collect();
    let at_own = error_fit::coverage(&m, &refs);
    assert!(at_own.coverage_pct >= 80.0, "{at_own:?}");
    let mut pooled_only = m.clone();
    for g in &mut pooled_only.first_contact.as_mut().unwrap().grounds {
        g.centre_ln = None;
    }
    let at_pooled = error_fit::coverage(&pooled_only, &refs);
    assert!(
        at_pooled.coverage_pct < at_own.coverage_pct,
        "{at_pooled:?} vs {at_own:?}"
    );
    // predicted alike, the side whose step is unpriced is the one expected slower
    let p = probability_faster(
        &m,
        Side {
            speed: 100.0,
            regime: &step,
        },
        Side {
            speed: 100.0,
            regime: &plain,
        },
    );
    assert!(p < 0.5, "{p}");
    // figures above the others do not move it up: the step's error has one sign
    let above = pages(
        &[0.3, 0.45, 0.25, 0.4],
        "u",
        &[Flag::SpeculativeStepUnpriced],
    );
    let up = fit(
        &dev,
        "dev.json",
        &[],
        &[fc_set(priced.iter().chain(&above).cloned().collect())],
    );
    let g = up.first_contact.as_ref().unwrap().grounds.iter();
    assert!(g.clone().any(|g| g.ground == "speculative step unpriced"));
    assert!(g.clone().all(|g| g.centre_ln.is_none()));
}

/// A ground narrower than the pooled first-contact sigma is pulled toward it by its sources (the
/// pooled sigma counting as FIRST_CONTACT_MIN_SOURCES more); a wider one is kept.
#[test]
fn a_narrow_ground_of_few_sources_is_pulled_toward_the_pooled_sigma() {
    let shrunk = error_fit::shrunk_toward_pooled(0.07, 3, 0.2);
    assert!((shrunk - ((3.0 * 0.0049 + 3.0 * 0.04) / 6.0f64).sqrt()).abs() < 1e-12);
    assert!(shrunk > 0.07 && shrunk < 0.2);
    // more sources, less pull
    assert!(error_fit::shrunk_toward_pooled(0.07, 30, 0.2) < shrunk);
    assert_eq!(error_fit::shrunk_toward_pooled(0.355, 6, 0.2), 0.355);
}

/// A verdict between two predictions on new ground reads their sigmas at the scale their
/// intervals are calibrated at (`quantile_z / Z_80`): a fit that puts the same interval as a
/// smaller z and a larger sigma states the same confidence, and on the dev set's own ground
/// (no new source) z plays no part.
#[test]
fn a_verdict_is_as_sure_however_the_fit_splits_an_interval_between_z_and_sigma() {
    let refs = offset_sources(&[0.0, 0.2, -0.1, 0.1, 0.05], &[100, 40, 30, 20, 10]);
    let base = fit(&refs, "dev.json", &[], &[]);
    let mut new_box = regime("kimi", &[]);
    new_box.machine = "another box".into();
    new_box.model = "qwen".into();
    let split = |z: f64| {
        let mut m = base.clone();
        // the same new-source interval, z · sigma, split another way
        let k = base.quantile_z / z;
        m.quantile_z = z;
        m.between.sigma_ln = base.between.sigma_ln * k;
        m
    };
    let p = |m: &ErrorModel, a: &Regime, b: &Regime| {
        let rho = m.correlation(a, b);
        probability_with(
            m,
            Side {
                speed: 115.0,
                regime: a,
            },
            Side {
                speed: 100.0,
                regime: b,
            },
            rho,
        )
    };
    let seen = regime("kimi", &[]);
    for z in [0.8, 1.0, 1.6] {
        let m = split(z);
        let (wide, narrow) = (
            m.ln_interval(&new_box).half(),
            base.ln_interval(&new_box).half(),
        );
        let (pm, pb) = (p(&m, &new_box, &seen), p(&base, &new_box, &seen));
        assert!(
            (pm - pb).abs() < 0.02,
            "z {z}: {pm} vs {pb} (half-widths {wide} vs {narrow})"
        );
        assert_eq!(p(&m, &seen, &seen), p(&base, &seen, &seen));
    }
}

/// A decode-attention table read past its rows (beyond its longest context or largest batch)
/// raises its own kernel flag, and a prediction carrying it stands on the extrapolated-kernels
/// ground; a point between measured rows raises none.
#[test]
fn attention_priced_past_its_tables_rows_is_an_extrapolated_kernel() {
    use crate::cost::decode_table::Basis;
    let past = format!(
        "decode attention: SGLang's measured DSA module (b200 trtllm) at 64 rows × 8704 cached tokens: 58.0 µs a layer + 72.5 µs of indexer, {}",
        Basis::ContextExtrapolated.describe()
    );
    let between = format!(
        "decode attention: kernel table (vllm flash_attn gqa) at 4 requests × 1000 cached tokens: {}, 9.1 µs a layer",
        Basis::Interpolated.describe()
    );
    let flags = Flag::from_notes(&[past, between.clone()]);
    assert_eq!(flags, vec!["attention-extrapolated"]);
    let names: Vec<&str> = flags.iter().map(String::as_str).collect();
    assert_eq!(
        first_contact_ground(&regime("glm-5-fp8", &names)),
        "kernels extrapolated"
    );
    assert!(Flag::from_notes(&[between]).is_empty());
}

/// First-contact MTP on/off pairs of new pages, the on side on the prior acceptance: each
/// pair's measured gain misses its predicted one (×1.2) by `miss` ln, alternately up and down.
fn prior_pairs(miss: f64, n: usize) -> Vec<Residual> {
    let mut out = Vec::new();
    for g in 0..n {
        let sign = if g % 2 == 0 { 1.0 } else { -1.0 };
        for (on, gain) in [(false, 1.0), (true, 1.2)] {
            let mut r = regime("kimi", &[]);
            r.source = format!("fc{}", g % 4);
            r.machine = "another box".into();
            if on {
                r.speculation = crate::records::speculation::AcceptOrigin::Assumed
                    .name()
                    .into();
            }
            let measured = 100.0 * gain * if on { (sign * miss).exp() } else { 1.0 };
            out.push(Residual {
                id: format!("p{g}-{on}"),
                source: r.source.clone(),
                regime: r,
                predicted: 100.0 * gain,
                measured,
                higher_is_faster: true,
                group: Some(format!("pair{g}")),
            });
        }
    }
    out
}

/// A prior acceptance on one side only widens a verdict by the spread first-contact MTP on/off
/// pairs measure in the gain: pairs whose gains miss by ±0.25 ln fit a spread that takes a
/// 20% predicted gain below the bar; pairs measured as predicted fit none; too few pairs fit
/// none; and a verdict whose two sides both run on the prior (or neither) is not widened.
#[test]
fn a_prior_acceptance_on_one_side_widens_the_verdict_by_the_gain_misses_measured() {
    let dev = offset_sources(&[0.0, 0.05, -0.05, 0.02, -0.02], &[60, 40, 30, 20, 10]);
    let wide = fit(&dev, "dev.json", &[], &[fc_set(prior_pairs(0.25, 20))]);
    let exact = fit(&dev, "dev.json", &[], &[fc_set(prior_pairs(0.0, 20))]);
    let few = fit(&dev, "dev.json", &[], &[fc_set(prior_pairs(0.25, 3))]);
    let fc = wide.first_contact.as_ref().unwrap();
    assert_eq!(fc.acceptance_gain_pairs, 20);
    assert!(fc.acceptance_gain_sigma_ln > 0.15, "{fc:?}");
    assert_eq!(exact.acceptance_gain_sigma_ln(), 0.0);
    assert_eq!(few.acceptance_gain_sigma_ln(), 0.0);
    let mut off = regime("kimi", &[]);
    off.machine = "another box".into();
    let mut on = off.clone();
    on.speculation = crate::records::speculation::AcceptOrigin::Assumed
        .name()
        .into();
    let p = |m: &ErrorModel, a: &Regime, b: &Regime| {
        let (a, b) = sides_120_100(a, b);
        probability_faster(m, a, b)
    };
    assert!(
        p(&exact, &on, &off) >= VERDICT_BAR,
        "{}",
        p(&exact, &on, &off)
    );
    assert!(p(&wide, &on, &off) < VERDICT_BAR, "{}", p(&wide, &on, &off));
    assert_eq!(p(&wide, &on, &on), p(&exact, &on, &on));
    assert_eq!(p(&wide, &off, &off), p(&exact, &off, &off));
}

/// Time-to-first-token figures of `sources` pages, `per` each: measured `factor` × the
/// prediction, spread evenly by ±`spread` (ln), on the dev set's ground.
fn ttft_figures(sources: usize, per: usize, factor: f64, spread: f64) -> Vec<Residual> {
    (0..sources)
        .flat_map(|s| {
            (0..per).map(move |i| {
                let u = i as f64 / (per - 1).max(1) as f64 * 2.0 - 1.0;
                Residual {
                    id: format!("t{s}-{i}"),
                    source: format!("page{s}"),
                    regime: regime("kimi", &[]),
                    predicted: 100.0,
                    measured: 100.0 * factor * (spread * u).exp(),
                    higher_is_faster: false,
                    group: None,
                }
            })
        })
        .collect()
}

#[test]
fn a_time_to_first_token_sits_on_its_own_ground() {
    let dev = residuals(0.1);
    // measured 2.5x the replay's, as public runs' times to first token sit
    let ttft = ttft_figures(4, 3, 2.5, 0.3);
    let m = error_fit::fit_with_first_token(&dev, "dev.json", &[], &[], &ttft);
    let g = m
        .first_token
        .as_ref()
        .expect("12 figures of 4 sources fit a ground");
    // slower than predicted: its centre below 0, no further than the figures' median offset
    // from their regime's centre
    let regime_centre = m.ln_interval(&regime("kimi", &[])).centre();
    assert!(
        g.centre_ln < -0.5 && g.centre_ln >= -(2.5f64.ln()) - regime_centre - 0.005,
        "{g:?} (regime centre {regime_centre})"
    );
    let r = regime("kimi", &[]);
    let own = m.figure_range(100.0, FigureKind::FirstToken, &r).range;
    let plain = m.figure_range(100.0, FigureKind::Latency, &r).range;
    let inside = |rg: [f64; 2]| {
        ttft.iter()
            .filter(|t| rg[0] <= t.measured && t.measured <= rg[1])
            .count()
    };
    // the per-token latency's interval misses them all; the first token's covers 80% or more
    assert_eq!(inside(plain), 0, "{plain:?}");
    assert!(inside(own) * 10 >= ttft.len() * 8, "{own:?}");
    // it lies above the point (the replay leaves time out), and says why it was moved
    assert!(own[0] < 100.0 * 2.5 && own[1] > 100.0 * 2.5, "{own:?}");
    let why = m.figure_range(100.0, FigureKind::FirstToken, &r).widened_by;
    assert!(
        why.iter().any(|w| w.contains("time to first token")),
        "{why:?}"
    );
    // a throughput's and a per-token latency's intervals are not touched by it
    let without = error_fit::fit(&dev, "dev.json", &[], &[]);
    assert_eq!(
        m.figure_range(100.0, FigureKind::Throughput, &r).range,
        without.range(100.0, true, &r).range
    );
    assert_eq!(plain, without.range(100.0, false, &r).range);
}

#[test]
fn a_first_token_ground_needs_three_sources_and_never_moves_faster() {
    let dev = residuals(0.1);
    // two pages are too few: one far page would set it
    let two = ttft_figures(2, 6, 2.5, 0.3);
    let m = error_fit::fit_with_first_token(&dev, "dev.json", &[], &[], &two);
    assert!(m.first_token.is_none());
    let r = regime("kimi", &[]);
    assert_eq!(
        m.figure_range(100.0, FigureKind::FirstToken, &r).range,
        m.figure_range(100.0, FigureKind::Latency, &r).range
    );
    // figures faster than predicted keep the centre at 0 (the time left out only adds)
    let fast = ttft_figures(4, 3, 0.5, 0.3);
    let m = error_fit::fit_with_first_token(&dev, "dev.json", &[], &[], &fast);
    let g = m.first_token.expect("a ground");
    assert_eq!(g.centre_ln, 0.0, "{g:?}");
    assert!(
        g.half_ln > 0.0 && g.half_ln <= FIRST_TOKEN_HALF_BOUND_LN,
        "{g:?}"
    );
}
