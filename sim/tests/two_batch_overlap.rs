//! `--enable-two-batch-overlap` (SGLang's two-batch overlap, `sim::cost::tbo`) as a user sees it
//! through `sim predict`: it changes the step only where SGLang runs it (a DeepSeek-class model
//! with an all-to-all backend, two or more tokens), says why where it does not, and moves the
//! step in the direction the physics says: each micro-batch re-reads the sparse layers'
//! weights, so a memory-bound decode whose all-to-all is a small share gets slower, while the
//! all-to-all left on the critical path shrinks.

use assert_cmd::Command;
use serde_json::Value;

fn predict(model: &str, extra: &[&str], batch: u32) -> Value {
    let out = Command::cargo_bin("sim")
        .unwrap()
        .args([
            "predict",
            "--machine",
            "h200-x8",
            "--model",
            model,
            "--tp",
            "8",
        ])
        .args(extra)
        .args([
            "--batch",
            &batch.to_string(),
            "--context",
            "2048",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["layouts"][0].clone()
}

fn ms(l: &Value) -> f64 {
    l["iteration_ms"].as_f64().unwrap()
}

fn a2a_ms(l: &Value) -> f64 {
    l["breakdown"]["all_to_all_ms"].as_f64().unwrap()
}

const DEEPEP: [&str; 4] = ["--ep-size", "8", "--moe-a2a-backend", "deepep"];

#[test]
fn it_splits_deepseek_layers_and_shortens_the_exposed_all_to_all() {
    let tbo: Vec<&str> = DEEPEP
        .iter()
        .copied()
        .chain(["--enable-two-batch-overlap"])
        .collect();
    for batch in [8, 64, 256] {
        let off = predict("deepseek-v3-fp8", &DEEPEP, batch);
        let on = predict("deepseek-v3-fp8", &tbo, batch);
        assert!(a2a_ms(&on) < a2a_ms(&off), "b{batch}: all-to-all hidden");
        // decode on one NVLink box is weight-bound: reading the experts twice costs more
        // than the overlap hides
        assert!(ms(&on) > ms(&off), "b{batch}: {} vs {}", ms(&on), ms(&off));
    }
    // one request: one micro-batch would be empty, the step is the same
    let off = predict("deepseek-v3-fp8", &DEEPEP, 1);
    let on = predict("deepseek-v3-fp8", &tbo, 1);
    assert_eq!(ms(&on), ms(&off));
}

#[test]
fn where_sglang_does_not_run_it_it_changes_nothing_and_says_why() {
    let plain = predict("deepseek-v3-fp8", &[], 64);
    let asked = predict("deepseek-v3-fp8", &["--enable-two-batch-overlap"], 64);
    assert_eq!(ms(&plain), ms(&asked));
    let notes = asked["notes"].to_string();
    assert!(notes.contains("needs --moe-a2a-backend"), "{notes}");
    let glm: Vec<&str> = DEEPEP
        .iter()
        .copied()
        .chain(["--enable-two-batch-overlap"])
        .collect();
    let l = predict("glm-4.7-fp8", &glm, 64);
    assert_eq!(ms(&l), ms(&predict("glm-4.7-fp8", &DEEPEP, 64)));
    assert!(
        l["notes"].to_string().contains("not glm4_moe"),
        "{}",
        l["notes"]
    );
}
