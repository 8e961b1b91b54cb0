//! Node 0's door: the listening socket and every connection not yet proved to be a node of the
//! job. Each connection is greeted on its own thread (a challenge nonce out, one bounded hello
//! in, by a deadline), so a silent or trickling stranger delays no one; at most
//! [`MAX_PENDING`] greetings run at once and a new connection past that closes the oldest. What
//! is not a proved hello of this job is turned away with one line for the log; only proved
//! hellos reach the join, which alone may stop the run.

use super::auth::{JoinKey, NONCE_BYTES, random_bytes};
use super::conn::{ReadError, read_msg, send_raw};
use super::frame::{FrameError, HELLO_MAX_BYTES, one_line};
use super::launcher::InitAddr;
use super::wire::{Hello, Msg};
use crate::error::{ProbeError, Result};
use crate::hex::hex;
use std::collections::VecDeque;
use std::io::BufReader;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

/// Connections greeted at once: a real peer's greeting takes milliseconds, so 16 leaves room
/// for every node of a large job arriving together while strangers cannot hold threads for long.
pub const MAX_PENDING: usize = 16;
/// How long a connection has to send its whole hello after node 0's challenge.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);

/// A finished greeting.
pub enum Greeted {
    /// A hello that proves the job's key; the stream is past it.
    Proved {
        hello: Box<Hello>,
        reader: BufReader<TcpStream>,
        /// Node 0's challenge nonce on this connection (its welcome proof covers it).
        nonce: [u8; NONCE_BYTES],
        from: SocketAddr,
    },
    /// Not a node of this job: `from: why` for the log; the connection is already closed.
    TurnedAway(String),
}

/// The listening socket and the greetings under way.
pub struct Door {
    listener: TcpListener,
    /// The address it listens on.
    pub bound: SocketAddr,
    key: Arc<JoinKey>,
    tx: Sender<(u64, Greeted)>,
    rx: Receiver<(u64, Greeted)>,
    /// Greetings under way, oldest first: id, a handle to close it, who.
    pending: VecDeque<(u64, TcpStream, SocketAddr)>,
    next_id: u64,
    /// The last error taking a connection, logged once while it lasts.
    accept_error: Option<String>,
}

/// The addresses of `addr`'s host that this host may listen on, preferring the ones other hosts
/// reach: a name that resolves to loopback here (Debian maps the host name to 127.0.1.1) is
/// skipped unless the user named loopback itself. `Err`: why there are none.
fn candidates(addr: &InitAddr) -> std::result::Result<Vec<SocketAddr>, String> {
    let named_loopback =
        addr.host == "localhost" || addr.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let found: Vec<SocketAddr> = (addr.host.as_str(), addr.port)
        .to_socket_addrs()
        .map_err(|e| format!("{} does not resolve here ({e})", addr.host))?
        .collect();
    let usable: Vec<SocketAddr> = found
        .iter()
        .copied()
        .filter(|a| named_loopback || !a.ip().is_loopback())
        .collect();
    if usable.is_empty() && !found.is_empty() {
        return Err(format!(
            "{} resolves here only to loopback ({}), which other hosts cannot reach",
            addr.host,
            found[0].ip()
        ));
    }
    Ok(usable)
}

/// Listens on the address the user gave when it is one of this host's; on every interface
/// (with a line saying why) when it is not (a NAT address, a name that resolves elsewhere).
fn bind(addr: &InitAddr, log: &mut dyn FnMut(String)) -> Result<TcpListener> {
    let in_use = |e: std::io::Error| {
        ProbeError::Dist(format!(
            "node 0 cannot listen on {addr} ({e}): pick a free port in --dist-init-addr"
        ))
    };
    let why = match candidates(addr) {
        Ok(found) => {
            for a in found {
                match TcpListener::bind(a) {
                    Ok(l) => return Ok(l),
                    Err(e) if e.kind() == std::io::ErrorKind::AddrNotAvailable => continue,
                    Err(e) => return Err(in_use(e)),
                }
            }
            format!("{} is not an address of this host", addr.host)
        }
        Err(why) => why,
    };
    let any = if addr.host.contains(':') {
        "[::]"
    } else {
        "0.0.0.0"
    };
    log(format!(
        "node 0: {why}: listening on every interface, port {} (only nodes proving the join key get in)",
        addr.port
    ));
    TcpListener::bind(format!("{any}:{}", addr.port)).map_err(in_use)
}

impl Door {
    /// Starts listening at `addr` for nodes proving `key`.
    pub fn open(addr: &InitAddr, key: JoinKey, log: &mut dyn FnMut(String)) -> Result<Door> {
        let listener = bind(addr, log)?;
        let bound = listener
            .local_addr()
            .map_err(|e| ProbeError::Dist(format!("listening socket: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| ProbeError::Dist(format!("listening socket: {e}")))?;
        let (tx, rx) = channel();
        Ok(Door {
            listener,
            bound,
            key: Arc::new(key),
            tx,
            rx,
            pending: VecDeque::new(),
            next_id: 0,
            accept_error: None,
        })
    }

    /// Starts greeting the connections waiting at the socket: at most [`MAX_PENDING`] a call,
    /// so a flood cannot keep node 0 from the greetings already finished.
    fn accept_all(&mut self, log: &mut dyn FnMut(String)) {
        for _ in 0..MAX_PENDING {
            let (stream, from) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was taken: the
                    // socket itself is fine, so the run goes on; a lasting error is one line.
                    let why = e.to_string();
                    if self.accept_error.as_ref() != Some(&why) {
                        log(format!("node 0: could not take a connection ({why})"));
                        self.accept_error = Some(why);
                    }
                    return;
                }
            };
            self.accept_error = None;
            if self.pending.len() >= MAX_PENDING
                && let Some((_, old, who)) = self.pending.pop_front()
            {
                let _ = old.shutdown(Shutdown::Both);
                log(format!(
                    "node 0: closed {who}: no hello yet and {MAX_PENDING} connections waiting (the oldest goes; the run goes on)"
                ));
            }
            let Ok(handle) = stream.try_clone() else {
                continue;
            };
            let id = self.next_id;
            self.next_id += 1;
            self.pending.push_back((id, handle, from));
            let (tx, key) = (self.tx.clone(), self.key.clone());
            let greeting = std::thread::Builder::new()
                .name("probe-door".into())
                .spawn(move || {
                    let _ = tx.send((id, greet(stream, from, &key)));
                });
            if let Err(e) = greeting {
                // Out of threads: this connection goes (its stream went with the closure).
                self.pending.retain(|(i, _, _)| *i != id);
                log(format!(
                    "node 0: closed {from}: no thread to greet it ({e})"
                ));
            }
        }
    }

    /// The next finished greeting, or `None` once `until` passes.
    pub fn next(&mut self, until: Instant, log: &mut dyn FnMut(String)) -> Option<Greeted> {
        loop {
            self.accept_all(log);
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            match self.rx.recv_timeout(left.min(Duration::from_millis(20))) {
                Ok((id, g)) => {
                    let was_pending = self.pending.iter().any(|(i, _, _)| *i == id);
                    self.pending.retain(|(i, _, _)| *i != id);
                    // A greeting closed for room already has its line.
                    if was_pending {
                        return Some(g);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the door holds a sender"),
            }
        }
    }

    /// Every node joined: closes the greetings still under way, one line each.
    pub fn close(self, log: &mut dyn FnMut(String)) {
        for (_, s, who) in self.pending {
            let _ = s.shutdown(Shutdown::Both);
            log(format!(
                "node 0: closed {who}: no hello yet when every node had joined"
            ));
        }
    }
}

/// One connection: challenge, bounded hello by the deadline, proof.
fn greet(stream: TcpStream, from: SocketAddr, key: &JoinKey) -> Greeted {
    // Everything here may quote a stranger's bytes: one line, however they look.
    let away = |why: String| Greeted::TurnedAway(one_line(&format!("{from}: {why}")));
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(HELLO_DEADLINE));
    let mut reader = BufReader::new(stream);
    let nonce = match random_bytes::<NONCE_BYTES>() {
        Ok(n) => n,
        Err(e) => return away(e.to_string()),
    };
    let challenge = Msg::Challenge { nonce: hex(&nonce) };
    if let Err(e) = send_raw(reader.get_mut(), &challenge) {
        return away(format!("the challenge could not be sent ({e})"));
    }
    let deadline = Instant::now() + HELLO_DEADLINE;
    let refuse = |reader: &mut BufReader<TcpStream>, why: String| {
        let _ = send_raw(
            reader.get_mut(),
            &Msg::Refuse {
                reason: why.clone(),
            },
        );
        let _ = reader.get_ref().shutdown(Shutdown::Both);
        away(why)
    };
    let hello = match read_msg(&mut reader, HELLO_MAX_BYTES, Some(deadline)) {
        Ok(Msg::Hello(h)) => h,
        Ok(other) => {
            let kind = super::wire::encode(&other);
            let why = format!(
                "opened with `{}` instead of a hello",
                super::frame::preview(kind.as_bytes())
            );
            return refuse(&mut reader, why);
        }
        Err(ReadError::Frame(FrameError::Late { partial })) => {
            let secs = HELLO_DEADLINE.as_secs();
            let why = match partial {
                0 => format!("sent nothing within {secs} s of connecting"),
                n => format!(
                    "sent only {n} bytes of a hello within {secs} s of connecting (a slow or stuck sender)"
                ),
            };
            return refuse(&mut reader, why);
        }
        Err(ReadError::Frame(e)) => return refuse(&mut reader, format!("{e} before a hello")),
        Err(e) => return refuse(&mut reader, e.to_string()),
    };
    if !key.verify_hello(&nonce, &hello) {
        let who = match &hello.hostname {
            Some(h) => format!("node {} ({h})", hello.node_rank),
            None => format!("node {}", hello.node_rank),
        };
        let job = |j: &str| {
            if j.is_empty() {
                "no launcher job".to_string()
            } else {
                j.to_string()
            }
        };
        let why = if hello.job != key.job {
            format!(
                "{who}'s hello is for {}, node 0's for {}: start every node in the same job",
                job(&hello.job),
                job(&key.job)
            )
        } else {
            format!(
                "{who}'s hello fails the join proof: another --dist-token / PROBE_DIST_TOKEN than node 0's, or a hello replayed from another connection"
            )
        };
        return refuse(&mut reader, why);
    }
    Greeted::Proved {
        hello: Box::new(hello),
        reader,
        nonce,
        from,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::auth::KeySource;

    fn key() -> JoinKey {
        JoinKey::derive("0123456789abcdef", "", KeySource::Token)
    }

    fn addr(host: &str) -> InitAddr {
        InitAddr {
            host: host.into(),
            port: 0,
        }
    }

    #[test]
    fn node_0_listens_on_the_address_given_not_every_interface() {
        let mut lines = Vec::new();
        let door = Door::open(&addr("127.0.0.1"), key(), &mut |l| lines.push(l)).unwrap();
        assert_eq!(door.bound.ip().to_string(), "127.0.0.1");
        assert!(lines.is_empty(), "{lines:?}");
        // 127.0.0.2 is this host too (all of 127/8 is loopback), but not the address given.
        let port = door.bound.port();
        assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(TcpStream::connect(("127.0.0.2", port)).is_err());
        // `localhost` is loopback by name, so loopback it stays.
        let door = Door::open(&addr("localhost"), key(), &mut |l| lines.push(l)).unwrap();
        assert!(door.bound.ip().is_loopback());
        assert!(lines.is_empty(), "{lines:?}");
    }

    #[test]
    fn an_address_not_of_this_host_listens_everywhere_and_says_so() {
        // 192.0.2.1 is TEST-NET-1 (RFC 5737): never a host's own address; binding sends nothing.
        let mut lines = Vec::new();
        let door = Door::open(&addr("192.0.2.1"), key(), &mut |l| lines.push(l)).unwrap();
        assert!(door.bound.ip().is_unspecified(), "{}", door.bound);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0]
                .contains("192.0.2.1 is not an address of this host: listening on every interface"),
            "{lines:?}"
        );
    }

    #[test]
    fn a_node_of_another_job_is_told_so() {
        use std::io::{BufRead, Write};
        let ours = JoinKey::derive("0123456789abcdef", "slurm job 1 step 0", KeySource::Token);
        let theirs = JoinKey::derive("0123456789abcdef", "slurm job 2 step 0", KeySource::Token);
        let mut door = Door::open(&addr("127.0.0.1"), ours, &mut |_| {}).unwrap();
        let s = TcpStream::connect(door.bound).unwrap();
        let got = std::thread::scope(|sc| {
            let waiter =
                sc.spawn(|| door.next(Instant::now() + Duration::from_secs(5), &mut |_| {}));
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let Ok(Msg::Challenge { nonce }) = super::super::wire::decode(&line) else {
                panic!("{line}")
            };
            let hello = Hello {
                probe_version: "0.1.0".into(),
                schema_version: 3,
                node_rank: 1,
                nnodes: 2,
                hostname: None,
                plan: "p".into(),
                job: theirs.job.clone(),
                nonce: String::new(),
                proof: String::new(),
            };
            let signed = theirs.sign_hello(&crate::hex::unhex(&nonce).unwrap(), hello);
            (&s).write_all(super::super::wire::encode(&Msg::Hello(signed)).as_bytes())
                .unwrap();
            waiter.join().unwrap()
        });
        let Some(Greeted::TurnedAway(why)) = got else {
            panic!("not turned away")
        };
        assert!(
            why.contains(
                "node 1's hello is for slurm job 2 step 0, node 0's for slurm job 1 step 0"
            ),
            "{why}"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever bytes a connection sends after the challenge (with or without a newline),
        /// the door turns it away with a line and goes on: nothing passes without the key.
        #[test]
        fn arbitrary_bytes_at_the_door_are_turned_away(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
            newline in proptest::prelude::any::<bool>(),
        ) {
            use std::io::{BufRead, Write};
            let mut door = Door::open(&addr("127.0.0.1"), key(), &mut |_| {}).unwrap();
            let s = TcpStream::connect(door.bound).unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut challenge = String::new();
            let until = Instant::now() + Duration::from_secs(5);
            // The door greets only while it is asked for the next greeting.
            let got = std::thread::scope(|sc| {
                let waiter = sc.spawn(|| door.next(until, &mut |_| {}));
                r.read_line(&mut challenge).unwrap();
                let mut w = &s;
                let _ = w.write_all(&bytes);
                if newline {
                    let _ = w.write_all(b"\n");
                }
                let _ = s.shutdown(Shutdown::Write);
                waiter.join().unwrap()
            });
            proptest::prop_assert!(challenge.contains("\"kind\":\"challenge\""));
            match got {
                Some(Greeted::TurnedAway(why)) => {
                    proptest::prop_assert!(!why.chars().any(char::is_control), "{why}");
                }
                _ => proptest::prop_assert!(false, "not turned away"),
            }
        }
    }
}
