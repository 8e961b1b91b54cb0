//! The scheduler's `Decode batch` and `Prefill batch` lines.
//!
//! Read from SGLang's `scheduler_metrics_mixin.py` (`log_decode_stats`, `log_prefill_stats`; main,
//! early 2026) and older `scheduler.py`:
//!
//! ```text
//! Decode batch[ [iter]], #running-req: R, #token: T, token usage: U, [accept len: A, accept rate: X, ]
//!   [disaggregation: pre-allocated usage, #prealloc-req, #transfer-req, #retracted-req, ]
//!   cuda graph: B, gen throughput (token/s): G, #queue-req: Q,
//! Prefill batch[ [iter]], #new-seq: S, #new-token: N, #cached-token: C, token usage: U,
//!   #running-req: R, #queue-req: Q, [#prealloc-req, #inflight-req, input throughput (token/s)]
//! ```
//!
//! Older builds wrote `Decode batch. #running-req: …` without `cuda graph`; hybrid pools write
//! `#full token:` for `#token:`; CPU builds `cpu graph:`. Fields are read by name, in any order.

use crate::engine::log::{DecodeFields, SkipReason};

/// Fields of one `Prefill batch` line.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefillFields {
    pub new_seq: u32,
    pub new_tokens: u64,
    pub cached_tokens: u64,
    pub token_usage: Option<f64>,
    pub running: Option<u32>,
    pub queue: Option<u32>,
}

/// `key: value` pairs after the line's title (`Decode batch`), `None` when `message` is not such
/// a line.
fn fields<'a>(message: &'a str, title: &str) -> Option<Vec<(&'a str, &'a str)>> {
    let rest = message.strip_prefix(title)?;
    // optional ` [forward count]` (SGLANG_LOG_FORWARD_ITERS)
    let rest = match rest.strip_prefix(" [") {
        Some(r) => r.split_once(']').map_or(r, |(_, after)| after),
        None => rest,
    };
    let rest = rest.strip_prefix([',', '.']).unwrap_or(rest);
    Some(
        rest.split(',')
            .filter_map(|seg| seg.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect(),
    )
}

struct Fields<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl Fields<'_> {
    fn raw(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// A number field: absent → Ok(None), present but not a finite number → an error.
    fn num<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, SkipReason> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) => v
                .parse::<T>()
                .ok()
                .filter(|_| v.parse::<f64>().is_ok_and(f64::is_finite))
                .map(Some)
                .ok_or_else(|| SkipReason::UnparsableNumber(key.to_string())),
        }
    }

    /// A required number field; when absent the line was cut (its last field, `#queue-req`,
    /// is missing too) or lacks it.
    fn need<T: std::str::FromStr>(&self, key: &str) -> Result<T, SkipReason> {
        self.num(key)?.ok_or_else(|| {
            if self.raw("#queue-req").is_none() {
                SkipReason::Truncated
            } else {
                SkipReason::MissingField(key.to_string())
            }
        })
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, SkipReason> {
        match self.raw(key) {
            None => Ok(None),
            Some("True") => Ok(Some(true)),
            Some("False") => Ok(Some(false)),
            Some(_) => Err(SkipReason::UnparsableNumber(key.to_string())),
        }
    }
}

/// Reads a `Decode batch` line; `None` when `message` is not one.
pub fn decode(message: &str) -> Option<Result<DecodeFields, SkipReason>> {
    let f = Fields {
        pairs: fields(message, "Decode batch")?,
    };
    Some((|| {
        let tokens = match f.num::<u64>("#token")? {
            Some(t) => t,
            None => f.need("#full token")?,
        };
        Ok(DecodeFields {
            running: f.need("#running-req")?,
            tokens,
            token_usage: f.num("token usage")?,
            cuda_graph: match f.boolean("cuda graph")? {
                Some(b) => Some(b),
                None => f.boolean("cpu graph")?,
            },
            gen_throughput: f.need("gen throughput (token/s)")?,
            queue: f.num("#queue-req")?,
            accept_len: f.num("accept len")?,
            retracted: f.num("#retracted-req")?,
        })
    })())
}

/// Reads a `Prefill batch` line; `None` when `message` is not one.
pub fn prefill(message: &str) -> Option<Result<PrefillFields, SkipReason>> {
    let f = Fields {
        pairs: fields(message, "Prefill batch")?,
    };
    Some((|| {
        Ok(PrefillFields {
            new_seq: f.need("#new-seq")?,
            new_tokens: f.need("#new-token")?,
            cached_tokens: f.need("#cached-token")?,
            token_usage: match f.num("token usage")? {
                Some(u) => Some(u),
                None => f.num("full token usage")?,
            },
            running: f.num("#running-req")?,
            queue: f.num("#queue-req")?,
        })
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_lines_of_several_versions() {
        let d = decode("Decode batch, #running-req: 2, #token: 136, token usage: 0.00, cuda graph: False, gen throughput (token/s): 43.24, #queue-req: 0, ")
            .unwrap()
            .unwrap();
        assert_eq!((d.running, d.tokens, d.cuda_graph), (2, 136, Some(false)));
        assert_eq!(d.gen_throughput, 43.24);
        let old = decode("Decode batch. #running-req: 1, #token: 2, token usage: 0.00, gen throughput (token/s): 25.16, #queue-req: 0")
            .unwrap()
            .unwrap();
        assert_eq!((old.running, old.cuda_graph), (1, None));
        let spec = decode("Decode batch [1234], #running-req: 8, #full token: 900, full token usage: 0.01, accept len: 2.71, accept rate: 0.68, cuda graph: True, gen throughput (token/s): 410.00, #queue-req: 3, ")
            .unwrap()
            .unwrap();
        assert_eq!(
            (spec.tokens, spec.accept_len, spec.queue),
            (900, Some(2.71), Some(3))
        );
        assert!(decode("Prefill batch, #new-seq: 1").is_none());
    }

    #[test]
    fn malformed_decode_lines_say_why() {
        let cut = decode("Decode batch, #running-req: 2, #token: 13").unwrap();
        assert_eq!(cut, Err(SkipReason::Truncated));
        let bad = decode("Decode batch, #running-req: two, #token: 1, gen throughput (token/s): 1.0, #queue-req: 0").unwrap();
        assert_eq!(
            bad,
            Err(SkipReason::UnparsableNumber("#running-req".into()))
        );
        let nan = decode("Decode batch, #running-req: 2, #token: 1, gen throughput (token/s): nan, #queue-req: 0").unwrap();
        assert!(matches!(nan, Err(SkipReason::UnparsableNumber(_))));
    }

    #[test]
    fn prefill_lines() {
        let p = prefill("Prefill batch, #new-seq: 63, #new-token: 1551, #cached-token: 2292, token usage: 0.00, #running-req: 1, #queue-req: 0, ")
            .unwrap()
            .unwrap();
        assert_eq!((p.new_seq, p.new_tokens, p.cached_tokens), (63, 1551, 2292));
        assert_eq!(p.running, Some(1));
    }
}
