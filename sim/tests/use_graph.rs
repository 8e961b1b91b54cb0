//! The module graph of `sim`, `probe`, `models` and `reports`, read from their sources (issues 22
//! and 33): no import circle between sibling modules in any crate, no command file of `sim`'s CLI
//! importing another, no module importing one on a floor above it, and no function outside tests
//! over 100 lines beyond the ones listed when the check was written (a ratchet). Run with
//! `-- --nocapture` to print the graph and the long functions.
//!
//! An edge `a → b` is a path into `b` written in `a` (`use crate::b::…`, `crate::b::f()`,
//! `super::b`, `sim::b` in the binary); comments are not read. A path into a module's own
//! ancestors (the items of a `mod.rs`) or its own children is no sibling edge; a name a module
//! re-exports (`pub use model::CostModel`) is followed to the module that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path from the crate root (`["cost", "model"]`); the binary's `cli` sits beside the
/// library's top-level modules.
type ModPath = Vec<String>;

/// Where a name re-exported from another crate leads: no module of this one.
const EXTERNAL: &str = "<another crate>";

/// One crate's modules: each file's module, the re-exported names, and the paths each file
/// writes, resolved to modules.
struct Crate {
    name: &'static str,
    modules: BTreeSet<ModPath>,
    reexports: BTreeMap<(ModPath, String), ModPath>,
    refs: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

/// `src/a/b.rs` → `[a, b]`, `src/a/mod.rs` → `[a]`, `lib.rs` and `main.rs` → `[]`.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments (line, doc and block), string and char literals kept.
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'#' | b'"'))
                && (i == 0 || !is_ident(b[i - 1])) =>
            {
                // raw string r#"…"#
                let start = i;
                i += 1;
                let mut hashes = 0;
                while b.get(i) == Some(&b'#') {
                    hashes += 1;
                    i += 1;
                }
                if b.get(i) != Some(&b'"') {
                    out.extend_from_slice(&b[start..i]);
                    continue;
                }
                i += 1;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                while i < b.len() && !b[i..].starts_with(&close) {
                    i += 1;
                }
                i += close.len();
                out.extend_from_slice(b"\"\"");
            }
            b'"' => {
                // the literal's text is no path: keep the quotes only
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.extend_from_slice(b"\"\"");
            }
            b'\'' if b.get(i + 1) == Some(&b'\\') || b.get(i + 2) == Some(&b'\'') => {
                // a char literal ('x', '\n', '\''); otherwise a lifetime
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
                out.extend_from_slice(b"' '");
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The paths written at `text[at..]` (just after a root such as `crate`), each as its segments:
/// `::a::b` → `[[a, b]]`, `::{a::X, b}` → `[[a, X], [b]]`.
fn paths_at(text: &str, at: usize) -> Vec<Vec<String>> {
    let b = text.as_bytes();
    let mut i = at;
    let mut segs = Vec::new();
    loop {
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        if !text[i..].starts_with("::") {
            return vec![segs];
        }
        i += 2;
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        if b.get(i) == Some(&b'{') {
            let mut depth = 0;
            let start = i + 1;
            let mut end = start;
            for (j, &c) in b.iter().enumerate().skip(i) {
                match c {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = j;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let mut out = Vec::new();
            for part in split_top_level(&text[start..end]) {
                // each element is a path relative to the group's prefix: parse it as `::part`
                let sub = format!("::{}", part.trim());
                for p in paths_at(&sub, 0) {
                    let mut full = segs.clone();
                    full.extend(p.into_iter().filter(|s| s != "self"));
                    out.push(full);
                }
            }
            return out;
        }
        let start = i;
        while b.get(i).is_some_and(|&c| is_ident(c)) {
            i += 1;
        }
        if start == i {
            return vec![segs]; // `*` or a generic
        }
        segs.push(text[start..i].to_string());
    }
}

fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Every absolute path `text` writes from module `here`: `crate::…`, `super::…`, `self::…`, and
/// `<lib>::…` where the file is the library's binary (`lib` is the library's name).
fn absolute_paths(text: &str, here: &ModPath, lib: Option<&str>) -> Vec<Vec<String>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &text[start..i];
        let base: Option<ModPath> = match word {
            "crate" => Some(Vec::new()),
            "self" => Some(here.clone()),
            "super" => {
                // `super::super::x`: climb once per `super`
                let mut m = here.clone();
                m.pop();
                let mut j = i;
                while text[j..].starts_with("::super") {
                    m.pop();
                    j += "::super".len();
                }
                i = j;
                Some(m)
            }
            w if Some(w) == lib => Some(Vec::new()),
            _ => None,
        };
        if let Some(base) = base {
            for p in paths_at(text, i) {
                let mut full = base.clone();
                full.extend(p);
                out.push(full);
            }
        }
    }
    out
}

impl Crate {
    /// Reads `src` of crate `name`; `bin_modules` are the modules only its binary declares
    /// (their `crate::` is the binary's root and the library is reached as `lib_name::`).
    fn read(name: &'static str, src: &Path, bin_modules: &[&str]) -> Crate {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let texts: Vec<(PathBuf, ModPath, String)> = files
            .into_iter()
            .map(|f| {
                let m = module_of(src, &f);
                let t = strip_comments(&std::fs::read_to_string(&f).unwrap());
                (f, m, t)
            })
            .collect();
        let modules: BTreeSet<ModPath> = texts.iter().map(|(_, m, _)| m.clone()).collect();
        let mut c = Crate {
            name,
            modules,
            reexports: BTreeMap::new(),
            refs: BTreeMap::new(),
        };
        for (f, here, text) in &texts {
            if f.ends_with("main.rs") && here.is_empty() {
                continue; // the binary's root only declares its modules
            }
            let in_bin = here
                .first()
                .is_some_and(|m| bin_modules.contains(&m.as_str()));
            let lib = in_bin.then_some(name);
            // `pub use …;` statements, each from its line's start to its `;`
            let starts = text.match_indices('\n').map(|(i, _)| i + 1).chain([0]);
            for start in starts {
                let s = text[start..].trim_start_matches([' ', '\t']);
                let Some(rest) = s
                    .strip_prefix("pub use ")
                    .or_else(|| s.strip_prefix("pub(crate) use "))
                else {
                    continue;
                };
                let rest = &rest[..rest.find(';').unwrap_or(rest.len())];
                let root = format!("::{}", rest.trim());
                for p in paths_at(&root, 0) {
                    let mut child = here.clone();
                    child.extend(p.first().cloned());
                    let abs = match p.first().map(String::as_str) {
                        Some("crate") => p[1..].to_vec(),
                        Some("super" | "self") => absolute_paths(rest, here, lib)
                            .into_iter()
                            .next()
                            .unwrap_or_default(),
                        _ if c.modules.contains(&child) => {
                            here.iter().cloned().chain(p.iter().cloned()).collect()
                        }
                        // another crate's item (`pub use models::units::fmt_bytes`): a path
                        // through this name depends on that crate, not on this module
                        _ => vec![EXTERNAL.to_string()],
                    };
                    if let Some(last) = p.last() {
                        c.reexports.insert((here.clone(), last.clone()), abs);
                    }
                }
            }
            let paths = absolute_paths(text, here, lib);
            c.refs.entry(here.clone()).or_default().extend(paths);
        }
        let resolved: BTreeMap<ModPath, BTreeSet<ModPath>> = c
            .refs
            .iter()
            .map(|(m, ps)| (m.clone(), ps.iter().map(|p| c.resolve(p, 0)).collect()))
            .collect();
        c.refs = resolved;
        c
    }

    /// The module a path leads into: its longest module prefix, following re-exports.
    fn resolve(&self, path: &[String], depth: usize) -> ModPath {
        let mut m: ModPath = Vec::new();
        for seg in path {
            let mut next = m.clone();
            next.push(seg.clone());
            if self.modules.contains(&next) {
                m = next;
                continue;
            }
            if depth < 8
                && let Some(target) = self.reexports.get(&(m.clone(), seg.clone()))
                && target.as_slice() != path
            {
                if target.first().is_some_and(|t| t == EXTERNAL) {
                    return target.clone();
                }
                return self.resolve(target, depth + 1);
            }
            break;
        }
        m
    }

    /// Sibling edges under every parent: `parent → {(a, b)}` where a file inside child `a`
    /// writes a path into its sibling `b`.
    fn sibling_edges(&self) -> BTreeMap<ModPath, BTreeSet<(String, String)>> {
        let mut out: BTreeMap<ModPath, BTreeSet<(String, String)>> = BTreeMap::new();
        for (from, tos) in &self.refs {
            for to in tos {
                if to.first().is_some_and(|t| t == EXTERNAL) {
                    continue;
                }
                let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
                if common == from.len() || common == to.len() {
                    continue; // an ancestor's items or one's own children
                }
                out.entry(from[..common].to_vec())
                    .or_default()
                    .insert((from[common].clone(), to[common].clone()));
            }
        }
        out
    }
}

/// The circles (strongly connected sets of more than one node) of a graph.
fn circles(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for (a, b) in edges {
                if a == n && seen.insert(b) {
                    stack.push(b);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<&String>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for n in &nodes {
        let scc: Vec<String> = nodes
            .iter()
            .filter(|m| reaches[n].contains(*m) && reaches[*m].contains(n))
            .map(|m| (*m).clone())
            .collect();
        if scc.len() > 1 && !out.contains(&scc) {
            out.push(scc);
        }
    }
    out
}

fn print_graph(c: &Crate, edges: &BTreeMap<ModPath, BTreeSet<(String, String)>>) {
    println!("== {}: sibling imports (parent: a → b, …)", c.name);
    for (parent, es) in edges {
        let mut by_from: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
        for (a, b) in es {
            by_from.entry(a).or_default().push(b);
        }
        let name = if parent.is_empty() {
            format!("{} (top level)", c.name)
        } else {
            parent.join("::")
        };
        println!("{name}:");
        for (a, bs) in by_from {
            let bs: Vec<&str> = bs.iter().map(|s| s.as_str()).collect();
            println!("  {a} → {}", bs.join(", "));
        }
    }
}

/// Every circle between siblings, at every level, as `parent: a ↔ b ↔ …`.
fn all_circles(c: &Crate) -> Vec<String> {
    let edges = c.sibling_edges();
    print_graph(c, &edges);
    let mut out = Vec::new();
    for (parent, es) in &edges {
        for circle in circles(es) {
            let parent = if parent.is_empty() {
                format!("{} (top level)", c.name)
            } else {
                parent.join("::")
            };
            out.push(format!("{parent}: {}", circle.join(" ↔ ")));
        }
    }
    out
}

/// `sim`'s top-level modules from the lowest floor up: a module may import its own floor and
/// the floors below, never one above. Every top-level module is on one floor, so a new module
/// must be placed here.
const SIM_FLOORS: [(&str, &[&str]); 7] = [
    (
        "vocabulary: errors, numbers, presets, options, workloads, layouts, kernel efficiency, speculative acceptance",
        &[
            "error",
            "numtext",
            "nccl_graph_variant",
            "p2p_variant",
            "presets",
            "options",
            "b12x_build",
            "workload",
            "layout",
            "efficiency",
            "acceptance",
        ],
    ),
    (
        "inputs: the engines and their flags, machines, records",
        &["engine", "machine", "plausible", "records"],
    ),
    ("the cost of one iteration", &["cost"]),
    (
        "serving: the event simulation, sweeps, server logs, bench_serving files",
        &["serving", "sweep", "server_log", "bench_serving"],
    ),
    (
        "questions: memory verdicts, calibration, diagnosis, advice, the scoreboard",
        &[
            "memory_fit",
            "calibrate",
            "doctor",
            "advise",
            "scoreboard",
            "uncertainty",
        ],
    ),
    (
        "the scenario, a server log checked against it, and the report",
        &["scenario", "log_check", "report"],
    ),
    ("the command line (the binary)", &["cli"]),
];

/// `sim/src/cli/`'s modules that are no command: the helpers the commands share (argument
/// groups, the setup, tables, the exporters, output writers) and the parts of one command kept in their own file
/// (advise's scale question and tables, validate's scoreboard and acceptance views, the
/// `--server-log` mode calibrate and validate both run). A helper imports no command either.
const CLI_HELPERS: [&str; 17] = [
    "args",
    "export",
    "layout_args",
    "own_flags",
    "server_args",
    "setup",
    "tables",
    "layouts",
    "measured_args",
    "workload_args",
    "bench_out",
    "server_log_cmd",
    "scale",
    "advise_table",
    "advise_odds",
    "scoreboard",
    "validate_accept",
];

/// The command modules `sim/src/cli/mod.rs` dispatches to (`Command::Run(a) => run::run(a)`).
fn cli_commands() -> BTreeSet<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli/mod.rs");
    let text = std::fs::read_to_string(src).unwrap();
    text.lines()
        .filter_map(|l| {
            let (_, rhs) = l.trim().strip_prefix("Command::")?.split_once("=>")?;
            let (module, _) = rhs.trim().split_once("::")?;
            Some(module.to_string())
        })
        .collect()
}

fn sim() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    Crate::read("sim", &src, &["cli"])
}

fn probe() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe/src");
    Crate::read("probe", &src, &[])
}

#[test]
fn sim_has_no_import_circle() {
    let found = all_circles(&sim());
    assert!(
        found.is_empty(),
        "import circles in sim:\n{}",
        found.join("\n")
    );
}

/// Probe has no import circle at any level either (its three — backend ↔ cuda ↔ dist ↔ nccl ↔
/// run, summary ↔ summary_vm, nccl's cross ↔ runner ↔ worker — were broken by giving the
/// inventory, the NIC scan, the parent–worker protocol and the number formats their own
/// modules).
#[test]
fn probe_has_no_import_circle() {
    let found = all_circles(&probe());
    assert!(
        found.is_empty(),
        "import circles in probe:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_cli_file_imports_a_command_file() {
    let commands = cli_commands();
    assert!(
        commands.len() >= 8 && commands.contains("run") && commands.contains("advise"),
        "the commands were not read from cli/mod.rs: {commands:?}"
    );
    let c = sim();
    let cli = vec!["cli".to_string()];
    let children: BTreeSet<String> = c
        .modules
        .iter()
        .filter(|m| m.len() == 2 && m[0] == "cli")
        .map(|m| m[1].clone())
        .collect();
    let unplaced: Vec<&String> = children
        .iter()
        .filter(|m| !commands.contains(*m) && !CLI_HELPERS.contains(&m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "cli modules neither a command nor a listed helper: {unplaced:?} (add them to CLI_HELPERS \
         or to the Command enum)"
    );
    let edges = c.sibling_edges();
    let bad: Vec<String> = edges
        .get(&cli)
        .into_iter()
        .flatten()
        .filter(|(_, to)| commands.contains(to))
        .map(|(from, to)| format!("cli::{from} → cli::{to}"))
        .collect();
    println!("sim commands: {commands:?}; helpers: {CLI_HELPERS:?}");
    assert!(
        bad.is_empty(),
        "imports of a command file:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_sim_module_imports_a_floor_above_it() {
    let floor_of: BTreeMap<&str, usize> = SIM_FLOORS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, ms))| ms.iter().map(move |m| (*m, i)))
        .collect();
    let c = sim();
    let top: BTreeSet<&String> = c.modules.iter().filter_map(|m| m.first()).collect();
    let unplaced: Vec<&&String> = top
        .iter()
        .filter(|m| !floor_of.contains_key(m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "top-level modules on no floor: {unplaced:?} (add to SIM_FLOORS)"
    );
    let gone: Vec<&&str> = floor_of
        .keys()
        .filter(|m| !top.iter().any(|t| t == *m))
        .collect();
    assert!(
        gone.is_empty(),
        "SIM_FLOORS names modules sim has not: {gone:?}"
    );
    for (i, (what, ms)) in SIM_FLOORS.iter().enumerate() {
        println!("floor {i} ({what}): {}", ms.join(", "));
    }
    let edges = c.sibling_edges();
    let up: Vec<String> = edges
        .get(&Vec::new())
        .into_iter()
        .flatten()
        .filter(|(a, b)| floor_of[a.as_str()] < floor_of[b.as_str()])
        .map(|(a, b)| {
            format!(
                "{a} (floor {}) → {b} (floor {})",
                floor_of[a.as_str()],
                floor_of[b.as_str()]
            )
        })
        .collect();
    assert!(
        up.is_empty(),
        "imports of a floor above:\n{}",
        up.join("\n")
    );
}

#[test]
fn paths_are_read_from_groups_and_not_from_comments_or_strings() {
    let text = strip_comments(
        "use crate::{a::X, b::{c, d as e}, self};\n// crate::f\nlet s = \"crate::g\";\n/* crate::h */ super::i::j();",
    );
    let here = vec!["m".to_string(), "n".to_string()];
    let got: Vec<String> = absolute_paths(&text, &here, None)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    // `self` in the group is the crate root, and read again on its own as this module
    assert_eq!(got, ["a::X", "b::c", "b::d", "", "m::n", "m::i::j"]);
    let edges: BTreeSet<(String, String)> = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
        .iter()
        .map(|(x, y)| (x.to_string(), y.to_string()))
        .collect();
    assert_eq!(circles(&edges), vec![vec!["a", "b", "c"]]);
}

fn models() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/src");
    Crate::read("models", &src, &[])
}

fn reports() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/src");
    Crate::read("reports", &src, &[])
}

/// `models` and `reports` have no import circle either (issue 33: `hf` ↔ `hf_attention` /
/// `hf_layers` went by giving the config fields and bounds their own module, `hf_fields`, and
/// `profile` ↔ `profile_check` by reading a profile beside its checks).
#[test]
fn models_and_reports_have_no_import_circle() {
    for c in [models(), reports()] {
        let found = all_circles(&c);
        assert!(
            found.is_empty(),
            "import circles in {}:\n{}",
            c.name,
            found.join("\n")
        );
    }
}

/// Longest a function outside tests may be, in lines from its `fn` to its closing brace.
const MAX_FN_LINES: usize = 100;

/// The functions over [`MAX_FN_LINES`] when this check was written (`crate/path.rs::name`): a
/// ratchet. A function not listed that grows past the limit fails; split it by what it does.
/// Remove an entry once its function is short.
const LONG_FNS: &[&str] = &[];

/// Every function of `src` outside tests, as `(module file, name, lines)`: a file named
/// `tests.rs` and everything from a file's `#[cfg(test)]` on are tests.
fn functions(krate: &str, src: &Path) -> Vec<(String, String, usize)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = Vec::new();
    for f in files {
        if f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = strip_comments(&std::fs::read_to_string(&f).unwrap());
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        let rel = format!("{krate}/{}", f.strip_prefix(src).unwrap().to_string_lossy());
        let b = text.as_bytes();
        for (at, _) in text.match_indices("fn ") {
            if at > 0 && is_ident(b[at - 1]) {
                continue;
            }
            let name: String = text[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                continue; // `fn(` types
            }
            // the body: the first `{` before any `;` (a declaration without body has none)
            let Some(open) = text[at..].find(['{', ';']).map(|i| at + i) else {
                continue;
            };
            if b[open] != b'{' {
                continue;
            }
            let mut depth = 0;
            let mut close = open;
            for (i, &c) in b.iter().enumerate().skip(open) {
                match c {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let lines = text[at..=close].lines().count();
            out.push((rel.clone(), name, lines));
        }
    }
    out
}

#[test]
fn no_function_outside_tests_is_over_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut long = Vec::new();
    for krate in ["models", "probe", "sim", "reports"] {
        for (file, name, lines) in functions(krate, &root.join(krate).join("src")) {
            if lines > MAX_FN_LINES {
                long.push((format!("{file}::{name}"), lines));
            }
        }
    }
    for (f, n) in &long {
        println!("{n:>4} lines  {f}");
    }
    let new: Vec<String> = long
        .iter()
        .filter(|(f, _)| !LONG_FNS.contains(&f.as_str()))
        .map(|(f, n)| format!("{f} ({n} lines)"))
        .collect();
    let gone: Vec<&&str> = LONG_FNS
        .iter()
        .filter(|f| !long.iter().any(|(l, _)| l == *f))
        .collect();
    println!("within the limit now (drop from LONG_FNS): {gone:?}");
    assert!(
        new.is_empty(),
        "functions over {MAX_FN_LINES} lines outside tests:\n{}",
        new.join("\n")
    );
}

#[test]
fn a_function_is_measured_from_fn_to_its_closing_brace() {
    let dir = std::env::temp_dir().join(format!("use_graph_fns_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.rs"),
        "fn short() {\n    let s = \"}\";\n}\n\npub fn f(x: fn(u32) -> u32) -> u32 {\n    if x(1) > 0 {\n        1\n    } else {\n        2\n    }\n}\ntrait T { fn g(&self); }\n#[cfg(test)]\nmod tests { fn in_tests() {} }\n",
    )
    .unwrap();
    let got = functions("x", &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let got: Vec<(&str, usize)> = got.iter().map(|(_, n, l)| (n.as_str(), *l)).collect();
    assert_eq!(got, [("short", 3), ("f", 7)]);
}

/// The folders that own an engine's flags: the engines and their launch-line readers.
const ENGINE_FOLDERS: [&str; 1] = ["engine/"];

/// Every module of `sim/src` outside the engines' folder, as `(path under src/, its code)`:
/// code and strings before its `#[cfg(test)]`, comment lines left out.
fn code_outside_engines() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            if ENGINE_FOLDERS.iter().any(|d| rel.starts_with(d)) || rel.ends_with("tests.rs") {
                return None;
            }
            let raw = std::fs::read_to_string(f).unwrap();
            let code = raw
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            Some((rel, code))
        })
        .collect()
}

/// Ways of asking "which engine is this?" that issue 33 retired outside `engine/`: matching a
/// launch's variant, testing an engine's optional field for presence, comparing an engine's
/// name. A module above the engines asks the engine's rules (`opts.engine.rules()`,
/// `launch.engine().rules()`) instead.
const ENGINE_TESTS: [&str; 7] = [
    "Launch::Vllm",
    "Launch::Sglang",
    // an engine's own fields read for their presence (`if let Some(v) = &opts.vllm_memory`)
    ".vllm_memory",
    ".vllm_args",
    "log.engine.is_some()",
    "== \"vllm\"",
    "== \"sglang\"",
];

/// Matches of [`ENGINE_TESTS`] that are not a question about the served engine: the TRITON_MLA
/// kernel table's rows carry the build they were measured in (`engine` column), and the
/// vLLM-module rows are picked by it — a filter on data, not a dispatch on the config.
const ENGINE_TESTS_ON_DATA: [(&str, &str); 1] = [("cost/triton_mla.rs", "== \"vllm\"")];

/// `grep` finds no engine test outside the engines' folder (issue 33's first acceptance bullet).
#[test]
fn no_module_outside_the_engines_asks_which_engine_it_is() {
    let found: Vec<String> = code_outside_engines()
        .iter()
        .flat_map(|(rel, code)| {
            ENGINE_TESTS
                .iter()
                .filter(|t| code.contains(**t))
                .filter(|t| !ENGINE_TESTS_ON_DATA.contains(&(rel.as_str(), **t)))
                .map(move |t| format!("{rel}: {t}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "engine tests outside engine/ (ask the engine's rules, sim::engine::ServingEngine):\n{}",
        found.join("\n")
    );
}

/// Option strings only one engine has (`--mem-fraction-static`, `--max-num-seqs`, `-tp`): every
/// row of each engine's flag table less the spellings both tables share (`--kv-cache-dtype`).
fn engine_specific_flags() -> BTreeSet<&'static str> {
    let of = |specs: &'static [sim::engine::sglang::args::Spec]| -> BTreeSet<&'static str> {
        specs.iter().flat_map(|s| s.flags.iter().copied()).collect()
    };
    let sglang = of(sim::engine::sglang::args::SPECS);
    let vllm = of(sim::engine::vllm::args::table::SPECS);
    sglang.symmetric_difference(&vllm).copied().collect()
}

/// How many times `text` names one of `flags` as a whole option (`--tp` but not `--tp-size`).
fn flag_mentions(text: &str, flags: &BTreeSet<&str>) -> usize {
    let b = text.as_bytes();
    let part = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    flags
        .iter()
        .map(|f| {
            text.match_indices(f)
                .filter(|(at, _)| {
                    let end = at + f.len();
                    (*at == 0 || !part(b[at - 1])) && (end == b.len() || !part(b[end]))
                })
                .count()
        })
        .sum()
}

/// Modules outside the engines' folder that name an engine-specific flag, with how many times
/// (code and strings, not comments) were a ratchet (41 modules / 128 mentions when it was written;
/// 38 / 105 once the records' and the server logs' flag readers moved under `engine/`; 37 / 104
/// once each engine read its own server log; 36 / 95 once `Scenario` held one engine's `Launch`;
/// 30 / 82 once the router's flag and the memory-share flag were the engine's to spell; 14 / 32
/// once `cost`, `advise`, `doctor`, `memory_fit`, `records` and `calibrate` named a neutral
/// `engine::Knob` and asked the engine for its spelling; 2 / 3 once the CLI's messages asked
/// SGLang's table for `sim`'s own flags, `cli/own_flags.rs`, and the launch commands were the
/// engine's, `ServingEngine::launch_command`).
/// 2 / 3 left then: bench_serving's `--tokenizer` / `--seed` in `cli/workload_args.rs`, now spelt
/// in the client's folder (`bench_serving/flags.rs`), and `error.rs`'s `pick --tp × --pp-size`,
/// now said without a flag. Issue 33 wants none, and none is what this checks: a module outside
/// `engine/` that names an engine-specific flag fails. bench_serving is a client, not a serving
/// engine: its folder may spell its own flags that an engine's table spells too
/// (`sim::bench_serving::flags::SHARED_WITH_ENGINES`), and nothing else of an engine's.
const CLIENT_FOLDER: &str = "bench_serving/";

#[test]
fn no_module_outside_the_engines_names_an_engine_flag() {
    let flags = engine_specific_flags();
    assert!(
        flags.contains("--mem-fraction-static") && flags.contains("--max-num-seqs"),
        "the engines' tables were not read: {flags:?}"
    );
    let client_own: BTreeSet<&str> = sim::bench_serving::flags::SHARED_WITH_ENGINES
        .into_iter()
        .collect();
    assert!(
        client_own.iter().all(|f| flags.contains(f)),
        "SHARED_WITH_ENGINES lists a flag no engine spells: {client_own:?}"
    );
    let not_client: BTreeSet<&str> = flags.difference(&client_own).copied().collect();
    let mut found: Vec<String> = Vec::new();
    for (rel, code) in code_outside_engines() {
        let counted = if rel.starts_with(CLIENT_FOLDER) {
            &not_client
        } else {
            &flags
        };
        let n = flag_mentions(&code, counted);
        if n > 0 {
            found.push(format!("{rel}: {n}"));
        }
    }
    println!(
        "{} modules outside engine/ name engine-specific flags: {found:?}",
        found.len()
    );
    assert!(
        found.is_empty(),
        "engine-specific flags named outside the engines' folders (ask the engine for its \
         spelling, sim::engine::Engine::flag / ServingEngine; a bench_serving flag goes in \
         sim::bench_serving::flags):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_flag_is_named_only_whole() {
    let flags: BTreeSet<&str> = ["--tp", "-tp"].into_iter().collect();
    assert_eq!(
        flag_mentions("\"--tp 8\", \"--tp-size 8\", x-tp, -tp 2", &flags),
        2
    );
}
