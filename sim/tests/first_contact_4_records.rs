//! The fourth batch of public records (`validation/first-contact-4-records.json`, gathered in the
//! sixteenth session from the rtx6kpro wiki's GLM-5.2 v15, v16, v17, v19 and v20 pages): the file
//! parses; every record cites one of those five pages at its commit; every record expresses
//! except those whose checkpoint no preset describes (the NF3 hybrid), which are refused by name
//! rather than read as NVFP4 (the AMD MXFP4-experts checkpoint has its own preset since the
//! thirty-fourth session, `glm-5.2-mxfp4-experts`); the luke NVFP4 rows with the
//! BF16 linears converted to MXFP8 at load express with the launch line's
//! `--quantization-config` read (until the twenty-seventh session they were refused).
//! It is not a first-contact file of the error model: nothing was fitted on it, so its interval
//! figures are out of sample.

use crate::common;
use sim::records::RecordSet;
use std::path::PathBuf;

fn path() -> PathBuf {
    common::validation_file("first-contact-4-records.json")
}

#[test]
fn every_record_cites_one_of_the_five_pages() {
    let pages = [
        "Visual-Synthesizer/rtx6kpro:models/glm5.2_v15.md@28065baf",
        "Visual-Synthesizer/rtx6kpro:models/glm5.2_v16.md@f5676fdd",
        "Visual-Synthesizer/rtx6kpro:models/glm5.2_v17.md@5ac37a97",
        "Visual-Synthesizer/rtx6kpro:models/glm5.2_v19.md@f5676fdd",
        "Visual-Synthesizer/rtx6kpro:models/glm5.2_v20.md@19c4321f",
    ];
    common::assert_every_record_cites_one_of(&path(), &pages);
}

#[test]
fn the_luke_nvfp4_rows_express_and_the_other_checkpoints_are_refused_by_name() {
    let set = RecordSet::load(&path()).expect("validation/first-contact-4-records.json parses");
    assert_eq!(set.records.len(), 58);
    let expressed = common::express_unless_foreign_weights(&path(), &["nf3"]);
    assert_eq!(expressed.len(), 53);
    for (id, model) in &expressed {
        let want = if id.contains("-amd-mxfp4-") {
            "glm-5.2-mxfp4-experts"
        } else {
            "glm-5.2-nvfp4"
        };
        assert_eq!(model, want, "{id}");
    }
    common::assert_online_mxfp8_rows_carry_their_spec(&set);
}

#[test]
fn the_file_is_not_a_first_contact_file_of_the_error_model() {
    common::assert_not_in_the_error_model("first-contact-4-records.json");
}
