//! A predicted run written as bench_serving writes a measured one: one JSON object per line,
//! appended to `--output-file`, in the key layout of `python/sglang/benchmark/serving.py` @
//! `00f9ec47` (the layout [`super::read`] reads; see its docs): `tag`, `backend`, `dataset_name`,
//! `request_rate` (bare `Infinity` for inf, as Python's `json.dumps` writes it), …,
//! `server_info`, `duration`, `completed`, token totals, throughputs, mean/median/p99 of E2E
//! latency, TTFT, TPOT and ITL, `concurrency`, `accept_length`, `max_concurrent_requests`. So the
//! user's plotting scripts read predicted and measured lines alike.
//!
//! Keys the simulation does not produce (`std_*`, `p90_*`, `p95_*`, `max_output_tokens_per_s`)
//! are left out rather than invented; a `shardwise` object says the line is a prediction and
//! of which machine and layout, and `tag` starts with `shardwise-predicted`.

use crate::options::ServerOptions;
use crate::serving::RunReport;
use crate::workload::{Dataset, Workload};
use serde_json::{Map, Value, json};
use std::path::Path;

/// What bench_serving would know about the run besides its metrics.
#[derive(Debug, Clone)]
pub struct BenchLineContext<'a> {
    /// `--backend`.
    pub backend: &'a str,
    /// `--random-input-len` / `--random-output-len` as given to bench_serving (it writes them
    /// whatever the dataset; for ShareGPT they are its unused defaults).
    pub random_input_len: u32,
    pub random_output_len: u32,
    /// `--sharegpt-output-len`.
    pub sharegpt_output_len: Option<u32>,
    /// `--model-path` of the server.
    pub model_path: &'a str,
    pub machine: &'a str,
    pub layout: models::Layout,
    pub opts: &'a ServerOptions,
}

/// The run as one bench_serving JSONL line (no trailing newline).
pub fn jsonl_line(run: &RunReport, w: &Workload, ctx: &BenchLineContext<'_>) -> String {
    let l = ctx.layout;
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put(
        "tag",
        json!(format!(
            "shardwise-predicted {} {}",
            ctx.machine,
            l.short_name()
        )),
    );
    put("backend", json!(ctx.backend));
    put("dataset_name", json!(w.dataset.name()));
    // Placeholder for inf, replaced by the bare token below.
    put(
        "request_rate",
        run.request_rate.map_or(Value::Null, |r| json!(r)),
    );
    put("max_concurrency", json!(run.max_concurrency));
    put("sharegpt_output_len", json!(ctx.sharegpt_output_len));
    put("random_input_len", json!(ctx.random_input_len));
    put("random_output_len", json!(ctx.random_output_len));
    put("random_range_ratio", json!(w.random_range_ratio));
    put("server_info", server_info(run, ctx));
    put("duration", json!(run.duration));
    put("completed", json!(run.completed));
    put("total_input_tokens", json!(run.total_input_tokens));
    put("total_input_text_tokens", json!(run.total_input_tokens));
    put("total_input_vision_tokens", json!(0));
    put("total_output_tokens", json!(run.total_output_tokens));
    put(
        "total_output_tokens_retokenized",
        json!(run.total_output_tokens),
    );
    put("request_throughput", json!(run.request_throughput));
    put("input_throughput", json!(run.input_throughput));
    put("output_throughput", json!(run.output_throughput));
    put("total_throughput", json!(run.total_throughput));
    for (k, v) in [
        ("mean_e2e_latency_ms", run.mean_e2e_latency_ms),
        ("median_e2e_latency_ms", run.median_e2e_latency_ms),
        ("p99_e2e_latency_ms", run.p99_e2e_latency_ms),
        ("mean_ttft_ms", run.mean_ttft_ms),
        ("median_ttft_ms", run.median_ttft_ms),
        ("p99_ttft_ms", run.p99_ttft_ms),
        ("mean_tpot_ms", run.mean_tpot_ms),
        ("median_tpot_ms", run.median_tpot_ms),
        ("p99_tpot_ms", run.p99_tpot_ms),
        ("mean_itl_ms", run.mean_itl_ms),
        ("median_itl_ms", run.median_itl_ms),
        ("p99_itl_ms", run.p99_itl_ms),
        ("concurrency", run.concurrency),
    ] {
        put(k, json!(v));
    }
    put(
        "accept_length",
        json!(ctx.opts.speculative.as_ref().and_then(|s| s.accept_length)),
    );
    put("max_concurrent_requests", json!(run.peak_running_requests));
    put("shardwise", provenance(w, ctx));
    let line = Value::Object(m).to_string();
    if run.request_rate.is_none() {
        // bench_serving's `--request-rate inf` is written by json.dumps as a bare Infinity.
        line.replacen("\"request_rate\":null", "\"request_rate\":Infinity", 1)
    } else {
        line
    }
}

/// bench_serving's `server_info` block: the launch the predicted run stands for.
fn server_info(run: &RunReport, ctx: &BenchLineContext<'_>) -> Value {
    let l = ctx.layout;
    json!({
        "model_path": ctx.model_path,
        "tp_size": l.tp,
        "pp_size": l.pp,
        "ep_size": l.ep,
        "dp_size": if l.dp_attention { l.tp } else { 1 },
        "enable_dp_attention": l.dp_attention,
        "chunked_prefill_size": ctx.opts.chunked_prefill_size,
        "max_prefill_tokens": ctx.opts.max_prefill_tokens,
        "mem_fraction_static": ctx.opts.mem_fraction_static,
        "max_running_requests": crate::engine::running_cap_in_force(ctx.opts),
        "max_total_num_tokens": run.kv_capacity_tokens,
        "moe_a2a_backend": ctx.opts.moe_a2a_backend.as_deref().unwrap_or("none"),
    })
}

/// The `shardwise` block: marks the line as predicted and says for which machine, layout and
/// engine, so a reader never mistakes it for a measurement.
fn provenance(w: &Workload, ctx: &BenchLineContext<'_>) -> Value {
    let l = ctx.layout;
    json!({
        "predicted": true,
        "machine": ctx.machine,
        "layout": l.short_name(),
        "engine": ctx.opts.engine,
        "flags": ctx.opts.engine.rules().launch_flags(&l, ctx.opts.decode_context_parallel, 1),
        "sharegpt_lengths": match &w.dataset {
            Dataset::Sharegpt(d) => Value::from(d.source.clone()),
            Dataset::Random => Value::Null,
        },
    })
}

/// Appends `line` to `path` (created if missing) without ever leaving a partial file: the old
/// content plus the line go to a temp file that replaces `path`.
pub fn append_jsonl(path: &Path, line: &str) -> Result<(), models::ModelsError> {
    let mut text = if path.exists() {
        models::io::read_text_limited(path, models::io::LOG_LIMIT_BYTES)?
    } else {
        String::new()
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    models::io::write_atomic(path, text.as_bytes())
}
