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

/// The three DCP collectives of one layer are NCCL's on the DCP group: on the tuned rtx6kpro
/// box (the Kimi-K2.6 records' state) they follow the all-gather / reduce-scatter curves derived
/// from its published all-reduce, cheaper than the untuned bare-metal ones from a few hundred KB,
/// and a layer's cost is exactly q gather + LSE gather + output reduce-scatter at vLLM's sizes.
#[test]
fn dcp_collectives_are_nccl_on_the_dcp_group_at_vllms_sizes() {
    use models::profile::CollectiveOp;
    use sim::cost::dcp::DcpComm;
    use sim::machine::placement::place;
    let kimi = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
    let opts = ServerOptions {
        decode_context_parallel: 8,
        ..ServerOptions::default()
    };
    let layer_s = |preset: &str, tokens: f64| {
        let m = Machine::resolve(preset).unwrap();
        let placement = place(&(0..8).collect::<Vec<u32>>(), 8, 1);
        let d = DcpComm::new(&m, &kimi, &Layout::tp(8), &placement, &opts).unwrap();
        let group: Vec<u32> = (0..8).collect();
        let (ag, rs) = (
            m.collective(CollectiveOp::AllGather, &group),
            m.collective(CollectiveOp::ReduceScatter, &group),
        );
        // Kimi: 64 heads, all 64 on every DCP8 rank; q 512+64 dims bf16, LSE fp32 gathered from
        // 8 ranks, output 512 dims bf16 reduce-scattered
        let expected = ag.time_s(tokens * 64.0 * 576.0 * 2.0)
            + ag.time_s(tokens * 8.0 * 64.0 * 4.0)
            + rs.time_s(tokens * 64.0 * 512.0 * 2.0);
        let got = d.layer_s(0, tokens);
        assert!(
            (got - expected).abs() < 1e-12,
            "{preset}: {got} vs {expected}"
        );
        got
    };
    let tuned = "rtx-pro-6000-x8-baremetal-nccl-ll128";
    let bare = "rtx-pro-6000-x8-baremetal";
    assert!(layer_s(tuned, 8.0) < 0.6 * layer_s(bare, 8.0));
    assert!(layer_s(tuned, 128.0) < layer_s(bare, 128.0));
    assert_eq!(layer_s(tuned, 0.0), 0.0);
}
