//! Hostile peers at node 0's door (issue 39), on loopback: a stray HTTP request, a 1 GiB stream
//! without a newline, a slow-loris peer, a wrong token, a replayed hello, a peer that connects
//! and never speaks, a flood of silent connections, a duplicate rank. Each time the two-node run
//! of the fake H200 box still finishes with the merged profile of a clean run, node 0's peak
//! memory (its `ru_maxrss` from `wait4`) stays under 64 MiB, and each connection turned away is
//! one line of node 0's log.

use crate::common;

use common::{TOKEN, connect, free_port, hello, key, knock, read_line, send_hello};
use probe::dist::auth::{JoinKey, KeySource};
use probe::dist::launcher::{DistSpec, InitAddr, Launcher};
use probe::dist::rendezvous::{Timeouts, join};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Node 0's peak resident memory must stay under this.
const PEAK_LIMIT_KIB: u64 = 64 * 1024;

fn h200() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x1.json")
}

/// Starts node `rank` of a two-node run of the fake H200 box; `join_s` to join.
fn node(rank: u32, port: u16, join_s: u32, out: Option<&Path>) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_probe"));
    c.env_remove("PROBE_FAKE_MACHINE")
        .env("PROBE_DIST_TOKEN", TOKEN)
        .args(["run", "--quick", "--fake-machine"])
        .arg(h200())
        .args(["--nnodes", "2", "--node-rank", &rank.to_string()])
        .args(["--dist-init-addr", &format!("127.0.0.1:{port}")])
        .args(["--dist-timeout", &join_s.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(o) = out {
        c.arg("--out").arg(o);
    }
    c.spawn().unwrap()
}

/// Waits for `child`: its exit code, stderr and peak resident memory (KiB, from `wait4`, which
/// reports this very process rather than every child the test harness reaped).
fn wait_measured(mut child: Child) -> (i32, String, u64) {
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child `pid`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, reader.join().unwrap(), usage.ru_maxrss as u64)
}

/// Node 0's stderr after a run with hostile peers.
struct Survived {
    log: String,
}

impl Survived {
    /// The lines of node 0's log about connections it turned away or closed.
    fn refusals(&self) -> Vec<&str> {
        self.log
            .lines()
            .filter(|l| l.starts_with("node 0: turned away") || l.starts_with("node 0: closed"))
            .collect()
    }
}

/// A two-node run with node 0's join allowing `join_s`: `hostile` acts at node 0's door (it
/// returns once it has reached it, with a thread still at work or none), then node 1 joins.
/// Both nodes succeed, the merged profile is the clean run's, node 0 stays under 64 MiB.
fn survives(join_s: u32, hostile: impl FnOnce(u16) -> Option<JoinHandle<()>>) -> Survived {
    let dir = tempfile::tempdir().unwrap();
    let (port, merged) = (free_port(), dir.path().join("merged.json"));
    let head = node(0, port, join_s, Some(&merged));
    let still = hostile(port);
    let peer = node(1, port, join_s, None);
    let (code, log, peak_kib) = wait_measured(head);
    let (peer_code, peer_log, _) = wait_measured(peer);
    if let Some(t) = still {
        t.join().unwrap();
    }
    assert_eq!(code, 0, "node 0: {log}");
    assert_eq!(peer_code, 0, "node 1: {peer_log}");
    assert!(
        peak_kib < PEAK_LIMIT_KIB,
        "node 0 peaked at {peak_kib} KiB: {log}"
    );
    eprintln!("node 0 peak {peak_kib} KiB; its log:\n{log}");
    common::assert_merged_as_golden(&merged);
    assert!(
        log.lines().all(|l| l.starts_with("node 0: ")),
        "only node 0's own lines: {log}"
    );
    Survived { log }
}

/// Reads what node 0 sends until it closes (its challenge, then its refusal).
fn drain(mut s: impl Read) -> String {
    let mut all = String::new();
    let _ = s.read_to_string(&mut all);
    all
}

#[test]
fn a_stray_http_request_is_turned_away() {
    let s = survives(10, |port| {
        let mut c = connect(port);
        c.write_all(b"GET / HTTP/1.1\r\nHost: node0\r\n\r\n")
            .unwrap();
        let answer = drain(c);
        assert!(answer.contains("\"kind\":\"refuse\""), "{answer}");
        None
    });
    let r = s.refusals();
    assert_eq!(r.len(), 1, "{}", s.log);
    assert!(
        r[0].contains("sent `GET / HTTP/1.1`, not a rendezvous message")
            && r[0].ends_with("(the run goes on)"),
        "{}",
        r[0]
    );
}

#[test]
fn a_gigabyte_without_a_newline_is_cut_at_the_hello_cap() {
    let s = survives(10, |port| {
        let (mut r, _) = knock(port);
        let chunk = vec![b'A'; 64 << 10];
        let mut sent: u64 = 0;
        let stream = r.get_mut();
        stream
            .set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        while sent < 1 << 30 {
            if stream.write_all(&chunk).is_err() {
                break;
            }
            sent += chunk.len() as u64;
        }
        assert!(sent < 1 << 30, "node 0 took the whole gigabyte");
        None
    });
    let r = s.refusals();
    assert_eq!(r.len(), 1, "{}", s.log);
    assert!(
        r[0].contains("sent more than 16 KiB without a newline"),
        "{}",
        r[0]
    );
}

/// Connects, takes the challenge, then sends `bytes_every` of a hello every 100 ms, stopping
/// when node 0 closes; returns once node 0 has turned it away, so the run goes on without it.
fn trickle(port: u16, bytes_every: usize) -> Option<JoinHandle<()>> {
    let (mut r, _) = knock(port);
    let started = Instant::now();
    let hello = br#"{"protocol":2,"kind":"hello","probe_version":"0.1.0","node_rank":1"#.repeat(4);
    let mut at = 0;
    while started.elapsed() < Duration::from_secs(15) {
        let end = (at + bytes_every).min(hello.len());
        if r.get_mut().write_all(&hello[at..end]).is_err() {
            break;
        }
        at = end % hello.len();
        r.get_ref()
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 512];
        match r.get_mut().read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {
                // Node 0's refusal, then its close.
                let rest = drain(r.get_mut());
                assert!(
                    String::from_utf8_lossy(&buf).contains("refuse") || rest.contains("refuse")
                );
                break;
            }
            Err(_) => {}
        }
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(12),
        "turned away after {took:?}, the hello deadline is 5 s"
    );
    None
}

#[test]
fn a_slow_loris_is_cut_at_the_hello_deadline() {
    let s = survives(20, |port| trickle(port, 1));
    let r = s.refusals();
    assert_eq!(r.len(), 1, "{}", s.log);
    assert!(
        r[0].contains("bytes of a hello within 5 s of connecting (a slow or stuck sender)"),
        "{}",
        r[0]
    );
}

#[test]
fn a_peer_that_never_speaks_is_cut_at_the_hello_deadline() {
    let s = survives(20, |port| trickle(port, 0));
    let r = s.refusals();
    assert_eq!(r.len(), 1, "{}", s.log);
    assert!(
        r[0].contains("sent nothing within 5 s of connecting"),
        "{}",
        r[0]
    );
}

#[test]
fn a_wrong_token_is_refused() {
    let s = survives(10, |port| {
        let (mut r, nonce) = knock(port);
        let wrong = key("another-token-of-another-job");
        // Its host name would forge a second log line if node 0 printed it raw.
        let mut h = hello(1, 2, "x");
        h.hostname = Some("b\nerror: forged".into());
        let answer = send_hello(&mut r, &wrong, &nonce, h);
        assert!(answer.contains("fails the join proof"), "{answer}");
        None
    });
    let r = s.refusals();
    assert_eq!(r.len(), 1, "{}", s.log);
    assert!(
        r[0].contains(r"node 1 (b\nerror: forged)'s hello fails the join proof"),
        "{}",
        r[0]
    );
}

#[test]
fn a_replayed_hello_is_refused() {
    let s = survives(10, |port| {
        // A hello proved for one connection (as a recording of a real node's would be) ...
        let (mut first, nonce) = knock(port);
        let recorded = key(TOKEN).sign_hello(&nonce, hello(1, 2, "x"));
        // ... sent on another, whose challenge differs.
        let (mut second, _) = knock(port);
        let line = probe::dist::wire::encode(&probe::dist::wire::Msg::Hello(recorded));
        second.get_mut().write_all(line.as_bytes()).unwrap();
        let answer = read_line(&mut second);
        assert!(answer.contains("fails the join proof"), "{answer}");
        // The first connection goes away without a word.
        first.get_mut().shutdown(std::net::Shutdown::Both).unwrap();
        None
    });
    let r = s.refusals();
    assert_eq!(r.len(), 2, "{}", s.log);
    assert!(
        r.iter().any(|l| l.contains("fails the join proof")),
        "{}",
        s.log
    );
}

#[test]
fn a_flood_of_silent_connections_neither_blocks_nor_exhausts_node_0() {
    let mut held = Vec::new();
    let s = survives(10, |port| {
        held = (0..40).map(|_| connect(port)).collect();
        // Node 0 has taken them all before node 1 comes.
        std::thread::sleep(Duration::from_millis(500));
        None
    });
    drop(held);
    let r = s.refusals();
    // Every connection is one line: the oldest closed for room, the rest when node 1 joined.
    assert_eq!(r.len(), 40, "{}", s.log);
    let for_room = r
        .iter()
        .filter(|l| l.contains("16 connections waiting"))
        .count();
    assert!(for_room >= 24, "{}", s.log);
}

/// A duplicate rank with the right token (a node started twice) is turned away; the first
/// node keeps the rank and the run waits for the others. In-process, three nodes: this test
/// holds rank 1 by hand, then claims it again, then a real rank 2 joins.
#[test]
fn a_duplicate_rank_is_turned_away_and_the_join_goes_on() {
    let port = free_port();
    let spec = move |rank: u32| DistSpec {
        nnodes: 3,
        node_rank: rank,
        init_addr: InitAddr {
            host: "127.0.0.1".into(),
            port,
        },
        launcher: Launcher::Flags,
        key: JoinKey::derive(TOKEN, "", KeySource::Token),
        notes: vec![],
    };
    let t = Timeouts::from_join(Duration::from_secs(10));
    let (tx, rx) = std::sync::mpsc::channel();
    let head = std::thread::spawn(move || {
        let mut log = |l: String| tx.send(l).unwrap();
        join(&spec(0), &hello(0, 3, "p"), t, &mut log).map(|s| s.peers.keys().copied().collect())
    });
    let (mut one, nonce) = knock(port);
    let welcome = send_hello(&mut one, &key(TOKEN), &nonce, hello(1, 3, "p"));
    assert!(welcome.contains("\"kind\":\"welcome\""), "{welcome}");
    let (mut dup, nonce) = knock(port);
    let refused = send_hello(&mut dup, &key(TOKEN), &nonce, hello(1, 3, "p"));
    assert!(refused.contains("already has"), "{refused}");
    let two = std::thread::spawn(move || join(&spec(2), &hello(2, 3, "p"), t, &mut |_| {}).is_ok());
    let peers: Vec<u32> = head.join().unwrap().unwrap();
    assert_eq!(peers, vec![1, 2]);
    assert!(two.join().unwrap());
    let log: Vec<String> = rx.try_iter().collect();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].contains("claims node rank 1, which node 1 (b) already has")
            && log[0].ends_with("(the run goes on)"),
        "{log:?}"
    );
}
