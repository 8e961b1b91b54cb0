//! A profile that measured only pair links (`probe import p2p` of a p2pBandwidthLatencyTest log)
//! costs its collectives from those links, host-staged where the pair bounces through host
//! memory, not from the datasheet.

use models::profile::{
    DeviceInfo, Direction, LinkClass, MachineProfile, PairClass, PairLink, Provenance, SizePoint,
    Stat, TransferCurve, TransferMode,
};
use sim::machine::Machine;

/// The figures of `probe/tests/fixtures/p2pBandwidthLatencyTest_vm.txt`: 40 MB copies, about
/// 21.4 GB/s and 14.3 µs staged through the host, except GPUs 2↔3 which have P2P.
fn imported() -> MachineProfile {
    let mut p = MachineProfile::empty(Provenance {
        tool: "probe import p2p".into(),
        ..Default::default()
    });
    p.devices = (0..4)
        .map(|i| DeviceInfo {
            index: i,
            name: "NVIDIA RTX PRO 6000 Blackwell Server Edition".into(),
            memory_bytes: 97_887 << 20,
            ..Default::default()
        })
        .collect();
    for s in 0..4u32 {
        for d in 0..4u32 {
            if s == d {
                continue;
            }
            let p2p = (s, d) == (2, 3) || (s, d) == (3, 2);
            let (mode, gbps, lat, key) = if p2p {
                (TransferMode::CopyEngine, 52.0, 0.45, "copy-engine")
            } else {
                (TransferMode::HostStaged, 21.4, 14.33, "host-staged")
            };
            let mut l = PairLink::new(s, d, LinkClass::Unknown);
            l.can_access_peer = Some(p2p);
            l.classification = Some(if p2p {
                PairClass::P2p
            } else {
                PairClass::HostBounce
            });
            l.latency_us.insert(key.into(), Stat::exact(lat));
            l.curves.push(TransferCurve {
                mode,
                direction: Direction::Unidirectional,
                points: vec![SizePoint {
                    bytes: 40_000_000,
                    time_us: Stat::exact(40e6 / (gbps * 1e9) * 1e6),
                    gb_per_s: Stat::exact(gbps),
                }],
                data_verified: None,
            });
            p.links.push(l);
        }
    }
    p.gpu_preset = Some("rtx-pro-6000-server".into());
    p
}

#[test]
fn collectives_ride_the_measured_links() {
    let m = Machine::from_profile("imported", imported()).unwrap();
    let ar = m.collective(models::profile::CollectiveOp::AllReduce, &[0, 1, 2, 3]);
    assert!(ar.source.contains("host-staged"), "{}", ar.source);
    // Ring all-reduce on 4 GPUs: 6 steps of the slowest pair's 14.33 µs.
    assert!(
        (ar.alpha_s() - 6.0 * 14.33e-6).abs() < 1e-9,
        "{}",
        ar.alpha_s()
    );
    // busbw = the slowest link: 1 GB all-reduce ≈ 1.5 GB / 21.4 GB/s.
    let t = ar.time_s(1e9);
    assert!((t - (6.0 * 14.33e-6 + 1.5e9 / 21.4e9)).abs() < 1e-3, "{t}");
    let pair = m.collective(models::profile::CollectiveOp::AllReduce, &[2, 3]);
    assert!(pair.source.contains("P2P"), "{}", pair.source);
    assert!(pair.time_s(1e9) < t / 2.0);
}
