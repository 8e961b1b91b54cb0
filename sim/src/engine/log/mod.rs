//! A server log read into engine-neutral run values: the runs of one file ([`ServerRun`]), each
//! with its memory lines per rank ([`RunMemory`]), its decode step samples ([`DecodeSample`]) and
//! prefill batches ([`PrefillSample`]), and the lines skipped by reason ([`SkipCounts`]). Each
//! engine reads its own log into these values (`engine/sglang/log/`, `engine/vllm/log.rs`):
//! [`crate::engine::Engine::of_log`] asks each engine whether a log is its own, and
//! [`crate::engine::Engine::read_log`] has that engine read it. The launch arguments a log prints
//! are kept as the engine printed them ([`ServerArgsDump`], [`VllmArgs`]) and read by their
//! engine (a run's layout, KV dtype and options: [`ServerRun::layout`]).
//!
//! What a decode sample means is the same for both engines: generated tokens over a logging
//! interval ÷ its wall time, so `step_s = running × accept_len ÷ gen throughput` is the mean
//! time of one decode step *if* the batch was the same throughout; samples where it was not are
//! kept and flagged ([`Unsteady`]).

pub mod launch;
pub mod line;
pub mod memory;
pub mod skip;

pub use launch::{ServerArgsDump, VllmArgs};
pub use line::RankTag;
pub use memory::{PoolSummary, RankMemory};
pub use skip::{SkipCounts, SkipEntry, SkipReason};

use crate::machine::Machine;
use crate::options::{Engine, ServerOptions};
use models::{KvDtype, Layout};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one decode stats line says (SGLang's `Decode batch`, vLLM's stats line), before
/// it becomes a [`DecodeSample`].
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeFields {
    pub running: u32,
    pub tokens: u64,
    pub token_usage: Option<f64>,
    pub cuda_graph: Option<bool>,
    pub gen_throughput: f64,
    pub queue: Option<u32>,
    pub accept_len: Option<f64>,
    pub retracted: Option<u32>,
}

/// One `SpecDecoding metrics` line: the acceptance over the stats interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecDecodeSample {
    pub line: usize,
    pub time: String,
    /// `Mean acceptance length` (tokens per request and step, the bonus token included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_acceptance_length: Option<f64>,
    pub accepted_tokens: u64,
    pub drafted_tokens: u64,
    /// `Per-position acceptance rate`: the share of drafts whose k-th token was accepted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_position: Vec<f64>,
}

/// Schema version of [`ServerLog`] as written out (`--format json`).
pub const SERVER_LOG_SCHEMA_VERSION: u32 = 1;

/// Why a decode sample is not a steady one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Unsteady {
    /// The first decode line of its rank in the run: the interval reaches back to start-up.
    FirstOfRun,
    /// A prefill ran since the previous decode line of the same replica.
    AfterPrefill,
    /// `#running-req` changed since the previous line of the same rank.
    BatchChanged { previous: u32 },
    /// No throughput to divide by (0 tokens/s, or no request running).
    NoThroughput,
    /// The KV tokens moved more than the interval's generated tokens allow at the same
    /// `Running` count: requests finished and others took their places (vLLM's stats lines;
    /// a prompt served from the prefix cache computes no prompt tokens).
    RequestsReplaced { tokens_before: u64 },
}

impl std::fmt::Display for Unsteady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsteady::FirstOfRun => f.write_str("first of run"),
            Unsteady::AfterPrefill => f.write_str("after prefill"),
            Unsteady::BatchChanged { previous } => write!(f, "batch changed (was {previous})"),
            Unsteady::NoThroughput => f.write_str("no throughput"),
            Unsteady::RequestsReplaced { tokens_before } => {
                write!(f, "requests replaced (KV tokens were {tokens_before})")
            }
        }
    }
}

/// One `Decode batch` line as a step-time sample (see the module docs for what it means).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodeSample {
    /// 1-based line in the file.
    pub line: usize,
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
    pub rank: RankTag,
    /// `#running-req` (one micro-batch's under PP, one DP rank's under DP attention).
    pub running: u32,
    /// `#token`: KV tokens in use at the log time.
    pub tokens_in_kv: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<f64>,
    /// `cuda graph:` of the batch logged (absent in old builds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_graph: Option<bool>,
    /// `gen throughput (token/s)`.
    pub gen_throughput_tok_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<u32>,
    /// `accept len:` under speculative decoding: tokens per request and step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_len: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retracted: Option<u32>,
    /// `running × accept_len ÷ gen throughput`, seconds; `None` without throughput.
    pub step_s: Option<f64>,
    /// `#token ÷ #running-req` (a lower bound when requests share a cached prefix).
    pub context_per_request: f64,
    /// No [`Unsteady`] reason.
    pub steady: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_steady: Vec<Unsteady>,
}

/// One `Prefill batch` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillSample {
    pub line: usize,
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
    pub rank: RankTag,
    /// `#new-seq`: requests starting (or continuing a chunked prefill) in this batch.
    pub new_seq: u32,
    /// `#new-token`: prompt tokens computed.
    pub new_tokens: u64,
    /// `#cached-token`: prompt tokens found in the radix cache (not computed).
    pub cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<f64>,
    /// `#running-req` before this batch joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<u32>,
}

impl PrefillSample {
    /// Share of the batch's prompt tokens served from the prefix cache.
    pub fn cache_hit_fraction(&self) -> f64 {
        let all = self.new_tokens + self.cached_tokens;
        if all == 0 {
            0.0
        } else {
            self.cached_tokens as f64 / all as f64
        }
    }
}

/// The memory lines of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMemory {
    /// Per rank, in the order ranks first appear.
    pub ranks: Vec<RankMemory>,
    /// The scheduler's `max_total_num_tokens=…` line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolSummary>,
    /// Memory lines read.
    pub lines: usize,
}

impl RunMemory {
    pub(crate) fn rank_mut(&mut self, rank: RankTag) -> &mut RankMemory {
        let i = match self.ranks.iter().position(|r| r.rank == rank) {
            Some(i) => i,
            None => {
                self.ranks.push(RankMemory {
                    rank,
                    ..RankMemory::default()
                });
                self.ranks.len() - 1
            }
        };
        &mut self.ranks[i]
    }

    fn values(&self, f: impl Fn(&RankMemory) -> Option<u64>) -> Vec<u64> {
        self.ranks.iter().filter_map(f).collect()
    }

    /// Weights of the fullest GPU (`Load weight end. mem usage`).
    pub fn weight_bytes(&self) -> Option<u64> {
        self.values(|r| r.weight_bytes).into_iter().max()
    }

    /// Free memory before loading on the tightest GPU.
    pub fn available_before_load_bytes(&self) -> Option<u64> {
        self.values(|r| r.available_before_load_bytes)
            .into_iter()
            .min()
    }

    /// KV tokens: the scheduler's `max_total_num_tokens`, else the smallest pool logged.
    pub fn kv_tokens(&self) -> Option<u64> {
        self.pool
            .as_ref()
            .and_then(|p| p.max_total_num_tokens)
            .or_else(|| self.values(|r| r.kv_tokens).into_iter().min())
    }

    /// KV pool bytes of the fullest GPU.
    pub fn kv_pool_bytes(&self) -> Option<u64> {
        self.values(RankMemory::kv_pool_bytes).into_iter().max()
    }

    /// Free memory after the pool on the tightest GPU.
    pub fn available_after_pool_bytes(&self) -> Option<u64> {
        self.values(|r| r.available_after_pool_bytes)
            .into_iter()
            .min()
    }

    /// CUDA-graph memory of the fullest GPU, when graphs were captured and logged.
    pub fn cuda_graph_bytes(&self) -> Option<u64> {
        self.values(|r| r.cuda_graph_bytes).into_iter().max()
    }

    /// vLLM's CUDA-graph estimate on the fullest GPU.
    pub fn cuda_graph_estimated_bytes(&self) -> Option<u64> {
        self.values(|r| r.cuda_graph_estimated_bytes)
            .into_iter()
            .max()
    }

    /// Ranks whose weights differ by more than 1% from the fullest (pipeline stages do).
    pub fn ranks_differ(&self) -> bool {
        let w = self.values(|r| r.weight_bytes);
        match (w.iter().min(), w.iter().max()) {
            (Some(&lo), Some(&hi)) => hi as f64 > lo as f64 * 1.01,
            _ => false,
        }
    }
}

/// One server run of the log: from a `server_args=` line to the next.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerRun {
    /// 0-based run number in the file.
    pub index: usize,
    /// Line where it starts (its `server_args=` line, or 1 for lines before any dump).
    pub first_line: usize,
    /// The dump; `None` for lines logged before any `server_args=` (an excerpt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_args: Option<ServerArgsDump>,
    /// A vLLM run's `non-default args` ([`vllm`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vllm_args: Option<VllmArgs>,
    pub memory: RunMemory,
    pub decode: Vec<DecodeSample>,
    pub prefill: Vec<PrefillSample>,
    /// vLLM's `SpecDecoding metrics` lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec_decode: Vec<SpecDecodeSample>,
    /// The fused-MoE config files the engine looked for and did not find, so that its Triton MoE
    /// ran on the default config ([`default_moe_config_file`]), each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moe_default_configs: Vec<String>,
}

/// Everything read from a server log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerLog {
    /// Always [`SERVER_LOG_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The file it came from.
    pub source: String,
    /// The engine that wrote it, when not SGLang.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Physical lines read (`\r` pieces counted once per line).
    pub lines: usize,
    pub runs: Vec<ServerRun>,
    pub skipped: SkipCounts,
}

impl ServerRun {
    /// The engine whose launch arguments the run holds (vLLM's reader keeps its `non-default
    /// args`, SGLang's its `server_args` dump); SGLang's for an excerpt without either, as
    /// SGLang's reader is the registry's fallback.
    pub fn engine(&self) -> Engine {
        if self.vllm_args.is_some() {
            Engine::Vllm
        } else {
            Engine::Sglang
        }
    }

    /// The parallel layout the run's launch arguments state, read by its engine
    /// ([`crate::engine::ServingEngine::run_layout`]); `None` without them.
    pub fn layout(&self) -> Option<Layout> {
        self.engine().rules().run_layout(self)
    }

    /// The KV-cache dtype of the run, read by its engine
    /// ([`crate::engine::ServingEngine::run_kv_dtype`]).
    pub fn kv_dtype(&self) -> Option<KvDtype> {
        self.engine().rules().run_kv_dtype(self)
    }

    /// The model the run's launch arguments name.
    pub fn model(&self) -> Option<String> {
        self.engine().rules().run_model(self)
    }

    /// The options the run ran with on `layout` of `machine` and the notes on them, read by its
    /// engine ([`crate::engine::ServingEngine::logged_options`]); `base` is the command's
    /// options, which an SGLang dump overrides where it speaks.
    pub fn logged_options(
        &self,
        base: &ServerOptions,
        layout: &Layout,
        machine: &Machine,
    ) -> Result<(ServerOptions, Vec<String>), String> {
        let (mut opts, notes) = self
            .engine()
            .rules()
            .logged_options(base, self, layout, machine)?;
        // the engine said it found no tuned fused-MoE file: what it runs is its default config
        opts.moe_default_config |= !self.moe_default_configs.is_empty();
        Ok((opts, notes))
    }

    /// The launch the run's arguments state, read by its engine
    /// ([`crate::engine::ServingEngine::logged_launch`]); `None` without them.
    pub fn launch(&self) -> Result<Option<crate::engine::Launch>, crate::engine::LaunchError> {
        self.engine().rules().logged_launch(self)
    }

    /// Whether `s` comes from the rank whose lines stand for the run: every DP replica, but
    /// only the first pipeline stage (each stage's TP0 logs the same micro-batches).
    pub fn is_reporting_rank(&self, s: &DecodeSample) -> bool {
        let first_pp = self.decode.iter().filter_map(|d| d.rank.pp).min();
        s.rank.pp == first_pp
    }

    /// Steady samples with a step time, from the reporting ranks.
    pub fn steady_samples(&self) -> impl Iterator<Item = &DecodeSample> {
        self.decode
            .iter()
            .filter(|s| s.steady && s.step_s.is_some() && self.is_reporting_rank(s))
    }

    /// What the decode lines' own `cuda graph:` fields say of the run's graph mode, with the
    /// first line that shows it: eager (`true`) when no line says `True` and one of at most
    /// `max_bs` running requests (the largest batch graphs were captured for) says `False`;
    /// graphs on (`false`) when any says `True`; `None` when the lines do not say.
    pub fn logged_eager(&self, max_bs: u32) -> Option<(bool, &DecodeSample)> {
        if let Some(g) = self.decode.iter().find(|s| s.cuda_graph == Some(true)) {
            return Some((false, g));
        }
        self.decode
            .iter()
            .find(|s| s.cuda_graph == Some(false) && s.running <= max_bs)
            .map(|s| (true, s))
    }

    /// Decode samples of the reporting ranks that are flagged (kept, not steady).
    pub fn flagged_samples(&self) -> impl Iterator<Item = &DecodeSample> {
        self.decode
            .iter()
            .filter(|s| !s.steady && self.is_reporting_rank(s))
    }
}

impl ServerLog {
    /// Whether any decode sample has a step time.
    pub fn has_usable_sample(&self) -> bool {
        self.runs
            .iter()
            .any(|r| r.decode.iter().any(|d| d.step_s.is_some()))
    }
}

/// An empty log of `source` written by `engine` (`None`: SGLang), and its first run.
pub(crate) fn start(source: &str, engine: Option<Engine>) -> (ServerLog, ServerRun) {
    let log = ServerLog {
        schema_version: SERVER_LOG_SCHEMA_VERSION,
        source: source.to_string(),
        engine,
        ..ServerLog::default()
    };
    let run = ServerRun {
        first_line: 1,
        ..ServerRun::default()
    };
    (log, run)
}

/// The non-empty lines of `text` (`\r` pieces each a line, [`line::physical_lines`]), ANSI
/// colours removed and trimmed, with their 1-based line numbers.
pub(crate) fn clean_lines(text: &str) -> impl Iterator<Item = (usize, std::borrow::Cow<'_, str>)> {
    use std::borrow::Cow;
    line::physical_lines(text).filter_map(|(n, raw)| {
        let clean = match line::strip_ansi(raw) {
            Cow::Borrowed(b) => Cow::Borrowed(b.trim()),
            Cow::Owned(o) => Cow::Owned(o.trim().to_string()),
        };
        (!clean.is_empty()).then_some((n, clean))
    })
}

/// Per-rank state for flagging unsteady samples.
#[derive(Default)]
pub(crate) struct Tracker {
    /// Last `#running-req` per exact rank.
    pub(crate) last_running: BTreeMap<RankTag, u32>,
    /// A prefill since the last decode line, per DP replica (prefills of any stage or TP rank
    /// of that replica count).
    pub(crate) prefill_since: BTreeMap<Option<u32>, bool>,
}

/// The config file named by an engine's warning that its Triton fused MoE runs on the default
/// config (none tuned for this expert count, shard width and GPU), or `None` for any other line.
/// SGLang: `Using default MoE kernel config. Performance might be sub-optimal! Config file not
/// found at …/E=60,N=1408,device_name=NVIDIA_H100_80GB_HBM3.json, you can create them with …`
/// (`fused_moe_triton_config.py`); vLLM: `Using default MoE config. Performance might be
/// sub-optimal! Config file not found at ['…/E=128,N=192,device_name=….json']`
/// (`fused_moe.py`, `get_moe_configs`). The line is searched whole: SGLang writes it during CUDA
/// graph capture, often behind a progress bar on the same line. The file's own name is kept
/// (its folders are the user's), `unnamed` where the line names none.
pub(crate) fn default_moe_config_file(line: &str) -> Option<String> {
    let at = [
        "Using default MoE kernel config",
        "Using default MoE config",
    ]
    .iter()
    .find_map(|w| line.find(w))?;
    let rest = &line[at..];
    let Some((_, path)) = rest.split_once("Config file not found at") else {
        return Some("unnamed".into());
    };
    let path = path.split(", you can").next().unwrap_or(path);
    let path = path
        .trim()
        .trim_matches(|c| matches!(c, '[' | ']' | '\'' | '"' | ' '));
    let first = path.split("', '").next().unwrap_or(path);
    let name = first.rsplit(['/', '\\']).next().unwrap_or(first).trim();
    Some(if name.is_empty() {
        "unnamed".into()
    } else {
        name.to_string()
    })
}

impl ServerRun {
    /// Reads `line` as the engine's default fused-MoE config warning
    /// ([`default_moe_config_file`]), keeping its file once; `true` when it was one. Each
    /// engine's parser asks before its own line grammar: SGLang writes the warning behind a
    /// CUDA-graph progress bar, with no line header of its own.
    pub(crate) fn read_moe_default_warning(&mut self, line: &str) -> bool {
        let Some(file) = default_moe_config_file(line) else {
            return false;
        };
        if !self.moe_default_configs.contains(&file) {
            self.moe_default_configs.push(file);
        }
        true
    }
}

/// uvicorn's access lines: `INFO:     127.0.0.1:42766 - "POST /v1/… HTTP/1.1" 200 OK`.
pub(crate) fn is_http_access(msg: &str) -> bool {
    msg.contains(" HTTP/") && msg.contains(" - \"")
}

pub(crate) fn decode_sample(
    n: usize,
    l: &line::LogLine,
    d: DecodeFields,
    tracker: &mut Tracker,
) -> DecodeSample {
    let mut not_steady = Vec::new();
    match tracker.last_running.insert(l.rank, d.running) {
        None => not_steady.push(Unsteady::FirstOfRun),
        Some(prev) if prev != d.running => {
            not_steady.push(Unsteady::BatchChanged { previous: prev })
        }
        Some(_) => {}
    }
    if tracker.prefill_since.insert(l.rank.dp, false) == Some(true) {
        not_steady.push(Unsteady::AfterPrefill);
    }
    let tokens_per_step = d.running as f64 * d.accept_len.unwrap_or(1.0);
    let step_s =
        (d.gen_throughput > 0.0 && d.running > 0).then(|| tokens_per_step / d.gen_throughput);
    if step_s.is_none() {
        not_steady.push(Unsteady::NoThroughput);
    }
    DecodeSample {
        line: n,
        time: l.time.to_string(),
        time_s: l.time_s,
        rank: l.rank,
        running: d.running,
        tokens_in_kv: d.tokens,
        token_usage: d.token_usage,
        cuda_graph: d.cuda_graph,
        gen_throughput_tok_s: d.gen_throughput,
        queue: d.queue,
        accept_len: d.accept_len,
        retracted: d.retracted,
        step_s,
        context_per_request: d.tokens as f64 / d.running.max(1) as f64,
        steady: not_steady.is_empty(),
        not_steady,
    }
}

#[cfg(test)]
mod default_moe_tests {
    use super::default_moe_config_file as file;

    /// Each engine's wording, a progress bar in front, a list of paths, and lines that are no
    /// such warning.
    #[test]
    fn each_engine_s_default_moe_warning_names_its_file() {
        let sglang = "[2026-02-04 11:30:00] Using default MoE kernel config. Performance might be sub-optimal! Config file not found at /x/configs/triton_3_5_1/E=60,N=1408,device_name=NVIDIA_H100_80GB_HBM3.json, you can create them with https://github.com/sgl-project/sglang";
        let vllm = "(Worker_TP3 pid=41702) WARNING 10-06 15:57:52 [fused_moe.py:798] Using default MoE config. Performance might be sub-optimal! Config file not found at ['/v/configs/E=128,N=192,device_name=NVIDIA_GeForce_RTX_3090.json']";
        let behind_a_bar = "Capturing batches (bs=4):   0%| | 0/3 [00:00<?, ?it/s][2026-02-04 11:30:00] Using default MoE kernel config. Performance might be sub-optimal!";
        let cases = [
            (
                sglang,
                Some("E=60,N=1408,device_name=NVIDIA_H100_80GB_HBM3.json"),
            ),
            (
                vllm,
                Some("E=128,N=192,device_name=NVIDIA_GeForce_RTX_3090.json"),
            ),
            (behind_a_bar, Some("unnamed")),
            ("[2026-02-04 11:30:00] Decode batch, #running-req: 1", None),
            ("Using default attention backend", None),
        ];
        for (line, want) in cases {
            assert_eq!(file(line).as_deref(), want, "{line}");
        }
    }
}
