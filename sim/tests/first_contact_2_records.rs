//! Issue 37's second batch of first-contact records (`validation/first-contact-2-records.json`):
//! the file parses, every record expresses but one whose only figure is a per-request rate (a
//! first-contact figure the simulation cannot run pins nothing), every record cites one of the
//! seven pages it was built from (an allowlist: the pages `shared/HELD-OUT.md` reserves are not
//! named in the repository), and the two records whose page states the engine's acceptance run
//! on it while the other MTP-on records run on the prior.

use crate::common;
use sim::records::{RecordSet, express};
use std::path::{Path, PathBuf};

fn path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../validation/first-contact-2-records.json")
}

#[test]
fn the_records_parse_and_all_express() {
    let set = RecordSet::load(&path()).expect("validation/first-contact-2-records.json parses");
    assert!(set.records.len() >= 50, "{} records", set.records.len());
    for r in &set.records {
        match express(r) {
            Ok(_) => {}
            // completion-stats' "aggregate" at two streams is a per-request rate (tokens summed
            // over generation times summed), kept under its own name and compared with nothing
            Err(why) if r.id == PER_REQUEST_RATE => {
                assert_eq!(
                    r.metrics.keys().collect::<Vec<_>>(),
                    ["per_request_gen_tok_s"]
                );
                assert!(
                    format!("{why:?}").contains("per_request_gen_tok_s"),
                    "{why:?}"
                );
            }
            Err(why) => panic!("{} does not express: {why:?}", r.id),
        }
    }
}

const PER_REQUEST_RATE: &str = "rtx-glm51-vllmport-tp8-mtp3-ctx133k-c2";

#[test]
fn every_record_cites_one_of_the_pages_the_file_was_built_from() {
    // pinned to repository, path and commit; the README section lists what each page gave
    let pages = [
        "local-inference-lab/rtx6kpro:hardware/asus-esc8000a-e13p-broadcom-switches.md@e2c2b95",
        "local-inference-lab/rtx6kpro:hardware/wrx90-cpayne-2switch-flat.md@e2c2b95",
        "joninco/rtx6kpro:models/glm5.2_v11.md@599426f",
        "joninco/rtx6kpro:models/kimi-k26-mtp-long-ctx-wip/flashinfer-fp8-fullgraph-crash-2026-05-18.md@599426f",
        "local-inference-lab/rtx6kpro:models/glm5.1/glm51-sglang-vllm-cc32-state-2026-05-03.md@e2c2b95",
        "local-inference-lab/rtx6kpro:models/glm5.1/vllm-b12x-nsa-mtp-port-2026-05-02.md@e2c2b95",
        "local-inference-lab/rtx6kpro:models/glm5.1/compare-dense-mla-vs-nsa-benchmark-2026-04-20/README.md@e2c2b95",
    ];
    common::assert_every_record_cites_one_of(&path(), &pages);
}

#[test]
fn a_stated_acceptance_is_used_and_the_rest_run_on_the_prior() {
    // only the GLM-5.1 cc32 page prints the engines' acceptance (vLLM 2.71, SGLang about 3.4)
    let measured = common::records_on_their_own_acceptance(&path());
    assert_eq!(
        measured,
        [
            ("rtx-glm51-cc32-sglang-tp8-mtp3-ctx0-c32".to_string(), 3.4),
            ("rtx-glm51-cc32-vllm-tp8-mtp3-ctx0-c32".to_string(), 2.71),
        ]
    );
}

/// The GLM-5.2 v11 page runs on GPUs 0-7 of the wiki's 16-GPU host: its records count the host's
/// 16 GPUs and run on the 16-GPU switch preset (two of its switches under one socket), not on
/// the dual-socket 8-GPU box; and they carry the page's Docker Compose environment, which it
/// calls equivalent to its launch helper (sixteenth session): vLLM's PCIe one-shot all-reduce up
/// to 64 KB, as its startup log says ("Using b12x PCIe oneshot allreduce backend"), not NCCL alone.
#[test]
fn the_v11_rows_run_on_the_switch_box_with_the_pages_pcie_all_reduce() {
    let v11 = common::expressed_records(&path(), |r| r.id.starts_with("rtx-glm52-v11-"), 14, true);
    for (r, e) in v11 {
        assert_eq!(r.hardware.count.as_ref().and_then(|c| c.get()), Some(16));
        assert_eq!(e.machine, "rtx-pro-6000-x16-pcie-switch", "{}", r.id);
        common::assert_vllm_one_shot_up_to_64k(&r.id, &e.knobs);
    }
}

/// The ASUS page's PCIe one-shot benchmark rows run as the guide it links launches them (twenty-
/// fifth session): its 'Server Launch Commands' name no speculative flag, so no draft, FlashInfer
/// CUTLASS MoE and the one-shot or NCCL-only all-reduce its two lines choose.
#[test]
fn the_asus_one_shot_rows_run_their_guides_launch_line_without_a_draft() {
    let rows =
        common::expressed_records(&path(), |r| r.id.starts_with("rtx-asus-qwen35"), 14, true);
    for (r, e) in rows {
        assert_eq!(r.parallel.mtp, Some(false), "{}", r.id);
        assert!(e.speculation.is_none(), "{}", r.id);
        let flags = r.engine.flags.as_deref().unwrap_or_default();
        assert!(
            flags.contains("--moe-runner-backend flashinfer_cutlass"),
            "{}",
            r.id
        );
        assert!(!flags.contains("--speculative"), "{}", r.id);
        assert_eq!(
            flags.contains("--enable-pcie-oneshot-allreduce"),
            !flags.contains("--disable-custom-all-reduce"),
            "{}",
            r.id
        );
    }
}
