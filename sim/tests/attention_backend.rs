//! Issue 23: `--attention-backend` changes what an MLA step costs where SGLang's kernels differ.
//! On the user's RTX PRO 6000s (SM120) Triton's MLA decode pads 8 heads to a 16-row block and
//! writes and reads back its split-KV partials in a second kernel, so its KV-read time is longer
//! than FlashInfer's at the same batch; with a cached prefix its prefill takes the absorbed path.

use crate::common;

/// `sim predict` of Kimi-K2-Thinking NVFP4 at TP8 on the RTX PRO 6000 box, 64 requests at 2048
/// tokens, with `backend` and a `kv` cache: exit code, stdout, stderr.
fn predict(backend: &str, kv: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "predict",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "kimi-k2-thinking-nvfp4",
        "--layout",
        "TP8",
        "--kv-cache-dtype",
        kv,
        "--attention-backend",
        backend,
        "--batch",
        "64",
        "--context",
        "2048",
    ];
    args.extend(extra);
    common::sim_output(&args)
}

fn kv_read_ms(backend: &str, extra: &[&str]) -> f64 {
    let (code, out, err) = predict(backend, "fp8_e4m3", extra);
    assert_eq!(code, 0, "{backend}: {err}");
    let line = out
        .lines()
        .find(|l| l.contains("KV reads"))
        .unwrap_or_else(|| panic!("a KV-reads row: {out}"));
    line.split('┆').nth(1).unwrap().trim().parse().unwrap()
}

#[test]
fn triton_mla_decode_costs_its_split_partials() {
    let flashinfer = kv_read_ms("flashinfer", &[]);
    let triton = kv_read_ms("triton", &[]);
    // 64 requests: ⌈188 · log2(32) / 64⌉ = 15 → 8 splits, 2 × 8 × 8 × 513 × 4 B a request and
    // layer beside its 2048 tokens of fp8 latent: about a fifth more bytes
    assert!(
        triton > flashinfer * 1.1 && triton < flashinfer * 1.5,
        "{triton} vs {flashinfer}"
    );
}

/// Backends SGLang cannot run on SM120 are refused in one line (exit 2) before anything is
/// costed: FlashMLA is built for SM90/SM100; TRT-LLM MLA runs there as FlashInfer's XQA MLA,
/// which takes an fp8 cache only (with one, the line runs and says so).
#[test]
fn backends_that_do_not_run_on_sm120_are_refused() {
    let run = |backend: &str, kv: &str| predict(backend, kv, &[]);
    let (code, out, err) = run("flashmla", "fp8_e4m3");
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("SM90 and SM100") && err.contains("triton or flashinfer"),
        "{err}"
    );
    let (code, _, err) = run("trtllm_mla", "bf16");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("XQA MLA") && err.contains("--kv-cache-dtype fp8_e4m3"),
        "{err}"
    );
    let (code, out, err) = run("trtllm_mla", "fp8_e4m3");
    assert_eq!(code, 0, "{err}");
    assert!(
        format!("{out}{err}").contains("XQA MLA decode"),
        "{out}{err}"
    );
}
