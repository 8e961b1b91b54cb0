//! The rendezvous's messages: one JSON object per line, each carrying the protocol version, so
//! a peer speaking another one is refused by name rather than misread. A message is small
//! (a node's part of the profile is the largest: its one-node profile, tens of KiB to a few
//! MiB); TCP keeps them in order per peer.

use super::groups::CrossPlan;
use crate::nccl::protocol::GroupReport;
use crate::nic::NetObservation;
use models::profile::{MachineProfile, NodeInfo};
use serde::{Deserialize, Serialize};

/// Version of this message set; a peer with another is refused.
pub const PROTOCOL_VERSION: u32 = 1;

/// Who is joining, and with what: node 0 refuses a peer whose probe version, profile schema,
/// node count or measurement plan differ from its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub probe_version: String,
    pub schema_version: u32,
    pub node_rank: u32,
    pub nnodes: u32,
    #[serde(default)]
    pub hostname: Option<String>,
    /// The measurement plan as a short text (`--quick`, `--only`, sizes): every node must
    /// measure the same things for the merged profile to be one machine's.
    pub plan: String,
}

/// What one node measured on itself, sent to node 0 before the cross-node step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePart {
    /// Its one-node profile (CUDA device indices of that node).
    pub profile: MachineProfile,
    /// Its node entry (rank, host, launcher, NICs; devices still local indices).
    pub node: NodeInfo,
}

/// Every message of the rendezvous.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Msg {
    /// Peer → node 0, first.
    Hello(Hello),
    /// Node 0 → peer: joined; wait for `Start`.
    Welcome,
    /// Node 0 → peer: not joined, and why.
    Refuse { reason: String },
    /// Node 0 → peers: every node joined; measure.
    Start,
    /// Either way: this side stops, and why.
    Abort { reason: String },
    /// Either way, every second: still alive (silence beyond the timeout is a dead peer).
    Heartbeat,
    /// Peer → node 0: its own measurements.
    Part(Box<NodePart>),
    /// Node 0 → peers: the cross-node groups.
    Plan(CrossPlan),
    /// Member → node 0: its worker waits at group `group`'s start.
    Ready { group: u32 },
    /// Node 0 → members: start group `group` with this NCCL unique id (hex).
    Go { group: u32, unique_id: String },
    /// Node 0 → members: record group `group` as not measured.
    Skip { group: u32, reason: String },
    /// Member → node 0: its ranks' results for group `group`.
    GroupDone {
        group: u32,
        report: Box<GroupReport>,
    },
    /// Member → node 0: no results for group `group` (its worker died or was killed).
    GroupFailed { group: u32, reason: String },
    /// Peer → node 0: its cross-node groups are done; what NCCL said about the network.
    CrossDone {
        net: NetObservation,
        notes: Vec<String>,
    },
    /// Node 0 → peers: the merged profile is written.
    Done { profile_path: String },
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    protocol: u32,
    #[serde(flatten)]
    msg: Msg,
}

/// One line (with its newline) for `msg`.
pub fn encode(msg: &Msg) -> String {
    let env = Envelope {
        protocol: PROTOCOL_VERSION,
        msg: msg.clone(),
    };
    let mut s = serde_json::to_string(&env).expect("messages serialize");
    s.push('\n');
    s
}

/// Why a line is not a message of this protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Undecodable {
    /// Another protocol version; the fields a reader can still name (`probe_version`, …).
    Protocol {
        found: Option<u64>,
        probe_version: Option<String>,
    },
    /// Not JSON, or not one of [`Msg`].
    Malformed(String),
}

/// Decodes one line.
pub fn decode(line: &str) -> Result<Msg, Undecodable> {
    let v: serde_json::Value =
        serde_json::from_str(line.trim()).map_err(|e| Undecodable::Malformed(e.to_string()))?;
    let found = v.get("protocol").and_then(|p| p.as_u64());
    if found != Some(PROTOCOL_VERSION as u64) {
        return Err(Undecodable::Protocol {
            found,
            probe_version: v
                .get("probe_version")
                .and_then(|p| p.as_str())
                .map(String::from),
        });
    }
    serde_json::from_value::<Envelope>(v)
        .map(|e| e.msg)
        .map_err(|e| Undecodable::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn messages_round_trip_with_their_protocol() {
        let m = Msg::Go {
            group: 3,
            unique_id: crate::hex::hex(&[0, 1, 254, 255]),
        };
        let line = encode(&m);
        assert!(
            line.ends_with('\n') && line.contains("\"protocol\":1"),
            "{line}"
        );
        assert_eq!(decode(&line), Ok(m));
    }

    #[test]
    fn another_protocol_is_named_not_misread() {
        let line = r#"{"protocol": 7, "kind": "hello", "probe_version": "9.9.9"}"#;
        assert_eq!(
            decode(line),
            Err(Undecodable::Protocol {
                found: Some(7),
                probe_version: Some("9.9.9".into())
            })
        );
        assert!(matches!(decode("nope"), Err(Undecodable::Malformed(_))));
        let unknown = r#"{"protocol": 1, "kind": "teleport"}"#;
        assert!(matches!(decode(unknown), Err(Undecodable::Malformed(_))));
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&String::from_utf8_lossy(&b));
        }
    }
}
