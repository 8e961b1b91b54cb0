//! The third batch of first-contact records (`validation/first-contact-3-records.json`,
//! gathered in the fourteenth session): the file parses; every record expresses except those
//! whose checkpoint no preset describes (MXFP4 / MXFP8 / NF3 weights, named as such, and the
//! AWQ GLM-5.1 checkpoint), which are refused rather than read as NVFP4; every record cites one
//! of the three pages the file was built from; the two GLM-5.2 v18 MTP 3 records whose page
//! prints the server's acceptance run on it, the other MTP-on records on the prior.

mod common;
use sim::records::{RecordSet, UnexpressibleKind, express};
use std::path::{Path, PathBuf};

fn path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../validation/first-contact-3-records.json")
}

#[test]
fn the_records_express_unless_their_weights_match_no_preset() {
    let set = RecordSet::load(&path()).expect("validation/first-contact-3-records.json parses");
    assert!(set.records.len() >= 140, "{} records", set.records.len());
    let mut refused = 0;
    for r in &set.records {
        let words = format!(
            "{} {}",
            r.model.as_deref().unwrap_or(""),
            r.quant.as_deref().unwrap_or("")
        )
        .to_ascii_lowercase();
        let foreign = ["mxfp4", "mxfp8", "nf3", "awq"]
            .iter()
            .any(|f| words.contains(f));
        match express(r) {
            Ok(_) => assert!(!foreign, "{} expressed despite {words}", r.id),
            Err(why) => {
                assert!(foreign, "{} does not express: {why:?}", r.id);
                assert_eq!(why[0].kind, UnexpressibleKind::UnknownModel, "{}", r.id);
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 42);
}

#[test]
fn every_record_cites_one_of_the_pages_the_file_was_built_from() {
    let pages = [
        "Visual-Synthesizer/rtx6kpro:models/glm5.2_v14.md@3753a17",
        "Visual-Synthesizer/rtx6kpro:models/glm5.2_v18.md@f5676fd",
        "joninco/rtx6kpro:models/glm5.1_v6.md@599426f",
    ];
    common::assert_every_record_cites_one_of(&path(), &pages);
}

#[test]
fn a_stated_acceptance_is_used_and_the_rest_run_on_the_prior() {
    let measured = common::records_on_their_own_acceptance(&path());
    assert_eq!(
        measured,
        [
            (
                "rtx-glm52-v18-vllm-tp8-dcp1-luke-a16-mtp3-ctx0-c1".to_string(),
                2.8
            ),
            (
                "rtx-glm52-v18-vllm-tp8-dcp1-luke-a4-mtp3-ctx0-c1".to_string(),
                3.03
            ),
        ]
    );
}
