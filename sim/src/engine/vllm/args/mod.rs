//! vLLM's server arguments, read as vLLM reads them, into the simulator's layout and
//! [`ServerOptions`] (through [`Engine::Vllm`], so a vLLM line is never simulated as SGLang).
//!
//! Input: `vllm serve MODEL …` or `python -m vllm.entrypoints.openai.api_server --model MODEL …`
//! as pasted (shell quoting and `\` continuations by SGLang's tokenizer, environment
//! assignments before the command). vLLM's argparse semantics: the model is `serve`'s
//! positional argument (or `--model`), `--flag=value` and `--flag value`, `_` for `-` in long
//! options, the last of a repeated flag winning, JSON values for `--compilation-config` and
//! `--speculative-config`. Each flag is modelled, recorded or unknown ([`table`]); unknown ones
//! are listed, never refused; a modelled flag with a value vLLM or the simulator cannot take is
//! a one-line error.
//!
//! Defaults modelled: vLLM main (2026), each with its file: `--gpu-memory-utilization` 0.9
//! (`config/cache.py`), `--max-num-batched-tokens` 8192 / `--max-num-seqs` 1024 on GPUs of
//! 70 GiB or more, else 2048 / 256 (`engine/arg_utils.py` `get_batch_defaults`), CUDA graphs
//! up to 512 (`config/compilation.py`, `max_cudagraph_capture_size`), `--block-size` 16
//! (`config/cache.py`), `-tp`/`-pp`/`-dp`/`-dcp` 1 (`config/parallel.py`).

mod dotted;
pub mod dump;
pub mod table;

/// The vLLM whose defaults and memory sizing are modelled (the files cited in each module).
pub const VLLM_VERSION: &str = "vLLM main of 2026";

use crate::engine::sglang::args::{
    Bounds, CONFIG_FILE_REFUSED, FlagClass, HumanInt, Kind, LayoutSizes, SglangArgs, Spec,
    human_int, int_list,
};
use crate::engine::{Engine, LaunchKnobs, PcieAllReduce};
use crate::options::{ServerOptions, SpeculativeOptions};
use std::collections::BTreeMap;
use table::*;

/// A vLLM launch line that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum VllmArgsError {
    /// A modelled flag's value vLLM (or the simulator) does not take.
    #[error("{spelled}: {problem}")]
    BadValue { spelled: String, problem: String },
    /// An environment assignment that changes the machine (NCCL's), as for SGLang lines.
    #[error(transparent)]
    Environment(#[from] crate::engine::sglang::args::SglangArgsError),
}

/// One flag as given.
#[derive(Debug, Clone, PartialEq)]
pub struct VllmEntry {
    pub given: String,
    pub value: Option<String>,
    pub class: FlagClass,
}

/// Everything a vLLM launch line said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VllmLine {
    /// `serve`'s positional model, or `--model`.
    pub model: Option<String>,
    pub env: Vec<(String, String)>,
    pub entries: Vec<VllmEntry>,
    /// Values of the table's flags by dest, the last given winning (`"true"` for switches).
    values: BTreeMap<&'static str, String>,
}

/// Whether `text` holds a vLLM launch command (`vllm serve`, vLLM's OpenAI server module).
pub fn is_vllm_line(text: &str) -> bool {
    crate::engine::sglang::args::tokenize::commands(text)
        .iter()
        .any(|c| start_of(c).is_some())
}

/// Where the arguments of a vLLM command start in `words`, and whether `serve` takes a model.
fn start_of(words: &[String]) -> Option<(usize, bool)> {
    words.iter().enumerate().find_map(|(i, w)| {
        if w.ends_with("vllm.entrypoints.openai.api_server") {
            Some((i + 1, false))
        } else if (w == "vllm" || w.ends_with("/vllm"))
            && words.get(i + 1).is_some_and(|s| s == "serve")
        {
            Some((i + 2, true))
        } else {
            None
        }
    })
}

fn bad(spelled: &str, problem: impl Into<String>) -> VllmArgsError {
    VllmArgsError::BadValue {
        spelled: spelled.to_string(),
        problem: problem.into(),
    }
}

/// The modelled vLLM option `given` (not one of vLLM's) is most likely a misspelling of
/// (`--tensor-parallel-sze`, `--gpu-memory-utilizaton`): vLLM's argparse refuses such a line,
/// shardwise says which flag was meant instead of running the default.
fn misspelled_modelled(given: &str) -> Option<&'static str> {
    let long = if given.starts_with("--") {
        given.replace('_', "-")
    } else {
        given.to_string()
    };
    crate::engine::sglang::args::nearest_flag(
        &long,
        SPECS
            .iter()
            .filter(|s| s.class == FlagClass::Modelled)
            .flat_map(|s| s.flags.iter().copied()),
    )
}

/// A word vLLM's argparse reads as an option (not a negative number).
fn is_option(w: &str) -> bool {
    w.starts_with('-') && w.len() > 1 && w.parse::<f64>().is_err()
}

/// An integer value against `spec`'s bounds and (but for a byte count) `u32`'s range.
fn int_in_bounds(spec: &Spec, n: i64, spelled: &str) -> Result<(), VllmArgsError> {
    match spec.bounds {
        Bounds::AtLeast(min) if n < min => Err(bad(spelled, format!("must be at least {min}"))),
        Bounds::Bytes if n < 1 => Err(bad(spelled, "must be at least 1 byte")),
        Bounds::Bytes => Ok(()),
        _ if n > i64::from(u32::MAX) => Err(bad(spelled, "is implausibly large")),
        _ => Ok(()),
    }
}

/// `text` with every bare human-readable number outside its quoted strings written out as the
/// integer it stands for, as vLLM's `_expand_json_human_readable_numbers` does before it
/// validates a config dataclass's JSON (`engine/arg_utils.py`, local-inference-lab/vllm
/// @28be48fa): a word of digits, an optional decimal part and one of `kKmMgGtT`, standing alone
/// (`\b…\b`), through [`human_int`]; what it refuses (`1.5K`) is refused here too.
fn expand_human_numbers(text: &str) -> Result<String, String> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut i, mut in_string) = (String::with_capacity(text.len()), 0, false);
    while i < chars.len() {
        let c = chars[i];
        if in_string || c == '"' {
            // a quoted string, escapes and all, is kept as written
            if c == '\\' && in_string {
                out.extend(chars.get(i..i + 2).unwrap_or(&chars[i..]));
                i += 2;
                continue;
            }
            in_string = if c == '"' { !in_string } else { in_string };
            out.push(c);
            i += 1;
            continue;
        }
        let starts = c.is_ascii_digit() && !word(i.checked_sub(1).map(|p| chars[p]));
        let mut end = i;
        while starts && end < chars.len() && (chars[end].is_ascii_digit() || chars[end] == '.') {
            end += 1;
        }
        let token: String = chars[i..end.min(chars.len())].iter().collect();
        let suffixed = starts
            && chars.get(end).is_some_and(|s| "kKmMgGtT".contains(*s))
            && !word(chars.get(end + 1).copied())
            && !token.ends_with('.')
            && token.matches('.').count() <= 1;
        if suffixed {
            let spelled = format!("{token}{}", chars[end]);
            match human_int(&spelled, false)? {
                HumanInt::Value(n) => out.push_str(&n.to_string()),
                HumanInt::Auto => out.push_str(&spelled),
            }
            i = end + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    Ok(out)
}

/// The words after the model as vLLM's parser takes them before argparse does: the short
/// `--optimization-level` spellings written out ([`optimization_level_words`]), `--config FILE`
/// refused ([`refuse_config_file`]), and the dotted config arguments taken out and merged per
/// flag ([`dotted`]).
fn prepared(words: &[&String]) -> Result<(Vec<String>, Vec<dotted::Dotted>), VllmArgsError> {
    let words = optimization_level_words(words);
    refuse_config_file(&words)?;
    dotted::split(words).map_err(|name| bad(&name, "expects a value"))
}

/// `words` with vLLM's short spellings of `--optimization-level` written out as its parser
/// rewrites them (`FlexibleArgumentParser.parse_args`): `-O3` and `-O=3` (any value), and `-O`
/// followed by `0`–`3`. `-O` before anything else stays as written (older vLLM's compilation
/// config).
fn optimization_level_words(words: &[&String]) -> Vec<String> {
    let long = OPTIMIZATION_LEVEL.canonical().to_string();
    let mut out = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        match w.strip_prefix("-O") {
            Some(level) if !level.is_empty() => {
                out.push(long.clone());
                out.push(level.strip_prefix('=').unwrap_or(level).to_string());
            }
            Some(_)
                if words
                    .get(i + 1)
                    .is_some_and(|n| matches!(n.as_str(), "0" | "1" | "2" | "3")) =>
            {
                out.push(long.clone())
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// `--config FILE` / `--config=FILE` among `words`: refused ([`CONFIG_FILE_REFUSED`]).
fn refuse_config_file(words: &[String]) -> Result<(), VllmArgsError> {
    for (i, w) in words.iter().enumerate() {
        let file = match w.split_once('=') {
            Some(("--config", f)) => Some(f),
            _ if w.as_str() == "--config" => words.get(i + 1).map(|f| f.as_str()),
            _ => continue,
        };
        return Err(bad(
            &format!("--config {}", file.unwrap_or("")),
            CONFIG_FILE_REFUSED,
        ));
    }
    Ok(())
}

/// What `--max-model-len auto` and `-1` are kept as ([`kept_value`]).
const AUTO: &str = "auto";

/// The value a flag keeps once read: a [`Kind::HumanInt`] as the integer it stands for (`8k` →
/// `8000`, `8K` → `8192`), so that every reader downstream sees a plain integer, and `-1` as
/// [`AUTO`], which no integer reader takes: the length is the model config's, as when the flag is
/// not given, and vLLM cuts it at startup to what the KV cache holds
/// ([`LaunchKnobs::context_length_auto_fit`]). Other kinds are kept as written. `value` has
/// passed [`check`].
fn kept_value(spec: &Spec, value: String) -> String {
    match spec.kind {
        Kind::HumanInt { auto } => match human_int(&value, auto) {
            Ok(HumanInt::Value(n)) => n.to_string(),
            Ok(HumanInt::Auto) => AUTO.to_string(),
            Err(_) => value,
        },
        _ => value,
    }
}

/// Checks `value` of `spec` against its kind and bounds (a launch line's word, or a record's:
/// [`crate::engine::vllm::record::check_value`]).
pub(crate) fn check(spec: &Spec, value: &str, spelled: &str) -> Result<(), VllmArgsError> {
    let ok = match spec.kind {
        Kind::Int => match value.parse::<i64>() {
            Ok(n) => {
                int_in_bounds(spec, n, spelled)?;
                true
            }
            Err(_) => false,
        },
        Kind::HumanInt { auto } => match human_int(value, auto) {
            Ok(HumanInt::Value(n)) => {
                int_in_bounds(spec, n, spelled)?;
                true
            }
            Ok(HumanInt::Auto) => true,
            Err(problem) => return Err(bad(spelled, problem)),
        },
        Kind::Float => value.parse::<f64>().is_ok_and(|f| {
            f.is_finite()
                && match spec.bounds {
                    Bounds::Fraction => f > 0.0 && f <= 1.0,
                    Bounds::AtLeastFloat(min, _) => f >= min,
                    _ => true,
                }
        }),
        Kind::Choice(c) => c.contains(&value),
        Kind::Ints => match int_list(value) {
            Some(l) => match spec.bounds {
                Bounds::AtLeast(min) if l.iter().any(|i| i64::from(*i) < min) => {
                    return Err(bad(spelled, format!("each must be at least {min}")));
                }
                _ => true,
            },
            None => false,
        },
        Kind::Str | Kind::Strs | Kind::Flag => true,
    };
    if ok {
        return Ok(());
    }
    Err(bad(
        spelled,
        match spec.kind {
            Kind::Choice(c) => format!("is not one of {}", c.join(", ")),
            Kind::Float if spec.bounds == Bounds::Fraction => {
                "must be a fraction in (0, 1], e.g. 0.9".to_string()
            }
            Kind::Float => match spec.bounds {
                Bounds::AtLeastFloat(min, why) => {
                    format!("must be a number of at least {min} ({why})")
                }
                _ => "is not a number".to_string(),
            },
            Kind::Ints => "is not a list of integers (`1 2 4 8`)".to_string(),
            _ => "is not an integer".to_string(),
        },
    ))
}

impl VllmLine {
    /// Reads the vLLM command in `text` (see the module docs); `None` when it holds none.
    pub fn parse(text: &str) -> Result<Option<VllmLine>, VllmArgsError> {
        let cmds = crate::engine::sglang::args::tokenize::commands(text);
        let Some((cmd, (start, positional))) =
            cmds.iter().find_map(|c| start_of(c).map(|s| (c, s)))
        else {
            return Ok(None);
        };
        crate::engine::sglang::args::tokenize::check_launch_text(&cmds)
            .map_err(crate::engine::sglang::args::SglangArgsError::NotALaunchLine)?;
        let mut line = VllmLine::default();
        for w in cmd[..start].iter() {
            match w.split_once('=') {
                Some((k, v)) if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                    line.env.push((k.to_string(), v.to_string()))
                }
                _ => {}
            }
        }
        let mut words = cmd[start..].iter().peekable();
        if positional && words.peek().is_some_and(|w| !is_option(w)) {
            line.model = words.next().cloned();
        }
        let words: Vec<&String> = words.collect();
        let (owned, dotted) = prepared(&words)?;
        let words: Vec<&String> = owned.iter().collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i].as_str();
            i += 1;
            if !is_option(w) {
                line.entries.push(VllmEntry {
                    given: w.to_string(),
                    value: None,
                    class: FlagClass::Unknown,
                });
                continue;
            }
            let (opt, inline) = match w.split_once('=') {
                Some((o, v)) => (o.to_string(), Some(v.to_string())),
                None => (w.to_string(), None),
            };
            let spec = spec_of(&opt);
            if spec.is_none()
                && let Some(meant) = misspelled_modelled(&opt)
            {
                return Err(bad(
                    &opt,
                    format!("not a vLLM option (vLLM refuses the line); did you mean {meant}?"),
                ));
            }
            let takes_value = spec.is_none_or(|s| s.kind != Kind::Flag);
            let value = match inline {
                Some(v) => Some(v),
                // `nargs="+"`: every word up to the next option
                None if spec.is_some_and(|s| matches!(s.kind, Kind::Ints | Kind::Strs)) => {
                    let from = i;
                    while i < words.len() && !is_option(words[i]) {
                        i += 1;
                    }
                    let taken: Vec<&str> = words[from..i].iter().map(|w| w.as_str()).collect();
                    (!taken.is_empty()).then(|| taken.join(" "))
                }
                None if takes_value && i < words.len() && !is_option(words[i]) => {
                    i += 1;
                    Some(words[i - 1].clone())
                }
                None => None,
            };
            if let Some(spec) = spec {
                let spelled = format!("{opt} {}", value.as_deref().unwrap_or(""));
                let v = match (spec.kind, &value) {
                    (Kind::Flag, None) => "true".to_string(),
                    (Kind::Flag, Some(_)) => return Err(bad(&spelled, "takes no value")),
                    (_, None) => return Err(bad(&opt, "expects a value")),
                    (_, Some(v)) => v.clone(),
                };
                if spec.class == FlagClass::Modelled {
                    check(spec, &v, spelled.trim())?;
                }
                if spec.dest == MODEL.dest {
                    line.model = Some(v.clone());
                }
                line.values.insert(spec.dest, kept_value(spec, v));
            }
            line.entries.push(VllmEntry {
                given: opt,
                value,
                class: spec.map_or(FlagClass::Unknown, |s| s.class),
            });
        }
        line.dotted(dotted)?;
        line.json(&COMPILATION_CONFIG)?;
        line.json(&SPECULATIVE_CONFIG)?;
        line.model_overrides()?;
        line.online_quant()?;
        line.weight_offload()?;
        Ok(Some(line))
    }

    /// The dotted config arguments ([`dotted`]): each option's merged object as that option's
    /// JSON, after (and so instead of) a JSON value the line gave it; the arguments are kept as
    /// given. A dotted argument of an option that takes no JSON is refused, as vLLM's argparse
    /// refuses the object it builds for it; one of an option shardwise does not know is kept as
    /// unknown.
    fn dotted(&mut self, merged: Vec<dotted::Dotted>) -> Result<(), VllmArgsError> {
        for d in merged {
            let spec = spec_of(&d.option);
            if let Some(spec) = spec {
                if spec.kind != Kind::Str {
                    let (name, value) = &d.given[0];
                    return Err(bad(
                        &format!("{name} {value}"),
                        format!(
                            "{} takes no JSON config (vLLM refuses the line)",
                            spec.canonical()
                        ),
                    ));
                }
                self.values.insert(spec.dest, d.json.to_string());
            }
            for (given, value) in d.given {
                self.entries.push(VllmEntry {
                    given,
                    value: Some(value),
                    class: spec.map_or(FlagClass::Unknown, |s| s.class),
                });
            }
        }
        Ok(())
    }

    fn get(&self, spec: &Spec) -> Option<&str> {
        self.values.get(spec.dest).map(String::as_str)
    }

    fn uint(&self, spec: &Spec) -> Option<u32> {
        self.get(spec).and_then(|v| v.parse().ok())
    }

    fn on(&self, spec: &Spec) -> bool {
        self.get(spec) == Some("true")
    }

    fn env(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A JSON flag's object; a value that is no JSON object is refused.
    fn json(&self, spec: &Spec) -> Result<Option<serde_json::Value>, VllmArgsError> {
        let Some(text) = self.get(spec) else {
            return Ok(None);
        };
        // older vLLM's `-O N`, a compilation level, not JSON (`-O0`…`-O3` and `-O 0`…`-O 3` are
        // `--optimization-level` by now: `optimization_level_words`)
        if spec.dest == COMPILATION_CONFIG.dest && text.parse::<u32>().is_ok() {
            return Ok(None);
        }
        // a config dataclass's JSON takes vLLM's human-readable numbers (`"max_cudagraph_capture_size":
        // 1k`); `--speculative-config` and the dict flags are plain `json.loads`
        let expanded;
        let text = if spec.dest == COMPILATION_CONFIG.dest {
            expanded = expand_human_numbers(text)
                .map_err(|why| bad(&format!("{} {text}", spec.canonical()), why))?;
            expanded.as_str()
        } else {
            text
        };
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v @ serde_json::Value::Object(_)) => Ok(Some(v)),
            _ => Err(bad(
                &format!("{} {text}", spec.canonical()),
                "is not a JSON object (quote it for the shell: '{\"key\": value}')",
            )),
        }
    }

    /// The parallel sizes in shardwise's terms for a model that has routed experts (`moe`) or
    /// not. DP ranks of a MoE model run in lockstep with the experts over all `dp × tp` GPUs:
    /// EP with `--enable-expert-parallel`, else sliced by TP over all of them
    /// (`FusedMoEParallelConfig.make` flattens TP across DP) — attention DP with the TP group
    /// holding `tp × dp` GPUs per stage (SGLang's `--dp N --enable-dp-attention`, `--ep N` with
    /// EP). A dense model's DP ranks are independent servers, refused here (one replica is
    /// simulated without `-dp`).
    pub fn sizes(&self, moe: bool) -> Result<LayoutSizes, VllmArgsError> {
        let tp = self.uint(&TENSOR_PARALLEL_SIZE).unwrap_or(1);
        let dp = self.dp_ranks();
        let ep = self.on(&ENABLE_EXPERT_PARALLEL);
        let dcp = self.uint(&DECODE_CONTEXT_PARALLEL_SIZE).unwrap_or(1);
        if dcp > 1 && !tp.is_multiple_of(dcp) {
            // vLLM's own check (`ParallelConfig`): the DCP group lies inside the TP group. A
            // layout ranked beside the line's drops a DCP it cannot hold; the line's own
            // cannot start
            return Err(bad(
                &format!("--decode-context-parallel-size {dcp}"),
                format!(
                    "must divide --tensor-parallel-size {tp}: vLLM shards the KV cache over \
                     ranks of the TP group and refuses to start; use a DCP of {}",
                    divisors_up_to(tp, dcp)
                ),
            ));
        }
        if dp > 1 && !moe {
            return Err(bad(
                &format!("--data-parallel-size {dp}"),
                "a dense model's DP ranks are independent servers: simulate one replica (drop -dp, a machine of tp × pp GPUs)",
            ));
        }
        if dp > 1 && tp > 1 {
            // vLLM's attention is TP inside each DP rank, the experts over dp × tp GPUs;
            // shardwise's DP attention is one GPU a rank (SGLang's `--dp` equal to `--tp`)
            return Err(bad(
                &format!("--data-parallel-size {dp} with --tensor-parallel-size {tp}"),
                format!(
                    "attention tensor-parallel inside each of the {dp} DP ranks is not modelled: \
                     try -dp {n}{e} (attention one GPU a rank) or -tp {n}{e} (attention over \
                     all {n})",
                    n = dp * tp,
                    e = if ep { " --enable-expert-parallel" } else { "" }
                ),
            ));
        }
        Ok(LayoutSizes {
            tp: Some(tp * dp),
            pp: Some(self.uint(&PIPELINE_PARALLEL_SIZE).unwrap_or(1)),
            ep: Some(if ep { tp * dp } else { 1 }),
            dp: (dp > 1).then_some(dp),
            enable_dp_attention: dp > 1,
            ..LayoutSizes::default()
        })
    }

    /// The `--all2all-backend` the line runs: only with DP ranks and EP (`use_all2all_kernels`),
    /// and not the all-gather default or a removed value that falls back to it.
    fn all2all_kernels(&self) -> Option<String> {
        self.get(&ALL2ALL_BACKEND)
            .filter(|b| self.dp_ranks_with_ep() && !VLLM_GATHER_ALL2ALL.contains(b))
            .map(str::to_string)
    }

    /// Whether the line runs DP ranks with `--enable-expert-parallel`
    /// (`FusedMoEParallelConfig.use_all2all_kernels`).
    fn dp_ranks_with_ep(&self) -> bool {
        self.dp_ranks() > 1 && self.on(&ENABLE_EXPERT_PARALLEL)
    }

    /// `-dp`, 1 where not given.
    fn dp_ranks(&self) -> u32 {
        self.uint(&DATA_PARALLEL_SIZE).unwrap_or(1)
    }

    /// `--enable-dbo` refused as vLLM refuses it: with an all-to-all backend other than DeepEP's.
    fn check_dbo(&self) -> Result<(), VllmArgsError> {
        let backend = self
            .get(&ALL2ALL_BACKEND)
            .unwrap_or("allgather_reducescatter");
        if self.on(&ENABLE_DBO) && !VLLM_DBO_ALL2ALL.contains(&backend) {
            return Err(bad(
                ENABLE_DBO.canonical(),
                format!(
                    "vLLM's micro-batching runs only with --all2all-backend deepep_low_latency or \
                     deepep_high_throughput and refuses to start with {backend}: add one (with -dp \
                     N --enable-expert-parallel) or drop --enable-dbo"
                ),
            ));
        }
        Ok(())
    }

    /// What the line's `--all2all-backend` does not do, for the warning line: nothing without DP
    /// ranks and EP; the removed `naive` / `pplx` fall back to the all-gather default.
    fn all2all_unused(&self) -> Option<String> {
        let b = self.get(&ALL2ALL_BACKEND)?;
        let flag = ALL2ALL_BACKEND.canonical();
        if self.all2all_kernels().is_some() || b == "allgather_reducescatter" {
            None
        } else if !self.dp_ranks_with_ep() {
            Some(format!(
                "{flag} {b}: no effect without -dp > 1 and --enable-expert-parallel (vLLM runs its all-to-all kernels only there)"
            ))
        } else {
            Some(format!(
                "{flag} {b}: removed from vLLM, which falls back to allgather_reducescatter"
            ))
        }
    }

    /// Whether the line runs DP ranks without `--enable-expert-parallel`, which mean attention DP
    /// for a MoE model and independent servers for a dense one ([`VllmLine::sizes`]).
    pub fn dp_without_ep(&self) -> bool {
        self.dp_ranks() > 1 && !self.on(&ENABLE_EXPERT_PARALLEL)
    }

    /// The launch settings the line states, engine-neutral ([`Engine::server_options`] turns
    /// them into vLLM's server options).
    pub fn knobs(&self) -> Result<LaunchKnobs, VllmArgsError> {
        self.check_dbo()?;
        let graphs = self.json(&COMPILATION_CONFIG)?;
        let field = |k: &str| graphs.as_ref().and_then(|g| g.get(k));
        let capture_max = self.capture_max(
            field("max_cudagraph_capture_size").and_then(serde_json::Value::as_u64),
            field("cudagraph_capture_sizes")
                .and_then(serde_json::Value::as_array)
                .and_then(|a| a.iter().filter_map(serde_json::Value::as_u64).max()),
        )?;
        // an unset cudagraph_mode takes `--optimization-level`'s default: NONE at 0
        // (`OPTIMIZATION_LEVEL_00`, `config/vllm.py`)
        let no_graphs = match field("cudagraph_mode").and_then(serde_json::Value::as_str) {
            Some(m) => m.eq_ignore_ascii_case("none"),
            None => self.get(&OPTIMIZATION_LEVEL) == Some("0"),
        };
        let kv = self.get(&KV_CACHE_DTYPE).filter(|d| *d != "auto");
        Ok(LaunchKnobs {
            kv_cache_dtype: kv.and_then(models::KvDtype::from_name),
            memory_fraction: self
                .get(&GPU_MEMORY_UTILIZATION)
                .and_then(|v| v.parse().ok())
                .map(|f| (Engine::Vllm, f)),
            context_length: self.uint(&MAX_MODEL_LEN),
            context_length_auto_fit: self.get(&MAX_MODEL_LEN) == Some(AUTO),
            kv_cache_memory_bytes: self
                .get(&KV_CACHE_MEMORY_BYTES)
                .and_then(|v| v.parse().ok()),
            disable_custom_all_reduce: self.on(&DISABLE_CUSTOM_ALL_REDUCE),
            moe_a2a_backend: self.all2all_kernels(),
            pcie_all_reduce: match self.env("VLLM_ENABLE_PCIE_ALLREDUCE") {
                Some("1") => Some(PcieAllReduce {
                    engine: Engine::Vllm,
                    max_bytes: Some(
                        pcie_cutoff_bytes(|k| self.env(k)).map_err(|(name, why)| bad(name, why))?,
                    ),
                }),
                _ => None,
            },
            cuda_graph_max_bs: capture_max.map(|n| n.min(u64::from(u32::MAX)) as u32),
            disable_cuda_graph: self.on(&ENFORCE_EAGER) || no_graphs,
            max_running_requests: self.uint(&MAX_NUM_SEQS),
            chunked_prefill_size: self.uint(&MAX_NUM_BATCHED_TOKENS),
            decode_context_parallel: self.uint(&DECODE_CONTEXT_PARALLEL_SIZE).filter(|d| *d > 1),
            // the negation wins when both are given, as no server runs both
            prefix_caching: if self.on(&NO_ENABLE_PREFIX_CACHING) {
                Some(false)
            } else {
                self.on(&ENABLE_PREFIX_CACHING).then_some(true)
            },
            chunked_prefill: if self.on(&NO_ENABLE_CHUNKED_PREFILL) {
                Some(false)
            } else {
                self.on(&ENABLE_CHUNKED_PREFILL).then_some(true)
            },
            kv_page_tokens: self.uint(&BLOCK_SIZE),
            estimate_cudagraph_memory: self
                .env("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
                .map(|v| v == "1"),
            moe_runner_backend: self.get(&MOE_BACKEND).map(str::to_string),
            b12x_moe_a16: b12x_moe_a16(|k| self.env(k)),
            b12x_w4a16_tc_decode: self
                .env(crate::b12x_build::B12X_W4A16_TC_DECODE)
                .is_some_and(crate::b12x_build::env_flag_on),
            // a launch line names no build date: only the switch, where set, says the route
            b12x_mla_verify: crate::b12x_build::B12xMlaVerify::of(
                self.env(crate::b12x_build::VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE),
                None,
            ),
            fused_add_rms_norm_max_bytes: fused_add_rms_norm_max_bytes(
                |k| self.env(k),
                self.fusion_pass(graphs.as_ref()),
            )
            .map_err(|why| bad(VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE, why))?,
            attention_backend: self.get(&ATTENTION_BACKEND).map(str::to_string),
            model_overrides: self.model_overrides()?,
            online_quant: self.online_quant()?,
            weight_offload: self.weight_offload()?,
            linear_state_dtype_bytes: self.get(&MAMBA_SSM_CACHE_DTYPE).and_then(state_dtype_bytes),
            ..LaunchKnobs::default()
        })
    }

    /// `--hf-overrides`' model-config fields ([`crate::options::ModelOverrides`]).
    fn model_overrides(&self) -> Result<crate::options::ModelOverrides, VllmArgsError> {
        let Some(v) = self.json(&HF_OVERRIDES)? else {
            return Ok(crate::options::ModelOverrides::default());
        };
        crate::options::ModelOverrides::of_json(&v)
            .map_err(|why| bad(&format!("{} {v}", HF_OVERRIDES.canonical()), why))
    }

    /// The online quantization of the BF16 weights ([`crate::options::OnlineQuant`]): the
    /// `--quantization` shorthand's specs ([`online_shorthand`]) with `--quantization-config`'s
    /// over them; what it cannot price for sure is refused.
    fn online_quant(&self) -> Result<Option<crate::options::OnlineQuant>, VllmArgsError> {
        let method = self.get(&QUANTIZATION);
        let base = online_shorthand(method).map_err(|why| {
            bad(
                &format!("{} {}", QUANTIZATION.canonical(), method.unwrap_or("")),
                why,
            )
        })?;
        let Some(v) = self.json(&QUANTIZATION_CONFIG)? else {
            return Ok(base);
        };
        crate::options::OnlineQuant::of_json(&v, base)
            .map_err(|why| bad(&format!("{} {v}", QUANTIZATION_CONFIG.canonical()), why))
    }

    /// The weight offload the line asks for ([`crate::options::WeightOffload`]), the backend
    /// as vLLM's `create_offloader` picks it (`offloader/base.py` @ 28ee78af): `prefetch` where
    /// named or where `auto` sees `--offload-group-size` > 0, else `uva` where `--cpu-offload-gb`
    /// > 0; what vLLM's `OffloadConfig` refuses is refused here with its reason.
    fn weight_offload(&self) -> Result<Option<crate::options::WeightOffload>, VllmArgsError> {
        use crate::options::{OffloadLayers, OffloadParams, OffloadTransfer, WeightOffload};
        let params = |spec: &Spec| {
            let given = self.get(spec).unwrap_or("");
            OffloadParams::of_segments(&crate::engine::sglang::args::str_list(given))
                .map_err(|why| bad(&format!("{} {given}", spec.canonical()), why))
        };
        let backend = self.get(&OFFLOAD_BACKEND).unwrap_or("auto");
        let group = self.uint(&OFFLOAD_GROUP_SIZE).unwrap_or(0);
        if backend == "prefetch" || (backend == "auto" && group > 0) {
            let in_group = self.uint(&OFFLOAD_NUM_IN_GROUP).unwrap_or(1);
            if in_group > group {
                return Err(bad(
                    &format!("{} {in_group}", OFFLOAD_NUM_IN_GROUP.canonical()),
                    format!(
                        "must be at most {} ({group}), as vLLM's OffloadConfig requires",
                        OFFLOAD_GROUP_SIZE.canonical()
                    ),
                ));
            }
            let step = self.uint(&OFFLOAD_PREFETCH_STEP).unwrap_or(1);
            if step < 1 {
                return Err(bad(
                    &format!("{} {step}", OFFLOAD_PREFETCH_STEP.canonical()),
                    "must be at least 1 with prefetch offloading, as vLLM's OffloadConfig requires",
                ));
            }
            return Ok(Some(WeightOffload {
                layers: OffloadLayers::Groups {
                    group_size: group,
                    num_in_group: in_group,
                    prefetch_step: step,
                },
                // a static pool of `prefetch_step` slots (`prefetch.py` StaticBufferPool)
                transfer: OffloadTransfer::CopyAhead {
                    in_line_under_graphs: false,
                    static_buffer_layers: step,
                },
                params: params(&OFFLOAD_PARAMS)?,
            }));
        }
        let gib = self
            .get(&CPU_OFFLOAD_GB)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if gib <= 0.0 {
            return Ok(None);
        }
        // `VLLM_WEIGHT_OFFLOADING_DISABLE_UVA=1`: each offloaded layer copied whole every
        // forward (`uva.py`'s functional_call fallback)
        let copy = self
            .env("VLLM_WEIGHT_OFFLOADING_DISABLE_UVA")
            .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
        Ok(Some(WeightOffload {
            layers: OffloadLayers::Budget {
                bytes_per_gpu: (gib * (1u64 << 30) as f64) as u64,
            },
            transfer: if copy {
                OffloadTransfer::CopyInLine
            } else {
                OffloadTransfer::ZeroCopy
            },
            params: params(&CPU_OFFLOAD_PARAMS)?,
        }))
    }

    /// Whether the line turns on the all-reduce + RMSNorm fusion pass: the `--compilation-config`
    /// JSON's `pass_config.fuse_allreduce_rms`, a dotted `-cc.pass_config.fuse_allreduce_rms=True`
    /// merged into it ([`dotted`]: a value that is no JSON, `True`, stays text, which the config's
    /// validation reads as the boolean).
    fn fusion_pass(&self, compilation: Option<&serde_json::Value>) -> bool {
        match compilation
            .and_then(|c| c.get("pass_config"))
            .and_then(|p| p.get("fuse_allreduce_rms"))
        {
            Some(serde_json::Value::Bool(on)) => *on,
            Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
            _ => false,
        }
    }

    /// The largest decode batch captured in a CUDA graph, from the flags or the
    /// `--compilation-config` fields (`json_max`, `json_sizes_max`: the largest of its sizes):
    /// the capture sizes' largest where given, else the maximum. vLLM refuses a setting given
    /// both as a flag and in the JSON (`EngineArgs.create_engine_config`: "mutually
    /// exclusive"), and a maximum other than the largest size (`post_init_cudagraph_sizes`).
    fn capture_max(
        &self,
        json_max: Option<u64>,
        json_sizes_max: Option<u64>,
    ) -> Result<Option<u64>, VllmArgsError> {
        let flag_max = self.uint(&MAX_CUDAGRAPH_CAPTURE_SIZE).map(u64::from);
        let flag_sizes_max = self
            .get(&CUDAGRAPH_CAPTURE_SIZES)
            .and_then(int_list)
            .and_then(|l| l.into_iter().max())
            .map(u64::from);
        for (flag, json, name) in [
            (flag_max, json_max, &MAX_CUDAGRAPH_CAPTURE_SIZE),
            (flag_sizes_max, json_sizes_max, &CUDAGRAPH_CAPTURE_SIZES),
        ] {
            if flag.is_some() && json.is_some() {
                return Err(bad(
                    name.canonical(),
                    format!(
                        "and --compilation-config's {} are mutually exclusive (vLLM refuses the line): give one",
                        name.dest
                    ),
                ));
            }
        }
        let (max, sizes_max) = (flag_max.or(json_max), flag_sizes_max.or(json_sizes_max));
        if let (Some(m), Some(s)) = (max, sizes_max)
            && m != s
        {
            return Err(bad(
                &format!("{} {m}", MAX_CUDAGRAPH_CAPTURE_SIZE.canonical()),
                format!("is not the largest capture size ({s}); vLLM requires them equal"),
            ));
        }
        Ok(sizes_max.or(max))
    }

    /// `--speculative-config`'s draft: a chain of `num_speculative_tokens` drafts (vLLM's
    /// EAGLE/MTP proposers draft one token per step, top-1), verified with one more.
    pub fn speculative(&self) -> Result<Option<SpeculativeOptions>, VllmArgsError> {
        let Some(cfg) = self.json(&SPECULATIVE_CONFIG)? else {
            return Ok(None);
        };
        let k = cfg
            .get("num_speculative_tokens")
            .and_then(serde_json::Value::as_u64)
            .filter(|k| (1..=16).contains(k))
            .ok_or_else(|| {
                bad(
                    "--speculative-config",
                    "needs \"num_speculative_tokens\" between 1 and 16",
                )
            })? as u32;
        let method = cfg
            .get("method")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("eagle");
        let algorithm = match method.to_ascii_lowercase().as_str() {
            "eagle3" => "EAGLE3",
            "eagle" => "EAGLE",
            // the checkpoint's own MTP layers (deepseek_mtp, mtp, …), SGLang's NEXTN
            _ => "NEXTN",
        };
        // an MTP method drafts with the target checkpoint's own MTP layers: vLLM's
        // `SpeculativeConfig.__post_init__` (`config/speculative.py`) takes the target's model
        // config for it, and the `model` such lines name is the target itself
        // (`{'model': 'lukealonso/GLM-5.1-NVFP4-MTP', 'method': 'mtp', …}`), not a draft
        let own_layers = method.to_ascii_lowercase().ends_with("mtp");
        let draft = cfg
            .get("model")
            .and_then(serde_json::Value::as_str)
            .filter(|m| !own_layers && self.model.as_deref() != Some(*m));
        // synthetic acceptance forces the length the run accepts (`rejection_sample_method`)
        let accept_length = match Engine::Vllm
            .rules()
            .forced_accept_length(&cfg.to_string(), k)
        {
            Some(Ok(l)) => Some(l),
            Some(Err(why)) => return Err(bad("--speculative-config", &why)),
            None => None,
        };
        let forced_by = accept_length.map(|l| {
            format!(
                "\"{}\": {l}",
                crate::engine::forced_acceptance::VLLM_SYNTHETIC_ACCEPTANCE_LENGTH
            )
        });
        Ok(Some(SpeculativeOptions {
            algorithm: algorithm.to_string(),
            num_steps: k,
            eagle_topk: 1,
            num_draft_tokens: k + 1,
            draft_model_path: draft.map(str::to_string),
            accept_length,
            prompt_kind: None,
            forced_by,
        }))
    }

    /// The server options vLLM runs this line with for `layout` on `machine`, and the notes.
    pub fn server_options(
        &self,
        layout: &models::Layout,
        machine: &crate::machine::Machine,
    ) -> Result<(ServerOptions, Vec<String>), VllmArgsError> {
        let env = SglangArgs {
            env: self.env.clone(),
            ..SglangArgs::default()
        };
        let mut notes = env.check_environment(layout.gpus())?;
        let (mut o, more) = Engine::Vllm.server_options(
            &self.knobs()?,
            layout.tp,
            machine.has_nvlink(),
            machine.memory_bytes(),
        );
        notes.extend(more);
        let dcp = o.decode_context_parallel;
        if dcp > 1 && (layout.dp_attention || !layout.tp.is_multiple_of(dcp)) {
            // the layout ranked beside the line's own has no TP group DCP can shard over
            o.decode_context_parallel = 1;
            notes.push(format!(
                "-dcp {dcp} left out for {}: it shards the KV cache inside a TP group of a multiple of {dcp} GPUs",
                layout.short_name()
            ));
        }
        o.speculative = self.speculative()?;
        o.quantization = self.get(&QUANTIZATION).map(str::to_string);
        Ok((o, notes))
    }

    /// The flags that do not change the prediction, each as written.
    pub fn not_modelled(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.class != FlagClass::Modelled)
            .map(|e| match &e.value {
                Some(v) => format!("{} {v}", e.given),
                None => e.given.clone(),
            })
            .collect()
    }

    /// The flags that do not change the prediction, as one warning line (`None` = none).
    pub fn not_modelled_line(&self) -> Option<String> {
        let list = |class: FlagClass| {
            self.entries
                .iter()
                .filter(|e| e.class == class)
                .map(|e| match &e.value {
                    Some(v) => format!("{} {v}", e.given),
                    None => e.given.clone(),
                })
                .collect::<Vec<_>>()
        };
        let (mut recorded, unknown) = (list(FlagClass::Recorded), list(FlagClass::Unknown));
        // read, and it changes a step's cost: said below as not priced, not as without effect
        recorded.retain(|f| f != ENABLE_DBO.canonical());
        let env: Vec<String> = self
            .env
            .iter()
            .filter(|(k, _)| !VLLM_ENV_MODELLED.iter().any(|(m, _)| m == k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut parts = Vec::new();
        if !recorded.is_empty() || !env.is_empty() {
            parts.push(format!(
                "recorded, no effect on cost: {}",
                env.into_iter()
                    .chain(recorded)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !unknown.is_empty() {
            parts.push(format!(
                "unknown to shardwise, ignored: {}",
                unknown.join(", ")
            ));
        }
        let graphs = self.json(&COMPILATION_CONFIG).ok().flatten();
        if self.get(&OPTIMIZATION_LEVEL) == Some("1")
            && graphs
                .as_ref()
                .and_then(|g| g.get("cudagraph_mode"))
                .is_none()
        {
            parts.push(format!(
                "{} 1: piecewise CUDA graphs (attention runs eagerly between the graph pieces), priced as full graphs",
                OPTIMIZATION_LEVEL.canonical()
            ));
        }
        parts.extend(self.all2all_unused());
        if let Some(note) = self.single_row_cutoff_note() {
            parts.push(note);
        }
        if self.on(&ENABLE_DBO) {
            parts.push(format!(
                "{}: two micro-batches a step above 32 decode tokens, one's all-to-all under the other's compute, not priced",
                ENABLE_DBO.canonical()
            ));
        }
        (!parts.is_empty()).then(|| format!("vLLM flags not modelled — {}", parts.join("; ")))
    }
}

impl VllmLine {
    /// A cpp-backend cutoff below one decode row's message (16 KiB: a hidden size of 8,192 in
    /// bf16): the fork sends single-row messages to its custom kernel whatever the cutoff
    /// (`VLLM_CPP_AR_IGNORE_CUTOFF_MAX_ROWS`, 1 by default for cpp, @28be48fa9
    /// `custom_all_reduce.py`), which shardwise prices under the cutoff as stated.
    fn single_row_cutoff_note(&self) -> Option<String> {
        let on = self.env("VLLM_ENABLE_PCIE_ALLREDUCE") == Some("1");
        let cpp = !self
            .env(VLLM_PCIE_ALLREDUCE_BACKEND)
            .is_some_and(|b| b.eq_ignore_ascii_case("b12x"));
        let stated = self.env(VLLM_CPP_AR_1STAGE_NCCL_CUTOFF)?;
        let bytes = byte_size(stated)?;
        (on && cpp && bytes < 16 * 1024).then(|| {
            format!(
                "{VLLM_CPP_AR_1STAGE_NCCL_CUTOFF}={stated}: one-stream steps' single-row messages still take the custom all-reduce in the fork (VLLM_CPP_AR_IGNORE_CUTOFF_MAX_ROWS=1 by default), priced on NCCL above the cutoff as stated"
            )
        })
    }
}

/// The one-stage cutoff of the community build's PCIe custom all-reduce, as the rtx6kpro
/// Kimi-K2.6 v4 runs state it ("VLLM_ENABLE_PCIE_ALLREDUCE=1 (cpp, 56KB cutoff)"), and the
/// `cpp` backend's default for [`VLLM_CPP_AR_1STAGE_NCCL_CUTOFF`] (`default_cutoff = "56KB" if
/// self._pcie_cpp_backend`).
pub const VLLM_PCIE_ALLREDUCE_CUTOFF_BYTES: u64 = 56 * 1024;

/// The largest message the `cpp` backend's custom all-reduce takes; larger ones go to NCCL
/// (local-inference-lab/vllm @28be48fa9 `custom_all_reduce.py`: `cpp_ar_cutoff =
/// os.getenv("VLLM_CPP_AR_1STAGE_NCCL_CUTOFF", default_cutoff)`, `should_custom_ar` returns
/// False above it; rtx6kpro `models/glm5.1/vllm-communicators-kimi-glm-2026-05-07.md` "usually
/// 56KB", `0` its pure-NCCL runs). Read with the fork's `_parse_byte_size`.
pub const VLLM_CPP_AR_1STAGE_NCCL_CUTOFF: &str = "VLLM_CPP_AR_1STAGE_NCCL_CUTOFF";

/// The community fork's switch to b12x's W4A16 MoE (BF16 activations) in vLLM's b12x MoE
/// runner: `=1` makes `B12xExperts` run quant mode `w4a16` whatever b12x's own
/// `B12X_MOE_FORCE_A16` says (local-inference-lab/vllm @28be48fa9 `vllm/envs.py`
/// `VLLM_B12X_FORCE_MOE_A16`, read by `_b12x_env_force_moe_a16` in
/// `vllm/model_executor/layers/fused_moe/b12x_moe.py`).
pub const VLLM_B12X_FORCE_MOE_A16: &str = "VLLM_B12X_FORCE_MOE_A16";

/// The fork's PCIe all-reduce implementation: `cpp` (vLLM's C++ custom all-reduce, the
/// default) or `b12x` (b12x's one-shot pool).
pub const VLLM_PCIE_ALLREDUCE_BACKEND: &str = "VLLM_PCIE_ALLREDUCE_BACKEND";

/// The largest message the `b12x` backend's one-shot all-reduce takes (bytes with a `K`/`KB`
/// or `M`/`MB` suffix, binary); larger ones go to NCCL. The `cpp` backend ignores it
/// (local-inference-lab/vllm @28be48fa9 `vllm/distributed/device_communicators/custom_all_reduce.py`:
/// `pcie_max_size = min(max_size, _parse_byte_size(os.getenv("VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE", "64KB")))`
/// on the `use_pcie_oneshot` path only).
pub const VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE: &str = "VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE";

/// A byte size as the fork's `_parse_byte_size` reads it: digits, then nothing (bytes), `K`/`KB`
/// (× 1024) or `M`/`MB` (× 1024²), any case; `KiB`/`MiB` are read alike (the fork's later
/// `b12x_pcie_all_reduce.py` takes them). Anything else is no size (`None`), never a guess.
pub fn byte_size(value: &str) -> Option<u64> {
    let v = value
        .trim()
        .trim_matches(['"', '\'', ',', ';'])
        .to_ascii_uppercase();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, suffix) = v.split_at(split);
    let multiplier: u64 = match suffix.trim() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

/// The largest message the `b12x` backend's one-shot channel reduces together with the residual
/// add and the RMSNorm that follow it, as one kernel (`_oneshot_limits` in the fork's
/// `vllm/distributed/device_communicators/b12x_pcie_all_reduce.py`; the July 2026 GLM-5.2
/// launchers give `84KB`).
pub const VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE: &str =
    "VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE";

/// Whether a launch's words turn on vLLM's all-reduce + RMSNorm fusion pass
/// (`-cc.pass_config.fuse_allreduce_rms=True`, or `"fuse_allreduce_rms": true` in a
/// `--compilation-config` JSON).
pub fn fusion_pass_in(text: &str) -> bool {
    let t = text.to_ascii_lowercase().replace(' ', "");
    t.contains("fuse_allreduce_rms=true") || t.contains("\"fuse_allreduce_rms\":true")
}

/// The message size up to which the b12x fork runs the all-reduce, the residual add and the
/// RMSNorm after it as one kernel (its compiled one-token step: the fork's
/// `B12xAllReduceRMSFusionPass` replaces `all_reduce → fused_add_rms_norm` in the `[1, 1]` token
/// range; `vllm/model_executor/layers/pcie_fused_ar_rms.py` of the local-inference-lab fork, a
/// September 2026 version, says so): `Ok(None)` unless the `b12x` PCIe backend is on
/// (`VLLM_ENABLE_PCIE_ALLREDUCE=1`), the launch turns the fusion pass on (`fusion_pass`) and
/// states [`VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE`]; a size [`byte_size`] cannot read is
/// refused, never guessed.
pub fn fused_add_rms_norm_max_bytes<'a>(
    env: impl Fn(&str) -> Option<&'a str>,
    fusion_pass: bool,
) -> Result<Option<u64>, String> {
    let b12x = env("VLLM_ENABLE_PCIE_ALLREDUCE") == Some("1")
        && env(VLLM_PCIE_ALLREDUCE_BACKEND).is_some_and(|b| b.eq_ignore_ascii_case("b12x"));
    match env(VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE) {
        Some(v) if b12x && fusion_pass => byte_size(v).map(Some).ok_or(format!(
            "{VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE}={v} is no size the fork reads: give \
             digits with K, KB, M or MB (84KB)"
        )),
        _ => Ok(None),
    }
}

/// The b12x backend's one-shot cutoff where the launch states none: the fork's default
/// (`_parse_byte_size(os.getenv("VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE", "64KB"))`,
/// `custom_all_reduce.py` @28be48fa9).
pub const VLLM_B12X_ONESHOT_DEFAULT_BYTES: u64 = 64 * 1024;

/// The one-shot cutoff of the fork's PCIe all-reduce for a launch's environment: the `b12x`
/// backend's stated size or its default ([`VLLM_B12X_ONESHOT_DEFAULT_BYTES`]), else the `cpp`
/// backend's stated [`VLLM_CPP_AR_1STAGE_NCCL_CUTOFF`] or its default
/// ([`VLLM_PCIE_ALLREDUCE_CUTOFF_BYTES`]). One reading for a launch line and a record, so a record
/// that states no cutoff is not given SGLang's automatic one. Each backend ignores the other's
/// size; a size [`byte_size`] cannot read is refused (`Err` names the variable, says why and
/// what to give), never taken as the default: the fork would fail on it, and a guessed cutoff
/// moves every all-reduce's price.
pub fn pcie_cutoff_bytes<'a>(
    env: impl Fn(&str) -> Option<&'a str>,
) -> Result<u64, (&'static str, String)> {
    let b12x = env(VLLM_PCIE_ALLREDUCE_BACKEND).is_some_and(|b| b.eq_ignore_ascii_case("b12x"));
    let (name, default, example) = if b12x {
        (
            VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE,
            VLLM_B12X_ONESHOT_DEFAULT_BYTES,
            "64KB",
        )
    } else {
        (
            VLLM_CPP_AR_1STAGE_NCCL_CUTOFF,
            VLLM_PCIE_ALLREDUCE_CUTOFF_BYTES,
            "56KB",
        )
    };
    match env(name) {
        None => Ok(default),
        Some(v) => byte_size(v).ok_or((
            name,
            format!(
                "{name}={v} is no size the fork reads: give digits with K, KB, M or MB ({example})"
            ),
        )),
    }
}

/// Whether a launch's environment runs vLLM's b12x MoE as W4A16: the fork's own switch
/// ([`VLLM_B12X_FORCE_MOE_A16`]) or b12x's (`B12X_MOE_FORCE_A16`).
pub fn b12x_moe_a16<'a>(env: impl Fn(&str) -> Option<&'a str>) -> bool {
    [
        VLLM_B12X_FORCE_MOE_A16,
        crate::b12x_build::B12X_MOE_FORCE_A16,
    ]
    .iter()
    .any(|name| env(name).is_some_and(crate::b12x_build::env_flag_on))
}

/// The divisors of `tp` above 1 and below `dcp`, as a reader lists them ("2 or 4"), else "1".
fn divisors_up_to(tp: u32, dcp: u32) -> String {
    let d: Vec<String> = (2..dcp.min(tp + 1))
        .filter(|d| tp.is_multiple_of(*d))
        .map(|d| d.to_string())
        .collect();
    match d.split_last() {
        None => "1".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests;

impl VllmLine {
    /// `vllm serve`'s flags for `layout` (this line's DCP kept where it divides the TP size);
    /// `None` for a layout vLLM has no flags for (experts EP over part of the TP group).
    pub fn layout_flags(&self, layout: &models::Layout) -> Option<String> {
        let dcp = self.uint(&DECODE_CONTEXT_PARALLEL_SIZE).unwrap_or(1);
        crate::engine::ServingEngine::layout_flags(&crate::engine::vllm::Vllm, layout, dcp, 1)
    }

    /// The flags of this line other than the layout's and the model, as given (shell-quoted
    /// where needed), for a `try:` line: with [`VllmLine::layout_flags`] they launch what was
    /// ranked, the user's `--gpu-memory-utilization`, `--kv-cache-dtype`, `--max-model-len`
    /// and the rest kept.
    pub fn other_flags(&self) -> Vec<String> {
        let layout = [
            &TENSOR_PARALLEL_SIZE,
            &PIPELINE_PARALLEL_SIZE,
            &DATA_PARALLEL_SIZE,
            &DECODE_CONTEXT_PARALLEL_SIZE,
            &ENABLE_EXPERT_PARALLEL,
            &MODEL,
            // said by the ranked layout's own flags where it runs ([`Launch::ranked_label`])
            &ALL2ALL_BACKEND,
        ];
        self.entries
            .iter()
            .filter(|e| spec_of(&e.given).is_none_or(|s| !layout.iter().any(|l| l.dest == s.dest)))
            .map(|e| match &e.value {
                Some(v) => format!("{} {}", e.given, shell_word(v)),
                None => e.given.clone(),
            })
            .collect()
    }
}

/// `w` as one shell word: as is when it holds only safe characters, else in single quotes.
fn shell_word(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// The linear and MoE specs a `--quantization` value gives a BF16 checkpoint as vLLM loads it:
/// the online shorthands of `config/quantization.py` (`fp8_per_tensor`, `fp8_per_block`,
/// `mxfp8`; `online` takes `--quantization-config` alone) and `fp8`, whose `Fp8Config`
/// quantizes an unserialized checkpoint's linears and experts per tensor at load. Another
/// method names the checkpoint's own quantization: nothing to convert. The weight-only INT8
/// shorthand is refused (no INT8 weight format is priced).
pub fn online_shorthand(
    method: Option<&str>,
) -> Result<Option<crate::options::OnlineQuant>, String> {
    use crate::options::OnlineQuant;
    use models::WeightFormat;
    Ok(match method {
        Some("fp8" | "fp8_per_tensor") => Some(OnlineQuant::both(WeightFormat::Fp8 { block: 0 })),
        Some("fp8_per_block") => Some(OnlineQuant::both(WeightFormat::Fp8 { block: 128 })),
        Some("mxfp8") => Some(OnlineQuant::both(WeightFormat::Mxfp8)),
        Some("int8_per_channel_weight_only") => {
            return Err("INT8 weight-only experts are not priced".into());
        }
        _ => None,
    })
}

/// Bytes a value of `--mamba-ssm-cache-dtype`'s dtype takes; `None` for `auto` (the engine's rule
/// for the model) or a word that names no dtype.
pub fn state_dtype_bytes(value: &str) -> Option<u32> {
    match value.trim_matches(['\'', '"']) {
        "float32" => Some(4),
        "float16" | "bfloat16" => Some(2),
        _ => None,
    }
}
