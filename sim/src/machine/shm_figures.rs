//! The SHM transport's figures ([`ShmFigures`]) from what a probe profile measured: the
//! mapped-kernel host staging (schema 3 `host_staging`), the graph-node launch floor, the channels
//! NCCL's `NCCL_DEBUG=INFO` lines named (`nccl_transports`) and the GPUs' compute capability and
//! NUMA placement for NCCL's ring search.

use super::shm_ring::{FALLBACK_RING_GB_PER_S, ShmFigures, ring_search_falls_back};
use models::profile::{
    HostDirection, HostStagePath, LaunchKernel, LaunchKind, MachineProfile, NcclTransport,
};

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
    let mapped = |dir: HostDirection| {
        profile
            .host_staging
            .iter()
            .filter(|c| c.path == HostStagePath::MappedKernel && c.direction == dir)
            .filter(|c| devices.is_empty() || devices.contains(&c.device))
            .collect::<Vec<_>>()
    };
    let (h2d, d2h) = (
        mapped(HostDirection::HostToDevice),
        mapped(HostDirection::DeviceToHost),
    );
    // the smallest load from host memory, less the GPU's own per-kernel floor, is the round trip
    let small_us = h2d
        .iter()
        .filter_map(|c| c.points.iter().min_by_key(|p| p.bytes))
        .map(|p| p.time_us.median)
        .fold(f64::NAN, f64::max);
    let floor_us = profile
        .launch
        .iter()
        .filter(|l| l.kind == LaunchKind::GraphNode && l.kernel == LaunchKernel::Empty)
        .map(|l| l.per_kernel_us.median)
        .fold(0.0, f64::max);
    let read_rtt_us = small_us - floor_us;
    let peak = |cs: &[&models::profile::HostStagedCurve]| {
        cs.iter()
            .filter_map(|c| c.points.iter().max_by_key(|p| p.bytes))
            .map(|p| p.gb_per_s.median)
            .fold(f64::INFINITY, f64::min)
    };
    let staged_gb = peak(&h2d).min(peak(&d2h));
    if !(read_rtt_us.is_finite() && read_rtt_us > 0.0 && staged_gb.is_finite() && staged_gb > 0.0) {
        return None;
    }
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
        read_rtt_s: read_rtt_us * 1e-6,
        staged_bytes_per_s: staged_gb * 1e9,
        channels: shm_channels.unwrap_or(DEFAULT_CHANNELS).max(1),
        tuner_ring_gb_per_s,
        tuner_graph_channels,
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
        // 3.69 µs for the 4 KiB host→device load less the 0.51 µs graph-node floor
        assert!((f.read_rtt_s * 1e6 - 3.18).abs() < 0.05, "{f:?}");
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
    fn no_staging_measurement_gives_none() {
        let mut p = lent_vm();
        p.host_staging.clear();
        assert!(from_profile(&p, &[0]).is_none());
    }
}
