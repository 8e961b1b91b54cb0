//! Which `--attention-backend` SGLang can run on the GPU a prediction is for, checked before
//! anything is costed: a launch line that would not start (or would fail at its first decode) is
//! refused in one line, as SGLang refuses it, instead of being costed as if it ran.
//!
//! Read from the sources (2026):
//! - `trtllm_mla`: SGLang's `server_args.py` (`_handle_attention_backend_compatibility`, later
//!   `arg_groups/overrides.py::_mla_kv_cache_dtype_checks`) raises "TRTLLM MLA backend is only
//!   supported on Blackwell GPUs" unless `is_blackwell_supported()` — SM100 only in the 0.5.x
//!   releases (`is_sm100_supported`), SM100 or SM12x (`is_sm120_supported`, CUDA ≥ 12.8) in later
//!   main. On SM12x the backend's decode calls FlashInfer's
//!   `mla.trtllm_batch_decode_with_kv_cache_mla`, whose `backend="auto"` picks `xqa` on compute
//!   capability 12 (`trtllm-gen` only on 10), and XQA MLA raises "XQA MLA only supports fp8
//!   operation on SM120 GPUs" for a bf16 query or cache and "only supports q_len_per_request == 1"
//!   for a speculative verify. So on SM120 it runs only with an fp8 KV cache and no speculation.
//! - `flashmla`: SGLang registers it without a capability check
//!   (`layers/attention/attention_registry.py::create_flashmla_backend`), but FlashMLA's kernels
//!   (deepseek-ai/FlashMLA `csrc/`) are built for SM90 and SM100 and check for them, so an SM120
//!   server fails at its first forward (CUDA-graph capture or first request).
//! - `triton` and `flashinfer` run everywhere; how their MLA decode differs is in
//!   [`super::attn_core`] (Triton's split-KV partials and second kernel; FlashInfer's
//!   `BatchMLAPagedAttentionWrapper` merges its KV splits inside its persistent kernel).

use crate::machine::Machine;
use crate::options::ServerOptions;
use models::{KvDtype, ModelSpec};

/// A launch line SGLang would not serve on this GPU.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AttentionBackendError {
    #[error(
        "--attention-backend {backend} does not run on {gpu} (SM{sm}0): {why}; {fix}use --attention-backend triton or flashinfer"
    )]
    NotOnGpu {
        backend: String,
        gpu: String,
        sm: u32,
        why: &'static str,
        fix: &'static str,
    },
}

/// Why FlashMLA cannot serve on SM120.
const FLASHMLA_WHY: &str =
    "FlashMLA's kernels are built for SM90 and SM100 only, so SGLang fails at its first forward";
/// Why TRT-LLM MLA cannot serve on SM100-less Blackwell before SGLang's SM12x support.
const TRTLLM_NOT_BLACKWELL: &str =
    "SGLang refuses it (\"TRTLLM MLA backend is only supported on Blackwell GPUs\")";
/// Why TRT-LLM MLA on SM120 needs an fp8 cache.
const TRTLLM_XQA_FP8: &str = "on SM12x FlashInfer runs it as XQA MLA, which takes an fp8 query and KV cache only (\"XQA MLA only supports fp8 operation on SM120 GPUs\")";
/// Why TRT-LLM MLA on SM120 cannot verify drafts.
const TRTLLM_XQA_SPEC: &str = "on SM12x FlashInfer runs it as XQA MLA, which decodes one token per request (\"only supports q_len_per_request == 1\"), so a speculative verify fails";

/// The note for a backend that runs but whose kernel the tables do not time.
pub const XQA_NOTE: &str = "--attention-backend trtllm_mla on SM12x runs FlashInfer's XQA MLA decode (fp8): costed with the kernel tables' MLA decode curve (no XQA timings); SGLang before SM12x support refuses it";

/// The GPU's compute-capability major version: the profile's devices when probed, else the
/// preset's GPU by name (RTX PRO 6000 / RTX 5090: 12, B200: 10, H100 / H200: 9, L40S / RTX 4090
/// and A100: 8); `None` when unknown.
pub fn sm_major(machine: &Machine) -> Option<u32> {
    if let Some(m) = machine
        .profile
        .devices
        .iter()
        .filter_map(|d| d.compute_capability.map(|c| c[0]))
        .min()
    {
        return Some(m);
    }
    let name = format!("{} {}", machine.gpu.name, machine.gpu.display_name).to_ascii_lowercase();
    [
        ("rtx-pro-6000", 12),
        ("rtx pro 6000", 12),
        ("5090", 12),
        ("b200", 10),
        ("b300", 10),
        ("h100", 9),
        ("h200", 9),
        ("h20", 9),
        ("l40", 8),
        ("4090", 8),
        ("a100", 8),
    ]
    .iter()
    .find(|(k, _)| name.contains(k))
    .map(|&(_, sm)| sm)
}

/// Checks `--attention-backend` against the GPU: an error when SGLang would not serve the line,
/// a note when it serves it with a kernel the cost model only approximates.
pub fn check(
    machine: &Machine,
    model: &ModelSpec,
    opts: &ServerOptions,
) -> Result<Option<&'static str>, AttentionBackendError> {
    let Some(backend) = opts.attention_backend.as_deref() else {
        return Ok(None);
    };
    let Some(sm) = sm_major(machine) else {
        return Ok(None);
    };
    let refuse = |why, fix| {
        Err(AttentionBackendError::NotOnGpu {
            backend: backend.to_string(),
            gpu: machine.gpu.display_name.clone(),
            sm,
            why,
            fix,
        })
    };
    match backend {
        "flashmla" if sm != 9 && sm != 10 => refuse(FLASHMLA_WHY, ""),
        "trtllm_mla" if sm != 10 && sm != 12 => refuse(TRTLLM_NOT_BLACKWELL, ""),
        "trtllm_mla" if sm == 12 && model.attention.is_mla() => {
            if super::memory::kv_dtype(model, opts) != KvDtype::Fp8 {
                refuse(TRTLLM_XQA_FP8, "add --kv-cache-dtype fp8_e4m3 or ")
            } else if opts.speculative.is_some() {
                refuse(TRTLLM_XQA_SPEC, "drop speculative decoding or ")
            } else {
                Ok(Some(XQA_NOTE))
            }
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kimi() -> ModelSpec {
        ModelSpec::preset("kimi-k2-thinking-nvfp4").unwrap()
    }

    fn with(backend: &str, kv: Option<KvDtype>) -> ServerOptions {
        ServerOptions {
            attention_backend: Some(backend.into()),
            kv_cache_dtype: kv,
            ..ServerOptions::default()
        }
    }

    #[test]
    fn sm120_refuses_flashmla_and_bf16_trtllm_mla() {
        let rtx = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
        assert_eq!(sm_major(&rtx), Some(12));
        let e = check(&rtx, &kimi(), &with("flashmla", None)).unwrap_err();
        assert!(e.to_string().contains("SM90 and SM100"), "{e}");
        let e = check(&rtx, &kimi(), &with("trtllm_mla", Some(KvDtype::Bf16))).unwrap_err();
        assert!(e.to_string().contains("fp8_e4m3"), "{e}");
        assert_eq!(
            check(&rtx, &kimi(), &with("trtllm_mla", Some(KvDtype::Fp8))),
            Ok(Some(XQA_NOTE))
        );
        for ok in ["triton", "flashinfer"] {
            assert_eq!(check(&rtx, &kimi(), &with(ok, None)), Ok(None));
        }
    }

    #[test]
    fn hopper_runs_flashmla_but_not_trtllm_mla() {
        let h200 = Machine::resolve("h200-x8").unwrap();
        assert_eq!(sm_major(&h200), Some(9));
        assert_eq!(check(&h200, &kimi(), &with("flashmla", None)), Ok(None));
        assert!(check(&h200, &kimi(), &with("trtllm_mla", None)).is_err());
    }
}
