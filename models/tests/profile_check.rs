//! Machine profiles with impossible values are refused with the field's path; every committed
//! profile and preset passes the same checks.

use models::MachineProfile;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(rel)
}

fn json_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo(dir))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn committed_profiles_and_presets_pass() {
    let mut n = 0;
    for p in json_files("probe/profiles")
        .into_iter()
        .chain(json_files("sim/presets/machines"))
        .chain(json_files("probe/tests/fixtures"))
    {
        let text = std::fs::read_to_string(&p).unwrap();
        // Reference dumps beside the profiles are not profiles (no schema_version).
        if !text.contains("\"schema_version\"") {
            continue;
        }
        MachineProfile::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        n += 1;
    }
    assert!(n >= 10, "only {n} profiles checked");
}

/// Sets the value at `pointer` in the committed 2-GPU profile and parses it.
fn with(pointer: &str, v: Value) -> String {
    let text = std::fs::read_to_string(repo("probe/profiles/h200-x2.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer} not in the profile")) = v;
    let e = MachineProfile::from_json_str(&doc.to_string(), Path::new("bad.json"))
        .expect_err("should be refused");
    e.to_string()
}

fn assert_names(msg: &str, field: &str) {
    assert!(msg.contains("bad.json"), "names the file: {msg}");
    assert!(msg.contains(field), "names `{field}`: {msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn impossible_values_are_refused_with_their_path() {
    let cases: [(&str, Value, &str); 7] = [
        (
            "/devices/0/memory_bytes",
            0.into(),
            "devices[0].memory_bytes",
        ),
        (
            "/collectives/0/points/3/time_us/median",
            1e300.into(),
            "collectives[0].points[3].time_us.median",
        ),
        (
            "/collectives/1/points/2/busbw_gb_per_s",
            (-3.5).into(),
            "collectives[1].points[2].busbw_gb_per_s",
        ),
        (
            "/links/0/curves/0/points/0/gb_per_s/median",
            (-1.0).into(),
            "links[0].curves[0].points[0].gb_per_s.median",
        ),
        (
            "/links/0/curves/0/points/0/time_us/median",
            0.0.into(),
            "links[0].curves[0].points[0].time_us.median",
        ),
        (
            "/compute/0/tflops/p90",
            1e12.into(),
            "compute[0].tflops.p90",
        ),
        (
            "/collectives/0/devices/1",
            7.into(),
            "collectives[0].devices[1]",
        ),
    ];
    for (pointer, v, field) in cases {
        assert_names(&with(pointer, v), field);
    }
}

#[test]
fn out_of_range_json_numbers_are_refused() {
    // 1e400 does not fit an f64: a JSON error naming the file, not an infinite time.
    let text = std::fs::read_to_string(repo("probe/profiles/h200-x2.json")).unwrap();
    let bad = text.replacen("\"median\": 6.0", "\"median\": 1e400", 1);
    assert_ne!(bad, text);
    let e = MachineProfile::from_json_str(&bad, Path::new("bad.json")).unwrap_err();
    assert!(e.to_string().contains("bad.json"), "{e}");
}
