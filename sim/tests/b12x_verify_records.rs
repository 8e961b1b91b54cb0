//! Which b12x sparse-MLA kernel a public record's speculative verify ran under vLLM's
//! `--attention-backend B12X_MLA_SPARSE`, read from its build's date and the fork's switch
//! (`sim::b12x_build::B12xMlaVerify`): the GLM-5.2 v13 page's June 2026 build verified on the
//! extend kernel (not priced: the engine's caveat flags the prediction), the v20 page's builds of
//! late July and the GLM-5.1 v5 page's of 26 May on the decode kernel; a
//! FlashInfer-attention run has no b12x route at all.

use crate::common;
use sim::b12x_build::B12xMlaVerify;

/// The route each kept record's knobs carry.
fn routes(
    name: &str,
    keep: impl Fn(&str) -> bool,
    count: usize,
) -> Vec<(String, Option<B12xMlaVerify>)> {
    common::expressed_records(&common::validation_file(name), |r| keep(&r.id), count, true)
        .into_iter()
        .map(|(r, e)| (r.id, e.knobs.b12x_mla_verify))
        .collect()
}

#[test]
fn the_june_build_verifies_on_the_extend_kernel_and_flashinfer_on_none() {
    for (id, route) in routes("glm52-records.json", |id| id.contains("-mtp3-"), 16) {
        let want = if id.contains("tp8-dcp1") {
            // FLASHINFER_MLA_SPARSE_SM120: not b12x's kernels
            None
        } else {
            Some(B12xMlaVerify::Extend)
        };
        assert_eq!(route, want, "{id}");
    }
}

#[test]
fn the_late_july_and_late_may_builds_verify_on_the_decode_kernel() {
    let v20 = |id: &str| {
        id.starts_with("rtx-glm52-v20-") && id.contains("-mtp3-") && !id.contains("mxfp8")
    };
    for (id, route) in routes("first-contact-4-records.json", v20, 2) {
        assert_eq!(route, Some(B12xMlaVerify::Decode), "{id}");
    }
    // the GLM-5.1 v5 page's run script names the backend as `ATTENTION_BACKEND=` (26 May build)
    let v5 = |id: &str| id.starts_with("rtx-glm51-v5-") && id.contains("-mtp3-");
    for (id, route) in routes("new-sources-records.json", v5, 6) {
        assert_eq!(route, Some(B12xMlaVerify::Decode), "{id}");
    }
}

/// The prediction of a one-DCP run on the extend kernel stands on the unpriced-step ground (its
/// interval is the widest first-contact one); the same page's FlashInfer run does not.
#[test]
fn an_extend_kernel_verify_is_flagged_unpriced_in_validate() {
    let path = common::validation_file("glm52-records.json");
    let out = common::sim_json(&[
        "validate",
        "--records",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let flags = |id: &str| -> Vec<String> {
        let c = out["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id && c["primary"] == true)
            .unwrap_or_else(|| panic!("{id} compared"));
        c["regime"]["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect()
    };
    let unpriced = "speculative-step-unpriced".to_string();
    assert!(flags("rtx-glm52-v13-vllm-tp6-dcp1-mtp3-short-c1").contains(&unpriced));
    assert!(!flags("rtx-glm52-v13-vllm-tp8-dcp1-mtp3-short-c1").contains(&unpriced));
}
