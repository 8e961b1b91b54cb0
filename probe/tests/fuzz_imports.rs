//! The importers of other tools' logs never panic, whatever bytes they are given: arbitrary bytes,
//! and the real fixtures with bytes flipped, lines dropped or repeated (which reaches the matrix
//! and table code). A fixed case budget keeps `cargo test` short.

use probe::import::{nccl_tests, p2p_test};
use proptest::prelude::*;
use std::path::Path;

const NCCL: &str = include_str!("fixtures/all_reduce_perf_4gpu.log");
const P2P: &str = include_str!("fixtures/p2pBandwidthLatencyTest_vm.txt");

/// `text` with `edits` applied: (position, byte) overwrites, then a line dropped and one repeated.
fn mutate(text: &str, edits: &[(usize, u8)], drop: usize, dup: usize) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(pos, b) in edits {
        let i = pos % bytes.len();
        bytes[i] = b;
    }
    let s = String::from_utf8_lossy(&bytes).into_owned();
    let mut lines: Vec<&str> = s.lines().collect();
    if !lines.is_empty() {
        lines.remove(drop % lines.len());
    }
    if !lines.is_empty() {
        let l = lines[dup % lines.len()];
        lines.insert(dup % lines.len(), l);
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn nccl_tests_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = nccl_tests::parse(&String::from_utf8_lossy(&bytes), Path::new("x_perf.log"));
    }

    #[test]
    fn p2p_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = p2p_test::parse(&String::from_utf8_lossy(&bytes), Path::new("p2p.txt"));
    }

    #[test]
    fn mutated_real_logs_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        drop in any::<usize>(),
        dup in any::<usize>(),
    ) {
        let _ = nccl_tests::parse(&mutate(NCCL, &edits, drop, dup), Path::new("a.log"));
        if let Ok(log) = p2p_test::parse(&mutate(P2P, &edits, drop, dup), Path::new("p.txt")) {
            // Whatever parsed describes one GPU per matrix row, each pair once.
            let n = log.devices.len();
            prop_assert_eq!(log.links.len(), n * n.saturating_sub(1));
        }
    }
}

#[test]
fn matrices_of_different_sizes_are_an_error_not_a_panic() {
    // The P2P=Enabled bandwidth matrix cut to 2 GPUs while the others keep 4: a spliced log,
    // which used to index past the smaller matrix.
    let full = "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1      2      3 \n     0 1478.85  21.40  21.39  20.90 \n     1  21.49 1483.12  21.42  20.97 \n     2  21.35  21.44 1480.66  53.61 \n     3  20.93  21.01  53.58 1481.74 \n";
    let two = "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1 \n     0 1478.85  21.40 \n     1  21.49 1483.12 \n";
    assert!(P2P.contains(full), "the fixture changed");
    let e = p2p_test::parse(&P2P.replacen(full, two, 1), Path::new("p.txt"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("has 2 GPUs") && e.contains("4"), "{e}");
}

#[test]
fn a_2_gb_log_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("all_reduce_perf.log");
    // Sparse: 2 GB on paper, nothing on disk; reading it whole would take 2 GB of memory.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(2_000_000_000)
        .unwrap();
    for e in [
        probe::import::import_nccl_tests(std::slice::from_ref(&big)).unwrap_err(),
        probe::import::import_p2p(&big).unwrap_err(),
    ] {
        let msg = e.to_string();
        assert!(
            msg.contains("2.00 GB") && msg.contains("all_reduce_perf.log"),
            "{msg}"
        );
    }
}

#[test]
fn an_import_of_an_unknown_gpu_says_why_instead_of_writing_an_unusable_profile() {
    let log = NCCL.replace(
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "Mystery GPU 9000",
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("all_reduce_perf.log");
    std::fs::write(&p, log).unwrap();
    let msg = probe::import::import_nccl_tests(&[p])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("Mystery GPU 9000") && msg.contains("memory"),
        "{msg}"
    );
}
