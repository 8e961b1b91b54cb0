//! Issue 24: HF repository ids resolve through a local Hugging Face cache laid out as
//! `huggingface_hub` does, and `sim models show` prints each new family's per-GPU weights,
//! cache bytes per request and memory plan at TP4 and TP8.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn configs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/hf-configs")
}

/// A fake hub cache holding `id` at revision `rev` with `file` as its config.json (and the
/// `<stem>.hf_quant_config.json` beside it when there is one).
fn cache_model(hub: &Path, id: &str, rev: &str, file: &str, with_ref: bool) {
    let repo = hub.join(format!("models--{}", id.replace('/', "--")));
    let snap = repo.join("snapshots").join(rev);
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::copy(configs().join(file), snap.join("config.json")).unwrap();
    let quant = configs().join(file.replace(".json", ".hf_quant_config.json"));
    if quant.is_file() {
        std::fs::copy(quant, snap.join("hf_quant_config.json")).unwrap();
    }
    if with_ref {
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), rev).unwrap();
    }
    // a stale snapshot beside it, which refs/main must win over
    if with_ref {
        let old = repo.join("snapshots/0000stale");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("config.json"), "{}").unwrap();
    }
}

fn show(env: &[(&str, &Path)], model: &str, gpus: &str) -> (i32, String, String) {
    let mut cmd = Command::cargo_bin("sim").unwrap();
    cmd.env_remove("HF_HUB_CACHE").env_remove("HF_HOME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .args(["models", "show", model, "--gpus", gpus, "--format", "json"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).expect("valid JSON")
}

#[test]
fn repository_ids_resolve_through_the_hf_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = tmp.path().join("hub");
    cache_model(
        &hub,
        "moonshotai/Kimi-K2.5",
        "a1b2c3",
        "Kimi-K2.5.json",
        true,
    );
    cache_model(
        &hub,
        "Qwen/Qwen3.5-397B-A17B",
        "d4e5f6",
        "Qwen3.5-397B-A17B.json",
        false,
    );
    for (id, rev, preset) in [
        ("moonshotai/Kimi-K2.5", "a1b2c3", "kimi-k2.5"),
        ("Qwen/Qwen3.5-397B-A17B", "d4e5f6", "qwen3.5-397b-a17b"),
    ] {
        // $HF_HUB_CACHE, then $HF_HOME/hub
        for env in [("HF_HUB_CACHE", hub.as_path()), ("HF_HOME", tmp.path())] {
            let (code, out, err) = show(&[env], id, "8");
            assert_eq!(code, 0, "{id} via {}: {err}", env.0);
            let v = json(&out);
            assert_eq!(v["summary"]["name"], id);
            let source = v["summary"]["source"].as_str().unwrap();
            assert!(
                source.contains(&format!("snapshots/{rev}/config.json")),
                "{source}"
            );
            // the same architecture as the preset made from the same config
            let (_, p, _) = show(&[], preset, "8");
            let p = json(&p);
            assert_eq!(
                v["summary"]["total_params"], p["summary"]["total_params"],
                "{id}"
            );
            assert_eq!(v["summary"]["formats"], p["summary"]["formats"], "{id}");
        }
    }
    // not in the cache: exit 2, one line that names where it looked
    let (code, _, err) = show(
        &[("HF_HUB_CACHE", hub.as_path())],
        "acme/NoSuchModel-7B",
        "8",
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let looked = hub.join("models--acme--NoSuchModel-7B");
    assert!(err.contains(&looked.display().to_string()), "{err}");
}

/// One layout of `sim models show --format json`.
fn layout<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layout"] == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

#[test]
fn new_families_show_weights_caches_and_memory_plan_at_tp4_and_tp8() {
    for (gpus, tp) in [("4", 4u64), ("8", 8)] {
        let name = format!("TP{tp}");
        // Qwen3.5 NVFP4: 45 GDN layers, state per GPU = conv (12288/tp ch × 3 taps × bf16)
        // + recurrent (64/tp heads × 128 × 128 × fp32); 15 full layers of fp8 KV, 2 KV heads.
        let (code, out, err) = show(&[], "qwen3.5-397b-a17b-nvfp4", gpus);
        assert_eq!(code, 0, "{err}");
        let v = json(&out);
        let l = layout(&v, &name);
        let h = &l["hybrid"];
        let state = 45 * (12_288 / tp * 3 * 2 + 64 / tp * 128 * 128 * 4);
        assert_eq!(h["state_bytes_per_request_per_gpu"], state);
        let slots = h["state_slots"].as_u64().unwrap();
        assert!(slots > 0);
        assert_eq!(h["state_pool_bytes_per_gpu"], slots * state);
        assert!(h["max_running_requests"].as_u64().unwrap() <= slots / 3);
        assert_eq!(l["kv_bytes_per_token_per_gpu"], 15 * 2 * 2 * 256 / 2);
        assert!(l["max_weight_bytes_per_gpu"].as_u64().unwrap() > 200_000_000_000 / tp);
        // gpt-oss: 18 sliding (128) + 18 full layers, 8 KV heads × 64, bf16
        let (code, out, err) = show(&[], "gpt-oss-120b", gpus);
        assert_eq!(code, 0, "{err}");
        let v = json(&out);
        let l = layout(&v, &name);
        let per_layer = 2 * 8 * 64 * 2 / tp;
        assert_eq!(l["kv_bytes_per_token_per_gpu"], 18 * per_layer);
        let h = &l["hybrid"];
        assert_eq!(h["sliding_kv_bytes_per_token_per_gpu"], 18 * per_layer);
        let kv_tokens = l["kv_capacity_tokens"].as_u64().unwrap();
        assert_eq!(h["swa_kv_tokens"], (kv_tokens as f64 * 0.8) as u64);
        let ctx = h["context_len"].as_u64().unwrap();
        assert_eq!(
            h["cache_bytes_per_max_context_request_per_gpu"],
            18 * per_layer * ctx + 18 * per_layer * 128
        );
        // MiniMax-M2.5 NVFP4 and Qwen3-Next: weights and KV per GPU, no hybrid block for MiniMax
        let (code, out, err) = show(&[], "minimax-m2.5-nvfp4", gpus);
        assert_eq!(code, 0, "{err}");
        let v = json(&out);
        let l = layout(&v, &name);
        assert!(l["hybrid"].is_null());
        assert_eq!(l["kv_bytes_per_token_per_gpu"], 62 * 2 * 8 * 128 / tp);
        assert_eq!(l["fits"], true);
        let (code, out, err) = show(&[], "qwen3-next-80b-a3b", gpus);
        assert_eq!(code, 0, "{err}");
        let l = layout(&json(&out), &name).clone();
        let state = 36 * (8192 / tp * 3 * 2 + 32 / tp * 128 * 128 * 4);
        assert_eq!(l["hybrid"]["state_bytes_per_request_per_gpu"], state);
    }
    // MiniMax-M2.5 FP8 at TP8: SGLang cannot slice its 1536-wide experts into 128-blocks 8 ways
    let (_, out, _) = show(&[], "minimax-m2.5", "8");
    let l = layout(&json(&out), "TP8").clone();
    assert!(
        l["impossible_reason"]
            .as_str()
            .unwrap()
            .contains("block size 128")
    );
    // the table says it in words
    let text = Command::cargo_bin("sim")
        .unwrap()
        .args(["models", "show", "qwen3.5-397b-a17b-nvfp4", "--gpus", "8"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("45 Gated-DeltaNet layers hold a fixed state"),
        "{text}"
    );
    assert!(text.contains("TP8: state 24.01 MB/request/GPU"), "{text}");
}

/// Issue 35: a records file naming a HF id that no preset matches is compared once the local
/// HF cache holds its config.json (a new checkpoint of a known family, no code), and refused as
/// an unknown model naming the folder it looked in when the cache does not.
#[test]
fn a_record_naming_a_cached_hf_id_is_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = tmp.path().join("hub");
    let id = "acme/Moonlight-Next-INT4";
    cache_model(&hub, id, "f00d", "Kimi-K2.5.json", true);
    let records = tmp.path().join("records.json");
    let record = format!(
        r#"{{"records": [{{"id": "cached-id", "hardware": {{"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "count": 8, "p2p": "enabled", "virtualized": false}},
         "engine": {{"name": "vllm", "flags": "--tensor-parallel-size 8"}},
         "model": "{id}", "quant": "int4", "parallel": {{"tp": 8, "pp": 1}},
         "workload": {{"input_len": 0, "concurrency": 1, "dataset": "llm_decode_bench.py"}},
         "metrics": {{"output_tok_s": "60"}}}}]}}"#
    );
    std::fs::write(&records, record).unwrap();
    let validate = |env: Option<&Path>| {
        let mut cmd = Command::cargo_bin("sim").unwrap();
        cmd.env_remove("HF_HUB_CACHE").env_remove("HF_HOME");
        if let Some(hub) = env {
            cmd.env("HF_HUB_CACHE", hub);
        }
        let out = cmd
            .args(["validate", "--records"])
            .arg(&records)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        json(&String::from_utf8_lossy(&out.stdout))
    };
    let v = validate(Some(&hub));
    assert_eq!(v["expressible"], 1, "{}", v["reasons"]);
    assert_eq!(v["comparisons"][0]["model"], id);
    assert!(v["comparisons"][0]["predicted"].as_f64().unwrap() > 0.0);
    let v = validate(None);
    assert_eq!(v["expressible"], 0);
    let why = v["reasons"][0]["example"].as_str().unwrap();
    assert!(
        why.contains("HF cache") && why.contains("models--acme--Moonlight-Next-INT4"),
        "{why}"
    );
}
