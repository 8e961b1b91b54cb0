//! From a record to what shardwise can express: machine preset, model preset, layout, launch
//! knobs ([`crate::engines::LaunchKnobs`]), and the quantities to predict with their measured
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

use super::flags::{INFERENCEX_PROMPTS_PER_CONCURRENCY, inferencex_config, launch_knobs};
use super::metrics::{LLM_DECODE_BENCH_MAX_TOKENS, family, targets};
pub use super::metrics::{MeasuredFigure, MetricFamily, Quantity};
use super::model_map::model_preset;
use super::nccl::NcclTuning;
use super::speculation::{RecordSpeculation, record_speculation};
use super::{Parallel, Record, RecordWorkload, Whole, lower};
use crate::engines::{Engine, LaunchKnobs};
use crate::workload::Workload;
use models::Layout;
use serde::{Deserialize, Serialize};

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

/// Kinds of reasons a record cannot be expressed; a record's reasons are sorted in this order and
/// the first is the one counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnexpressibleKind {
    /// Words where a count belongs (`"concurrency": "1 and high"`), or a figure that is no
    /// usable number (negative, zero, beyond f64, physically impossible).
    UnreadableValue,
    /// Servers over several nodes.
    MultiNode,
    /// No machine preset for that GPU, count or setup.
    UnknownMachine,
    /// The checkpoint maps onto no model preset.
    UnknownModel,
    /// The engine is neither SGLang nor vLLM.
    UnknownEngine,
    /// vLLM's decode context parallelism with a DCP size that does not divide the TP size.
    Dcp,
    /// A knob shardwise does not model (DP replicas, a pinned NCCL protocol, …).
    KnobNotModelled,
    /// Parallel sizes not stated, or not the box's GPU count.
    MissingLayout,
    /// Concurrency, context or lengths not stated.
    MissingWorkload,
    /// No metric shardwise predicts, or its family is unknown.
    MetricNotModelled,
    /// The simulation refused it (the model does not fit the layout, …).
    SimulationFailed,
}

impl UnexpressibleKind {
    /// The key used in tables and JSON (`unknown-machine`).
    pub fn key(self) -> &'static str {
        match self {
            UnexpressibleKind::UnreadableValue => "unreadable-value",
            UnexpressibleKind::UnknownModel => "unknown-model",
            UnexpressibleKind::MultiNode => "multi-node",
            UnexpressibleKind::UnknownMachine => "unknown-machine",
            UnexpressibleKind::Dcp => "dcp",
            UnexpressibleKind::KnobNotModelled => "knob-not-modelled",
            UnexpressibleKind::MissingLayout => "missing-layout",
            UnexpressibleKind::MissingWorkload => "missing-workload",
            UnexpressibleKind::MetricNotModelled => "metric-not-modelled",
            UnexpressibleKind::UnknownEngine => "unknown-engine",
            UnexpressibleKind::SimulationFailed => "simulation-failed",
        }
    }
}

/// Why a record cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unexpressible {
    pub kind: UnexpressibleKind,
    pub detail: String,
}

impl Unexpressible {
    pub fn new(kind: UnexpressibleKind, detail: impl Into<String>) -> Self {
        Unexpressible {
            kind,
            detail: detail.into(),
        }
    }
}

/// The whole number `field` of record `id` states; words instead are a reason naming both.
fn stated(id: &str, field: &str, v: &Option<Whole>) -> Result<Option<u32>, Unexpressible> {
    match v {
        None => Ok(None),
        Some(Whole::Stated(n)) => Ok(Some(*n)),
        Some(Whole::Unreadable(t)) => Err(Unexpressible::new(
            UnexpressibleKind::UnreadableValue,
            format!("record `{id}`: {field} is `{t}`, not a whole number"),
        )),
    }
}

/// The machine preset of a record's hardware block, with what was assumed.
fn machine_preset(r: &Record, assumptions: &mut Vec<String>) -> Result<String, Unexpressible> {
    let hw = &r.hardware;
    if let Some(m) = &hw.machine {
        return Ok(m.clone());
    }
    let ic = lower(&hw.interconnect);
    if ic.contains("multi-node") || ic.contains("nodes over") {
        return Err(Unexpressible::new(
            UnexpressibleKind::MultiNode,
            format!(
                "servers over several nodes ({})",
                hw.interconnect.as_deref().unwrap_or("")
            ),
        ));
    }
    let gpu = lower(&hw.gpu);
    let family = if gpu.contains("rtx pro 6000") {
        "rtx-pro-6000-x8"
    } else if gpu.contains("b200") {
        "b200-x8"
    } else if gpu.contains("h200") {
        "h200-x8"
    } else if gpu.contains("h100") {
        "h100-x8"
    } else {
        return Err(Unexpressible::new(
            UnexpressibleKind::UnknownMachine,
            format!(
                "no machine preset for GPU `{}`; set hardware.machine to a probe profile",
                hw.gpu.as_deref().unwrap_or("?")
            ),
        ));
    };
    let count = stated(&r.id, "hardware.count", &hw.count)?;
    if family == "rtx-pro-6000-x8"
        && count.is_some_and(|n| (9..=16).contains(&n))
        && hw.virtualized != Some(true)
        && lower(&hw.p2p) != "disabled"
    {
        return Ok(sixteen_gpu_box(r, count.unwrap_or(16), assumptions));
    }
    match count {
        Some(8) => {}
        Some(n @ 1..8) => assumptions.push(format!(
            "{n}× {}: the first {n} GPUs of the 8-GPU preset (where the server starts on such a box; one socket's for 4 on the rtx6kpro wiki's dual-socket host)",
            hw.gpu.as_deref().unwrap_or("?")
        )),
        n => {
            return Err(Unexpressible::new(
                UnexpressibleKind::UnknownMachine,
                format!(
                    "{}× {}: the machine presets have 8 GPUs (16 for RTX PRO 6000 on bare metal; a box of fewer runs on part of one); set hardware.machine to a probe profile of that box",
                    n.map_or("?".into(), |n| n.to_string()),
                    hw.gpu.as_deref().unwrap_or("?")
                ),
            ));
        }
    }
    if family != "rtx-pro-6000-x8" {
        return Ok(family.to_string());
    }
    let p2p = lower(&hw.p2p);
    match hw.virtualized {
        Some(true) if p2p == "enabled" => Err(Unexpressible::new(
            UnexpressibleKind::UnknownMachine,
            "RTX PRO 6000 in a VM with working P2P: no preset (the VM preset bounces P2P through host memory)",
        )),
        Some(true) => Ok("rtx-pro-6000-x8-vm-hostbounce".into()),
        virt => {
            if p2p == "disabled" {
                return Err(Unexpressible::new(
                    UnexpressibleKind::UnknownMachine,
                    "RTX PRO 6000 bare metal with P2P disabled: no preset",
                ));
            }
            if virt.is_none() || p2p != "enabled" {
                assumptions.push(format!(
                    "bare metal with P2P assumed (record: p2p {}, virtualized {})",
                    hw.p2p.as_deref().unwrap_or("not stated"),
                    virt.map_or("unknown".to_string(), |v| v.to_string())
                ));
            }
            let (preset, why) = match NcclTuning::of(r) {
                NcclTuning::Default => return Ok("rtx-pro-6000-x8-baremetal".into()),
                NcclTuning::Tuned(why) => ("rtx-pro-6000-x8-baremetal-nccl-tuned", why),
                NcclTuning::Ll128(why) => ("rtx-pro-6000-x8-baremetal-nccl-ll128", why),
                NcclTuning::Simple(why) => ("rtx-pro-6000-x8-baremetal-nccl-simple", why),
            };
            assumptions.push(format!(
                "{why}: NCCL tuned as on the rtx6kpro wiki's dual-Turin box (its published \
                 all-reduce curves, `{preset}`)"
            ));
            Ok(preset.into())
        }
    }
}

/// The 16-GPU RTX PRO 6000 box the community published (four PCIe switches of four GPUs,
/// `rtx-pro-6000-x16-pcie-switch`) for a record of 9–16 such GPUs on one host, bare metal; a
/// server of fewer than 16 runs on its first GPUs, as on the 8-GPU box.
fn sixteen_gpu_box(r: &Record, n: u32, assumptions: &mut Vec<String>) -> String {
    let gpu = r.hardware.gpu.as_deref().unwrap_or("?");
    assumptions.push(format!(
        "{n}× {gpu} on one host: the rtx6kpro wiki's published 16-GPU box (four PCIe Gen5 switches of four GPUs, `rtx-pro-6000-x16-pcie-switch`{}); bare metal with P2P assumed (record: p2p {}, virtualized {})",
        if n < 16 { ", its first GPUs" } else { "" },
        r.hardware.p2p.as_deref().unwrap_or("not stated"),
        r.hardware
            .virtualized
            .map_or("unknown".to_string(), |v| v.to_string())
    ));
    "rtx-pro-6000-x16-pcie-switch".into()
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

/// The bench_serving run a record describes, from its `(input_len, concurrency, num_prompts)`
/// as read ([`stated`]) and its output length, or why not.
fn bench_workload(
    w: &RecordWorkload,
    (input, conc, num_prompts): (Option<u32>, Option<u32>, Option<u32>),
    why: &mut Vec<Unexpressible>,
    assumptions: &mut Vec<String>,
) -> Option<Workload> {
    use UnexpressibleKind as K;
    let output = output_len(w);
    match (input, output, conc) {
        (Some(i), Some(o), Some(c)) if i > 0 && o > 0 && c > 0 => {
            let n = num_prompts.filter(|n| *n > 0).unwrap_or_else(|| {
                    assumptions.push(format!(
                        "--num-prompts {} (InferenceX: 10 × concurrency), --random-range-ratio {INFERENCEX_RANGE_RATIO}",
                        c * INFERENCEX_PROMPTS_PER_CONCURRENCY
                    ));
                    c * INFERENCEX_PROMPTS_PER_CONCURRENCY
                });
            Some(Workload {
                num_prompts: n,
                random_input_len: i,
                random_output_len: o,
                random_range_ratio: INFERENCEX_RANGE_RATIO,
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

/// The model preset of `r`, or a reason naming its checkpoint and quantization.
fn model_of(r: &Record, quant: &str, why: &mut Vec<Unexpressible>) -> Option<&'static str> {
    let model = model_preset(r.model.as_deref().unwrap_or(""), quant);
    if model.is_none() {
        why.push(Unexpressible::new(
            UnexpressibleKind::UnknownModel,
            format!(
                "`{}` ({}) matches no model preset; name a preset (`sim models list`)",
                r.model.as_deref().unwrap_or("no model"),
                if quant.is_empty() {
                    "quantization not stated"
                } else {
                    quant
                }
            ),
        ));
    }
    model
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
            w,
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
            "{} on the box's first {} of {n} GPUs (the server's default --base-gpu-id 0)",
            l.short_name(),
            l.gpus()
        ));
    }
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
    let mut knobs = launch_knobs(engine, &flags, &quant, &mut assumptions);
    knobs.decode_context_parallel = sizes.dcp.filter(|d| *d > 1);
    if inferencex_config(&flags).is_none() && family == MetricFamily::BenchServing {
        assumptions.push("server flags not stated: SGLang defaults".into());
    }
    Ok(Expressed {
        id: r.id.clone(),
        machine,
        model: model.to_string(),
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
        speculation: (r.parallel.mtp == Some(true)).then(|| record_speculation(r, model, engine)),
        shared_prompt: family.streams_share_prompt().then(|| {
            let stated = output_len(&r.workload);
            SharedPrompt {
                output_tokens_per_stream: stated.unwrap_or(LLM_DECODE_BENCH_MAX_TOKENS),
                output_stated: stated.is_some(),
            }
        }),
    })
}
