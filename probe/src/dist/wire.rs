//! The rendezvous's messages: one JSON object per line, each carrying the protocol version, so
//! a peer speaking another one is refused by name rather than misread. A message is small
//! (a node's part of the profile is the largest: its one-node profile, tens of KiB to a few
//! MiB; [`super::frame`] caps every line); TCP keeps them in order per peer. Node 0 speaks
//! first on a new connection (its challenge nonce), the peer answers with its signed hello.

use super::groups::CrossPlan;
use crate::nccl::protocol::GroupReport;
use crate::nic::NetObservation;
use models::profile::{MachineProfile, NodeInfo};
use serde::{Deserialize, Serialize};

/// Version of this message set; a peer with another is refused.
/// 2: node 0 opens with a challenge, hellos and welcomes carry HMAC proofs ([`super::auth`]).
pub const PROTOCOL_VERSION: u32 = 2;

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
    /// The launcher's job this node's key is bound to (empty: none), in clear for refusals.
    pub job: String,
    /// The peer's own nonce (hex), which node 0's welcome proof covers.
    pub nonce: String,
    /// HMAC over node 0's challenge nonce and every field above (hex; see [`super::auth`]).
    pub proof: String,
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
    /// Node 0 → peer, first on every connection: a fresh nonce (hex) the hello must prove.
    Challenge { nonce: String },
    /// Peer → node 0, the answer to the challenge.
    Hello(Hello),
    /// Node 0 → peer: joined (with node 0's proof over both nonces); wait for `Start`.
    Welcome { proof: String },
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

/// Decodes one line as read off the wire (not UTF-8 is malformed).
pub fn decode_frame(line: &[u8]) -> Result<Msg, Undecodable> {
    let text = std::str::from_utf8(line)
        .map_err(|e| Undecodable::Malformed(format!("not UTF-8 text ({e})")))?;
    decode(text)
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
            line.ends_with('\n') && line.contains("\"protocol\":2"),
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
        let unknown = r#"{"protocol": 2, "kind": "teleport"}"#;
        assert!(matches!(decode(unknown), Err(Undecodable::Malformed(_))));
    }

    /// One message of every kind the wire carries.
    fn every_kind() -> Vec<Msg> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let profile = MachineProfile::load(&dir.join("profiles/h200-x1.json")).unwrap();
        let report = GroupReport {
            devices: vec![0, 1],
            nccl_version: Some("2.28.3".into()),
            library_path: None,
            curves: profile.collectives.clone(),
            notes: vec!["n".into()],
            aborted: false,
            cross_group: Some(0),
            samples_us: vec![vec![vec![1.0, 2.5]]],
        };
        vec![
            Msg::Challenge {
                nonce: "ab".repeat(32),
            },
            Msg::Hello(Hello {
                probe_version: "0.1.0".into(),
                schema_version: 2,
                node_rank: 1,
                nnodes: 2,
                hostname: Some("b".into()),
                plan: "quick".into(),
                job: "slurm job 1 step 0".into(),
                nonce: "cd".repeat(32),
                proof: "ef".repeat(32),
            }),
            Msg::Welcome {
                proof: "01".repeat(32),
            },
            Msg::Refuse { reason: "r".into() },
            Msg::Start,
            Msg::Abort { reason: "a".into() },
            Msg::Heartbeat,
            Msg::Part(Box::new(NodePart {
                node: NodeInfo {
                    rank: 1,
                    ..NodeInfo::default()
                },
                profile,
            })),
            Msg::Plan(CrossPlan::default()),
            Msg::Ready { group: 1 },
            Msg::Go {
                group: 1,
                unique_id: "00".repeat(128),
            },
            Msg::Skip {
                group: 2,
                reason: "s".into(),
            },
            Msg::GroupDone {
                group: 0,
                report: Box::new(report),
            },
            Msg::GroupFailed {
                group: 0,
                reason: "f".into(),
            },
            Msg::CrossDone {
                net: NetObservation::default(),
                notes: vec![],
            },
            Msg::Done {
                profile_path: "/p.json".into(),
            },
        ]
    }

    #[test]
    fn every_kind_round_trips() {
        for m in every_kind() {
            assert_eq!(decode_frame(encode(&m).as_bytes()), Ok(m));
        }
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&String::from_utf8_lossy(&b));
            let _ = decode_frame(&b);
        }

        /// Every message kind, its line cut, overwritten or spliced with arbitrary bytes: the
        /// decoder names it or reads a message that encodes and decodes again, and never panics.
        #[test]
        fn every_kind_survives_arbitrary_damage(
            kind in 0usize..16,
            at in any::<proptest::sample::Index>(),
            cut in any::<bool>(),
            junk in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            static ALL: std::sync::OnceLock<Vec<Msg>> = std::sync::OnceLock::new();
            let all = ALL.get_or_init(every_kind);
            let mut line = encode(&all[kind % all.len()]).into_bytes();
            let i = at.index(line.len());
            if cut {
                line.truncate(i);
            }
            let end = (i + junk.len()).min(line.len());
            line.splice(i..end, junk);
            // What decodes is a message this side can send again (compared by kind: a damaged
            // float may sit one ULP off serde_json's shortest form).
            if let Ok(m) = decode_frame(&line) {
                let again = decode_frame(encode(&m).as_bytes());
                prop_assert!(
                    again.as_ref().is_ok_and(|a| std::mem::discriminant(a) == std::mem::discriminant(&m)),
                    "{:?}",
                    again
                );
            }
        }
    }
}
