//! The P2P state as part of the machine (issue 34): a profile turned into its `off` or `routed`
//! variant, for the built-in `…-p2p-off` / `…-p2p-routed` presets, for records that state P2P
//! off, and for a launch line's `NCCL_P2P_DISABLE=1` / `NCCL_P2P_LEVEL`.
//!
//! - `off`: the pairs lose peer access; every collective measured over them with P2P is dropped,
//!   so NCCL's SHM ring is costed from the host path (`machine::shm_ring`): the profile's
//!   mapped-kernel host staging where `probe` measured it, else the lent H200 KVM guest's
//!   (`probe/profiles/h200-x1.vm-fields.json`: 3.18 µs one-shot latency, which
//!   `machine::shm_ring` splits into the 2.24 µs store-to-poll hop and 1.24 µs dependent load
//!   measured on the same guest; ~51 GB/s, a PCIe Gen5 x16
//!   card like the RTX PRO 6000), said in a note.
//! - `routed`: the pairs keep peer access but each peer copy is the host-staged copy (what probe
//!   measures on such a pair: no faster than staging); collectives over them are dropped, so
//!   NCCL's `P2P` ring is costed over that path step by step
//!   (`machine::interconnect`), and the engines' custom all-reduce runs over it (`cost::comm`).
//!   Where the profile timed no host-staged copy, the published one is assumed: ~14 µs a small
//!   GPU→GPU copy without P2P and ~37 GB/s one way on Gen5 (the VM preset's figures).
//! - [`with_host_path`]: either state over a host path of a given latency and bandwidth, as a
//!   probe profile that measured them would carry it (the SHM ring's mapped-kernel staging for
//!   `off`, the peer copy for `routed`), for the sweep that says which host path reproduces a
//!   measurement (`sim::advise::host_path`). Nothing in it is fitted: the two figures are what
//!   `probe run --quick` prints on its `host path:` lines.

use models::profile::host_path::{HostPathFigures, graph_node_floor_us};
use models::profile::{
    Direction, HostDirection, HostStagePath, HostStagedCurve, MachineProfile, P2pState, PairClass,
    PairLink, SizePoint, Stat, TransferCurve, TransferMode,
};

/// A small GPU→GPU copy staged through host memory, µs (published, see the module docs).
pub const STAGED_LATENCY_US: f64 = 14.0;
/// A host-staged copy's one-way bandwidth on PCIe Gen5 x16, GB/s.
pub const STAGED_GB_PER_S: f64 = 37.0;

/// The lent H200 KVM guest's profile: its mapped-kernel host staging is the assumed host path.
const LENT_GUEST: &str = include_str!("../../probe/profiles/h200-x1.vm-fields.json");

/// `profile` with the pairs `changed(src, dst)` picks put in `state` (`real` changes nothing:
/// working P2P cannot be made from a profile that lacks it), and a note saying `why`.
pub fn with_state(
    profile: &MachineProfile,
    state: P2pState,
    changed: &dyn Fn(u32, u32) -> bool,
    why: &str,
) -> MachineProfile {
    let mut p = profile.clone();
    if state == P2pState::Real {
        return p;
    }
    let hit = |a: u32, b: u32| a != b && changed(a, b);
    for l in p.links.iter_mut().filter(|l| hit(l.src, l.dst)) {
        set_link(l, state, why);
    }
    // a curve timed over a changed pair ran with P2P: it no longer says what NCCL does
    p.collectives.retain(|c| {
        let over = c
            .devices
            .iter()
            .any(|&a| c.devices.iter().any(|&b| hit(a, b)));
        !over || (state == P2pState::Off && c.nccl_env.contains_key("NCCL_P2P_DISABLE"))
    });
    p.nccl_transports
        .retain(|t| match (t.from_device, t.to_device) {
            (Some(a), Some(b)) => !hit(a, b),
            _ => true,
        });
    if state == P2pState::Off {
        assume_host_staging(&mut p);
    }
    if let Some(v) = p.virtualization.as_mut() {
        v.p2p_state = P2pState::of_links(&p.links);
    }
    p.provenance
        .notes
        .push(format!("P2P {state} on the changed pairs: {why}"));
    p
}

/// `profile` with every GPU pair in `state` (`off` or `routed`) over a host path of `path`'s
/// latency and bandwidth: for `off` every GPU's mapped-kernel host staging (NCCL's SHM ring reads
/// its round trip and bandwidth back, [`models::profile::host_path::shm_path`]), for `routed`
/// every pair's peer and host-staged copy ([`models::profile::host_path::peer_copy`]). `real` is
/// returned unchanged.
pub fn with_host_path(
    profile: &MachineProfile,
    state: P2pState,
    path: HostPathFigures,
    why: &str,
) -> MachineProfile {
    let mut p = with_state(profile, state, &|_, _| true, why);
    let curve = |mode| path_curve(mode, path, 0.0);
    match state {
        P2pState::Real => return p,
        P2pState::Routed => {
            for l in p.links.iter_mut().filter(|l| l.src != l.dst) {
                l.curves = vec![
                    curve(TransferMode::HostStaged),
                    curve(TransferMode::CopyEngine),
                ];
                for k in ["host-staged", "copy-engine"] {
                    l.latency_us.insert(k.into(), Stat::exact(path.latency_us));
                }
            }
        }
        P2pState::Off => {
            for l in p.links.iter_mut().filter(|l| l.src != l.dst) {
                l.curves = vec![curve(TransferMode::HostStaged)];
                l.latency_us
                    .insert("host-staged".into(), Stat::exact(path.latency_us));
            }
            // the mapped-kernel loads include the GPU's own graph-node floor, as probe times them
            let floor = graph_node_floor_us(&p);
            p.host_staging
                .retain(|c| c.path != HostStagePath::MappedKernel);
            // the swept one-shot latency stands for the whole host path: the measured round
            // trips it replaces would otherwise set the SHM ring's steps
            p.host_round_trips.clear();
            for d in p.devices.iter().map(|d| d.index).collect::<Vec<_>>() {
                for direction in [HostDirection::HostToDevice, HostDirection::DeviceToHost] {
                    p.host_staging.push(HostStagedCurve {
                        device: d,
                        path: HostStagePath::MappedKernel,
                        direction,
                        points: path_curve(TransferMode::HostStaged, path, floor).points,
                        data_verified: None,
                    });
                }
            }
            p.provenance
                .notes
                .retain(|n| !n.starts_with("assumed host path"));
        }
    }
    p.provenance.notes.push(format!(
        "host path set to {:.1} µs and {:.2} GB/s (P2P {state}): {why}",
        path.latency_us, path.gb_per_s
    ));
    p
}

/// A host path's curve at probe's staging sizes (4 KiB … 16 MiB): the smallest size at the
/// latency (plus `floor_us`, the GPU's own per-kernel floor), the largest at the bandwidth, the
/// sizes between at latency + bytes / bandwidth.
fn path_curve(mode: TransferMode, path: HostPathFigures, floor_us: f64) -> TransferCurve {
    let sizes = [4u64 << 10, 64 << 10, 1 << 20, 16 << 20];
    let last = sizes.len() - 1;
    let points = sizes
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let wire_us = if i == 0 {
                0.0
            } else {
                b as f64 / (path.gb_per_s * 1e3)
            };
            let t = floor_us + path.latency_us + wire_us;
            let gb = if i == last {
                path.gb_per_s
            } else {
                b as f64 / (t * 1e3)
            };
            SizePoint {
                bytes: b,
                time_us: Stat::exact(t),
                gb_per_s: Stat::exact(gb),
            }
        })
        .collect();
    TransferCurve {
        mode,
        direction: Direction::Unidirectional,
        points,
        data_verified: Some(true),
    }
}

/// One pair put in `state`: its peer access, class, and the curves that path has.
fn set_link(l: &mut PairLink, state: P2pState, why: &str) {
    let staged = l
        .curves
        .iter()
        .find(|c| c.mode == TransferMode::HostStaged && c.direction == Direction::Unidirectional)
        .cloned()
        .unwrap_or_else(assumed_staged_curve);
    let staged_us = l
        .latency_us
        .get("host-staged")
        .copied()
        .unwrap_or(Stat::exact(STAGED_LATENCY_US));
    l.classification = Some(PairClass::HostBounce);
    l.curves.retain(|c| c.mode == TransferMode::HostStaged);
    l.latency_us.retain(|k, _| k == "host-staged");
    if !l
        .curves
        .iter()
        .any(|c| c.direction == Direction::Unidirectional)
    {
        l.curves.push(staged.clone());
    }
    l.latency_us.insert("host-staged".into(), staged_us);
    match state {
        P2pState::Off => l.can_access_peer = Some(false),
        P2pState::Routed => {
            l.can_access_peer = Some(true);
            l.curves.push(TransferCurve {
                mode: TransferMode::CopyEngine,
                ..staged
            });
            l.latency_us.insert("copy-engine".into(), staged_us);
        }
        P2pState::Real => {}
    }
    l.evidence.push(format!("P2P {state}: {why}"));
}

/// The published host-staged copy (14 µs + bytes at 37 GB/s) at the sizes probe times.
fn assumed_staged_curve() -> TransferCurve {
    let points = [4u64 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20]
        .iter()
        .map(|&b| {
            let t = STAGED_LATENCY_US + b as f64 / (STAGED_GB_PER_S * 1e3);
            SizePoint {
                bytes: b,
                time_us: Stat::exact(t),
                gb_per_s: Stat::exact(b as f64 / (t * 1e3)),
            }
        })
        .collect();
    TransferCurve {
        mode: TransferMode::HostStaged,
        direction: Direction::Unidirectional,
        points,
        data_verified: None,
    }
}

/// Gives every GPU the lent guest's mapped-kernel host staging where the profile measured none,
/// with a note (the SHM ring's round trip and bandwidth come from it).
fn assume_host_staging(p: &mut MachineProfile) {
    if p.host_staging
        .iter()
        .any(|c| c.path == HostStagePath::MappedKernel)
    {
        return;
    }
    let Ok(lent) =
        MachineProfile::from_json_str(LENT_GUEST, std::path::Path::new("h200-x1.vm-fields.json"))
    else {
        return;
    };
    for d in p.devices.iter().map(|d| d.index).collect::<Vec<_>>() {
        p.host_staging.extend(
            lent.host_staging
                .iter()
                .filter(|c| c.path == HostStagePath::MappedKernel)
                .cloned()
                .map(|mut c| {
                    c.device = d;
                    c
                }),
        );
    }
    p.provenance.notes.push(
        "assumed host path for NCCL's SHM ring: the lent H200 KVM guest's measured mapped-kernel \
         host staging (probe/profiles/h200-x1.vm-fields.json: 3.18 µs one-shot, a 2.24 µs hop and \
         a 1.24 µs load a ring step, ~51 GB/s; a \
         PCIe Gen5 x16 card), not measured on this machine"
            .into(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_carry_their_state_and_drop_the_p2p_curves() {
        let base = MachineProfile::from_json_str(
            include_str!("../presets/machines/rtx-pro-6000-x8-baremetal.json"),
            std::path::Path::new("rtx-pro-6000-x8-baremetal.json"),
        )
        .unwrap();
        assert_eq!(base.p2p_state(), Some(P2pState::Real));
        let off = with_state(&base, P2pState::Off, &|_, _| true, "test");
        assert_eq!(P2pState::of_links(&off.links), Some(P2pState::Off));
        assert!(off.collectives.iter().all(|c| c.devices.len() < 2));
        assert!(!off.host_staging.is_empty());
        let routed = with_state(&base, P2pState::Routed, &|_, _| true, "test");
        assert_eq!(P2pState::of_links(&routed.links), Some(P2pState::Routed));
        // only the cross-socket pairs: the 4-GPU curves of one socket stay measured
        let sys = with_state(&base, P2pState::Off, &|a, b| (a < 4) != (b < 4), "test");
        assert!(sys.collectives.iter().any(|c| c.devices == [0, 1, 2, 3]));
        assert!(!sys.collectives.iter().any(|c| c.devices.len() == 8));
    }

    #[test]
    fn a_host_path_is_read_back_as_given_by_both_states() {
        let base = MachineProfile::from_json_str(
            include_str!("../presets/machines/rtx-pro-6000-x8-baremetal.json"),
            std::path::Path::new("rtx-pro-6000-x8-baremetal.json"),
        )
        .unwrap();
        let path = HostPathFigures {
            latency_us: 40.0,
            gb_per_s: 2.0,
        };
        let off = with_host_path(&base, P2pState::Off, path, "test");
        assert_eq!(off.p2p_state(), Some(P2pState::Off));
        let shm = models::profile::host_path::shm_path(&off, &[]).unwrap();
        assert!((shm.latency_us - 40.0).abs() < 1e-9 && (shm.gb_per_s - 2.0).abs() < 1e-9);
        let routed = with_host_path(&base, P2pState::Routed, path, "test");
        assert_eq!(routed.p2p_state(), Some(P2pState::Routed));
        let all = |_: &PairLink| true;
        let peer = models::profile::host_path::slowest_peer_copy(&routed, &all).unwrap();
        assert_eq!(peer, path);
    }
}
