//! From a record to what shardwise can express: machine preset, model preset, layout, launch
//! knobs ([`crate::engine::LaunchKnobs`]), and the quantities to predict with their measured
//! values. A record that cannot be expressed gets every reason that applies
//! ([`Unexpressible`]); the first is the one counted.
//!
//! - Machine: RTX PRO 6000 × 8 bare metal (or not stated) → `rtx-pro-6000-x8-baremetal`, in a VM
//!   without working P2P → `rtx-pro-6000-x8-vm-hostbounce`; B200 × 8 → `b200-x8`; H200 × 8 →
//!   `h200-x8`; H100 × 8 → `h100-x8`; or `hardware.machine` (a preset or profile path).
//! - Model: GLM-5 NVFP4 → `glm-5-nvfp4`; Kimi-K2.5/K2.6 int4 (W4A16) → `kimi-k2.5` (K2-Thinking → `kimi-k2-thinking-int4`)
//!   (K2's architecture, int4 group-32 routed experts); DeepSeek-R1 FP4 → `deepseek-r1-fp4`;
//!   DeepSeek-R1/V3 FP8 → `deepseek-v3-fp8`; or a model preset name.
//! - Metric: `llm_decode_bench` records (prefill excluded, context already cached) compare
//!   steady decode tok/s summed over `concurrency` streams at `input_len` tokens of context;
//!   `bench_serving` records compare a simulated run (InferenceX: random dataset, range ratio
//!   0.8, 10 prompts per concurrency) on output and total tok/s (`*_per_gpu` × GPUs), mean ITL,
//!   TPOT and TTFT where given.

use super::machine_map::machine_preset;
use super::metrics::{LLM_DECODE_BENCH_MAX_TOKENS, family, targets};
pub use super::metrics::{MeasuredFigure, MetricFamily, Quantity};
use super::model_map::{converted_at_load, format_without_preset, model_preset};
use super::nccl::NcclTuning;
use super::speculation::{RecordSpeculation, record_prompt_kind, record_speculation};
use super::unexpressible::stated;
pub use super::unexpressible::{Unexpressible, UnexpressibleKind};
use super::{Parallel, Record, RecordWorkload, Whole, lower};
use crate::b12x_build::{
    B12xA16Build, B12xBuild, B12xMlaVerify, VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE, is_b12x_sparse_mla,
};
use crate::engine::sglang::record::INFERENCEX_PROMPTS_PER_CONCURRENCY;
use crate::engine::{Engine, Knob, LaunchKnobs};
use crate::workload::Workload;
use models::Layout;
use serde::Serialize;

/// bench_serving's `--random-range-ratio` in InferenceX's runs.
pub const INFERENCEX_RANGE_RATIO: f64 = 0.8;

/// A record shardwise can simulate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expressed {
    pub id: String,
    /// Machine preset name or profile path.
    pub machine: String,
    /// Model preset name.
    pub model: String,
    pub layout: Layout,
    /// The engine the record ran on.
    pub engine: Engine,
    pub knobs: LaunchKnobs,
    pub family: MetricFamily,
    pub concurrency: u32,
    /// Context each stream decodes at (`llm_decode_bench`), or the prompt length.
    pub context_tokens: u32,
    /// The bench_serving run to simulate (`bench_serving` records only).
    pub workload: Option<Workload>,
    pub targets: Vec<MeasuredFigure>,
    /// Metrics the record has that are not predicted (power, PCIe counters, p99s).
    pub not_compared: Vec<String>,
    /// What was assumed where the record is silent, one line each.
    pub assumptions: Vec<String>,
    /// Speculative decoding (`parallel.mtp: true`): the draft and its acceptance; `None` = off.
    pub speculation: Option<RecordSpeculation>,
    /// The client sends every stream the same cached prompt
    /// ([`MetricFamily::streams_share_prompt`]); `None` = each stream its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_prompt: Option<SharedPrompt>,
    /// The KV pool, in tokens, the server reported at start-up ([`super::EngineInfo::kv_cache_tokens`]).
    pub stated_kv_tokens: Option<u64>,
}

/// The prompt all streams of a decode bench share, as the pool sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SharedPrompt {
    /// Tokens each stream generates before the client replaces it: the record's `output_len`,
    /// else [`LLM_DECODE_BENCH_MAX_TOKENS`].
    pub output_tokens_per_stream: u32,
    /// Whether the record states it.
    pub output_stated: bool,
}

/// The layout of a record's parallel sizes `(tp, pp, ep)` as read ([`stated`]), or why not.
fn layout_of(
    p: &Parallel,
    (tp, pp, ep): (Option<u32>, Option<u32>, Option<u32>),
    why: &mut Vec<Unexpressible>,
    assumptions: &mut Vec<String>,
) -> Option<Layout> {
    use UnexpressibleKind as K;
    match (tp, pp) {
        (Some(tp), pp) if tp > 0 && pp != Some(0) => {
            if pp.is_none() {
                assumptions.push("pp not stated: 1".into());
            }
            Some(Layout {
                tp,
                pp: pp.unwrap_or(1),
                ep: ep.filter(|e| *e > 0).unwrap_or(1),
                dp_attention: p.attn_dp == Some(true),
            })
        }
        (tp_stated, pp_stated) => {
            let detail = match (tp_stated, pp_stated) {
                (Some(0), _) => "tp 0: no GPU runs the model".to_string(),
                (Some(_), _) => "pp 0: no pipeline stage runs the model".to_string(),
                (None, _) if p.tp.is_some() => "tp is not a whole number".to_string(),
                (None, _) => "tp not stated".to_string(),
            };
            why.push(Unexpressible::new(K::MissingLayout, detail));
            None
        }
    }
}

/// The output length a record's workload states, where the source wrote a whole number
/// ("open-ended (30 s window)" is none).
fn output_len(w: &RecordWorkload) -> Option<u32> {
    w.output_len
        .as_ref()
        .filter(|o| o.raw.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .and_then(|o| o.value)
        .filter(|v| v.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(v))
        .map(|v| v as u32)
}

/// bench_serving's own defaults where a record that is not InferenceX's is silent
/// (`--num-prompts 1000`, `--random-range-ratio 0.0`, sglang `bench_serving.py` argparse).
const BENCH_SERVING_NUM_PROMPTS: u32 = 1000;
const BENCH_SERVING_RANGE_RATIO: f64 = 0.0;

/// Whether a record is one of InferenceX's runs (its dataset, flags or source say so): only
/// those take InferenceX's workload conventions.
fn is_inferencex(r: &Record) -> bool {
    [&r.workload.dataset, &r.engine.flags, &r.source]
        .iter()
        .any(|t| lower(t).contains("inferencex"))
}

/// The `--random-range-ratio` a record's bench_serving command states in its `dataset` text
/// (`python3 -m sglang.bench_serving … --random-range-ratio 1`): `Ok` with the number as
/// written, `Err` with the word where the flag is followed by no number (never read as unstated).
fn stated_range_ratio(w: &RecordWorkload) -> Option<Result<f64, String>> {
    let text = w.dataset.as_deref()?;
    let words: Vec<&str> = text.split_whitespace().collect();
    words.iter().enumerate().find_map(|(i, word)| {
        let value = match word.split_once('=') {
            Some(("--random-range-ratio", v)) => v,
            _ if *word == "--random-range-ratio" => words.get(i + 1).copied().unwrap_or(""),
            _ => return None,
        };
        let value = value.trim_end_matches([',', ';']);
        Some(
            value
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite())
                .ok_or_else(|| value.to_string()),
        )
    })
}

/// A stated ratio inside `range` (the client's own bounds, `bounds` as its help says them), or
/// `None` with why: a ratio the client refuses or no number is never read as unstated.
fn ratio_within(
    stated: Result<f64, String>,
    client: &str,
    range: impl std::ops::RangeBounds<f64>,
    bounds: &str,
    why: &mut Vec<Unexpressible>,
) -> Option<f64> {
    let detail = match stated {
        Ok(r) if range.contains(&r) => return Some(r),
        Ok(r) => format!("{client} --random-range-ratio {r}: it takes a ratio in {bounds}"),
        Err(word) => format!("{client} --random-range-ratio `{word}`: not a number"),
    };
    why.push(Unexpressible::new(
        UnexpressibleKind::UnreadableValue,
        detail,
    ));
    None
}

/// Whether a record's benchmark client is vLLM's `vllm bench serve` (its dataset text names it),
/// whose random lengths follow vLLM's convention, not SGLang bench_serving's.
fn is_vllm_bench_serve(w: &RecordWorkload) -> bool {
    lower(&w.dataset).contains("vllm bench serve")
}

/// `vllm bench serve`'s `--random-range-ratio` default: fixed lengths.
const VLLM_BENCH_SERVE_RANGE_RATIO: f64 = 0.0;

/// `vllm bench serve`'s random lengths `(input, output, ratio r)` as bench_serving's
/// `(--random-input-len, --random-output-len, --random-range-ratio)`. vLLM draws each length
/// uniform in `[⌊len·(1 − r)⌋, ⌈len·(1 + r)⌉]` with r in [0, 1) and 0 by default, i.e. fixed
/// lengths (vllm-project/vllm `vllm/benchmarks/datasets.py` @f2e97dda,
/// `RandomDataset.get_sampling_params`); SGLang's bench_serving draws `[⌊len·ratio⌋, len]`,
/// where 0 means `[1, len]`. The same spread in SGLang's terms: longest `len·(1 + r)`, ratio
/// `(1 − r)/(1 + r)`; for r = 0, the lengths as stated at ratio 1.
fn vllm_bench_serve_lengths(input: u32, output: u32, r: f64) -> (u32, u32, f64) {
    let longest = |len: u32| (f64::from(len) * (1.0 + r)).ceil() as u32;
    (longest(input), longest(output), (1.0 - r) / (1.0 + r))
}

/// `--random-range-ratio` of a bench_serving (SGLang's, or InferenceX's fork) record: the one
/// its command states, else InferenceX's for InferenceX's records, else bench_serving's default;
/// `None` (said in `why`) for a stated ratio bench_serving refuses.
fn bench_serving_ratio(
    w: &RecordWorkload,
    inferencex: bool,
    why: &mut Vec<Unexpressible>,
    assumptions: &mut Vec<String>,
) -> Option<f64> {
    if let Some(stated) = stated_range_ratio(w) {
        let r = ratio_within(stated, "bench_serving", 0.0..=1.0, "[0, 1]", why)?;
        assumptions.push(format!(
            "--random-range-ratio {r} (as the record's bench_serving command states)"
        ));
        Some(r)
    } else if inferencex {
        Some(INFERENCEX_RANGE_RATIO)
    } else {
        assumptions.push(format!(
            "--random-range-ratio {BENCH_SERVING_RANGE_RATIO} (not stated: bench_serving's default)"
        ));
        Some(BENCH_SERVING_RANGE_RATIO)
    }
}

/// A `vllm bench serve` record's lengths `(input, output)` and ratio in bench_serving's terms
/// ([`vllm_bench_serve_lengths`]), or `None` (said in `why`) for a ratio vLLM refuses.
fn vllm_bench_serve_workload(
    w: &RecordWorkload,
    (input, output): (u32, u32),
    why: &mut Vec<Unexpressible>,
    assumptions: &mut Vec<String>,
) -> Option<(u32, u32, f64)> {
    let (r, said) = match stated_range_ratio(w) {
        Some(stated) => (
            ratio_within(stated, "vllm bench serve", 0.0..1.0, "[0, 1)", why)?,
            "as the record's command states",
        ),
        None => (
            VLLM_BENCH_SERVE_RANGE_RATIO,
            "not stated: vllm bench serve's default",
        ),
    };
    let (i, o, ratio) = vllm_bench_serve_lengths(input, output, r);
    assumptions.push(format!(
        "vllm bench serve --random-range-ratio {r} ({said}): lengths uniform in \
         [len·(1 − r), len·(1 + r)], read as bench_serving's --random-input-len {i} \
         --random-output-len {o} --random-range-ratio {ratio}"
    ));
    Some((i, o, ratio))
}

/// The bench_serving run a record describes, from its `(input_len, concurrency, num_prompts)`
/// as read ([`stated`]) and its output length, or why not; the unstated prompt count and length
/// spread are InferenceX's for its records, bench_serving's defaults for anyone else's.
fn bench_workload(
    r: &Record,
    (input, conc, num_prompts): (Option<u32>, Option<u32>, Option<u32>),
    why: &mut Vec<Unexpressible>,
    assumptions: &mut Vec<String>,
) -> Option<Workload> {
    use UnexpressibleKind as K;
    let w = &r.workload;
    let output = output_len(w);
    match (input, output, conc) {
        (Some(i), Some(o), Some(c)) if i > 0 && o > 0 && c > 0 => {
            let inferencex = is_inferencex(r);
            let n = match (num_prompts.filter(|n| *n > 0), inferencex) {
                (Some(n), _) if n > crate::workload::MAX_NUM_PROMPTS => {
                    why.push(Unexpressible::new(
                        K::UnreadableValue,
                        format!(
                            "num_prompts {n} is above {}: each simulated request is held in memory",
                            crate::workload::MAX_NUM_PROMPTS
                        ),
                    ));
                    return None;
                }
                (Some(n), _) => n,
                (None, true) => {
                    let n = c.saturating_mul(INFERENCEX_PROMPTS_PER_CONCURRENCY);
                    assumptions.push(format!(
                        "--num-prompts {n} (InferenceX: 10 × concurrency), --random-range-ratio {INFERENCEX_RANGE_RATIO}"
                    ));
                    n
                }
                (None, false) => {
                    assumptions.push(format!(
                        "--num-prompts {BENCH_SERVING_NUM_PROMPTS} (not stated: bench_serving's default)"
                    ));
                    BENCH_SERVING_NUM_PROMPTS
                }
            };
            let (i, o, ratio) = if is_vllm_bench_serve(w) {
                vllm_bench_serve_workload(w, (i, o), why, assumptions)?
            } else {
                (i, o, bench_serving_ratio(w, inferencex, why, assumptions)?)
            };
            Some(Workload {
                num_prompts: n,
                random_input_len: i,
                random_output_len: o,
                random_range_ratio: ratio,
                max_concurrency: Some(c),
                ..Workload::default()
            })
        }
        (i, o, _) if i.is_none_or(|i| i == 0) || o.is_none() => {
            why.push(Unexpressible::new(
                K::MissingWorkload,
                match (i, o) {
                    (Some(0), _) => "input_len 0: a bench_serving prompt has tokens",
                    (_, None) if w.output_len.is_some() => {
                        "output_len is not a whole number of tokens"
                    }
                    _ => "input/output lengths not stated",
                },
            ));
            None
        }
        _ => None, // concurrency 0 or not stated: said by the caller
    }
}

/// A record's whole-number fields as read ([`stated`]); `None` = not stated or unreadable (the
/// unreadable ones already have their reason).
#[derive(Debug, Clone, Copy)]
struct Sizes {
    tp: Option<u32>,
    pp: Option<u32>,
    ep: Option<u32>,
    dp: Option<u32>,
    dcp: Option<u32>,
    input: Option<u32>,
    conc: Option<u32>,
    num_prompts: Option<u32>,
}

/// The parallel sizes and workload counts of `r`, a reason per unreadable one.
fn read_sizes(r: &Record, why: &mut Vec<Unexpressible>) -> Sizes {
    let (p, w) = (&r.parallel, &r.workload);
    let mut read = |field: &str, v: &Option<Whole>| {
        stated(&r.id, field, v).unwrap_or_else(|u| {
            why.push(u);
            None
        })
    };
    Sizes {
        tp: read("parallel.tp", &p.tp),
        pp: read("parallel.pp", &p.pp),
        ep: read("parallel.ep", &p.ep),
        dp: read("parallel.dp", &p.dp),
        dcp: read("parallel.dcp", &p.dcp),
        input: read("workload.input_len", &w.input_len),
        conc: read("workload.concurrency", &w.concurrency),
        num_prompts: read("workload.num_prompts", &w.num_prompts),
    }
}

/// The model of `r`: the preset its checkpoint name and quantization describe, else the HF
/// repository id itself when the local Hugging Face cache holds its `config.json` (a new
/// checkpoint of a known family needs no code: `ModelSpec::resolve` reads it as `--model` does),
/// or a reason naming its checkpoint, its quantization and where the cache was looked in.
fn model_of(r: &Record, quant: &str, why: &mut Vec<Unexpressible>) -> Option<String> {
    let named = r.model.as_deref().unwrap_or("");
    if let Some(preset) = model_preset(named, quant) {
        return Some(preset.to_string());
    }
    if let Some(format) = format_without_preset(named, quant) {
        why.push(Unexpressible::new(
            UnexpressibleKind::UnknownModel,
            format!(
                "`{named}` ({quant}) has weights in {}, a format no model preset carries (their bytes and kernels are not the preset's); name a preset whose checkpoint ran, or a config.json with that quantization",
                format.to_ascii_uppercase()
            ),
        ));
        return None;
    }
    let cached = models::hf_cache::is_repo_id(named)
        .then(|| models::ModelSpec::from_hf_cache(named))
        .and_then(|spec| spec.ok().flatten());
    if cached.is_some() {
        return Some(named.to_string());
    }
    let looked = if models::hf_cache::is_repo_id(named) {
        // the folder, not the absolute path: the same record gives the same reason on any box
        format!(
            " or put its config.json in your HF cache (models--{} under $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)",
            named.replace('/', "--")
        )
    } else {
        String::new()
    };
    why.push(Unexpressible::new(
        UnexpressibleKind::UnknownModel,
        format!(
            "`{}` ({}) matches no model preset; name a preset (`sim models list`){looked}",
            r.model.as_deref().unwrap_or("no model"),
            if quant.is_empty() {
                "quantization not stated"
            } else {
                quant
            }
        ),
    ));
    None
}

/// The settings of `r` shardwise does not model, one reason each.
fn unmodelled_settings(r: &Record, sizes: &Sizes, why: &mut Vec<Unexpressible>) {
    use UnexpressibleKind as K;
    let p = &r.parallel;
    if let Some(d) = sizes.dcp.filter(|d| *d > 1)
        && sizes.tp.is_some_and(|tp| !tp.is_multiple_of(d))
    {
        why.push(Unexpressible::new(
            K::Dcp,
            format!("decode context parallelism DCP={d} does not divide the TP size"),
        ));
    }
    if sizes.dp.is_some_and(|d| d > 1) && p.attn_dp != Some(true) {
        why.push(Unexpressible::new(
            K::KnobNotModelled,
            "data-parallel replicas without DP attention",
        ));
    }
    if r.engine.name.as_deref().and_then(Engine::from_name) == Some(Engine::Vllm)
        && let Some(reason) = r
            .engine
            .flags
            .as_deref()
            .and_then(crate::engine::vllm::record::unreadable_words)
    {
        why.push(Unexpressible::new(K::UnreadableValue, reason));
    }
    if let Some(engine) = r.engine.name.as_deref().and_then(Engine::from_name)
        && let Some(reason) = r
            .engine
            .flags
            .as_deref()
            .and_then(|f| crate::engine::record::unreadable_values(engine, f))
    {
        why.push(Unexpressible::new(
            K::UnreadableValue,
            format!(
                "record `{}`: engine.flags `{reason}` ({} would refuse that value, so the setting cannot be read; correct it in the record)",
                r.id,
                engine.name()
            ),
        ));
    }
    if let Some(words) = r
        .engine
        .flags
        .as_deref()
        .and_then(crate::engine::launch::offload_words)
    {
        why.push(Unexpressible::new(
            K::KnobNotModelled,
            format!(
                "{words}: CPU weight offload in a record's words is not read (a launch line's is: give it to `sim run --server-args`)"
            ),
        ));
    }
    if let Some(proto) = NcclTuning::unmodelled_proto(r) {
        why.push(Unexpressible::new(
            K::KnobNotModelled,
            format!(
                "NCCL_PROTO={proto}: no curve for that protocol set (LL, LL128, Simple and \
                 NCCL's own choice are modelled)"
            ),
        ));
    }
}

/// The engine `r` ran on, or a reason.
fn engine_of(r: &Record, why: &mut Vec<Unexpressible>) -> Option<Engine> {
    let engine = r.engine.name.as_deref().and_then(Engine::from_name);
    if engine.is_none() {
        why.push(Unexpressible::new(
            UnexpressibleKind::UnknownEngine,
            format!(
                "engine `{}` is neither sglang nor vllm",
                r.engine.name.as_deref().unwrap_or("not stated")
            ),
        ));
    }
    engine
}

/// The figures of `r` to predict and the metric keys left uncompared; a reason when none is
/// usable.
fn targets_of(
    r: &Record,
    fam: Option<MetricFamily>,
    gpus: u32,
    why: &mut Vec<Unexpressible>,
) -> (Vec<MeasuredFigure>, Vec<String>) {
    use UnexpressibleKind as K;
    let (targets, mut not_compared, unusable_figures) = match fam {
        Some(f) => targets(r, f, gpus),
        None => (Vec::new(), r.metrics.keys().cloned().collect(), Vec::new()),
    };
    if targets.is_empty() && !unusable_figures.is_empty() {
        why.push(Unexpressible::new(
            K::UnreadableValue,
            format!("record `{}`: {}", r.id, unusable_figures.join("; ")),
        ));
    } else if fam.is_none() || targets.is_empty() {
        why.push(Unexpressible::new(
            K::MetricNotModelled,
            format!(
                "no predicted metric among [{}] ({})",
                r.metrics.keys().cloned().collect::<Vec<_>>().join(", "),
                fam.map_or("metric family unknown", MetricFamily::name)
            ),
        ));
    }
    not_compared.extend(unusable_figures);
    (targets, not_compared)
}

/// The workload of `r` for its metric family: the cached context of a decode bench (checked
/// here), the bench_serving run of a serving record.
fn workload_of(
    r: &Record,
    fam: Option<MetricFamily>,
    sizes: &Sizes,
    why: &mut Vec<Unexpressible>,
    assumptions: &mut Vec<String>,
) -> Option<Workload> {
    let w = &r.workload;
    match (sizes.conc, &w.concurrency) {
        (Some(0), _) => why.push(Unexpressible::new(
            UnexpressibleKind::MissingWorkload,
            "concurrency 0: no stream ran",
        )),
        (None, None) => why.push(Unexpressible::new(
            UnexpressibleKind::MissingWorkload,
            "concurrency not stated",
        )),
        _ => {}
    }
    match fam {
        Some(MetricFamily::LlmDecodeBench) if sizes.input.is_none() => {
            why.push(Unexpressible::new(
                UnexpressibleKind::MissingWorkload,
                "cached context (input_len) not stated",
            ));
            None
        }
        Some(MetricFamily::BenchServing) => bench_workload(
            r,
            (sizes.input, sizes.conc, sizes.num_prompts),
            why,
            assumptions,
        ),
        _ => None,
    }
}

/// A layout of `l.gpus()` GPUs on a box of `n`: more is a reason; fewer runs on the box's first
/// GPUs, as the server starts ([`crate::machine::Machine::first_gpus`]), with the others idle.
fn part_of_box(l: Layout, n: u32, why: &mut Vec<Unexpressible>, assumptions: &mut Vec<String>) {
    if l.gpus() > n {
        why.push(Unexpressible::new(
            UnexpressibleKind::MissingLayout,
            format!(
                "{} needs {} GPUs, the box has {n}",
                l.short_name(),
                l.gpus()
            ),
        ));
    } else if l.gpus() < n {
        assumptions.push(format!(
            "{} on the box's first {} of {n} GPUs (the server's default {} 0)",
            l.short_name(),
            l.gpus(),
            Engine::Sglang.flag(Knob::BaseGpuId)
        ));
    }
}

/// The knobs a record's engine words set by the build they name (its version and flags,
/// `words`): the b12x fork's verify route, MoE build and W4A16 build, and what the engine says
/// its build date changes ([`crate::engine::ServingEngine::dated_knobs`]).
fn build_knobs(
    knobs: &mut LaunchKnobs,
    engine: Engine,
    (words, flags): (&str, &str),
    assumptions: &mut Vec<String>,
) {
    if is_b12x_sparse_mla(knobs.attention_backend.as_deref()) {
        knobs.b12x_mla_verify = B12xMlaVerify::of_text(
            crate::engine::record::env_value(flags, VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE),
            words,
        );
    }
    if let Some(built) = crate::b12x_build::date_in(words) {
        engine.rules().dated_knobs(knobs, built, assumptions);
    }
    if knobs.moe_runner_backend.as_deref() == Some("b12x") && knobs.b12x_moe_a16 {
        knobs.b12x_a16_build = B12xA16Build::of_text(words);
        if knobs.b12x_w4a16_tc_decode {
            // its decode sizes are priced as the W4A4 kernels of the build the words name
            knobs.b12x_build = b12x_build_of(words, assumptions);
        }
        assumptions.push(a16_assumption(
            knobs.b12x_a16_build,
            knobs.b12x_w4a16_tc_decode,
        ));
    } else if knobs.moe_runner_backend.as_deref() == Some("b12x") {
        knobs.b12x_build = b12x_build_of(words, assumptions);
    }
}

/// The b12x build a record's engine words name (`None`: not stated), with the assumption said.
fn b12x_build_of(words: &str, assumptions: &mut Vec<String>) -> Option<B12xBuild> {
    let build = B12xBuild::of_text(words);
    assumptions.push(match build {
        Some(b) => format!("{}, from the record's engine words", b.describe()),
        None => format!(
            "b12x build not stated: taken as the newest modelled, {}",
            B12xBuild::NEWEST.describe()
        ),
    });
    build
}

/// How a `B12X_MOE_FORCE_A16=1` run's MoE is priced, for its assumptions (`tc_decode`:
/// `B12X_W4A16_TC_DECODE=1` too).
pub fn a16_assumption(build: Option<B12xA16Build>, tc_decode: bool) -> String {
    let small = if tc_decode {
        "B12X_W4A16_TC_DECODE=1: a call of up to 8 tokens as b12x's W4A4 kernels of the same build (its tensor-core decode kernel streams the same 4-bit weights; no public timing of its own), more up to 128 routed pairs as the kernel tables"
    } else {
        "up to 128 routed pairs as the kernel tables (no public timing)"
    };
    let large = match build {
        Some(B12xA16Build::Fused128) => "b12x of 9-14 May 2026: its dynamic kernel's tasks above",
        _ => "above, as the kernel tables (no public timing)",
    };
    format!(
        "B12X_MOE_FORCE_A16=1 (or vLLM's VLLM_B12X_FORCE_MOE_A16=1): b12x's W4A16 MoE kernels, {small}; {large}"
    )
}

/// The assumption a record that does not say whether speculative decoding ran
/// (`parallel.mtp` unknown) carries: it is predicted without a draft.
pub const SPECULATION_NOT_STATED: &str = "speculative decoding not stated (parallel.mtp unknown): predicted without a draft, as a launch line naming none runs";

/// Why a record whose words say its BF16 linears were converted at load cannot be read, where
/// its flags do not say how (`knobs` carry no linear spec of that format): priced as the
/// checkpoint's BF16 it would be misread.
fn unread_conversion(
    model: &str,
    quant: &str,
    knobs: &LaunchKnobs,
    engine: Engine,
) -> Option<Unexpressible> {
    let read = knobs.online_quant.as_ref().and_then(|q| q.linear);
    let to = converted_at_load(quant).filter(|to| {
        !read.is_some_and(|f| match *to {
            "mxfp8" => f == models::WeightFormat::Mxfp8,
            _ => matches!(f, models::WeightFormat::Fp8 { .. }),
        })
    })?;
    Some(Unexpressible::new(
        UnexpressibleKind::UnknownModel,
        format!(
            "`{model}` with BF16 linears converted to {up} at load ({quant}), but the flags carry no {flag} with a linear `{to}` spec to read which were: state the launch line's {flag}",
            up = to.to_ascii_uppercase(),
            flag = engine.flag(crate::engine::Knob::OnlineQuantization)
        ),
    ))
}

/// Maps `r` onto what shardwise simulates, or says why it cannot.
pub fn express(r: &Record) -> Result<Expressed, Vec<Unexpressible>> {
    let mut why: Vec<Unexpressible> = Vec::new();
    let mut assumptions = Vec::new();
    let quant = r.quant.clone().unwrap_or_default();
    let model = model_of(r, &quant, &mut why);
    let machine = machine_preset(r, &mut assumptions)
        .map_err(|e| why.push(e))
        .ok();
    let sizes = read_sizes(r, &mut why);
    unmodelled_settings(r, &sizes, &mut why);
    let flags = r.engine.flags.clone().unwrap_or_default();
    let engine = engine_of(r, &mut why);
    let layout = layout_of(
        &r.parallel,
        (sizes.tp, sizes.pp, sizes.ep),
        &mut why,
        &mut assumptions,
    );
    let fam = family(r);
    let count = r.hardware.count.as_ref().and_then(Whole::get);
    let gpus = count.or(layout.map(|l| l.gpus())).unwrap_or(0);
    let (targets, not_compared) = targets_of(r, fam, gpus, &mut why);
    let workload = workload_of(r, fam, &sizes, &mut why, &mut assumptions);
    if let (Some(l), Some(n)) = (layout, count) {
        part_of_box(l, n, &mut why, &mut assumptions);
    }
    let (Some(model), Some(machine), Some(layout), Some(family), Some(engine), Some(conc), true) = (
        model,
        machine,
        layout,
        fam,
        engine,
        sizes.conc,
        why.is_empty(),
    ) else {
        why.sort_by_key(|u| u.kind);
        return Err(why);
    };
    let mut knobs = record_knobs(engine, &flags, &quant, (sizes.dcp, conc), &mut assumptions);
    if let Some(why) = unread_conversion(&model, &quant, &knobs, engine) {
        return Err(vec![why]);
    }
    knobs.moe_default_config = r.engine.moe_kernel_config == Some(super::MoeKernelConfig::Default);
    let version = r.engine.version.as_deref().unwrap_or_default();
    build_knobs(
        &mut knobs,
        engine,
        (&format!("{version} {flags}"), &flags),
        &mut assumptions,
    );
    if flags.trim().is_empty() {
        assumptions.push(format!(
            "server flags not stated: {} defaults",
            engine.rules().display_name()
        ));
    }
    let stated_kv_tokens = stated_kv_tokens(r, &mut assumptions);
    if r.parallel.mtp.is_none() {
        // an unknown state is run as the launch line states it, and said, never silently
        assumptions.push(SPECULATION_NOT_STATED.to_string());
    }
    let speculation = (r.parallel.mtp == Some(true)).then(|| {
        let kind = record_prompt_kind(r, family.streams_share_prompt());
        record_speculation(r, &model, engine, kind)
    });
    Ok(Expressed {
        id: r.id.clone(),
        machine,
        model,
        layout,
        engine,
        knobs,
        family,
        concurrency: conc,
        context_tokens: sizes.input.unwrap_or(0),
        workload,
        targets,
        not_compared,
        assumptions,
        speculation,
        shared_prompt: family.streams_share_prompt().then(|| {
            let stated = output_len(&r.workload);
            SharedPrompt {
                output_tokens_per_stream: stated.unwrap_or(LLM_DECODE_BENCH_MAX_TOKENS),
                output_stated: stated.is_some(),
            }
        }),
        stated_kv_tokens,
    })
}

/// The launch knobs `flags` give `engine` (quantization `quant`), with the record's DCP size
/// and the scheduler read interval a named config sets at the record's concurrency
/// ([`crate::engine::ServingEngine::named_recv_interval`]) where the flags give none.
fn record_knobs(
    engine: Engine,
    flags: &str,
    quant: &str,
    (dcp, concurrency): (Option<u32>, u32),
    assumptions: &mut Vec<String>,
) -> LaunchKnobs {
    let mut knobs = engine.record_knobs(flags, quant, assumptions);
    knobs.decode_context_parallel = dcp.filter(|d| *d > 1);
    if knobs.scheduler_recv_interval.is_none()
        && let Some((n, said)) = engine.rules().named_recv_interval(flags, concurrency)
    {
        knobs.scheduler_recv_interval = Some(n);
        assumptions.push(said);
    }
    knobs
}

/// The KV pool `r` states (`engine.kv_cache_tokens`), with an assumption where it is unreadable
/// or empty (then not used).
fn stated_kv_tokens(r: &super::Record, assumptions: &mut Vec<String>) -> Option<u64> {
    match &r.engine.kv_cache_tokens {
        Some(super::Whole::Unreadable(raw)) => assumptions.push(format!(
            "engine.kv_cache_tokens '{raw}' is no whole number of tokens: not used"
        )),
        // a server that printed an empty pool did not serve
        Some(super::Whole::Stated(0)) => assumptions
            .push("engine.kv_cache_tokens 0: no server runs on an empty pool; not used".into()),
        _ => {}
    }
    r.engine
        .kv_cache_tokens
        .as_ref()
        .and_then(super::Whole::get)
        .filter(|n| *n > 0)
        .map(u64::from)
}

#[cfg(test)]
mod tests {
    use super::vllm_bench_serve_lengths;
    use proptest::prelude::*;

    proptest! {
        /// bench_serving's draw over the converted lengths spans what `vllm bench serve` draws:
        /// the same longest length, the shortest within a token (rounding), at any ratio it takes.
        #[test]
        fn vllm_lengths_span_what_vllm_draws(len in 1u32..200_000, r in 0.0f64..0.999) {
            let (longest, _, ratio) = vllm_bench_serve_lengths(len, 1, r);
            let vllm = [(f64::from(len) * (1.0 - r)).floor(), (f64::from(len) * (1.0 + r)).ceil()];
            let sglang = [(f64::from(longest) * ratio).floor().max(1.0), f64::from(longest)];
            prop_assert_eq!(sglang[1], vllm[1]);
            prop_assert!((sglang[0] - vllm[0].max(1.0)).abs() <= 1.0, "{:?} vs {:?}", sglang, vllm);
            prop_assert!((0.0..=1.0).contains(&ratio));
        }
    }

    #[test]
    fn vllm_default_is_fixed_lengths() {
        assert_eq!(vllm_bench_serve_lengths(2048, 1024, 0.0), (2048, 1024, 1.0));
    }
}
