//! Issue 21's "what a user looks at": tables fit the terminal (`COLUMNS`, else 100 columns; long
//! notes go under the table, numbered), `advise --question ep` shows the layouts its verdict cites, its `try:` line
//! names the model, and `--question scale` weighs the layout the ranking puts first.

use crate::common;

use common::{sim_output_at, sim_stdout};

/// The width with no `COLUMNS` in the environment.
const DEFAULT_COLUMNS: usize = 100;

fn assert_tables_fit(what: &str, text: &str, columns: usize) {
    for line in text
        .lines()
        .filter(|l| l.starts_with(['|', '+', '│', '┌', '└', '├', '╞']))
    {
        assert!(line.chars().count() <= columns, "{what}: {line}");
    }
}

/// `advise --question ep` for GLM-5-NVFP4 on the VM preset, few draws.
const VM_EP: [&str; 9] = [
    "advise",
    "--machine",
    "rtx-pro-6000-x8-vm-hostbounce",
    "--model",
    "glm-5-nvfp4",
    "--question",
    "ep",
    "--draws",
    "10",
];

/// Stdout of `sim args…` with no `COLUMNS` set, as a pipe or a bare shell runs it.
fn sim_stdout_default_width(args: &[&str]) -> String {
    let (code, out, err) = sim_output_at(args, None);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// Every line of `text` but a `try:` line (a command to copy whole) fits `columns`, unless it is
/// one word after its prefix or indent (a path, a module list without spaces).
fn assert_prose_fits(what: &str, text: &str, columns: usize) {
    for line in text.lines().filter(|l| !l.starts_with("try:")) {
        let words = line.split_whitespace().count();
        assert!(
            line.chars().count() <= columns || words <= 2,
            "{what}: {} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn notes_and_verdicts_wrap_to_columns_like_the_tables() {
    let (code, out, err) = sim_output_at(&VM_EP, Some("80"));
    assert_eq!(code, 0, "{err}");
    assert_prose_fits("advise --question ep at COLUMNS=80", &out, 80);
    assert_prose_fits("advise --question ep stderr at COLUMNS=80", &err, 80);
    // the verdict sentence went onto more than one line, none of its words lost
    assert!(
        out.lines().any(|l| l.starts_with("No: EP8 is slower")),
        "{out}"
    );
    let args = [
        "predict",
        "--machine",
        "rtx-pro-6000-x8-baremetal",
        "--model",
        "glm-5-nvfp4",
        "--tp",
        "8",
        "--batch",
        "8",
        "--context",
        "2000",
    ];
    let (code, out, err) = sim_output_at(&args, Some("80"));
    assert_eq!(code, 0, "{err}");
    assert_prose_fits("predict at COLUMNS=80", &out, 80);
    assert_prose_fits("predict stderr at COLUMNS=80", &err, 80);
    // a wrapped note's continuation sits under its text, not at the margin
    assert!(
        err.starts_with("note: ") && err.contains("\n      --"),
        "{err}"
    );
}

#[test]
fn tables_follow_columns() {
    let args = VM_EP;
    let (code, narrow, err) = sim_output_at(&args, Some("80"));
    assert_eq!(code, 0, "{err}");
    assert_tables_fit("advise at COLUMNS=80", &narrow, 80);
    let wide = sim_stdout(&args);
    let widest = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with(['|', '+']))
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0)
    };
    assert!(
        widest(&wide) > widest(&narrow),
        "COLUMNS=120 lays out no wider than 80"
    );
}

#[test]
fn advise_sweep_and_predict_tables_fit_the_default_width() {
    let vm = [
        "--machine",
        "rtx-pro-6000-x8-vm-hostbounce",
        "--model",
        "glm-5-nvfp4",
    ];
    let advise: Vec<&str> = ["advise"]
        .iter()
        .chain(&vm)
        .copied()
        .chain(["--question", "ep", "--draws", "10"])
        .collect();
    let out = sim_stdout_default_width(&advise);
    assert_tables_fit("advise", &out, DEFAULT_COLUMNS);
    // rejected layouts point to numbered notes under the table
    assert!(out.contains("| [1]"), "{out}");
    assert!(
        out.contains("\n[1] glm-5-nvfp4 does not fit on TP8+EP2+DPA"),
        "{out}"
    );
    let sweep: Vec<&str> = ["sweep"]
        .iter()
        .chain(&vm)
        .copied()
        .chain([
            "--layout",
            "all",
            "--workloads",
            "1000:100",
            "--max-concurrency",
            "8",
            "--num-prompts",
            "16",
        ])
        .collect();
    assert_tables_fit("sweep", &sim_stdout_default_width(&sweep), DEFAULT_COLUMNS);
    let predict: Vec<&str> = ["predict"]
        .iter()
        .chain(&vm)
        .copied()
        .chain(["--layout", "all", "--batch", "32", "--context", "2048"])
        .collect();
    let out = sim_stdout_default_width(&predict);
    assert_tables_fit("predict", &out, DEFAULT_COLUMNS);
    assert!(out.contains("┆ [1]"), "{out}");
}

#[test]
fn the_ep_answer_shows_what_it_cites_and_names_the_model() {
    let out = sim_stdout(&VM_EP);
    let sentence = out
        .lines()
        .find(|l| l.starts_with("No:") || l.starts_with("Yes:") || l.starts_with("Depends"))
        .unwrap();
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| "))
        .filter_map(|l| l.split('|').nth(2).map(str::trim))
        .collect();
    for cited in ["EP8", "TP4xPP2", "TP8"] {
        assert!(sentence.contains(cited), "{sentence}");
        assert!(
            rows.contains(&cited),
            "{cited} cited but not in the table: {rows:?}"
        );
    }
    assert!(
        out.contains("try: python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 "),
        "{out}"
    );
    assert!(!out.contains("<model>"));
}

#[test]
fn the_scale_answer_weighs_the_top_ranked_layout() {
    let out = sim_stdout(&[
        "advise",
        "--machine",
        "rtx-pro-6000-x8x2-400gbe",
        "--model",
        "glm-5-nvfp4",
        "--question",
        "scale",
        "--draws",
        "10",
    ]);
    let first = out
        .lines()
        .find(|l| l.starts_with("| 1 "))
        .and_then(|l| l.split('|').nth(2))
        .map(str::trim)
        .unwrap()
        .to_string();
    let layout_row = out.lines().find(|l| l.starts_with("| layout ")).unwrap();
    assert!(
        layout_row.contains(&format!(" {first} ")),
        "top-ranked {first}: {layout_row}"
    );
}
