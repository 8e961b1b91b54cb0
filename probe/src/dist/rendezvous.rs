//! Joining: node 0 listens at the init address's port and admits one peer per other rank whose
//! hello matches its own (probe version, profile schema, protocol, node count, plan); peers
//! connect, retrying until node 0 is up. Everything waits against the join timeout and ends with
//! one line naming the node that is missing or refused.

use super::conn::{Inbox, Peer, read_raw, send_raw};
use super::launcher::DistSpec;
use super::wire::{Hello, Msg};
use crate::error::{ProbeError, Result};
use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// A joined multi-node run, as one node sees it.
pub struct Session {
    pub me: u32,
    pub nnodes: u32,
    /// Node 0: every other node; a peer: node 0 only.
    pub peers: BTreeMap<u32, Peer>,
    pub inbox: Inbox,
    /// Host names from the hellos (node 0), for labels.
    pub hosts: BTreeMap<u32, Option<String>>,
}

impl Session {
    /// Sends `msg` to every peer, ignoring ones that already went away (used on the way out).
    pub fn tell_all(&self, msg: &Msg) {
        for p in self.peers.values() {
            let _ = p.send(msg);
        }
    }

    /// The connection to `rank`.
    pub fn peer(&self, rank: u32) -> Result<&Peer> {
        self.peers
            .get(&rank)
            .ok_or_else(|| ProbeError::Dist(format!("node {rank} is not connected")))
    }
}

/// How long joins, silences and heartbeats may take.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Every node must have joined within this of node 0's start (peers: reached node 0).
    pub join: Duration,
    /// A peer silent this long (no heartbeat either) is dead.
    pub silence: Duration,
    pub heartbeat: Duration,
}

impl Timeouts {
    /// From `--dist-timeout`: joins within it; silence at least 10 s (heartbeats every second
    /// can be late on a loaded host), heartbeats every second or a quarter of it.
    pub fn from_join(join: Duration) -> Timeouts {
        Timeouts {
            join,
            silence: join.max(Duration::from_secs(10)),
            heartbeat: (join / 4).clamp(Duration::from_millis(100), Duration::from_secs(1)),
        }
    }
}

/// Joins the run described by `spec`, introducing this node with `hello`.
pub fn join(spec: &DistSpec, hello: &Hello, t: Timeouts) -> Result<Session> {
    if spec.node_rank == 0 {
        host(spec, hello, t)
    } else {
        connect(spec, hello, t)
    }
}

fn label(rank: u32, host: &Option<String>) -> String {
    match host {
        Some(h) => format!("node {rank} ({h})"),
        None => format!("node {rank}"),
    }
}

/// Why `theirs` may not join `ours`' run, or `None`.
pub fn refusal(
    ours: &Hello,
    theirs: &Hello,
    joined: &BTreeMap<u32, Option<String>>,
) -> Option<String> {
    let who = label(theirs.node_rank, &theirs.hostname);
    if theirs.probe_version != ours.probe_version || theirs.schema_version != ours.schema_version {
        return Some(format!(
            "{who} runs probe {} (profile schema {}), node 0 runs probe {} (schema {}): run the same probe build on every node",
            theirs.probe_version, theirs.schema_version, ours.probe_version, ours.schema_version
        ));
    }
    if theirs.nnodes != ours.nnodes {
        return Some(format!(
            "{who} was started with --nnodes {}, node 0 with --nnodes {}: start every node with the same node count",
            theirs.nnodes, ours.nnodes
        ));
    }
    if theirs.node_rank == 0 || theirs.node_rank >= ours.nnodes {
        return Some(format!(
            "{who} claims node rank {}: the other nodes are ranks 1..{}",
            theirs.node_rank,
            ours.nnodes - 1
        ));
    }
    if let Some(h) = joined.get(&theirs.node_rank) {
        return Some(format!(
            "{who} claims node rank {}, which {} already has: give every node its own --node-rank",
            theirs.node_rank,
            label(theirs.node_rank, h)
        ));
    }
    if theirs.plan != ours.plan {
        return Some(format!(
            "{who} measures `{}`, node 0 `{}`: start every node with the same --quick / --only",
            theirs.plan, ours.plan
        ));
    }
    None
}

/// Node 0: admit the others, then tell them to start.
fn host(spec: &DistSpec, ours: &Hello, t: Timeouts) -> Result<Session> {
    let started = Instant::now();
    let deadline = started + t.join;
    let any: &str = if spec.init_addr.host.contains(':') {
        "[::]"
    } else {
        "0.0.0.0"
    };
    let listener = TcpListener::bind(format!("{any}:{}", spec.init_addr.port)).map_err(|e| {
        ProbeError::Dist(format!(
            "node 0 cannot listen on port {} ({e}): pick a free port in --dist-init-addr",
            spec.init_addr.port
        ))
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| ProbeError::Dist(format!("listening socket: {e}")))?;
    let mut session = Session {
        me: 0,
        nnodes: spec.nnodes,
        peers: BTreeMap::new(),
        inbox: Inbox::new(t.silence, t.heartbeat),
        hosts: BTreeMap::new(),
    };
    session.hosts.insert(0, ours.hostname.clone());
    let fail = |session: &Session, why: String| {
        session.tell_all(&Msg::Abort {
            reason: why.clone(),
        });
        ProbeError::Dist(why)
    };
    while (session.peers.len() as u32) < spec.nnodes - 1 {
        let now = Instant::now();
        if now >= deadline {
            let missing: Vec<String> = (1..spec.nnodes)
                .filter(|r| !session.peers.contains_key(r))
                .map(|r| r.to_string())
                .collect();
            let why = format!(
                "node{} {} of {} did not join {} within {:.0} s: start `probe run --nnodes {} --node-rank R --dist-init-addr {}` on every node (or raise --dist-timeout)",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", "),
                spec.nnodes,
                spec.init_addr,
                t.join.as_secs_f64(),
                spec.nnodes,
                spec.init_addr
            );
            return Err(fail(&session, why));
        }
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => {
                return Err(fail(
                    &session,
                    format!("node 0 could not accept a peer: {e}"),
                ));
            }
        };
        let _ = stream.set_nonblocking(false);
        let mut reader = BufReader::new(stream);
        let theirs = match read_raw(&mut reader, (deadline - now).min(Duration::from_secs(5))) {
            Ok(Msg::Hello(h)) => h,
            Ok(other) => {
                let why = format!("a peer opened with {other:?} instead of a hello");
                let _ = send_raw(
                    reader.get_mut(),
                    &Msg::Refuse {
                        reason: why.clone(),
                    },
                );
                return Err(fail(&session, why));
            }
            Err(e) => {
                let why = format!("a peer that connected to node 0 {e}");
                let _ = send_raw(
                    reader.get_mut(),
                    &Msg::Refuse {
                        reason: why.clone(),
                    },
                );
                return Err(fail(&session, why));
            }
        };
        if let Some(why) = refusal(ours, &theirs, &session.hosts) {
            let _ = send_raw(
                reader.get_mut(),
                &Msg::Refuse {
                    reason: why.clone(),
                },
            );
            return Err(fail(&session, why));
        }
        let rank = theirs.node_rank;
        send_raw(reader.get_mut(), &Msg::Welcome)
            .map_err(|e| fail(&session, format!("{}: {e}", label(rank, &theirs.hostname))))?;
        let peer = session
            .inbox
            .attach(rank, label(rank, &theirs.hostname), reader)?;
        session.hosts.insert(rank, theirs.hostname.clone());
        session.peers.insert(rank, peer);
    }
    session.tell_all(&Msg::Start);
    Ok(session)
}

/// A peer: reach node 0 (retrying until it listens), introduce this node, wait for the start.
fn connect(spec: &DistSpec, ours: &Hello, t: Timeouts) -> Result<Session> {
    let deadline = Instant::now() + t.join;
    let addr = spec.init_addr.to_string();
    let unreachable = |why: String| {
        ProbeError::Dist(format!(
            "node 0 at {addr} did not answer within {:.0} s ({why}): start node 0 too, check --dist-init-addr names it (or raise --dist-timeout)",
            t.join.as_secs_f64()
        ))
    };
    let stream = loop {
        let last = match addr.to_socket_addrs() {
            Ok(addrs) => {
                let mut last = "no address".to_string();
                let mut got = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, Duration::from_millis(500)) {
                        Ok(s) => {
                            got = Some(s);
                            break;
                        }
                        Err(e) => last = e.to_string(),
                    }
                }
                match got {
                    Some(s) => break s,
                    None => last,
                }
            }
            Err(e) => format!("cannot resolve it: {e}"),
        };
        if Instant::now() >= deadline {
            return Err(unreachable(last));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut reader = BufReader::new(stream);
    send_raw(reader.get_mut(), &Msg::Hello(ours.clone()))
        .map_err(|e| unreachable(format!("sending the hello failed: {e}")))?;
    let answer = read_raw(
        &mut reader,
        deadline.saturating_duration_since(Instant::now()) + Duration::from_secs(5),
    );
    match answer {
        Ok(Msg::Welcome) => {}
        Ok(Msg::Refuse { reason }) => {
            return Err(ProbeError::Dist(format!(
                "node 0 refused this node: {reason}"
            )));
        }
        Ok(Msg::Abort { reason }) => {
            return Err(ProbeError::Dist(format!("node 0 stopped: {reason}")));
        }
        Ok(other) => {
            return Err(ProbeError::Dist(format!(
                "node 0 answered the hello with {other:?}"
            )));
        }
        Err(e) => return Err(ProbeError::Dist(format!("node 0 at {addr} {e}"))),
    }
    let mut session = Session {
        me: spec.node_rank,
        nnodes: spec.nnodes,
        peers: BTreeMap::new(),
        inbox: Inbox::new(t.silence, t.heartbeat),
        hosts: BTreeMap::new(),
    };
    let peer = session
        .inbox
        .attach(0, format!("node 0 ({addr})"), reader)?;
    session.peers.insert(0, peer);
    // Node 0 starts everyone once the last node joined, or stops at its own join deadline.
    match session.inbox.next(None)? {
        Some((_, Msg::Start)) => Ok(session),
        Some((_, Msg::Abort { reason })) => {
            Err(ProbeError::Dist(format!("node 0 stopped: {reason}")))
        }
        other => Err(ProbeError::Dist(format!(
            "node 0 sent {other:?} before the start"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(rank: u32) -> Hello {
        Hello {
            probe_version: "0.1.0".into(),
            schema_version: 2,
            node_rank: rank,
            nnodes: 2,
            hostname: Some(format!("h{rank}")),
            plan: "quick".into(),
        }
    }

    #[test]
    fn refusals_name_the_node_and_the_difference() {
        let ours = hello(0);
        let none = BTreeMap::new();
        assert_eq!(refusal(&ours, &hello(1), &none), None);
        let v = Hello {
            probe_version: "0.2.0".into(),
            ..hello(1)
        };
        let why = refusal(&ours, &v, &none).unwrap();
        assert!(
            why.contains("node 1 (h1) runs probe 0.2.0") && why.contains("same probe build"),
            "{why}"
        );
        let n = Hello {
            nnodes: 3,
            ..hello(1)
        };
        assert!(refusal(&ours, &n, &none).unwrap().contains("--nnodes 3"));
        let mut joined = BTreeMap::new();
        joined.insert(1, Some("other".to_string()));
        assert!(
            refusal(&ours, &hello(1), &joined)
                .unwrap()
                .contains("node 1 (other) already")
        );
        assert!(
            refusal(&ours, &hello(0), &none)
                .unwrap()
                .contains("ranks 1..1")
        );
        let p = Hello {
            plan: "full".into(),
            ..hello(1)
        };
        assert!(refusal(&ours, &p, &none).unwrap().contains("--quick"));
    }
}
