//! vLLM's dotted config arguments: `--speculative-config.method mtp`,
//! `--speculative-config.num_speculative_tokens=3`, `-cc.max_cudagraph_capture_size 64`,
//! `-cc.cudagraph_capture_sizes+ 1,2,4`. vLLM's `FlexibleArgumentParser.parse_args`
//! (`vllm/utils/argparse_utils.py`, local-inference-lab/vllm @28be48fa) takes every argument
//! that starts with `-` and holds a `.` in its name, splits the name at the dots, takes the value
//! after `=` or the next word, reads it as JSON, else as a human-readable integer
//! ([`crate::engine::sglang::args::human_int`]), else as the string it is, merges the values of
//! one option into one nested object (nested objects merged, lists appended, anything else
//! overwritten; a `+` after the last key makes the value a comma-separated list), and passes the
//! object as that option's JSON *after* the rest of the line, so it replaces a JSON value the line
//! gave the same option.

use crate::engine::sglang::args::{HumanInt, human_int};
use serde_json::{Map, Value};

/// One option's dotted arguments, merged as vLLM merges them.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Dotted {
    /// The option before its first dot, `--` names with underscores read as dashes
    /// (`--speculative-config`, `-cc`).
    pub option: String,
    /// The merged object, as vLLM passes it on.
    pub json: Value,
    /// Each argument as given (the name with its dots) and its value as written.
    pub given: Vec<(String, String)>,
}

/// `words` without the dotted arguments (and the values they took), and those arguments merged
/// per option, in the order each option first appears; `Err(name)` for a dotted name with no
/// value after it (vLLM's parser fails on it).
pub(super) fn split(words: Vec<String>) -> Result<(Vec<String>, Vec<Dotted>), String> {
    let (mut rest, mut merged): (Vec<String>, Vec<Dotted>) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        i += 1;
        let (name, inline) = match w.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (w, None),
        };
        let dotted = w.starts_with('-') && w.parse::<f64>().is_err() && name.contains('.');
        if !dotted {
            rest.push(words[i - 1].clone());
            continue;
        }
        let value = match inline {
            Some(v) => v.to_string(),
            // vLLM takes the next word whatever it is
            None => match words.get(i) {
                Some(v) => {
                    i += 1;
                    v.to_string()
                }
                None => return Err(name.to_string()),
            },
        };
        let (option, path) = name.split_once('.').unwrap_or((name, ""));
        let option = if option.starts_with("--") {
            option.replace('_', "-")
        } else {
            option.to_string()
        };
        let (path, list) = match path.strip_suffix('+') {
            Some(p) => (p, true),
            None => (path, false),
        };
        let leaf = if list {
            Value::Array(value.split(',').map(list_item).collect())
        } else {
            read_value(&value)
        };
        let update = path.split('.').rev().fold(leaf, |v, key| {
            Value::Object(Map::from_iter([(key.to_string(), v)]))
        });
        let given = (name.to_string(), value);
        match merged.iter_mut().find(|d| d.option == option) {
            Some(d) => {
                merge(&mut d.json, update);
                d.given.push(given);
            }
            None => merged.push(Dotted {
                option,
                json: update,
                given: vec![given],
            }),
        }
    }
    Ok((rest, merged))
}

/// A value as vLLM reads one: JSON (`3`, `true`, `"x"`, `{…}`), else a human-readable integer
/// (`1k`), else the text.
fn read_value(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    match human_int(text, false) {
        Ok(HumanInt::Value(n)) => Value::from(n),
        _ => Value::String(text.to_string()),
    }
}

/// An element of a `+` list: vLLM keeps the text, and the config's validation reads a number
/// written as text as that number (pydantic's lax mode), so a number is kept as one here.
fn list_item(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Number(_)) => v,
        _ => Value::String(text.to_string()),
    }
}

/// `update` merged into `into` as vLLM's `recursive_dict_update` does: objects key by key, lists
/// appended, anything else replaced.
fn merge(into: &mut Value, update: Value) {
    match (into, update) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(old @ (Value::Object(_) | Value::Array(_))) => merge(old, v),
                    _ => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => a.extend(b),
        (slot, v) => *slot = v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn dotted_arguments_merge_per_option_as_vllm_merges_them() {
        let w = words(
            "-tp 8 --speculative_config.method mtp --speculative-config.num_speculative_tokens=3 \
             -cc.pass_config.fuse_allreduce_rms=True -cc.max_cudagraph_capture_size 1k \
             -cc.cudagraph_capture_sizes+ 1,2,4 -cc.cudagraph_capture_sizes+=8 --port 8000",
        );
        let (rest, d) = split(w).unwrap();
        assert_eq!(rest, ["-tp", "8", "--port", "8000"]);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].option, "--speculative-config");
        assert_eq!(
            d[0].json,
            serde_json::json!({"method": "mtp", "num_speculative_tokens": 3})
        );
        assert_eq!(d[1].option, "-cc");
        assert_eq!(
            d[1].json,
            serde_json::json!({
                "pass_config": {"fuse_allreduce_rms": "True"},
                "max_cudagraph_capture_size": 1000,
                "cudagraph_capture_sizes": [1, 2, 4, 8],
            })
        );
        assert_eq!(
            d[1].given[0],
            ("-cc.pass_config.fuse_allreduce_rms".into(), "True".into())
        );
    }

    #[test]
    fn negative_numbers_and_plain_options_are_not_dotted() {
        let w = words("--x -0.5 --y.z 1");
        let (rest, d) = split(w).unwrap();
        assert_eq!(rest.len(), 2);
        assert_eq!(d[0].json, serde_json::json!({"z": 1}));
        // a dotted name with nothing after it: vLLM's parser fails on the line
        let w = words("-tp 8 -cc.mode");
        assert_eq!(split(w).unwrap_err(), "-cc.mode");
    }
}
