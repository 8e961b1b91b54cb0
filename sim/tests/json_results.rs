//! Every `sim` command's `--format json` result is an object that carries `schema_version`, and
//! `engine` wherever a serving engine's behaviour was simulated (issue 33, Build 3). `models
//! list` has no engine: it lists model presets, no server is simulated. `validate --records` and
//! `--implied-accept-length` simulate each record as its own engine: their `engine` says so
//! (`each record's own`, or the `--engine` override) and each comparison / series names its own.

use crate::common;

const BOX: &str = "rtx-pro-6000-x8-baremetal";
const LOG: &str = "data/observations/logs/glm47-fp8-tp8-calibration.log";

fn repo(path: &str) -> String {
    format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// `sim args… --format json`, which must be an object with a numeric `schema_version`; its
/// `engine` (`None` where it has none).
fn engine_of(args: &[&str]) -> Option<serde_json::Value> {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let v = common::sim_json(&all);
    assert!(v.is_object(), "{args:?}: not a JSON object");
    assert!(
        v["schema_version"].is_u64(),
        "{args:?}: no schema_version in {}",
        &v.to_string()[..v.to_string().len().min(300)]
    );
    v.get("engine").cloned()
}

#[test]
fn every_json_result_has_a_schema_and_the_engine_it_simulated() {
    let log = repo(LOG);
    let records = repo("validation/public-records.json");
    let measured = repo("data/observations/user-box.json#glm47-fp8-tp8-sweep");
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let cal = cal.to_str().unwrap();
    let glm = ["--machine", BOX, "--model", "glm-4.7-fp8", "--tp", "8"];
    let load = ["--random-input-len", "500", "--random-output-len", "50"];
    let load = [&load[..], &["--num-prompts", "8", "--max-concurrency", "4"]].concat();
    let with = |head: &[&'static str], more: &[&str]| -> Vec<String> {
        head.iter()
            .chain(more.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let cases: Vec<(Vec<String>, Option<&str>)> = vec![
        (with(&["models", "list"], &[]), None),
        (
            with(&["models", "show", "glm-4.7-fp8"], &[]),
            Some("sglang"),
        ),
        (
            with(
                &["predict"],
                &[&glm[..], &["--batch", "4", "--context", "1000"]].concat(),
            ),
            Some("sglang"),
        ),
        (
            with(&["run"], &[&glm[..], &load[..]].concat()),
            Some("sglang"),
        ),
        (
            with(&["sweep"], &[&glm[..], &load[..]].concat()),
            Some("sglang"),
        ),
        (
            with(
                &["sweep", "--machine", BOX, "--model", "glm-4.7-fp8"],
                &[
                    &["--server-args", "vllm serve zai-org/GLM-4.7-FP8 -tp 8"][..],
                    &load[..],
                ]
                .concat(),
            ),
            Some("vllm"),
        ),
        (
            with(&["advise"], &[&glm[..], &load[..]].concat()),
            Some("sglang"),
        ),
        (
            with(&["calibrate", "--server-log"], &[&log, "--output", cal][..])
                .into_iter()
                .chain(glm.iter().map(|s| s.to_string()))
                .collect(),
            Some("sglang"),
        ),
        (
            with(&["validate", "--measured"], &[&measured[..]][..])
                .into_iter()
                .chain(glm.iter().map(|s| s.to_string()))
                .collect(),
            Some("sglang"),
        ),
        (
            with(&["validate", "--server-log"], &[&log[..]][..])
                .into_iter()
                .chain(glm.iter().map(|s| s.to_string()))
                .collect(),
            Some("sglang"),
        ),
        (
            with(&["validate", "--records"], &[&records[..]][..]),
            Some("each record's own"),
        ),
        (
            with(
                &["validate", "--implied-accept-length", "--records"],
                &[&records[..]][..],
            ),
            Some("each record's own"),
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = engine_of(&args);
        assert_eq!(
            got.as_ref().and_then(|v| v.as_str()),
            want,
            "{args:?}: engine {got:?}"
        );
    }
}
