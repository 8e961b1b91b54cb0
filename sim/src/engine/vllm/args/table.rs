//! The vLLM flags shardwise reads, one row each by the same [`Spec`] mechanism as SGLang's table
//! ([`crate::engine::sglang::args::SPECS`]): vLLM's `dest`, its option strings (the canonical one first,
//! then the short aliases vLLM declares), the value kind, the bounds the simulator takes, and
//! whether it changes the prediction. Names and defaults: vLLM main (`engine/arg_utils.py`
//! `EngineArgs.add_cli_args`, `config/parallel.py`, `config/cache.py`, `config/scheduler.py`).

use crate::engine::sglang::args::{Bounds, Kind, Spec};
use crate::engine::sglang::args::{modelled_row as m, recorded_row as r};

use Bounds::*;
use Kind::*;

/// `--kv-cache-dtype` values of vLLM's `CacheDType` (`config/cache.py`) the simulator takes.
pub const KV_CACHE_DTYPES: &[&str] = &["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"];

pub const TENSOR_PARALLEL_SIZE: Spec = m(
    "tensor_parallel_size",
    &["--tensor-parallel-size", "-tp"],
    Int,
)
.bounds(AtLeast(1));
pub const PIPELINE_PARALLEL_SIZE: Spec = m(
    "pipeline_parallel_size",
    &["--pipeline-parallel-size", "-pp"],
    Int,
)
.bounds(AtLeast(1));
pub const DATA_PARALLEL_SIZE: Spec =
    m("data_parallel_size", &["--data-parallel-size", "-dp"], Int).bounds(AtLeast(1));
pub const ENABLE_EXPERT_PARALLEL: Spec = m(
    "enable_expert_parallel",
    &["--enable-expert-parallel"],
    Flag,
);
pub const DECODE_CONTEXT_PARALLEL_SIZE: Spec = m(
    "decode_context_parallel_size",
    &["--decode-context-parallel-size", "-dcp"],
    Int,
)
.bounds(AtLeast(1));
pub const GPU_MEMORY_UTILIZATION: Spec = m(
    "gpu_memory_utilization",
    &["--gpu-memory-utilization"],
    Float,
)
.bounds(Fraction);
/// `--max-model-len` (`human_readable_int_or_auto`, `engine/arg_utils.py` `_compute_kwargs`):
/// `131072`, `128k` (128,000), `128K` (131,072), or `-1` / `auto` (the config's length, cut to
/// what the KV cache holds).
pub const MAX_MODEL_LEN: Spec = m(
    "max_model_len",
    &["--max-model-len"],
    HumanInt { auto: true },
)
.bounds(AtLeast(1));
pub const MAX_NUM_SEQS: Spec = m("max_num_seqs", &["--max-num-seqs"], Int).bounds(AtLeast(1));
/// `--kv-cache-memory-bytes` (`CacheConfig.kv_cache_memory_bytes`, `human_readable_int`:
/// `20G` = 20 GiB, `20g` = 20 GB): the KV cache each GPU holds; `--gpu-memory-utilization` is then
/// ignored (`Worker.determine_available_memory` returns it as the memory for the cache).
pub const KV_CACHE_MEMORY_BYTES: Spec = m(
    "kv_cache_memory_bytes",
    &["--kv-cache-memory-bytes"],
    HumanInt { auto: false },
)
.bounds(Bytes);
/// `--max-num-batched-tokens` (`human_readable_int`: `8192`, `8k`, `8K`).
pub const MAX_NUM_BATCHED_TOKENS: Spec = m(
    "max_num_batched_tokens",
    &["--max-num-batched-tokens"],
    HumanInt { auto: false },
)
.bounds(AtLeast(1));
pub const KV_CACHE_DTYPE: Spec = m(
    "kv_cache_dtype",
    &["--kv-cache-dtype"],
    Choice(KV_CACHE_DTYPES),
);
pub const ENFORCE_EAGER: Spec = m("enforce_eager", &["--enforce-eager"], Flag);
/// `--max-cudagraph-capture-size` (`CompilationConfig`'s field as its own flag, vLLM main
/// `engine/arg_utils.py` `add_cli_args`): the largest decode batch replayed as a CUDA graph;
/// a larger one runs without (`config/vllm.py` `_set_cudagraph_sizes`: "If batch size >
/// largest `cudagraph_capture_sizes`, cudagraph will not be used"). The neutral CUDA-graph
/// batch limit; the same setting as `--compilation-config`'s field, and vLLM refuses both.
pub const MAX_CUDAGRAPH_CAPTURE_SIZE: Spec = m(
    "max_cudagraph_capture_size",
    &["--max-cudagraph-capture-size"],
    Int,
)
.bounds(AtLeast(1));
/// `--cudagraph-capture-sizes 1 2 4 8 …` (`nargs="+"`): the decode batches captured; the largest
/// is the CUDA-graph batch limit (`CompilationConfig.max_cudagraph_capture_size`: "set to the
/// largest size in that list"). A batch between two sizes is padded to the next one, which is
/// not priced (the step is costed at its own batch).
pub const CUDAGRAPH_CAPTURE_SIZES: Spec = m(
    "cudagraph_capture_sizes",
    &["--cudagraph-capture-sizes"],
    Ints,
)
.bounds(AtLeast(1));
/// JSON: `cudagraph_mode`, `cudagraph_capture_sizes`, `max_cudagraph_capture_size` are read.
pub const COMPILATION_CONFIG: Spec = m(
    "compilation_config",
    &["--compilation-config", "-cc", "-O"],
    Str,
);
/// JSON: `method`, `num_speculative_tokens`, `model`.
/// `--optimization-level` (`VllmConfig.optimization_level`, default 2; `config/vllm.py`
/// `OptimizationLevel`): 0 = no compilation and no CUDA graphs, 1 = piecewise CUDA graphs,
/// 2 and 3 = full and piecewise, each a default for the compilation fields the line leaves unset
/// (`_apply_optimization_level_defaults`). The parser reads `-O3`, `-O=3` and `-O 3` as it
/// (`FlexibleArgumentParser.parse_args`).
pub const OPTIMIZATION_LEVEL: Spec = m(
    "optimization_level",
    &["--optimization-level"],
    Choice(&["0", "1", "2", "3"]),
);
pub const SPECULATIVE_CONFIG: Spec = m("speculative_config", &["--speculative-config", "-sc"], Str);
/// The Gated-DeltaNet temporal state's dtype (`CacheConfig.mamba_ssm_cache_dtype`): `auto` (the
/// model's dtype, or the dtype the model's config names), `float32`, `float16`.
pub const MAMBA_SSM_CACHE_DTYPE: Spec = m(
    "mamba_ssm_cache_dtype",
    &["--mamba-ssm-cache-dtype"],
    Choice(&["auto", "float32", "float16", "bfloat16"]),
);
/// JSON merged into the HF config at load (`ModelConfig.hf_overrides`): `index_topk_pattern` /
/// `indexer_types` are read ([`crate::options::ModelOverrides`]), other keys said as not modelled.
pub const HF_OVERRIDES: Spec = m("hf_overrides", &["--hf-overrides"], Str);
pub const DISABLE_CUSTOM_ALL_REDUCE: Spec = m(
    "disable_custom_all_reduce",
    &["--disable-custom-all-reduce"],
    Flag,
);
pub const QUANTIZATION: Spec = m("quantization", &["--quantization", "-q"], Str);
/// Online quantization at load (`QuantizationConfigArgs`, vLLM's `config/quantization.py`):
/// a `linear` spec quantizes the linears the checkpoint leaves in BF16, `ignore` names the
/// modules left out ([`crate::options::OnlineQuant`]); the community builds take it beside a
/// quantized checkpoint's own `--quantization` (`modelopt_fp4` with `{"linear": {"weight":
/// "mxfp8"}}`).
pub const QUANTIZATION_CONFIG: Spec = m("quantization_config", &["--quantization-config"], Str);
/// The routed experts' kernels (`KernelConfig.moe_backend` of the community builds the rtx6kpro
/// GLM-5.1 / Kimi runs use: `'moe_backend': 'b12x'` in their start-up logs' non-default args).
pub const MOE_BACKEND: Spec = m("moe_backend", &["--moe-backend"], Str);
/// `--attention-backend`: modelled where it names the b12x fork's sparse-MLA backend
/// (`B12X_MLA_SPARSE`), which pads the heads of a TP size that does not divide them
/// ([`crate::engine::vllm::virtual_tp`]); the other values are kept without effect.
pub const ATTENTION_BACKEND: Spec = m("attention_backend", &["--attention-backend"], Str);
/// The block sizes vLLM's argparse takes (`BlockSize`, `config/cache.py`, vLLM main).
pub const VLLM_BLOCK_SIZES: &[&str] = &["1", "8", "16", "32", "64", "128", "256"];
/// `--block-size`: tokens per KV block, the unit the cache is allocated in (a request holds
/// whole blocks). Default 16 on CUDA ([`crate::engine::vllm::VLLM_BLOCK_SIZE`]).
pub const BLOCK_SIZE: Spec = m("block_size", &["--block-size"], Choice(VLLM_BLOCK_SIZES));
/// `--enable-prefix-caching` and its argparse negation (`BooleanOptionalAction`, one dest in
/// vLLM; two rows here because a flag row has one value): whether requests sharing a prompt
/// share its cached KV ([`crate::engine::ServingEngine::prefix_cache`]; V1's default is on,
/// off for hybrid models before v0.28). They change a prediction only where the requests share
/// a prompt (a decode bench's streams); bench_serving's random prompts share none. A launch line
/// and a record's flag text read them through these rows alike.
pub const ENABLE_PREFIX_CACHING: Spec =
    m("enable_prefix_caching", &["--enable-prefix-caching"], Flag);
pub const NO_ENABLE_PREFIX_CACHING: Spec = m(
    "no_enable_prefix_caching",
    &["--no-enable-prefix-caching"],
    Flag,
);
/// `--enable-chunked-prefill` and its negation (`BooleanOptionalAction`): V1 chunks prompts by
/// default. Without chunking (local-inference-lab/vllm @28be48fa9, 2026-05-24,
/// `engine/arg_utils.py` `_set_default_max_num_seqs_and_batched_tokens_args`) an unset
/// `--max-num-batched-tokens` becomes `max(max_model_len, the default)`, at most
/// `max_num_seqs × max_model_len`, the profiling run's size too, and the scheduler stops
/// admitting at the first waiting prompt larger than the budget left (`v1/core/sched/
/// scheduler.py`: "If chunked_prefill is disabled, we can stop the scheduling here").
pub const ENABLE_CHUNKED_PREFILL: Spec = m(
    "enable_chunked_prefill",
    &["--enable-chunked-prefill"],
    Flag,
);
pub const NO_ENABLE_CHUNKED_PREFILL: Spec = m(
    "no_enable_chunked_prefill",
    &["--no-enable-chunked-prefill"],
    Flag,
);
/// Weight offload (`OffloadConfig`, `config/offload.py` @ 28ee78af, `engine/arg_utils.py`'s
/// "OffloadConfig" group; [`crate::options::WeightOffload`]): the backend, `auto` picking
/// `prefetch` where `--offload-group-size` > 0, else `uva` where `--cpu-offload-gb` > 0
/// (`offloader/base.py`), since v0.17 (before, `--cpu-offload-gb` alone, zero-copy from v0.8.3).
pub const OFFLOAD_BACKEND: Spec = m(
    "offload_backend",
    &["--offload-backend"],
    Choice(&["auto", "uva", "prefetch"]),
);
/// GiB of weights per GPU held in pinned host memory, read in place (UVA).
pub const CPU_OFFLOAD_GB: Spec = m("cpu_offload_gb", &["--cpu-offload-gb"], Float)
    .bounds(AtLeastFloat(0.0, "GiB per GPU held on the host"));
/// Parameter-name segments the UVA budget is limited to (`set[str]`, `nargs="+"`).
pub const CPU_OFFLOAD_PARAMS: Spec = m("cpu_offload_params", &["--cpu-offload-params"], Strs);
/// Prefetch backend: every this many decoder layers, the last `--offload-num-in-group`.
pub const OFFLOAD_GROUP_SIZE: Spec =
    m("offload_group_size", &["--offload-group-size"], Int).bounds(AtLeast(0));
pub const OFFLOAD_NUM_IN_GROUP: Spec =
    m("offload_num_in_group", &["--offload-num-in-group"], Int).bounds(AtLeast(1));
/// Offloaded layers copied ahead, and the static GPU buffers held for them.
pub const OFFLOAD_PREFETCH_STEP: Spec =
    m("offload_prefetch_step", &["--offload-prefetch-step"], Int).bounds(AtLeast(0));
/// Parameter-name segments the prefetch backend moves (`set[str]`; empty = every parameter).
pub const OFFLOAD_PARAMS: Spec = m("offload_params", &["--offload-params"], Strs);
/// The checkpoint, when not given as `vllm serve`'s positional argument.
pub const MODEL: Spec = r("model", &["--model"], Str);
/// `--all2all-backend`'s values (`All2AllBackend`, `config/parallel.py`, local-inference-lab/vllm
/// 28be48fa, 2026-05-24).
pub const VLLM_ALL2ALL_BACKENDS: &[&str] = &[
    "naive",
    "pplx",
    "deepep_high_throughput",
    "deepep_low_latency",
    "mori",
    "nixl_ep",
    "allgather_reducescatter",
    "flashinfer_all2allv",
    "flashinfer_nvlink_two_sided",
    "flashinfer_nvlink_one_sided",
];
/// The backend EP's tokens travel by between DP ranks (`ParallelConfig.all2all_backend`, default
/// `allgather_reducescatter`): run only with DP ranks and EP (`use_all2all_kernels`); the default
/// is the all-gather and reduce-scatter DP attention is priced with, the others an all-to-all
/// dispatch and combine (SGLang's `--moe-a2a-backend`); `naive` and `pplx` were removed and fall
/// back to the default (`_validate_parallel_config`).
pub const ALL2ALL_BACKEND: Spec = m(
    "all2all_backend",
    &["--all2all-backend"],
    Choice(VLLM_ALL2ALL_BACKENDS),
);
/// The default and the removed values that fall back to it: no all-to-all dispatch.
pub const VLLM_GATHER_ALL2ALL: &[&str] = &["allgather_reducescatter", "naive", "pplx"];
/// Expert-parallel load balancing (`--enable-eplb`): recorded. It replicates and moves experts by
/// their load over a window of steps; the imbalance priced here is one step's chance spread of
/// the routing over the ranks, which a long-run rebalance does not remove.
pub const ENABLE_EPLB: Spec = r("enable_eplb", &["--enable-eplb"], Flag);
/// Dual batch overlap (`--enable-dbo`): each step in two micro-batches, one's all-to-all under
/// the other's compute, at 32 decode tokens or 512 with a prefill and above
/// (`dbo_decode_token_threshold`, `dbo_prefill_token_threshold`). vLLM refuses to start it with an
/// all-to-all backend other than DeepEP's (`VllmConfig.__post_init__`); with one it is read but
/// not priced (said on the warning line).
pub const ENABLE_DBO: Spec = r("enable_dbo", &["--enable-dbo"], Flag);
/// The all-to-all backends vLLM's micro-batching runs with.
pub const VLLM_DBO_ALL2ALL: &[&str] = &["deepep_low_latency", "deepep_high_throughput"];
/// A server over several boxes with vLLM's own multiprocessing (`ParallelConfig.nnodes`,
/// `node_rank`, `master_addr`, `master_port`): recorded; the layout spans the machine's nodes
/// as its sizes say. (vLLM's one-letter `-n` / `-r` are not read: unknown, ignored.)
pub const NNODES: Spec = r("nnodes", &["--nnodes"], Int).bounds(AtLeast(1));
pub const NODE_RANK: Spec = r("node_rank", &["--node-rank"], Int).bounds(AtLeast(0));
pub const MASTER_ADDR: Spec = r("master_addr", &["--master-addr"], Str);
pub const MASTER_PORT: Spec = r("master_port", &["--master-port"], Int);

/// Every vLLM flag shardwise reads.
pub const SPECS: &[Spec] = &[
    OPTIMIZATION_LEVEL,
    ALL2ALL_BACKEND,
    ENABLE_EPLB,
    ENABLE_DBO,
    NNODES,
    NODE_RANK,
    MASTER_ADDR,
    MASTER_PORT,
    TENSOR_PARALLEL_SIZE,
    PIPELINE_PARALLEL_SIZE,
    DATA_PARALLEL_SIZE,
    ENABLE_EXPERT_PARALLEL,
    DECODE_CONTEXT_PARALLEL_SIZE,
    GPU_MEMORY_UTILIZATION,
    MAX_MODEL_LEN,
    MAX_NUM_SEQS,
    KV_CACHE_MEMORY_BYTES,
    MAX_NUM_BATCHED_TOKENS,
    KV_CACHE_DTYPE,
    ENFORCE_EAGER,
    MAX_CUDAGRAPH_CAPTURE_SIZE,
    CUDAGRAPH_CAPTURE_SIZES,
    COMPILATION_CONFIG,
    SPECULATIVE_CONFIG,
    HF_OVERRIDES,
    MAMBA_SSM_CACHE_DTYPE,
    DISABLE_CUSTOM_ALL_REDUCE,
    QUANTIZATION,
    QUANTIZATION_CONFIG,
    OFFLOAD_BACKEND,
    CPU_OFFLOAD_GB,
    CPU_OFFLOAD_PARAMS,
    OFFLOAD_GROUP_SIZE,
    OFFLOAD_NUM_IN_GROUP,
    OFFLOAD_PREFETCH_STEP,
    OFFLOAD_PARAMS,
    MOE_BACKEND,
    ATTENTION_BACKEND,
    BLOCK_SIZE,
    ENABLE_PREFIX_CACHING,
    NO_ENABLE_PREFIX_CACHING,
    ENABLE_CHUNKED_PREFILL,
    NO_ENABLE_CHUNKED_PREFILL,
    MODEL,
    r("served_model_name", &["--served-model-name"], Str),
    r("host", &["--host"], Str),
    r("port", &["--port"], Int),
    r("trust_remote_code", &["--trust-remote-code"], Flag),
    r("tokenizer", &["--tokenizer"], Str),
    r("dtype", &["--dtype"], Str),
    r("api_key", &["--api-key"], Str),
    r("download_dir", &["--download-dir"], Str),
    r("load_format", &["--load-format"], Str),
    r("revision", &["--revision"], Str),
    r("seed", &["--seed"], Int),
    r("async_scheduling", &["--async-scheduling"], Flag),
    r("tool_call_parser", &["--tool-call-parser"], Str),
    r("reasoning_parser", &["--reasoning-parser"], Str),
    r(
        "enable_auto_tool_choice",
        &["--enable-auto-tool-choice"],
        Flag,
    ),
    r("chat_template", &["--chat-template"], Str),
    r("uvicorn_log_level", &["--uvicorn-log-level"], Str),
    r(
        "distributed_executor_backend",
        &["--distributed-executor-backend"],
        Str,
    ),
];

/// The row whose option strings hold `option` exactly (vLLM's parser takes `_` for `-` in
/// long option names: `--max_model_len`).
pub fn spec_of(option: &str) -> Option<&'static Spec> {
    let long = if option.starts_with("--") {
        option.replace('_', "-")
    } else {
        option.to_string()
    };
    SPECS.iter().find(|s| s.flags.contains(&long.as_str()))
}

/// Environment variables that change what vLLM does, as shardwise models them.
pub const VLLM_ENV_MODELLED: &[(&str, &str)] = &[
    (
        "VLLM_ENABLE_PCIE_ALLREDUCE",
        "the RTX PRO 6000 community build's one-shot PCIe custom all-reduce (=1)",
    ),
    (
        "NCCL_P2P_DISABLE",
        "NCCL's collectives over its SHM transport instead of P2P (machine::nccl_env)",
    ),
    (
        "NCCL_P2P_LEVEL",
        "NCCL's P2P only up to that path, SHM beyond (machine::nccl_env)",
    ),
    (
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
        "CUDA-graph memory comes out of the KV cache budget (=1; vLLM's default 0, envs.py)",
    ),
    (
        "VLLM_B12X_FORCE_MOE_A16",
        "the community fork's b12x MoE runs W4A16 (=1; fused_moe/b12x_moe.py)",
    ),
    (
        "VLLM_PCIE_ALLREDUCE_BACKEND",
        "the community fork's PCIe all-reduce: cpp (default) or b12x's one-shot pool",
    ),
    (
        "VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE",
        "the b12x one-shot all-reduce's largest message, NCCL above (custom_all_reduce.py)",
    ),
    (
        "VLLM_CPP_AR_1STAGE_NCCL_CUTOFF",
        "the cpp backend's custom all-reduce's largest message, NCCL above (custom_all_reduce.py; 56KB by default)",
    ),
    (
        "VLLM_PCIE_ONESHOT_FUSED_ADD_RMS_NORM_MAX_SIZE",
        "with -cc.pass_config.fuse_allreduce_rms=True: the b12x one-shot all-reduce, residual add and RMSNorm as one kernel on one-token steps, up to this message (b12x_pcie_all_reduce.py)",
    ),
    (
        "B12X_W4A16_TC_DECODE",
        "b12x's W4A16 MoE runs its tensor-core decode kernel up to 8 tokens a call (=1; w4a16/kernel.py), priced as its W4A4 kernels",
    ),
    (
        "VLLM_B12X_MLA_SPEC_EXTEND_AS_DECODE",
        "B12X_MLA_SPARSE verifies speculative tokens on b12x's decode kernel (=1) or its single-pass extend kernel (=0, not priced: the engine's caveat); unset, the build decides (b12x_mla_sparse.py)",
    ),
];
