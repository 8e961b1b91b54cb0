//! Charts of a machine profile: `probe run --charts DIR` draws the run it just measured, and
//! `probe charts PROFILE --out DIR` draws an existing profile (committed ones, imports). The
//! drawing itself lives in `reports::profile`, shared with `sim report`; this module only picks a
//! label, renders, and writes `DIR/*.svg` plus `DIR/index.html`.

use std::path::{Path, PathBuf};

use models::MachineProfile;
use reports::profile;

use crate::error::{ProbeError, Result};

/// `probe charts` flags.
#[derive(Debug, clap::Args)]
pub struct ChartsArgs {
    /// The profile JSON to draw (from `probe run` or `probe import`).
    pub profile: PathBuf,
    /// Folder for the SVG charts and index.html (created if missing; files in it are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Terminal output: a line, or JSON listing the files written.
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::format::Format,
}

/// What `probe charts --format json` prints.
#[derive(Debug, serde::Serialize)]
struct ChartsOutput {
    schema_version: u32,
    out_dir: PathBuf,
    files: Vec<PathBuf>,
}

/// Checks that `dir` can be a chart folder (not an existing file), before any measuring starts.
pub fn check_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(ProbeError::Invalid(format!(
            "--charts/--out {} is a file; give a folder for the charts",
            dir.display()
        )));
    }
    Ok(())
}

/// The name charts carry: the profile's host name, else the file stem of `path`.
pub fn label(profile: &MachineProfile, path: &Path) -> String {
    profile
        .provenance
        .hostname
        .clone()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "profile".to_owned())
}

/// Renders every chart of `profile` and writes them with an index page into `dir`; returns the
/// files written (index.html last). Nothing is written if any chart fails to render.
pub fn write_profile_charts(
    profile: &MachineProfile,
    label: &str,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    check_dir(dir)?;
    let set = profile::profile_charts(label, profile);
    let rendered = set.render().map_err(report_error)?;
    let page = profile::profile_page(label, profile, &rendered, &set.skipped);
    profile::write_dir(dir, &rendered, &page).map_err(report_error)
}

fn report_error(e: reports::ReportError) -> ProbeError {
    match e {
        reports::ReportError::Write { path, source } => ProbeError::Write { path, source },
        other => ProbeError::Invalid(format!("drawing charts: {other}")),
    }
}

/// `probe charts PROFILE --out DIR`.
pub fn run(args: ChartsArgs) -> Result<()> {
    check_dir(&args.out)?;
    let p = MachineProfile::load(&args.profile)?;
    let written = write_profile_charts(&p, &label(&p, &args.profile), &args.out)?;
    let out = ChartsOutput {
        schema_version: 1,
        out_dir: args.out.clone(),
        files: written.iter().map(PathBuf::from).collect(),
    };
    args.format.print(&out, || {
        println!(
            "{} charts and index.html written to {}",
            written.len() - 1,
            args.out.display()
        )
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAKE_4GPU: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/fake-4gpu-vm.json"
    );

    #[test]
    fn charts_of_a_profile_are_written_with_an_index_and_escaped_names() {
        let mut p = MachineProfile::load(Path::new(FAKE_4GPU)).unwrap();
        p.provenance.hostname = Some("<script>alert(1)</script>".into());
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("charts");
        let label = label(&p, Path::new(FAKE_4GPU));
        let written = write_profile_charts(&p, &label, &dir).unwrap();
        assert_eq!(written.last().unwrap(), &dir.join("index.html"));
        // 4 bandwidth maps (copy engine and host-staged, both directions), 2 latency maps, the
        // topology, 5 collectives; the fixture classifies no pair, so that map is skipped.
        assert_eq!(written.len() - 1, 12);
        let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<script>"));
        assert!(html.contains("no pair in the profile is classified"));
        for f in &written {
            let name = f.file_name().unwrap().to_string_lossy();
            assert!(
                name.starts_with("script-alert-1-script-") || name == "index.html",
                "{name}"
            );
            let text = std::fs::read_to_string(f).unwrap();
            assert!(
                !text.contains("<script"),
                "{name} has markup from the host name"
            );
        }
    }

    #[test]
    fn a_file_where_the_folder_should_be_is_refused() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let p = MachineProfile::load(Path::new(FAKE_4GPU)).unwrap();
        let e = write_profile_charts(&p, "x", tmp.path()).unwrap_err();
        assert!(e.to_string().contains("is a file"), "{e}");
    }
}
