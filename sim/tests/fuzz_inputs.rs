//! The parsers of a user's files and lines never panic, whatever they are given: bench_serving
//! JSONL, CSV and printed summaries, `user-box.json#run`, ShareGPT datasets, calibration files,
//! SGLang launch lines and `server_args` dumps. Each gets arbitrary bytes, and real inputs with
//! bytes overwritten; errors are one line. A fixed case budget keeps `cargo test` short.

use proptest::prelude::*;
use sim::bench_serving::read::{self, LengthHints};
use sim::engine::sglang::args as sglang_args;
use std::path::Path;

const JSONL: &str = include_str!("fixtures/bench_serving_package_00f9ec47.jsonl");
const MONOLITH: &str = include_str!("fixtures/bench_serving_monolith_0033168f.jsonl");
const SUMMARY: &str = include_str!("fixtures/bench_serving_summary.txt");
const USER_BOX: &str = include_str!("../../data/observations/user-box.json");
const LAUNCH: &str = "CUDA_VISIBLE_DEVICES=0,1 python3 -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 --mem-frac 0.85 --kv-cache-dtype fp8_e4m3 --chunked-prefill-size -1 --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --host 0.0.0.0 --nsa-decode-backend trtllm --cuda-graph-bs 1 2 4";

fn overwrite(text: &str, edits: &[(usize, u8)]) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for &(p, x) in edits {
        let i = p % b.len();
        b[i] = x;
    }
    b
}

/// Loads `bytes` saved as `name` the way `--measured` reads a file.
fn load(dir: &Path, name: &str, bytes: &[u8], run: &str) -> Result<(), TestCaseError> {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let spec = format!("{}{run}", p.display());
    let hints = LengthHints {
        input_len: Some(100),
        output_len: Some(100),
    };
    if let Err(e) = read::load(&spec, hints) {
        prop_assert!(!e.to_string().contains('\n'), "one line: {}", e);
    }
    // the launch flags a runs file records, read the same way; a word that is no flag's value
    // is the flag parser's one-line error later
    match read::recorded_flags(&spec) {
        Ok(Some(r)) => {
            if let Err(e) = sglang_args::from_words(&r.words, sglang_args::Origin::MeasuredRun) {
                prop_assert!(!e.to_string().contains('\n'), "one line: {}", e);
            }
        }
        Ok(None) => {}
        Err(e) => prop_assert!(!e.to_string().contains('\n'), "one line: {}", e),
    }
    Ok(())
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8)>> {
    proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn bench_files_take_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let dir = tempfile::tempdir().unwrap();
        load(dir.path(), "r.jsonl", &bytes, "")?;
        load(dir.path(), "r.csv", &bytes, "")?;
        let mut s = b"============ Serving Benchmark Result ============\n".to_vec();
        s.extend_from_slice(&bytes);
        load(dir.path(), "s.txt", &s, "")?;
        load(dir.path(), "u.json", &bytes, "#glm47-fp8-tp8-sweep")?;
    }

    #[test]
    fn real_bench_files_with_bytes_overwritten(e in edits()) {
        let dir = tempfile::tempdir().unwrap();
        load(dir.path(), "a.jsonl", &overwrite(JSONL, &e), "")?;
        load(dir.path(), "b.jsonl", &overwrite(MONOLITH, &e), "")?;
        load(dir.path(), "c.txt", &overwrite(SUMMARY, &e), "")?;
        load(dir.path(), "d.csv", &overwrite("concurrency,input_len,output_len,output_tok_s\n8,128,128,900.5\n", &e), "")?;
        load(dir.path(), "u.json", &overwrite(USER_BOX, &e), "#glm47-fp8-tp8-sweep")?;
    }

    #[test]
    fn datasets_and_calibrations_take_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sharegpt.json");
        std::fs::write(&p, &bytes).unwrap();
        if let Err(e) = sim::workload::ShareGptLengths::from_file(&p, None, None) {
            prop_assert!(!e.to_string().contains('\n'));
        }
        if let Err(e) = sim::calibrate::Calibration::load(&p) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn launch_lines_take_arbitrary_text(text in any::<String>()) {
        if let Err(e) = sglang_args::from_launch_line(&text) {
            prop_assert!(!e.to_string().contains('\n'), "one line: {}", e);
        }
    }

    #[test]
    fn real_launch_lines_with_bytes_overwritten(e in edits()) {
        let text = String::from_utf8_lossy(&overwrite(LAUNCH, &e)).into_owned();
        if let Ok(a) = sglang_args::from_launch_line(&text) {
            // Whatever parsed resolves, or fails on one line.
            let model = models::ModelSpec::preset("glm-5-nvfp4").unwrap();
            let ctx = sglang_args::DefaultsContext { gpu_memory_bytes: 97_887 << 20, tp: 8, pp: 1, dp_attention_size: 1 };
            if let Err(e) = a.server_options(&ctx, &model) {
                prop_assert!(!e.to_string().contains('\n'));
            }
            let _ = a.not_modelled_line();
        }
    }

    #[test]
    fn server_args_dumps_take_arbitrary_pairs(
        pairs in proptest::collection::vec(
            (prop_oneof![Just("tp_size".to_string()), Just("mem_fraction_static".to_string()),
                         Just("kv_cache_dtype".to_string()), Just("disable_cuda_graph".to_string()),
                         Just("speculative_algorithm".to_string()), "[a-z_]{1,20}"],
             any::<String>()),
            0..12)
    ) {
        if let Err(e) = sglang_args::from_pairs(&pairs) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }
}
