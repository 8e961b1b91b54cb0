//! Verdict per GPU pair — `p2p`, `host-bounce` or `broken` — from measured facts, each written
//! down as evidence so a reader can check the call.
//!
//! Rules, in order: a P2P mode whose data did not arrive intact is `broken` (a VM can report
//! P2P available while writes land in a private mirror); no usable peer access with intact
//! host-staged copies is `host-bounce`; peer access that is no faster than staging through host
//! memory (peak bandwidth within 10 % and small-copy latency at least half of the staged one) is
//! a hypervisor bouncing P2P through the host, also `host-bounce`; anything else is `p2p`.

use models::profile::{Direction, P2pState, PairClass, PairLink, TransferCurve, TransferMode};

fn curve(link: &PairLink, mode: TransferMode) -> Option<&TransferCurve> {
    link.curves
        .iter()
        .find(|c| c.mode == mode && c.direction == Direction::Unidirectional)
}

fn peak_gb_per_s(c: &TransferCurve) -> f64 {
    c.points
        .iter()
        .map(|p| p.gb_per_s.median)
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
}

/// P2P as reported (driver, NVML) against P2P working (a peer copy whose data arrived), per
/// ordered pair of two GPUs. `copy_works` is `None` when no peer copy was tried.
pub fn peer_checks(links: &[PairLink]) -> Vec<models::profile::PeerCheck> {
    links
        .iter()
        .filter(|l| l.src != l.dst)
        .map(|l| {
            let peer: Vec<&TransferCurve> = l
                .curves
                .iter()
                .filter(|c| c.mode != TransferMode::HostStaged)
                .collect();
            let copy_works = if peer.is_empty() {
                (l.classification == Some(PairClass::Broken) && l.can_access_peer == Some(true))
                    .then_some(false)
            } else {
                Some(
                    peer.iter().all(|c| c.data_verified != Some(false))
                        && l.classification != Some(PairClass::Broken),
                )
            };
            models::profile::PeerCheck {
                src: l.src,
                dst: l.dst,
                reported_by_driver: l.can_access_peer,
                nvml_status: l.nvml_p2p_status.clone(),
                copy_works,
            }
        })
        .collect()
}

/// The machine's P2P state (`real`, `off`, `routed`: [`P2pState`]) from its classified pairs,
/// with one evidence line per state naming its pairs and, for one of them, the measured facts
/// that decided. `routed` is told from `real` by the peer copy itself: it works and the driver
/// reports peer access, but it is no faster than staging through host memory.
pub fn machine_state(links: &[PairLink]) -> (Option<P2pState>, Vec<String>) {
    let state = P2pState::of_links(links);
    let mut evidence = Vec::new();
    for s in [P2pState::Real, P2pState::Routed, P2pState::Off] {
        let pairs: Vec<&PairLink> = links
            .iter()
            .filter(|l| P2pState::of_link(l) == Some(s))
            .collect();
        let Some(first) = pairs.first() else {
            continue;
        };
        let names: Vec<String> = pairs
            .iter()
            .take(8)
            .map(|l| format!("{}->{}", l.src, l.dst))
            .collect();
        let why = match s {
            P2pState::Real => {
                "peer access reported, peer copies verified and faster than host staging"
            }
            P2pState::Routed => {
                "peer access reported and copies arrive, but no faster than staging through host memory: each transfer crosses the host"
            }
            P2pState::Off => {
                "no usable peer access (driver reports none, or peer data corrupted): NCCL falls back to SHM"
            }
        };
        evidence.push(format!(
            "{s} on {} pair(s) ({}{}): {why}; {}->{}: {}",
            pairs.len(),
            names.join(", "),
            if pairs.len() > 8 { ", …" } else { "" },
            first.src,
            first.dst,
            first.evidence.join("; ")
        ));
    }
    (state, evidence)
}

/// Classifies `link` in place (sets `classification`, appends `evidence`). Pairs of a GPU
/// with itself (the one-GPU host bounce) get no class.
pub fn classify(link: &mut PairLink) {
    if link.src == link.dst {
        link.evidence
            .push("same GPU: only the host bounce D→H→D is measured".into());
        return;
    }
    let staged = curve(link, TransferMode::HostStaged).cloned();
    let ce = curve(link, TransferMode::CopyEngine).cloned();
    let sm = curve(link, TransferMode::SmKernel).cloned();
    let mut ev = Vec::new();
    if let Some(s) = &link.nvml_p2p_status {
        ev.push(format!("NVML P2P status: {s}"));
    }
    if let Some(c) = link.can_access_peer {
        ev.push(format!("cuDeviceCanAccessPeer: {c}"));
    }
    let staged_ok = staged.as_ref().and_then(|c| c.data_verified);
    let staged_bw = staged.as_ref().map(peak_gb_per_s);
    let class = if ce.is_none() && sm.is_none() {
        match staged_ok {
            Some(true) => {
                ev.push(format!(
                    "no peer access; host-staged copies verified, peak {:.1} GB/s",
                    staged_bw.unwrap_or(f64::NAN)
                ));
                Some(PairClass::HostBounce)
            }
            Some(false) => {
                ev.push("no peer access and host-staged data arrived corrupted".into());
                Some(PairClass::Broken)
            }
            None if staged.is_some() => {
                ev.push(format!(
                    "no peer access; host-staged copies (data not checked), peak {:.1} GB/s",
                    staged_bw.unwrap_or(f64::NAN)
                ));
                Some(PairClass::HostBounce)
            }
            None => None,
        }
    } else {
        let bad: Vec<String> = [&ce, &sm]
            .into_iter()
            .flatten()
            .filter(|c| c.data_verified == Some(false))
            .map(|c| format!("{:?}", c.mode))
            .collect();
        if !bad.is_empty() {
            ev.push(format!(
                "peer copies ({}) reported success but the destination read back differs from what the source wrote",
                bad.join(", ")
            ));
            Some(PairClass::Broken)
        } else {
            let p2p_bw = [&ce, &sm]
                .into_iter()
                .flatten()
                .map(peak_gb_per_s)
                .fold(0.0, f64::max);
            let lat = |k: &str| link.latency_us.get(k).map(|s| s.median);
            let p2p_lat = [lat("sm-kernel"), lat("copy-engine")]
                .into_iter()
                .flatten()
                .fold(f64::INFINITY, f64::min);
            let staged_lat = lat("host-staged");
            ev.push(format!(
                "peer copies verified, peak {p2p_bw:.1} GB/s, small-copy latency {p2p_lat:.2} µs"
            ));
            if let (Some(sbw), Some(slat)) = (staged_bw, staged_lat) {
                ev.push(format!(
                    "host-staged peak {sbw:.1} GB/s, latency {slat:.2} µs"
                ));
                if p2p_bw <= 1.1 * sbw && p2p_lat >= 0.5 * slat {
                    ev.push("peer access is no faster than staging through host memory: P2P is bounced by the host".into());
                    Some(PairClass::HostBounce)
                } else {
                    Some(PairClass::P2p)
                }
            } else {
                Some(PairClass::P2p)
            }
        }
    };
    link.classification = class;
    link.evidence.extend(ev);
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::profile::{LinkClass, SizePoint, Stat};

    fn c(mode: TransferMode, gbps: f64, ok: bool) -> TransferCurve {
        TransferCurve {
            mode,
            direction: Direction::Unidirectional,
            points: vec![SizePoint {
                bytes: 1 << 28,
                time_us: Stat::exact(1.0),
                gb_per_s: Stat::exact(gbps),
            }],
            data_verified: Some(ok),
        }
    }

    fn link(curves: Vec<TransferCurve>, lat: &[(&str, f64)]) -> PairLink {
        PairLink {
            src: 0,
            dst: 1,
            topology: LinkClass::NODE,
            nvml_p2p_status: None,
            can_access_peer: Some(true),
            classification: None,
            evidence: vec![],
            latency_us: lat
                .iter()
                .map(|(k, v)| (k.to_string(), Stat::exact(*v)))
                .collect(),
            curves,
        }
    }

    #[test]
    fn fast_verified_peer_copies_are_p2p() {
        let mut l = link(
            vec![
                c(TransferMode::CopyEngine, 53.0, true),
                c(TransferMode::HostStaged, 27.0, true),
            ],
            &[("copy-engine", 2.0), ("host-staged", 14.0)],
        );
        classify(&mut l);
        assert_eq!(l.classification, Some(PairClass::P2p));
        assert!(l.evidence.iter().any(|e| e.contains("53.0")));
    }

    #[test]
    fn corrupted_peer_data_is_broken() {
        let mut l = link(
            vec![
                c(TransferMode::CopyEngine, 53.0, false),
                c(TransferMode::HostStaged, 27.0, true),
            ],
            &[],
        );
        classify(&mut l);
        assert_eq!(l.classification, Some(PairClass::Broken));
    }

    #[test]
    fn no_peer_access_is_host_bounce() {
        let mut l = link(vec![c(TransferMode::HostStaged, 27.0, true)], &[]);
        l.can_access_peer = Some(false);
        classify(&mut l);
        assert_eq!(l.classification, Some(PairClass::HostBounce));
    }

    #[test]
    fn peer_access_as_slow_as_host_is_host_bounce() {
        let mut l = link(
            vec![
                c(TransferMode::CopyEngine, 26.0, true),
                c(TransferMode::HostStaged, 27.0, true),
            ],
            &[("copy-engine", 12.0), ("host-staged", 14.0)],
        );
        classify(&mut l);
        assert_eq!(l.classification, Some(PairClass::HostBounce));
    }

    #[test]
    fn same_gpu_gets_no_class() {
        let mut l = link(vec![c(TransferMode::HostStaged, 27.0, true)], &[]);
        l.dst = 0;
        classify(&mut l);
        assert_eq!(l.classification, None);
    }
}
