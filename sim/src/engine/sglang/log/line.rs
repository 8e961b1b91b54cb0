//! SGLang's log line header: `[2026-01-28 22:13:30 DP1 PP2 TP3 EP4] message` (the rank tags
//! of the process that wrote it; older builds write `MM-DD HH:MM:SS.mmm`).

use crate::engine::log::line::{LogLine, RankTag, apply_tag, parse_time};

/// Splits an SGLang log line; `None` when it does not start with SGLang's `[time …]` header.
pub fn parse_line(line: &str) -> Option<LogLine<'_>> {
    let rest = line.strip_prefix('[')?;
    let close = rest.find(']')?;
    let (header, message) = (&rest[..close], &rest[close + 1..]);
    let mut tokens = header.split_whitespace();
    let (date, time) = (tokens.next()?, tokens.next()?);
    let time_s = Some(parse_time(date, time)?);
    let mut rank = RankTag::default();
    for t in tokens {
        // unknown words (`migrate`, instance roles) are part of some prefixes: ignore them
        apply_tag(&mut rank, t);
    }
    let time_len = date.len() + 1 + time.len();
    let time_text = header.get(..time_len).unwrap_or(header);
    Some(LogLine {
        time: time_text,
        time_s,
        rank,
        message: message.strip_prefix(' ').unwrap_or(message),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_of_every_version() {
        let l = parse_line("[2026-01-28 22:13:30 TP0] Decode batch, x").unwrap();
        assert_eq!(l.rank.tp, Some(0));
        assert_eq!(l.message, "Decode batch, x");
        assert_eq!(l.time, "2026-01-28 22:13:30");
        let l = parse_line("[01-28 22:13:30.250 DP1 PP2 TP3 EP4] m").unwrap();
        assert_eq!(
            l.rank,
            RankTag {
                dp: Some(1),
                pp: Some(2),
                tp: Some(3),
                ep: Some(4)
            }
        );
        assert_eq!(l.rank.to_string(), "DP1 PP2 TP3 EP4");
        let a = parse_line("[2026-01-28 22:13:30] a")
            .unwrap()
            .time_s
            .unwrap();
        let b = parse_line("[2026-01-29 00:00:01] b")
            .unwrap()
            .time_s
            .unwrap();
        assert_eq!(b - a, 6391.0, "1 h 46 min 31 s across midnight");
        assert!(parse_line("Loading safetensors checkpoint shards: 50%").is_none());
        assert!(parse_line("[not a time] x").is_none());
        assert!(parse_line("[2026-13-01 00:00:00] x").is_none());
    }
}
