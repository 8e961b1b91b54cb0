//! A record's metrics: their family (`llm_decode_bench` or `bench_serving`), the quantities
//! predicted, and the targets to predict, each figure checked against what it can physically be ([`crate::plausible`]).

use super::{MeasuredValue, Record, lower};
use serde::{Deserialize, Serialize};

/// The two kinds of measurement; never mixed in one statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricFamily {
    /// Sustained decode tok/s over all streams at a cached context, prefill excluded.
    LlmDecodeBench,
    /// Client-side throughput and latencies of a bench_serving run, prefill included.
    BenchServing,
}

/// `llm_decode_bench.py`'s `--max-tokens` default (argparse, 2048): what each stream generates
/// before the bench starts a new request in its place, when the record does not say.
pub const LLM_DECODE_BENCH_MAX_TOKENS: u32 = 2048;

impl MetricFamily {
    pub fn name(self) -> &'static str {
        match self {
            MetricFamily::LlmDecodeBench => "llm_decode_bench",
            MetricFamily::BenchServing => "bench_serving",
        }
    }

    /// Whether every stream of a measurement sends the same, already cached prompt. True for
    /// `llm_decode_bench.py` (voipmonitor/llm-inference-bench): `run_one_cell` builds one
    /// message list per cell (`build_messages`: the reference document of `ctx` tokens, then
    /// the same generation prompt) for all its streams, and first sends it once with
    /// `max_tokens=1` (the "scout request") so that the prefix cache holds it.
    pub fn streams_share_prompt(self) -> bool {
        matches!(self, MetricFamily::LlmDecodeBench)
    }
}

/// A predicted quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Output tokens per second of the whole server.
    OutputTokPerS,
    /// Prompt + output tokens per second of the whole server.
    TotalTokPerS,
    /// Mean inter-token latency, ms.
    ItlMeanMs,
    /// Mean time per output token, ms.
    TpotMeanMs,
    /// Mean time to first token, ms.
    TtftMeanMs,
    /// Median time per output token, ms (bench_serving's `median_tpot_ms`, InferenceX's
    /// `tpot_ms_median`): the middle request's, where a few requests that waited long for their
    /// prefill pull the mean up.
    TpotMedianMs,
    /// Median time to first token, ms (`median_ttft_ms`, `ttft_ms_median`).
    TtftMedianMs,
}

impl Quantity {
    /// A throughput (more is faster), not a latency.
    pub fn higher_is_faster(self) -> bool {
        matches!(self, Quantity::OutputTokPerS | Quantity::TotalTokPerS)
    }

    pub fn name(self) -> &'static str {
        match self {
            Quantity::OutputTokPerS => "output tok/s",
            Quantity::TotalTokPerS => "total tok/s",
            Quantity::ItlMeanMs => "mean ITL ms",
            Quantity::TpotMeanMs => "mean TPOT ms",
            Quantity::TtftMeanMs => "mean TTFT ms",
            Quantity::TpotMedianMs => "median TPOT ms",
            Quantity::TtftMedianMs => "median TTFT ms",
        }
    }
}

/// One measured value to predict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredFigure {
    /// The record's metric key (`output_tok_s_per_gpu`).
    pub key: String,
    pub quantity: Quantity,
    /// The measured value in the quantity's unit (per-GPU figures × GPUs).
    pub measured: f64,
    /// The text as the source printed it.
    pub raw: String,
    /// The source flags the figure (⚠): shown, left out of the statistics.
    pub flagged: bool,
    pub approximate: bool,
    /// The record's headline figure (one per record; the statistics' unit).
    pub primary: bool,
}

/// The family of a record's metrics, from its dataset, notes and metric keys.
pub(super) fn family(r: &Record) -> Option<MetricFamily> {
    let ds = lower(&r.workload.dataset);
    let notes = lower(&r.notes);
    let has = |f: &dyn Fn(&str) -> bool| r.metrics.keys().any(|k| f(k));
    if ds.contains("inferencex") || ds.contains("bench_serving") || ds.contains("random") {
        Some(MetricFamily::BenchServing)
    } else if ds.contains("decode") || notes.contains("llm_decode_bench") {
        Some(MetricFamily::LlmDecodeBench)
    } else if has(&|k| k.ends_with("_per_gpu") || k.starts_with("ttft") || k.starts_with("itl")) {
        Some(MetricFamily::BenchServing)
    } else if has(&|k| k == "output_tok_s_single_stream") {
        Some(MetricFamily::LlmDecodeBench)
    } else {
        None
    }
}

/// Why a figure of `quantity` (after × `scale`) cannot be compared, if it cannot
/// ([`crate::plausible`]'s bounds).
fn unusable(v: &MeasuredValue, quantity: Quantity, scale: f64, gpus: u32) -> Option<String> {
    use crate::plausible::{MAX_LATENCY_MS, MAX_TOK_PER_S_PER_GPU};
    match quantity {
        Quantity::OutputTokPerS | Quantity::TotalTokPerS => v.unusable(
            MAX_TOK_PER_S_PER_GPU * f64::from(gpus.max(1)) / scale,
            "tok/s no GPU reaches: 2 FLOPs per active parameter of the smallest model",
        ),
        _ => v.unusable(
            MAX_LATENCY_MS,
            "6 hours: bench_serving gives up on a request",
        ),
    }
}

/// The targets a record offers for its family, the metric keys left out, and the figures of
/// predicted metrics that are no usable number (`key: why`).
pub(super) fn targets(
    r: &Record,
    fam: MetricFamily,
    gpus: u32,
) -> (Vec<MeasuredFigure>, Vec<String>, Vec<String>) {
    let mut out: Vec<MeasuredFigure> = Vec::new();
    let mut skipped = Vec::new();
    let mut unusable_figures = Vec::new();
    for (key, v) in &r.metrics {
        let (quantity, scale) = match (fam, key.as_str()) {
            (MetricFamily::LlmDecodeBench, "output_tok_s" | "output_tok_s_single_stream") => {
                (Quantity::OutputTokPerS, 1.0)
            }
            (MetricFamily::BenchServing, "output_tok_s" | "output_throughput") => {
                (Quantity::OutputTokPerS, 1.0)
            }
            (MetricFamily::BenchServing, "output_tok_s_per_gpu") => {
                (Quantity::OutputTokPerS, gpus as f64)
            }
            (MetricFamily::BenchServing, "total_tok_s" | "total_throughput") => {
                (Quantity::TotalTokPerS, 1.0)
            }
            (MetricFamily::BenchServing, "total_tok_s_per_gpu") => {
                (Quantity::TotalTokPerS, gpus as f64)
            }
            (MetricFamily::BenchServing, "itl_ms_mean" | "mean_itl_ms") => {
                (Quantity::ItlMeanMs, 1.0)
            }
            (MetricFamily::BenchServing, "tpot_ms_mean" | "mean_tpot_ms") => {
                (Quantity::TpotMeanMs, 1.0)
            }
            (MetricFamily::BenchServing, "ttft_ms_mean" | "mean_ttft_ms") => {
                (Quantity::TtftMeanMs, 1.0)
            }
            (MetricFamily::BenchServing, "tpot_ms_median" | "median_tpot_ms") => {
                (Quantity::TpotMedianMs, 1.0)
            }
            (MetricFamily::BenchServing, "ttft_ms_median" | "median_ttft_ms") => {
                (Quantity::TtftMedianMs, 1.0)
            }
            _ => {
                skipped.push(key.clone());
                continue;
            }
        };
        if let Some(why) = unusable(v, quantity, scale, gpus) {
            unusable_figures.push(format!("{key} {why}"));
            continue;
        }
        match v.value {
            Some(x) => out.push(MeasuredFigure {
                key: key.clone(),
                quantity,
                measured: x * scale,
                raw: v.raw.clone(),
                flagged: v.flagged,
                approximate: v.approximate,
                primary: false,
            }),
            None => skipped.push(key.clone()),
        }
    }
    // the headline: throughput first, then ITL, TPOT, TTFT, the medians last (a record that
    // carries a mean keeps it as its headline, as before medians were read); the first unflagged
    let order = [
        Quantity::OutputTokPerS,
        Quantity::ItlMeanMs,
        Quantity::TpotMeanMs,
        Quantity::TotalTokPerS,
        Quantity::TtftMeanMs,
        Quantity::TpotMedianMs,
        Quantity::TtftMedianMs,
    ];
    let head = order
        .iter()
        .find_map(|q| out.iter().position(|t| t.quantity == *q && !t.flagged));
    if let Some(i) = head {
        out[i].primary = true;
    }
    (out, skipped, unusable_figures)
}
