//! Helpers shared by the command-line tests: run the `sim` binary as a user would.
#![allow(dead_code)]

use assert_cmd::Command;

/// A short bench_serving workload the `try:`-line tests replay: 48 random prompts of 512 tokens
/// in, 64 out, 16 at a time.
pub const SHORT_WORKLOAD: [&str; 8] = [
    "--num-prompts",
    "48",
    "--random-input-len",
    "512",
    "--random-output-len",
    "64",
    "--max-concurrency",
    "16",
];

/// Exit code, stdout and stderr of `sim args…`, its tables laid out for a 120-column terminal
/// whatever the terminal running the tests says (`terminal_output.rs` checks the default width).
pub fn sim_output(args: &[&str]) -> (i32, String, String) {
    sim_output_at(args, Some("120"))
}

/// `sim` ready for arguments, its tables laid out for a 120-column terminal (as [`sim_output`]).
pub fn sim_cmd() -> Command {
    let mut cmd = Command::cargo_bin("sim").unwrap();
    cmd.env("COLUMNS", "120");
    cmd
}

/// A terminal width at which no note or verdict wraps: for tests that match a long phrase of
/// one whole (`tables::wrap` breaks prose at the width; `terminal_output.rs` checks that).
pub const UNWRAPPED: &str = "1000";

/// As [`sim_output`] with `COLUMNS` set to `columns`, or unset for `None`.
pub fn sim_output_at(args: &[&str], columns: Option<&str>) -> (i32, String, String) {
    let mut cmd = Command::cargo_bin("sim").unwrap();
    match columns {
        Some(c) => cmd.env("COLUMNS", c),
        None => cmd.env_remove("COLUMNS"),
    };
    let out = cmd.args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Stdout of `sim args…`, which must succeed (its stderr in the panic otherwise).
pub fn sim_stdout(args: &[&str]) -> String {
    let (code, out, err) = sim_output(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// Stdout of `sim args…` (which must succeed) read as JSON: for `--format json` runs.
pub fn sim_json(args: &[&str]) -> serde_json::Value {
    let out = sim_stdout(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

/// The rows of a carried kernel table `data/observations/FILE` (header skipped), each mapped by
/// `row(fields, number)`, where `number(i)` is field `i` as a number (a test fails naming the
/// file and line when it is not one).
pub fn data_csv_rows<T>(file: &str, row: impl Fn(&[&str], &dyn Fn(usize) -> f64) -> T) -> Vec<T> {
    let path = format!("{}/../data/observations/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let n = |i: usize| {
                f[i].parse::<f64>()
                    .unwrap_or_else(|_| panic!("{path}: {l}"))
            };
            row(&f, &n)
        })
        .collect()
}

/// Every record of the records file at `path` cites one of `pages` (repository, path and commit
/// prefixes): an allowlist, since `shared/HELD-OUT.md` (outside the repository) reserves other
/// pages of the same wikis and naming them here would carry them in.
pub fn assert_every_record_cites_one_of(path: &std::path::Path, pages: &[&str]) {
    let set = sim::records::RecordSet::load(path).unwrap();
    for r in &set.records {
        let source = r.source.as_deref().unwrap_or("");
        assert!(
            pages.iter().any(|p| source.starts_with(p)),
            "{}: cites {source:?}, not one of {pages:?}",
            r.id
        );
    }
}

/// The records of the file at `path` that `keep` selects (there must be `count`), each expressed
/// (it must express where `must_express`, else it is skipped): for the tests that check how a
/// batch of one source's records was read.
pub fn expressed_records(
    path: &std::path::Path,
    keep: impl Fn(&sim::records::Record) -> bool,
    count: usize,
    must_express: bool,
) -> Vec<(sim::records::Record, sim::records::Expressed)> {
    let set = sim::records::RecordSet::load(path).unwrap();
    let kept: Vec<_> = set.records.into_iter().filter(|r| keep(r)).collect();
    assert_eq!(kept.len(), count, "records kept");
    kept.into_iter()
        .filter_map(|r| match sim::records::express(&r) {
            Ok(e) => Some((r, e)),
            Err(why) => {
                assert!(!must_express, "{}: {why:?}", r.id);
                None
            }
        })
        .collect()
}

/// Every record of the file at `path` expresses unless its model or quantization words name one
/// of `foreign` weight formats (no preset describes them), and those are refused as unknown
/// models rather than read as another format; returns the expressed ones' (id, model preset).
pub fn express_unless_foreign_weights(
    path: &std::path::Path,
    foreign: &[&str],
) -> Vec<(String, String)> {
    express_unless(path, |r| {
        let words = format!(
            "{} {}",
            r.model.as_deref().unwrap_or(""),
            r.quant.as_deref().unwrap_or("")
        )
        .to_ascii_lowercase();
        foreign.iter().any(|f| words.contains(f))
    })
}

/// [`express_unless_foreign_weights`] with the records to be refused (as an unknown model)
/// picked by `refused`.
pub fn express_unless(
    path: &std::path::Path,
    refused: impl Fn(&sim::records::Record) -> bool,
) -> Vec<(String, String)> {
    let set = sim::records::RecordSet::load(path).unwrap();
    let mut expressed = Vec::new();
    for r in &set.records {
        let named = refused(r);
        let words = format!("{:?} {:?}", r.model, r.quant);
        match sim::records::express(r) {
            Ok(e) => {
                assert!(!named, "{} expressed despite {words}", r.id);
                expressed.push((r.id.clone(), e.model));
            }
            Err(why) => {
                assert!(named, "{} does not express: {why:?}", r.id);
                let unknown = sim::records::UnexpressibleKind::UnknownModel;
                assert_eq!(why[0].kind, unknown, "{}", r.id);
            }
        }
    }
    expressed
}

/// Every expressed record of `set` whose id says its BF16 linears were converted to MXFP8 at
/// load (`onlinemxfp8`) runs with its flags' linear MXFP8 spec, and every other without one.
pub fn assert_online_mxfp8_rows_carry_their_spec(set: &sim::records::RecordSet) {
    for r in &set.records {
        let Ok(e) = sim::records::express(r) else {
            continue;
        };
        let online = e.knobs.online_quant.as_ref().and_then(|q| q.linear);
        let want =
            r.id.contains("onlinemxfp8")
                .then_some(models::WeightFormat::Mxfp8);
        assert_eq!(online, want, "{}", r.id);
    }
}

/// Whether a record's notes hold `needle` (the citation of what its launch was read from).
pub fn notes_hold(r: &sim::records::Record, needle: &str) -> bool {
    r.notes.as_deref().is_some_and(|n| n.contains(needle))
}

/// The launch runs vLLM's PCIe one-shot all-reduce up to 64 KB (`VLLM_ENABLE_PCIE_ALLREDUCE=1`,
/// `VLLM_PCIE_ONESHOT_ALLREDUCE_MAX_SIZE=64KB`), as the community launches state it.
pub fn assert_vllm_one_shot_up_to_64k(id: &str, knobs: &sim::engine::LaunchKnobs) {
    let ar = knobs
        .pcie_all_reduce
        .unwrap_or_else(|| panic!("{id}: no PCIe all-reduce read"));
    assert_eq!(ar.engine, sim::engine::Engine::Vllm, "{id}");
    assert_eq!(ar.max_bytes, Some(64 * 1024), "{id}");
}

/// The MTP-on records of the records file at `path` that run on an acceptance of their own
/// (`accept_length` in their metrics), `(id, length)` sorted by id; every other MTP-on record is
/// checked to run on the prior and every MTP-off one to run without speculation.
pub fn records_on_their_own_acceptance(path: &std::path::Path) -> Vec<(String, f64)> {
    use sim::records::speculation::AcceptOrigin;
    use sim::scoreboard::{ScoreOptions, score};
    let set = sim::records::RecordSet::load(path).unwrap();
    let board = score(&set, &ScoreOptions { engine: None });
    let mut measured = Vec::new();
    for c in board.comparisons.iter().filter(|c| c.primary) {
        let r = set.records.iter().find(|r| r.id == c.id).unwrap();
        let Some(spec) = &c.speculation else {
            assert!(!r.parallel.mtp.unwrap_or(false), "{}", c.id);
            continue;
        };
        if r.metrics.contains_key("accept_length") {
            assert_eq!(spec.accept, AcceptOrigin::Measured, "{}", c.id);
            measured.push((c.id.clone(), spec.accept_length));
        } else {
            assert_eq!(spec.accept, AcceptOrigin::Assumed, "{}", c.id);
        }
    }
    measured.sort_by(|a, b| a.0.cmp(&b.0));
    measured
}

/// `sim predict --format json` of a batch of `batch` at `context` tokens for launch line `line` on
/// the bare-metal RTX PRO 6000 box, with `extra` arguments.
pub fn predict_line_json(
    line: &str,
    batch: &str,
    context: &str,
    extra: &[&str],
) -> serde_json::Value {
    let mut args = vec![
        "predict",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--server-args",
        line,
        "--batch",
        batch,
        "--context",
        context,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    sim_json(&args)
}

/// `sim predict` of one batch of 4 at 1000 tokens for launch line `line` on the PCIe box, its
/// tables laid out for `columns` (as [`sim_output_at`]).
pub fn predict_line_at(line: &str, columns: Option<&str>) -> (i32, String, String) {
    sim_output_at(
        &[
            "predict",
            "--machine",
            "rtx-pro-6000-x8-baremetal",
            "--batch",
            "4",
            "--context",
            "1000",
            "--server-args",
            line,
        ],
        columns,
    )
}

/// A records file of `validation/` by name.
pub fn validation_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../validation")
        .join(name)
}

/// The stored error model (`validation/error-model.json`) names no `validation/` file `name`:
/// nothing was fitted on it, so its interval figures are out of sample.
pub fn assert_not_in_the_error_model(name: &str) {
    let model = std::fs::read_to_string(validation_file("error-model.json")).unwrap();
    assert!(!model.contains(name), "{name} is in the error model's fit");
}

/// Every MTP-on record of the file at `path` has exactly one MTP-off twin at its load (same
/// workload, hardware, model and quant) in its `comparison_group`, and each such group holds
/// just that pair; returns how many MTP-on records there are.
pub fn assert_mtp_on_records_have_one_off_twin_each(path: &std::path::Path) -> usize {
    let set = sim::records::RecordSet::load(path).unwrap();
    let mut on_records = 0;
    for on in set.records.iter().filter(|r| r.parallel.mtp == Some(true)) {
        on_records += 1;
        let group = on
            .comparison_group
            .as_deref()
            .unwrap_or_else(|| panic!("{}: MTP on without a comparison group", on.id));
        let in_group = || {
            set.records
                .iter()
                .filter(move |r| r.comparison_group.as_deref() == Some(group))
        };
        let twins: Vec<_> = in_group()
            .filter(|r| r.parallel.mtp == Some(false))
            .filter(|r| r.workload == on.workload)
            .filter(|r| r.hardware == on.hardware && r.model == on.model && r.quant == on.quant)
            .collect();
        assert_eq!(
            twins.len(),
            1,
            "{}: {} MTP-off twins at its load in {group}",
            on.id,
            twins.len()
        );
        assert_eq!(twins[0].workload.concurrency, on.workload.concurrency);
        assert_eq!(in_group().count(), 2, "{group}: one on/off pair per group");
    }
    on_records
}

/// The served model of a vLLM launch line `line` at TP 8 on the RTX PRO 6000 bare-metal box, the
/// model's spec given (`ModelSpec` of the line's checkpoint or a preset).
pub fn vllm_served_tp8(spec: &models::ModelSpec, line: &str) -> sim::cost::ServedModel {
    let machine = sim::machine::Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let l = sim::engine::vllm::args::VllmLine::parse(line)
        .unwrap()
        .unwrap();
    let layout = models::Layout {
        tp: 8,
        pp: 1,
        ep: 1,
        dp_attention: false,
    };
    let (opts, _) = l.server_options(&layout, &machine).unwrap();
    sim::cost::ServedModel::new(&machine, spec, layout, &opts, sim::cost::Knobs::default()).unwrap()
}

/// A vLLM one-stream decode record on the 8-GPU RTX PRO 6000 box at TP 8 (llm_decode_bench at
/// context 0), with the checkpoint, quantization words and flags given.
pub fn vllm_tp8_decode_record(model: &str, quant: &str, flags: &str) -> sim::records::Record {
    serde_json::from_value(serde_json::json!({
        "id": "tp8-decode",
        "hardware": {"gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "count": 8,
                     "p2p": "enabled", "virtualized": false},
        "engine": {"name": "vllm", "flags": flags},
        "model": model,
        "quant": quant,
        "parallel": {"tp": 8, "pp": 1, "ep": 1, "dp": 1, "mtp": false},
        "workload": {"input_len": 0, "output_len": 256, "concurrency": 1,
                     "dataset": "llm_decode_bench decode"},
        "metrics": {"output_tok_s": "90.0"}
    }))
    .unwrap()
}

/// The records file `name` parses whole, holds `n` records, and every one expresses on the
/// model preset `preset`.
pub fn assert_every_record_expresses_on(name: &str, n: usize, preset: &str) {
    let path = validation_file(name);
    let set = sim::records::RecordSet::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(set.unreadable.is_empty(), "{:?}", set.unreadable);
    assert_eq!(set.records.len(), n, "{name}");
    let expressed = express_unless_foreign_weights(&path, &[]);
    assert_eq!(expressed.len(), n, "{name}");
    for (id, model) in &expressed {
        assert_eq!(model, preset, "{id}");
    }
}
