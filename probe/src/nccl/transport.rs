//! Which transport NCCL picked between two ranks, read from its `NCCL_DEBUG=INFO` channel lines
//! at the edge into typed values:
//!
//! ```text
//! host:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
//! host:12:34 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via SHM/direct/direct
//! host:12:34 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
//! ```
//!
//! NCCL prints one such line per channel and direction (`p2p.cc`, `shm.cc`, `net.cc`:
//! `"Channel %02d/%01d : %d[%d] -> %d[%d] via …"`); the number in brackets is the device
//! index NCCL uses (NVML's, the CUDA index unless CUDA_VISIBLE_DEVICES reorders them; older
//! NCCL printed a hex bus id there, read as unknown).

use models::profile::{NcclPeerTransport, NcclTransport};
use std::collections::BTreeMap;

/// One parsed channel line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelLine {
    pub channel: u32,
    pub from_rank: u32,
    pub from_device: Option<u32>,
    pub to_rank: u32,
    pub to_device: Option<u32>,
    pub transport: NcclTransport,
    /// The text after `via `.
    pub via: String,
}

/// Whether a debug line is worth keeping for [`parse_line`] (cheap pre-filter).
pub fn is_channel_line(line: &str) -> bool {
    line.contains("NCCL INFO Channel ") && line.contains(" via ")
}

/// Reads `rank[dev]`.
fn rank_dev(s: &str) -> Option<(u32, Option<u32>)> {
    let (rank, rest) = s.split_once('[')?;
    let dev = rest.strip_suffix(']')?;
    let rank = rank.parse().ok()?;
    // A decimal index; a hex bus id (older NCCL) is not a device index.
    let dev = (dev.len() <= 4).then(|| dev.parse().ok()).flatten();
    Some((rank, dev))
}

/// The transport a `via` text names.
pub fn transport_of(via: &str) -> Option<NcclTransport> {
    let head = via.split('/').next()?;
    Some(match head {
        "P2P" => {
            let rest = &via[4.min(via.len())..];
            if rest.starts_with("IPC") {
                NcclTransport::P2pIpc
            } else if rest.starts_with("direct pointer") {
                NcclTransport::P2pDirect
            } else if rest.starts_with("CUMEM") {
                NcclTransport::P2pCuMem
            } else {
                NcclTransport::P2pOther
            }
        }
        "SHM" => NcclTransport::Shm,
        "NET" => NcclTransport::Net,
        h if h.starts_with("CollNet") => NcclTransport::CollNet,
        _ => return None,
    })
}

/// Parses one NCCL channel line; `None` for any other line.
pub fn parse_line(line: &str) -> Option<ChannelLine> {
    let at = line.find("NCCL INFO Channel ")?;
    let rest = &line[at + "NCCL INFO Channel ".len()..];
    let (chan, rest) = rest.split_once(" : ")?;
    let channel = chan.split('/').next()?.trim().parse().ok()?;
    let (pair, via) = rest.split_once(" via ")?;
    let mut words = pair.split_whitespace();
    let from = rank_dev(words.next()?)?;
    if words.next()? != "->" {
        return None;
    }
    let to = rank_dev(words.next()?)?;
    // What may follow the pair: `[send]` / `[receive]` on NET lines, nothing else.
    if words.any(|w| !(w.starts_with('[') && w.ends_with(']'))) {
        return None;
    }
    let via = via.trim().to_string();
    Some(ChannelLine {
        channel,
        from_rank: from.0,
        from_device: from.1,
        to_rank: to.0,
        to_device: to.1,
        transport: transport_of(&via)?,
        via,
    })
}

/// (from device, to device, from rank, to rank, via): one connection of one communicator.
type PeerKey = (Option<u32>, Option<u32>, u32, u32, String);

/// Folds channel lines into one record per (from device, to device, via), counting distinct
/// channels, under the NCCL environment `env` the lines were printed with.
pub fn summarize(lines: &[String], env: &BTreeMap<String, String>) -> Vec<NcclPeerTransport> {
    let mut by: BTreeMap<PeerKey, Vec<u32>> = BTreeMap::new();
    for l in lines.iter().filter_map(|l| parse_line(l)) {
        let key = (l.from_device, l.to_device, l.from_rank, l.to_rank, l.via);
        let chans = by.entry(key).or_default();
        if !chans.contains(&l.channel) {
            chans.push(l.channel);
        }
    }
    // One record per device pair and via: the same pair in several groups (other ranks) is
    // one choice.
    let mut out: Vec<NcclPeerTransport> = Vec::new();
    for ((from_device, to_device, _, _, via), chans) in by {
        if let Some(r) = out
            .iter_mut()
            .find(|r| r.from_device == from_device && r.to_device == to_device && r.via == via)
        {
            r.channels = r.channels.max(chans.len() as u32);
            continue;
        }
        out.push(NcclPeerTransport {
            nccl_env: env.clone(),
            from_device,
            to_device,
            transport: transport_of(&via).expect("parsed lines have a transport"),
            via,
            channels: chans.len() as u32,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_each_transport() {
        let cases = [
            (
                "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
                NcclTransport::P2pCuMem,
            ),
            (
                "h:1:1 [0] NCCL INFO Channel 03/1 : 0[0] -> 1[1] via P2P/IPC/read",
                NcclTransport::P2pIpc,
            ),
            (
                "h:1:1 [1] NCCL INFO Channel 01 : 1[1] -> 0[0] via P2P/direct pointer",
                NcclTransport::P2pDirect,
            ),
            (
                "h:1:1 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via SHM/direct/direct",
                NcclTransport::Shm,
            ),
            (
                "h:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
                NcclTransport::Net,
            ),
        ];
        for (line, t) in cases {
            let l = parse_line(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(l.transport, t, "{line}");
        }
        let l = parse_line(cases[4].0).unwrap();
        assert_eq!(
            (l.from_rank, l.from_device, l.to_rank, l.to_device),
            (0, Some(0), 8, Some(0))
        );
        assert_eq!(l.via, "NET/IB/0/GDRDMA");
        // An old NCCL's bus id is no device index.
        let old = parse_line("h:1:1 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[1c000] via P2P/IPC")
            .unwrap();
        assert_eq!((old.from_device, old.to_device), (None, None));
    }

    #[test]
    fn other_lines_are_not_channels() {
        for line in [
            "h:1:1 [0] NCCL INFO Channel 00/02 :    0   1",
            "h:1:1 [0] NCCL INFO Connected all rings",
            "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via TELEPATHY/x",
            "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] => 1[1] via SHM/direct/direct",
            "Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
        ] {
            assert_eq!(parse_line(line), None, "{line}");
        }
    }

    #[test]
    fn summary_counts_channels_per_pair() {
        let lines: Vec<String> = (0..4)
            .flat_map(|c| {
                [
                    format!(
                        "h:1:1 [0] NCCL INFO Channel {c:02}/0 : 0[0] -> 1[1] via SHM/direct/direct"
                    ),
                    format!(
                        "h:1:1 [1] NCCL INFO Channel {c:02}/0 : 1[1] -> 0[0] via SHM/direct/direct"
                    ),
                ]
            })
            .chain(["noise".to_string()])
            .collect();
        let s = summarize(&lines, &BTreeMap::new());
        assert_eq!(s.len(), 2);
        assert!(
            s.iter()
                .all(|r| r.channels == 4 && r.transport == NcclTransport::Shm)
        );
    }

    proptest! {
        /// Arbitrary text never panics, and nothing without NCCL's channel shape is read.
        #[test]
        fn arbitrary_strings_never_panic(s in ".{0,200}") {
            if let Some(l) = parse_line(&s) {
                prop_assert!(s.contains("NCCL INFO Channel "));
                prop_assert!(s.contains(&l.via));
            }
        }

        /// Every well-formed line reads back what it says.
        #[test]
        fn well_formed_lines_read_back(
            chan in 0u32..64, a in 0u32..1024, b in 0u32..1024, da in 0u32..64, db in 0u32..64,
            pick in 0usize..5, prefix in "[a-z0-9:. \\[\\]]{0,30}",
        ) {
            let via = ["P2P/CUMEM/read", "P2P/IPC", "P2P/direct pointer", "SHM/direct/direct", "NET/Socket/0"][pick];
            let line = format!("{prefix} NCCL INFO Channel {chan:02}/0 : {a}[{da}] -> {b}[{db}] via {via}");
            let l = parse_line(&line).unwrap();
            prop_assert_eq!((l.channel, l.from_rank, l.to_rank), (chan, a, b));
            prop_assert_eq!((l.from_device, l.to_device), (Some(da), Some(db)));
            prop_assert_eq!(l.via, via);
        }
    }
}
