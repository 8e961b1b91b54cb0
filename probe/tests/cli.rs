//! The `probe` binary end to end: `run` against the fake machine (the whole path: plan,
//! progress, classification, summary, atomic profile write), the importers, `diff`, and the
//! one-line exit-2 errors.

use assert_cmd::Command;
use models::profile::{CollectiveOp, MachineProfile, PairClass};
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn h200() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x1.json")
}

fn probe() -> Command {
    let mut c = Command::cargo_bin("probe").unwrap();
    c.env_remove("PROBE_FAKE_MACHINE");
    c
}

#[test]
fn fake_vm_run_writes_a_classified_profile_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("vm.json");
    probe()
        .args(["run", "--quick", "--fake-machine"])
        .arg(fixture("fake-4gpu-vm.json"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("P2P peak GB/s"))
        .stdout(predicate::str::contains("HostBounce"))
        .stdout(predicate::str::contains("busbw 256 MiB"));
    let p = MachineProfile::load(&out).unwrap();
    assert_eq!(p.devices.len(), 4);
    assert_eq!(p.links.len(), 12);
    let class = |s, d| {
        p.links
            .iter()
            .find(|l| l.src == s && l.dst == d)
            .unwrap()
            .classification
    };
    assert_eq!(class(0, 1), Some(PairClass::P2p));
    assert_eq!(class(0, 2), Some(PairClass::HostBounce));
    // TP groups placed like TP4×PP2 would: NUMA-local pair first, then the four.
    let groups: Vec<Vec<u32>> = p
        .collectives
        .iter()
        .filter(|c| c.op == CollectiveOp::AllReduce)
        .map(|c| c.devices.clone())
        .collect();
    assert_eq!(groups, vec![vec![0, 1], vec![0, 1, 2, 3]]);
    assert_eq!(p.provenance.hypervisor.as_deref(), Some("KVM (QEMU)"));
    assert_eq!(p.provenance.tool, "probe run");
}

/// `--quick` measures every size on one ordered pair per (link class, NUMA pair) only; every
/// other pair keeps latency, data check and its largest size, and says which pair stood in.
#[test]
fn quick_run_samples_one_pair_per_link_class_and_numa_pair() {
    let dir = tempfile::tempdir().unwrap();
    let run = |quick: bool| {
        let out = dir.path().join(format!("q{quick}.json"));
        let mut c = probe();
        c.arg("run");
        if quick {
            c.arg("--quick");
        }
        c.arg("--fake-machine")
            .arg(fixture("fake-4gpu-vm.json"))
            .arg("--out")
            .arg(&out)
            .assert()
            .success();
        MachineProfile::load(&out).unwrap()
    };
    let p = run(true);
    let sizes = |p: &MachineProfile, s, d| -> Vec<usize> {
        let l = p.links.iter().find(|l| l.src == s && l.dst == d).unwrap();
        l.curves.iter().map(|c| c.points.len()).collect()
    };
    // Fake 4-GPU VM: 0,1 on NUMA 0 and 2,3 on NUMA 1; NODE inside, SYS across.
    for (s, d) in [(0, 1), (0, 2), (2, 0), (2, 3)] {
        assert!(sizes(&p, s, d).iter().all(|&n| n == 3), "{s}->{d} sampled");
    }
    for (s, d) in [(1, 0), (0, 3), (1, 2), (3, 2)] {
        assert!(sizes(&p, s, d).iter().all(|&n| n == 1), "{s}->{d} one size");
        let l = p.links.iter().find(|l| l.src == s && l.dst == d).unwrap();
        assert!(!l.latency_us.is_empty());
        assert!(
            l.evidence
                .iter()
                .any(|e| e.contains("measured over every quick size"))
        );
    }
    let l10 = p.links.iter().find(|l| l.src == 1 && l.dst == 0).unwrap();
    assert!(l10.evidence.iter().any(|e| e.contains("GPU 0→1")));
    assert_eq!(l10.classification, Some(PairClass::P2p));
    let note = p
        .provenance
        .notes
        .iter()
        .find(|n| n.starts_with("--quick P2P"))
        .unwrap();
    assert!(note.contains("2→0 (SYS, NUMA 1→0)"), "{note}");
    // A full run measures every pair over every size.
    let f = run(false);
    assert!(
        f.links
            .iter()
            .all(|l| l.curves.iter().all(|c| c.points.len() == 3))
    );
    assert!(
        !f.provenance
            .notes
            .iter()
            .any(|n| n.starts_with("--quick P2P"))
    );
}

#[test]
fn gpu_subset_only_measures_those_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    probe()
        .args(["run", "--gpus", "0,1", "--fake-machine"])
        .arg(fixture("fake-4gpu-vm.json"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let p = MachineProfile::load(&out).unwrap();
    assert_eq!(p.devices.len(), 2);
    assert_eq!(p.links.len(), 2);
    assert!(p.collectives.iter().all(|c| c.devices == vec![0, 1]));
    assert!(p.host_device.iter().all(|h| h.devices.len() == 1));
}

#[test]
fn only_and_json_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    let assert = probe()
        .args([
            "run",
            "--only",
            "gemm",
            "--format",
            "json",
            "--fake-machine",
        ])
        .arg(h200())
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let p: MachineProfile = serde_json::from_str(&stdout).unwrap();
    assert!(!p.compute.is_empty());
    assert!(p.host_device.is_empty() && p.collectives.is_empty() && p.links.is_empty());
    assert_eq!(MachineProfile::load(&out).unwrap(), p);
}

#[test]
fn one_gpu_run_records_the_host_bounce_and_one_rank_nccl() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    probe()
        .args(["run", "--fake-machine"])
        .arg(h200())
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("same GPU"));
    let p = MachineProfile::load(&out).unwrap();
    assert_eq!(p.links.len(), 1);
    assert_eq!((p.links[0].src, p.links[0].dst), (0, 0));
    assert!(p.collectives.iter().all(|c| c.devices == vec![0]));
}

#[test]
fn too_few_gpus_is_one_line_exit_2_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    probe()
        .args(["run", "--gpus", "0,7", "--fake-machine"])
        .arg(fixture("fake-4gpu-vm.json"))
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "GPU 7 requested but only 4 GPU(s)",
        ))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
    assert!(!out.exists());
}

#[test]
fn malformed_fake_machine_and_bad_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    probe()
        .args(["run", "--fake-machine"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path().join("p.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("malformed JSON"));
    probe()
        .args(["run", "--only", "p2p,warp"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown step `warp`"));
    probe().args(["run", "--gpus", "0,0"]).assert().code(2);
}

#[test]
fn no_gpu_machine_fails_cleanly() {
    // Only meaningful where there is no GPU (CI): the real backend must say so in one line.
    if Path::new("/dev/nvidia0").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    probe()
        .args(["run", "--quick", "--out"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with("error: "))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
    assert!(!out.exists());
}

#[test]
fn fake_machine_flag_is_hidden() {
    probe()
        .args(["run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--quick"))
        .stdout(predicate::str::contains("fake").not());
}

#[test]
fn import_nccl_tests_and_p2p_logs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("n.json");
    probe()
        .args(["import", "nccl-tests"])
        .arg(fixture("all_reduce_perf_4gpu.log"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("43.88"));
    let p = MachineProfile::load(&out).unwrap();
    assert_eq!(p.collectives[0].op, CollectiveOp::AllReduce);
    assert_eq!(p.provenance.nccl_version.as_deref(), Some("2.28.3"));
    assert_eq!(p.gpu_preset.as_deref(), Some("rtx-pro-6000-server"));

    let out2 = dir.path().join("p.json");
    probe()
        .args(["import", "p2p"])
        .arg(fixture("p2pBandwidthLatencyTest_vm.txt"))
        .arg("--out")
        .arg(&out2)
        .assert()
        .success();
    let p2 = MachineProfile::load(&out2).unwrap();
    assert_eq!(p2.links.len(), 12);

    let junk = dir.path().join("junk.log");
    std::fs::write(
        &junk,
        "# Collective test starting: all_reduce_perf\n  1024 256 float\n",
    )
    .unwrap();
    probe()
        .args(["import", "nccl-tests"])
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("junk.log:2"));
}

#[test]
fn diff_reports_ratios() {
    let assert = probe()
        .args(["diff", "--format", "json"])
        .arg(h200())
        .arg(h200())
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    let rows = v["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["ratio"].as_f64() == Some(1.0)));
    probe()
        .arg("diff")
        .arg(fixture("fake-4gpu-vm.json"))
        .arg(h200())
        .assert()
        .success()
        .stdout(predicate::str::contains("B / A"));
}

/// `--no-peer-access`: every pair measured only through host memory, classified host-bounce
/// with the flag named in its evidence, and the run's notes say so.
#[test]
fn no_peer_access_measures_only_staging_and_classifies_host_bounce() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nop2p.json");
    probe()
        .args([
            "run",
            "--quick",
            "--no-peer-access",
            "--gpus",
            "0,1",
            "--fake-machine",
        ])
        .arg(fixture("fake-4gpu-vm.json"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("HostBounce"));
    let p = MachineProfile::load(&out).unwrap();
    assert_eq!(p.links.len(), 2);
    for l in &p.links {
        // GPUs 0 and 1 have working P2P in the fixture; the flag must still keep it off.
        assert_eq!(l.classification, Some(PairClass::HostBounce), "{l:?}");
        assert!(
            l.evidence
                .iter()
                .any(|e| e == "peer access disabled by --no-peer-access")
        );
        assert!(!l.curves.is_empty());
        assert!(
            l.curves
                .iter()
                .all(|c| c.mode == models::profile::TransferMode::HostStaged)
        );
        assert!(l.latency_us.keys().all(|k| k == "host-staged"));
    }
    assert!(
        p.provenance
            .notes
            .iter()
            .any(|n| n.starts_with("--no-peer-access"))
    );
}

#[test]
fn charts_json_lists_every_file_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("charts");
    // The 2-GPU profile: one GPU has no pairs and no bus bandwidth to chart.
    let x2 = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x2.json");
    let assert = probe()
        .arg("charts")
        .arg(&x2)
        .arg("--out")
        .arg(&out)
        .args(["--format", "json"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    assert!(files.len() >= 2, "charts and an index: {v}");
    for f in files {
        assert!(
            Path::new(f.as_str().unwrap()).is_file(),
            "{f} was listed but not written"
        );
    }
    assert!(
        files
            .iter()
            .any(|f| f.as_str().unwrap().ends_with("index.html"))
    );
}

#[test]
fn summary_says_which_nccl_environment_is_faster_per_size_range() {
    let dir = tempfile::tempdir().unwrap();
    let x2 = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x2.json");
    let out = dir.path().join("x2.json");
    let assert = probe()
        .args(["run", "--only", "nccl", "--fake-machine"])
        .arg(&x2)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(
        text.contains("NCCL environments, faster side by size"),
        "{text}"
    );
    // Measured on NVLink: staging through host memory never wins at large sizes.
    let line = text
        .lines()
        .find(|l| l.contains("AllReduce on [0, 1], NCCL_P2P_DISABLE=1 vs defaults"))
        .expect("an all-reduce verdict");
    assert!(line.contains("defaults faster at"), "{line}");
    assert!(line.contains("1 GiB"), "{line}");
}

/// The launch step: served from a fake machine that has one (the measured H200 profile),
/// synthesized (with a note) for one that has none; in a normal run and in `--quick`.
#[test]
fn launch_floors_are_part_of_every_run() {
    use models::profile::{LaunchKernel, LaunchKind};
    let dir = tempfile::tempdir().unwrap();
    let measured = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x1-launch.json");
    let out = dir.path().join("l.json");
    probe()
        .args(["run", "--only", "launch", "--fake-machine"])
        .arg(&measured)
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("Launch floors"))
        .stdout(predicate::str::contains("graph µs/node"));
    let p = MachineProfile::load(&out).unwrap();
    let src = MachineProfile::load(&measured).unwrap();
    assert_eq!(p.launch, src.launch);
    for quick in [true, false] {
        let out = dir.path().join(format!("vm{quick}.json"));
        let mut c = probe();
        c.arg("run");
        if quick {
            c.arg("--quick");
        }
        c.arg("--fake-machine")
            .arg(fixture("fake-4gpu-vm.json"))
            .arg("--out")
            .arg(&out)
            .assert()
            .success();
        let p = MachineProfile::load(&out).unwrap();
        // Per GPU: two kernels, each as a graph node and an eager launch.
        assert_eq!(p.launch.len(), 4 * 4, "quick {quick}");
        for d in 0..4 {
            for kernel in [LaunchKernel::Empty, LaunchKernel::TinyGemm] {
                let find = |kind| {
                    p.launch
                        .iter()
                        .find(|m| m.device == d && m.kernel == kernel && m.kind == kind)
                        .unwrap()
                };
                let (graph, eager) = (find(LaunchKind::GraphNode), find(LaunchKind::EagerLaunch));
                assert!(graph.per_kernel_us.median > 0.0 && graph.gpu_per_kernel_us.is_none());
                // An eager launch costs the host more than a graph node costs the GPU.
                assert!(eager.per_kernel_us.median > graph.per_kernel_us.median);
                assert!(eager.gpu_per_kernel_us.is_some());
            }
        }
        assert!(
            p.provenance
                .notes
                .iter()
                .any(|n| n.contains("launch floors synthesized"))
        );
        assert!(
            p.provenance
                .notes
                .iter()
                .any(|n| n.contains("probe run took") && n.contains("launch "))
        );
    }
}
