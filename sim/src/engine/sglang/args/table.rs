//! The SGLang flags shardwise reads: for each, its `dest`, the option strings SGLang declares, the
//! kind of value, the values SGLang allows, the range the simulator takes, whether it changes the
//! prediction (modelled) or is only kept (recorded), and, for the flags `sim` itself takes, their
//! help. This table is the one description of SGLang's flags: the launch-line and server_args-dump
//! readers, `sim`'s own command-line flags (clap arguments built from it), the `try:` lines and
//! every typed accessor ([`super::SglangArgs::int`] and the rest take a [`Spec`], never a string)
//! are derived from it. Choices are in `choices.rs`.

use super::FlagClass;
use super::choices::*;

/// The kind of value an option takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// `type=int`.
    Int,
    /// `type=float`.
    Float,
    /// `action="store_true"`: no value.
    Flag,
    /// `type=str`, any value.
    Str,
    /// `type=str, choices=[…]`.
    Choice(&'static [&'static str]),
    /// `nargs="+", type=int`: one or more integers (`--cuda-graph-bs 1 2 4 8`), read from a
    /// launch line as the words up to the next option and from a dump as a Python list; the
    /// value is kept as written and read by [`int_list`].
    Ints,
    /// `nargs="+", type=str`: one or more words (vLLM's `set[str]` fields, `--cpu-offload-params
    /// experts`), read as [`Kind::Ints`] is and kept as written ([`str_list`] reads it).
    Strs,
    /// vLLM's `type=human_readable_int` (`--max-num-batched-tokens 8k`) and, with `auto`,
    /// `human_readable_int_or_auto` (`--max-model-len 128K`, `-1`, `auto`): an integer or a
    /// number with a suffix, read by [`human_int`]; the reader keeps the integer it stands for.
    HumanInt { auto: bool },
}

impl Kind {
    /// A kind whose value is a number or a list of numbers: what a record's text can state
    /// wrongly and shardwise must then refuse, rather than price the default in its place (a
    /// choice is not judged so: the community forks add their own, `--nsa-prefill-backend b12x`).
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Kind::Int | Kind::Float | Kind::Ints | Kind::HumanInt { .. }
        )
    }
}

/// A [`Kind::HumanInt`] value as vLLM reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HumanInt {
    Value(i64),
    /// `-1` or `auto` where the flag takes it: the length derived from the model's config, cut
    /// at startup to what the KV cache holds.
    Auto,
}

/// Reads `text` as vLLM's `human_readable_int` does (`vllm/utils/argparse_utils.py`,
/// local-inference-lab/vllm @28be48fa): a plain integer (Python's `int()`: a sign, `_` between
/// digits), or a number with one suffix: `k m g t` decimal (×10³, 10⁶, 10⁹, 10¹²; a decimal point
/// allowed, the product truncated as `int(float(n) × mult)`: `25.6k` = 25,600) or `K M G T`
/// binary (×2¹⁰, 2²⁰, 2³⁰, 2⁴⁰; whole numbers only). With `auto` (`human_readable_int_or_auto`)
/// also `-1` and `auto` (any case). The error says what vLLM's argparse would refuse.
pub fn human_int(text: &str, auto: bool) -> Result<HumanInt, String> {
    let t = text.trim();
    if auto && (t == "-1" || t.eq_ignore_ascii_case("auto")) {
        return Ok(HumanInt::Auto);
    }
    let plain = |s: &str| -> Option<i64> {
        let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
        let well_formed = !digits.is_empty()
            && !digits.starts_with('_')
            && !digits.ends_with('_')
            && !digits.contains("__")
            && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
        well_formed
            .then(|| s.replace('_', "").parse::<i64>().ok())
            .flatten()
    };
    if let Some(n) = plain(t) {
        return Ok(HumanInt::Value(n));
    }
    let refuse = || {
        let plain = if auto {
            "an integer, -1 or auto"
        } else {
            "an integer"
        };
        format!("is not {plain} or a number with a k/m/g/t (×1000) or K/M/G/T (×1024) suffix")
    };
    let Some(suffix) = t.chars().last() else {
        return Err(refuse());
    };
    let number = &t[..t.len() - suffix.len_utf8()];
    let is_number = !number.is_empty()
        && !number.starts_with('.')
        && !number.ends_with('.')
        && number.matches('.').count() <= 1
        && number.chars().all(|c| c.is_ascii_digit() || c == '.');
    if !is_number {
        return Err(refuse());
    }
    // the suffix's power of 1000 (lower case) or of 1024 (upper case)
    let Some(power) = "kmgt".find(suffix.to_ascii_lowercase()) else {
        return Err(refuse());
    };
    let power = power as u32 + 1;
    let value = if suffix.is_ascii_lowercase() {
        let v = number.parse::<f64>().map_err(|_| refuse())? * 1000f64.powi(power as i32);
        // Python's int() of the float: truncated toward zero
        (v < i64::MAX as f64).then_some(v as i64)
    } else {
        let whole = number.parse::<i64>().map_err(|_| {
            format!(
                "decimals are not allowed with binary suffixes like {suffix} (vLLM refuses it): \
                 did you mean {number}{}?",
                suffix.to_ascii_lowercase()
            )
        })?;
        whole.checked_mul(1i64 << (10 * power))
    };
    value
        .map(HumanInt::Value)
        .ok_or_else(|| "is implausibly large".to_string())
}

/// The words of an `nargs="+"` string value as a launch line (`a b`) or a dump (`['a', 'b']`,
/// `{'a'}`) writes them.
pub fn str_list(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '{' | '}'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The integers of an `nargs="+"` value as either engine's launch line or args dump writes them
/// (`1 2 4 8`, `[1, 2, 4, 8]`, `1,2,4,8`); `None` when a word is not a non-negative integer
/// that fits `u32`, or there is none.
pub fn int_list(text: &str) -> Option<Vec<u32>> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        return None;
    }
    words.iter().map(|w| w.parse::<u32>().ok()).collect()
}

/// Why a launch line's `--config FILE` is refused: both engines read a YAML file of flags there
/// (vLLM's `FlexibleArgumentParser._pull_args_from_config`, SGLang's `--config` merger), which a
/// launch line does not carry; priced without it, a server would be read on defaults it does not
/// run.
pub const CONFIG_FILE_REFUSED: &str = "a YAML file of flags, which shardwise does not read (the flags in it would be missed): put them on the launch line";

/// The values of a modelled flag the simulator takes (SGLang may take more).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bounds {
    /// Any value of the kind.
    Any,
    /// An integer of at least this (and at most `u32::MAX`).
    AtLeast(i64),
    /// An integer of at least the first, or exactly the second (SGLang's "off" value, which does
    /// what the text says).
    AtLeastOr(i64, i64, &'static str),
    /// A fraction in (0, 1].
    Fraction,
    /// A number of at least this, and why not less.
    AtLeastFloat(f64, &'static str),
    /// Values SGLang takes that the simulator refuses, each with why.
    Refuse(&'static [(&'static str, &'static str)]),
    /// A count of bytes: at least 1, past `u32`'s range (vLLM's `--kv-cache-memory-bytes 20G`).
    Bytes,
}

/// How `sim`'s own command line offers a flag.
#[derive(Debug, Clone, Copy)]
pub struct CliFlag {
    /// The placeholder in `--help` (`N`, `TOKENS`).
    pub value_name: &'static str,
    pub help: &'static str,
    /// Spellings `sim` accepts beside SGLang's (`--tp`, `--mem-frac`): the abbreviations SGLang's
    /// argparse resolves on a launch line.
    pub aliases: &'static [&'static str],
}

/// One flag shardwise knows.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub dest: &'static str,
    /// Option strings, the canonical one first.
    pub flags: &'static [&'static str],
    pub kind: Kind,
    pub class: FlagClass,
    pub bounds: Bounds,
    /// `Some` for the flags `sim predict|run|sweep|advise|…` take themselves.
    pub cli: Option<CliFlag>,
}

impl Spec {
    /// A row of an engine's flag table (SGLang's here, vLLM's in [`crate::engine::vllm::args`]).
    pub(crate) const fn new(
        dest: &'static str,
        flags: &'static [&'static str],
        kind: Kind,
        class: FlagClass,
    ) -> Spec {
        Spec {
            dest,
            flags,
            kind,
            class,
            bounds: Bounds::Any,
            cli: None,
        }
    }

    pub(crate) const fn bounds(mut self, bounds: Bounds) -> Spec {
        self.bounds = bounds;
        self
    }

    /// Offered on `sim`'s command line.
    const fn cli(mut self, value_name: &'static str, help: &'static str) -> Spec {
        self.cli = Some(CliFlag {
            value_name,
            help,
            aliases: &[],
        });
        self
    }

    /// Offered on `sim`'s command line, also as `aliases`.
    const fn cli_as(
        mut self,
        aliases: &'static [&'static str],
        value_name: &'static str,
        help: &'static str,
    ) -> Spec {
        self.cli = Some(CliFlag {
            value_name,
            help,
            aliases,
        });
        self
    }

    /// The canonical option string (`--tp-size`).
    pub fn canonical(&self) -> &'static str {
        self.flags[0]
    }

    /// How a record's `key` stating `value` for this row is judged
    /// ([`crate::engine::record::unreadable_values`]): a numeric setting that changes the
    /// prediction is checked as the engine's launch line checks it (`check`, given the key and
    /// value as spelled); a layout size (`layout`: the record's `parallel` field states those, its
    /// words are not read for them), a recorded row (`--port`) or a word-valued one is not judged.
    pub fn judge_stated(
        &self,
        layout: &[&str],
        key: &str,
        value: &str,
        check: impl FnOnce(&str) -> Result<(), String>,
    ) -> Result<(), String> {
        if self.class != FlagClass::Modelled
            || !self.kind.is_numeric()
            || layout.contains(&self.dest)
        {
            return Ok(());
        }
        if value.is_empty() {
            return Err(format!("{key}: states no value"));
        }
        let spelled = if key.starts_with('-') {
            format!("{key} {value}")
        } else {
            format!("{key}={value}")
        };
        check(&spelled)
    }
}

/// A modelled row (shared with vLLM's table, [`crate::engine::vllm::args::table`]).
pub(crate) const fn m(dest: &'static str, flags: &'static [&'static str], kind: Kind) -> Spec {
    Spec::new(dest, flags, kind, FlagClass::Modelled)
}

/// A recorded row.
pub(crate) const fn r(dest: &'static str, flags: &'static [&'static str], kind: Kind) -> Spec {
    Spec::new(dest, flags, kind, FlagClass::Recorded)
}

use Bounds::*;
use Kind::*;

const KV_REFUSED: &[(&str, &str)] = &[(
    "fp4_e2m1",
    "an FP4 KV cache is not modelled; use auto, bf16, bfloat16, fp8_e4m3 or fp8_e5m2",
)];
const NGRAM_REFUSED: &[(&str, &str)] = &[(
    "NGRAM",
    "n-gram speculation is not modelled; EAGLE, EAGLE3, NEXTN and STANDALONE are",
)];

pub const TP_SIZE: Spec = m("tp_size", &["--tp-size", "--tensor-parallel-size"], Int)
    .bounds(AtLeast(1))
    .cli_as(&["tp"], "N", "tensor-parallel size (default: every GPU of the machine; with --server-args, SGLang's default 1)");
pub const PP_SIZE: Spec = m("pp_size", &["--pp-size", "--pipeline-parallel-size"], Int)
    .bounds(AtLeast(1))
    .cli_as(&["pp"], "N", "pipeline stages");
pub const EP_SIZE: Spec = m(
    "ep_size",
    &["--ep-size", "--expert-parallel-size", "--ep"],
    Int,
)
.bounds(AtLeast(1))
.cli(
    "N",
    "expert-parallel size inside the TP group (1 = experts sliced by TP)",
);
pub const DP_SIZE: Spec = m("dp_size", &["--dp-size", "--data-parallel-size"], Int)
    .bounds(AtLeast(1))
    .cli_as(
        &["dp"],
        "N",
        "data-parallel attention replicas: must equal `--tp` with DP attention",
    );
pub const ENABLE_DP_ATTENTION: Spec = m("enable_dp_attention", &["--enable-dp-attention"], Flag)
    .cli(
        "",
        "attention data-parallel over the TP group (`--dp` = `--tp`)",
    );
pub const MEM_FRACTION_STATIC: Spec = m("mem_fraction_static", &["--mem-fraction-static"], Float)
    .bounds(Fraction)
    .cli_as(&["mem-frac"], "FRACTION", "share of GPU memory for weights + KV pool (default: SGLang's for the GPU's memory and the layout)");
pub const KV_CACHE_DTYPE: Spec = m(
    "kv_cache_dtype",
    &["--kv-cache-dtype"],
    Choice(KV_CACHE_DTYPES),
)
.bounds(Refuse(KV_REFUSED))
.cli(
    "DTYPE",
    "SGLang's values (`auto` = the checkpoint's choice)",
);
pub const CHUNKED_PREFILL_SIZE: Spec = m("chunked_prefill_size", &["--chunked-prefill-size"], Int)
    .bounds(AtLeastOr(1, -1, "to disable chunked prefill"))
    .cli("TOKENS", "most prefill tokens per iteration; -1 disables chunking (default: SGLang's for the GPU's memory)");
pub const MAX_PREFILL_TOKENS: Spec = m("max_prefill_tokens", &["--max-prefill-tokens"], Int)
    .bounds(AtLeast(1))
    .cli("TOKENS", "SGLang's default 16384");
pub const MAX_RUNNING_REQUESTS: Spec = m("max_running_requests", &["--max-running-requests"], Int)
    .bounds(AtLeast(1))
    .cli("N", "default: what the KV pool holds");
pub const MAX_TOTAL_TOKENS: Spec = m("max_total_tokens", &["--max-total-tokens"], Int)
    .bounds(AtLeast(1))
    .cli("TOKENS", "cap on the KV pool's tokens");
pub const CONTEXT_LENGTH: Spec = m("context_length", &["--context-length"], Int)
    .bounds(AtLeast(1))
    .cli("TOKENS", "default: the model's");
/// `--cuda-graph-bs 1 2 4 8 …` (`nargs="+"`): the decode batches SGLang captures. Given, its
/// largest is `cuda_graph_max_bs` whatever `--cuda-graph-max-bs` says (`server_args.py`
/// `_handle_gpu_memory_settings`: `self.cuda_graph_max_bs = max(self.cuda_graph_bs)`), so it
/// sets the largest decode batch replayed as a graph and the graph memory the default
/// `--mem-fraction-static` reserves (`cuda_graph_max_bs × 2` MB). A batch between two sizes is
/// padded to the next one (`cuda_graph_runner.py`, `bisect`), which is not priced.
pub const CUDA_GRAPH_BS: Spec = m("cuda_graph_bs", &["--cuda-graph-bs"], Ints).bounds(AtLeast(1));
pub const CUDA_GRAPH_MAX_BS: Spec = m("cuda_graph_max_bs", &["--cuda-graph-max-bs"], Int)
    .bounds(AtLeast(1))
    .cli("N", "default: SGLang's for the GPU's memory and `--tp`");
pub const DISABLE_CUDA_GRAPH: Spec = m("disable_cuda_graph", &["--disable-cuda-graph"], Flag).cli(
    "",
    "run every step eagerly (each kernel launched from the CPU)",
);
pub const DISABLE_CUSTOM_ALL_REDUCE: Spec = m(
    "disable_custom_all_reduce",
    &["--disable-custom-all-reduce"],
    Flag,
)
.cli("", "NCCL for every all-reduce");
// the RTX PRO 6000 community builds' PCIe one-shot all-reduce (lukealonso/sglang)
pub const ENABLE_PCIE_ONESHOT_ALLREDUCE: Spec = m("enable_pcie_oneshot_allreduce", &["--enable-pcie-oneshot-allreduce"], Flag)
    .cli("", "the RTX PRO 6000 community builds' one-shot PCIe all-reduce for small messages (below 48 KB on 8 GPUs, 120 KB on 4; NCCL above)");
pub const MOE_A2A_BACKEND: Spec = m("moe_a2a_backend", &["--moe-a2a-backend"], Choice(MOE_A2A_BACKENDS))
    .cli("BACKEND", "`deepep`, `mooncake`, …; `none` = all-reduce after the MoE. In `advise` and `sweep` it applies to the layouts it can apply to (EP over the TP group)");
pub const PP_MAX_MICRO_BATCH_SIZE: Spec = m(
    "pp_max_micro_batch_size",
    &["--pp-max-micro-batch-size"],
    Int,
)
.bounds(AtLeast(1))
.cli("N", "most requests per pipeline micro-batch");
pub const PP_ASYNC_BATCH_DEPTH: Spec = m("pp_async_batch_depth", &["--pp-async-batch-depth"], Int)
    .bounds(AtLeast(0))
    .cli("N", "micro-batches in flight beyond `--pp-size`");
pub const STREAM_INTERVAL: Spec = m("stream_interval", &["--stream-interval"], Int)
    .bounds(AtLeast(1))
    .cli("STEPS", "decode steps between streamed chunks (the gaps bench_serving's ITL sees are this many steps long)");
pub const SCHEDULER_RECV_INTERVAL: Spec = m(
    "scheduler_recv_interval",
    &["--scheduler-recv-interval"],
    Int,
)
.bounds(AtLeast(1))
.cli(
    "STEPS",
    "decode steps between the scheduler's reads of new requests (a request arriving between them waits)",
);
pub const DISABLE_RADIX_CACHE: Spec = m("disable_radix_cache", &["--disable-radix-cache"], Flag)
    .cli("", "no prefix cache: every prompt is prefilled whole");
pub const ENABLE_MIXED_CHUNK: Spec = m("enable_mixed_chunk", &["--enable-mixed-chunk"], Flag)
    .cli("", "prefill chunks run in the same batch as decodes");
pub const SCHEDULE_POLICY: Spec = m(
    "schedule_policy",
    &["--schedule-policy"],
    Choice(SCHEDULE_POLICIES),
)
.cli("POLICY", "`fcfs`, `lpm`, …");
pub const DISABLE_OVERLAP_SCHEDULE: Spec = m(
    "disable_overlap_schedule",
    &["--disable-overlap-schedule"],
    Flag,
)
.cli(
    "",
    "the CPU schedules the next batch only after the GPU finished this one",
);
pub const PAGE_SIZE: Spec = m("page_size", &["--page-size"], Int)
    .bounds(AtLeast(1))
    .cli("TOKENS", "KV pool page");
pub const ATTENTION_BACKEND: Spec = m(
    "attention_backend",
    &["--attention-backend"],
    Choice(ATTENTION_BACKENDS),
)
.cli("BACKEND", "SGLang's attention kernels");
pub const NSA_PREFILL_BACKEND: Spec = m(
    "nsa_prefill_backend",
    &["--nsa-prefill-backend"],
    Choice(NSA_BACKENDS),
)
.cli(
    "BACKEND",
    "the DSA backend's prefill kernel (default: `trtllm` on Blackwell with an fp8 cache, `flashmla_auto` elsewhere for fp8, `flashmla_sparse` for bf16)",
);
pub const NSA_DECODE_BACKEND: Spec = m(
    "nsa_decode_backend",
    &["--nsa-decode-backend"],
    Choice(NSA_BACKENDS),
)
.cli(
    "BACKEND",
    "the DSA backend's decode kernel (default: `flashmla_kv` for an fp8 cache, `trtllm` on Blackwell and `fa3` on Hopper for bf16)",
);
/// JSON merged into the model's HF config at load (`ModelConfig`'s `json_model_override_args`):
/// `index_topk_pattern` / `indexer_types` are read ([`crate::options::ModelOverrides`]), other
/// keys said as not modelled.
pub const JSON_MODEL_OVERRIDE_ARGS: Spec = m(
    "json_model_override_args",
    &["--json-model-override-args"],
    Str,
);
pub const MOE_RUNNER_BACKEND: Spec = m(
    "moe_runner_backend",
    &["--moe-runner-backend"],
    Choice(MOE_RUNNER_BACKENDS),
)
.cli("BACKEND", "SGLang's MoE kernels");
pub const QUANTIZATION: Spec = m("quantization", &["--quantization"], Choice(QUANTIZATIONS))
    .cli("METHOD", "weight quantization method");
/// Weight offload (`ServerArgs`' `ExecOffload` group, `srt/utils/offloader.py` @ 046a9e40;
/// [`crate::options::WeightOffload`]): GiB a GPU (an integer) held in pinned host memory and
/// copied in line before each layer (`OffloaderV1`).
pub const CPU_OFFLOAD_GB: Spec = m("cpu_offload_gb", &["--cpu-offload-gb"], Int)
    .bounds(AtLeast(0))
    .cli(
        "GIB",
        "GiB of weights per GPU held in host memory, from the first decoder layer, copied to the GPU every forward pass (SGLang's OffloaderV1)",
    );
/// Group offload (`OffloaderV2`): every this many decoder layers (-1 = off), the last
/// `--offload-num-in-group`, copied `--offload-prefetch-step` ahead.
pub const OFFLOAD_GROUP_SIZE: Spec =
    m("offload_group_size", &["--offload-group-size"], Int).bounds(AtLeastOr(1, -1, "off"));
pub const OFFLOAD_NUM_IN_GROUP: Spec =
    m("offload_num_in_group", &["--offload-num-in-group"], Int).bounds(AtLeast(1));
pub const OFFLOAD_PREFETCH_STEP: Spec =
    m("offload_prefetch_step", &["--offload-prefetch-step"], Int).bounds(AtLeast(1));
/// Where group offload keeps the weights: `cpu` (pinned host memory), `shm_cpu` (one shared
/// host copy, TP 1 only), `sharded_gpu` (gathered from peer GPUs), `meta` (debugging).
pub const OFFLOAD_MODE: Spec = m(
    "offload_mode",
    &["--offload-mode"],
    Choice(&["cpu", "shm_cpu", "sharded_gpu", "meta"]),
)
.bounds(Refuse(&[
    (
        "sharded_gpu",
        "gathers each offloaded weight from the peer GPUs over CUDA IPC every pass, which shardwise does not price",
    ),
    (
        "meta",
        "is SGLang's debugging mode (the weights are never loaded)",
    ),
]));
pub const SPECULATIVE_ALGORITHM: Spec = m(
    "speculative_algorithm",
    &["--speculative-algorithm"],
    Choice(SPECULATIVE_ALGORITHMS),
)
.bounds(Refuse(NGRAM_REFUSED))
.cli("ALGORITHM", "`EAGLE`, `EAGLE3`, `NEXTN`, `STANDALONE`");
pub const SPECULATIVE_NUM_STEPS: Spec =
    m("speculative_num_steps", &["--speculative-num-steps"], Int)
        .bounds(AtLeast(1))
        .cli("N", "draft passes per step");
pub const SPECULATIVE_EAGLE_TOPK: Spec =
    m("speculative_eagle_topk", &["--speculative-eagle-topk"], Int)
        .bounds(AtLeast(1))
        .cli("N", "draft branches per pass");
pub const SPECULATIVE_NUM_DRAFT_TOKENS: Spec = m(
    "speculative_num_draft_tokens",
    &["--speculative-num-draft-tokens"],
    Int,
)
.bounds(AtLeast(1))
.cli("N", "tokens verified per step");
pub const SPECULATIVE_DRAFT_MODEL_PATH: Spec = m(
    "speculative_draft_model_path",
    &[
        "--speculative-draft-model-path",
        "--speculative-draft-model",
    ],
    Str,
)
.cli("PATH", "the draft model");
/// shardwise's own: tokens accepted per step, which SGLang measures (`accept len`) but does not take.
pub const SPECULATIVE_ACCEPT_LENGTH: Spec = m("speculative_accept_length", &["--speculative-accept-length"], Float)
    .bounds(AtLeastFloat(1.0, "tokens accepted per step count the verified token, so at least 1.0"))
    .cli("TOKENS", "tokens accepted per request and step (shardwise's own: SGLang logs it as `accept len`, bench_serving as `accept_length`)");
/// Two-batch overlap: each MoE layer's batch split in two micro-batches whose expert all-to-all
/// overlaps the other's compute (SGLang `batch_overlap/two_batch_overlap.py`; its cost is
/// `crate::cost::tbo`).
pub const ENABLE_TWO_BATCH_OVERLAP: Spec = m("enable_two_batch_overlap", &["--enable-two-batch-overlap"], Flag)
    .cli("", "split each MoE layer's batch in two micro-batches so that one's expert all-to-all overlaps the other's compute (DeepSeek-V2/V3-class and Qwen3-MoE layers, with --moe-a2a-backend)");
/// shardwise's own: overlap communication with compute, to explore.
pub const OVERLAP_COMM: Spec = m("overlap_comm", &["--overlap-comm"], Flag).cli(
    "",
    "overlap communication with compute (shardwise's own option to explore; not SGLang's)",
);
pub const MODEL_PATH: Spec = r("model_path", &["--model-path", "--model"], Str);
pub const TRUST_REMOTE_CODE: Spec =
    r("trust_remote_code", &["--trust-remote-code"], Flag).cli("", "recorded");
pub const HOST: Spec =
    r("host", &["--host"], Str).cli("HOST", "recorded (bench_serving's `--host` too)");
pub const PORT: Spec =
    r("port", &["--port"], Int).cli("PORT", "recorded (bench_serving's `--port` too)");
pub const NNODES: Spec = r("nnodes", &["--nnodes"], Int)
    .bounds(AtLeast(1))
    .cli("N", "recorded");
pub const NODE_RANK: Spec = r("node_rank", &["--node-rank"], Int)
    .bounds(AtLeast(0))
    .cli("R", "recorded");
pub const DIST_INIT_ADDR: Spec = r(
    "dist_init_addr",
    &["--dist-init-addr", "--nccl-init-addr"],
    Str,
)
.cli("HOST:PORT", "recorded");
pub const DEEPEP_MODE: Spec = r("deepep_mode", &["--deepep-mode"], Choice(DEEPEP_MODES)).cli(
    "MODE",
    "`auto`, `normal`, `low_latency`: recorded, named in DeepEP notes",
);
/// Expert-parallel load balancing: recorded. It replicates and moves experts by their load over a
/// window of steps; the imbalance priced is one step's chance spread of the routing over the
/// ranks, which a long-run rebalance does not remove (vLLM's `--enable-eplb` reads alike).
pub const ENABLE_EPLB: Spec = r("enable_eplb", &["--enable-eplb"], Flag);
pub const BASE_GPU_ID: Spec = r("base_gpu_id", &["--base-gpu-id"], Int);
pub const DECODE_LOG_INTERVAL: Spec = r("decode_log_interval", &["--decode-log-interval"], Int);

/// Every flag shardwise reads, in the order `sim --help` lists them.
pub const SPECS: &[Spec] = &[
    TP_SIZE,
    PP_SIZE,
    EP_SIZE,
    DP_SIZE,
    ENABLE_DP_ATTENTION,
    MEM_FRACTION_STATIC,
    KV_CACHE_DTYPE,
    CHUNKED_PREFILL_SIZE,
    MAX_PREFILL_TOKENS,
    MAX_RUNNING_REQUESTS,
    MAX_TOTAL_TOKENS,
    CONTEXT_LENGTH,
    CUDA_GRAPH_MAX_BS,
    CUDA_GRAPH_BS,
    DISABLE_CUDA_GRAPH,
    DISABLE_CUSTOM_ALL_REDUCE,
    ENABLE_PCIE_ONESHOT_ALLREDUCE,
    MOE_A2A_BACKEND,
    DEEPEP_MODE,
    ENABLE_EPLB,
    PP_MAX_MICRO_BATCH_SIZE,
    PP_ASYNC_BATCH_DEPTH,
    STREAM_INTERVAL,
    SCHEDULER_RECV_INTERVAL,
    OVERLAP_COMM,
    ENABLE_TWO_BATCH_OVERLAP,
    DISABLE_RADIX_CACHE,
    ENABLE_MIXED_CHUNK,
    SCHEDULE_POLICY,
    DISABLE_OVERLAP_SCHEDULE,
    PAGE_SIZE,
    ATTENTION_BACKEND,
    NSA_PREFILL_BACKEND,
    NSA_DECODE_BACKEND,
    JSON_MODEL_OVERRIDE_ARGS,
    MOE_RUNNER_BACKEND,
    QUANTIZATION,
    CPU_OFFLOAD_GB,
    OFFLOAD_GROUP_SIZE,
    OFFLOAD_NUM_IN_GROUP,
    OFFLOAD_PREFETCH_STEP,
    OFFLOAD_MODE,
    SPECULATIVE_ALGORITHM,
    SPECULATIVE_NUM_STEPS,
    SPECULATIVE_EAGLE_TOPK,
    SPECULATIVE_NUM_DRAFT_TOKENS,
    SPECULATIVE_DRAFT_MODEL_PATH,
    SPECULATIVE_ACCEPT_LENGTH,
    TRUST_REMOTE_CODE,
    HOST,
    PORT,
    NNODES,
    NODE_RANK,
    DIST_INIT_ADDR,
    MODEL_PATH,
    r("tokenizer_path", &["--tokenizer-path"], Str),
    r("served_model_name", &["--served-model-name"], Str),
    r("dtype", &["--dtype"], Str),
    r("load_format", &["--load-format"], Str),
    r("revision", &["--revision"], Str),
    r("download_dir", &["--download-dir"], Str),
    r("random_seed", &["--random-seed"], Int),
    r("log_level", &["--log-level"], Str),
    r("api_key", &["--api-key"], Str),
    r("chat_template", &["--chat-template"], Str),
    r("tool_call_parser", &["--tool-call-parser"], Str),
    r("reasoning_parser", &["--reasoning-parser"], Str),
    r("watchdog_timeout", &["--watchdog-timeout"], Float),
    BASE_GPU_ID,
    r("enable_metrics", &["--enable-metrics"], Flag),
    r("skip_server_warmup", &["--skip-server-warmup"], Flag),
    r("enable_p2p_check", &["--enable-p2p-check"], Flag),
    DECODE_LOG_INTERVAL,
];

/// The spec of `dest`.
pub(super) fn spec(dest: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.dest == dest)
}

/// Every option string argparse would match against, with its dest: shardwise's table first,
/// then the rest of SGLang's options.
fn all_options() -> Vec<(String, &'static str)> {
    let mut v: Vec<(String, &'static str)> = SPECS
        .iter()
        .flat_map(|s| s.flags.iter().map(move |f| (f.to_string(), s.dest)))
        .collect();
    for (o, d) in super::names::options() {
        if !v.iter().any(|(x, _)| *x == o) {
            v.push((o, d));
        }
    }
    v
}

/// The modelled option `given` is most likely a misspelling of (at most two letters inserted,
/// dropped, changed or swapped: `--tp-sze`, `--mem-fraction-statc`), for an option SGLang does
/// not have. SGLang's argparse refuses such a line; shardwise says which flag was meant.
pub(super) fn misspelled_modelled(given: &str) -> Option<&'static str> {
    if given.len() < 5 {
        return None;
    }
    nearest_flag(
        given,
        SPECS
            .iter()
            .filter(|s| s.class == FlagClass::Modelled)
            .flat_map(|s| s.flags.iter().copied()),
    )
}

/// The flag of `flags` that `given` is most likely a misspelling of: at most two letters
/// inserted, dropped, changed or swapped, the nearest first; `None` for words under 5 letters.
pub fn nearest_flag<'a>(given: &str, flags: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if given.len() < 5 {
        return None;
    }
    flags
        .into_iter()
        .map(|f| (edit_distance(given, f), f))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, f)| f)
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbouring characters, each 1.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// How an option string given on a launch line resolves, the way argparse resolves it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Resolved {
    /// An option string of SGLang (or shardwise), exactly or as the only prefix match.
    Known {
        dest: &'static str,
        /// The full option when `given` was an abbreviation of it.
        expanded: Option<String>,
    },
    /// A prefix of several options (argparse refuses it).
    Ambiguous(Vec<String>),
    /// Not an option SGLang of that version has.
    Unknown,
}

/// Resolves an option string (`--tp`, `--mem-frac`, `--tensor-parallel-size`).
pub(super) fn resolve(given: &str) -> Resolved {
    let all = all_options();
    if let Some((_, d)) = all.iter().find(|(o, _)| o == given) {
        return Resolved::Known {
            dest: d,
            expanded: None,
        };
    }
    if !given.starts_with("--") || given.len() < 3 {
        return Resolved::Unknown;
    }
    let hits: Vec<&(String, &'static str)> =
        all.iter().filter(|(o, _)| o.starts_with(given)).collect();
    match hits.as_slice() {
        [] => Resolved::Unknown,
        [(o, d)] => Resolved::Known {
            dest: d,
            expanded: Some(o.clone()),
        },
        many if many.iter().all(|(_, d)| *d == many[0].1) => Resolved::Known {
            dest: many[0].1,
            expanded: Some(many[0].0.clone()),
        },
        many => Resolved::Ambiguous(many.iter().map(|(o, _)| o.clone()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argparse_style_resolution() {
        let known = |g: &str| match resolve(g) {
            Resolved::Known { dest, .. } => dest,
            other => panic!("{g}: {other:?}"),
        };
        assert_eq!(known("--tp"), "tp_size");
        assert_eq!(known("--tensor-parallel-size"), "tp_size");
        assert_eq!(known("--mem-frac"), "mem_fraction_static");
        assert_eq!(known("--ep"), "ep_size");
        assert_eq!(known("--dp"), "dp_size");
        assert_eq!(known("--model"), "model_path");
        assert_eq!(known("--nsa-decode-backend"), "nsa_decode_backend");
        assert_eq!(known("--fp8-gemm-backend"), "fp8_gemm_runner_backend");
        match resolve("--pp") {
            Resolved::Ambiguous(v) => assert!(v.contains(&"--pp-size".to_string())),
            other => panic!("{other:?}"),
        }
        assert_eq!(resolve("--no-such-flag"), Resolved::Unknown);
    }

    #[test]
    fn misspellings_of_modelled_flags_name_the_flag() {
        assert_eq!(misspelled_modelled("--tp-sze"), Some("--tp-size"));
        assert_eq!(
            misspelled_modelled("--mem-fraction-statc"),
            Some("--mem-fraction-static")
        );
        assert_eq!(
            misspelled_modelled("--kv-cahce-dtype"),
            Some("--kv-cache-dtype")
        );
        assert_eq!(misspelled_modelled("--no-such-flag"), None);
        assert_eq!(misspelled_modelled("--host"), None);
        assert_eq!(edit_distance("abcd", "acbd"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn every_table_dest_is_a_field_or_shardwise_own() {
        for s in SPECS {
            assert!(
                super::super::names::is_field(s.dest)
                    // shardwise's own, and the RTX PRO 6000 community builds' one-shot kernel
                    || [
                        "speculative_accept_length",
                        "overlap_comm",
                        "enable_pcie_oneshot_allreduce",
                    ]
                    .contains(&s.dest),
                "{} is not a ServerArgs field",
                s.dest
            );
        }
    }
}
