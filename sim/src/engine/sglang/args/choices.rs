//! The value sets of SGLang's choice flags, as SGLang main of 2026-01-28 declares them, plus the
//! values later versions added (a newer launch line must not be refused for a backend name it
//! knows).

/// `--kv-cache-dtype` values (fp4_e2m1 is refused later: not modelled).
pub const KV_CACHE_DTYPES: &[&str] = &[
    "auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1",
];
pub(super) const SCHEDULE_POLICIES: &[&str] = &[
    "lpm",
    "random",
    "fcfs",
    "dfs-weight",
    "lof",
    "priority",
    "routing-key",
];
/// `--moe-a2a-backend` values.
pub const MOE_A2A_BACKENDS: &[&str] = &[
    "none",
    "deepep",
    "mooncake",
    "nixl",
    "mori",
    "ascend_fuseep",
    "flashinfer",
    "megamoe",
    "deepep_v2",
    "pplx",
    "ascend_tp",
];
pub(super) const DEEPEP_MODES: &[&str] = &["auto", "normal", "low_latency"];
pub(super) const SPECULATIVE_ALGORITHMS: &[&str] =
    &["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"];
/// `--nsa-prefill-backend` / `--nsa-decode-backend`: the DSA (NSA) backend's kernels
/// (`server_args.py`, `NSA_CHOICES`), and the first DeepSeek-V3.2 releases' names for the two
/// FlashMLA ones (`flashmla_prefill`, `flashmla_decode`), which older launch lines still give.
pub(super) const NSA_BACKENDS: &[&str] = &[
    "flashmla_sparse",
    "flashmla_kv",
    "flashmla_auto",
    "fa3",
    "tilelang",
    "aiter",
    "trtllm",
    "flashmla_prefill",
    "flashmla_decode",
];
pub(super) const ATTENTION_BACKENDS: &[&str] = &[
    "triton",
    "torch_native",
    "flex_attention",
    "nsa",
    "dsa",
    "dsv4",
    "compressed",
    "cutlass_mla",
    "fa3",
    "fa4",
    "flashinfer",
    "flashmla",
    "trtllm_mla",
    "cutedsl_mla",
    "tokenspeed_mla",
    "trtllm_mha",
    "dual_chunk_flash_attn",
    "hpc_ops",
    "minicpm_flashattn",
    "minicpm_flashinfer",
    "aiter",
    "wave",
    "intel_amx",
    "ascend",
    "intel_xpu",
];
pub const MOE_RUNNER_BACKENDS: &[&str] = &[
    "auto",
    "deep_gemm",
    "triton",
    "triton_kernel",
    "flashinfer_trtllm",
    "experimental_sgl_trtllm",
    "flashinfer_trtllm_routed",
    "flashinfer_cutlass",
    "flashinfer_mxfp4",
    "flashinfer_cutedsl",
    "cutlass",
    "aiter",
    "marlin",
    "humming",
    "experimental_sgl_marlin",
    "hpc_ops",
    "megamoe",
    // the SM120 NVFP4 MoE of lukealonso's b12x, in the community SGLang builds for RTX PRO 6000
    "b12x",
];
pub(super) const QUANTIZATIONS: &[&str] = &[
    "awq",
    "fp8",
    "mxfp8",
    "gptq",
    "marlin",
    "gptq_marlin",
    "awq_marlin",
    "bitsandbytes",
    "gguf",
    "modelopt",
    "modelopt_fp8",
    "modelopt_fp4",
    "nvfp4_online",
    "modelopt_mixed",
    "petit_nvfp4",
    "w8a8_int8",
    "w8a8_fp8",
    "moe_wna16",
    "qoq",
    "w4afp8",
    "mxfp4",
    "auto-round",
    "auto-round-int8",
    "compressed-tensors",
    "modelslim",
    "mxfp_w4a8",
    "quark",
    "quark_int4fp8_moe",
    "quark_mxfp4",
    "mlx_q4",
    "mlx_q8",
    "unquant",
    "humming",
];
