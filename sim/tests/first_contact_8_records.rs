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
