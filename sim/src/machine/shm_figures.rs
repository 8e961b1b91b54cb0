//! The SHM transport's figures ([`ShmFigures`]) from what a probe profile measured: the
//! mapped-kernel host staging (schema 3 `host_staging`), the graph-node launch floor, the channels
//! NCCL's `NCCL_DEBUG=INFO` lines named (`nccl_transports`) and the GPUs' compute capability and
//! NUMA placement for NCCL's ring search.

use super::shm_ring::{
    FALLBACK_RING_GB_PER_S, HOP_PER_ONE_SHOT, RTT_PER_ONE_SHOT, ShmFigures, ring_search_falls_back,
};
use models::profile::{MachineProfile, NcclTransport};

/// NCCL's rating of the inter-CPU link of an x86 AMD host (`topo.h` AMD_BW), GB/s. The profile
/// does not record the CPU vendor; AMD is the user's box, and Intel's older QPI ratings (6–10 GB/s)
/// fall back the same way.
const INTER_CPU_GB_PER_S: f64 = 16.0;
/// NCCL's rating of one PCIe Gen5 x16 link (`topo.cc`: 240 × 100 Mb/s per lane × 16 / 80), GB/s,
/// the ring speed on one socket.
const PCIE5_X16_GB_PER_S: f64 = 48.0;
/// Channels when NCCL's lines are not in the profile: one searched ring, duplicated (`connect.cc`).
const DEFAULT_CHANNELS: u32 = 2;

/// The SHM figures of `devices` in `profile`, `None` without a mapped-kernel staging measurement.
pub fn from_profile(profile: &MachineProfile, devices: &[u32]) -> Option<ShmFigures> {
    // the same two figures `probe`'s summary prints as its `host path: SHM` line
    let path = models::profile::host_path::shm_path(profile, devices)?;
    let (one_shot_us, staged_gb) = (path.latency_us, path.gb_per_s);
    // the hop and the load as probe measured them (the slowest GPU's), else the one-shot
    // latency split by the lent guest's measured ratios (`shm_ring` module docs)
    let slowest = profile
        .host_round_trips
        .iter()
        .filter(|t| devices.is_empty() || devices.contains(&t.device))
        .map(|t| (t.hop_us.median, t.load_us.median))
        .reduce(|a, b| (a.0.max(b.0), a.1.max(b.1)));
    let (hop_us, load_us) = slowest.unwrap_or((
        one_shot_us * HOP_PER_ONE_SHOT,
        one_shot_us * RTT_PER_ONE_SHOT,
    ));
    let (hop_s, read_rtt_s) = (hop_us * 1e-6, load_us * 1e-6);
    let cc_major = profile
        .devices
        .iter()
        .filter_map(|d| d.compute_capability.map(|c| c[0]))
        .min()
        .unwrap_or(0);
    let numa: Vec<i32> = profile
        .devices
        .iter()
        .filter(|d| devices.contains(&d.index))
        .filter_map(|d| d.numa_node)
        .collect();
    let crosses = numa.iter().any(|&n| Some(&n) != numa.first());
    let falls_back = ring_search_falls_back(cc_major, crosses, INTER_CPU_GB_PER_S);
    let shm_channels = profile
        .nccl_transports
        .iter()
        .filter(|t| t.transport == NcclTransport::Shm && t.nccl_env.is_empty())
        .map(|t| t.channels)
        .max();
    let (tuner_ring_gb_per_s, tuner_graph_channels) = if falls_back {
        (FALLBACK_RING_GB_PER_S, 1)
    } else {
        let ring = if crosses {
            INTER_CPU_GB_PER_S
        } else {
            PCIE5_X16_GB_PER_S
        };
        (ring, DEFAULT_CHANNELS / 2)
    };
    Some(ShmFigures {
        hop_s,
        read_rtt_s,
        staged_bytes_per_s: staged_gb * 1e9,
        channels: shm_channels.unwrap_or(DEFAULT_CHANNELS).max(1),
        tuner_ring_gb_per_s,
        tuner_graph_channels,
        cc_major,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lent_vm() -> MachineProfile {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../probe/profiles/h200-x1.vm-fields.json"
        );
        MachineProfile::load(std::path::Path::new(path)).expect("the committed v3 profile")
    }

    #[test]
    fn the_lent_kvm_guest_gives_a_round_trip_and_a_staged_bandwidth() {
        let f = from_profile(&lent_vm(), &[0]).expect("mapped-kernel staging was measured");
        // 3.69 µs for the 4 KiB host→device load less the 0.51 µs graph-node floor, split into
        // the 2.24 µs store-to-poll hop and the 1.24 µs dependent load measured on the same guest
        assert!((f.hop_s * 1e6 - 2.24).abs() < 0.05, "{f:?}");
        assert!((f.read_rtt_s * 1e6 - 1.24).abs() < 0.05, "{f:?}");
        // the 64 MiB mapped-kernel copies: ~51 GB/s host→device, ~52 device→host
        assert!(
            f.staged_bytes_per_s > 45e9 && f.staged_bytes_per_s < 55e9,
            "{f:?}"
        );
        assert_eq!(f.channels, DEFAULT_CHANNELS);
        // one GPU, one socket: no fallback
        assert_eq!(f.tuner_ring_gb_per_s, PCIE5_X16_GB_PER_S);
    }

    #[test]
    fn a_vm_profile_without_nccl_curves_is_costed_as_the_fallback_shm_ring() {
        // the user's VM as a probe profile that timed no collective: host-bounced pairs, the
        // lent guest's staging on every GPU, sockets 0-3 / 4-7, compute capability 12.0
        let lent = lent_vm();
        let mut p = crate::presets::machine_preset("rtx-pro-6000-x8-vm-hostbounce").unwrap();
        p.collectives.clear();
        for d in 0..8 {
            p.host_staging
                .extend(lent.host_staging.iter().cloned().map(|mut c| {
                    c.device = d;
                    c
                }));
        }
        let all: Vec<u32> = (0..8).collect();
        let f = from_profile(&p, &all).unwrap();
        assert_eq!(f.tuner_ring_gb_per_s, FALLBACK_RING_GB_PER_S, "{f:?}");
        let m = crate::machine::Machine::from_profile("vm", p).unwrap();
        let ar = m.collective(models::profile::CollectiveOp::AllReduce, &all);
        assert!(ar.source.contains("NCCL SHM ring"), "{}", ar.source);
        // one socket does not cross the inter-CPU link: NCCL's ring search succeeds there
        let socket = from_profile(&m.profile, &[0, 1, 2, 3]).unwrap();
        assert_eq!(socket.tuner_ring_gb_per_s, PCIE5_X16_GB_PER_S);
    }

    #[test]
    fn measured_round_trips_set_the_steps_where_probe_timed_them() {
        let mut p = lent_vm();
        let stat = models::profile::Stat::exact;
        p.host_round_trips = vec![models::profile::HostRoundTrip {
            device: 0,
            load_us: stat(1.1),
            hop_us: stat(2.1),
        }];
        let f = from_profile(&p, &[0]).unwrap();
        assert!((f.hop_s - 2.1e-6).abs() < 1e-12, "{f:?}");
        assert!((f.read_rtt_s - 1.1e-6).abs() < 1e-12, "{f:?}");
        // a GPU it did not time falls back to the one-shot latency's split
        p.host_round_trips[0].device = 5;
        let g = from_profile(&p, &[0]).unwrap();
        assert!((g.hop_s * 1e6 - 2.24).abs() < 0.05, "{g:?}");
    }

    #[test]
    fn probe_measures_the_round_trips_on_the_lent_guest() {
        // `probe run --quick --only host,launch` on a fresh lent H200 (thirteenth session)
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../probe/profiles/h200-x1.round-trips.json"
        );
        let p = MachineProfile::load(std::path::Path::new(path)).expect("the committed profile");
        let f = from_profile(&p, &[0]).expect("staging and round trips were measured");
        // a dependent load 1.21 µs (the script's 1.10–1.27), a hop 2.64 µs (its 2.12–2.24)
        assert!((f.read_rtt_s * 1e6 - 1.21).abs() < 0.05, "{f:?}");
        assert!((f.hop_s * 1e6 - 2.64).abs() < 0.05, "{f:?}");
        // its one-shot latency 3.69 µs (3.18 on the vm-fields run): the hop / one-shot ratio
        // 0.72 here against the constants' 0.70
        let one_shot = models::profile::host_path::shm_path(&p, &[0]).unwrap();
        assert!((one_shot.latency_us - 3.69).abs() < 0.05, "{one_shot:?}");
    }

    #[test]
    fn no_staging_measurement_gives_none() {
        let mut p = lent_vm();
        p.host_staging.clear();
        assert!(from_profile(&p, &[0]).is_none());
    }

    #[test]
    fn a_swept_host_path_reaches_the_shm_ring_and_the_custom_all_reduce_as_given() {
        use models::profile::P2pState;
        use models::profile::host_path::HostPathFigures;
        let base = crate::presets::machine_preset("rtx-pro-6000-x8-baremetal").unwrap();
        let path = HostPathFigures {
            latency_us: 40.0,
            gb_per_s: 2.0,
        };
        let all: Vec<u32> = (0..8).collect();
        let off = crate::p2p_variant::with_host_path(&base, P2pState::Off, path, "test");
        let f = from_profile(&off, &all).unwrap();
        // the swept latency is a one-shot kernel's, split as the lent guest's
        assert!((f.hop_s - 40e-6 * HOP_PER_ONE_SHOT).abs() < 1e-12, "{f:?}");
        assert!(
            (f.read_rtt_s - 40e-6 * RTT_PER_ONE_SHOT).abs() < 1e-12,
            "{f:?}"
        );
        assert!((f.staged_bytes_per_s - 2e9).abs() < 1.0, "{f:?}");
        let routed = crate::p2p_variant::with_host_path(&base, P2pState::Routed, path, "test");
        let m = crate::machine::Machine::from_profile("routed", routed).unwrap();
        let Some(crate::machine::PeerPath::Routed {
            latency_s,
            bytes_per_s,
        }) = m.engine_peer_path(&all)
        else {
            panic!("routed pairs give a routed peer path")
        };
        assert!((latency_s - 40e-6).abs() < 1e-12 && (bytes_per_s - 2e9).abs() < 1e-3);
        // NCCL's P2P ring over it: 14 steps of the latency at a small message
        let ar = m.collective(models::profile::CollectiveOp::AllReduce, &all);
        assert!(ar.source.contains("routed P2P"), "{}", ar.source);
        let t_us = ar.time_s(12e3) * 1e6;
        assert!(t_us > 14.0 * 40.0 && t_us < 14.0 * 40.0 + 20.0, "{t_us}");
    }
}
