//! `--closed-rounds` on the command line: the client the user's GLM-4.7 runs used (each round
//! sent at once, the next when all of it finished), named in the run's table; a rate beside it
//! is refused in one line.

use crate::common;

fn run(extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "run",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "glm-4.7-fp8",
        "--tp-size",
        "8",
        "--disable-cuda-graph",
        "--random-input-len",
        "61",
        "--random-output-len",
        "100",
        "--max-concurrency",
        "16",
        "--num-prompts",
        "32",
        "--closed-rounds",
    ];
    args.extend(extra);
    common::sim_output(&args)
}

#[test]
fn closed_rounds_are_named_and_a_rate_beside_them_refused() {
    let (code, out, err) = run(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("closed rounds: 16 sent at once"), "{out}");
    let (code, out, err) = run(&["--request-rate", "4"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("--closed-rounds sends each round at once"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
