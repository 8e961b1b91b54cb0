//! The fifth batch of public records (`validation/first-contact-5-records.json`): GLM-5 under
//! SGLang from two InferenceX blog posts, gathered blind from the sources (no prediction of
//! shardwise was run on it while it was gathered, and nothing was fitted on it). The 2026-05-20
//! post (`mi355x-glm5-fp8-sglang-40-cheaper-than-b200.mdx`) gives B200 FP8 TP8 at 8k/1k with EAGLE
//! MTP off and on at 4–256 streams, each on/off pair in one comparison group; the April
//! `best-gpu-for-glm5-inference.mdx` gives the March MTP-off best-throughput rows of 8× H200 FP8
//! and 8× B200 FP8 at 8k/1k and 1k/1k, and B200 NVFP4 at 8k/1k, with median TTFT. Each record's
//! flags are InferenceX's launch script at the last commit before its run.
//! The file parses; every record cites one of the two posts at its commit; every record expresses;
//! every MTP-on record has its MTP-off twin at the same load in its comparison group. It is not a
//! first-contact file of the error model: nothing was fitted on it, so its interval figures are
//! out of sample.

use crate::common;
use sim::records::RecordSet;
use std::path::PathBuf;

fn path() -> PathBuf {
    common::validation_file("first-contact-5-records.json")
}

#[test]
fn every_record_cites_one_of_the_two_posts() {
    let pages = [
        "SemiAnalysisAI/InferenceX-app:packages/app/content/blog/mi355x-glm5-fp8-sglang-40-cheaper-than-b200.mdx@966d630636241f9289b0028c17f06ce22cdb34e7",
        "SemiAnalysisAI/InferenceX-app:packages/app/content/blog/best-gpu-for-glm5-inference.mdx@2d1d3d65df4d6cb7773de89d548becc15dafab44",
    ];
    common::assert_every_record_cites_one_of(&path(), &pages);
}

#[test]
fn the_file_parses_and_every_record_expresses() {
    let set = RecordSet::load(&path()).expect("validation/first-contact-5-records.json parses");
    assert!(set.unreadable.is_empty(), "{:?}", set.unreadable);
    // 14 from the 2026-05-20 post (7 concurrencies × MTP off/on), 5 from the best-GPU post.
    assert_eq!(set.records.len(), 19);
    let expressed = common::express_unless_foreign_weights(&path(), &[]);
    assert_eq!(expressed.len(), 19);
}

#[test]
fn the_file_is_not_a_first_contact_file_of_the_error_model() {
    common::assert_not_in_the_error_model("first-contact-5-records.json");
}

#[test]
fn every_mtp_on_record_has_its_off_twin_at_the_same_load_in_its_group() {
    let on_records = common::assert_mtp_on_records_have_one_off_twin_each(&path());
    assert_eq!(on_records, 7, "the 2026-05-20 MTP table's seven rows");
}

/// The March runs name no `--nsa-prefill-backend` (the B200 NVFP4 one on a 2026-03-28 nightly,
/// the H200 ones of 2026-03-19) and predate SGLang's `trtllm` DSA default on Blackwell (#21914,
/// 2026-04-02): they ran FlashMLA. The May runs and the March B200 FP8 ones name `trtllm`.
#[test]
fn a_build_before_sglangs_trtllm_default_keeps_flashmla() {
    let set = RecordSet::load(&path()).unwrap();
    let mut older = 0;
    for r in &set.records {
        let e = sim::records::express(r).unwrap_or_else(|_| panic!("{} expresses", r.id));
        let named = e.knobs.nsa.prefill.is_some();
        assert_eq!(e.knobs.dsa_build.flashmla_default, !named, "{}", r.id);
        older += usize::from(!named);
        if !named {
            assert!(r.id.contains("2026-03"), "{}", r.id);
        }
    }
    assert_eq!(
        older, 3,
        "the 2026-03-28 B200 NVFP4 run and the two 2026-03-19 H200 runs"
    );
}
