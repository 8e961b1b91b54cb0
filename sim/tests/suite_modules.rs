//! Every crate builds one integration-test binary (`autotests = false`, `tests/suite.rs`), so a
//! test file without its `mod` line in `suite.rs` would never be compiled nor run. This checks
//! every crate of the workspace: each `tests/*.rs` file is a module of its crate's suite, and
//! each module the suite names is a file there.

use std::collections::BTreeSet;
use std::path::Path;

fn modules_named(suite: &str) -> BTreeSet<String> {
    suite
        .lines()
        .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

fn test_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_string()))
        .filter(|stem| stem != "suite")
        .collect()
}

#[test]
fn every_test_file_of_every_crate_is_a_module_of_its_suite() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["models", "probe", "reports", "sim"] {
        let tests = workspace.join(krate).join("tests");
        let suite = std::fs::read_to_string(tests.join("suite.rs"))
            .unwrap_or_else(|e| panic!("{krate}/tests/suite.rs: {e}"));
        let named = modules_named(&suite);
        let helpers: BTreeSet<String> = named
            .iter()
            .filter(|m| tests.join(m).join("mod.rs").is_file())
            .cloned()
            .collect();
        let files = test_files(&tests);
        let missing: Vec<_> = files.difference(&named).collect();
        assert!(
            missing.is_empty(),
            "{krate}/tests/suite.rs lacks `mod` lines for {missing:?}: those tests never run"
        );
        let dangling: Vec<_> = named
            .difference(&files)
            .filter(|m| !helpers.contains(*m))
            .collect();
        assert!(
            dangling.is_empty(),
            "{krate}/tests/suite.rs names {dangling:?}, which are not files there"
        );
        let manifest = std::fs::read_to_string(workspace.join(krate).join("Cargo.toml"))
            .expect("a Cargo.toml");
        assert!(
            manifest.contains("autotests = false"),
            "{krate}/Cargo.toml builds a test binary per file again"
        );
    }
}
