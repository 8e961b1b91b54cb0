//! Issue 21's "what a user looks at": tables fit a 120-column terminal (long notes go under the
//! table, numbered), `advise --question ep` shows the layouts its verdict cites, its `try:` line
//! names the model, and `--question scale` weighs the layout the ranking puts first.

mod common;

use common::sim_stdout;

const COLUMNS: usize = 120;

fn assert_tables_fit(what: &str, text: &str) {
    for line in text
        .lines()
        .filter(|l| l.starts_with(['|', '+', '│', '┌', '└', '├', '╞']))
    {
        assert!(line.chars().count() <= COLUMNS, "{what}: {line}");
    }
}

#[test]
fn advise_sweep_and_predict_tables_fit_120_columns() {
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
    let out = sim_stdout(&advise);
    assert_tables_fit("advise", &out);
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
    assert_tables_fit("sweep", &sim_stdout(&sweep));
    let predict: Vec<&str> = ["predict"]
        .iter()
        .chain(&vm)
        .copied()
        .chain(["--layout", "all", "--batch", "32", "--context", "2048"])
        .collect();
    let out = sim_stdout(&predict);
    assert_tables_fit("predict", &out);
    assert!(out.contains("┆ [1]"), "{out}");
}

#[test]
fn the_ep_answer_shows_what_it_cites_and_names_the_model() {
    let out = sim_stdout(&[
        "advise",
        "--machine",
        "rtx-pro-6000-x8-vm-hostbounce",
        "--model",
        "glm-5-nvfp4",
        "--question",
        "ep",
        "--draws",
        "10",
    ]);
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
