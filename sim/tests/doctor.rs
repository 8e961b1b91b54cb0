//! What limits a server, from its log (`sim::doctor`, printed by `sim validate --server-log` and
//! `sim calibrate --server-log`): the user's GLM-4.7 log (eager, TP8), once calibrated on its own
//! decode rounds, names the host's kernel launches as the bound and prices CUDA graphs; the same
//! log with its pool shown full names the KV pool and the flags that grow it.

use crate::common;

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

/// The log with `edit` applied line by line, written to a temporary file; validated on the box.
fn validate_edited(edit: impl Fn(&str) -> String) -> String {
    let text = std::fs::read_to_string(LOG).unwrap();
    let edited: String = text.lines().map(|l| edit(l) + "\n").collect();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("edited.log");
    std::fs::write(&log, edited).unwrap();
    let mut check: Vec<&str> = vec!["validate"];
    check.extend(BOX);
    check.extend(["--server-log", log.to_str().unwrap()]);
    limits(&sim_stdout(&check)).to_string()
}

/// The pool arithmetic names the KV bound without a full `token usage`: a pool of 20,000
/// tokens, 128 requests running at the top load and 64 waiting, prompts of ~61 tokens.
#[test]
fn a_queue_beside_a_pool_that_admits_no_more_is_kv_bound() {
    let l = validate_edited(|l| {
        let l = l.replace("max_total_num_tokens=864247", "max_total_num_tokens=20000");
        if l.contains("Decode batch, #running-req: 128,") {
            l.replace("#queue-req: 0", "#queue-req: 64")
        } else {
            l
        }
    });
    assert!(
        l.contains("KV-bound; pool arithmetic: 20000 tokens admit about"),
        "{l}"
    );
    assert!(
        l.contains("the clients had 192 in flight (128 running, 64 waiting)"),
        "{l}"
    );
    assert!(l.contains("--kv-cache-dtype fp8_e4m3"), "{l}");
    // nothing waiting: no KV bound from the arithmetic
    let calm =
        validate_edited(|l| l.replace("max_total_num_tokens=864247", "max_total_num_tokens=20000"));
    assert!(!calm.contains("KV-bound"), "{calm}");
}

/// TP4×PP2 whose top load ran as micro-batches of 20 and 108 requests (SGLang's log prints
/// each micro-batch's `#running-req`): the split is named with its cost from the cost model's
/// stage step. SGLang's PP loop schedules a micro-batch only after its previous batch left the
/// last stage, so each turn waits for the 108-request micro-batch: the rotation costs two
/// 108-request stage steps against two 64-request ones, and the cap that evens it is offered.
#[test]
fn an_uneven_pipeline_split_is_named_with_its_cost() {
    let cell = std::cell::Cell::new(false);
    let l = validate_edited(|l| {
        let mut l = l
            .replace("tp_size=8", "tp_size=4")
            .replace("pp_size=1", "pp_size=2")
            .replace(" TP0]", " PP0 TP0]");
        if l.contains("Decode batch, #running-req: 128,") {
            let small = !cell.get();
            cell.set(small);
            l = l.replace(
                "#running-req: 128,",
                if small {
                    "#running-req: 20,"
                } else {
                    "#running-req: 108,"
                },
            );
        }
        l
    });
    assert!(
        l.contains("PP split: the logged micro-batches held 108/20 of 128 requests"),
        "{l}"
    );
    assert!(l.contains("for an even 64-request split"), "{l}");
    assert!(l.contains("the imbalance costs"), "{l}");
    assert!(l.contains("--pp-max-micro-batch-size 64"), "{l}");
}

/// Uncalibrated, the cost model puts the eager GLM-4.7 step below the host's launch time, but the
/// log itself shows a step that stays at ~105 ms from 2 to 128 running requests while the GPU's
/// work grows 3×: the doctor names the host from that, prices CUDA graphs and points to
/// `calibrate`. A log whose step grows with the batch gets no such finding.
#[test]
fn an_eager_log_with_a_flat_step_is_named_cpu_bound_before_calibration() {
    let l = validate_edited(|l| l.to_string());
    assert!(
        l.starts_with("what limits this server:\n  CPU-bound (eager), from the log: the step stays at 103.5–108.6 ms from 2 to 128 running requests"),
        "{l}"
    );
    assert!(l.contains("try drop --disable-cuda-graph"), "{l}");
    assert!(
        l.contains("`sim calibrate --server-log` on this log"),
        "{l}"
    );
    assert!(
        !l.contains("the log shows time it does not account for"),
        "{l}"
    );
    // the 128-request rounds at half the throughput: a step that doubles is not flat
    let grown = validate_edited(|l| {
        if l.contains("#running-req: 128") && l.contains("gen throughput (token/s): 123") {
            l.replace(
                "gen throughput (token/s): 123",
                "gen throughput (token/s): 61",
            )
        } else {
            l.to_string()
        }
    });
    assert!(!grown.contains("from the log"), "{grown}");
}
