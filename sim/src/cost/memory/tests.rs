//! Checks against the user's server (data/observations/user-box.json, its server log) and the
//! GLM-5 figures in data/observations/README.md. SGLang logs memory in GiB while calling it "GB"
//! (`/ (1 << 30)`), so those figures are read as GiB here.
use super::*;
use models::footprint::footprint;

const GIB: f64 = (1u64 << 30) as f64;

fn user_box() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/observations/user-box.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn observed_memory() -> serde_json::Value {
    user_box()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "glm47-fp8-tp8-memory")
        .unwrap()["metrics"]
        .clone()
}

fn rtx_memory() -> u64 {
    models::GpuSpec::preset("rtx-pro-6000-server")
        .unwrap()
        .memory_bytes
}

fn glm47_opts() -> ServerOptions {
    ServerOptions {
        mem_fraction_static: 0.848,
        disable_cuda_graph: true,
        ..ServerOptions::default()
    }
}

/// The acceptance check of the memory plan: GLM-4.7-FP8 TP8 at 0.848, as the user's server ran
/// it: weights within 2% of the logged 41.90 GiB, KV tokens within 3% of 864,247 (the issue's
/// bounds). Since the per-channel FP8 scales of `w2` (whole on every rank) and the allocator's
/// rounding are counted, both are within 1% (41.75 GiB, 867,950 tokens: −0.4% / +0.4%; they were
/// −1.2% / +1.4%), so the bounds here are 1%.
#[test]
fn glm47_fp8_tp8_matches_the_users_server() {
    let m = observed_memory();
    let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let opts = glm47_opts();
    // The checkpoint ships no KV scales, so SGLang's `auto` KV dtype is BF16.
    assert_eq!(kv_dtype(&spec, &opts), KvDtype::Bf16);
    let p = plan(&spec, &fp, rtx_memory(), &opts);
    let weights = m["weights_gib_per_gpu"].as_f64().unwrap();
    let weights_err = p.weight_bytes_per_gpu as f64 / (weights * GIB) - 1.0;
    assert!(weights_err.abs() < 0.01, "weights off by {weights_err:+.4}");
    let tokens = m["kv_tokens_capacity"].as_u64().unwrap() as f64;
    let tokens_err = p.kv_tokens as f64 / tokens - 1.0;
    assert!(
        tokens_err.abs() < 0.01,
        "KV tokens {} off by {tokens_err:+.4}",
        p.kv_tokens
    );
    assert_eq!(p.context_len, 202_752);
    assert_eq!(p.reserves.cuda_graph_bytes, 0, "--disable-cuda-graph");
    assert!(p.fits && p.free_after_reserves_bytes > 0, "{p:?}");
}

#[test]
fn max_running_requests_and_req_to_token_as_the_log_shows() {
    // The log: max_total_num_tokens=864247, context_len=202752 → max_running_requests=2182.
    let m = observed_memory();
    let n = max_running_requests(864_247, 202_752, None, 1);
    assert_eq!(
        n as u64,
        m["max_running_requests_derived"].as_u64().unwrap()
    );
    // user-box.json: about 1.65 GiB between the weights and the pool is that table.
    let table = req_to_token_bytes(n, 202_752) as f64 / GIB;
    assert!((table - 1.65).abs() < 0.01, "{table:.3} GiB");
    // clamped to [2048, 4096], and to half the tokens or the flag
    assert_eq!(max_running_requests(10_000, 202_752, None, 1), 2048);
    assert_eq!(
        max_running_requests(3_000, 202_752, None, 1),
        1500,
        "half the tokens"
    );
    assert_eq!(max_running_requests(100_000_000, 4096, None, 1), 4096);
    assert_eq!(max_running_requests(864_247, 202_752, Some(512), 1), 512);
    assert_eq!(max_running_requests(864_247, 202_752, Some(9000), 1), 2182);
    assert_eq!(max_running_requests(864_247, 202_752, Some(512), 8), 64);
}

#[test]
fn the_logged_pre_load_memory_reproduces_the_logged_pool() {
    // With the log's own free memory before loading (94.13 GiB) and its weights (41.90 GiB),
    // SGLang's formula gives its 864,247 tokens: the formula is right; what is left is ours.
    let rest = 0.848f64 * 94.13 - 41.90;
    let tokens = rest * GIB / (92.0 * 2.0 * 128.0 * 2.0);
    assert!((tokens / 864_247.0 - 1.0).abs() < 0.001, "{tokens:.0}");
}

#[test]
fn max_total_tokens_caps_the_pool() {
    let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let free = plan(&spec, &fp, rtx_memory(), &glm47_opts());
    let capped = plan(
        &spec,
        &fp,
        rtx_memory(),
        &ServerOptions {
            max_total_tokens: Some(100_000),
            ..glm47_opts()
        },
    );
    assert_eq!(capped.kv_tokens, 100_000);
    assert_eq!(capped.kv_tokens_by_memory, free.kv_tokens_by_memory);
    assert!(capped.kv_pool_bytes_per_gpu < free.kv_pool_bytes_per_gpu / 8);
    assert!(capped.free_after_reserves_bytes > free.free_after_reserves_bytes);
    assert!(capped.max_running_requests <= free.max_running_requests);
    let over = plan(
        &spec,
        &fp,
        rtx_memory(),
        &ServerOptions {
            max_total_tokens: Some(10_000_000),
            ..glm47_opts()
        },
    );
    assert_eq!(over.kv_tokens, free.kv_tokens);
    assert!(over.notes.iter().any(|n| n.contains("--max-total-tokens")));
}

#[test]
fn cuda_graphs_and_big_chunks_take_from_the_headroom_not_the_pool() {
    let spec = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let eager = plan(&spec, &fp, rtx_memory(), &glm47_opts());
    let graphs = plan(
        &spec,
        &fp,
        rtx_memory(),
        &ServerOptions {
            disable_cuda_graph: false,
            cuda_graph_max_bs: 512,
            ..glm47_opts()
        },
    );
    assert_eq!(graphs.kv_tokens, eager.kv_tokens);
    assert_eq!(graphs.reserves.cuda_graph_bytes, 1 << 30);
    // 0.848 leaves 14.3 GiB; a 128K-token chunk's activations do not fit: a note says so.
    let huge = plan(
        &spec,
        &fp,
        rtx_memory(),
        &ServerOptions {
            chunked_prefill_size: 131_072,
            ..glm47_opts()
        },
    );
    assert!(huge.free_after_reserves_bytes < 0);
    assert!(
        huge.notes.iter().any(|n| n.contains("run out of memory")),
        "{:?}",
        huge.notes
    );
}

#[test]
fn glm5_nvfp4_tp8_bf16_kv_per_token_bytes_match_the_observed_pool() {
    // README: 57.06 GB weights + 29.32 GB KV per GPU at TP8, 0.85, BF16 KV, ≈ 314K tokens.
    let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let opts = ServerOptions {
        kv_cache_dtype: Some(KvDtype::Bf16),
        ..ServerOptions::default()
    };
    let p = plan(&spec, &fp, rtx_memory(), &opts);
    // the load overhead (w_kc/w_vc, NVFP4 w2_weight_scale holes) included: within 2%
    let weights_err = p.weight_bytes_per_gpu as f64 / (57.06 * GIB) - 1.0;
    assert!(weights_err.abs() < 0.02, "weights off by {weights_err:+.3}");
    // MLA latent (512 + 64) × 2 B + the DSA index key (128 B fp8 + 4 B scale) per layer:
    // 29.32 GiB of pool holds 314.3K such tokens.
    let per_token = (fp.kv_bytes_per_token_per_gpu(&spec, KvDtype::Bf16)
        + fp.indexer_cache_bytes_per_token_per_gpu(&spec)) as f64;
    let tokens_in_observed_pool = 29.32 * GIB / per_token;
    assert!((tokens_in_observed_pool / 314_000.0 - 1.0).abs() < 0.02);
    // The observed 57.06 + 29.32 GiB exceed 0.85 × the 94 GiB free before loading (80 GiB) in
    // SGLang's formula, so that server's budget differed (another card or build); we predict
    // what the formula gives with our weights, which match that log's: 21% fewer tokens, and
    // the formula with the log's own weights gives the same within 2% (the weights' error).
    let err = p.kv_tokens as f64 / 314_000.0 - 1.0;
    assert!(
        err < -0.15 && err > -0.25,
        "KV tokens {} ({err:+.3})",
        p.kv_tokens
    );
    let with_logged_weights =
        (0.85 * p.available_before_load_bytes as f64 - 57.06 * GIB) / per_token;
    assert!(
        (p.kv_tokens as f64 / with_logged_weights - 1.0).abs() < 0.02,
        "{} vs {with_logged_weights:.0}",
        p.kv_tokens
    );
}

#[test]
fn too_big_a_model_reports_the_shortfall() {
    let spec = ModelSpec::preset("llama-3.1-405b").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let opts = ServerOptions::default();
    let p = plan(&spec, &fp, rtx_memory(), &opts);
    assert!(!p.fits);
    assert_eq!(p.kv_tokens, 0);
    assert_eq!(
        p.shortfall_bytes,
        p.weight_bytes_per_gpu - p.static_budget_bytes
    );
    match checked_plan(&spec, &fp, rtx_memory(), &opts) {
        Err(SimError::DoesNotFit {
            shortfall_gb,
            weights_gb,
            reserve_gb,
            budget_gb,
            ..
        }) => {
            assert!(shortfall_gb > 10.0);
            assert!((weights_gb + reserve_gb - budget_gb - shortfall_gb).abs() < 1e-3);
        }
        other => panic!("{other:?}"),
    }
}

/// GLM-5-NVFP4 at TP8 with its MTP layer (`--speculative-algorithm EAGLE`, no draft model
/// path): the BF16 MTP layer and its own KV pool come out of the headroom; the target's pool is
/// the same.
#[test]
fn glm5_mtp_draft_takes_its_weights_and_kv_from_the_headroom() {
    let spec = ModelSpec::preset("glm-5-nvfp4").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let base = ServerOptions::default();
    let mtp = ServerOptions {
        speculative: Some(crate::options::SpeculativeOptions {
            algorithm: "EAGLE".into(),
            num_steps: 3,
            eagle_topk: 1,
            num_draft_tokens: 4,
            draft_model_path: None,
            accept_length: None,
            prompt_kind: None,
            forced_by: None,
        }),
        ..ServerOptions::default()
    };
    let off = plan(&spec, &fp, rtx_memory(), &base);
    let on = plan(&spec, &fp, rtx_memory(), &mtp);
    assert_eq!(on.kv_tokens, off.kv_tokens);
    assert_eq!(off.reserves.draft_weight_bytes, 0);
    // one MTP layer: attention, indexer, 256 routed + 1 shared experts and eh_proj, all BF16
    // (`model.layers.78*` is excluded), 1/8 of the sharded parts per GPU
    let w = on.reserves.draft_weight_bytes as f64 / 1e9;
    assert!(w > 2.5 && w < 3.5, "{w:.2} GB");
    let per_token = (576 + 132) as u64; // FP8 latent + DSA index key, one layer
    assert_eq!(on.reserves.draft_kv_bytes, on.kv_tokens * per_token);
    assert!(on.free_after_reserves_bytes < off.free_after_reserves_bytes);
}

/// Kimi-K2-Thinking-NVFP4 at TP8, 0.848 (its server's logs are not in the repository; issue 23:
/// the log's weights are ~4% above the checkpoint's tensors): the load overhead (the NVFP4
/// w2_weight_scale holes, 42 MiB per MoE layer, and the w_kc/w_vc copies) adds 3.5–4.5%.
#[test]
fn kimi_k2_thinking_nvfp4_weights_carry_the_load_overhead() {
    let spec = ModelSpec::preset("kimi-k2-thinking-nvfp4").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let p = plan(&spec, &fp, rtx_memory(), &glm47_opts());
    let overhead = fp.per_gpu[0].weight_bytes_by_part[&models::ModelPart::LoadOverhead];
    let share = overhead as f64 / (p.weight_bytes_per_gpu - overhead) as f64;
    assert!((0.035..0.045).contains(&share), "{share:.4}");
    // FP8 KV: 61 layers × 576 B per token
    let cell = 61 * 576;
    let expected = (p.static_budget_bytes - p.weight_bytes_per_gpu) / cell;
    assert_eq!(p.kv_tokens, expected);
}

/// Kimi-K2.5 at TP8 on these cards leaves the pool a few hundred MB of a 78 GB budget: the plan
/// says how fragile its token count is; GLM-4.7's pool (almost half the budget) gets no such note.
#[test]
fn a_thin_pool_says_how_far_a_weights_error_moves_it() {
    let thin = |p: &MemoryPlan| p.notes.iter().any(|n| n.contains("thin remainder"));
    let spec = ModelSpec::preset("kimi-k2.5").unwrap();
    let fp = footprint(&spec, &Layout::tp(8)).unwrap();
    let opts = ServerOptions {
        mem_fraction_static: 0.7715,
        disable_cuda_graph: true,
        ..ServerOptions::default()
    };
    let p = plan(&spec, &fp, rtx_memory(), &opts);
    assert!(p.fits && p.kv_tokens > 0 && thin(&p), "{:?}", p.notes);
    let glm = ModelSpec::preset("glm-4.7-fp8").unwrap();
    let g = plan(
        &glm,
        &footprint(&glm, &Layout::tp(8)).unwrap(),
        rtx_memory(),
        &glm47_opts(),
    );
    assert!(!thin(&g), "{:?}", g.notes);
    // 0.1 GiB of Kimi's 70,272-byte tokens is 1,528 tokens
    let note = thin_pool_note(4_481, 4_481 * 70_272, 78_000_000_000, 77_660_000_000).unwrap();
    assert!(note.contains("1528 tokens"), "{note}");
    assert_eq!(thin_pool_note(0, 0, 78_000_000_000, 1), None);
}
