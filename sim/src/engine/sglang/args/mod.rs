//! SGLang's server arguments, read the way SGLang reads them, into the typed values the simulator
//! uses: the parallel sizes of a [`models::Layout`] and the [`ServerOptions`]. This module is the
//! one place that knows SGLang's flag names, aliases, value spellings and defaults.
//!
//! Two inputs:
//! - [`from_launch_line`]: a whole `python -m sglang.launch_server …` command as pasted (shell
//!   quoting, `\`-newline continuations, `--flag=value`, environment assignments before
//!   `python`, `sglang serve …`), read as argparse reads it: exact option strings and aliases
//!   (`--tensor-parallel-size`, `--tp-size`), and abbreviations that are the prefix of exactly one
//!   option (`--tp`, `--mem-frac`), the last of a repeated flag winning.
//! - [`from_pairs`]: SGLang's own `server_args=ServerArgs(key=value, …)` start-up line as
//!   `(field, Python literal)` pairs, values as resolved by the server.
//!
//! Both give one [`SglangArgs`] that lists every flag as modelled (it changes the prediction),
//! recorded (kept, no effect on cost: `--host`, `--port`, `--nnodes` …) or unknown to shardwise
//! (listed in a warning). An unknown flag is never an error; a modelled flag with a value SGLang
//! or the simulator cannot take is, in one line naming the flag as written.
//!
//! Defaults follow SGLang main of 2026-01-28 ([`SGLANG_VERSION`]; [`DefaultsContext`] has the memory-
//! dependent ones): an absent `--tp-size` is 1 as in SGLang, `--chunked-prefill-size`,
//! `--cuda-graph-max-bs` and `--mem-fraction-static` depend on the GPU's memory and the layout.

mod choices;
mod defaults;
pub mod dump;
mod environment;
mod literal;
mod names;
mod parse;
mod resolve;
mod table;
#[cfg(test)]
mod tests;
pub(crate) mod tokenize;

pub use choices::{KV_CACHE_DTYPES, MOE_A2A_BACKENDS, MOE_RUNNER_BACKENDS};
pub use defaults::{
    DefaultsContext, default_speculative_options, speculative_params, verified_draft_tokens,
};
pub use environment::{SGLANG_ENABLE_SPEC_V2, SPEC_V2_ON, env_true};
pub use parse::{check_value, from_launch_line, from_pairs, from_words};
pub use resolve::memory_band_defaults;
pub use table::{
    Bounds, CONFIG_FILE_REFUSED, CliFlag, HumanInt, Kind, SPECS, Spec, human_int, int_list,
    nearest_flag, str_list,
};
/// The row constructors both engines' tables use.
pub(crate) use table::{m as modelled_row, r as recorded_row};
/// The table's flags by name, for typed access ([`SglangArgs::int`] and the rest take them).
pub mod flags {
    pub use super::table::*;
}
use table::{
    DIST_INIT_ADDR, DP_SIZE, ENABLE_DP_ATTENTION, EP_SIZE, MODEL_PATH, NNODES, NODE_RANK, PP_SIZE,
    TP_SIZE,
};

use crate::options::ServerOptions;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

impl ServerOptions {
    /// Whether the table's switch `flag` is on. Here, beside the table, so that the options
    /// (which the table fills) do not import it back.
    pub fn switch(&self, flag: &Spec) -> bool {
        self.switches.contains(flag.dest)
    }
}

/// The KV dtype of an SGLang `--kv-cache-dtype` value (`None` = `auto`, the checkpoint's
/// choice); FP4 is refused (not modelled), as is a value SGLang does not take.
pub fn kv_dtype(value: &str) -> std::result::Result<Option<models::KvDtype>, String> {
    if let Bounds::Refuse(refused) = table::KV_CACHE_DTYPE.bounds
        && let Some((_, why)) = refused.iter().find(|(v, _)| *v == value)
    {
        return Err((*why).into());
    }
    match value {
        "auto" => Ok(None),
        v if KV_CACHE_DTYPES.contains(&v) => Ok(models::KvDtype::from_name(v)),
        other => Err(format!(
            "`{other}` is not one of {}",
            KV_CACHE_DTYPES.join(", ")
        )),
    }
}

/// The SGLang whose argument names, choices and defaults this module follows.
pub const SGLANG_VERSION: &str = "SGLang main of 2026-01-28 (python/sglang/srt/server_args.py: add_cli_args, _handle_gpu_memory_settings; the field list of the user's server_args line)";

/// How many flags of one class the warning line names before it only counts them.
const MAX_NAMED_FLAGS: usize = 16;

/// How the simulator treats a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlagClass {
    /// Changes the prediction (layout sizes, memory, scheduling, kernels).
    Modelled,
    /// Kept in the output; no effect on cost (`--host`, `--port`, `--model-path`, `--nnodes` …).
    Recorded,
    /// Not known to shardwise (it may well be an SGLang flag): listed in a warning, ignored.
    Unknown,
}

/// Where a flag came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A flag of the `sim` command itself.
    CommandLine,
    /// `--server-args` / `--server-args-file`: a pasted launch command.
    LaunchLine,
    /// A `server_args=ServerArgs(…)` line of a server log.
    ServerArgsDump,
    /// The flags a runs file records for the measured run (`--measured FILE#RUN`).
    MeasuredRun,
}

impl Origin {
    pub(super) fn label(self) -> &'static str {
        match self {
            Origin::CommandLine => "command line",
            Origin::LaunchLine => "--server-args",
            Origin::ServerArgsDump => "server_args dump",
            Origin::MeasuredRun => "the measured run's recorded flags",
        }
    }
}

/// A typed flag value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

/// One flag as given, and how it was classified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlagEntry {
    /// As written: `--mem-frac`, `--tp`, or the dump's field name `tp_size`.
    pub given: String,
    /// SGLang's field (`dest`) it sets, when known.
    pub dest: Option<String>,
    /// The value text as written (`None` for a flag without a value).
    pub value: Option<String>,
    pub class: FlagClass,
    pub origin: Origin,
    /// How it was read, when not plainly: an abbreviation, ambiguous, overridden, not expanded.
    pub note: Option<String>,
}

impl FlagEntry {
    /// `--flag value`, as written.
    pub fn spelled(&self) -> String {
        match (&self.value, self.origin) {
            (Some(v), Origin::ServerArgsDump) => format!("{}={v}", self.given),
            (Some(v), _) => format!("{} {v}", self.given),
            (None, _) => self.given.clone(),
        }
    }
}

/// A value SGLang's flags set, with how it was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Given {
    pub value: Value,
    /// `--tp 8`, `tp_size=8`.
    pub spelled: String,
    pub origin: Origin,
}

/// Why server arguments cannot be taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SglangArgsError {
    /// A modelled flag's value is not one SGLang (or the simulator) takes.
    #[error("{spelled}: {problem}")]
    BadValue { spelled: String, problem: String },
    /// The same flag given two ways with different values.
    #[error(
        "{first} ({first_origin}) disagrees with {second} ({second_origin}): give the flag once, or the same value both ways"
    )]
    Conflict {
        first: String,
        first_origin: &'static str,
        second: String,
        second_origin: &'static str,
    },
    /// Text that holds no launch command and no flags.
    #[error("{0}")]
    NotALaunchLine(String),
}

pub(super) type Result<T> = std::result::Result<T, SglangArgsError>;

/// Everything one launch line, dump or command line said, typed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SglangArgs {
    /// Every flag in the order given.
    pub entries: Vec<FlagEntry>,
    /// Environment assignments before the command (`CUDA_VISIBLE_DEVICES=0,1`).
    pub env: Vec<(String, String)>,
    /// The words before the flags (`python3 -m sglang.launch_server`), when a command was given.
    pub command: Option<String>,
    /// The values of known flags by SGLang field, the last given winning.
    pub values: BTreeMap<String, Given>,
}

/// The parallel sizes and node flags, as given (`None` = absent; SGLang's default is 1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LayoutSizes {
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub ep: Option<u32>,
    pub dp: Option<u32>,
    pub enable_dp_attention: bool,
    pub nnodes: Option<u32>,
    pub node_rank: Option<u32>,
    pub dist_init_addr: Option<String>,
}

/// The `--moe-a2a-backend` values for which SGLang sets `ep_size` to `tp_size`, with a warning
/// ("DeepEP MoE is enabled. The expert parallel size is adjusted to be the same as the tensor
/// parallel size", `ServerArgs._handle_a2a_moe`, python/sglang/srt/server_args.py, read in
/// lukealonso/sglang main c70c22a1, 2026-03-20). The backends added after that read keep the
/// `--ep-size` given.
pub const A2A_BACKENDS_SETTING_EP: [&str; 6] = [
    "deepep",
    "mooncake",
    "nixl",
    "ascend_fuseep",
    "flashinfer",
    "mori",
];

/// Server options with SGLang's defaults filled in, and which were filled in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedOptions {
    pub options: ServerOptions,
    /// The values SGLang derives itself, in one line (`SGLang's defaults for 97887 MiB GPUs at
    /// TP8: --chunked-prefill-size 8192, …`), then one line per adjustment it makes.
    pub notes: Vec<String>,
}

impl SglangArgs {
    pub(super) fn set(&mut self, dest: &str, value: Value, spelled: String, origin: Origin) {
        self.values.insert(
            dest.to_string(),
            Given {
                value,
                spelled,
                origin,
            },
        );
    }

    /// The value given for SGLang field `dest` (the table's flags: [`SglangArgs::get`]).
    pub(super) fn given(&self, dest: &str) -> Option<&Given> {
        self.values.get(dest)
    }

    /// The value given for `flag`.
    pub fn get(&self, flag: &Spec) -> Option<&Given> {
        self.given(flag.dest)
    }

    /// An integer flag's value.
    pub fn int(&self, flag: &Spec) -> Option<i64> {
        match self.get(flag)?.value {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    /// A count flag's value (the table's bounds keep these in `u32`).
    pub fn uint(&self, flag: &Spec) -> Option<u32> {
        self.int(flag).and_then(|i| u32::try_from(i).ok())
    }

    /// A number flag's value.
    pub fn float(&self, flag: &Spec) -> Option<f64> {
        match self.get(flag)?.value {
            Value::Float(f) => Some(f),
            Value::Int(i) => Some(i as f64),
            _ => None,
        }
    }

    /// A switch's value (`None` when not given).
    pub fn flag(&self, flag: &Spec) -> Option<bool> {
        match self.get(flag)?.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// Whether a switch is on.
    pub fn on(&self, flag: &Spec) -> bool {
        self.flag(flag) == Some(true)
    }

    /// A string or choice flag's value.
    pub fn string(&self, flag: &Spec) -> Option<&str> {
        match &self.get(flag)?.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An `nargs="+"` integer flag's values ([`Kind::Ints`]).
    pub fn ints(&self, flag: &Spec) -> Option<Vec<u32>> {
        self.string(flag).and_then(table::int_list)
    }

    /// `--model-path`.
    pub fn model_path(&self) -> Option<&str> {
        self.string(&MODEL_PATH)
    }

    /// The parallel sizes and node flags as given, with what SGLang derives from them: an
    /// all-to-all MoE backend runs the experts expert-parallel over the whole TP group, so
    /// SGLang sets `ep_size = tp_size` whatever `--ep-size` says ([`A2A_BACKENDS_SETTING_EP`]).
    pub fn sizes(&self) -> LayoutSizes {
        let a2a_sets_ep = self
            .string(&table::MOE_A2A_BACKEND)
            .is_some_and(|b| A2A_BACKENDS_SETTING_EP.contains(&b));
        LayoutSizes {
            tp: self.uint(&TP_SIZE),
            pp: self.uint(&PP_SIZE),
            // without --tp the layouts are ranked, each with its own TP group and the backend
            // where it runs ([`crate::options::runnable_on`])
            ep: match self.uint(&TP_SIZE) {
                Some(tp) if a2a_sets_ep => Some(tp),
                _ => self.uint(&EP_SIZE),
            },
            dp: self.uint(&DP_SIZE),
            enable_dp_attention: self.on(&ENABLE_DP_ATTENTION),
            nnodes: self.uint(&NNODES),
            node_rank: self.uint(&NODE_RANK),
            dist_init_addr: self.string(&DIST_INIT_ADDR).map(str::to_string),
        }
    }

    /// The flags that do not change the prediction (recorded and unknown).
    pub fn not_modelled(&self) -> Vec<&FlagEntry> {
        self.entries
            .iter()
            .filter(|e| e.class != FlagClass::Modelled)
            .collect()
    }

    /// One warning line naming the flags that were not modelled, `None` when all were. For a
    /// dump (which lists every field), unknown fields at an unset-looking value (`None`,
    /// `False`, `'auto'`, `'none'`, empty) are counted, not named.
    pub fn not_modelled_line(&self) -> Option<String> {
        let unset = |e: &&FlagEntry| {
            e.origin == Origin::ServerArgsDump
                && matches!(
                    e.value.as_deref().map(str::trim),
                    Some("None" | "False" | "''" | "'auto'" | "'none'" | "'{}'" | "[]" | "{}")
                )
        };
        let mut parts = Vec::new();
        for (class, label) in [
            (FlagClass::Recorded, "recorded, no effect on cost"),
            (FlagClass::Unknown, "unknown to shardwise, ignored"),
        ] {
            let all: Vec<&FlagEntry> = self.entries.iter().filter(|e| e.class == class).collect();
            let shown: Vec<String> = all
                .iter()
                .filter(|e| !unset(e))
                .map(|e| match &e.note {
                    Some(n) => format!("{} ({n})", e.spelled()),
                    None => e.spelled(),
                })
                .collect();
            let hidden = all.len() - shown.len();
            if shown.is_empty() && hidden == 0 {
                continue;
            }
            // A full dump has ~200 unknown fields; naming them all buries the warning.
            let named = shown.len().min(MAX_NAMED_FLAGS);
            let unnamed = shown.len() - named;
            let mut more = Vec::new();
            if unnamed > 0 {
                more.push(format!("{unnamed} more set"));
            }
            if hidden > 0 {
                more.push(format!("{hidden} more at unset values"));
            }
            let more = if more.is_empty() {
                String::new()
            } else {
                format!(" and {}", more.join(" and "))
            };
            parts.push(format!("{label}: {}{more}", shown[..named].join(", ")));
        }
        let env = self.recorded_environment();
        if !env.is_empty() {
            parts.push(format!("environment, recorded: {}", env.join(", ")));
        }
        (!parts.is_empty()).then(|| format!("flags not modelled — {}", parts.join("; ")))
    }

    /// This command line's flags together with a launch line's: a modelled flag given both ways
    /// with different values is an error naming both. Recorded flags may differ (bench_serving's
    /// `--host 127.0.0.1` is where the client connects, the server's `--host 0.0.0.0` where it
    /// listens); this side's value is kept.
    pub fn merge(mut self, other: SglangArgs) -> Result<SglangArgs> {
        for (dest, g) in other.values {
            let checked = table::spec(&dest).is_some_and(checked_both_ways);
            if let Some(mine) = self.values.get(&dest)
                && checked
                && !same(&mine.value, &g.value)
            {
                return Err(SglangArgsError::Conflict {
                    first: mine.spelled.clone(),
                    first_origin: mine.origin.label(),
                    second: g.spelled,
                    second_origin: g.origin.label(),
                });
            }
            self.values.entry(dest).or_insert(g);
        }
        self.entries.extend(other.entries);
        self.env.extend(other.env);
        self.command = self.command.or(other.command);
        Ok(self)
    }
}

/// Whether a flag given both ways must agree (and a bad value of it is refused): the modelled
/// flags, and the node flags, which decide what part of the machine the server is.
pub(super) fn checked_both_ways(spec: &Spec) -> bool {
    spec.class == FlagClass::Modelled || spec.dest == NNODES.dest || spec.dest == NODE_RANK.dest
}

/// Equal values (floats within rounding of their printed digits).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => *x as f64 == *y,
        _ => a == b,
    }
}

/// The model-config overrides of a JSON text (SGLang's `--json-model-override-args`, a record's
/// flag text alike); the error says what is wrong with it.
pub fn model_overrides_of(
    text: &str,
) -> std::result::Result<crate::options::ModelOverrides, String> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|_| "is not JSON (quote it for the shell: '{\"key\": value}')".to_string())?;
    crate::options::ModelOverrides::of_json(&v)
}
