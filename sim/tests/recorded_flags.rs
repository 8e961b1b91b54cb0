//! A runs file records how its server was launched (`layout`, `flags`): `validate --measured
//! FILE#RUN` predicts the run as it ran, says which flags it took from the file and which
//! clauses were prose, and refuses a command-line flag that contradicts the record.

use crate::common;

use common::{UNWRAPPED, sim_output_at};

const RUN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/user-box.json#glm47-fp8-tp8-sweep"
);

fn validate(extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "validate",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "glm-4.7-fp8",
        "--measured",
        RUN,
        "--format",
        "json",
    ];
    args.extend(extra);
    // the recorded-flags note is matched whole
    sim_output_at(&args, Some(UNWRAPPED))
}

#[test]
fn the_runs_recorded_flags_apply_and_prose_is_named() {
    let (code, out, err) = validate(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("the run's recorded flags apply: --tp 8 --disable-cuda-graph --chunked-prefill-size 8192 --mem-fraction-static 0.848 (not flags, not read: tuned Triton fused-MoE configs for this GPU)"),
        "{err}"
    );
    // eager, as the run was: ~110 ms per step at 2 requests even uncalibrated is far from the
    // ~20 ms of a CUDA-graph step
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let first = v["points"][0]["predicted"].as_f64().unwrap();
    assert!((30.0..80.0).contains(&first), "{first} tok/s at 2 requests");
    // the same flag given the same way on the command line is no conflict
    let (code, _, err) = validate(&["--disable-cuda-graph", "--tp", "8"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_flag_the_record_contradicts_is_refused_in_one_line() {
    let (code, out, err) = validate(&["--mem-fraction-static", "0.9"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    let last = err.trim().lines().last().unwrap();
    assert!(
        last.contains("--mem-fraction-static 0.9 (command line)")
            && last.contains("--mem-fraction-static 0.848 (the measured run's recorded flags)"),
        "{err}"
    );
}
