//! The seventh batch of public records (`validation/first-contact-7-records.json`, thirty-fourth
//! session): GLM-5.2 with FP8 non-expert weights and MXFP4 routed experts
//! (`festr2/GLM-5.2-FP8-MXFP4-Experts`) under vLLM on 8 RTX PRO 6000, decode at 1–64 streams, from
//! the rtx6kpro `models/glm5.2_mxfp4.md` page, written from the page, its launcher and its sweep
//! script before any prediction was run. The file parses; every record cites the page at its
//! commit; every record expresses on that checkpoint's preset (`glm-5.2-fp8-mxfp4-experts`).
//! It is not a first-contact file of the error model: nothing was fitted on it, so its interval
//! figures are out of sample.

use crate::common;
use std::path::PathBuf;

fn path() -> PathBuf {
    common::validation_file("first-contact-7-records.json")
}

#[test]
fn every_record_cites_the_page() {
    let pages =
        ["joninco/rtx6kpro:models/glm5.2_mxfp4.md@599426fb1961ef09e96aa9a4579528fc5d64ac51"];
    common::assert_every_record_cites_one_of(&path(), &pages);
}

#[test]
fn every_record_expresses_on_its_checkpoints_preset() {
    common::assert_every_record_expresses_on(
        "first-contact-7-records.json",
        4,
        "glm-5.2-fp8-mxfp4-experts",
    );
}

#[test]
fn the_file_is_not_a_first_contact_file_of_the_error_model() {
    common::assert_not_in_the_error_model("first-contact-7-records.json");
}
