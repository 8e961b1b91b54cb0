//! A vLLM log's `non-default args: {…}` line (`entrypoints/utils.py`, `log_non_default_args`:
//! the launch's arguments that differ from vLLM's defaults, as a Python dict) read into its
//! pairs and the `vllm serve` line it stands for, which [`crate::engine::vllm::args::VllmLine`] reads as
//! it reads a pasted launch line.

use crate::engine::sglang::args::dump::{split_items, unquote};

pub use crate::engine::log::launch::VllmArgs;

impl VllmArgs {
    /// Records `name=value` as proven by a log line (the first proof of a name wins).
    pub fn prove_env(&mut self, name: &str, value: &str) {
        if !self.env.iter().any(|(n, _)| n == name) {
            self.env.push((name.to_string(), value.to_string()));
        }
    }

    /// The launch line with the proven environment before `vllm serve`.
    pub fn line_with_env(&self) -> String {
        let mut words: Vec<String> = self.env.iter().map(|(n, v)| format!("{n}={v}")).collect();
        words.push(self.launch_line.clone());
        words.join(" ")
    }
}

/// A Python literal as JSON (`{'a': True, 'b': None}` → `{"a": true, "b": null}`), for the
/// JSON-valued flags (`--speculative-config`, `--compilation-config`).
fn python_to_json(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(match word.as_str() {
            "True" => "true",
            "False" => "false",
            "None" => "null",
            w => w,
        });
        word.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                flush(&mut word, &mut out);
                out.push('"');
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            if let Some(e) = chars.next() {
                                if e != '\'' {
                                    out.push('\\');
                                }
                                out.push(e);
                            }
                        }
                        d if d == c => break,
                        '"' => out.push_str("\\\""),
                        d => out.push(d),
                    }
                }
                out.push('"');
            }
            // an enum's repr, `<CompilationMode.VLLM_COMPILE: 3>`: its value
            '<' => {
                flush(&mut word, &mut out);
                let inner: String = chars.by_ref().take_while(|d| *d != '>').collect();
                let value = inner.rsplit_once(": ").map_or("null", |(_, v)| v);
                out.push_str(&python_to_json(value));
            }
            '(' => out.push('['),
            ')' => out.push(']'),
            c if c.is_alphanumeric() || c == '_' || c == '.' || c == '-' => word.push(c),
            c => {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `s` quoted for the launch-line tokenizer.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Reads the text after `non-default args: ` into its pairs and launch line; `None` when it is
/// no dict.
pub fn parse(text: &str) -> Option<VllmArgs> {
    let body = text.trim().strip_prefix('{')?;
    let (mut items, closed) = split_items(body, '}');
    if !closed {
        items.pop();
    }
    let mut pairs = Vec::new();
    for item in items {
        let item = item.trim();
        let Some(q) = item.chars().next().filter(|c| *c == '\'' || *c == '"') else {
            continue;
        };
        let Some(end) = item[1..].find(q) else {
            continue;
        };
        let key = &item[1..=end];
        let Some(value) = item[end + 2..].trim_start().strip_prefix(':') else {
            continue;
        };
        pairs.push((key.to_string(), value.trim().to_string()));
    }
    let launch_line = launch_line(&pairs);
    Some(VllmArgs {
        pairs,
        truncated: !closed,
        launch_line,
        env: Vec::new(),
        engine_version: None,
    })
}

/// The `vllm serve` line of `pairs`: `True` as a switch, `False` as the negation of a switch
/// that has one (`--no-enable-prefix-caching`: argparse's `BooleanOptionalAction`, whose
/// default is `None`, so `False` among the non-default args is a negation given), else `False` /
/// `None` left out (the defaults of switches), strings unquoted, dicts and lists as JSON.
fn launch_line(pairs: &[(String, String)]) -> String {
    let compilation = compilation_json(pairs);
    let model = pairs
        .iter()
        .find(|(k, _)| k == "model_tag" || k == "model")
        .and_then(|(_, v)| unquote(v));
    let mut words = vec!["vllm".to_string(), "serve".to_string()];
    words.extend(model.as_deref().map(shell_quote));
    for (k, v) in pairs {
        let negation = format!("no_{k}");
        if v == "False" && super::table::SPECS.iter().any(|s| s.dest == negation) {
            words.push(format!("--{}", negation.replace('_', "-")));
            continue;
        }
        if k == "model_tag"
            || k == "model"
            || k == "max_cudagraph_capture_size"
            || v == "False"
            || v == "None"
        {
            continue;
        }
        if k == "compilation_config" {
            continue;
        }
        let flag = format!("--{}", k.replace('_', "-"));
        if v == "True" {
            words.push(flag);
            continue;
        }
        let value = match unquote(v) {
            Some(s) => s,
            None if v.starts_with(['{', '[', '(']) => python_to_json(v),
            None => v.clone(),
        };
        if v.starts_with(['{', '[', '('])
            && serde_json::from_str::<serde_json::Value>(&value).is_err()
        {
            // a repr JSON cannot hold: the flag is left out rather than misread
            continue;
        }
        words.push(flag);
        words.push(shell_quote(&value));
    }
    if let Some(c) = compilation {
        words.push("--compilation-config".into());
        words.push(shell_quote(&c.to_string()));
    }
    words.join(" ")
}

/// The run's `compilation_config` as JSON, with the top-level `max_cudagraph_capture_size`
/// (vLLM's own flag, which `engine/arg_utils.py` moves into the compilation config) where the
/// dict leaves it null; `None` when neither is given or the dict is no JSON object.
fn compilation_json(pairs: &[(String, String)]) -> Option<serde_json::Value> {
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let mut config = match get("compilation_config") {
        Some(v) => match serde_json::from_str::<serde_json::Value>(&python_to_json(v)) {
            Ok(o @ serde_json::Value::Object(_)) => o,
            _ => serde_json::json!({}),
        },
        None => serde_json::json!({}),
    };
    if let Some(n) = get("max_cudagraph_capture_size").and_then(|v| v.parse::<u64>().ok())
        && config
            .get("max_cudagraph_capture_size")
            .is_none_or(serde_json::Value::is_null)
    {
        config["max_cudagraph_capture_size"] = n.into();
    }
    let o = config.as_object()?;
    // nulls are vLLM's "not set": leave them out, as the flag would not be given
    let set: serde_json::Map<_, _> = o
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!set.is_empty()).then_some(serde_json::Value::Object(set))
}
