//! Issue 21: a proptest feeds arbitrary CSV cells, JSONL values and text to the reader of
//! `--measured` files (`sim::bench_serving::read::load`): whatever it accepts is a plausible measurement
//! (every figure finite and not negative, a positive throughput, a concurrency of at least 1).

use proptest::prelude::*;
use sim::bench_serving::read::{LengthHints, MeasuredPoint, load};

/// What a point that `load` accepts must be: every figure finite and not negative, every
/// throughput positive, a stated concurrency at least 1.
fn plausible(p: &MeasuredPoint) -> bool {
    let m = &p.metrics;
    let figures = [
        m.duration,
        m.output_throughput,
        m.total_throughput,
        m.request_throughput,
        m.mean_ttft_ms,
        m.median_ttft_ms,
        m.mean_tpot_ms,
        m.median_tpot_ms,
        m.mean_itl_ms,
        m.mean_e2e_latency_ms,
    ];
    figures.iter().flatten().all(|v| v.is_finite() && *v >= 0.0)
        && m.output_throughput.is_some_and(|t| t > 0.0)
        && p.workload.max_concurrency != Some(0)
}

fn check(name: &str, text: &str) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    if let Ok(set) = load(path.to_str().unwrap(), LengthHints::default()) {
        for p in &set.points {
            prop_assert!(plausible(p), "{text:?} gave {p:?}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn any_csv_cells_give_plausible_points_or_an_error(
        cells in proptest::collection::vec("[-+0-9.eEinfaN~k ]{0,8}", 4..8)
    ) {
        let row = cells.join(",");
        check("m.csv", &format!(
            "concurrency,input_len,output_len,output_tok_s,total_tok_s,mean_ttft_ms,mean_tpot_ms\n{row}\n"
        ))?;
    }

    #[test]
    fn any_jsonl_values_give_plausible_points_or_an_error(
        v in proptest::collection::vec(
            prop_oneof!["-?[0-9]{1,4}(\\.[0-9])?(e[0-9]{1,3})?", "NaN|Infinity|-Infinity|null",
                "\"[-~0-9.,ek a-z]{0,8}\""],
            6,
        )
    ) {
        check("m.jsonl", &format!(
            r#"{{"completed": {}, "duration": {}, "output_throughput": {}, "max_concurrency": {}, "random_input_len": 100, "random_output_len": 100, "mean_ttft_ms": {}, "mean_tpot_ms": {}}}"#,
            v[0], v[1], v[2], v[3], v[4], v[5]
        ))?;
    }

    #[test]
    fn any_text_as_a_measured_file_never_panics(s in "\\PC{0,200}") {
        check("m.jsonl", &s)?;
        check("m.csv", &s)?;
    }
}
