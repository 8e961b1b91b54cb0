//! The user's VM without P2P (issue 26), as a bar: GLM-5-NVFP4 TP8 on the
//! `rtx-pro-6000-x8-vm-hostbounce` preset with the calibration fitted on the user's own server log,
//! against what the user measured in that VM (data/observations/user-box.json): ~11 tok/s at one
//! stream, ~225 output tok/s at 64 concurrent, 210–247 with CUDA graphs (no gain).
//!
//! Lengths: the run did not record them; total/output = 516/225 fixes input/output = 1.293, so
//! 1293 input and 1000 output tokens, fixed (`--random-range-ratio 1.0`).
//!
//! What it asserts is what the model honestly reaches, not the acceptance bar where it misses:
//! one stream and the CUDA-graph gain at 64 are inside the bars (25%, 10%); 64 concurrent is
//! 1.8–2.8× too fast (the preset's host-staged curves are synthesized, nothing of it was timed in
//! the VM). The last test shows what a profile's measured collectives would settle: the same
//! preset with every collective 3.4× slower (what the user's GLM-5 numbers imply for the 8-GPU
//! all-reduce: ~1.35 ms at 786 KB, 64 tokens × 6144 × 2 B, against 0.40 ms in the preset) meets
//! 64 concurrent and the graph gain, yet the user's GLM-4.7 log cannot be fitted on it; `probe
//! run --quick` in the VM measures exactly those curves.

use crate::common;

use common::sim_stdout;

const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/observations/logs/glm47-fp8-tp8-calibration.log"
);
const VM: &str = "rtx-pro-6000-x8-vm-hostbounce";
const C1_TOK_S: f64 = 11.0;
const C64_TOK_S: f64 = 225.0;
/// 210–247 with CUDA graphs against 225 eager: the centre of the user's range is no gain.
const USER_GRAPH_GAIN: f64 = 1.0;

fn calibrate(dir: &std::path::Path, machine: &str) -> String {
    let cal = dir.join("cal.json");
    let cal_s = cal.to_str().unwrap().to_string();
    sim_stdout(&[
        "calibrate",
        "--machine",
        machine,
        "--model",
        "glm-4.7-fp8",
        "--server-log",
        LOG,
        "--output",
        &cal_s,
    ]);
    cal_s
}

/// Output tok/s of GLM-5-NVFP4 TP8 at `concurrency`, eager or with CUDA graphs.
fn output_tok_s(machine: &str, cal: &str, concurrency: u32, eager: bool) -> f64 {
    let flags: &[&str] = if eager {
        &["--disable-cuda-graph"]
    } else {
        &[]
    };
    output_tok_s_with(machine, cal, concurrency, flags)
}

/// (c1 eager, c64 eager, c64 graphs) on `machine` with the calibration file `cal`.
fn bars(machine: &str, cal: &str) -> (f64, f64, f64) {
    (
        output_tok_s(machine, cal, 1, true),
        output_tok_s(machine, cal, 64, true),
        output_tok_s(machine, cal, 64, false),
    )
}

#[test]
fn the_preset_meets_one_stream_and_the_graph_gain_and_misses_64_concurrent() {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibrate(dir.path(), VM);
    let (c1, c64, c64_graphs) = bars(VM, &cal);
    let gain = c64_graphs / c64;
    assert!((c1 / C1_TOK_S - 1.0).abs() <= 0.25, "c1 {c1:.1} tok/s");
    assert!(
        (gain / USER_GRAPH_GAIN - 1.0).abs() <= 0.10,
        "gain {gain:.3}"
    );
    // the documented miss: 521 vs ~225 when this was written
    let over = c64 / C64_TOK_S;
    assert!(
        (1.8..=2.8).contains(&over),
        "c64 {c64:.1} tok/s, {over:.2}× the user's"
    );
}

#[test]
fn slower_collectives_would_close_the_gap_but_the_users_log_rejects_them() {
    // a profile as `probe run` in the VM would write it, if its all-reduce took what the user's
    // GLM-5 numbers imply: the preset with every collective curve 3.4× slower
    let mut p = sim::presets::machine_preset(VM).unwrap();
    for c in &mut p.collectives {
        for pt in &mut c.points {
            pt.time_us.median *= 3.4;
            pt.time_us.p10 *= 3.4;
            pt.time_us.p90 *= 3.4;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vm-implied.json");
    std::fs::write(&path, serde_json::to_string(&p).unwrap()).unwrap();
    let implied = path.to_str().unwrap();
    // with the knobs the log gives on the preset (its CPU time per launch), 64 concurrent and
    // the graph gain are met; one stream comes out −26% (8.1 tok/s): scaling every size alike
    // also slows the small all-reduces one stream runs
    let on_preset = calibrate(dir.path(), VM);
    let (c1, c64, c64_graphs) = bars(implied, &on_preset);
    assert!((c1 / C1_TOK_S - 1.0).abs() <= 0.30, "c1 {c1:.1}");
    assert!((c64 / C64_TOK_S - 1.0).abs() <= 0.25, "c64 {c64:.1}");
    let gain = c64_graphs / c64;
    assert!(
        (gain / USER_GRAPH_GAIN - 1.0).abs() <= 0.10,
        "gain {gain:.3}"
    );
    // but the GLM-4.7 log cannot be fitted on such a box: its eager steps at 64 and 128 running
    // (102.6, 103.5 ms) leave no room for all-reduces that slow, so the log was not run on it
    // (P2P during those runs was not recorded) or the collectives are not what is slow
    let own = dir.path().join("own");
    std::fs::create_dir_all(&own).unwrap();
    let refit = calibrate(&own, implied);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(refit).unwrap()).unwrap();
    let err = v["median_abs_error_pct"].as_f64().expect("median error");
    assert!(
        err > 20.0,
        "the log fits a 3.4× slower interconnect to {err:.1}%"
    );
}

#[test]
fn healthy_host_staging_would_make_the_vm_faster_and_graphs_pay() {
    // the preset's GPUs with no collective measured and the host staging probe measured in a
    // KVM guest (the lent H200: 3.18 µs one-shot, ~51 GB/s), copied onto all eight GPUs: sim
    // costs NCCL's SHM ring from them (`sim::machine::shm_ring`)
    let lent = models::MachineProfile::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../probe/profiles/h200-x1.vm-fields.json"
    )))
    .unwrap();
    let mut p = sim::presets::machine_preset(VM).unwrap();
    p.collectives.clear();
    for d in 0..8 {
        p.host_staging
            .extend(lent.host_staging.iter().cloned().map(|c| {
                let mut c = c;
                c.device = d;
                c
            }));
        // only the graph-node floor (the round trip's baseline), not the H200's host launch times
        let graph_floor = lent
            .launch
            .iter()
            .filter(|l| l.kind == models::profile::LaunchKind::GraphNode);
        p.launch.extend(graph_floor.cloned().map(|l| {
            let mut l = l;
            l.device = d;
            l
        }));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vm-shm.json");
    std::fs::write(&path, serde_json::to_string(&p).unwrap()).unwrap();
    let cal = calibrate(dir.path(), VM);
    let shm = path.to_str().unwrap();
    let eager = output_tok_s(shm, &cal, 64, true);
    let graphs = output_tok_s(shm, &cal, 64, false);
    // 550 and 839 tok/s when this was written: further from the user's 225, and a graph gain
    // the user did not see
    assert!(eager > 2.0 * C64_TOK_S, "eager {eager:.1}");
    assert!(graphs / eager > 1.3, "gain {:.2}", graphs / eager);
}

/// Output tok/s with extra launch flags (`--enable-pcie-oneshot-allreduce`).
fn output_tok_s_with(machine: &str, cal: &str, concurrency: u32, flags: &[&str]) -> f64 {
    let c = concurrency.to_string();
    let prompts = (2 * concurrency).to_string();
    let mut args = vec![
        "run",
        "--machine",
        machine,
        "--model",
        "glm-5-nvfp4",
        "--tp",
        "8",
        "--calibration",
        cal,
        "--random-input-len",
        "1293",
        "--random-output-len",
        "1000",
        "--random-range-ratio",
        "1.0",
        "--max-concurrency",
        &c,
        "--num-prompts",
        &prompts,
        "--format",
        "json",
    ];
    args.extend_from_slice(flags);
    let v: serde_json::Value = serde_json::from_str(&sim_stdout(&args)).unwrap();
    v["output_throughput"].as_f64().expect("output_throughput")
}

/// Issue 34: the user's VM as each P2P state and all-reduce path, with the log's calibration.
/// What the model reaches at the published host figures (14 µs, 37 GB/s a staged copy; the lent
/// guest's host path for the SHM ring): every state is CPU-bound at one eager stream (9.4 tok/s,
/// −15% against ~11); at 64 concurrent no state at these published host figures comes near ~225
/// (all 1.9–2.6× above), so none brackets it — the host-path sweep below
/// (`the_host_path_sweep_brackets_the_users_numbers`) says which latency and bandwidth would, and
/// `probe run --quick` in the VM prints them (its `P2P state:` and `host path:` lines).
/// Printed with `-- --nocapture`; the asserted facts are the order and those bounds.
#[test]
fn each_p2p_state_at_the_users_load() {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibrate(dir.path(), VM);
    let eager = ["--disable-cuda-graph"];
    let oneshot = ["--enable-pcie-oneshot-allreduce"];
    let rows: Vec<(&str, &str, &[&str])> = vec![
        ("real", "rtx-pro-6000-x8-baremetal", &[]),
        (
            "off (bare metal, SHM)",
            "rtx-pro-6000-x8-baremetal-p2p-off",
            &[],
        ),
        ("off (the VM preset)", VM, &[]),
        ("routed, NCCL", "rtx-pro-6000-x8-baremetal-p2p-routed", &[]),
        (
            "routed, custom AR",
            "rtx-pro-6000-x8-baremetal-p2p-routed",
            &oneshot,
        ),
    ];
    let mut c1_graphs = Vec::new();
    for (name, machine, flags) in &rows {
        let with = |c: u32, graphs: bool| {
            let mut f: Vec<&str> = flags.to_vec();
            if !graphs {
                f.extend_from_slice(&eager);
            }
            output_tok_s_with(machine, &cal, c, &f)
        };
        let (c1e, c1g, c64e, c64g) = (
            with(1, false),
            with(1, true),
            with(64, false),
            with(64, true),
        );
        eprintln!(
            "{name:24} c1 eager {c1e:6.1}  c1 graphs {c1g:6.1}  c64 eager {c64e:6.1}  c64 graphs {c64g:6.1}"
        );
        assert!(
            (c1e / C1_TOK_S - 1.0).abs() <= 0.25,
            "{name}: c1 eager {c1e:.1}"
        );
        assert!(c64e > 1.8 * C64_TOK_S, "{name}: c64 eager {c64e:.1}");
        c1_graphs.push(c1g);
    }
    // with graphs one stream is GPU-bound and the states part: P2P real first, each state
    // without working P2P behind it
    assert!(
        c1_graphs[1..].iter().all(|&t| t < c1_graphs[0]),
        "{c1_graphs:?}"
    );
    // the custom all-reduce over the routed path: two barrier round trips instead of NCCL's 14
    // ring steps over it, so the model puts it ahead of NCCL there (the order says the
    // reverse; no measurement in the repository decides it)
    assert!(c1_graphs[4] > c1_graphs[3], "{c1_graphs:?}");
}

/// `sim advise --question p2p` on the VM at one stream of a short request, the server given by
/// `server` (a model and layout, or a launch line), printed as `format`.
fn p2p_args<'a>(server: &[&'a str], format: &'a str) -> Vec<&'a str> {
    let small = [
        "--question",
        "p2p",
        "--max-concurrency",
        "1",
        "--num-prompts",
        "2",
        "--random-input-len",
        "256",
        "--random-output-len",
        "64",
        "--format",
    ];
    [
        &["advise", "--machine", VM][..],
        server,
        &small[..],
        &[format][..],
    ]
    .concat()
}

/// `sim advise --question p2p` on the VM preset: every state and path, the VM's own row marked,
/// what to change, and the `try:` line.
#[test]
fn advise_answers_the_p2p_question_for_the_vm() {
    let args = |format: &str| {
        p2p_args(&["--model", "glm-5-nvfp4", "--tp", "8"], format)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let a: Vec<String> = args("json");
    let v: serde_json::Value = serde_json::from_str(&sim_stdout(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    ))
    .unwrap();
    let p = &v["p2p"];
    assert_eq!(p["machine_state"], "off");
    let rows = p["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let current: Vec<_> = rows.iter().filter(|r| r["current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["state"], "off");
    let tok = |r: &serde_json::Value| r["output_tok_s"].as_f64().unwrap();
    let real = rows.iter().filter(|r| r["state"] == "real").map(tok);
    assert!(real.fold(0.0, f64::max) > tok(current[0]));
    assert!(!p["changes"].as_array().unwrap().is_empty());
    // the verdict as odds, like ep / mtp / scale / replicas: the state it leads to against now
    let odds = &p["odds"];
    let prob = odds["probability"].as_f64().unwrap();
    assert!((0.5..=1.0).contains(&prob), "{odds}");
    assert_eq!(odds["sure"].as_bool().unwrap(), prob >= 0.9, "{odds}");
    assert!(
        odds["faster"].as_str().unwrap().starts_with("P2P real"),
        "{odds}"
    );
    assert!(
        odds["slower"].as_str().unwrap().starts_with("P2P off"),
        "{odds}"
    );
    let t: Vec<String> = args("table");
    let out = sim_stdout(&t.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.contains("try: python -m sglang.launch_server"), "{out}");
    assert!(out.contains("off (now)"), "{out}");
    assert!(
        out.contains("with probability") || out.contains("Depends: measure both"),
        "{out}"
    );
}

/// `sim advise --question p2p` for a vLLM line on the VM: the same states and paths in vLLM's
/// words (the community build's `VLLM_ENABLE_PCIE_ALLREDUCE=1`, an environment assignment, for
/// the custom all-reduce; stock vLLM runs NCCL on more than two PCIe GPUs, the row marked now),
/// and a `try:` line that keeps the user's other flags and puts the assignment before `vllm`.
#[test]
fn advise_answers_the_p2p_question_for_a_vllm_line_in_vllms_words() {
    let line = "vllm serve lukealonso/GLM-5-NVFP4 -tp 8 --gpu-memory-utilization 0.9";
    let args = |format: &'static str| p2p_args(&["--server-args", line], format);
    let v: serde_json::Value = serde_json::from_str(&sim_stdout(&args("json"))).unwrap();
    let p = &v["p2p"];
    assert_eq!(p["machine_state"], "off");
    assert_eq!(p["oneshot_env"], "VLLM_ENABLE_PCIE_ALLREDUCE=1");
    assert_eq!(p["oneshot_flag"], "");
    let rows = p["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let now: Vec<_> = rows.iter().filter(|r| r["current"] == true).collect();
    assert_eq!(now.len(), 1);
    assert!(now[0]["all_reduce"].as_str().unwrap().starts_with("NCCL"));
    for r in rows {
        let path = r["all_reduce"].as_str().unwrap();
        assert!(!path.contains("--enable-pcie-oneshot-allreduce"), "{path}");
    }
    let out = sim_stdout(&args("table"));
    let tries: Vec<&str> = out.lines().filter(|l| l.starts_with("try: ")).collect();
    let p2p_try = tries.last().unwrap();
    assert!(
        p2p_try.starts_with(
            "try: VLLM_ENABLE_PCIE_ALLREDUCE=1 vllm serve lukealonso/GLM-5-NVFP4 -tp 8"
        ) && p2p_try.contains("--gpu-memory-utilization 0.9"),
        "{out}"
    );
    // an SGLang line's own flags are kept too, less the all-reduce choice the row replaces
    let sglang = "python -m sglang.launch_server --model-path lukealonso/GLM-5-NVFP4 --tp 8 \
                  --mem-fraction-static 0.9 --disable-custom-all-reduce";
    let out = sim_stdout(&p2p_args(&["--server-args", sglang], "table"));
    let p2p_try = out.lines().rfind(|l| l.starts_with("try: ")).unwrap();
    if p2p_try.contains("--enable-pcie-oneshot-allreduce") {
        assert!(
            !p2p_try.contains("--disable-custom-all-reduce"),
            "{p2p_try}"
        );
    }
    assert!(p2p_try.contains("--mem-fraction-static 0.9"), "{p2p_try}");
}

/// `sim advise --question p2p` on a stock-driver GeForce box: its `real` rows run on the same
/// box with the P2P-patched driver (`rtx-3090-x8-pcie-p2p`), which is faster there, and the
/// change named is that driver's peer access.
#[test]
fn advise_weighs_the_patched_driver_on_a_geforce_box() {
    let v: serde_json::Value = serde_json::from_str(&sim_stdout(&[
        "advise",
        "--machine",
        "rtx-3090-x8-pcie",
        "--model",
        "minimax-m2.5-int4-awq",
        "--tp",
        "8",
        "--question",
        "p2p",
        "--max-concurrency",
        "16",
        "--num-prompts",
        "32",
        "--random-input-len",
        "1024",
        "--random-output-len",
        "256",
        "--format",
        "json",
    ]))
    .unwrap();
    let p = &v["p2p"];
    assert_eq!(p["machine_state"], "off");
    let rows = p["rows"].as_array().unwrap();
    let tok = |r: &serde_json::Value| r["output_tok_s"].as_f64();
    let best = |state: &str| {
        rows.iter()
            .filter(|r| r["state"] == state)
            .filter_map(tok)
            .fold(0.0, f64::max)
    };
    assert!(
        rows.iter()
            .filter(|r| r["state"] == "real")
            .all(|r| r["machine"] == "rtx-3090-x8-pcie-p2p"),
        "{p}"
    );
    assert!(best("real") > best("off"), "{p}");
}

/// Issue 34, the user's VM by host path: `sim advise --question p2p --observed 1:11 --observed
/// 64:225` at the user's load sweeps each state and path (off: NCCL's SHM ring; routed: NCCL's P2P
/// ring, the one-shot custom all-reduce) over host paths of 14–500 µs and 1–37 GB/s. Nothing is
/// fitted: the figures are what `probe run --quick` prints on its `host path:` lines. Asserted:
/// the direction of each effect, and which host paths bracket the user's numbers (when written:
/// both at once at ≈38 µs and ≈3.1 GB/s for routed NCCL, graph gain 1.02×; neither the SHM ring
/// nor the custom all-reduce over a routed path gives both numbers at one host path: since the
/// thirteenth session a ring step over SHM costs the store-to-poll hop and the dependent load
/// measured on the lent guest, not the whole one-shot latency, so one stream's ~11 needs ≈31–34
/// µs, where NCCL's Simple protocol, 24.6 KB a channel per host round trip, holds 64 concurrent
/// at ≤211; it was ≈19 µs and ≈4.1 GB/s before).
#[test]
fn the_host_path_sweep_brackets_the_users_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let cal = calibrate(dir.path(), VM);
    let args = [
        "advise",
        "--machine",
        VM,
        "--model",
        "glm-5-nvfp4",
        "--tp",
        "8",
        "--question",
        "p2p",
        "--calibration",
        &cal,
        "--random-input-len",
        "1293",
        "--random-output-len",
        "1000",
        "--random-range-ratio",
        "1.0",
        "--max-concurrency",
        "64",
        "--num-prompts",
        "128",
        "--observed",
        "1:11",
        "--observed",
        "64:225",
        "--format",
        "json",
    ];
    let v: serde_json::Value = serde_json::from_str(&sim_stdout(&args)).unwrap();
    let sw = &v["p2p"]["host_path_sweep"];
    let rows = sw["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * 4 * 5);
    let get = |path: &str, lat: f64, gb: f64, col: &str| -> f64 {
        rows.iter()
            .find(|r| r["path"] == path && r["latency_us"] == lat && r["gb_per_s"] == gb)
            .and_then(|r| r[col].as_f64())
            .unwrap_or_else(|| panic!("{path} {lat} {gb} {col}"))
    };
    let (lats, gbs) = ([14.0, 40.0, 150.0, 500.0], [1.0, 2.0, 4.0, 8.0, 37.0]);
    for path in ["off-shm", "routed-nccl", "routed-custom"] {
        for lat in lats {
            // lower host bandwidth, never faster (slower while bandwidth, not the round trip,
            // bounds the ring); more at 64 streams than at one
            for w in gbs.windows(2) {
                let (lo, hi) = (
                    get(path, lat, w[0], "load_eager"),
                    get(path, lat, w[1], "load_eager"),
                );
                assert!(
                    lo <= hi * (1.0 + 1e-9),
                    "{path} {lat} µs: {lo} at {} GB/s vs {hi}",
                    w[0]
                );
            }
            if lat <= 40.0 {
                assert!(get(path, lat, 1.0, "load_eager") < get(path, lat, 2.0, "load_eager"));
            }
            let span = |col| get(path, lat, 37.0, col) / get(path, lat, 1.0, col);
            assert!(
                span("load_eager") >= span("one_graphs") * (1.0 - 1e-9),
                "{path} {lat} µs"
            );
        }
        for gb in gbs {
            // a longer host path is slower at one stream with graphs (no CPU bound to hide it)
            for w in lats.windows(2) {
                assert!(get(path, w[0], gb, "one_graphs") > get(path, w[1], gb, "one_graphs"));
            }
            // the documented miss: one eager stream is CPU-bound below the user's ~11 tok/s
            for lat in lats {
                assert!(get(path, lat, gb, "one_eager") < 0.9 * C1_TOK_S);
            }
        }
    }
    // CUDA graphs gain less when the all-reduce dominates the step
    let gain = |p, lat, gb| get(p, lat, gb, "load_graphs") / get(p, lat, gb, "load_eager");
    assert!(gain("routed-nccl", 14.0, 37.0) > gain("routed-nccl", 14.0, 1.0) + 0.05);
    // routed NCCL: ~11 at one stream (graphs) between 14 and 40 µs at every bandwidth, ~225 at
    // 64 eager between 2 and 4 GB/s at 40 µs, with no graph gain (within 10% of none)
    for gb in gbs {
        assert!(get("routed-nccl", 14.0, gb, "one_graphs") > C1_TOK_S);
        assert!(get("routed-nccl", 40.0, gb, "one_graphs") < C1_TOK_S);
    }
    assert!(get("routed-nccl", 40.0, 2.0, "load_eager") < C64_TOK_S);
    assert!(get("routed-nccl", 40.0, 4.0, "load_eager") > C64_TOK_S);
    for gb in [2.0, 4.0] {
        assert!((gain("routed-nccl", 40.0, gb) - USER_GRAPH_GAIN).abs() <= 0.10);
    }
    // the custom all-reduce over the routed path: ~11 at one stream needs ≥150 µs, where no
    // bandwidth reaches ~225 at 64: it cannot give both of the user's numbers
    for gb in gbs {
        assert!(get("routed-custom", 40.0, gb, "one_graphs") > C1_TOK_S);
        for lat in [150.0, 500.0] {
            assert!(get("routed-custom", lat, gb, "load_eager") < C64_TOK_S);
        }
    }
    let brackets: Vec<&str> = sw["brackets"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b.as_str())
        .collect();
    assert_eq!(brackets.len(), 6, "{brackets:?}");
    assert!(
        brackets
            .iter()
            .any(|b| b.starts_with("routed, NCCL P2P at 64") && b.contains("at 40 µs: 2–4 GB/s")),
        "{brackets:?}"
    );
    // one host path per state and path for both numbers: routed NCCL and SHM have one (with no
    // graph gain, as the user saw), the custom all-reduce over the routed path none
    let joint = |p: &str| {
        let j = sw["joints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["path"] == p)
            .unwrap()
            .clone();
        (
            j["latency_us"].as_f64(),
            j["gb_per_s"].as_f64(),
            j["graph_gain"].as_f64(),
        )
    };
    let (Some(l), Some(b), Some(g)) = joint("routed-nccl") else {
        panic!("routed-nccl: {:?}", joint("routed-nccl"))
    };
    assert!(
        (14.0..40.0).contains(&l) && (2.0..4.0).contains(&b),
        "routed-nccl: {l} µs {b} GB/s"
    );
    assert!((g - USER_GRAPH_GAIN).abs() <= 0.10, "routed-nccl: gain {g}");
    // SHM: one stream's ~11 needs a host path whose round trip leaves NCCL's Simple protocol
    // short of 64 concurrent's ~225 (a channel's packs once a round trip)
    assert_eq!(joint("off-shm").0, None);
    assert!(get("off-shm", 40.0, 37.0, "load_eager") < C64_TOK_S);
    assert_eq!(joint("routed-custom").0, None);
    let deciding = sw["deciding"].to_string();
    assert!(deciding.contains("host path: SHM") && deciding.contains("host path: peer copy"));
}

/// The acceptance bar at the host path the sweep inverts the user's numbers to (routed, NCCL's
/// ring: ≈38 µs, ≈3.3 GB/s; the SHM ring has no such host path since the thirteenth session, see
/// the sweep's test): a probe profile of the box carrying those two figures predicts ~11 tok/s
/// at one stream (eager −16%, graphs −3% when written), ~225 at 64 eager and no graph gain.
/// Conditional, not a hit: nothing measured the VM's host path; this is what `probe run --quick`
/// would have to print for the interconnect to be the whole story.
#[test]
fn at_the_inverted_host_path_the_users_numbers_are_met() {
    use models::profile::P2pState;
    use models::profile::host_path::HostPathFigures;
    let dir = tempfile::tempdir().unwrap();
    let cal = calibrate(dir.path(), VM);
    let base = sim::presets::machine_preset("rtx-pro-6000-x8-baremetal").unwrap();
    let (state, latency_us, gb_per_s) = (P2pState::Routed, 38.0, 3.3);
    let path = HostPathFigures {
        latency_us,
        gb_per_s,
    };
    let p = sim::p2p_variant::with_host_path(&base, state, path, "vm_bars");
    let file = dir.path().join(format!("{state}.json"));
    std::fs::write(&file, serde_json::to_string(&p).unwrap()).unwrap();
    let m = file.to_str().unwrap();
    let nccl = ["--disable-custom-all-reduce"];
    let run = |c: u32, eager: bool| {
        let mut f = nccl.to_vec();
        if eager {
            f.push("--disable-cuda-graph");
        }
        output_tok_s_with(m, &cal, c, &f)
    };
    let (c1e, c1g, c64e, c64g) = (run(1, true), run(1, false), run(64, true), run(64, false));
    eprintln!(
        "{state} {latency_us} µs {gb_per_s} GB/s: c1 {c1e:.1}/{c1g:.1}, c64 {c64e:.1}/{c64g:.1}"
    );
    assert!(
        (c1e / C1_TOK_S - 1.0).abs() <= 0.25,
        "{state}: c1 eager {c1e:.1}"
    );
    assert!(
        (c1g / C1_TOK_S - 1.0).abs() <= 0.25,
        "{state}: c1 graphs {c1g:.1}"
    );
    assert!(
        (c64e / C64_TOK_S - 1.0).abs() <= 0.25,
        "{state}: c64 eager {c64e:.1}"
    );
    assert!(
        ((c64g / c64e) - USER_GRAPH_GAIN).abs() <= 0.10,
        "{state}: gain"
    );
}
