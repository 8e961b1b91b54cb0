//! Launch knobs by what they do, not by how an engine spells them: a module outside `engine/`
//! that tells a user which flag to change names a [`Knob`] and asks the engine for its spelling
//! ([`super::ServingEngine::flag`], from the engine's flag table), so no engine's flag is written out
//! above this floor (`use_graph`'s `ENGINE_FLAG_NAMERS`).

use super::Engine;

/// A launch knob one or both engines have, named for its effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// The share of each GPU's memory the engine sizes weights and KV cache within.
    MemoryShare,
    /// The longest request (prompt + output) the server takes.
    ContextLength,
    /// The prefill tokens one step takes (SGLang's chunk, vLLM's step budget).
    PrefillChunk,
    /// The cap on requests running at once.
    MaxRunningRequests,
    /// A cap on the KV pool's tokens below what memory allows.
    MaxTotalTokens,
    /// Tensor-parallel size.
    TensorParallel,
    /// Pipeline stages.
    PipelineParallel,
    /// Expert-parallel size inside the TP group.
    ExpertParallelSize,
    /// Attention data-parallel over the TP group.
    DpAttention,
    /// The all-to-all backend that dispatches tokens to expert-parallel ranks.
    AllToAllBackend,
    /// DeepEP's normal / low-latency mode.
    DeepEpMode,
    /// Two micro-batches overlapping one's communication with the other's compute.
    TwoBatchOverlap,
    /// The community builds' one-shot custom all-reduce over PCIe.
    PcieOneshotAllReduce,
    /// Eager execution: no CUDA graphs.
    DisableCudaGraph,
    /// The largest decode batch captured in a CUDA graph.
    CudaGraphMaxBatch,
    /// The cap on one pipeline micro-batch's requests.
    PpMaxMicroBatch,
    /// The speculative-decoding algorithm (turns speculation on).
    SpeculativeAlgorithm,
    /// Draft steps per verify.
    SpeculativeNumSteps,
    /// Draft branches per step.
    SpeculativeEagleTopk,
    /// Draft tokens verified per request.
    SpeculativeNumDraftTokens,
    /// A separate draft model.
    SpeculativeDraftModel,
    /// The mean accepted length the simulator takes instead of its prior.
    SpeculativeAcceptLength,
    /// Ranks of the TP group the KV cache is sharded over for decode.
    DecodeContextParallel,
    /// The model the server loads.
    ModelPath,
    /// The first GPU the server's ranks take.
    BaseGpuId,
    /// Nodes one server spans.
    Nodes,
    /// This node's rank in a multi-node launch.
    NodeRank,
    /// The address the nodes of a multi-node launch meet at.
    DistInitAddr,
    /// JSON merged into the model's HF config at load.
    ModelConfigOverrides,
    /// The quantization of the checkpoint's BF16 linears at load (vLLM's
    /// `--quantization-config`; SGLang has no such flag).
    OnlineQuantization,
    /// The weights each GPU holds in host memory, read or copied in every forward pass.
    CpuOffload,
    /// The KV cache's bytes on each GPU, given outright instead of a memory share (vLLM's
    /// `--kv-cache-memory-bytes`; SGLang has no such flag).
    KvCacheBytes,
    /// The kernels that run the routed experts (SGLang's `--moe-runner-backend`, vLLM's
    /// `--moe-backend`).
    MoeRunner,
}

impl Engine {
    /// How this engine spells `knob`; a knob it has no flag for is spelt as the first engine of
    /// the registry that has one spells it (the sentence is then about that engine's flag).
    pub fn flag(self, knob: Knob) -> &'static str {
        self.rules()
            .flag(knob)
            .or_else(|| Engine::ALL.iter().find_map(|e| e.rules().flag(knob)))
            .unwrap_or_default()
    }
}

/// `rules` answers a spelling for every knob, or none where it has no such flag.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_is_some_engines_flag_and_each_engine_spells_its_own() {
        let knobs = [
            Knob::MemoryShare,
            Knob::ContextLength,
            Knob::PrefillChunk,
            Knob::MaxRunningRequests,
            Knob::MaxTotalTokens,
            Knob::TensorParallel,
            Knob::PipelineParallel,
            Knob::ExpertParallelSize,
            Knob::DpAttention,
            Knob::AllToAllBackend,
            Knob::DeepEpMode,
            Knob::TwoBatchOverlap,
            Knob::PcieOneshotAllReduce,
            Knob::DisableCudaGraph,
            Knob::CudaGraphMaxBatch,
            Knob::PpMaxMicroBatch,
            Knob::SpeculativeAlgorithm,
            Knob::SpeculativeNumSteps,
            Knob::SpeculativeEagleTopk,
            Knob::SpeculativeNumDraftTokens,
            Knob::SpeculativeDraftModel,
            Knob::SpeculativeAcceptLength,
            Knob::DecodeContextParallel,
            Knob::ModelPath,
            Knob::BaseGpuId,
            Knob::Nodes,
            Knob::NodeRank,
            Knob::DistInitAddr,
            Knob::ModelConfigOverrides,
            Knob::OnlineQuantization,
            Knob::CpuOffload,
            Knob::MoeRunner,
        ];
        for k in knobs {
            assert!(Engine::Sglang.flag(k).starts_with('-'), "{k:?}");
        }
        assert_eq!(
            Engine::Sglang.flag(Knob::MemoryShare),
            "--mem-fraction-static"
        );
        assert_eq!(
            Engine::Vllm.flag(Knob::MemoryShare),
            "--gpu-memory-utilization"
        );
        assert_eq!(Engine::Vllm.flag(Knob::ContextLength), "--max-model-len");
        assert_eq!(
            Engine::Vllm.flag(Knob::AllToAllBackend),
            "--all2all-backend"
        );
        // vLLM has no --deepep-mode (its backend's value names the mode): SGLang's is named
        assert_eq!(Engine::Vllm.flag(Knob::DeepEpMode), "--deepep-mode");
        assert_eq!(
            Engine::Vllm.flag(Knob::ModelConfigOverrides),
            "--hf-overrides"
        );
        assert_eq!(
            Engine::Sglang.flag(Knob::ModelConfigOverrides),
            "--json-model-override-args"
        );
        assert_eq!(
            Engine::Vllm.flag(Knob::OnlineQuantization),
            "--quantization-config"
        );
        assert_eq!(Engine::Vllm.flag(Knob::CpuOffload), "--cpu-offload-gb");
        assert_eq!(Engine::Sglang.flag(Knob::CpuOffload), "--cpu-offload-gb");
        // SGLang has no DCP flag: vLLM's is named
        assert_eq!(
            Engine::Sglang.flag(Knob::DecodeContextParallel),
            "--decode-context-parallel-size"
        );
    }
}
