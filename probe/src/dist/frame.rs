//! Reading one rendezvous line with a bound on its length and, before a peer has proved it
//! belongs to the job, on the time it may take: a stream without a newline, or one that trickles
//! a byte at a time, costs node 0 at most `cap` bytes and the hello deadline, never the host.

use std::io::{BufRead, BufReader, ErrorKind};
use std::net::TcpStream;
use std::time::Instant;

/// The most a peer may send before its hello is read and proved: a hello is well under 1 KiB
/// (host name, plan text, two nonces, a proof).
pub const HELLO_MAX_BYTES: usize = 16 * 1024;

/// The most one message of a joined node may take: its part of the profile is the largest (its
/// one-node profile: 230 KB for the two-H200 box in `profiles/`, a few MB for eight GPUs with
/// every curve), so 64 MiB leaves a wide margin while a runaway peer still cannot fill the host.
pub const FRAME_MAX_BYTES: usize = 64 << 20;

/// Why no line came.
#[derive(Debug)]
pub enum FrameError {
    /// The stream ended; `partial` bytes of an unfinished line came first.
    Closed { partial: usize },
    /// More than `cap` bytes without a newline.
    TooLong { cap: usize },
    /// The deadline passed with `partial` bytes of a line.
    Late { partial: usize },
    /// The connection failed.
    Io(std::io::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Closed { partial: 0 } => write!(f, "closed the connection"),
            FrameError::Closed { partial } => write!(
                f,
                "closed the connection after {partial} bytes of an unfinished line"
            ),
            FrameError::TooLong { cap } => write!(
                f,
                "sent more than {} without a newline (a rendezvous message is at most that long)",
                size(*cap)
            ),
            FrameError::Late { partial: 0 } => write!(f, "sent nothing by the deadline"),
            FrameError::Late { partial } => write!(
                f,
                "sent only {partial} bytes of a line by the deadline (a slow or stuck sender)"
            ),
            FrameError::Io(e) => write!(f, "connection failed: {e}"),
        }
    }
}

/// `16 KiB`, `64 MiB`.
pub fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// The next line (with its newline) of at most `cap` bytes, by `deadline` when one is given.
/// Reads only what the line needs beyond the reader's buffer, so bytes after it stay for the
/// next call.
pub fn read_frame(
    reader: &mut BufReader<TcpStream>,
    cap: usize,
    deadline: Option<Instant>,
) -> Result<Vec<u8>, FrameError> {
    let mut line = Vec::new();
    loop {
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(FrameError::Late {
                    partial: line.len(),
                });
            }
            reader
                .get_ref()
                .set_read_timeout(Some(left))
                .map_err(FrameError::Io)?;
        }
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(FrameError::Late {
                    partial: line.len(),
                });
            }
            Err(e) => return Err(FrameError::Io(e)),
        };
        if buf.is_empty() {
            return Err(FrameError::Closed {
                partial: line.len(),
            });
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > cap {
            return Err(FrameError::TooLong { cap });
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if done {
            return Ok(line);
        }
    }
}

/// The first bytes of `line` as printable text (`GET / HTTP/1.1`), for a log line about a
/// connection that is not a rendezvous peer: at most 40 characters, control characters escaped.
pub fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(160)]);
    let t: String = text.trim_end().chars().take(40).collect();
    let mut out: String = t.escape_debug().collect();
    if text.trim_end().chars().count() > 40 || line.len() > 160 {
        out.push('…');
    }
    out
}

/// `text` made safe for one log line: control characters (a newline a stranger put in a host
/// name or an unknown message kind) escaped, at most 300 characters.
pub fn one_line(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == 300 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Duration;

    fn pair() -> (TcpStream, BufReader<TcpStream>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, BufReader::new(b))
    }

    #[test]
    fn lines_are_bounded_in_length_and_time() {
        let (mut w, mut r) = pair();
        w.write_all(b"one\ntwo\n").unwrap();
        assert_eq!(read_frame(&mut r, 8, None).unwrap(), b"one\n");
        assert_eq!(read_frame(&mut r, 8, None).unwrap(), b"two\n");
        w.write_all(&[b'x'; 100]).unwrap();
        assert!(matches!(
            read_frame(&mut r, 64, None),
            Err(FrameError::TooLong { cap: 64 })
        ));
        let (mut w, mut r) = pair();
        w.write_all(b"slow").unwrap();
        let t = Instant::now();
        let e = read_frame(&mut r, 64, Some(t + Duration::from_millis(200))).unwrap_err();
        assert!(matches!(e, FrameError::Late { partial: 4 }), "{e:?}");
        assert!(t.elapsed() < Duration::from_secs(2));
        drop(w);
        assert!(matches!(
            read_frame(&mut r, 64, None),
            Err(FrameError::Closed { partial: 0 })
        ));
    }

    #[test]
    fn previews_are_short_and_printable() {
        assert_eq!(preview(b"GET / HTTP/1.1\r\n"), "GET / HTTP/1.1");
        assert_eq!(preview(b"\x1b[2J\n"), "\\u{1b}[2J");
        assert_eq!(preview(&[b'a'; 1000]).chars().count(), 41);
        assert_eq!(one_line("a\nerror: b\r"), "a\\nerror: b\\r");
        assert_eq!(one_line(&"é".repeat(400)).chars().count(), 301);
        assert!(
            FrameError::TooLong { cap: 16 << 10 }
                .to_string()
                .contains("16 KiB")
        );
    }
}
