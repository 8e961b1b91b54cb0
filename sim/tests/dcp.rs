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

/// The kernels vLLM's DCP path runs beside its collectives (`sim::cost::dcp` module docs), at
/// hand-computed sizes for Kimi-K2 TP8 DCP8 (64 heads a rank, q 576 dims, output 512 dims,
/// bf16; LSEs fp32 from 8 ranks): one row runs the LSE correction only (the layout copies of a
/// size-1 axis are no-ops), more rows add the gathered queries' relayout and the reduce-scatter's
/// input and output copies.
#[test]
fn dcp_kernels_follow_vllms_shapes() {
    use sim::cost::dcp::DcpComm;
    use sim::machine::placement::place;
    let kimi = ModelSpec::preset("kimi-k2-thinking-int4").unwrap();
    let opts = ServerOptions {
        decode_context_parallel: 8,
        ..ServerOptions::default()
    };
    let m = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let placement = place(&(0..8).collect::<Vec<u32>>(), 8, 1);
    let d = DcpComm::new(&m, &kimi, &Layout::tp(8), &placement, &opts).unwrap();
    let out = 64.0 * 512.0 * 2.0;
    let lse = 8.0 * 64.0 * 4.0;
    assert_eq!(d.kernel_bytes(1.0), vec![2.0 * out + lse]);
    assert_eq!(
        d.kernel_bytes(16.0),
        vec![
            16.0 * (2.0 * out + lse),
            16.0 * 2.0 * 64.0 * 576.0 * 2.0,
            16.0 * 2.0 * out,
            16.0 * 2.0 * 8.0 * 512.0 * 2.0,
        ]
    );
    assert!(d.kernel_bytes(0.0).is_empty());
    // dense MLA has no top-k to merge
    assert_eq!(d.topk_merge_s(0, 16.0), 0.0);
    assert!(d.topk_merge_kernel_bytes(16.0).is_empty());
    assert_eq!(DcpComm::LAUNCHES_PER_LAYER, 7.0);
}

/// DSA under DCP where vLLM's DeepGEMM indexer runs (datacenter parts): every rank takes a
/// top-2048 of its own shard and the group all-gathers each row's (fp32 score, id) candidates,
/// 8 ranks × 2048 × 8 B, then selects; without the merge (SM120's B12X keeps each rank's local
/// top-k) nothing is gathered.
#[test]
fn dsa_dcp_merges_the_top_k_candidates_over_the_group() {
    use models::profile::CollectiveOp;
    use sim::cost::dcp::DcpComm;
    use sim::machine::placement::place;
    let glm = ModelSpec::preset("glm-5-fp8").unwrap();
    assert_eq!(glm.attention.indexer().unwrap().topk, 2048);
    let opts = ServerOptions {
        decode_context_parallel: 8,
        ..ServerOptions::default()
    };
    let placement = place(&(0..8).collect::<Vec<u32>>(), 8, 1);
    let h200 = Machine::resolve("h200-x8").unwrap();
    let d = DcpComm::new(&h200, &glm, &Layout::tp(8), &placement, &opts)
        .unwrap()
        .merging_topk(2048);
    let ag = h200.collective(CollectiveOp::AllGather, &(0..8).collect::<Vec<u32>>());
    let gathered = 4.0 * 8.0 * 2048.0 * 8.0;
    assert!((d.topk_merge_s(0, 4.0) - ag.time_s(gathered)).abs() < 1e-15);
    assert_eq!(
        d.topk_merge_kernel_bytes(4.0),
        vec![gathered / 8.0, gathered, 2.0 * gathered]
    );
    let local = DcpComm::new(&h200, &glm, &Layout::tp(8), &placement, &opts).unwrap();
    assert_eq!(local.topk_merge_s(0, 4.0), 0.0);
}

/// Under DCP vLLM's indexer scores each rank's own shard of the index keys: at 128k context
/// on H200 (sparse attention, the indexer's key reads and logits dominate the cache traffic)
/// DCP8 reads about an eighth of DCP1's per GPU, not the same indexer traffic plus 1/8 of the
/// top-k attention.
#[test]
fn dsa_indexer_scores_only_the_ranks_shard_under_dcp() {
    let machine = Machine::resolve("h200-x8").unwrap();
    let glm = ModelSpec::preset("glm-5-fp8").unwrap();
    let kv_read = |d: u32| {
        let opts = ServerOptions {
            decode_context_parallel: d,
            ..ServerOptions::default()
        };
        let m = CostModel::new(&machine, &glm, Layout::tp(8), &opts, Knobs::default()).unwrap();
        let batch = sim::cost::IterationBatch {
            decode_context_tokens: vec![131_072; 8],
            prefill: Vec::new(),
        };
        m.iteration(&batch).breakdown.kv_read_s
    };
    let ratio = kv_read(8) / kv_read(1);
    assert!(ratio < 0.2, "DCP8 / DCP1 cache and index reads ×{ratio}");
}

/// vLLM admits only sparse backends for a DSA checkpoint, so GLM-5.1 on SM120 attends each
/// query's top-k keys (B12X_MLA_SPARSE in the rtx6kpro recipes): one stream's decode barely
/// slows from 1k to 64k cached tokens (the indexer scores the context, the attention reads 2048
/// keys), where SGLang on SM120, which serves it as dense MLA, reads the whole cache. Under DCP
/// the B12X indexer keeps each rank's own top-k of its shard, so DCP4 buys no cache reads back
/// at 64k: it only adds its collectives (it did when the cache was costed dense).
#[test]
fn vllm_runs_dsa_sparse_on_sm120_and_dcp_keeps_each_rank_s_top_k() {
    use sim::engine::Engine;
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let glm = ModelSpec::preset("glm-5.1-nvfp4").unwrap();
    let model = |engine: Engine, d: u32| {
        let opts = ServerOptions {
            engine,
            decode_context_parallel: d,
            kv_cache_dtype: Some(models::KvDtype::Fp8),
            ..ServerOptions::default()
        };
        CostModel::new(&machine, &glm, Layout::tp(8), &opts, Knobs::default()).unwrap()
    };
    let at = |m: &CostModel, ctx: u32| m.steady_decode(1, ctx).tok_per_s;
    let vllm = model(Engine::Vllm, 1);
    let kept = at(&vllm, 65_536) / at(&vllm, 1024);
    assert!(
        kept > 0.93,
        "vLLM sparse keeps {kept:.3} of its speed at 64k"
    );
    let sglang = model(Engine::Sglang, 1);
    let dense = at(&sglang, 65_536) / at(&sglang, 1024);
    assert!(
        dense < kept - 0.05,
        "SGLang dense on SM120 keeps {dense:.3}"
    );
    let dcp4 = model(Engine::Vllm, 4);
    assert!(
        at(&dcp4, 65_536) < at(&vllm, 65_536),
        "DCP4 {:.1} vs DCP1 {:.1} tok/s at 64k",
        at(&dcp4, 65_536),
        at(&vllm, 65_536)
    );
}

/// `predict`'s traffic counts DCP's collectives (they were left out: a DCP 8 step showed only its
/// all-reduces on the wire): per layer the query and LSE all-gathers and the output
/// reduce-scatter, 7/8 of each gathered size per rank over 8 shards.
#[test]
fn dcp_collectives_are_on_the_wire() {
    let wire = |dcp: &str| {
        let line = format!("vllm serve lukealonso/GLM-5.1-NVFP4-MTP -tp 8 -dcp {dcp}");
        let (code, out, err) = crate::common::sim_output(&[
            "predict",
            "--machine",
            "rtx-pro-6000-x8-baremetal",
            "--model",
            "glm-5.1-nvfp4",
            "--server-args",
            &line,
            "--batch",
            "32",
            "--context",
            "8192",
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["layouts"][0]["traffic"]["dp_attention_wire_bytes"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(wire("1"), 0.0);
    // GLM-5.1: 64 heads of 512 + 64 dims, 78 layers; 32 rows: queries 64 × 576 × 2, LSE 8 × 64
    // × 4 and outputs 64 × 512 × 2 bytes a row, each sent 7/8 of per rank (B12X's indexer is
    // rank-local: no top-k merge)
    let per_row = 64.0 * 576.0 * 2.0 + 8.0 * 64.0 * 4.0 + 64.0 * 512.0 * 2.0;
    let want = 78.0 * 32.0 * per_row * 7.0 / 8.0;
    let got = wire("8");
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
}
