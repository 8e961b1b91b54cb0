//! The eighth batch of public records (`validation/first-contact-8-records.json`, thirty-fourth
//! session): GLM-5.2 FP8 under SGLang on 8× H200 and 8× B200 from the SGLang cookbook's per-cell
//! benchmark file (`docs_new/src/snippets/configs/zai-org/glm-5.2-benchmarks.jsx` at two
//! commits), each with the launch of the cookbook cell its comment matches, written by a helper
//! from the cookbook files alone before any prediction was run. The file parses; every record
//! cites that file at one of its two commits; every record expresses on zai's FP8 preset
//! (`glm-5.2-fp8`). It is not a first-contact file of the error model: nothing was fitted on it,
//! so its interval figures are out of sample.

use crate::common;
use sim::records::RecordSet;
use std::path::PathBuf;

fn path() -> PathBuf {
    common::validation_file("first-contact-8-records.json")
}

#[test]
fn every_record_cites_the_cookbook_benchmark_file() {
    let pages = [
        "sgl-project/sglang:docs_new/src/snippets/configs/zai-org/glm-5.2-benchmarks.jsx@00081a00d5b3b8111df81151db7cbd518612c549",
        "sgl-project/sglang:docs_new/src/snippets/configs/zai-org/glm-5.2-benchmarks.jsx@27132f7b2ec6590758fd8ae519878deb0a76493b",
    ];
    common::assert_every_record_cites_one_of(&path(), &pages);
}

#[test]
fn every_record_expresses_on_zais_fp8_preset() {
    common::assert_every_record_expresses_on("first-contact-8-records.json", 17, "glm-5.2-fp8");
}

#[test]
fn the_file_is_not_a_first_contact_file_of_the_error_model() {
    common::assert_not_in_the_error_model("first-contact-8-records.json");
}

/// The DP-attention cells name `--moe-a2a-backend deepep`: a record's SGLang flags carry it to
/// the prediction (until the thirty-fourth session only vLLM's `--all2all-backend` was read from
/// a record, and these cells were priced as DP attention with the experts TP-sliced), and a
/// launch line without `--ep-size` reads it as SGLang does, the experts expert-parallel over
/// the TP group.
#[test]
fn the_dp_attention_cells_run_their_all_to_all_backend() {
    let set = RecordSet::load(&path()).unwrap();
    let mut deepep = 0;
    for r in &set.records {
        let e = sim::records::express(r).unwrap();
        let named = r
            .engine
            .flags
            .as_deref()
            .unwrap_or("")
            .contains("--moe-a2a-backend deepep");
        assert_eq!(
            e.knobs.moe_a2a_backend.as_deref(),
            named.then_some("deepep"),
            "{}",
            r.id
        );
        deepep += usize::from(named);
    }
    assert_eq!(deepep, 9);
    let line = "python3 -m sglang.launch_server --model-path zai-org/GLM-5.2-FP8 --tp 8 --dp 8 --enable-dp-attention --moe-a2a-backend deepep --mem-fraction-static 0.85";
    let v = common::sim_json(&[
        "predict",
        "--machine",
        "b200-x8",
        "--server-args",
        line,
        "--batch",
        "8",
        "--context",
        "1024",
        "--format",
        "json",
    ]);
    assert_eq!(v["layouts"][0]["layout"], "TP8+EP8+DPA", "{v}");
}

/// A record and `sim run` of the same launch and workload predict the same run: the B200
/// DP-attention cell at 1,024 streams (no `--chunked-prefill-size`: SGLang's default there is
/// 16384, its band above 160 GiB) came out at 1,885 tok/s from the record and 2,820 from the
/// launch line until a record's SGLang flags got SGLang's memory-band defaults (the record kept
/// the options' 8192).
#[test]
fn a_record_and_sim_run_of_its_launch_agree() {
    let mut set = RecordSet::load(&path()).unwrap();
    let id = "sglang-cookbook-glm52-fp8-b200-tp8dp8-deepep-8k1k-c1024";
    set.records.retain(|r| r.id == id);
    let flags = set.records[0]
        .engine
        .flags
        .clone()
        .expect("the cell's launch");
    let board = sim::scoreboard::score(&set, &sim::scoreboard::ScoreOptions::default());
    let from_record = board
        .comparisons
        .iter()
        .find(|c| c.primary)
        .map(|c| c.predicted)
        .expect("the record compares");
    let run = common::sim_json(&[
        "run",
        "--machine",
        "b200-x8",
        "--model",
        "glm-5.2-fp8",
        "--server-args",
        &flags,
        "--random-input-len",
        "8192",
        "--random-output-len",
        "1024",
        "--random-range-ratio",
        "1",
        "--max-concurrency",
        "1024",
        "--num-prompts",
        "2048",
        "--format",
        "json",
    ]);
    let from_line = run["output_throughput"]
        .as_f64()
        .expect("output_throughput");
    assert!(
        (from_record / from_line - 1.0).abs() < 0.01,
        "record {from_record:.0} tok/s, sim run {from_line:.0} tok/s"
    );
}
