//! A VM-like box on the fake machine (issue 26): no P2P anywhere (reported false, never tried),
//! NCCL on SHM between every pair, the IOMMU translating, QEMU/KVM — and `probe run` records
//! each of those in the profile's schema-3 sections.

use assert_cmd::Command;
use models::profile::{HostStagePath, IommuMode, MachineProfile, NcclTransport, PairClass};
use std::path::Path;

#[test]
fn a_vm_without_p2p_is_recorded_as_one() {
    let (stdout, p) = quick_run("fake-4gpu-vm-nop2p.json", None);
    assert!(
        stdout.contains("NCCL transport per peer: 0->1 SHM"),
        "{stdout}"
    );
    assert_eq!(p.schema_version, models::profile::PROFILE_SCHEMA_VERSION);
    let v = p.virtualization.as_ref().expect("virtualization recorded");
    assert_eq!(v.hypervisor.name.as_deref(), Some("KVM (QEMU)"));
    assert_eq!(v.hypervisor.cpuid_hypervisor_bit, Some(true));
    assert_eq!(v.hypervisor.dmi_sys_vendor.as_deref(), Some("QEMU"));
    assert_eq!(v.iommu.mode, IommuMode::Translated);
    assert_eq!(v.iommu.gpus.len(), 4);
    // Every ordered pair: the driver says no, and no peer copy was tried.
    assert_eq!(v.peers.len(), 12);
    assert!(
        v.peers
            .iter()
            .all(|c| c.reported_by_driver == Some(false) && c.copy_works.is_none())
    );
    assert!(
        p.links
            .iter()
            .all(|l| l.classification == Some(PairClass::HostBounce))
    );
    // NCCL's pick: SHM for every pair of the measured groups.
    assert!(!p.nccl_transports.is_empty());
    assert!(
        p.nccl_transports
            .iter()
            .all(|t| t.transport == NcclTransport::Shm)
    );
    // Both host-staged paths, both directions, on each GPU.
    for d in 0..4 {
        let paths: Vec<_> = p
            .host_staging
            .iter()
            .filter(|c| c.device == d)
            .map(|c| c.path)
            .collect();
        assert_eq!(paths.len(), 4, "GPU {d}");
        assert!(
            paths.contains(&HostStagePath::MappedKernel)
                && paths.contains(&HostStagePath::CopyEngine)
        );
    }
    assert_eq!(p.provenance.hypervisor.as_deref(), Some("KVM (QEMU)"));
}

#[test]
fn a_bare_metal_fake_records_no_hypervisor_and_p2p_that_works() {
    let (_, p) = quick_run("fake-4gpu-vm.json", Some("0,1"));
    let v = p.virtualization.unwrap();
    // The older fixture names its hypervisor in provenance only: kept, nothing invented.
    assert_eq!(v.hypervisor.name.as_deref(), Some("KVM (QEMU)"));
    assert_eq!(v.hypervisor.cpuid_hypervisor_bit, None);
    let c = v.peers.iter().find(|c| c.src == 0 && c.dst == 1).unwrap();
    assert_eq!(
        (c.reported_by_driver, c.copy_works),
        (Some(true), Some(true))
    );
}

/// The profile measured on the lent H200 (a Firecracker/KVM guest, one GPU) carries the new
/// fields as that machine read them.
#[test]
fn the_measured_h200_profile_reads_its_schema_3_fields() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x1.vm-fields.json");
    let p = MachineProfile::load(&path).unwrap();
    assert_eq!(p.schema_version, 3);
    let v = p.virtualization.unwrap();
    assert_eq!(v.hypervisor.cpuid_hypervisor_bit, Some(true));
    assert_eq!(v.hypervisor.cpuid_vendor.as_deref(), Some("KVMKVMKVM"));
    assert_eq!(v.iommu.mode, IommuMode::Off);
    // One GPU: no pair, no NCCL peer.
    assert!(v.peers.is_empty() && p.nccl_transports.is_empty());
    assert_eq!(p.host_staging.len(), 4);
    assert!(p.host_staging.iter().all(|c| c.data_verified == Some(true)));
    let zero_page = p
        .pageable_variants
        .iter()
        .find(|v| v.buffer.contains("zero page"))
        .unwrap();
    let written = p
        .pageable_variants
        .iter()
        .find(|v| v.buffer.starts_with("malloc, touched (the host step"))
        .unwrap();
    // The explanation of issue 26's 16.9 vs 8.5 GB/s: only never-written memory reads fast.
    assert!(zero_page.gb_per_s.median > 1.8 * written.gb_per_s.median);
}

/// `probe run --quick` on a fake machine, returning its stdout and profile.
fn quick_run(fixture: &str, gpus: Option<&str>) -> (String, MachineProfile) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let mut cmd = Command::cargo_bin("probe").unwrap();
    cmd.env_remove("PROBE_FAKE_MACHINE")
        .args(["run", "--quick"]);
    if let Some(g) = gpus {
        cmd.args(["--gpus", g]);
    }
    let o = cmd
        .arg("--fake-machine")
        .arg(&fixture)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let p = MachineProfile::load(&out).unwrap();
    (String::from_utf8_lossy(&o.stdout).into_owned(), p)
}

/// Issue 34: one fake machine per P2P state, each classified right by `probe run --quick`, and
/// the summary alone says which (the routed one by its peer copy, no faster than host staging).
#[test]
fn each_p2p_state_is_classified_from_a_quick_run() {
    use models::profile::P2pState;
    // the older fixture has working P2P between GPUs 0 and 1 only (the rest report none)
    let cases = [
        (
            "fake-4gpu-vm.json",
            Some("0,1"),
            P2pState::Real,
            "P2P state: real",
        ),
        (
            "fake-4gpu-vm.json",
            None,
            P2pState::Off,
            "off on 10 pair(s)",
        ),
        (
            "fake-4gpu-vm-nop2p.json",
            None,
            P2pState::Off,
            "P2P state: off",
        ),
        (
            "fake-4gpu-vm-routed.json",
            None,
            P2pState::Routed,
            "P2P state: routed",
        ),
    ];
    for (fixture, gpus, want, line) in cases {
        let (stdout, p) = quick_run(fixture, gpus);
        let v = p.virtualization.as_ref().unwrap();
        assert_eq!(v.p2p_state, Some(want), "{fixture}: {stdout}");
        assert_eq!(p.p2p_state(), Some(want), "{fixture}");
        assert!(stdout.contains(line), "{fixture}: {stdout}");
        assert!(!v.p2p_evidence.is_empty(), "{fixture}");
    }
    let (stdout, p) = quick_run("fake-4gpu-vm-routed.json", None);
    assert!(
        stdout.contains("no faster than staging through host memory"),
        "{stdout}"
    );
    // the two figures `sim advise --question p2p` indexes its host-path sweep by, printed from
    // the same functions sim costs the routed path with
    let routed = |l: &models::profile::PairLink| P2pState::of_link(l) == Some(P2pState::Routed);
    let peer = models::profile::host_path::slowest_peer_copy(&p, &routed).unwrap();
    let line = format!(
        "host path: peer copy (routed pairs, slowest) {:.1} µs small copy, {:.1} GB/s",
        peer.latency_us, peer.gb_per_s
    );
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    assert!(stdout.contains("P2P/CUMEM"), "{stdout}");
    assert!(p.links.iter().all(
        |l| l.classification == Some(PairClass::HostBounce) && l.can_access_peer == Some(true)
    ));
    // P2P off: the SHM line, the figures NCCL's SHM ring is costed from
    let (stdout, p) = quick_run("fake-4gpu-vm-nop2p.json", None);
    let shm = models::profile::host_path::shm_path(&p, &[]).unwrap();
    let line = format!(
        "host path: SHM (mapped host memory, NCCL without P2P) {:.1} µs one-shot latency, {:.1} GB/s",
        shm.latency_us, shm.gb_per_s
    );
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    assert!(!stdout.contains("host path: peer copy"), "{stdout}");
    // one GPU: nothing to classify, and the summary says why
    let (stdout, p) = quick_run("fake-4gpu-vm.json", Some("0"));
    assert_eq!(p.virtualization.unwrap().p2p_state, None);
    assert!(stdout.contains("P2P state: not classified"), "{stdout}");
}

/// Issue 34 on the lent H200 (a KVM guest, one GPU): the new fields say what they can — the
/// hypervisor and the host path — and the P2P state is absent with the reason printed (no GPU
/// pair to measure), not guessed.
#[test]
fn the_lent_h200_says_why_its_p2p_state_is_absent() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let p = MachineProfile::load(&dir.join("h200-x1.p2p-state.json")).unwrap();
    let v = p.virtualization.as_ref().unwrap();
    assert_eq!(v.hypervisor.cpuid_vendor.as_deref(), Some("KVMKVMKVM"));
    assert_eq!(v.p2p_state, None);
    assert!(v.p2p_evidence.is_empty() && v.peers.is_empty());
    assert_eq!(p.p2p_state(), None);
    assert!(
        p.host_staging
            .iter()
            .any(|c| c.path == HostStagePath::MappedKernel)
    );
    // replayed as a fake machine, its summary prints the SHM host path (what a P2P-off sweep
    // row is indexed by) and no peer copy line: one GPU has no pair
    let (stdout, _) = quick_run("../../profiles/h200-x1.p2p-state.json", None);
    let shm = models::profile::host_path::shm_path(&p, &[]).unwrap();
    assert!(
        stdout.contains(&format!(
            "host path: SHM (mapped host memory, NCCL without P2P) {:.1} µs one-shot latency, {:.1} GB/s",
            shm.latency_us, shm.gb_per_s
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("host path: peer copy"), "{stdout}");
    let log = std::fs::read_to_string(dir.join("h200-x1.p2p-state.device-log.txt")).unwrap();
    assert!(
        log.contains("P2P state: not classified (no GPU pair measured"),
        "{log}"
    );
}

/// The host round trips (a dependent load and a store-to-poll hop through mapped host memory,
/// what one step of NCCL's SHM ring pays) measured on a lent H200 replay through the fake backend
/// into the profile and the summary's `host round trips` line.
#[test]
fn the_host_round_trips_reach_the_profile_and_the_summary() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let measured = MachineProfile::load(&dir.join("h200-x1.round-trips.json")).unwrap();
    let t = &measured.host_round_trips[0];
    // a load from host memory is about a microsecond, a hop about two of them
    assert!((0.5..3.0).contains(&t.load_us.median), "{t:?}");
    assert!(t.hop_us.median > t.load_us.median, "{t:?}");
    let (stdout, p) = quick_run("../../profiles/h200-x1.round-trips.json", None);
    assert_eq!(p.host_round_trips, measured.host_round_trips);
    assert!(
        stdout.contains("host round trips GPU 0: dependent load 1.2"),
        "{stdout}"
    );
    assert!(stdout.contains("store-to-poll hop 2.6"), "{stdout}");
}
