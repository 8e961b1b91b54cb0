//! SGLang's `server_args=ServerArgs(key=value, …)` dump: Python's dataclass `repr`, split into
//! ordered (underscore key, Python-literal text) pairs without interpreting them.
//!
//! Values are `repr`s: `'text'` (or `"text"` when the text holds a `'`, with `\` escapes),
//! `None`, `True`/`False`, numbers, lists `[1, 2]`, tuples, dicts `{'a': 1}`, nested reprs
//! `Foo(a=1)`; a comma, `=` or bracket inside a string or a nested value does not split. The
//! mapping to shardwise's options is `sim::engine::sglang::args::from_pairs`; the values the log's own
//! interpretation needs are read through the same table's rows ([`ServerArgsDump::int`] and the
//! rest take a `sim::engine::sglang::args::Spec`).

use super::Spec;
use super::flags::{self as f, DECODE_LOG_INTERVAL};
use crate::options::ServerOptions;
use models::KvDtype;

pub use crate::engine::log::launch::ServerArgsDump;

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
    let (mut items, closed) = split_items(body, ')');
    // A cut dump: its last item may be cut anywhere (inside a string, a list): do not guess it.
    if !closed {
        items.pop();
    }
    let mut pairs = Vec::new();
    for item in items {
        push_pair(&mut pairs, item);
    }
    Ok(ServerArgsDump {
        pairs,
        truncated: !closed,
    })
}

/// The top-level, comma-separated items of a Python `repr` body up to its closing `close`
/// (`)` of a dataclass, `}` of a dict): a comma or bracket inside a string or a nested value
/// does not split. `(items, closed)`; an unclosed body's last item is whatever text was left.
pub fn split_items(body: &str, close: char) -> (Vec<&str>, bool) {
    let mut items = Vec::new();
    let mut depth: u32 = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
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
            c if c == close => {
                items.push(&body[start..i]);
                return (items, true);
            }
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    (items, false)
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
    /// The value text of `flag` (a row of `sim::engine::sglang::args`' table) as printed, `None` when
    /// absent.
    pub fn get(&self, flag: &Spec) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == flag.dest)
            .map(|(_, v)| v.as_str())
    }

    /// An integer value; `None` when absent, `None` (Python) or not an integer.
    pub fn int(&self, flag: &Spec) -> Option<u64> {
        self.get(flag)?.parse().ok()
    }

    /// A float value; `None` when absent, `None` or not a finite number.
    pub fn float(&self, flag: &Spec) -> Option<f64> {
        self.get(flag)?.parse().ok().filter(|x: &f64| x.is_finite())
    }

    /// A boolean value (`True` / `False`).
    pub fn flag(&self, flag: &Spec) -> Option<bool> {
        match self.get(flag)? {
            "True" => Some(true),
            "False" => Some(false),
            _ => None,
        }
    }

    /// Whether a switch was on.
    pub fn on(&self, flag: &Spec) -> bool {
        self.flag(flag) == Some(true)
    }

    /// A string value, unquoted; `None` when absent, `None` or not a string.
    pub fn string(&self, flag: &Spec) -> Option<String> {
        unquote(self.get(flag)?)
    }

    /// A parallel size (1 when absent, as SGLang's default).
    pub fn size(&self, flag: &Spec) -> u32 {
        self.int(flag).map_or(1, |v| v.clamp(1, 1 << 16) as u32)
    }

    /// `decode_log_interval`: decode batches between two `Decode batch` lines (SGLang's
    /// default 40 when absent).
    pub fn decode_log_interval(&self) -> u32 {
        self.int(&DECODE_LOG_INTERVAL)
            .map_or(40, |v| v.clamp(1, 1 << 30) as u32)
    }
}

impl ServerArgsDump {
    /// `base` with what this dump states about memory and the step: SGLang's server-log reader
    /// of the options (until [`super::from_pairs`] maps every pair); `kv` is the run's KV dtype
    /// (the dump's `kv_cache_dtype`, or what the log says it used).
    pub fn options_over(&self, base: &ServerOptions, kv: Option<KvDtype>) -> ServerOptions {
        let mut o = base.clone();
        let u32_of = |v: u64| v.min(u32::MAX as u64) as u32;
        if let Some(f) = self.float(&f::MEM_FRACTION_STATIC) {
            o.mem_fraction_static = f;
        }
        o.disable_cuda_graph = self.on(&f::DISABLE_CUDA_GRAPH);
        if let Some(bs) = self.int(&f::CUDA_GRAPH_MAX_BS) {
            o.cuda_graph_max_bs = u32_of(bs.min(1 << 20));
        }
        if let Some(c) = self.int(&f::CHUNKED_PREFILL_SIZE) {
            o.chunked_prefill_size = u32_of(c);
        }
        if let Some(m) = self.int(&f::MAX_PREFILL_TOKENS) {
            o.max_prefill_tokens = u32_of(m);
        }
        o.max_running_requests = self.int(&f::MAX_RUNNING_REQUESTS).map(u32_of);
        o.context_length = self.int(&f::CONTEXT_LENGTH).map(u32_of);
        o.max_total_tokens = self.int(&f::MAX_TOTAL_TOKENS);
        o.kv_cache_dtype = kv;
        if let Some(p) = self.int(&f::PAGE_SIZE) {
            o.page_size = u32_of(p).max(1);
        }
        if let Some(d) = self.int(&f::PP_ASYNC_BATCH_DEPTH) {
            o.pp_async_batch_depth = u32_of(d);
        }
        o.disable_radix_cache = self
            .flag(&f::DISABLE_RADIX_CACHE)
            .unwrap_or(o.disable_radix_cache);
        o.disable_overlap_schedule = self
            .flag(&f::DISABLE_OVERLAP_SCHEDULE)
            .unwrap_or(o.disable_overlap_schedule);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value text of any key (the table's rows are only some of the dump's keys).
    fn raw<'a>(d: &'a ServerArgsDump, key: &str) -> Option<&'a str> {
        d.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn nested_values_and_quoted_separators_do_not_split() {
        let d = parse_dump(
            r#"ServerArgs(a='x, y=(z)', b=[1, 2, [3]], c={'k': 'v,w'}, d=None, e=True, f="it's", g=Foo(h=1, i=2), j=0.848)"#,
        )
        .unwrap();
        assert!(!d.truncated);
        let keys: Vec<&str> = d.pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "d", "e", "f", "g", "j"]);
        assert_eq!(raw(&d, "a"), Some("'x, y=(z)'"));
        assert_eq!(raw(&d, "a").and_then(unquote).as_deref(), Some("x, y=(z)"));
        assert_eq!(raw(&d, "b"), Some("[1, 2, [3]]"));
        assert_eq!(raw(&d, "c"), Some("{'k': 'v,w'}"));
        assert_eq!(raw(&d, "d"), Some("None"));
        assert_eq!(raw(&d, "e"), Some("True"));
        assert_eq!(raw(&d, "f").and_then(unquote).as_deref(), Some("it's"));
        assert_eq!(raw(&d, "g"), Some("Foo(h=1, i=2)"));
        assert_eq!(
            d.float(&crate::engine::sglang::args::flags::MEM_FRACTION_STATIC),
            None,
            "no such key"
        );
        assert_eq!(raw(&d, "j"), Some("0.848"));
        let typed =
            parse_dump("ServerArgs(mem_fraction_static=0.848, disable_cuda_graph=True)").unwrap();
        assert_eq!(
            typed.float(&crate::engine::sglang::args::flags::MEM_FRACTION_STATIC),
            Some(0.848)
        );
        assert!(typed.on(&crate::engine::sglang::args::flags::DISABLE_CUDA_GRAPH));
        assert_eq!(unquote(r"'a\'b\\c'").as_deref(), Some(r"a'b\c"));
    }

    #[test]
    fn a_cut_dump_keeps_the_complete_pairs() {
        let d = parse_dump("ServerArgs(tp_size=8, pp_size=2, model_path='zai-or").unwrap();
        assert!(d.truncated);
        assert_eq!(d.size(&crate::engine::sglang::args::flags::TP_SIZE), 8);
        assert_eq!(d.size(&crate::engine::sglang::args::flags::PP_SIZE), 2);
        assert_eq!(raw(&d, "model_path"), None);
        assert_eq!(parse_dump("Namespace(x=1)"), Err(DumpError::NotADump));
    }
}
