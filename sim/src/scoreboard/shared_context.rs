//! How the streams of a decode-bench record hold their context in the KV pool.
//!
//! `llm_decode_bench.py` sends every stream of a cell the same messages, after one scout
//! request warmed the prefix cache ([`crate::records::MetricFamily::streams_share_prompt`]).
//! With the engine's prefix cache on ([`Engine::prefix_cache`]) the pool holds the context once,
//! locked while the streams use it, plus each stream's own tokens: what it generates before the
//! bench replaces it and its prompt's last partial page, recomputed per request. Each stream's
//! attention still reads the whole context; only the pool's occupancy changes. A hybrid model's
//! running requests still need a state slot each (the memory plan's cap). Without the prefix
//! cache each stream prefills and holds its own copy, as before.
//!
//! The bench itself skips a cell when `concurrency × (ctx + max_tokens)` exceeds the server's
//! KV budget (`_should_skip`, no sharing assumed), so the cells it ran are within both rules.

use crate::cost::{ContextHolding, ServedModel};
use crate::engine::Engine;
use crate::records::Expressed;
use models::ModelSpec;

/// The holding of `e`'s streams under `engine` on `model` (of `spec`), with a note when it
/// decides how many streams run (or when the old rule of one copy each would have).
pub(super) fn holding_of(
    e: &Expressed,
    engine: Engine,
    spec: &ModelSpec,
    model: &ServedModel,
    notes: &mut Vec<String>,
) -> ContextHolding {
    let Some(p) = e.shared_prompt else {
        return ContextHolding::Own;
    };
    let hybrid = spec.linear_attention.is_some();
    let (on, why) = engine.prefix_cache(&e.knobs, hybrid);
    let separate = model.kv_capacity(e.context_tokens, ContextHolding::Own);
    let limited = separate < u64::from(e.concurrency);
    if !on {
        if limited {
            notes.push(format!(
                "prefix cache off ({why}): each stream holds its own copy of the {}-token context",
                e.context_tokens
            ));
        }
        return ContextHolding::Own;
    }
    // the stream's generated tokens plus the prompt tokens after the last full cached page
    let own_tokens = p.output_tokens_per_stream.saturating_add(1);
    if limited && e.context_tokens > 0 {
        notes.push(format!(
            "the {} streams share one cached copy of the {}-token context ({why}; the bench sends every stream the same messages after a scout request): the pool holds it once plus {} tokens per stream ({} generated{}), where a copy each would fit {separate}",
            e.concurrency,
            e.context_tokens,
            own_tokens,
            p.output_tokens_per_stream,
            if p.output_stated {
                ""
            } else {
                ", the bench's --max-tokens default"
            },
        ));
    }
    ContextHolding::Shared { own_tokens }
}
