//! SGLang's `--dp-size N` without `--enable-dp-attention`: N engines of `--tp` (× `--pp-size`)
//! GPUs each behind its router (`python/sglang/srt/managers/data_parallel_controller.py`: engine
//! `i` on `base_gpu_id + i × tp_size × pp_size`, requests dispatched round-robin, the default
//! `--load-balance-method round_robin`). Each engine has its own scheduler and KV pool, so each is
//! replayed on its own ([`super::engine::run`]) with every N-th request of the workload.
//!
//! The client's `--max-concurrency C` is one limit over all engines; with round-robin dispatch
//! and engines of equal speed each holds C/N of them in flight (C mod N engines one more), which
//! is how it is replayed. An engine that finishes its share early does not take over the other's
//! (the router does not rebalance), as SGLang's round-robin does not. Closed rounds are replayed
//! per engine (each engine's share of a round starts when its share of the last one finished;
//! the client waits for the slowest, the same as long as the engines are equal). With fewer slots than
//! engines (C < N) only C engines ever hold a request at once: the workload is replayed on C of
//! them, one slot each (the same throughput and latencies as round-robin over all N, the
//! engines being equal), while the KV pools of all N are reported.
//!
//! The report is the whole box's: bench_serving's statistics over every request of every engine,
//! the duration of the slowest engine, peaks and KV pools summed over engines.

use super::engine::{self, Trace};
use super::{CostCache, RunReport, ServingError, check_fits, report};
use crate::cost::IterationModel;
use crate::options::ServerOptions;
use crate::workload::Workload;

/// Simulates `workload` served by one engine per model of `models` (one per replica, each
/// costed on its own GPUs) behind SGLang's round-robin router.
pub fn simulate_replicas(
    models: &[&dyn IterationModel],
    opts: &ServerOptions,
    workload: &Workload,
) -> Result<RunReport, ServingError> {
    let n = models.len().max(1);
    let used = workload
        .max_concurrency
        .map_or(n, |c| (c as usize).clamp(1, n));
    let requests = workload.requests();
    let mut merged = Trace::default();
    let mut kv_capacity = 0;
    for (r, model) in models.iter().enumerate() {
        check_fits(*model)?;
        let cfg = super::EngineConfig::new(*model, opts, workload);
        kv_capacity += cfg.kv_tokens;
        if r >= used {
            continue;
        }
        let mine: Vec<_> = requests.iter().skip(r).step_by(used).cloned().collect();
        let client = engine::Client {
            max_concurrency: workload
                .max_concurrency
                .map(|c| concurrency_share(c, r, used)),
            closed_rounds: workload.closed_rounds,
        };
        let mut cache = CostCache::new(*model);
        absorb(&mut merged, engine::run(cfg, &mut cache, &mine, client)?);
    }
    let mut out = report(models[0], opts, workload, &requests, merged, kv_capacity);
    out.replicas = n as u32;
    out.layout = format!("{n}×{}", out.layout);
    out.flags = format!(
        "{} {}",
        out.flags,
        opts.engine.rules().replicas_flag(n as u32)
    );
    Ok(out)
}

/// The client slots engine `r` of `n` (`n` ≤ `c`) holds when `c` requests are in flight,
/// round-robin.
fn concurrency_share(c: u32, r: usize, n: usize) -> u32 {
    let c = c as usize;
    (c / n + usize::from(r < c % n)) as u32
}

/// Adds one engine's trace to the box's.
fn absorb(into: &mut Trace, t: Trace) {
    into.ttft_s.extend(t.ttft_s);
    into.tpot_s.extend(t.tpot_s);
    into.e2e_s.extend(t.e2e_s);
    into.itl_s.absorb(&t.itl_s);
    into.duration_s = into.duration_s.max(t.duration_s);
    into.peak_running += t.peak_running;
    into.peak_kv_tokens += t.peak_kv_tokens;
    let (b, o) = (&mut into.breakdown, t.breakdown);
    b.prefill_s += o.prefill_s;
    b.decode_s += o.decode_s;
    b.idle_s += o.idle_s;
    b.prefill_batches += o.prefill_batches;
    b.decode_batches += o.decode_batches;
    b.cpu_bound_turns += o.cpu_bound_turns;
    b.retracted_requests += o.retracted_requests;
    b.cost_parts.add_scaled(&o.cost_parts, 1.0);
    if into.samples.is_empty() {
        into.samples = t.samples;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_slots_add_up() {
        for (c, n) in [(2, 2), (7, 2), (64, 2), (10, 4), (5, 4)] {
            let shares: Vec<u32> = (0..n).map(|r| concurrency_share(c, r, n)).collect();
            let sum: u32 = shares.iter().sum();
            assert_eq!(sum, c, "{c} over {n}: {shares:?}");
            assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
        }
    }
}
