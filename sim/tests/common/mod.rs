//! Helpers shared by the command-line tests: run the `sim` binary as a user would.
#![allow(dead_code)]

use assert_cmd::Command;

/// Exit code, stdout and stderr of `sim args…`.
pub fn sim_output(args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("sim")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Stdout of `sim args…`, which must succeed (its stderr in the panic otherwise).
pub fn sim_stdout(args: &[&str]) -> String {
    let (code, out, err) = sim_output(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}
