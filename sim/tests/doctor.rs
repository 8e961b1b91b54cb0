//! What limits a server, from its log (`sim::doctor`, printed by `sim validate --server-log` and
//! `sim calibrate --server-log`): the user's GLM-4.7 log (eager, TP8), once calibrated on its own
//! decode rounds, names the host's kernel launches as the bound and prices CUDA graphs; the same
//! log with its pool shown full names the KV pool and the flags that grow it.

mod common;

use common::sim_stdout;

const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/logs/glm47-fp8-tp8-calibration.log"
);
const BOX: [&str; 4] = [
    "--machine",
    "rtx-pro-6000-x8-baremetal",
    "--model",
    "glm-4.7-fp8",
];

fn limits(text: &str) -> &str {
    &text[text.find("what limits this server:").expect("a diagnosis")..]
}

#[test]
fn the_calibrated_eager_log_is_cpu_bound_and_cuda_graphs_are_priced() {
    let dir = tempfile::tempdir().unwrap();
    let cal = dir.path().join("cal.json");
    let cal_s = cal.to_str().unwrap();
    let mut fit: Vec<&str> = vec!["calibrate"];
    fit.extend(BOX);
    fit.extend(["--server-log", LOG, "--output", cal_s]);
    sim_stdout(&fit);
    let mut check: Vec<&str> = vec!["validate"];
    check.extend(BOX);
    check.extend(["--server-log", LOG, "--calibration", cal_s]);
    let out = sim_stdout(&check);
    let l = limits(&out);
    assert!(
        l.contains("CPU-bound (eager): at 128 running requests"),
        "{l}"
    );
    let gain: f64 = l
        .split("ms per step predicted, ")
        .nth(1)
        .and_then(|r| r.split('×').next())
        .and_then(|x| x.parse().ok())
        .expect("a CUDA-graph gain");
    // the graph step still reads every weight: faster, but by less than the launch share
    assert!(gain > 1.1 && gain < 3.0, "{gain}: {l}");
    assert!(l.contains("try drop --disable-cuda-graph"), "{l}");
}

#[test]
fn a_full_pool_is_named_with_the_flags_that_grow_it() {
    let text = std::fs::read_to_string(LOG).unwrap();
    // every decode line says the pool was 97% full
    let full: String = text
        .lines()
        .map(|l| match l.find("token usage: ") {
            Some(i) if l.contains("Decode batch") => {
                let rest = &l[i + "token usage: ".len()..];
                let end = rest.find(',').unwrap_or(rest.len());
                format!("{}token usage: 0.97{}\n", &l[..i], &rest[end..])
            }
            _ => format!("{l}\n"),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("kv-bound.log");
    std::fs::write(&log, full).unwrap();
    let mut check: Vec<&str> = vec!["validate"];
    check.extend(BOX);
    check.extend(["--server-log", log.to_str().unwrap()]);
    let out = sim_stdout(&check);
    let l = limits(&out);
    assert!(
        l.contains("KV-bound: the pool was 97% full at 128 running requests"),
        "{l}"
    );
    assert!(l.contains("--kv-cache-dtype fp8_e4m3"), "{l}");
    assert!(l.contains("--mem-fraction-static above 0.848"), "{l}");
}
