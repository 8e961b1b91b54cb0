//! vLLM's "GPU KV cache size: N tokens" lines that communities published, beside the KV tokens
//! shardwise's vLLM memory plan (`sim::cost::memory::vllm`) predicts for the same launch. The
//! lines and their sources are listed in `validation/further-README.md` ("KV-cache capacity
//! lines seen"); the Kimi-K2.6 one is the rtx6kpro Kimi-K2.6 v4 page's (TP8, fp8 KV, 0.94).
//!
//! Two checks per line, of different physics:
//! - **the cache cell**: "Available KV cache memory: X GiB" ÷ the tokens is the bytes vLLM stores
//!   per token on one GPU; the plan's cell must match it to the rounding of X (0.1%).
//! - **the tokens at the stated `--gpu-memory-utilization`**: the plan subtracts the weights, the
//!   profiling run's peak (with the sparse-MLA indexer's gather workspace and logits stand-in for
//!   GLM-5.1) and the non-torch memory. The weights are the allocated bytes vLLM logs (GLM-5.1:
//!   55.62 GiB planned, 55.67 logged), not SGLang's free-memory figure with the allocator's holes.
//!   Against these lines the plan still leaves 4–7 GiB per GPU too much for the cache (GLM-5.1,
//!   Kimi-K2-Thinking on H200, MiniMax-M2.5), not modelled yet: the bands below state today's
//!   misses (the plan over the published line), they were not fitted. Kimi-K2.6 at 0.94 is
//!   within 1% (+0.6%; +4.7% while it was sized as the text-only K2-Thinking, without K2.5's
//!   vision tower).

use models::{KvDtype, Layout, ModelSpec};
use sim::cost::MemoryPlan;
use sim::cost::memory::vllm::plan;
use sim::options::{ServerOptions, VllmMemory};

/// The RTX PRO 6000 Blackwell Server's memory as torch sees it (97,887 MiB).
const RTX_PRO_6000_BYTES: u64 = 97_887 << 20;
/// H200's memory as torch sees it (143,771 MiB).
const H200_BYTES: u64 = 143_771 << 20;
const GIB: f64 = (1u64 << 30) as f64;

/// One published launch.
struct Line {
    what: &'static str,
    preset: &'static str,
    tp: u32,
    dcp: u32,
    kv: Option<KvDtype>,
    utilization: f64,
    card_bytes: u64,
    max_model_len: u32,
    /// "GPU KV cache size: N tokens".
    published_tokens: u64,
    /// "Available KV cache memory: X GiB", where the source prints it.
    available_gib: Option<f64>,
    /// `--max-num-seqs` where the launch states it (the sampler rows of the profiling run).
    max_num_seqs: Option<u32>,
}

impl Line {
    fn plan(&self) -> MemoryPlan {
        let spec = ModelSpec::preset(self.preset).unwrap();
        let fp = models::footprint::footprint(&spec, &Layout::tp(self.tp)).unwrap();
        let v = VllmMemory {
            gpu_memory_utilization: self.utilization,
            max_num_batched_tokens: None,
            max_num_seqs: self.max_num_seqs,
            estimate_cudagraphs: false,
            unchunked_default_budget: false,
            kv_cache_memory_bytes: None,
        };
        let opts = ServerOptions {
            kv_cache_dtype: self.kv,
            cuda_graph_max_bs: 512,
            decode_context_parallel: self.dcp,
            context_length: Some(self.max_model_len),
            ..ServerOptions::default()
        };
        plan(&spec, &fp, self.card_bytes, &v, &opts)
    }

    /// `(plan / published − 1)`.
    fn error(&self, p: &MemoryPlan) -> f64 {
        p.kv_tokens as f64 / self.published_tokens as f64 - 1.0
    }
}

/// GLM-5.1's launch as its start-up log states it (`glm-dcp1-mtp0/startup.log` beside the raw
/// results: `max_num_seqs` 64, `max_num_batched_tokens` 8192, `max_cudagraph_capture_size` 256).
fn glm51(dcp: u32, published_tokens: u64, available_gib: Option<f64>) -> Line {
    Line {
        max_num_seqs: Some(64),
        what: "GLM-5.1-NVFP4 TP8, fp8 KV, 0.865, MTP off (rtx6kpro models/glm5.1_v2.md)",
        preset: "glm-5.1-nvfp4",
        tp: 8,
        dcp,
        kv: Some(KvDtype::Fp8),
        utilization: 0.865,
        card_bytes: RTX_PRO_6000_BYTES,
        max_model_len: 202_752,
        published_tokens,
        available_gib,
    }
}

fn kimi_k2_thinking_h200(dcp: u32, published_tokens: u64, available_gib: Option<f64>) -> Line {
    Line {
        max_num_seqs: None,
        what: "Kimi-K2-Thinking TP8 on 8× H200, default 0.9, bf16 KV (vllm-project/recipes)",
        preset: "kimi-k2-thinking-int4",
        tp: 8,
        dcp,
        kv: None,
        utilization: 0.9,
        card_bytes: H200_BYTES,
        max_model_len: 262_144,
        published_tokens,
        available_gib,
    }
}

/// MiniMax-M2.5 FP8 TP4 (rtx6kpro models/minimax-m25.md): the page states neither the
/// utilisation nor the KV dtype; bf16 KV is what its cell says (below), 0.9 is vLLM's default.
fn minimax_tp4() -> Line {
    Line {
        max_num_seqs: None,
        what: "MiniMax-M2.5 FP8 TP4, utilisation not stated (0.9 assumed) (rtx6kpro models/minimax-m25.md)",
        preset: "minimax-m2.5",
        tp: 4,
        dcp: 1,
        kv: None,
        utilization: 0.9,
        card_bytes: RTX_PRO_6000_BYTES,
        max_model_len: 196_608,
        published_tokens: 399_424,
        available_gib: Some(23.62),
    }
}

fn kimi_k26_tp8() -> Line {
    Line {
        max_num_seqs: None,
        what: "Kimi-K2.6 TP8, fp8 KV, 0.94, DCP1 MTP off (rtx6kpro Kimi-K2.6 v4 page)",
        // K2.6 is K2.5's architecture, vision tower included (data/hf-configs README), and vLLM
        // loads that tower on every GPU: 0.6 GiB the text-only K2-Thinking preset leaves out
        preset: "kimi-k2.5",
        tp: 8,
        dcp: 1,
        kv: Some(KvDtype::Fp8),
        utilization: 0.94,
        card_bytes: RTX_PRO_6000_BYTES,
        max_model_len: 262_144,
        published_tokens: 478_992,
        available_gib: None,
    }
}

/// The bytes per token of every line that prints its available KV memory: 61,464 for GLM-5.1
/// (78 layers × (656 of `fp8_ds_mla` + 132 of the indexer)), 70,272 for Kimi-K2 (61 × 576 × 2),
/// 63,488 for MiniMax-M2.5 at TP4 (62 × 2 KV heads × 128 × 2 × 2).
#[test]
fn the_cache_cell_matches_the_published_memory_over_tokens() {
    for line in [
        glm51(1, 341_504, Some(19.55)),
        kimi_k2_thinking_h200(1, 715_072, Some(46.80)),
        minimax_tp4(),
    ] {
        let p = line.plan();
        let planned = p.kv_pool_bytes_per_gpu as f64 / p.kv_tokens as f64;
        let logged = line.available_gib.unwrap() * GIB / line.published_tokens as f64;
        let err = planned / logged - 1.0;
        assert!(
            err.abs() < 0.001,
            "{}: {planned:.0} bytes per token planned, {logged:.0} logged ({:+.2}%)",
            line.what,
            err * 100.0
        );
    }
}

/// Where GLM-5.1's miss is, from its start-up log ('Model loading took 55.67 GiB', 'Available
/// KV cache memory: 19.55 GiB' at 0.865 of 95.59 GiB): the weights are planned to 1% (55.62 GiB;
/// they were 57.5 while the 1.85 GiB of allocator holes SGLang's figure sees were counted), and
/// the memory beside weights and cache is 3.9 GiB low: vLLM's profile leaves 7.47 GiB for the
/// activation peak and non-torch memory, the plan 3.6 GiB (2.1 GiB before the indexer's
/// profiling-run workspace, 1.0 GiB, and its 512 MiB logits stand-in were counted).
#[test]
fn glm51_miss_is_the_memory_beside_the_weights() {
    let line = glm51(1, 341_504, Some(19.55));
    let p = line.plan();
    let requested_gib = line.utilization * line.card_bytes as f64 / GIB;
    let logged_weights_gib = 55.67;
    let beside_logged = requested_gib - logged_weights_gib - 19.55;
    let beside_planned =
        (p.reserves.activation_bytes + p.reserves.attention_workspace_bytes) as f64 / GIB;
    let weights = p.weight_bytes_per_gpu as f64 / GIB;
    assert!(
        (weights / logged_weights_gib - 1.0).abs() < 0.01,
        "weights {weights:.2} GiB planned, {logged_weights_gib} logged"
    );
    assert!(
        (7.3..7.6).contains(&beside_logged)
            && (0.4 * beside_logged..0.6 * beside_logged).contains(&beside_planned),
        "beside the weights and the cache: {beside_planned:.2} GiB planned, {beside_logged:.2} GiB logged"
    );
}

/// The KV tokens at each line's utilisation, with today's misses as the bands (see the module
/// docs: the plan leaves 4–7 GiB per GPU too much for the cache on three of the four models).
#[test]
fn kv_tokens_beside_the_published_lines() {
    let lines = [
        // (line, lowest and highest allowed plan/published − 1); today: +19.9%, +20.4%, +20.4%,
        // +19.8%, +13.1%, +13.1%, +28.6%, +0.6% (+4.7% without the vision tower). Before: +18.1…+18.6% for GLM-5.1 (its weights
        // 1.85 GiB high, its indexer's workspace missing: the two errors partly cancelled),
        // +11.9% and +1.1% for Kimi (0.68 GiB of Marlin-repack holes counted as weights).
        (glm51(1, 341_504, None), 0.0, 0.24),
        (glm51(2, 680_192, None), 0.0, 0.24),
        (glm51(4, 1_360_384, None), 0.0, 0.24),
        (glm51(8, 2_720_768, None), 0.0, 0.24),
        (kimi_k2_thinking_h200(1, 715_072, None), 0.0, 0.16),
        (kimi_k2_thinking_h200(8, 5_721_088, None), 0.0, 0.16),
        (minimax_tp4(), 0.0, 0.32),
        (kimi_k26_tp8(), -0.02, 0.03),
    ];
    let mut table = String::new();
    for (line, lo, hi) in &lines {
        let p = line.plan();
        let err = line.error(&p);
        table.push_str(&format!(
            "{} DCP{}: {} planned, {} published ({:+.1}%)\n",
            line.what,
            line.dcp,
            p.kv_tokens,
            line.published_tokens,
            err * 100.0
        ));
        assert!(
            (*lo..=*hi).contains(&err),
            "{} DCP{}: {} tokens planned, {} published ({:+.1}%, allowed {:+.0}%…{:+.0}%)\n{table}",
            line.what,
            line.dcp,
            p.kv_tokens,
            line.published_tokens,
            err * 100.0,
            lo * 100.0,
            hi * 100.0
        );
    }
    println!("{table}");
}

/// DCP d multiplies the tokens by d (each rank holds 1/d of every request) and, the published
/// lines say, by slightly less: 1.992, 3.984 and 7.967 for GLM-5.1 DCP 2/4/8, 8.001 for
/// Kimi-K2-Thinking DCP8. The plan's ratios must be within 1% of those.
#[test]
fn dcp_scales_the_tokens_as_the_published_lines() {
    let base = glm51(1, 341_504, None);
    let one = base.plan().kv_tokens as f64;
    for (d, published) in [(2, 680_192u64), (4, 1_360_384), (8, 2_720_768)] {
        let ratio = glm51(d, published, None).plan().kv_tokens as f64 / one;
        let seen = published as f64 / base.published_tokens as f64;
        assert!(
            (ratio / seen - 1.0).abs() < 0.01,
            "GLM-5.1 DCP{d}: ×{ratio:.3} planned, ×{seen:.3} published"
        );
    }
    let k1 = kimi_k2_thinking_h200(1, 715_072, None).plan().kv_tokens as f64;
    let k8 = kimi_k2_thinking_h200(8, 5_721_088, None).plan().kv_tokens as f64;
    assert!((k8 / k1 / (5_721_088.0 / 715_072.0) - 1.0).abs() < 0.01);
}

/// `--no-enable-chunked-prefill` with no `--max-num-batched-tokens`: vLLM sizes the step budget,
/// and its profiling run, to `max(max_model_len, 8192)` (Qwen3-Next's 262,144), at most
/// `max_num_seqs × max_model_len`, and hands the scheduler that budget; chunked, the default 8192.
#[test]
fn an_unchunked_server_budgets_a_step_to_the_longest_prompt() {
    let spec = ModelSpec::preset("qwen3-next-80b-a3b").unwrap();
    let fp = models::footprint::footprint(&spec, &Layout::tp(4)).unwrap();
    let plan = |unchunked: bool, seqs: Option<u32>| {
        let v = VllmMemory {
            gpu_memory_utilization: 0.9,
            max_num_batched_tokens: None,
            max_num_seqs: seqs,
            estimate_cudagraphs: false,
            unchunked_default_budget: unchunked,
            kv_cache_memory_bytes: None,
        };
        let opts = ServerOptions {
            engine: sim::engine::Engine::Vllm,
            ..ServerOptions::default()
        };
        sim::cost::memory::vllm::plan(&spec, &fp, 192 << 30, &v, &opts)
    };
    let (chunked, unchunked) = (plan(false, None), plan(true, None));
    assert_eq!(chunked.prefill_budget_tokens, 8192);
    assert_eq!(unchunked.prefill_budget_tokens, 262_144);
    // the profiling run at 262,144 tokens reserves more activations: fewer KV tokens
    assert!(unchunked.kv_tokens < chunked.kv_tokens);
    // at most max_num_seqs × max_model_len
    assert_eq!(plan(true, Some(1)).prefill_budget_tokens, 262_144);
}
