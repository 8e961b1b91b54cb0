//! Error lines name the operation that failed and print each cause once (issue 21): a typed
//! error that prints its io `{source}` is not followed by the same io error again.

use assert_cmd::Command;

fn stderr_of(args: &[&str]) -> (i32, String) {
    let o = Command::cargo_bin("sim")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_failed_write_says_cannot_write_with_one_os_error() {
    // sysfs: a folder that exists, in which no one (root included) may create files.
    let (code, err) = stderr_of(&[
        "run",
        "--machine",
        "h200-x8",
        "--model",
        "glm-5-nvfp4",
        "--tp",
        "8",
        "--num-prompts",
        "4",
        "--output-file",
        "/sys/shardwise-runs.jsonl",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot write /sys/shardwise-runs.jsonl: "),
        "{err}"
    );
    assert!(!err.contains("cannot read"), "{err}");
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
    let (code, err) = stderr_of(&[
        "report",
        "--machine",
        "h200-x8",
        "--out",
        "/sys/shardwise-report",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
}

#[test]
fn a_missing_input_prints_its_os_error_once() {
    let (code, err) = stderr_of(&[
        "calibrate",
        "--machine",
        "h200-x8",
        "--server-log",
        "/no/such/server.log",
        "--output",
        "/tmp/never-written.json",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/no/such/server.log"), "{err}");
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
}
