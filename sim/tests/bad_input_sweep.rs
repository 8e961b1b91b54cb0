//! Issue 38's sweep: `sim` run as a new user would, with generated junk and every case the issue
//! lists (numbers in records, records that are no record, flags with prose, other sources'
//! conventions, a cut `server_args` line, misspelt and joined launch lines, a missing draft,
//! counts and sizes beyond any run, named pipes, a pipe read twice). Each case either reads its
//! input correctly (checked against what it says) or exits 2 with one line naming what is wrong;
//! none panics, none hangs (each ≤ 10 s), no child grows past 1 GB. Nothing outside the
//! repository is read.

use serde_json::{Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const MACHINE: &str = "h200-x8";
const CASE_LIMIT: Duration = Duration::from_secs(10);

fn sim_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sim"))
}

/// Runs `sim args` with a 10 s limit: the output, or a failure naming the case that hung. The
/// pipes are drained while it runs (a JSON answer past the pipe's 64 KiB would otherwise block
/// the child on a full pipe and read as a hang).
fn sim(args: &[&str]) -> Output {
    let mut child = Command::new(sim_path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > CASE_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hung past {CASE_LIMIT:?}: sim {}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Exit 2 with one line on stderr that contains `says`.
fn refused(args: &[&str], says: &str) {
    let out = sim(args);
    let err = String::from_utf8_lossy(&out.stderr);
    let last: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(
        out.status.code(),
        Some(2),
        "sim {} should be refused: {err}",
        args.join(" ")
    );
    assert_eq!(last.len(), 1, "one error line: {err}");
    assert!(last[0].contains(says), "`{says}` not in: {}", last[0]);
}

/// Exit 0 and the stdout as JSON.
fn json_of(args: &[&str]) -> Value {
    let out = sim(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "sim {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A user's decode measurement on presets (quick to simulate).
fn record(id: &str, figure: Value, concurrency: Value) -> Value {
    json!({
        "id": id,
        "hardware": {"machine": MACHINE, "count": 8},
        "engine": {"name": "sglang", "flags": "--tp 8"},
        "model": "deepseek-v3-fp8",
        "parallel": {"tp": 8},
        "workload": {"input_len": 2048, "concurrency": concurrency, "dataset": "llm_decode_bench"},
        "metrics": {"output_tok_s": figure}
    })
}

/// `(id, measured)` of the compared records and `(id, detail)` of the skipped ones.
type Board = (Vec<(String, f64)>, Vec<(String, String)>);

/// `sim validate --records` of `records` (JSON), as a [`Board`].
fn scoreboard(dir: &Path, records: Value) -> Board {
    let path = write(dir, "records.json", &records.to_string());
    let board = json_of(&["validate", "--records", &path, "--format", "json"]);
    let compared = board["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["measured"].as_f64().unwrap(),
            )
        })
        .collect();
    let skipped = board["unexpressible"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["id"].as_str().unwrap().to_string(),
                u["reasons"][0]["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (compared, skipped)
}

/// A small deterministic generator (xorshift), so the junk is the same on every run.
struct Junk(u64);

impl Junk {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Generated figures: ones the grammar reads (with the value they mean) and ones it must refuse.
fn generated_figures(n: usize) -> (Vec<(String, f64)>, Vec<String>) {
    let mut g = Junk(0x5eed_3838);
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let whole = 10 + g.below(9000);
        let tenths = g.below(10);
        let v: f64 = format!("{whole}.{tenths}").parse().unwrap();
        let grouped = if whole >= 1000 {
            format!("{},{:03}", whole / 1000, whole % 1000)
        } else {
            whole.to_string()
        };
        let forms = [
            format!("{whole}.{tenths}"),
            format!("~{whole}.{tenths} tok/s"),
            format!("{whole}.{tenths} ({} K ctx)", g.below(200)),
            format!("{whole}.{tenths} ± {}", g.below(9) + 1),
            format!("**{whole}.{tenths} tok/s**"),
        ];
        good.push((forms[g.below(5) as usize].clone(), v));
        good.push((format!("{grouped} tok/s"), whole as f64));
        let junk = [
            format!("{whole},{tenths}"),
            format!("{whole}.{tenths}.{}", g.below(10)),
            format!("0x{whole:X}"),
            format!("{whole} tok/s at {} streams", g.below(64) + 1),
            format!("TP{} {whole}", g.below(8) + 1),
            format!("{whole} ({tenths}"),
            format!("{}-{}", whole + 5, whole),
        ];
        bad.push(junk[g.below(7) as usize].clone());
    }
    (good, bad)
}

#[test]
fn figures_and_counts_are_read_for_sure_or_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (good, bad) = generated_figures(12);
    let mut records = Vec::new();
    for (i, (text, _)) in good.iter().enumerate() {
        records.push(record(&format!("good{i}"), json!(text), json!(4)));
    }
    for (i, text) in bad.iter().enumerate() {
        records.push(record(&format!("bad{i}"), json!(text), json!(4)));
    }
    // the issue's own strings
    for (id, text) in [
        ("ctx", "~81 (20K ctx)"),
        ("pm", "122 ± 3"),
        ("py", "1_010"),
        ("range", "85-89"),
    ] {
        records.push(record(id, json!(text), json!(4)));
    }
    for (id, text) in [
        ("comma", "1010,6"),
        ("points", "1010.6.1"),
        ("hex", "0x3F2"),
    ] {
        records.push(record(id, json!(text), json!(4)));
    }
    // counts by the same grammar
    records.push(record("count-e", json!("500"), json!("1e1")));
    records.push(record("count-grouped", json!("500"), json!("1,0")));
    records.push(record("count-words", json!("500"), json!("4 and more")));
    // entries that are no record, a repeated id: skipped, the rest compared
    records.push(json!("a record that is a string"));
    records.push(record("good0", json!("999"), json!(4)));
    let (compared, skipped) = scoreboard(dir.path(), json!({ "records": records }));
    let measured = |id: &str| compared.iter().find(|(i, _)| i == id).map(|(_, v)| *v);
    let why = |id: &str| {
        skipped
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| panic!("`{id}` was not skipped: {compared:?}"))
    };
    for (i, (text, v)) in good.iter().enumerate() {
        assert_eq!(measured(&format!("good{i}")), Some(*v), "{text}");
    }
    for (i, text) in bad.iter().enumerate() {
        let d = why(&format!("bad{i}"));
        assert!(d.contains(text.as_str()), "{text}: {d}");
    }
    assert_eq!(measured("ctx"), Some(81.0));
    assert_eq!(measured("pm"), Some(122.0));
    assert_eq!(measured("py"), Some(1010.0));
    assert_eq!(measured("range"), Some(87.0));
    assert!(why("comma").contains("decimal comma"));
    assert!(why("points").contains("second `.`"));
    assert!(why("hex").contains("hexadecimal"));
    assert!(measured("count-e").is_some());
    assert!(why("count-grouped").contains("thousands group"));
    assert!(why("count-words").contains("not a whole number"));
    assert!(
        skipped
            .iter()
            .any(|(i, d)| i.starts_with('#') && d.contains("is no record"))
    );
    assert!(why("good0").contains("appears more than once"));
}

/// Record `id`'s comparison in a `validate --records --format json` board.
fn comparison_of<'a>(board: &'a Value, id: &str) -> &'a Value {
    board["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} not compared: {board:#}"))
}

/// The notes of record `id`'s comparison in a `validate --records --format json` board.
fn notes_of(board: &Value, id: &str) -> String {
    comparison_of(board, id)["notes"].to_string()
}

#[test]
fn records_keep_their_flags_and_their_own_source_s_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let serving = |id: &str, dataset: &str, flags: &str| {
        json!({
            "id": id,
            "hardware": {"machine": MACHINE, "count": 8},
            "engine": {"name": "sglang", "flags": flags},
            "model": "deepseek-v3-fp8",
            "parallel": {"tp": 8},
            "workload": {"input_len": 256, "output_len": 32, "concurrency": 2, "dataset": dataset,
                         "num_prompts": if dataset == "random" { json!(20) } else { Value::Null }},
            "metrics": {"output_tok_s": "150"}
        })
    };
    let path = write(
        dir.path(),
        "serving.json",
        &json!({"records": [
            serving("prose", "random", "--tp 8 --trust-remote-code --disable-cuda-graph (per FINDINGS.md commands)"),
            serving("ix", "InferenceX random 1k/1k", "--tp 8"),
            serving("stated", "python3 -m sglang.bench_serving --dataset-name random --random-range-ratio 1", "--tp 8"),
            serving("vllm-default", "vllm bench serve --dataset-name random --random-input 256 --random-output 32", "--tp 8"),
            serving("vllm-half", "vllm bench serve --dataset-name random --random-range-ratio 0.5", "--tp 8"),
            serving("vllm-one", "vllm bench serve --dataset-name random --random-range-ratio 1", "--tp 8"),
            serving("sglang-wide", "python3 -m sglang.bench_serving --dataset-name random --random-range-ratio 1.5", "--tp 8"),
            serving("sglang-word", "python3 -m sglang.bench_serving --dataset-name random --random-range-ratio half", "--tp 8"),
        ]})
        .to_string(),
    );
    let board = json_of(&["validate", "--records", &path, "--format", "json"]);
    let notes = |id: &str| notes_of(&board, id);
    let prose = notes("prose");
    assert!(!prose.contains("server flags not stated"), "{prose}");
    assert!(!prose.contains("InferenceX"), "{prose}");
    assert!(prose.contains("bench_serving's default"), "{prose}");
    assert!(notes("ix").contains("InferenceX: 10 × concurrency"));
    // a convention the record's own command states wins over anyone's default
    assert!(
        notes("stated")
            .contains("--random-range-ratio 1 (as the record's bench_serving command states)"),
        "{}",
        notes("stated")
    );
    // vllm bench serve's ratio r spreads lengths over [len·(1 − r), len·(1 + r)], and its
    // default 0 fixes them: read into bench_serving's terms, never as bench_serving's 0
    let fixed = notes("vllm-default");
    assert!(
        fixed.contains("--random-input-len 256 --random-output-len 32 --random-range-ratio 1"),
        "{fixed}"
    );
    assert!(fixed.contains("vllm bench serve's default"), "{fixed}");
    let half = notes("vllm-half");
    assert!(
        half.contains("--random-input-len 384 --random-output-len 48 --random-range-ratio 0.333"),
        "{half}"
    );
    let refused = board["unexpressible"].to_string();
    // a ratio the client refuses, or no number, is refused: never read as unstated
    for (id, why) in [
        (
            "vllm-one",
            "vllm bench serve --random-range-ratio 1: it takes a ratio in [0, 1)",
        ),
        (
            "sglang-wide",
            "bench_serving --random-range-ratio 1.5: it takes a ratio in [0, 1]",
        ),
        (
            "sglang-word",
            "bench_serving --random-range-ratio `half`: not a number",
        ),
    ] {
        assert!(
            refused.contains(id) && refused.contains(why),
            "{id}: {refused}"
        );
    }
}

/// The vLLM community fork's own environment words are read as the fork reads them: its
/// `VLLM_B12X_FORCE_MOE_A16=1` runs b12x's W4A16 MoE even beside b12x's `B12X_MOE_FORCE_A16=0`
/// (`fused_moe/b12x_moe.py`), and its `b12x` backend's `VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE` is
/// the one-shot cutoff (`custom_all_reduce.py`), not SGLang's automatic 48 KiB; the `cpp`
/// backend ignores that size. Before, both words were dropped.
#[test]
fn vllm_fork_records_keep_their_a16_switch_and_one_shot_size() {
    let dir = tempfile::tempdir().unwrap();
    let decode = |id: &str, env: &str| {
        json!({
            "id": id,
            "hardware": {"machine": "rtx-pro-6000-x8-baremetal", "count": 8},
            "engine": {"name": "vllm", "flags": format!(
                "{env} vllm serve lukealonso/GLM-5.1-NVFP4-MTP --tensor-parallel-size 8 --moe-backend b12x")},
            "model": "glm-5-nvfp4",
            "quant": "nvfp4 (modelopt_fp4)",
            "parallel": {"tp": 8},
            "workload": {"input_len": 0, "concurrency": 1, "dataset": "llm_decode_bench decode, ctx 0"},
            "metrics": {"output_tok_s": "80"}
        })
    };
    let path = write(
        dir.path(),
        "fork.json",
        &json!({"records": [
            decode("a16", "VLLM_B12X_FORCE_MOE_A16=1 B12X_MOE_FORCE_A16=0 VLLM_ENABLE_PCIE_ALLREDUCE=1 \
                           VLLM_PCIE_ALLREDUCE_BACKEND=b12x VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KB"),
            decode("nvfp4", "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KB"),
            decode("unreadable", "VLLM_ENABLE_PCIE_ALLREDUCE=1 VLLM_PCIE_ALLREDUCE_BACKEND=b12x \
                                  VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KBytes"),
        ]})
        .to_string(),
    );
    let board = json_of(&["validate", "--records", &path, "--format", "json"]);
    let notes = |id: &str| notes_of(&board, id);
    let a16 = notes("a16");
    assert!(a16.contains("W4A16 MoE"), "{a16}");
    assert!(
        a16.contains("custom all-reduce for messages ≤ 64 KiB"),
        "{a16}"
    );
    // the cpp backend (the fork's default) has no one-shot pool to size
    let nvfp4 = notes("nvfp4");
    assert!(!nvfp4.contains("W4A16"), "{nvfp4}");
    assert!(!nvfp4.contains("≤ 64 KiB"), "{nvfp4}");
    // a size the fork cannot read is refused, not read as its 64 KiB default
    let refused = board["unexpressible"].to_string();
    assert!(
        refused.contains("VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KBytes is no size the fork reads"),
        "{refused}"
    );
}

#[test]
fn a_cut_or_reordered_server_log_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/observations/logs/glm47-fp8-tp8-calibration.log"),
    )
    .unwrap();
    let mut lines: Vec<String> = log.lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("server_args="))
        .unwrap();
    let cut = lines[at].find("disable_cuda_graph=").unwrap();
    lines[at].truncate(cut - 2);
    // the decode block repeated at the end: a log pasted twice
    let decode: Vec<String> = lines
        .iter()
        .filter(|l| l.contains("Decode batch"))
        .take(3)
        .cloned()
        .collect();
    lines.extend(decode);
    let path = write(dir.path(), "cut.log", &lines.join("\n"));
    let out = sim(&[
        "validate",
        "--server-log",
        &path,
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "glm-4.7-fp8",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cut before disable_cuda_graph") && text.contains("costed eager"),
        "{text}"
    );
    assert!(text.contains("out of time order") || text.contains("repeating an earlier one"));
}

#[test]
fn launch_lines_are_read_as_their_engine_reads_them() {
    let run = |line: &str, says: &str| {
        refused(
            &[
                "run",
                "--machine",
                MACHINE,
                "--server-args",
                line,
                "--num-prompts",
                "4",
            ],
            says,
        )
    };
    run(
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-sze 8",
        "did you mean --tensor-parallel-size",
    );
    run(
        "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --gpu-memory-utilizaton 0.9",
        "did you mean --gpu-memory-utilization",
    );
    run(
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp-sze 8",
        "did you mean --tp-size",
    );
    run(
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 4 && python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8",
        "2 server commands",
    );
    run("vllm serve deepseek-ai/DeepSeek-V3 —tp 8", "write `--tp`");
    run(
        "trtllm-serve deepseek-ai/DeepSeek-V3 --tp_size 8",
        "TensorRT-LLM",
    );
}

#[test]
fn one_answer_on_a_missing_draft_and_bounds_that_say_why() {
    // (with `--observed`, issue 34: the host-path sweep's measured throughputs)
    let m = ["--machine", MACHINE];
    // (command, its own flags, the model's flags, what the one error line says)
    let kimi: &[&str] = &["--model", "kimi-k2.5", "--tp", "8"];
    let ds: &[&str] = &["--model", "deepseek-v3-fp8", "--tp", "8"];
    let no_mtp = "kimi-k2.5 has no MTP layers";
    let cases: [(&str, &[&str], &[&str], &str); 10] = [
        (
            "run",
            &["--speculative-algorithm", "EAGLE", "--num-prompts", "4"],
            kimi,
            no_mtp,
        ),
        (
            "predict",
            &[
                "--speculative-algorithm",
                "EAGLE",
                "--batch",
                "1",
                "--context",
                "64",
            ],
            kimi,
            no_mtp,
        ),
        (
            "advise",
            &["--question", "mtp", "--draws", "2"],
            kimi,
            no_mtp,
        ),
        (
            "run",
            &["--num-prompts", "1000000000"],
            ds,
            "held in memory",
        ),
        (
            "advise",
            &["--num-prompts", "100000000"],
            ds,
            "held in memory",
        ),
        (
            "predict",
            &["--batch", "1000000000", "--context", "64"],
            ds,
            "no engine runs more requests",
        ),
        (
            "advise",
            &["--question", "ep", "--draws", "1000000"],
            ds,
            "±0.5%",
        ),
        (
            "predict",
            &["--context-length", "1", "--batch", "1", "--context", "1024"],
            ds,
            "above the server's context length 1",
        ),
        (
            "advise",
            &["--question", "p2p", "--observed", "64:x"],
            ds,
            "CONCURRENCY:OUTPUT_TOK_S",
        ),
        (
            "advise",
            &["--observed", "64:225"],
            ds,
            "--question p2p only",
        ),
    ];
    for (command, flags, model, says) in cases {
        refused(&[&[command][..], &m, model, flags].concat(), says);
    }
}

#[test]
fn files_are_bounded_and_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = [
        "--machine",
        MACHINE,
        "--model",
        "deepseek-v3-fp8",
        "--tp",
        "8",
    ];
    for device in ["/dev/zero", "/dev/urandom"] {
        if Path::new(device).exists() {
            let out = sim(&["validate", "--records", device]);
            assert_eq!(out.status.code(), Some(2), "{device}");
        }
    }
    refused(
        &["validate", "--records", &d.display().to_string()],
        "folder",
    );
    refused(
        &["validate", "--records", "/no/such/records.json"],
        "no/such",
    );
    // a runs file over the measured-files limit: refused from its size, nothing read
    let big = d.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    refused(
        &[
            &["validate"][..],
            &m,
            &["--measured", &big.display().to_string()],
        ]
        .concat(),
        "big.json",
    );
    let Ok(status) = Command::new("mkfifo").arg(d.join("pipe")).status() else {
        return; // no mkfifo here: the rest needs named pipes
    };
    assert!(status.success());
    let pipe = d.join("pipe").display().to_string();
    refused(&["validate", "--records", &pipe], "named pipe");
    refused(
        &[&["run"][..], &m, &["--server-args-file", &pipe]].concat(),
        "named pipe",
    );
    refused(
        &[
            "validate",
            "--server-log",
            &pipe,
            "--machine",
            MACHINE,
            "--model",
            "deepseek-v3-fp8",
        ],
        "named pipe",
    );
    // a pipe with a writer (as `<(…)`), read twice by one command: the run's recorded flags,
    // then its points; both see the text
    let runs = json!({"runs": [{"id": "r", "layout": "--tp 8", "flags": "--disable-cuda-graph",
        "workload": {"max_concurrency": 2, "input_len": 128, "output_len": 32},
        "metrics": {"output_tok_s": "40"}}]});
    Command::new("mkfifo").arg(d.join("runs")).status().unwrap();
    let fifo = d.join("runs");
    let writer = {
        let fifo = fifo.clone();
        let text = runs.to_string();
        std::thread::spawn(move || std::fs::write(fifo, text))
    };
    let spec = format!("{}#r", fifo.display());
    let out = sim(&[&["validate"][..], &m, &["--measured", &spec]].concat());
    let _ = writer.join();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("recorded flags apply: --tp 8 --disable-cuda-graph"),
        "{err}"
    );
}

/// The peak of every child this test process waited for so far (the tests run in parallel, so
/// at least the heaviest inputs, run here), under 1 GB.
#[test]
#[cfg(unix)]
fn no_case_grows_past_one_gigabyte() {
    let m = [
        "--machine",
        MACHINE,
        "--model",
        "deepseek-v3-fp8",
        "--tp",
        "8",
    ];
    let _ = sim(&[&["run"][..], &m, &["--num-prompts", "1000000000"]].concat());
    let _ = sim(&[
        &["predict"][..],
        &m,
        &["--batch", "65536", "--context", "64"],
    ]
    .concat());
    let _ = sim(&["validate", "--records", "/dev/zero"]);
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    let peak_bytes = usage.ru_maxrss as u64 * 1024; // kilobytes on Linux
    assert!(peak_bytes < 1 << 30, "a child peaked at {peak_bytes} bytes");
}

/// A record's `engine.moe_kernel_config` (a tuning PR's before / after rows): `default` is
/// priced where measured (bf16 experts on the H200) and said, `tuned` and unstated are the
/// tables', and a word the field does not know skips that record with why, never read as
/// unstated.
#[test]
fn a_record_s_moe_kernel_config_is_read_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let qwen = |id: &str, config: Value| {
        let mut engine = json!({"name": "sglang", "flags": "--tp-size 4"});
        if !config.is_null() {
            engine["moe_kernel_config"] = config;
        }
        json!({
            "id": id,
            "hardware": {"machine": MACHINE, "count": 4},
            "engine": engine,
            "model": "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "quant": "bf16",
            "parallel": {"tp": 4},
            "workload": {"input_len": 1000, "output_len": 2000, "concurrency": 8,
                         "dataset": "python3 -m sglang.bench_serving --dataset-name random --random-range-ratio 1",
                         "num_prompts": 100},
            "metrics": {"output_tok_s": "1000"}
        })
    };
    let path = write(
        dir.path(),
        "records.json",
        &json!({"records": [
            qwen("default", json!("default")),
            qwen("tuned", json!("tuned")),
            qwen("unstated", Value::Null),
            qwen("word", json!("sometimes")),
        ]})
        .to_string(),
    );
    let board = json_of(&["validate", "--records", &path, "--format", "json"]);
    let predicted = |id: &str| comparison_of(&board, id)["predicted"].as_f64().unwrap();
    assert!(predicted("default") < predicted("tuned"));
    assert_eq!(predicted("tuned"), predicted("unstated"));
    assert!(notes_of(&board, "default").contains("default Triton config"));
    assert!(!notes_of(&board, "tuned").contains("default Triton config"));
    let skipped = board.to_string();
    assert!(
        skipped.contains("sometimes"),
        "the unknown word is named: {board:#}"
    );
}
