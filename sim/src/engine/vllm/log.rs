//! vLLM's (V1) own server log (`vllm serve … 2>&1 | tee server.log`), read into the same
//! [`ServerLog`] the SGLang reader makes: runs, memory per rank, decode samples.
//!
//! Formats, read from vLLM v0.11–v0.13 (each message's source file and function):
//! - the header, `vllm/logger.py` (`_FORMAT`, `_DATE_FORMAT`): `LEVEL MM-DD HH:MM:SS
//!   [file.py:line] message`, prefixed by the multiprocessing worker's name
//!   (`(EngineCore_DP0 pid=212) `, `(Worker_TP3 pid=…) `, `(APIServer pid=1) `); ANSI colours and
//!   `\r` progress bars as in SGLang's logs ([`super::line`]);
//! - `non-default args: {'model_tag': '…', 'tensor_parallel_size': 8, …}`: the launch's
//!   arguments that differ from the defaults, a Python dict (`entrypoints/utils.py`,
//!   `log_non_default_args`); each one starts a run, as SGLang's `server_args=` does;
//! - `Model loading took X GiB [memory] and Y seconds` (`v1/worker/gpu_model_runner.py`,
//!   `load_model`), `Available KV cache memory: X GiB` (`v1/worker/gpu_worker.py`,
//!   `determine_available_memory`; `reserved X GiB memory for KV Cache as specified by
//!   kv_cache_memory_bytes` where `--kv-cache-memory-bytes` is given), `GPU KV cache size: N tokens` and `Maximum concurrency for
//!   N tokens per request: X.XXx` (`v1/core/kv_cache_utils.py`, `_report_kv_cache_config`, with
//!   thousands separators), `Graph capturing finished in N secs, took X GiB`
//!   (`gpu_model_runner.py`, `capture_model`); vLLM ≥ 0.19's graph estimate, `Estimated CUDA
//!   graph memory: X GiB total` (`gpu_model_runner.py`, `profile_cudagraph_memory`), `CUDA graph
//!   pool memory: A GiB (actual), B GiB (estimated), difference: …` (`gpu_worker.py`,
//!   `compile_or_warm_up_model`), and the environment later lines prove ([`proven_env`]:
//!   whether the budget counted the estimate, the community build's PCIe all-reduce);
//! - the periodic stats, every `VLLM_LOG_STATS_INTERVAL` (10 s) of the API server
//!   (`v1/metrics/loggers.py`, `LoggingStatLogger.log`): `Engine 000: Avg prompt throughput:
//!   X tokens/s, Avg generation throughput: Y tokens/s, Running: N reqs, Waiting: M reqs, GPU KV
//!   cache usage: P%, Prefix cache hit rate: Q%` (newer builds add fields; read by name);
//! - right after it under speculative decoding (`v1/spec_decode/metrics.py`,
//!   `SpecDecodingLogging.log`): `SpecDecoding metrics: Mean acceptance length: A, Accepted
//!   throughput: …, Drafted throughput: …, Accepted: N tokens, Drafted: M tokens, Per-position
//!   acceptance rate: r1, r2, …, Avg Draft acceptance rate: R%` (older builds: `Draft
//!   acceptance rate: R%, Accepted: N tokens, Drafted: M tokens`, no length).
//!
//! A stats line is a [`DecodeSample`] with SGLang's meaning: generation tokens over the interval
//! ÷ its wall time, so `step_s = Running × acceptance length ÷ Y` if the batch was the same
//! throughout. A prompt throughput above 0 means prefill ran in the interval (flagged
//! [`Unsteady::AfterPrefill`]). `#token` is the KV usage × the logged cache size (block-granular:
//! up to 15 tokens a request above the context).

use crate::engine::log::line::{LogLine, RankTag, apply_tag, parse_time};
use crate::engine::log::memory::MemoryLine;
use crate::engine::log::{
    DecodeFields, DecodeSample, PoolSummary, RankMemory, ServerLog, ServerRun, SkipReason, Tracker,
    Unsteady, clean_lines, decode_sample, is_http_access, start,
};
use crate::engine::vllm::args::VllmLine;
use crate::machine::Machine;
use crate::options::ServerOptions;
use models::{KvDtype, Layout};

pub use crate::engine::log::SpecDecodeSample;
pub use crate::engine::vllm::args::dump::VllmArgs;

const GIB: f64 = (1u64 << 30) as f64;
/// The messages only vLLM writes: any one marks a log as vLLM's.
const MARKERS: [&str; 4] = [
    "non-default args: {",
    "GPU KV cache size:",
    "Avg generation throughput:",
    "SpecDecoding metrics:",
];

impl ServerRun {
    /// A vLLM run's launch line as vLLM read it (its `non-default args`); `None` for an SGLang
    /// run, or one whose arguments vLLM's table refuses.
    pub fn vllm_line(&self) -> Option<VllmLine> {
        let a = self.vllm_args.as_ref()?;
        VllmLine::parse(&a.line_with_env()).ok().flatten()
    }
}

/// The layout a vLLM run's launch arguments state; `None` where it hangs on whether the model
/// has routed experts (`-dp` without `--enable-expert-parallel`: attention DP for a MoE model,
/// independent servers for a dense one), which the log's arguments do not say.
pub fn run_layout(run: &ServerRun) -> Option<Layout> {
    let line = run.vllm_line()?;
    if line.dp_without_ep() {
        return None;
    }
    let s = line.sizes(true).ok()?;
    Some(Layout {
        tp: s.tp.unwrap_or(1),
        pp: s.pp.unwrap_or(1),
        ep: s.ep.unwrap_or(1),
        dp_attention: s.enable_dp_attention,
    })
}

/// The KV-cache dtype a vLLM run's launch arguments state.
pub fn run_kv_dtype(run: &ServerRun) -> Option<KvDtype> {
    run.vllm_line()?.knobs().ok()?.kv_cache_dtype
}

/// The options a vLLM run ran with on `layout` of `machine`, from its launch arguments, with
/// the acceptance its `SpecDecoding metrics` lines measured; `Err` says why its arguments
/// cannot be read.
pub fn logged_options(
    run: &ServerRun,
    layout: &Layout,
    machine: &Machine,
) -> Result<(ServerOptions, Vec<String>), String> {
    match run.vllm_line() {
        Some(line) => match line.server_options(layout, machine) {
            Ok((o, _)) => Ok((logged_vllm_options(o, run), Vec::new())),
            Err(e) => Err(format!("its non-default args: {e}")),
        },
        None => Err("its non-default args: not read as a vLLM launch line".to_string()),
    }
}

/// A vLLM run's options with the acceptance length its `SpecDecoding metrics` lines measured
/// where the launch states none (as `--records` takes a source's measured acceptance).
/// Under `B12X_MOE_FORCE_A16=1`, also the b12x W4A16 build its engine version's date names.
pub(crate) fn logged_vllm_options(mut o: ServerOptions, run: &ServerRun) -> ServerOptions {
    if let Some(s) = o.speculative.as_mut().filter(|s| s.accept_length.is_none()) {
        s.accept_length = mean_acceptance_length(&run.spec_decode);
    }
    let version = run
        .vllm_args
        .as_ref()
        .and_then(|a| a.engine_version.as_deref());
    if o.b12x_moe_a16 && o.b12x_a16_build.is_none() {
        o.b12x_a16_build = version.and_then(crate::b12x_build::B12xA16Build::of_text);
    }
    o
}

/// Whether `text` is a vLLM server's log: any message only vLLM writes.
pub fn claims(text: &str) -> bool {
    MARKERS.iter().any(|m| text.contains(m))
}

/// Splits a vLLM log line; `None` when it has no `LEVEL MM-DD HH:MM:SS [file:line]` header.
pub fn parse_line(line: &str) -> Option<LogLine<'_>> {
    let mut rank = RankTag::default();
    let mut rest = line;
    // worker processes writing at once interleave: `(Worker pid=353) (Worker pid=354) WARNING …`;
    // the last name is the writer's
    while let Some(r) = rest.strip_prefix('(') {
        let (process, after) = r.split_once(") ")?;
        rank = RankTag::default();
        for t in process.split(['_', ' ']) {
            apply_tag(&mut rank, t);
        }
        rest = after;
    }
    let (level, rest) = rest.split_once(' ')?;
    if !["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"].contains(&level) {
        return None;
    }
    let rest = rest.trim_start();
    let start = line.len() - rest.len();
    let (date, rest) = rest.split_once(' ')?;
    let (time, rest) = rest.split_once(' ')?;
    let time_s = Some(parse_time(date, time)?);
    let message = match rest.strip_prefix('[') {
        Some(r) => r.split_once("] ").map_or("", |(_, m)| m),
        None => rest,
    };
    let time_len = date.len() + 1 + time.len();
    Some(LogLine {
        time: line.get(start..start + time_len).unwrap_or(time),
        time_s,
        rank,
        message,
    })
}

/// The number that starts `text` (`1,234.5 tokens/s` → 1234.5, `45.2%`, `1.83x`): its first
/// word, thousands separators dropped; `None` when that word is no finite number.
fn leading_number(text: &str) -> Option<f64> {
    let word = text.split_whitespace().next()?;
    word.trim_end_matches(['%', 'x'])
        .replace(',', "")
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
}

/// `key: value` fields of a stats line; a piece without `:` continues the previous value (the
/// per-position rates are themselves comma-separated).
fn fields(text: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for piece in text.split(", ") {
        match piece.split_once(": ") {
            Some((k, v)) => out.push((k.trim(), v.trim().to_string())),
            None => {
                if let Some(last) = out.last_mut() {
                    last.1.push_str(", ");
                    last.1.push_str(piece.trim());
                }
            }
        }
    }
    out
}

fn field<'a>(f: &'a [(&str, String)], key: &str) -> Option<&'a str> {
    f.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
}

/// A required number field: absent → the line was cut; present but no number → unparsable.
fn need(f: &[(&str, String)], key: &str) -> Result<f64, SkipReason> {
    let v = field(f, key).ok_or(SkipReason::Truncated)?;
    leading_number(v).ok_or_else(|| SkipReason::UnparsableNumber(key.to_string()))
}

/// What one stats line says.
struct Stats {
    engine: Option<u32>,
    prompt_tok_s: f64,
    gen_tok_s: f64,
    running: u32,
    waiting: u32,
    kv_usage: f64,
}

fn stats(message: &str) -> Option<Result<Stats, SkipReason>> {
    let at = message.find("Avg prompt throughput:")?;
    let engine = message[..at]
        .trim()
        .strip_prefix("Engine ")
        .and_then(|e| e.trim_end_matches(':').parse().ok());
    let f = fields(&message[at..]);
    let count = |key| {
        need(&f, key).and_then(|x| {
            (x >= 0.0 && x <= f64::from(u32::MAX))
                .then_some(x as u32)
                .ok_or_else(|| SkipReason::UnparsableNumber(key.to_string()))
        })
    };
    Some((|| {
        Ok(Stats {
            engine,
            prompt_tok_s: need(&f, "Avg prompt throughput")?,
            gen_tok_s: need(&f, "Avg generation throughput")?,
            running: count("Running")?,
            waiting: count("Waiting")?,
            kv_usage: need(&f, "GPU KV cache usage")? / 100.0,
        })
    })())
}

fn spec_decode(
    n: usize,
    l: &LogLine,
    message: &str,
) -> Option<Result<SpecDecodeSample, SkipReason>> {
    let rest = message.split_once("SpecDecoding metrics:")?.1;
    let f = fields(rest);
    Some((|| {
        let tokens = |key| need(&f, key).map(|x| x.max(0.0) as u64);
        Ok(SpecDecodeSample {
            line: n,
            time: l.time.to_string(),
            mean_acceptance_length: field(&f, "Mean acceptance length")
                .map(|v| {
                    leading_number(v).ok_or_else(|| {
                        SkipReason::UnparsableNumber("Mean acceptance length".into())
                    })
                })
                .transpose()?,
            accepted_tokens: tokens("Accepted")?,
            drafted_tokens: tokens("Drafted")?,
            per_position: field(&f, "Per-position acceptance rate")
                .map(|v| v.split(',').filter_map(leading_number).collect())
                .unwrap_or_default(),
        })
    })())
}

/// `X GiB` after `key` in `message`, in bytes.
fn gib_after(message: &str, key: &str) -> Option<Result<u64, SkipReason>> {
    let rest = message.split_once(key)?.1;
    Some(
        leading_number(rest)
            .filter(|x| *x >= 0.0 && *x < 1e9 && rest.trim_start().contains("GiB"))
            .map(|x| (x * GIB).round() as u64)
            .ok_or_else(|| SkipReason::UnparsableNumber(key.trim().to_string())),
    )
}

/// The memory lines; `None` when `message` is none of them.
fn memory(message: &str, pool: &mut PoolSummary) -> Option<Result<Option<MemoryLine>, SkipReason>> {
    if let Some(w) = gib_after(message, "Model loading took") {
        return Some(w.map(|usage| {
            Some(MemoryLine::LoadEnd {
                available: 0,
                usage,
            })
        }));
    }
    // with `--kv-cache-memory-bytes` the worker prints no "Available" line but "Initial free
    // memory X GiB, reserved Y GiB memory for KV Cache as specified by kv_cache_memory_bytes
    // config and skipped memory profiling…" (`determine_available_memory`, @28be48fa)
    let given = message
        .contains("as specified by kv_cache_memory_bytes")
        .then(|| gib_after(message, ", reserved"))
        .flatten();
    if let Some(kv) = given.or_else(|| gib_after(message, "Available KV cache memory:")) {
        return Some(kv.map(|b| {
            Some(MemoryLine::KvAllocated {
                tokens: 0,
                sizes: vec![("KV".into(), b)],
            })
        }));
    }
    if let Some(e) = gib_after(message, "Estimated CUDA graph memory:") {
        return Some(e.map(|b| Some(MemoryLine::VllmGraphEstimate { estimated: b })));
    }
    if let Some(rest) = message
        .split_once("CUDA graph pool memory:")
        .map(|(_, r)| r)
    {
        // `A GiB (actual), B GiB (estimated), difference: …`: the estimate (the actual pool is
        // the `Graph capturing finished … took` line's)
        let estimated = rest
            .split_once("(actual),")
            .and_then(|(_, e)| gib_after(e, ""));
        return Some(match estimated {
            Some(e) => e.map(|b| Some(MemoryLine::VllmGraphEstimate { estimated: b })),
            None => Err(SkipReason::Truncated),
        });
    }
    if let Some(g) = message
        .split_once("Graph capturing finished in")
        .map(|(_, r)| r)
    {
        return Some(match gib_after(g, "took") {
            Some(b) => b.map(|b| {
                Some(MemoryLine::CudaGraphEnd {
                    usage: Some(b),
                    available: None,
                })
            }),
            None => Ok(None),
        });
    }
    let mut seen = false;
    if let Some(rest) = message.split_once("GPU KV cache size:").map(|(_, r)| r) {
        seen = true;
        match leading_number(rest) {
            Some(t) if t >= 0.0 => pool.max_total_num_tokens = Some(t as u64),
            _ => {
                return Some(Err(SkipReason::UnparsableNumber(
                    "GPU KV cache size".into(),
                )));
            }
        }
    }
    if let Some(rest) = message
        .split_once("Maximum concurrency for")
        .map(|(_, r)| r)
    {
        seen = true;
        let Some((len, x)) = rest.split_once("tokens per request:") else {
            return Some(Err(SkipReason::Truncated));
        };
        match (leading_number(len), leading_number(x)) {
            (Some(len), Some(x)) if len >= 0.0 => {
                pool.context_len = Some(len as u64);
                pool.max_concurrency = Some(x);
            }
            _ => {
                return Some(Err(SkipReason::UnparsableNumber(
                    "Maximum concurrency".into(),
                )));
            }
        }
    }
    seen.then_some(Ok(None))
}

/// An environment setting a log line proves, which `non-default args` does not print:
/// - the graph-profiling note (`v1/worker/gpu_worker.py`, `determine_available_memory`): `CUDA
///   graph memory profiling is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0) …`, or with
///   it on `… To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.` (the estimate is then
///   in the KV budget);
/// - the community build's `PCIe custom allreduce enabled via VLLM_ENABLE_PCIE_ALLREDUCE=1
///   (backend=cpp, …)` (rtx6kpro GLM-5.1 / Kimi-K2.6 images; its "Using dynamic C++ custom
///   allreduce cutoff (cutoff=57344 bytes" is [`crate::engine::vllm::args::VLLM_PCIE_ALLREDUCE_CUTOFF_BYTES`]).
fn proven_env(message: &str) -> Option<(&'static str, &'static str)> {
    const ESTIMATE: &str = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS";
    if message.contains(ESTIMATE) && message.contains("CUDA graph memory") {
        let off = message.contains("profiling is disabled");
        return Some((ESTIMATE, if off { "0" } else { "1" }));
    }
    // the fork's b12x MoE warns when it runs its W4A16 kernels (`b12x_moe.py`: "B12X_MOE_FORCE_A16=1
    // changes B12X MoE activation numerics")
    if message.contains("B12X_MOE_FORCE_A16=1 changes") {
        return Some((crate::b12x_build::B12X_MOE_FORCE_A16, "1"));
    }
    message
        .contains("PCIe custom allreduce enabled via VLLM_ENABLE_PCIE_ALLREDUCE=1")
        .then_some(("VLLM_ENABLE_PCIE_ALLREDUCE", "1"))
}

/// The version in V1's engine start line (`v1/engine/core.py`: `Initializing a V1 LLM engine
/// (v0.20.2rc1.dev249+glmkimirebase20260514) with config: …`).
fn engine_version(message: &str) -> Option<&str> {
    let rest = message.split_once("Initializing a V1 LLM engine (v")?.1;
    rest.split_once(')')
        .map(|(v, _)| v)
        .filter(|v| !v.is_empty())
}

/// Whether a run has anything worth keeping.
fn has_content(run: &ServerRun) -> bool {
    run.vllm_args.is_some() || !run.decode.is_empty() || run.memory.lines > 0
}

/// Parses a vLLM log; never fails (see [`super::load`]).
pub fn parse(text: &str, source: &str) -> ServerLog {
    let (mut log, mut run) = start(source, Some(crate::engine::Engine::Vllm));
    let mut tracker = Tracker::default();
    for (n, clean) in clean_lines(text) {
        let trimmed: &str = &clean;
        if run.read_moe_default_warning(trimmed) {
            continue;
        }
        let Some(l) = parse_line(trimmed) else {
            // uvicorn's lines (`INFO:     127.0.0.1:… "POST …" 200 OK`), behind the process name
            let bare = trimmed.split_once(") ").map_or(trimmed, |(_, r)| r);
            let reason = if is_http_access(bare) || bare.starts_with("INFO:") {
                SkipReason::HttpAccess
            } else {
                SkipReason::Foreign
            };
            log.skipped.add(&reason, n);
            continue;
        };
        let msg = l.message;
        if let Some(args) = msg.split_once("non-default args:").map(|(_, a)| a) {
            match crate::engine::vllm::args::dump::parse(args) {
                Some(a) => {
                    let done = std::mem::take(&mut run);
                    if has_content(&done) {
                        log.runs.push(done);
                    }
                    run = ServerRun {
                        index: log.runs.len(),
                        first_line: n,
                        vllm_args: Some(a),
                        ..ServerRun::default()
                    };
                    tracker = Tracker::default();
                }
                None => log.skipped.add(&SkipReason::NotADump, n),
            }
            continue;
        }
        let result = read_message(n, &l, &mut run, &mut tracker);
        if let Err(reason) = result {
            log.skipped.add(&reason, n);
        }
    }
    if has_content(&run) {
        run.index = log.runs.len();
        log.runs.push(run);
    }
    log.lines = text.lines().count();
    log
}

/// The previous sample's KV tokens when `s` cannot be the same requests decoding on: at the
/// same `Running` count the cache moved by more than the tokens generated over the interval,
/// one block a request (vLLM allocates by block) and the 0.1% the printed usage is rounded to.
fn replaced(prev: Option<&DecodeSample>, s: &DecodeSample, pool: Option<u64>) -> Option<u64> {
    let prev = prev.filter(|p| p.rank == s.rank && p.running == s.running && s.running > 0)?;
    let dt = Some(s.time_s? - prev.time_s?).filter(|dt| *dt > 0.0)?;
    let generated = s.gen_throughput_tok_s * dt;
    let block = f64::from(super::VLLM_SPARSE_MLA_BLOCK_SIZE);
    let slack = generated + f64::from(s.running) * block + 0.001 * pool? as f64;
    let moved = (s.tokens_in_kv as f64 - prev.tokens_in_kv as f64).abs();
    (moved > slack).then_some(prev.tokens_in_kv)
}

/// One message of a run: a stats, speculative-decoding or memory line, else noise.
fn read_message(
    n: usize,
    l: &LogLine,
    run: &mut ServerRun,
    tracker: &mut Tracker,
) -> Result<(), SkipReason> {
    let msg = l.message;
    if let Some(s) = stats(msg) {
        let s = s?;
        let mut rank = l.rank;
        rank.dp = s.engine.or(rank.dp);
        if s.prompt_tok_s > 0.0 {
            tracker.prefill_since.insert(rank.dp, true);
        }
        let kv_tokens = run
            .memory
            .pool
            .as_ref()
            .and_then(|p| p.max_total_num_tokens);
        let fields = DecodeFields {
            running: s.running,
            tokens: kv_tokens.map_or(0, |t| (s.kv_usage * t as f64).round() as u64),
            token_usage: Some(s.kv_usage),
            cuda_graph: graph_capture_limit(run).map(|max| s.running <= max),
            gen_throughput: s.gen_tok_s,
            queue: Some(s.waiting),
            accept_len: None,
            retracted: None,
        };
        let line = LogLine { rank, ..l.clone() };
        let mut sample = decode_sample(n, &line, fields, tracker);
        if let Some(before) = replaced(run.decode.last(), &sample, kv_tokens) {
            sample.not_steady.push(Unsteady::RequestsReplaced {
                tokens_before: before,
            });
            sample.steady = false;
        }
        run.decode.push(sample);
        return Ok(());
    }
    if let Some(sd) = spec_decode(n, l, msg) {
        let sd = sd?;
        // the stats line of the same interval comes just before (`LoggingStatLogger.log`)
        if let (Some(a), Some(last)) = (sd.mean_acceptance_length, run.decode.last_mut())
            && last.accept_len.is_none()
        {
            last.accept_len = Some(a);
            last.step_s = last.step_s.map(|s| s * a);
        }
        run.spec_decode.push(sd);
        return Ok(());
    }
    if let Some(version) = engine_version(msg) {
        if let Some(a) = run.vllm_args.as_mut() {
            a.engine_version.get_or_insert_with(|| version.to_string());
        }
        return Ok(());
    }
    if let Some((name, value)) = proven_env(msg) {
        if let Some(a) = run.vllm_args.as_mut() {
            a.prove_env(name, value);
        }
        return Ok(());
    }
    let mut pool = run.memory.pool.clone().unwrap_or_default();
    match memory(msg, &mut pool) {
        Some(m) => {
            let m = m?;
            run.memory.lines += 1;
            if pool != PoolSummary::default() {
                run.memory.pool = Some(pool);
            }
            if let Some(m) = m {
                apply(run.memory.rank_mut(l.rank), m);
            }
            Ok(())
        }
        None => Err(SkipReason::OtherLogLine),
    }
}

/// The largest batch a run replays as a CUDA graph: 0 under `--enforce-eager` (or
/// `cudagraph_mode` NONE), else the capture limit ([`crate::engine::VLLM_MAX_CAPTURE_SIZE`]);
/// `None` without the run's arguments. A decode batch above it runs eagerly.
fn graph_capture_limit(run: &ServerRun) -> Option<u32> {
    let k = run.vllm_line()?.knobs().ok()?;
    Some(if k.disable_cuda_graph {
        0
    } else {
        k.cuda_graph_max_bs
            .unwrap_or(crate::engine::VLLM_MAX_CAPTURE_SIZE)
    })
}

/// Records a vLLM memory figure on its rank: the weights, the cache budget, the graphs.
fn apply(r: &mut RankMemory, m: MemoryLine) {
    match m {
        MemoryLine::LoadEnd { usage, .. } => r.weight_bytes = Some(usage),
        MemoryLine::KvAllocated { sizes, .. } => r.kv_sizes = sizes,
        other => r.apply(other),
    }
}

/// The mean acceptance length over a run's `SpecDecoding metrics` lines, weighted by drafted
/// tokens: `1 + accepted ÷ drafts` ([`crate::acceptance::length_from_counts`]), each line's
/// drafts being `drafted ÷ (per-position count)`.
pub fn mean_acceptance_length(samples: &[SpecDecodeSample]) -> Option<f64> {
    let (mut accepted, mut drafts) = (0.0, 0.0);
    for s in samples {
        let k = s.per_position.len();
        if k == 0 || s.drafted_tokens == 0 {
            continue;
        }
        accepted += s.accepted_tokens as f64;
        drafts += s.drafted_tokens as f64 / k as f64;
    }
    crate::acceptance::length_from_counts(accepted, drafts)
}
