//! vLLM's decode context parallelism through the cost model (`sim::cost::dcp`): capacity,
//! cache reads and collectives, and the sizes vLLM refuses.

use models::{Layout, ModelSpec};
use sim::cost::{CostModel, IterationModel, Knobs};
use sim::machine::Machine;
use sim::options::ServerOptions;

/// DCP d holds d× the tokens in the same memory, reads 1/d of the cache per GPU and pays
/// three collectives a layer: slower at short context, faster at long context and batch.
#[test]
fn dcp_trades_collectives_for_cache_reads_and_capacity() {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let kimi = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
    let with = |d: u32| {
        let opts = ServerOptions {
            decode_context_parallel: d,
            kv_cache_dtype: Some(models::KvDtype::Fp8),
            ..ServerOptions::default()
        };
        CostModel::new(&machine, &kimi, Layout::tp(8), &opts, Knobs::default()).unwrap()
    };
    let (one, eight) = (with(1), with(8));
    let ratio = eight.memory().kv_tokens as f64 / one.memory().kv_tokens as f64;
    assert!((7.9..=8.01).contains(&ratio), "KV tokens ×{ratio}");
    let short = |m: &CostModel| m.steady_decode(1, 1024).tok_per_s;
    let long = |m: &CostModel| m.steady_decode(8, 131_072).tok_per_s;
    assert!(short(&eight) < short(&one), "DCP8 pays its collectives");
    assert!(long(&eight) > long(&one), "DCP8 reads 1/8 of a long cache");
    assert!(
        CostModel::new(
            &machine,
            &kimi,
            Layout::tp(8),
            &ServerOptions {
                decode_context_parallel: 3,
                ..ServerOptions::default()
            },
            Knobs::default()
        )
        .is_err()
    );
}
