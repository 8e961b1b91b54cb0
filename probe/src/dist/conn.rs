//! The connections of a rendezvous: one TCP stream per peer, a reader thread per stream feeding
//! one inbox, and a heartbeat thread per stream, so a peer busy measuring for minutes still says
//! it is alive while a dead or unreachable one is named within the silence limit — never a hang.

use super::frame::{FRAME_MAX_BYTES, FrameError, preview, read_frame};
use super::wire::{Msg, Undecodable, decode_frame, encode};
use crate::error::{ProbeError, Result};
use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a reader thread hands the inbox.
enum Incoming {
    Msg(Msg),
    /// The stream ended or sent something that is not a message; why.
    Closed(String),
}

/// The sending side of one peer's stream.
pub struct Peer {
    /// The peer's node rank.
    pub rank: u32,
    /// `node 2 (gpu-b)`, for errors.
    pub label: String,
    writer: Arc<Mutex<TcpStream>>,
    alive: Arc<AtomicBool>,
}

impl Peer {
    /// Sends one message.
    pub fn send(&self, msg: &Msg) -> Result<()> {
        write_line(&self.writer, msg).map_err(|e| {
            ProbeError::Dist(format!(
                "{}: sending failed ({e}); it has probably stopped",
                self.label
            ))
        })
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::SeqCst);
    }
}

fn write_line(w: &Mutex<TcpStream>, msg: &Msg) -> std::io::Result<()> {
    let mut s = w.lock().unwrap_or_else(|p| p.into_inner());
    s.write_all(encode(msg).as_bytes())?;
    s.flush()
}

/// Writes one message on a stream that has no [`Peer`] yet (a refusal at the door).
pub fn send_raw(stream: &mut TcpStream, msg: &Msg) -> std::io::Result<()> {
    stream.write_all(encode(msg).as_bytes())?;
    stream.flush()
}

/// Why no message was read.
#[derive(Debug)]
pub enum ReadError {
    /// No whole line (closed, too long, too slow, failed).
    Frame(FrameError),
    /// A line of another rendezvous protocol.
    Protocol {
        found: Option<u64>,
        probe_version: Option<String>,
    },
    /// A line that is no message: why, and its first characters.
    Malformed { why: String, preview: String },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Frame(e) => write!(f, "{e}"),
            ReadError::Protocol {
                found,
                probe_version,
            } => write!(
                f,
                "speaks rendezvous protocol {} (probe {}), this probe {}: run the same probe build on every node",
                found.map_or("?".into(), |v| v.to_string()),
                probe_version.as_deref().unwrap_or("?"),
                super::wire::PROTOCOL_VERSION
            ),
            ReadError::Malformed { why, preview } => {
                write!(f, "sent `{preview}`, not a rendezvous message ({why})")
            }
        }
    }
}

/// Reads one message of at most `cap` bytes from a stream with no reader thread yet, by
/// `deadline` when one is given.
pub fn read_msg(
    reader: &mut BufReader<TcpStream>,
    cap: usize,
    deadline: Option<Instant>,
) -> std::result::Result<Msg, ReadError> {
    let line = read_frame(reader, cap, deadline).map_err(ReadError::Frame)?;
    decode_frame(&line).map_err(|e| match e {
        Undecodable::Protocol {
            found,
            probe_version,
        } => ReadError::Protocol {
            found,
            probe_version,
        },
        Undecodable::Malformed(why) => ReadError::Malformed {
            why,
            preview: preview(&line),
        },
    })
}

/// Every peer's incoming messages, in arrival order, with each peer's last sign of life.
pub struct Inbox {
    tx: Sender<(u32, Incoming)>,
    rx: Receiver<(u32, Incoming)>,
    last_seen: BTreeMap<u32, Instant>,
    labels: BTreeMap<u32, String>,
    /// A peer silent for longer (not even a heartbeat) is reported dead.
    silence: Duration,
    heartbeat: Duration,
}

impl Inbox {
    /// An inbox that reports a peer silent for `silence` and sends heartbeats every
    /// `heartbeat`.
    pub fn new(silence: Duration, heartbeat: Duration) -> Inbox {
        let (tx, rx) = channel();
        Inbox {
            tx,
            rx,
            last_seen: BTreeMap::new(),
            labels: BTreeMap::new(),
            silence,
            heartbeat,
        }
    }

    /// Starts reading `reader` (already past the peer's hello) and heartbeating to it.
    pub fn attach(
        &mut self,
        rank: u32,
        label: String,
        reader: BufReader<TcpStream>,
    ) -> Result<Peer> {
        let stream = reader.get_ref();
        let _ = stream.set_nodelay(true);
        // The handshake read against a deadline; from here silence is judged by heartbeats.
        let _ = stream.set_read_timeout(None);
        let writer = stream
            .try_clone()
            .map(|s| Arc::new(Mutex::new(s)))
            .map_err(|e| ProbeError::Dist(format!("{label}: {e}")))?;
        let alive = Arc::new(AtomicBool::new(true));
        let tx = self.tx.clone();
        std::thread::spawn(move || read_loop(rank, reader, tx));
        let (w, a, every) = (writer.clone(), alive.clone(), self.heartbeat);
        std::thread::spawn(move || {
            while a.load(Ordering::SeqCst) {
                std::thread::sleep(every);
                if !a.load(Ordering::SeqCst) || write_line(&w, &Msg::Heartbeat).is_err() {
                    break;
                }
            }
        });
        self.last_seen.insert(rank, Instant::now());
        self.labels.insert(rank, label.clone());
        Ok(Peer {
            rank,
            label,
            writer,
            alive,
        })
    }

    /// The label of `rank` (`node 1 (host)`).
    pub fn label(&self, rank: u32) -> String {
        self.labels
            .get(&rank)
            .cloned()
            .unwrap_or_else(|| format!("node {rank}"))
    }

    /// Stops watching `rank` (it said goodbye): its silence and closing are no longer errors.
    pub fn forget(&mut self, rank: u32) {
        self.last_seen.remove(&rank);
    }

    /// The next message other than a heartbeat, or `None` once `deadline` passes. A peer that
    /// closed its stream, sent something undecodable or went silent is an error naming it.
    /// Silence is judged only with the queue drained: while this side was busy (measuring for
    /// minutes) the peers' heartbeats waited in it.
    pub fn next(&mut self, deadline: Option<Instant>) -> Result<Option<(u32, Msg)>> {
        loop {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            let wait = deadline
                .map_or(Duration::from_millis(200), |d| d - now)
                .min(Duration::from_millis(200));
            match self.rx.recv_timeout(wait) {
                Ok((rank, Incoming::Msg(m))) => {
                    if let Some(t) = self.last_seen.get_mut(&rank) {
                        *t = Instant::now();
                    }
                    if m != Msg::Heartbeat {
                        return Ok(Some((rank, m)));
                    }
                }
                Ok((rank, Incoming::Closed(why))) => {
                    if self.last_seen.contains_key(&rank) {
                        return Err(ProbeError::Dist(format!("{} {why}", self.label(rank))));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let now = Instant::now();
                    if let Some((&rank, _)) = self
                        .last_seen
                        .iter()
                        .find(|(_, t)| now.duration_since(**t) > self.silence)
                    {
                        return Err(ProbeError::Dist(format!(
                            "{} sent nothing, not even a heartbeat, for {:.0} s: it hung or the network between the nodes broke",
                            self.label(rank),
                            self.silence.as_secs_f64()
                        )));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => unreachable!("the inbox holds a sender"),
            }
        }
    }
}

fn read_loop(rank: u32, mut reader: BufReader<TcpStream>, tx: Sender<(u32, Incoming)>) {
    loop {
        let incoming = match read_msg(&mut reader, FRAME_MAX_BYTES, None) {
            Ok(m) => Incoming::Msg(m),
            Err(ReadError::Frame(FrameError::Closed { partial: 0 })) => {
                Incoming::Closed("closed the connection (it stopped; see its own output)".into())
            }
            Err(e) => Incoming::Closed(e.to_string()),
        };
        let closed = matches!(incoming, Incoming::Closed(_));
        if tx.send((rank, incoming)).is_err() || closed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Two inboxes joined by a loopback stream.
    fn pair(silence: Duration, beat: Duration) -> (Inbox, Peer, Inbox, Peer) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let (mut ia, mut ib) = (Inbox::new(silence, beat), Inbox::new(silence, beat));
        let pa = ia.attach(1, "node 1".into(), BufReader::new(a)).unwrap();
        let pb = ib.attach(0, "node 0".into(), BufReader::new(b)).unwrap();
        (ia, pa, ib, pb)
    }

    #[test]
    fn a_busy_side_does_not_take_queued_heartbeats_for_silence() {
        let (mut a, _pa, _b, pb) = pair(Duration::from_millis(300), Duration::from_millis(50));
        // `a` is busy (not reading) for longer than the silence limit; heartbeats queue up.
        std::thread::sleep(Duration::from_millis(700));
        pb.send(&Msg::Start).unwrap();
        let got = a
            .next(Some(Instant::now() + Duration::from_secs(2)))
            .unwrap();
        assert_eq!(got, Some((1, Msg::Start)));
    }

    #[test]
    fn a_closed_or_silent_peer_is_named() {
        let (mut a, _pa, b, pb) = pair(Duration::from_millis(300), Duration::from_millis(50));
        drop((b, pb));
        let e = a.next(None).unwrap_err().to_string();
        assert!(e.starts_with("node 1 closed the connection"), "{e}");
        // A peer that stops heartbeating (its process frozen) is silent, not closed.
        let (mut a, _pa, _b, pb) = pair(Duration::from_millis(300), Duration::from_secs(60));
        let e = a.next(None).unwrap_err().to_string();
        assert!(
            e.contains("node 1 sent nothing, not even a heartbeat"),
            "{e}"
        );
        drop(pb);
        // Deadlines without messages end quietly.
        let (mut a, _pa, _b, _pb) = pair(Duration::from_secs(10), Duration::from_millis(50));
        let t = Instant::now();
        assert_eq!(a.next(Some(t + Duration::from_millis(100))).unwrap(), None);
    }
}
