//! SGLang memory figures a community page published for a launch, beside the memory plan
//! shardwise predicts for the same launch (`sim predict … --format json`, the plan SGLang's
//! `profile_max_num_token` would size).
//!
//! GLM-5-NVFP4 on 8× RTX PRO 6000 (97,887 MiB), TP8, BF16 KV, MTP on (NEXTN, 3 steps, 4 draft
//! tokens): local-inference-lab/rtx6kpro `models/glm5.md` @e2c2b957, "Memory Usage": weights
//! 57.06 "GB" and KV cache 29.32 "GB" per GPU (SGLang's "GB" are GiB), "Available after
//! allocation 7.43-7.53 GB per GPU", and "KV cache capacity" 314,304 tokens at
//! `--mem-fraction-static 0.92`; the launch is the page's recommended one (`--cuda-graph-max-bs
//! 32 --max-running-requests 64 --chunked-prefill-size 16384`) at that fraction. Nothing here was
//! fitted to these figures: the weights come from the load replay (issue 23), the pool from
//! SGLang's formula with the user's box's pre-load memory.

use crate::common;

use serde_json::Value;

const GIB: f64 = (1u64 << 30) as f64;

fn plan(fraction: &str) -> Value {
    let line = format!(
        "python3 -m sglang.launch_server --model-path festr2/GLM-5-NVFP4-MTP --tensor-parallel-size 8 \
         --quantization modelopt_fp4 --kv-cache-dtype bf16 --cuda-graph-max-bs 32 \
         --max-running-requests 64 --mem-fraction-static {fraction} --chunked-prefill-size 16384 \
         --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-num-draft-tokens 4 \
         --speculative-eagle-topk 1"
    );
    let v = common::predict_line_json(&line, "1", "1000", &["--model", "glm-5-nvfp4"]);
    v["layouts"][0]["memory"].clone()
}

fn within(what: &str, got: f64, want: f64, rel: f64) {
    let err = got / want - 1.0;
    println!("{what}: {got:.2} vs {want:.2} ({:+.1}%)", err * 100.0);
    assert!(
        err.abs() <= rel,
        "{what}: {got} vs {want} ({:+.1}%)",
        err * 100.0
    );
}

#[test]
fn glm5_nvfp4_tp8_pool_at_0_92_is_the_pages() {
    let m = plan("0.92");
    assert_eq!(m["mem_fraction_static"].as_f64(), Some(0.92));
    let tokens = m["kv_tokens"].as_f64().unwrap();
    within("KV tokens vs the page's 314,304", tokens, 314_304.0, 0.05);
    // the target worker's weights; the MTP layer the draft worker loads after the pool is sized
    // is a reserve of its own
    let weights_gib = m["weights_gb_per_gpu"].as_f64().unwrap() * 1e9 / GIB;
    assert!(m["reserves"]["draft_weight_bytes"].as_f64().unwrap() > 2e9);
    within("target weights GiB vs 57.06", weights_gib, 57.06, 0.02);
    let kv_gib = m["kv_pool_gb_per_gpu"].as_f64().unwrap() * 1e9 / GIB;
    within("KV pool GiB vs 29.32", kv_gib, 29.32, 0.05);
    // free once the target's weights and pool are in: the card less the pre-load memory, the
    // weights and the pool (the page's 7.43–7.53)
    let card_gib = m["gpu_memory_gb"].as_f64().unwrap() * 1e9 / GIB;
    let pre_load_gib = m["reserves"]["pre_load_bytes"].as_f64().unwrap() / GIB;
    let free_gib = card_gib - pre_load_gib - weights_gib - kv_gib;
    println!("free after the pool: {free_gib:.2} GiB vs 7.43–7.53");
    assert!(
        (7.43 * 0.95..=7.53 * 1.05).contains(&free_gib),
        "{free_gib}"
    );
}
