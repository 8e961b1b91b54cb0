//! SGLang's two-batch overlap (`--enable-two-batch-overlap`): each sparse (MoE) decoder layer
//! runs its batch as two micro-batches, A two stages ahead of B, so that one micro-batch's expert
//! all-to-all (DeepEP dispatch and combine) is in flight while the other computes.
//!
//! What SGLang does (sgl-project/sglang `python/sglang/srt/batch_overlap/two_batch_overlap.py`,
//! `operations_strategy.py`, main of early 2026):
//! - only `DeepseekV2DecoderLayer` (DeepSeek-V2/V3/R1, Kimi-K2: `deepseek_v3`, `kimi_k2`,
//!   `deepseek_v32`) and `Qwen3MoeDecoderLayer` are split (`OperationsStrategy.init_new_tbo`);
//!   dense layers, the embedding and the head run on the whole batch;
//! - the released versions refuse it without `--moe-a2a-backend` (`check_server_args`);
//! - decode splits by requests at `bs // 2`; extend by tokens (`compute_split_token_index`);
//! - only the all-to-all overlaps: the attention-TP all-reduce / gathers run inside their stage;
//! - every operation of a split layer runs twice on half the tokens, so its weights are read
//!   twice and its kernels launched twice.
//!
//! Cost of one split layer, with `c` the compute of a half batch and `a` its all-to-all: two
//! halves in a two-stage pipeline take `max(2c, 2a) + min(c, a)` (the longer resource busy
//! throughout, plus one fill of the other), so the all-to-all left on the critical path is that
//! minus `2c`; the layer's other collectives count twice, at half size. Whether it runs is
//! decided here ([`applies`]); the split layer is costed with the rest of an iteration
//! (`CostModel::two_batch_layer` in [`super::iteration`]).

use crate::engine::sglang::args::flags::ENABLE_TWO_BATCH_OVERLAP;
use crate::engine::{Engine, Knob};
use crate::options::ServerOptions;
use models::ModelSpec;

/// HF `model_type`s whose decoder layers SGLang's two-batch overlap splits.
const SPLIT_LAYER_FAMILIES: [&str; 4] = ["deepseek_v3", "kimi_k2", "deepseek_v32", "qwen3_moe"];

/// Whether two-batch overlap runs for `model` with `opts`, and the note to print when it was
/// asked for but does not run.
pub fn applies(model: &ModelSpec, opts: &ServerOptions) -> (bool, Option<String>) {
    if !opts.switch(&ENABLE_TWO_BATCH_OVERLAP) {
        return (false, None);
    }
    let why_not = if opts.moe_a2a_backend.is_none() {
        Some(format!(
            "SGLang needs {} with it (deepep)",
            Engine::Sglang.flag(Knob::AllToAllBackend)
        ))
    } else if !SPLIT_LAYER_FAMILIES.contains(&model.model_type.as_str()) {
        Some(format!(
            "SGLang splits only DeepSeek-V2/V3-class and Qwen3-MoE layers, not {}",
            model.model_type
        ))
    } else {
        None
    };
    match why_not {
        None => (true, None),
        Some(w) => (
            false,
            Some(format!(
                "{}: no effect: {w}",
                ENABLE_TWO_BATCH_OVERLAP.canonical()
            )),
        ),
    }
}
