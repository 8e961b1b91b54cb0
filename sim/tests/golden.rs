//! The golden suite (issue 22): ~36 `sim` commands covering every subcommand and output format
//! (launch lines, the server log, the records file, `predict --layout all`, the three advise
//! questions, `report`), each run and compared byte for byte with the output committed under
//! `tests/golden/`. A structural change must leave every output as it was, or the commit that
//! changes one says why. Regenerate after an intended change with
//! `SHARDWISE_BLESS_GOLDEN=1 cargo test -p sim --test suite golden::`, then read `git diff`.
//!
//! `tests/golden/cases.txt` holds one case a line: `name|arguments` (shell quoting, `$REPO` for
//! the repository root, `$OUT` for a fresh temporary folder). `name.txt` keeps the exit code,
//! stdout and stderr with both paths put back as `$REPO` / `$OUT`; files a command writes under
//! `$OUT` are kept as one line each (path, size, FNV-1a 64 hash), whole files beside them where
//! they are small text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
/// Written files up to this size are kept whole in the golden text; larger ones by hash only.
const WHOLE_FILE_BYTES: u64 = 16 * 1024;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim sits in the workspace")
        .to_path_buf()
}

/// Splits a line as a POSIX shell would for the quoting the cases use (double quotes only).
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote in golden case: {line}");
    if any {
        words.push(word);
    }
    words
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every file under `dir`, by path relative to it, sorted.
fn files_under(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read $OUT") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, path);
            }
        }
    }
    out
}

/// Runs one case and renders everything it produced as the golden text.
fn render(args: &str) -> String {
    let repo = repo();
    let out = tempfile::tempdir().expect("temp dir");
    let repo_s = repo.to_string_lossy().into_owned();
    let out_s = out.path().to_string_lossy().into_owned();
    let expanded = args.replace("$REPO", &repo_s).replace("$OUT", &out_s);
    let words = split_words(&expanded);
    // laid out for a 120-column terminal whatever the terminal running the tests says
    let result = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(&words)
        .env("COLUMNS", "120")
        .current_dir(&repo)
        .output()
        .expect("sim runs");
    let clean = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .replace(&out_s, "$OUT")
            .replace(&repo_s, "$REPO")
    };
    let mut text = String::new();
    writeln!(text, "$ sim {args}").unwrap();
    writeln!(text, "exit: {}", result.status.code().unwrap_or(-1)).unwrap();
    writeln!(text, "--- stdout").unwrap();
    text.push_str(&clean(&result.stdout));
    writeln!(text, "--- stderr").unwrap();
    text.push_str(&clean(&result.stderr));
    for (rel, path) in files_under(out.path()) {
        let bytes = std::fs::read(&path).expect("read written file");
        writeln!(
            text,
            "--- file $OUT/{rel}: {} bytes, fnv1a64 {:016x}",
            bytes.len(),
            fnv1a64(&bytes)
        )
        .unwrap();
        if (bytes.len() as u64) <= WHOLE_FILE_BYTES && !rel.ends_with(".svg") {
            text.push_str(&clean(&bytes));
        }
    }
    text
}

fn cases() -> Vec<(String, String)> {
    let list = std::fs::read_to_string(Path::new(GOLDEN).join("cases.txt"))
        .expect("tests/golden/cases.txt is part of the repository");
    list.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, args) = l.split_once('|').expect("a case is name|arguments");
            (name.to_string(), args.to_string())
        })
        .collect()
}

#[test]
fn every_golden_command_prints_what_it_printed() {
    let bless = std::env::var_os("SHARDWISE_BLESS_GOLDEN").is_some();
    let cases = cases();
    assert!(
        cases.len() >= 30,
        "the golden suite has {} cases",
        cases.len()
    );
    let mut changed = Vec::new();
    for (name, args) in &cases {
        let now = render(args);
        let path = Path::new(GOLDEN).join(format!("{name}.txt"));
        if bless {
            std::fs::write(&path, &now).expect("golden written");
            continue;
        }
        let before = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing: run SHARDWISE_BLESS_GOLDEN=1 cargo test -p sim --test suite golden::",
                path.display()
            )
        });
        if before != now {
            let line = before
                .lines()
                .zip(now.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(before.lines().count().min(now.lines().count()));
            let was = before.lines().nth(line).unwrap_or("<end>");
            let is = now.lines().nth(line).unwrap_or("<end>");
            changed.push(format!(
                "{name}: line {}: was `{was}`, now `{is}`",
                line + 1
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "{} golden outputs changed (bless with SHARDWISE_BLESS_GOLDEN=1 if intended):\n{}",
        changed.len(),
        changed.join("\n")
    );
}

#[test]
fn golden_words_split_as_the_shell_does() {
    assert_eq!(
        split_words(r#"run --server-args "a b  c" --x=1"#),
        vec!["run", "--server-args", "a b  c", "--x=1"]
    );
    assert_eq!(split_words(r#"--v """#), vec!["--v", ""]);
}
