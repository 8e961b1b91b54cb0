//! The SGLang flags shardwise reads: for each, its `dest`, the option strings SGLang declares, the
//! kind of value, the values SGLang allows, and whether it changes the prediction (modelled) or
//! is only kept (recorded). Choices are those of SGLang main of 2026-01-28 plus the values later
//! versions added (a newer launch line must not be refused for a backend name it knows).

use super::FlagClass;

/// The kind of value an option takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
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
}

/// One flag shardwise knows.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    pub dest: &'static str,
    /// Option strings, the canonical one first.
    pub flags: &'static [&'static str],
    pub kind: Kind,
    pub class: FlagClass,
}

/// `--kv-cache-dtype` values (fp4_e2m1 is refused later: not modelled).
pub const KV_CACHE_DTYPES: &[&str] = &[
    "auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1",
];
const SCHEDULE_POLICIES: &[&str] = &[
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
const DEEPEP_MODES: &[&str] = &["auto", "normal", "low_latency"];
const SPECULATIVE_ALGORITHMS: &[&str] = &["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"];
const ATTENTION_BACKENDS: &[&str] = &[
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
const MOE_RUNNER_BACKENDS: &[&str] = &[
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
const QUANTIZATIONS: &[&str] = &[
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

const fn m(dest: &'static str, flags: &'static [&'static str], kind: Kind) -> Spec {
    Spec {
        dest,
        flags,
        kind,
        class: FlagClass::Modelled,
    }
}

const fn r(dest: &'static str, flags: &'static [&'static str], kind: Kind) -> Spec {
    Spec {
        dest,
        flags,
        kind,
        class: FlagClass::Recorded,
    }
}

use Kind::*;

/// Every flag shardwise reads. Two are shardwise's own, not SGLang's:
/// `--speculative-accept-length` (tokens accepted per step, which SGLang measures but does not
/// take) and `--overlap-comm`.
pub(super) const SPECS: &[Spec] = &[
    m("tp_size", &["--tp-size", "--tensor-parallel-size"], Int),
    m("pp_size", &["--pp-size", "--pipeline-parallel-size"], Int),
    m(
        "ep_size",
        &["--ep-size", "--expert-parallel-size", "--ep"],
        Int,
    ),
    m("dp_size", &["--dp-size", "--data-parallel-size"], Int),
    m("enable_dp_attention", &["--enable-dp-attention"], Flag),
    m("mem_fraction_static", &["--mem-fraction-static"], Float),
    m(
        "kv_cache_dtype",
        &["--kv-cache-dtype"],
        Choice(KV_CACHE_DTYPES),
    ),
    m("chunked_prefill_size", &["--chunked-prefill-size"], Int),
    m("max_prefill_tokens", &["--max-prefill-tokens"], Int),
    m("max_running_requests", &["--max-running-requests"], Int),
    m("max_total_tokens", &["--max-total-tokens"], Int),
    m("context_length", &["--context-length"], Int),
    m("cuda_graph_max_bs", &["--cuda-graph-max-bs"], Int),
    m("disable_cuda_graph", &["--disable-cuda-graph"], Flag),
    m(
        "disable_custom_all_reduce",
        &["--disable-custom-all-reduce"],
        Flag,
    ),
    // the RTX PRO 6000 community builds' PCIe one-shot all-reduce (lukealonso/sglang)
    m(
        "enable_pcie_oneshot_allreduce",
        &["--enable-pcie-oneshot-allreduce"],
        Flag,
    ),
    m(
        "moe_a2a_backend",
        &["--moe-a2a-backend"],
        Choice(MOE_A2A_BACKENDS),
    ),
    m(
        "pp_max_micro_batch_size",
        &["--pp-max-micro-batch-size"],
        Int,
    ),
    m("pp_async_batch_depth", &["--pp-async-batch-depth"], Int),
    m("stream_interval", &["--stream-interval"], Int),
    m("disable_radix_cache", &["--disable-radix-cache"], Flag),
    m("enable_mixed_chunk", &["--enable-mixed-chunk"], Flag),
    m(
        "schedule_policy",
        &["--schedule-policy"],
        Choice(SCHEDULE_POLICIES),
    ),
    m(
        "disable_overlap_schedule",
        &["--disable-overlap-schedule"],
        Flag,
    ),
    m("page_size", &["--page-size"], Int),
    m(
        "attention_backend",
        &["--attention-backend"],
        Choice(ATTENTION_BACKENDS),
    ),
    m(
        "moe_runner_backend",
        &["--moe-runner-backend"],
        Choice(MOE_RUNNER_BACKENDS),
    ),
    m("quantization", &["--quantization"], Choice(QUANTIZATIONS)),
    m(
        "speculative_algorithm",
        &["--speculative-algorithm"],
        Choice(SPECULATIVE_ALGORITHMS),
    ),
    m("speculative_num_steps", &["--speculative-num-steps"], Int),
    m("speculative_eagle_topk", &["--speculative-eagle-topk"], Int),
    m(
        "speculative_num_draft_tokens",
        &["--speculative-num-draft-tokens"],
        Int,
    ),
    m(
        "speculative_draft_model_path",
        &[
            "--speculative-draft-model-path",
            "--speculative-draft-model",
        ],
        Str,
    ),
    m(
        "speculative_accept_length",
        &["--speculative-accept-length"],
        Float,
    ),
    m("overlap_comm", &["--overlap-comm"], Flag),
    r("model_path", &["--model-path", "--model"], Str),
    r("tokenizer_path", &["--tokenizer-path"], Str),
    r("trust_remote_code", &["--trust-remote-code"], Flag),
    r("host", &["--host"], Str),
    r("port", &["--port"], Int),
    r("served_model_name", &["--served-model-name"], Str),
    r("nnodes", &["--nnodes"], Int),
    r("node_rank", &["--node-rank"], Int),
    r(
        "dist_init_addr",
        &["--dist-init-addr", "--nccl-init-addr"],
        Str,
    ),
    r("deepep_mode", &["--deepep-mode"], Choice(DEEPEP_MODES)),
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
    r("base_gpu_id", &["--base-gpu-id"], Int),
    r("enable_metrics", &["--enable-metrics"], Flag),
    r("skip_server_warmup", &["--skip-server-warmup"], Flag),
    r("enable_p2p_check", &["--enable-p2p-check"], Flag),
    r("decode_log_interval", &["--decode-log-interval"], Int),
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

/// The canonical option string of `dest` (for messages and `try:` lines).
pub(super) fn canonical_flag(dest: &str) -> String {
    spec(dest).map_or_else(
        || format!("--{}", dest.replace('_', "-")),
        |s| s.flags[0].into(),
    )
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
