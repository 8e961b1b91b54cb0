//! The sixth batch of public records (`validation/first-contact-6-records.json`): Kimi-K2.6 (INT4)
//! under vLLM with its EAGLE3 draft ("MTP=3") on and off, on the rtx6kpro wiki's local 8× RTX PRO
//! 6000 Blackwell host, gathered blind from the source (no prediction of shardwise was run on it
//! while it was gathered, and nothing was fitted on it). The page (`models/kimi-k26-v2.md`,
//! measured 2026-05-07) gives llm_decode_bench's aggregate decode tok/s with MTP on and off at each
//! context and concurrency; the file holds the DCP=1, DCP=4 and DCP=8 matrices wherever both cells
//! were measured, less the ctx=0 c1/c32 cells another page already brought into the project.
//! Each record's flags are the page's start command with its profile's values (DCP, MTP,
//! gpu-memory-utilization, KV budget).
//! The file parses; every record cites the page at its commit; every record expresses; every
//! MTP-on record has its MTP-off twin at the same load in its comparison group. It is not a
//! first-contact file of the error model: nothing was fitted on it, so its interval figures are
//! out of sample.

use crate::common;
use sim::records::RecordSet;
use std::path::PathBuf;

fn path() -> PathBuf {
    common::validation_file("first-contact-6-records.json")
}

#[test]
fn every_record_cites_the_page() {
    let pages = [
        "local-inference-lab/rtx6kpro:models/kimi-k26-v2.md@e2c2b9577c938525d99a4ff62ba4a8ecc47a9990",
    ];
    common::assert_every_record_cites_one_of(&path(), &pages);
}

#[test]
fn the_file_parses_and_every_record_expresses() {
    let set = RecordSet::load(&path()).expect("validation/first-contact-6-records.json parses");
    assert!(set.unreadable.is_empty(), "{:?}", set.unreadable);
    // 20 DCP=1 pairs (ctx 0: 6, 16k: 5, 32k: 4, 64k: 3, 128k: 2), 28 DCP=4 pairs (ctx 0: 6,
    // 16k: 7, 32k: 6, 64k: 5, 128k: 4) and 32 DCP=8 pairs (ctx 0: 6, 16k: 8, 32k: 7, 64k: 6,
    // 128k: 5): 80 pairs, 160 records.
    assert_eq!(set.records.len(), 160);
    let expressed = common::express_unless_foreign_weights(&path(), &[]);
    assert_eq!(expressed.len(), 160);
}

#[test]
fn the_file_is_not_a_first_contact_file_of_the_error_model() {
    common::assert_not_in_the_error_model("first-contact-6-records.json");
}

#[test]
fn every_mtp_on_record_has_its_off_twin_at_the_same_load_in_its_group() {
    let on_records = common::assert_mtp_on_records_have_one_off_twin_each(&path());
    assert_eq!(
        on_records, 80,
        "20 DCP=1 cells, 28 DCP=4 cells and 32 DCP=8 cells"
    );
}
