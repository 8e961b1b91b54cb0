//! vLLM's TRITON_MLA on SM120 as `predict` prices it: the heads a GPU scores under DCP (the
//! group's queries gathered, `d · heads / tp`) and the SM120 build's `BLOCK_H` for them decide
//! the head blocks the kernel reads the latent cache for, and the note says so
//! (`sim/src/cost/triton_mla.rs`).

use std::process::Command;

/// `predict`'s decode-attention note for Kimi-K2.5 at TP8 with `dcp` KV shards and `dtype` cache
/// (`auto`: the checkpoint's bf16).
fn note(dcp: u32, dtype: &str) -> String {
    let line = format!(
        "vllm serve moonshotai/Kimi-K2.5 --tensor-parallel-size 8 \
         --decode-context-parallel-size {dcp} --kv-cache-dtype {dtype}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args([
            "predict",
            "--machine",
            "rtx-pro-6000-x8-baremetal-nccl-ll128",
        ])
        .args([
            "--server-args",
            &line,
            "--batch",
            "8",
            "--context",
            "131072",
        ])
        .output()
        .expect("sim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("note: decode attention"))
        .expect("a decode-attention note")
        .to_string()
}

/// The µs a layer the note ends with.
fn us(note: &str) -> f64 {
    let tail = note.rsplit(": ").next().unwrap();
    tail.trim_end_matches(" µs a layer").parse().unwrap()
}

#[test]
fn dcp_sets_the_head_blocks_and_the_shard() {
    let notes: Vec<String> = [1, 2, 4, 8].iter().map(|&d| note(d, "fp8")).collect();
    // BLOCK_H: the fallback config's 8 (8 and 32 heads), the tuned table's 16 (16 heads at 8
    // rows; 64 heads at 8 rows under the default 262,144-token max-model-len)
    for (n, (heads, block_h, blocks, cached)) in notes.iter().zip([
        (8, 8, 1, 131_072),
        (16, 16, 1, 65_536),
        (32, 8, 4, 32_768),
        (64, 16, 4, 16_384),
    ]) {
        assert!(n.contains("vLLM TRITON_MLA by its grid"), "{n}");
        assert!(
            n.contains(&format!(
                "({heads} heads a GPU, BLOCK_H {block_h} = {blocks} block(s)"
            )),
            "{n}"
        );
        assert!(
            n.contains(&format!("8 rows × {cached} cached tokens")),
            "{n}"
        );
    }
    let t: Vec<f64> = notes.iter().map(|n| us(n)).collect();
    // DCP2 halves the bytes in the same one block; DCP4 halves them again but reads them once
    // per 8 heads, four times: dearer than DCP2; DCP8 four blocks over half DCP4's bytes
    assert!(t[1] < 0.6 * t[0], "{t:?}");
    assert!(t[2] > t[1] && t[2] < 2.0 * t[1], "{t:?}");
    assert!(t[3] < 0.6 * t[2], "{t:?}");
}

#[test]
fn a_bf16_cache_costs_more_than_fp8_and_sglang_keeps_the_curve() {
    assert!(us(&note(1, "auto")) > us(&note(1, "fp8")));
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args([
            "predict",
            "--machine",
            "rtx-pro-6000-x8-baremetal-nccl-ll128",
        ])
        .args(["--model", "kimi-k2.5", "--tp", "8", "--batch", "8"])
        .args(["--context", "131072"])
        .output()
        .expect("sim runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("note: decode attention: efficiency curve (MLA other than vLLM"),
        "{text}"
    );
}
