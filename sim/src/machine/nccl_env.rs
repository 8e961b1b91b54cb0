//! A launch line's NCCL P2P environment, read as NCCL reads it, applied to the machine: which
//! pairs NCCL then runs without P2P (its SHM transport over the host), each said in a note.
//!
//! - `NCCL_P2P_DISABLE` (`NCCL_PARAM(P2pDisable, "P2P_DISABLE", 0)`): an integer; non-zero turns
//!   NCCL's P2P transport off on every pair, 0 leaves it; a value that is not an integer NCCL
//!   warns about and keeps its default, so it is noted, not refused.
//! - `NCCL_P2P_LEVEL` (`ncclGetLevel`): the widest path NCCL still uses P2P over, by NCCL's path
//!   names `LOC` < `NVL` < `PIX` < `PXB` < `PHB` < `SYS` (case as written: NCCL compares with
//!   `strcmp`), or the legacy integers 0–4 (LOC, PIX, PXB, PHB, SYS; larger read as SYS). Pairs
//!   whose `nvidia-smi topo -m` class is wider (NODE counts as PHB: through the CPU's host
//!   bridges) go off; where every pair is within it, nothing changes (a profile measured with
//!   the setting carries what it tunes). An unknown name NCCL ignores: noted.
//!
//! The engines' custom all-reduce is not NCCL's: it keeps the pairs as their own P2P check sees
//! them ([`super::Machine::with_nccl_p2p`]).

use super::Machine;
use crate::error::Result;
use models::profile::{LinkClass, P2pState};

/// NCCL's path rank of an `nvidia-smi topo -m` class (LOC 0 … SYS 5, NET above).
fn path_rank(c: LinkClass) -> u32 {
    match c {
        LinkClass::X => 0,
        LinkClass::NV(_) => 1,
        LinkClass::PIX => 2,
        LinkClass::PXB => 3,
        LinkClass::PHB | LinkClass::NODE => 4,
        LinkClass::SYS | LinkClass::Unknown => 5,
        LinkClass::NET => 6,
    }
}

/// The rank of an `NCCL_P2P_LEVEL` value, `None` for one NCCL does not recognise.
fn level_rank(v: &str) -> Option<u32> {
    let names = ["LOC", "NVL", "PIX", "PXB", "PHB", "SYS"];
    if let Some(i) = names.iter().position(|n| *n == v) {
        return Some(i as u32);
    }
    let legacy: u32 = v.parse().ok()?;
    // legacy numbering: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS (no NVL)
    Some(match legacy {
        0 => 0,
        n => (n + 1).min(5),
    })
}

/// `machine` as NCCL runs it under `env` (the launch line's assignments), with a note per
/// setting read.
pub fn apply(machine: Machine, env: &[(String, String)]) -> Result<(Machine, Vec<String>)> {
    let mut m = machine;
    let mut notes = Vec::new();
    for (key, value) in env {
        let spelled = format!("{key}={value}");
        match key.as_str() {
            "NCCL_P2P_DISABLE" => match value.trim().parse::<i64>() {
                Ok(0) => notes.push(format!("{spelled}: NCCL keeps P2P (its default)")),
                Ok(_) => {
                    m = m.with_nccl_p2p(P2pState::Off, &|_, _| true, &spelled)?;
                    notes.push(format!(
                        "{spelled}: NCCL runs every collective over its SHM transport (pinned host memory) instead of P2P; the engine's custom all-reduce keeps the GPUs' own peer access"
                    ));
                }
                Err(_) => notes.push(format!(
                    "{spelled}: not an integer; NCCL warns and keeps its default (P2P on)"
                )),
            },
            "NCCL_P2P_LEVEL" => {
                let Some(level) = level_rank(value.trim()) else {
                    notes.push(format!(
                        "{spelled}: not a level NCCL knows (LOC, NVL, PIX, PXB, PHB, SYS, or 0–4; upper case): NCCL ignores it"
                    ));
                    continue;
                };
                let beyond = |a: u32, b: u32| path_rank(m.link_class(a, b)) > level;
                let devices: Vec<u32> = m.profile.devices.iter().map(|d| d.index).collect();
                let off = devices
                    .iter()
                    .flat_map(|&a| devices.iter().map(move |&b| (a, b)))
                    .filter(|&(a, b)| a != b && beyond(a, b))
                    .count();
                if off == 0 {
                    notes.push(format!(
                        "{spelled}: every GPU pair of this machine is within it: P2P where the profile has it, curves as measured (a profile measured with the setting carries what it tunes)"
                    ));
                    continue;
                }
                let classes: Vec<(u32, u32, LinkClass)> = devices
                    .iter()
                    .flat_map(|&a| devices.iter().map(move |&b| (a, b)))
                    .filter(|&(a, b)| a != b)
                    .map(|(a, b)| (a, b, m.link_class(a, b)))
                    .collect();
                let changed = move |a: u32, b: u32| {
                    classes
                        .iter()
                        .any(|&(x, y, c)| (x, y) == (a, b) && path_rank(c) > level)
                };
                m = m.with_nccl_p2p(P2pState::Off, &changed, &spelled)?;
                notes.push(format!(
                    "{spelled}: NCCL uses P2P only up to that path; {} ordered GPU pair(s) beyond it run over its SHM transport",
                    off
                ));
            }
            _ => {}
        }
    }
    Ok((m, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::profile::CollectiveOp;

    fn env(k: &str, v: &str) -> Vec<(String, String)> {
        vec![(k.to_string(), v.to_string())]
    }

    fn ar_s(m: &Machine, devices: &[u32], bytes: f64) -> f64 {
        m.collective(CollectiveOp::AllReduce, devices).time_s(bytes)
    }

    #[test]
    fn p2p_disable_and_levels_change_nccls_curves_in_the_right_direction() {
        let base = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        let all: Vec<u32> = (0..8).collect();
        let socket = [0, 1, 2, 3];
        let (off, notes) = apply(base.clone(), &env("NCCL_P2P_DISABLE", "1")).unwrap();
        assert!(notes[0].contains("SHM"), "{notes:?}");
        let c = off.collective(CollectiveOp::AllReduce, &all);
        assert!(c.source.contains("SHM"), "{}", c.source);
        // off is slower than P2P at a one-token decode's message (GLM-5: 6144 × 2 B); at 786 KB
        // the SHM ring over a healthy host path (the lent guest's) is as fast as NCCL's default
        // cross-socket P2P ring on this box, so no direction is asserted there
        let (o, b) = (ar_s(&off, &all, 12e3), ar_s(&base, &all, 12e3));
        assert!(o > b, "12 KB: off {o:e} s, P2P {b:e} s; {}", c.source);
        // the engines still see peer access: NCCL's setting is NCCL's
        assert_eq!(
            off.engine_peer_path(&all),
            Some(super::super::PeerPath::Real)
        );
        let (same, notes) = apply(base.clone(), &env("NCCL_P2P_DISABLE", "0")).unwrap();
        assert_eq!(ar_s(&same, &all, 786e3), ar_s(&base, &all, 786e3));
        assert_eq!(notes.len(), 1);
        let (same, notes) = apply(base.clone(), &env("NCCL_P2P_DISABLE", "yes")).unwrap();
        assert!(notes[0].contains("keeps its default"), "{notes:?}");
        assert_eq!(ar_s(&same, &all, 786e3), ar_s(&base, &all, 786e3));
        // PHB: P2P inside a socket (NODE), not across (SYS): 8 GPUs slower, one socket unchanged
        let (phb, _) = apply(base.clone(), &env("NCCL_P2P_LEVEL", "PHB")).unwrap();
        assert!(ar_s(&phb, &all, 12e3) > ar_s(&base, &all, 12e3));
        assert_eq!(ar_s(&phb, &socket, 786e3), ar_s(&base, &socket, 786e3));
        let (loc, _) = apply(base.clone(), &env("NCCL_P2P_LEVEL", "LOC")).unwrap();
        assert!(ar_s(&loc, &socket, 12e3) > ar_s(&base, &socket, 12e3));
        for v in ["SYS", "4"] {
            let (sys, notes) = apply(base.clone(), &env("NCCL_P2P_LEVEL", v)).unwrap();
            assert!(notes[0].contains("within it"), "{notes:?}");
            assert_eq!(ar_s(&sys, &all, 786e3), ar_s(&base, &all, 786e3));
        }
        let (_, notes) = apply(base, &env("NCCL_P2P_LEVEL", "sys")).unwrap();
        assert!(notes[0].contains("NCCL ignores it"), "{notes:?}");
    }
}
