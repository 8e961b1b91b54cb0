//! Issue 21, "one memory verdict, everywhere": for the same model and machine, `predict --layout
//! all`, `advise --all`, `sweep` and the report's layout list agree on which layouts fit, every
//! "does not fit" names the `--mem-fraction-static` and the budget in GB, and the report's memory
//! chart draws no rejected layout.

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;

const VM: &str = "rtx-pro-6000-x8-vm-hostbounce";
const MODEL: &str = "glm-5-nvfp4";

fn sim_json(args: &[&str]) -> Value {
    let out = Command::cargo_bin("sim")
        .unwrap()
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Layout → "fits" (false when rejected for memory), from entries with `layout` and `rejected`.
/// A layout rejected for another reason (impossible) is left out.
fn fit_by_layout<'a>(entries: impl Iterator<Item = &'a Value>) -> BTreeMap<String, bool> {
    let mut m = BTreeMap::new();
    for e in entries {
        let layout = e["layout"].as_str().unwrap().to_string();
        let fits = match e["rejected"].as_str() {
            None => true,
            Some(why) if why.contains("does not fit") || why.contains("not one token") => {
                assert!(
                    why.contains("--mem-fraction-static 0.") && why.contains(" GB"),
                    "{layout}: a \"does not fit\" names the fraction and the budget: {why}"
                );
                false
            }
            Some(_) => continue,
        };
        // sweep repeats a layout once per concurrency: every row says the same
        if let Some(prev) = m.insert(layout.clone(), fits) {
            assert_eq!(prev, fits, "{layout} changes its verdict between rows");
        }
    }
    m
}

#[test]
fn predict_advise_sweep_and_report_agree_on_fit() {
    let base = ["--machine", VM, "--model", MODEL];
    let predict = sim_json(
        &[
            &["predict"][..],
            &base[..],
            &["--layout", "all", "--batch", "8", "--context", "1000"],
        ]
        .concat(),
    );
    let advise = sim_json(
        &[
            &["advise"][..],
            &base[..],
            &["--all", "--num-prompts", "16"],
        ]
        .concat(),
    );
    let sweep = sim_json(
        &[
            &["sweep"][..],
            &base[..],
            &["--max-concurrency", "8", "--num-prompts", "16"],
        ]
        .concat(),
    );
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("report");
    let dir_s = dir.to_str().unwrap();
    let report = sim_json(&[
        "report",
        "--machine",
        VM,
        "--model",
        MODEL,
        "--out",
        dir_s,
        "--num-prompts",
        "16",
        "--max-concurrency",
        "8",
        "--at-concurrency",
        "8",
        "--draws",
        "4",
    ]);
    let p = fit_by_layout(predict["layouts"].as_array().unwrap().iter());
    let a = fit_by_layout(advise["ranking"].as_array().unwrap().iter());
    let s = fit_by_layout(sweep["rows"].as_array().unwrap().iter());
    let r = fit_by_layout(report["machines"][0]["layouts"].as_array().unwrap().iter());
    assert!(p.len() >= 15, "{p:?}");
    for (name, other) in [("advise --all", &a), ("sweep", &s), ("report", &r)] {
        assert_eq!(&p, other, "predict --layout all vs {name}");
    }
    // The case of the issue: TP8 with DP attention holds the whole attention block on every
    // GPU, and SGLang's default fraction for it (0.66 on 97,887 MiB) leaves too little.
    assert_eq!(p.get("TP8+DPA"), Some(&false), "{p:?}");
    assert_eq!(p.get("TP8"), Some(&true), "{p:?}");
    // The memory chart draws the layouts that fit and none of the rejected ones.
    let svg = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-memory.svg"))
        .expect("a memory chart");
    let text = std::fs::read_to_string(svg).unwrap();
    // every text node, trimmed (the renderer puts each on its own line)
    let texts: std::collections::BTreeSet<&str> = text.split(['<', '>']).map(str::trim).collect();
    for (layout, fits) in &p {
        let drawn = texts.contains(layout.as_str());
        assert_eq!(drawn, *fits, "{layout} drawn on the memory chart: {drawn}");
    }
}
