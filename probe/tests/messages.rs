//! The one-line errors a user reads (issue 21): a failed write says "cannot write", no io error
//! is printed twice, `import` without `--out` never replaces an existing `./profile.json`, and
//! `diff` rows say which GPUs they compare.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn probe() -> Command {
    let mut c = Command::cargo_bin("probe").unwrap();
    c.env_remove("PROBE_FAKE_MACHINE");
    c
}

/// Runs `probe` and returns (exit code, stderr).
fn run(c: &mut Command) -> (i32, String) {
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn assert_one_os_error(stderr: &str) {
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert_eq!(stderr.matches("(os error").count(), 1, "{stderr}");
}

#[test]
fn a_failed_write_says_cannot_write_and_the_os_error_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("no-such-folder/p.json");
    let (code, err) = run(probe()
        .args(["import", "p2p"])
        .arg(fixture("p2pBandwidthLatencyTest_vm.txt"))
        .arg("--out")
        .arg(&out));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!("error: cannot write {}: ", out.display())),
        "{err}"
    );
    assert!(err.contains("No such file or directory"), "{err}");
    assert!(!err.contains("cannot read"), "{err}");
    assert_one_os_error(&err);
}

/// sysfs refuses new files even to root: the kernel's own reason, once.
#[test]
fn a_write_the_kernel_refuses_names_its_reason_once() {
    let (code, err) = run(probe()
        .args(["import", "p2p"])
        .arg(fixture("p2pBandwidthLatencyTest_vm.txt"))
        .args(["--out", "/sys/shardwise-probe.json"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("error: cannot write /sys/shardwise-probe.json: "),
        "{err}"
    );
    assert_one_os_error(&err);
}

#[test]
fn a_missing_input_names_the_file_and_the_os_error_once() {
    let (code, err) = run(probe().args(["diff", "/no/such/a.json", "/no/such/b.json"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot read /no/such/a.json"), "{err}");
    assert_one_os_error(&err);
}

#[test]
fn import_without_out_refuses_to_replace_an_existing_profile_json() {
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("profile.json");
    std::fs::write(&existing, "an earlier run").unwrap();
    for args in [
        vec!["import", "p2p", "LOG"],
        vec!["import", "nccl-tests", "LOG"],
    ] {
        let log = if args[1] == "p2p" {
            fixture("p2pBandwidthLatencyTest_vm.txt")
        } else {
            fixture("all_reduce_perf_4gpu.log")
        };
        let (code, err) = run(probe().current_dir(dir.path()).args(&args[..2]).arg(&log));
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("profile.json already exists"), "{err}");
        assert!(err.contains("pass --out FILE, or remove"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&existing).unwrap(),
            "an earlier run"
        );
    }
    // Given explicitly, --out is the user's word: it replaces the file.
    let (code, err) = run(probe()
        .current_dir(dir.path())
        .args(["import", "p2p"])
        .arg(fixture("p2pBandwidthLatencyTest_vm.txt"))
        .args(["--out", "profile.json"]));
    assert_eq!(code, 0, "{err}");
    assert!(models::MachineProfile::load(&existing).is_ok());
}

#[test]
fn import_without_out_writes_profile_json_when_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run(probe()
        .current_dir(dir.path())
        .args(["import", "p2p"])
        .arg(fixture("p2pBandwidthLatencyTest_vm.txt")));
    assert_eq!(code, 0, "{err}");
    assert!(models::MachineProfile::load(&dir.path().join("profile.json")).is_ok());
}

#[test]
fn run_without_out_refuses_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("profile.json"), "an earlier run").unwrap();
    let (code, err) = run(probe()
        .current_dir(dir.path())
        .args(["run", "--quick", "--fake-machine"])
        .arg(fixture("fake-4gpu-vm.json")));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("profile.json already exists"), "{err}");
}

#[test]
fn diff_rows_name_their_gpu_pair() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.json");
    let (code, err) = run(probe()
        .args(["import", "p2p"])
        .arg(fixture("p2pBandwidthLatencyTest_vm.txt"))
        .arg("--out")
        .arg(&p));
    assert_eq!(code, 0, "{err}");
    let o = probe()
        .args(["diff", "--format", "json"])
        .arg(&p)
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p2p: Vec<String> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["section"] == "p2p")
        .map(|r| r["item"].as_str().unwrap().to_string())
        .collect();
    // Every one of the 12 ordered pairs has its rows, and each row names its pair.
    assert!(p2p.len() >= 12 * 3, "{p2p:?}");
    assert!(p2p.iter().all(|i| i.starts_with("GPU ")), "{p2p:?}");
    assert!(
        p2p.iter().any(|i| i.starts_with("GPU 2 -> GPU 3 ")),
        "{p2p:?}"
    );
}
