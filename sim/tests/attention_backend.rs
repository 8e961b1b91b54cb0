//! Issue 23: `--attention-backend` changes what an MLA step costs where SGLang's kernels differ.
//! On the user's RTX PRO 6000s (SM120) Triton's MLA decode pads 8 heads to a 16-row block and
//! writes and reads back its split-KV partials in a second kernel, so its KV-read time is longer
//! than FlashInfer's at the same batch; with a cached prefix its prefill takes the absorbed path.

mod common;

use common::sim_stdout;

fn kv_read_ms(backend: &str, extra: &[&str]) -> f64 {
    let mut args = vec![
        "predict",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "kimi-k2-thinking-nvfp4",
        "--layout",
        "TP8",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--attention-backend",
        backend,
        "--batch",
        "64",
        "--context",
        "2048",
    ];
    args.extend(extra);
    let out = sim_stdout(&args);
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
