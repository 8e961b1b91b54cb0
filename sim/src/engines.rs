//! Which serving engine's behaviour is simulated. shardwise models an SGLang-style server; a
//! measurement taken under vLLM is simulated either as vLLM would run it (its defaults and the
//! knobs it was launched with) or as SGLang would (`sim validate --engine sglang`), never by
//! pretending the two are the same.
//!
//! An engine's effect is expressed only through [`ServerOptions`] values plus a note per
//! translated or dropped knob, so the cost model and the serving simulation stay engine-neutral.
//! The differences that matter to the records in `validation-dev/records.json`:
//! - Custom all-reduce on more than two PCIe GPUs: stock SGLang and stock vLLM both disable their
//!   custom all-reduce there (`custom_all_reduce.py`: "not supported on more than two PCIe-only
//!   GPUs"). The RTX PRO 6000 community builds add a one-shot PCIe kernel, each engine its own:
//!   SGLang's `--enable-pcie-oneshot-allreduce` (lukealonso/sglang d39236ae; its startup
//!   crossover picks 48 KB on 8 GPUs, 120 KB on 4, per rtx6kpro `optimization/
//!   pcie-oneshot-allreduce.md`) and vLLM's `VLLM_ENABLE_PCIE_ALLREDUCE=1` (1-stage cutoff 56 KB
//!   in the Kimi-K2.6 records). A knob of one engine does nothing under the other.
//! - CUDA-graph capture: vLLM captures decode batches up to 512 by default
//!   (`max_cudagraph_capture_size`), SGLang up to `--cuda-graph-max-bs` (160 here).
//! - Scheduler: vLLM's V1 scheduler always chunks prefills within `--max-num-batched-tokens` and
//!   mixes them with decode steps in one batch (SGLang's `--enable-mixed-chunk`, set here); the
//!   serving simulation still runs prefill and decode batches apart for both engines (said in a
//!   note). Decode-only records (`llm_decode_bench`) do not see the difference.
//! - Memory: vLLM sizes its KV cache from `--gpu-memory-utilization` of the card less weights,
//!   the profiling run's peak and non-torch memory ([`crate::cost::memory::vllm`]); SGLang from
//!   `--mem-fraction-static` of the memory free after start-up.

use crate::options::ServerOptions;
use models::KvDtype;
use serde::{Deserialize, Serialize};

/// A serving engine whose behaviour can be simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Sglang,
    Vllm,
}

/// vLLM's default largest CUDA-graph capture size (V1 `CompilationConfig`).
pub const VLLM_MAX_CAPTURE_SIZE: u32 = 512;
/// vLLM's default `--gpu-memory-utilization`.
pub const VLLM_GPU_MEMORY_UTILIZATION: f64 = 0.9;
/// The SGLang PCIe one-shot all-reduce's crossover below which it replaces NCCL, as its startup
/// benchmark picked it on RTX PRO 6000 boxes: 48 KB on 8 GPUs (across sockets), 120 KB on 4.
pub const SGLANG_PCIE_ONESHOT_8GPU_BYTES: u64 = 48 * 1024;
pub const SGLANG_PCIE_ONESHOT_4GPU_BYTES: u64 = 120 * 1024;

/// A PCIe custom all-reduce a record's build enabled, and the engine whose knob it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PcieAllReduce {
    pub engine: Engine,
    /// Size cutoff the launch gave; `None` = the build's automatic choice.
    pub max_bytes: Option<u64>,
}

/// Launch settings of a measured run, engine-neutral; `None` = not stated (the engine's default).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchKnobs {
    pub kv_cache_dtype: Option<KvDtype>,
    /// SGLang's `--mem-fraction-static` or vLLM's `--gpu-memory-utilization`, and whose it is.
    pub memory_fraction: Option<(Engine, f64)>,
    /// `--context-length` / `--max-model-len`.
    pub context_length: Option<u32>,
    /// `--moe-runner-backend` as the source spells it (`b12x`, `flashinfer_trtllm`).
    pub moe_runner_backend: Option<String>,
    pub attention_backend: Option<String>,
    pub pcie_all_reduce: Option<PcieAllReduce>,
    /// Custom all-reduce off (`--disable-custom-all-reduce`, a cutoff of 0, "pure NCCL").
    pub disable_custom_all_reduce: bool,
    pub cuda_graph_max_bs: Option<u32>,
    pub disable_cuda_graph: bool,
    pub max_running_requests: Option<u32>,
    pub chunked_prefill_size: Option<u32>,
    pub max_prefill_tokens: Option<u32>,
    pub disable_radix_cache: bool,
    /// vLLM's `--enable-prefix-caching` (`Some(true)`) / `--no-enable-prefix-caching`
    /// (`Some(false)`); `None` = vLLM's default for the model ([`Engine::prefix_cache`]).
    #[serde(default)]
    pub prefix_caching: Option<bool>,
    /// `--stream-interval`.
    pub stream_interval: Option<u32>,
    /// vLLM's `--decode-context-parallel-size` (the records' `parallel.dcp`).
    #[serde(default)]
    pub decode_context_parallel: Option<u32>,
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1`.
    #[serde(default)]
    pub estimate_cudagraph_memory: bool,
}

impl Engine {
    /// `sglang` / `vllm` (case-insensitive, `SGLang`, `vLLM` …).
    pub fn from_name(name: &str) -> Option<Engine> {
        match name.trim().to_ascii_lowercase().as_str() {
            "sglang" => Some(Engine::Sglang),
            "vllm" => Some(Engine::Vllm),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Sglang => "sglang",
            Engine::Vllm => "vllm",
        }
    }

    /// Whether requests with the same prompt share its cached KV under this engine launched with
    /// `knobs`, for a model with linear-attention (mamba-style) layers or not, and why.
    /// - SGLang: its radix cache, on unless `--disable-radix-cache` (hybrid models too, through
    ///   `MambaRadixCache`, which also keeps the prefix's state).
    /// - vLLM V1: `--enable-prefix-caching` / `--no-enable-prefix-caching` when given; else
    ///   `EngineArgs._set_default_chunked_prefill_and_prefix_caching_args` (`engine/
    ///   arg_utils.py`): on where the model supports it, but off for hybrid models ("keep it
    ///   opt-in for now", PR #29393 made the default apply) until PR #50991 (v0.28.0) turned
    ///   it on for them too; the records' vLLM builds are older. With it on, a hybrid model runs
    ///   `mamba_cache_mode` `align` (`MambaModelConfig.verify_and_update_config`,
    ///   `model_executor/models/config.py`), caching the state at block boundaries.
    pub fn prefix_cache(self, knobs: &LaunchKnobs, hybrid: bool) -> (bool, &'static str) {
        match (self, knobs.prefix_caching) {
            (Engine::Sglang, _) if knobs.disable_radix_cache => (false, "--disable-radix-cache"),
            (Engine::Sglang, _) => (true, "SGLang's radix cache"),
            (Engine::Vllm, Some(true)) => (true, "vLLM --enable-prefix-caching"),
            (Engine::Vllm, Some(false)) => (false, "vLLM --no-enable-prefix-caching"),
            (Engine::Vllm, None) if hybrid => (
                false,
                "vLLM's default for a hybrid model before v0.28: prefix caching off",
            ),
            (Engine::Vllm, None) => (true, "vLLM's prefix caching (on by default in V1)"),
        }
    }

    /// The server options this engine runs `knobs` with on a TP group of `tp` GPUs (NVLink or
    /// not) of `gpu_memory_bytes` each, and one note per knob translated, defaulted or dropped.
    pub fn server_options(
        self,
        knobs: &LaunchKnobs,
        tp: u32,
        nvlink: bool,
        gpu_memory_bytes: u64,
    ) -> (ServerOptions, Vec<String>) {
        let mut o = ServerOptions::default();
        let mut notes = Vec::new();
        o.kv_cache_dtype = knobs.kv_cache_dtype;
        o.context_length = knobs.context_length;
        o.moe_runner_backend = knobs.moe_runner_backend.clone();
        o.attention_backend = knobs.attention_backend.clone();
        o.disable_custom_all_reduce = knobs.disable_custom_all_reduce;
        o.disable_cuda_graph = knobs.disable_cuda_graph;
        o.max_running_requests = knobs.max_running_requests;
        o.disable_radix_cache = knobs.disable_radix_cache;
        if let Some(n) = knobs.chunked_prefill_size {
            o.chunked_prefill_size = n;
        }
        if let Some(n) = knobs.max_prefill_tokens {
            o.max_prefill_tokens = n;
        }
        if let Some(n) = knobs.stream_interval.filter(|n| *n > 0) {
            o.stream_interval = n;
        }
        if let Some((owner, f)) = knobs.memory_fraction {
            o.mem_fraction_static = f;
            if owner != self {
                notes.push(format!(
                    "{}'s memory fraction {f} taken as {}'s",
                    owner.name(),
                    self.name()
                ));
            }
        }
        if self == Engine::Vllm {
            vllm_memory(knobs, gpu_memory_bytes, &mut o);
        }
        let dcp = knobs.decode_context_parallel.filter(|d| *d > 1);
        match (self, dcp) {
            (Engine::Vllm, Some(d)) => {
                o.decode_context_parallel = d;
                notes.push(format!(
                    "vLLM: KV cache sharded over {d} ranks of the TP group (DCP {d})"
                ));
            }
            (Engine::Sglang, Some(d)) => notes.push(format!(
                "the record's DCP {d} is a vLLM option: SGLang keeps the whole KV cache on every TP rank"
            )),
            _ => {}
        }
        match self {
            Engine::Vllm => {
                o.cuda_graph_max_bs = knobs.cuda_graph_max_bs.unwrap_or(VLLM_MAX_CAPTURE_SIZE);
                o.verify_rows_per_draft_token = true;
                o.enable_mixed_chunk = true;
                notes.push(format!(
                    "vLLM: CUDA graphs up to batch {}, one --max-num-batched-tokens budget a step, the running decodes first and prefill chunks in the rest of the same batch (V1)",
                    o.cuda_graph_max_bs
                ));
            }
            Engine::Sglang => {
                if let Some(b) = knobs.cuda_graph_max_bs {
                    o.cuda_graph_max_bs = b;
                }
            }
        }
        let pcie_group = !nvlink && tp > 2;
        match knobs.pcie_all_reduce {
            Some(p) if p.engine == self && !knobs.disable_custom_all_reduce => {
                let auto = if tp <= 4 {
                    SGLANG_PCIE_ONESHOT_4GPU_BYTES
                } else {
                    SGLANG_PCIE_ONESHOT_8GPU_BYTES
                };
                let cutoff = p.max_bytes.unwrap_or(auto);
                o.pcie_custom_all_reduce_max_bytes = Some(cutoff);
                if pcie_group {
                    notes.push(format!(
                        "{}'s PCIe one-shot custom all-reduce for messages ≤ {} KiB",
                        self.name(),
                        cutoff / 1024
                    ));
                }
            }
            Some(p) if p.engine != self && pcie_group => notes.push(format!(
                "the record's PCIe custom all-reduce is a {} knob: {} runs NCCL all-reduce on > 2 PCIe GPUs",
                p.engine.name(),
                self.name()
            )),
            _ if pcie_group && !knobs.disable_custom_all_reduce => notes.push(format!(
                "{}: no custom all-reduce on > 2 PCIe GPUs (NCCL)",
                self.name()
            )),
            _ => {}
        }
        (o, notes)
    }
}

/// vLLM's memory sizing and batch limits for `knobs` on GPUs of `gpu_memory_bytes`
/// ([`crate::cost::memory::vllm`]): `--gpu-memory-utilization` of the card, the profiling run at
/// `--max-num-batched-tokens` (also the scheduler's token budget) and `--max-num-seqs`.
fn vllm_memory(knobs: &LaunchKnobs, gpu_memory_bytes: u64, o: &mut ServerOptions) {
    let (tokens, seqs) = batch_defaults(gpu_memory_bytes);
    let utilization = match knobs.memory_fraction {
        Some((Engine::Vllm, f)) => f,
        _ => VLLM_GPU_MEMORY_UTILIZATION,
    };
    o.mem_fraction_static = utilization;
    o.chunked_prefill_size = knobs.chunked_prefill_size.unwrap_or(tokens);
    o.max_prefill_tokens = o.chunked_prefill_size;
    o.max_running_requests = Some(knobs.max_running_requests.unwrap_or(seqs));
    o.vllm_memory = Some(crate::options::VllmMemory {
        gpu_memory_utilization: utilization,
        max_num_batched_tokens: Some(o.chunked_prefill_size),
        max_num_seqs: o.max_running_requests,
        estimate_cudagraphs: knobs.estimate_cudagraph_memory,
    });
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The largest-memory tier of vLLM's batch defaults: GPUs of at least 70 GiB that are no A100
/// (`engine/arg_utils.py`, `EngineArgs.get_batch_defaults`, the OpenAI server's column).
const LARGE_GPU_BYTES: u64 = 70 << 30;

/// `--max-num-batched-tokens` and `--max-num-seqs` defaults of `vllm serve` on a GPU of
/// `memory_bytes`: 8192 / 1024 from 70 GiB up, else 2048 / 256.
pub fn batch_defaults(memory_bytes: u64) -> (u32, u32) {
    if memory_bytes >= LARGE_GPU_BYTES {
        (8192, 1024)
    } else {
        (2048, 256)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The user's RTX PRO 6000: 97,887 MiB.
    const CARD: u64 = 97_887 << 20;

    fn vllm_pcie() -> LaunchKnobs {
        LaunchKnobs {
            pcie_all_reduce: Some(PcieAllReduce {
                engine: Engine::Vllm,
                max_bytes: Some(56 * 1024),
            }),
            memory_fraction: Some((Engine::Vllm, 0.94)),
            ..LaunchKnobs::default()
        }
    }

    #[test]
    fn a_pcie_all_reduce_knob_works_only_under_its_engine() {
        let (v, notes) = Engine::Vllm.server_options(&vllm_pcie(), 8, false, CARD);
        assert_eq!(v.pcie_custom_all_reduce_max_bytes, Some(56 * 1024));
        assert_eq!(v.cuda_graph_max_bs, VLLM_MAX_CAPTURE_SIZE);
        assert!(v.enable_mixed_chunk);
        assert_eq!(v.mem_fraction_static, 0.94);
        assert!(notes.iter().any(|n| n.contains("56 KiB")), "{notes:?}");
        let (s, notes) = Engine::Sglang.server_options(&vllm_pcie(), 8, false, CARD);
        assert_eq!(s.pcie_custom_all_reduce_max_bytes, None);
        assert!(!s.enable_mixed_chunk);
        assert!(notes.iter().any(|n| n.contains("vllm knob")), "{notes:?}");
        let oneshot = LaunchKnobs {
            pcie_all_reduce: Some(PcieAllReduce {
                engine: Engine::Sglang,
                max_bytes: None,
            }),
            ..LaunchKnobs::default()
        };
        let (s, _) = Engine::Sglang.server_options(&oneshot, 8, false, CARD);
        assert_eq!(s.pcie_custom_all_reduce_max_bytes, Some(48 * 1024));
        let (s, _) = Engine::Sglang.server_options(&oneshot, 4, false, CARD);
        assert_eq!(s.pcie_custom_all_reduce_max_bytes, Some(120 * 1024));
    }

    #[test]
    fn names_read_back() {
        for e in [Engine::Sglang, Engine::Vllm] {
            assert_eq!(Engine::from_name(e.name()), Some(e));
        }
        assert_eq!(Engine::from_name(" vLLM "), Some(Engine::Vllm));
        assert_eq!(Engine::from_name("trtllm"), None);
    }
}
