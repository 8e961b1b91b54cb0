//! Joining: node 0 listens at the init address ([`super::door`]: only hellos proving the job's
//! key get past it) and admits one peer per other rank whose hello matches its own (probe
//! version, profile schema, protocol, node count, plan); peers connect, retrying until node 0 is
//! up and challenges them. Everything waits against the join timeout and ends with one line
//! naming the node that is missing or refused; a stranger only costs a line in node 0's log.

use super::auth::{NONCE_BYTES, random_bytes};
use super::conn::{Inbox, Peer, ReadError, read_msg, send_raw};
use super::door::{Door, Greeted, HELLO_DEADLINE};
use super::frame::{HELLO_MAX_BYTES, one_line};
use super::launcher::DistSpec;
use super::wire::{Hello, Msg};
use crate::error::{ProbeError, Result};
use crate::hex::{hex, unhex};
use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::{TcpStream, ToSocketAddrs};
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

/// Joins the run described by `spec`, introducing this node with `hello`; node 0 writes what
/// it turns away to `log`, one line each.
pub fn join(
    spec: &DistSpec,
    hello: &Hello,
    t: Timeouts,
    log: &mut dyn FnMut(String),
) -> Result<Session> {
    if spec.node_rank == 0 {
        host(spec, hello, t, log)
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

/// Why a proved hello may not join.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub why: String,
    /// The job's own nodes disagree (version, node count, plan, rank range): waiting on cannot
    /// help, so the run stops. A rank already taken only turns that connection away.
    pub stops_the_run: bool,
}

/// Why `theirs` may not join `ours`' run, or `None`.
pub fn refusal(
    ours: &Hello,
    theirs: &Hello,
    joined: &BTreeMap<u32, Option<String>>,
) -> Option<Refusal> {
    let who = label(theirs.node_rank, &theirs.hostname);
    let stop = |why: String| {
        Some(Refusal {
            why,
            stops_the_run: true,
        })
    };
    if theirs.probe_version != ours.probe_version || theirs.schema_version != ours.schema_version {
        return stop(format!(
            "{who} runs probe {} (profile schema {}), node 0 runs probe {} (schema {}): run the same probe build on every node",
            theirs.probe_version, theirs.schema_version, ours.probe_version, ours.schema_version
        ));
    }
    if theirs.nnodes != ours.nnodes {
        return stop(format!(
            "{who} was started with --nnodes {}, node 0 with --nnodes {}: start every node with the same node count",
            theirs.nnodes, ours.nnodes
        ));
    }
    if theirs.node_rank == 0 || theirs.node_rank >= ours.nnodes {
        return stop(format!(
            "{who} claims node rank {}: the other nodes are ranks 1..{}",
            theirs.node_rank,
            ours.nnodes - 1
        ));
    }
    if theirs.plan != ours.plan {
        return stop(format!(
            "{who} measures `{}`, node 0 `{}`: start every node with the same --quick / --only",
            theirs.plan, ours.plan
        ));
    }
    if let Some(h) = joined.get(&theirs.node_rank) {
        return Some(Refusal {
            why: format!(
                "{who} claims node rank {}, which {} already has: give every node its own --node-rank",
                theirs.node_rank,
                label(theirs.node_rank, h)
            ),
            stops_the_run: false,
        });
    }
    None
}

/// `node 1 of 2 did not join …`, with what was turned away meanwhile (the last three).
fn missing_nodes(spec: &DistSpec, session: &Session, t: Timeouts, turned: &[String]) -> String {
    let missing: Vec<String> = (1..spec.nnodes)
        .filter(|r| !session.peers.contains_key(r))
        .map(|r| r.to_string())
        .collect();
    let mut why = format!(
        "node{} {} of {} did not join {} within {:.0} s: start `probe run --nnodes {} --node-rank R --dist-init-addr {}` with the same --dist-token on every node (or raise --dist-timeout)",
        if missing.len() > 1 { "s" } else { "" },
        missing.join(", "),
        spec.nnodes,
        spec.init_addr,
        t.join.as_secs_f64(),
        spec.nnodes,
        spec.init_addr
    );
    if !turned.is_empty() {
        let last = &turned[turned.len().saturating_sub(3)..];
        why.push_str(&format!(
            "; turned away meanwhile ({}): {}",
            turned.len(),
            last.join("; ")
        ));
    }
    why
}

/// Node 0: admit the others, then tell them to start. Strangers and unproved connections are
/// turned away with a line in the log; only the job's own nodes can stop the run.
fn host(
    spec: &DistSpec,
    ours: &Hello,
    t: Timeouts,
    log: &mut dyn FnMut(String),
) -> Result<Session> {
    let deadline = Instant::now() + t.join;
    let mut door = Door::open(&spec.init_addr, spec.key.clone(), log)?;
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
    let mut turned: Vec<String> = Vec::new();
    while (session.peers.len() as u32) < spec.nnodes - 1 {
        if Instant::now() >= deadline {
            let why = missing_nodes(spec, &session, t, &turned);
            return Err(fail(&session, why));
        }
        let (theirs, mut reader, nonce, from) = match door.next(deadline, log) {
            None => continue,
            Some(Greeted::TurnedAway(why)) => {
                log(format!("node 0: turned away {why} (the run goes on)"));
                turned.push(why);
                continue;
            }
            Some(Greeted::Proved {
                hello,
                reader,
                nonce,
                from,
            }) => (*hello, reader, nonce, from),
        };
        if let Some(r) = refusal(ours, &theirs, &session.hosts) {
            let _ = send_raw(
                reader.get_mut(),
                &Msg::Refuse {
                    reason: r.why.clone(),
                },
            );
            if r.stops_the_run {
                return Err(fail(&session, r.why));
            }
            let why = one_line(&format!("{from}: {}", r.why));
            log(format!("node 0: turned away {why} (the run goes on)"));
            turned.push(why);
            continue;
        }
        let rank = theirs.node_rank;
        let welcome = Msg::Welcome {
            proof: spec.key.welcome_proof(&nonce, &theirs.nonce),
        };
        send_raw(reader.get_mut(), &welcome)
            .map_err(|e| fail(&session, format!("{}: {e}", label(rank, &theirs.hostname))))?;
        let peer = session
            .inbox
            .attach(rank, label(rank, &theirs.hostname), reader)?;
        session.hosts.insert(rank, theirs.hostname.clone());
        session.peers.insert(rank, peer);
    }
    door.close(log);
    session.tell_all(&Msg::Start);
    Ok(session)
}

/// Why a connection to node 0 brought no challenge.
enum Knock {
    /// Worth another try until the join deadline (not up yet, busy, closed on us).
    Again(String),
    /// Node 0 (or whatever listens there) said something that no retry changes.
    Stop(ProbeError),
}

/// One connection to node 0, up to its challenge nonce.
fn knock(
    addr: &str,
    deadline: Instant,
) -> std::result::Result<(BufReader<TcpStream>, Vec<u8>), Knock> {
    let addrs = addr
        .to_socket_addrs()
        .map_err(|e| Knock::Again(format!("cannot resolve it: {e}")))?;
    let mut last = "no address".to_string();
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, Duration::from_millis(500)) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = e.to_string(),
        }
    }
    let mut reader = BufReader::new(stream.ok_or(Knock::Again(last))?);
    let wait = deadline.min(Instant::now() + HELLO_DEADLINE);
    let stop = |why: String| Knock::Stop(ProbeError::Dist(why));
    match read_msg(&mut reader, HELLO_MAX_BYTES, Some(wait)) {
        Ok(Msg::Challenge { nonce }) => match unhex(&nonce).filter(|n| n.len() == NONCE_BYTES) {
            Some(n) => Ok((reader, n)),
            None => Err(stop(format!("node 0 at {addr} sent a malformed challenge"))),
        },
        Ok(Msg::Refuse { reason }) => Err(stop(format!("node 0 refused this node: {reason}"))),
        Ok(Msg::Abort { reason }) => Err(stop(format!("node 0 stopped: {reason}"))),
        Ok(other) => Err(stop(format!(
            "node 0 at {addr} opened with {other:?} instead of a challenge"
        ))),
        Err(ReadError::Frame(e)) => Err(Knock::Again(format!(
            "it took the connection but {e}, no challenge (an older probe, or another program on that port?)"
        ))),
        Err(e @ ReadError::Protocol { .. }) => Err(stop(format!("node 0 at {addr} {e}"))),
        Err(e) => Err(stop(format!(
            "something other than a probe listens at {addr}: it {e}"
        ))),
    }
}

/// One try at joining: knock, prove the key in the hello, check node 0's proof in its welcome.
/// A connection node 0 closes before it answers (it makes room for newer ones under a flood of
/// strangers) is worth another try.
fn prove(
    spec: &DistSpec,
    ours: &Hello,
    addr: &str,
    deadline: Instant,
) -> std::result::Result<BufReader<TcpStream>, Knock> {
    let (mut reader, challenge) = knock(addr, deadline)?;
    let stop = |why: String| Knock::Stop(ProbeError::Dist(why));
    let mine = hex(&random_bytes::<NONCE_BYTES>().map_err(Knock::Stop)?);
    let hello = Hello {
        job: spec.key.job.clone(),
        nonce: mine.clone(),
        ..ours.clone()
    };
    let hello = spec.key.sign_hello(&challenge, hello);
    send_raw(reader.get_mut(), &Msg::Hello(hello))
        .map_err(|e| Knock::Again(format!("sending the hello failed: {e}")))?;
    let answer = read_msg(
        &mut reader,
        HELLO_MAX_BYTES,
        Some(Instant::now() + HELLO_DEADLINE),
    );
    match answer {
        Ok(Msg::Welcome { proof }) if spec.key.verify_welcome(&challenge, &mine, &proof) => {
            Ok(reader)
        }
        Ok(Msg::Welcome { .. }) => Err(stop(format!(
            "the probe at {addr} welcomed this node without proving the join key: it is not this job's node 0 (another job's on that port?); check --dist-init-addr and --dist-token"
        ))),
        Ok(Msg::Refuse { reason }) => Err(stop(format!("node 0 refused this node: {reason}"))),
        Ok(Msg::Abort { reason }) => Err(stop(format!("node 0 stopped: {reason}"))),
        Ok(other) => Err(stop(format!("node 0 answered the hello with {other:?}"))),
        Err(ReadError::Frame(e)) => Err(Knock::Again(format!("after the hello it {e}"))),
        Err(e) => Err(stop(format!("node 0 at {addr} {e}"))),
    }
}

/// A peer: join node 0 (retrying until it listens, challenges and welcomes), wait for the start.
fn connect(spec: &DistSpec, ours: &Hello, t: Timeouts) -> Result<Session> {
    let deadline = Instant::now() + t.join;
    let addr = spec.init_addr.to_string();
    let reader = loop {
        match prove(spec, ours, &addr, deadline) {
            Ok(r) => break r,
            Err(Knock::Stop(e)) => return Err(e),
            Err(Knock::Again(why)) if Instant::now() >= deadline => {
                return Err(ProbeError::Dist(format!(
                    "node 0 at {addr} did not answer within {:.0} s ({why}): start node 0 too, check --dist-init-addr names it (or raise --dist-timeout)",
                    t.join.as_secs_f64()
                )));
            }
            Err(Knock::Again(_)) => std::thread::sleep(Duration::from_millis(100)),
        }
    };
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
            job: String::new(),
            nonce: String::new(),
            proof: String::new(),
        }
    }

    #[test]
    fn refusals_name_the_node_and_the_difference() {
        let ours = hello(0);
        let none = BTreeMap::new();
        assert_eq!(refusal(&ours, &hello(1), &none), None);
        let why = |h: &Hello, joined| refusal(&ours, h, joined).unwrap();
        let v = Hello {
            probe_version: "0.2.0".into(),
            ..hello(1)
        };
        let r = why(&v, &none);
        assert!(
            r.why.contains("node 1 (h1) runs probe 0.2.0") && r.why.contains("same probe build"),
            "{r:?}"
        );
        assert!(r.stops_the_run);
        let n = Hello {
            nnodes: 3,
            ..hello(1)
        };
        assert!(why(&n, &none).why.contains("--nnodes 3"));
        // A rank taken turns that connection away; the run waits on for the others.
        let mut joined = BTreeMap::new();
        joined.insert(1, Some("other".to_string()));
        let dup = why(&hello(1), &joined);
        assert!(dup.why.contains("node 1 (other) already"), "{dup:?}");
        assert!(!dup.stops_the_run);
        assert!(why(&hello(0), &none).why.contains("ranks 1..1"));
        let p = Hello {
            plan: "full".into(),
            ..hello(1)
        };
        assert!(why(&p, &none).why.contains("--quick"));
    }
}
