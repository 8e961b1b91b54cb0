//! SGLang's `server_args=ServerArgs(key=value, …)` dump: Python's dataclass `repr`, split into
//! ordered (underscore key, Python-literal text) pairs without interpreting them.
//!
//! Values are `repr`s: `'text'` (or `"text"` when the text holds a `'`, with `\` escapes),
//! `None`, `True`/`False`, numbers, lists `[1, 2]`, tuples, dicts `{'a': 1}`, nested reprs
//! `Foo(a=1)`; a comma, `=` or bracket inside a string or a nested value does not split. The
//! mapping to shardwise's options is `sim::sglang_args::from_pairs`; the few values the log's
//! own interpretation needs have typed getters on [`ServerArgsDump`].

use serde::{Deserialize, Serialize};

/// The pairs of one `ServerArgs(...)` dump, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerArgsDump {
    /// (key, value text) as printed: `("model_path", "'zai-org/GLM-4.7-FP8'")`.
    pub pairs: Vec<(String, String)>,
    /// The dump ended before its closing `)` (a cut line): the last, partial pair is dropped.
    pub truncated: bool,
}

/// Why a `server_args=` line could not be read at all.
#[derive(Debug, Clone, PartialEq)]
pub enum DumpError {
    /// No `ServerArgs(` after `server_args=`.
    NotADump,
}

/// Splits the text after `server_args=` (`ServerArgs(a=1, b='x')`) into pairs.
pub fn parse_dump(text: &str) -> Result<ServerArgsDump, DumpError> {
    let body = text
        .trim_start()
        .strip_prefix("ServerArgs(")
        .ok_or(DumpError::NotADump)?;
    let mut pairs = Vec::new();
    let mut depth: u32 = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    let mut closed = false;
    for (i, c) in body.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ')' => {
                push_pair(&mut pairs, &body[start..i]);
                closed = true;
                break;
            }
            ',' if depth == 0 => {
                push_pair(&mut pairs, &body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !closed {
        // The last item may be cut anywhere (inside a string, a list): do not guess it.
        return Ok(ServerArgsDump {
            pairs,
            truncated: true,
        });
    }
    Ok(ServerArgsDump {
        pairs,
        truncated: false,
    })
}

fn push_pair(pairs: &mut Vec<(String, String)>, item: &str) {
    let item = item.trim();
    if item.is_empty() {
        return;
    }
    if let Some((k, v)) = item.split_once('=') {
        let k = k.trim();
        if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            pairs.push((k.to_string(), v.trim().to_string()));
        }
    }
}

/// A Python `repr` of a string, unquoted (`'a\'b'` → `a'b`); `None` when `v` is not a string.
pub fn unquote(v: &str) -> Option<String> {
    let q = v.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = v.strip_prefix(q)?.strip_suffix(q)?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

impl ServerArgsDump {
    /// The value text of `key` as printed, `None` when absent.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// An integer value; `None` when absent, `None` (Python) or not an integer.
    pub fn int(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }

    /// A float value; `None` when absent, `None` or not a finite number.
    pub fn float(&self, key: &str) -> Option<f64> {
        self.get(key)?.parse().ok().filter(|x: &f64| x.is_finite())
    }

    /// A boolean value (`True` / `False`).
    pub fn flag(&self, key: &str) -> Option<bool> {
        match self.get(key)? {
            "True" => Some(true),
            "False" => Some(false),
            _ => None,
        }
    }

    /// A string value, unquoted; `None` when absent, `None` or not a string.
    pub fn string(&self, key: &str) -> Option<String> {
        unquote(self.get(key)?)
    }

    /// `tp_size` (1 when absent).
    pub fn tp_size(&self) -> u32 {
        self.int("tp_size")
            .map_or(1, |v| v.clamp(1, 1 << 16) as u32)
    }

    /// `pp_size` (1 when absent).
    pub fn pp_size(&self) -> u32 {
        self.int("pp_size")
            .map_or(1, |v| v.clamp(1, 1 << 16) as u32)
    }

    /// `dp_size` (1 when absent).
    pub fn dp_size(&self) -> u32 {
        self.int("dp_size")
            .map_or(1, |v| v.clamp(1, 1 << 16) as u32)
    }

    /// `ep_size` (1 when absent).
    pub fn ep_size(&self) -> u32 {
        self.int("ep_size")
            .map_or(1, |v| v.clamp(1, 1 << 16) as u32)
    }

    /// `enable_dp_attention`.
    pub fn enable_dp_attention(&self) -> bool {
        self.flag("enable_dp_attention").unwrap_or(false)
    }

    /// `decode_log_interval`: decode batches between two `Decode batch` lines (SGLang's
    /// default 40 when absent).
    pub fn decode_log_interval(&self) -> u32 {
        self.int("decode_log_interval")
            .map_or(40, |v| v.clamp(1, 1 << 30) as u32)
    }

    /// `disable_cuda_graph`.
    pub fn disable_cuda_graph(&self) -> bool {
        self.flag("disable_cuda_graph").unwrap_or(false)
    }

    /// `cuda_graph_max_bs`, when printed as a number.
    pub fn cuda_graph_max_bs(&self) -> Option<u32> {
        self.int("cuda_graph_max_bs").map(|v| v.min(1 << 20) as u32)
    }

    /// `mem_fraction_static`, when printed as a number.
    pub fn mem_fraction_static(&self) -> Option<f64> {
        self.float("mem_fraction_static")
    }

    /// `context_length` (`None` in the dump: the model's own).
    pub fn context_length(&self) -> Option<u64> {
        self.int("context_length")
    }

    /// `max_total_tokens`.
    pub fn max_total_tokens(&self) -> Option<u64> {
        self.int("max_total_tokens")
    }

    /// `max_running_requests`.
    pub fn max_running_requests(&self) -> Option<u64> {
        self.int("max_running_requests")
    }

    /// `chunked_prefill_size`.
    pub fn chunked_prefill_size(&self) -> Option<u64> {
        self.int("chunked_prefill_size")
    }

    /// `kv_cache_dtype` unquoted (`auto`, `fp8_e4m3`, `bfloat16`, …).
    pub fn kv_cache_dtype(&self) -> Option<String> {
        self.string("kv_cache_dtype")
    }

    /// `model_path` unquoted.
    pub fn model_path(&self) -> Option<String> {
        self.string("model_path")
    }

    /// `speculative_algorithm` unquoted; `None` when off.
    pub fn speculative_algorithm(&self) -> Option<String> {
        self.string("speculative_algorithm")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_values_and_quoted_separators_do_not_split() {
        let d = parse_dump(
            r#"ServerArgs(a='x, y=(z)', b=[1, 2, [3]], c={'k': 'v,w'}, d=None, e=True, f="it's", g=Foo(h=1, i=2), j=0.848)"#,
        )
        .unwrap();
        assert!(!d.truncated);
        let keys: Vec<&str> = d.pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "d", "e", "f", "g", "j"]);
        assert_eq!(d.get("a"), Some("'x, y=(z)'"));
        assert_eq!(d.string("a").as_deref(), Some("x, y=(z)"));
        assert_eq!(d.get("b"), Some("[1, 2, [3]]"));
        assert_eq!(d.get("c"), Some("{'k': 'v,w'}"));
        assert_eq!(d.get("d"), Some("None"));
        assert_eq!(d.flag("e"), Some(true));
        assert_eq!(d.string("f").as_deref(), Some("it's"));
        assert_eq!(d.get("g"), Some("Foo(h=1, i=2)"));
        assert_eq!(d.mem_fraction_static(), None, "no such key");
        assert_eq!(d.float("j"), Some(0.848));
        assert_eq!(unquote(r"'a\'b\\c'").as_deref(), Some(r"a'b\c"));
    }

    #[test]
    fn a_cut_dump_keeps_the_complete_pairs() {
        let d = parse_dump("ServerArgs(tp_size=8, pp_size=2, model_path='zai-or").unwrap();
        assert!(d.truncated);
        assert_eq!(d.tp_size(), 8);
        assert_eq!(d.pp_size(), 2);
        assert_eq!(d.get("model_path"), None);
        assert_eq!(parse_dump("Namespace(x=1)"), Err(DumpError::NotADump));
    }
}
