//! The third batch of first-contact records (`validation/first-contact-3-records.json`,
//! gathered in the fourteenth session): the file parses; every record expresses except those
//! whose checkpoint no preset describes (MXFP8 / NF3 weights, named as such, and the AWQ GLM-5.1
//! checkpoint), which are refused rather than read as NVFP4, and the AMD MXFP4-experts rows whose
//! BF16 linears were converted at load by a config their flags do not carry; every record cites
//! one of the three pages the file was built from; the five GLM-5.2 v18 MTP 3 records whose page
//! prints the server's acceptance run on it (two of them since the twenty-eighth session read
//! their helper's online-MXFP8 config, the AMD MXFP4-experts one since the thirty-fourth), the
//! other MTP-on records on the prior.

use crate::common;
use sim::records::{RecordSet, express};
use std::path::{Path, PathBuf};

fn path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../validation/first-contact-3-records.json")
}

#[test]
fn the_records_express_unless_their_weights_match_no_preset() {
    let set = RecordSet::load(&path()).expect("validation/first-contact-3-records.json parses");
    assert!(set.records.len() >= 140, "{} records", set.records.len());
    // the MXFP8 checkpoints by name (GLM-5.1 v6's NVFP4-MXFP8 mix, the NF3 hybrid): the luke
    // NVFP4 rows whose linears the helper converts to MXFP8 at load express (twenty-eighth
    // session: their flags carry the helper's `--quantization-config`)
    // the AMD MXFP4-experts checkpoint has its preset (thirty-fourth session), but its rows
    // whose linears were converted at load carry no config to read which: refused, not BF16
    let foreign = ["nvfp4-mxfp8", "nf3", "awq"];
    let expressed = common::express_unless(&path(), |r| {
        let words = format!("{:?} {:?}", r.model, r.quant).to_ascii_lowercase();
        foreign.iter().any(|f| words.contains(f))
            || (r.id.contains("-amd-mxfp4-") && r.id.contains("online"))
    });
    assert_eq!(set.records.len() - expressed.len(), 38 - 2);
    for (id, model) in expressed
        .iter()
        .filter(|(id, _)| id.contains("-amd-mxfp4-"))
    {
        assert_eq!(model, "glm-5.2-mxfp4-experts", "{id}");
    }
    common::assert_online_mxfp8_rows_carry_their_spec(&set);
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
                "rtx-glm52-v18-vllm-tp8-dcp1-amd-mxfp4-a8-mtp3-ctx0-c1".to_string(),
                2.75
            ),
            (
                "rtx-glm52-v18-vllm-tp8-dcp1-luke-a16-mtp3-ctx0-c1".to_string(),
                2.8
            ),
            (
                "rtx-glm52-v18-vllm-tp8-dcp1-luke-a16-onlinemxfp8-mtp3-ctx0-c1".to_string(),
                2.88
            ),
            (
                "rtx-glm52-v18-vllm-tp8-dcp1-luke-a4-mtp3-ctx0-c1".to_string(),
                3.03
            ),
            (
                "rtx-glm52-v18-vllm-tp8-dcp1-luke-a4-onlinemxfp8-mtp3-ctx0-c1".to_string(),
                2.77
            ),
        ]
    );
}

/// The GLM-5.2 v14 / v18 pages run one instance per 8-GPU half of a 16-GPU host (GPUs 0-7 and
/// 8-15): two of the wiki's 16-GPU host's four PCIe switches under one socket, not the
/// dual-socket 8-GPU box. Their records count the host's 16 GPUs (as further-records.json does)
/// and run on the 16-GPU switch preset; the GLM-5.1 v6 page's "local 8-GPU host" stays on the
/// 8-GPU box.
#[test]
fn the_sixteen_gpu_host_pages_run_on_the_switch_box() {
    let set = RecordSet::load(&path()).expect("validation/first-contact-3-records.json parses");
    let mut on_the_host = 0;
    for r in &set.records {
        let on_sixteen = r.source.as_deref().unwrap_or("").contains("glm5.2_v1");
        let count = r.hardware.count.as_ref().and_then(|c| c.get());
        assert_eq!(count == Some(16), on_sixteen, "{}: count {count:?}", r.id);
        let Ok(e) = express(r) else { continue };
        if on_sixteen {
            assert_eq!(e.machine, "rtx-pro-6000-x16-pcie-switch", "{}", r.id);
            on_the_host += 1;
        } else {
            assert!(
                e.machine.starts_with("rtx-pro-6000-x8-"),
                "{}: {}",
                r.id,
                e.machine
            );
        }
    }
    // every compared record of the file is a GLM-5.2 page's (the GLM-5.1 v6 rows are refused);
    // two of them the AMD MXFP4-experts checkpoint's since the thirty-fourth session
    assert_eq!(on_the_host, 106);
}

/// The GLM-5.2 v14 sweep's records carry the launch of the runner the page names as its
/// reproduction (`scripts/bench-glm52-v14-todo-and-sweep.sh` at the page's commit), and the v18
/// rows the environment their image's helper exports (the page's build repository,
/// local-inference-lab/blackwell-llm-docker @7f3cbc6: serve-gilded-gnosis.sh → serve-glm52-v18.sh
/// → serve-glm52-v16.sh), sixteenth session: vLLM's PCIe one-shot all-reduce up to 64 KB and NCCL
/// tuned as the wiki runs it, not NCCL alone as the pages' tables left it.
#[test]
fn the_v14_and_v18_rows_run_their_launchers_pcie_all_reduce() {
    for (page, cited, count, whole_launch) in [
        (
            "models/glm5.2_v14.md",
            "scripts/bench-glm52-v14-todo-and-sweep.sh",
            96,
            true,
        ),
        (
            "models/glm5.2_v18.md",
            "7f3cbc6100fccdce662bd22a469ef0b68c9d8f93",
            15,
            false,
        ),
    ] {
        let of_page =
            |r: &sim::records::Record| r.source.as_deref().is_some_and(|s| s.contains(page));
        let rows = common::expressed_records(&path(), of_page, count, whole_launch);
        assert!(!rows.is_empty(), "{page}");
        for (r, e) in rows {
            assert!(common::notes_hold(&r, cited), "{}: cites {cited}", r.id);
            assert_eq!(e.knobs.launch_complete, whole_launch, "{}", r.id);
            common::assert_vllm_one_shot_up_to_64k(&r.id, &e.knobs);
        }
    }
}
