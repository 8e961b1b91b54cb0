//! From a log to what the cost model takes and what it is checked against: a sample's
//! [`IterationBatch`], a run's layout, and the memory plan beside the logged figures.

use super::{DecodeSample, RunMemory};
use crate::cost::memory::req_to_token_bytes;
use crate::cost::steady::logged_step_s;
use crate::cost::{IterationBatch, IterationModel, MemoryPlan};

use serde::{Deserialize, Serialize};

const GIB: f64 = (1u64 << 30) as f64;

impl DecodeSample {
    /// The batch this sample's steps ran: `#running-req` decode requests, each at context
    /// `#token ÷ #running-req` (rounded). The calibration and `sim validate --server-log` cost
    /// this batch and compare with [`DecodeSample::step_s`].
    pub fn iteration_batch(&self) -> IterationBatch {
        let ctx = self.context_per_request.round().clamp(1.0, u32::MAX as f64) as u32;
        IterationBatch {
            decode_context_tokens: vec![ctx; self.running as usize],
            prefill: Vec::new(),
        }
    }
}

/// The step the cost model predicts for what `s.step_s` measured
/// ([`logged_step_s`] of its running requests at its context).
pub fn predicted_step_s(model: &dyn IterationModel, s: &DecodeSample) -> f64 {
    let ctx = s.context_per_request.round().clamp(1.0, u32::MAX as f64) as u32;
    logged_step_s(model, s.running, ctx)
}

/// One memory figure, planned and logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCheck {
    pub quantity: String,
    /// `GiB` (SGLang's "GB") or `tokens` / `requests`.
    pub unit: String,
    pub plan: f64,
    pub logged: f64,
    /// `(plan / logged − 1) × 100`.
    pub error_pct: f64,
}

fn check(quantity: &str, unit: &str, plan: f64, logged: Option<f64>) -> Option<MemoryCheck> {
    let logged = logged?;
    Some(MemoryCheck {
        quantity: quantity.to_string(),
        unit: unit.to_string(),
        plan,
        logged,
        error_pct: if logged != 0.0 {
            (plan / logged - 1.0) * 100.0
        } else {
            0.0
        },
    })
}

/// The plan beside what the server logged, one row per figure the log has (GiB as SGLang
/// prints them). "Beside the pool" is what `Memory pool end` shows allocated after the weights
/// besides the KV pool: the `req_to_token` table and the allocators.
pub fn check_memory(plan: &MemoryPlan, log: &RunMemory) -> Vec<MemoryCheck> {
    let gib = |b: u64| b as f64 / GIB;
    let opt_gib = |b: Option<u64>| b.map(gib);
    let pool = log.pool.as_ref();
    let logged_table = pool.and_then(|p| {
        Some(req_to_token_bytes(
            p.max_running_requests? as u32,
            p.context_len?,
        ))
    });
    let beside = log.ranks.iter().find_map(|r| {
        let after_load = r.available_after_load_bytes?;
        let after_pool = r.available_after_pool_bytes?;
        Some(after_load as i64 - r.kv_pool_bytes()? as i64 - after_pool as i64)
    });
    let plan_after_pool = plan.available_before_load_bytes as i64
        - (plan.weight_bytes_per_gpu
            + plan.kv_pool_bytes_per_gpu
            + plan.reserves.req_to_token_bytes) as i64;
    [
        check(
            "free before loading",
            "GiB",
            gib(plan.available_before_load_bytes),
            opt_gib(log.available_before_load_bytes()),
        ),
        check(
            "weights / GPU",
            "GiB",
            gib(plan.weight_bytes_per_gpu),
            opt_gib(log.weight_bytes()),
        ),
        check(
            "KV pool / GPU",
            "GiB",
            gib(plan.kv_pool_bytes_per_gpu),
            opt_gib(log.kv_pool_bytes()),
        ),
        check(
            "KV tokens",
            "tokens",
            plan.kv_tokens as f64,
            log.kv_tokens().map(|t| t as f64),
        ),
        check(
            "max_running_requests",
            "requests",
            plan.max_running_requests as f64,
            pool.and_then(|p| p.max_running_requests).map(|n| n as f64),
        ),
        check(
            "context_len",
            "tokens",
            plan.context_len as f64,
            pool.and_then(|p| p.context_len).map(|n| n as f64),
        ),
        check(
            "req_to_token table",
            "GiB",
            gib(plan.reserves.req_to_token_bytes),
            opt_gib(logged_table),
        ),
        check(
            "allocated beside the pool",
            "GiB",
            gib(plan.reserves.req_to_token_bytes),
            beside.map(|b| b as f64 / GIB),
        ),
        check(
            "free after the pool",
            "GiB",
            plan_after_pool as f64 / GIB,
            opt_gib(log.available_after_pool_bytes()),
        ),
        check(
            "CUDA graphs",
            "GiB",
            gib(plan.reserves.cuda_graph_bytes),
            opt_gib(log.cuda_graph_bytes()),
        ),
        // vLLM's own estimate, what its budget subtracts when it counts graphs
        check(
            "CUDA graphs (vLLM's estimate)",
            "GiB",
            gib(plan.reserves.cuda_graph_bytes),
            opt_gib(log.cuda_graph_estimated_bytes()),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `plan` with the server's own figures where the log has them (its numbers win): weights, KV
/// tokens and pool, free memory before loading, `max_running_requests`, context length.
pub fn observed_plan(plan: &MemoryPlan, log: &RunMemory) -> MemoryPlan {
    let mut p = plan.clone();
    if let Some(w) = log.weight_bytes() {
        p.weight_bytes_per_gpu = w;
    }
    if let Some(t) = log.kv_tokens() {
        p.kv_tokens = t;
        p.kv_tokens_by_memory = t;
    }
    if let Some(b) = log.kv_pool_bytes() {
        p.kv_pool_bytes_per_gpu = b;
    }
    if let Some(a) = log.available_before_load_bytes() {
        p.available_before_load_bytes = a;
        p.reserves.pre_load_bytes = p.gpu_memory_bytes.saturating_sub(a);
    }
    if let Some(pool) = &log.pool {
        if let Some(n) = pool.max_running_requests {
            p.max_running_requests = n.min(u32::MAX as u64) as u32;
        }
        if let Some(c) = pool.context_len {
            p.context_len = c;
        }
        p.reserves.req_to_token_bytes = req_to_token_bytes(p.max_running_requests, p.context_len);
    }
    if let Some(g) = log.cuda_graph_bytes() {
        p.reserves.cuda_graph_bytes = g;
    }
    p.reserve_bytes_per_gpu = p.reserves.total_bytes();
    p.free_after_reserves_bytes = p.gpu_memory_bytes as i64
        - (p.weight_bytes_per_gpu + p.kv_pool_bytes_per_gpu + p.reserve_bytes_per_gpu) as i64;
    p.fits = p.kv_tokens > 0;
    p
}
