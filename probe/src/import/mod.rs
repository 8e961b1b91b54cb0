//! Importers: other tools' logs into the machine-profile format, so measurements taken with
//! nccl-tests or CUDA samples feed `sim` the same way a `probe run` does.

pub mod nccl_tests;
pub mod p2p_test;

use crate::error::{ProbeError, Result};
use crate::format::Format;
use clap::Subcommand;
use models::profile::{MachineProfile, Provenance};
use std::path::{Path, PathBuf};

/// `probe import` subcommands.
#[derive(Debug, Subcommand)]
pub enum ImportCmd {
    /// nccl-tests stdout logs (all_reduce_perf, all_gather_perf, …), one op per log.
    NcclTests {
        /// Log files; the op comes from the binary name in the log or the file name.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Where to write the profile JSON (default ./profile.json, refused when that exists).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// CUDA samples' p2pBandwidthLatencyTest output.
    P2p {
        /// The log file.
        log: PathBuf,
        /// Where to write the profile JSON (default ./profile.json, refused when that exists).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
}

/// A log, refused before it is read whole when larger than any real log
/// ([`models::io::LOG_LIMIT_BYTES`]).
fn read(path: &Path) -> Result<String> {
    Ok(models::io::read_text_limited(
        path,
        models::io::LOG_LIMIT_BYTES,
    )?)
}

fn empty_profile(tool: &str, source: String) -> MachineProfile {
    MachineProfile::empty(Provenance {
        tool: tool.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        created_utc: crate::run::rfc3339_now(),
        source: Some(source),
        ..Default::default()
    })
}

/// The GPU preset of the devices, and their memory from its datasheet (neither nccl-tests nor
/// p2pBandwidthLatencyTest prints it; a profile needs it). Then every value is checked as a
/// profile load would check it, naming `log` in the error.
fn finish_import(p: &mut MachineProfile, log: &Path) -> Result<()> {
    let name = p
        .devices
        .first()
        .map_or("?", |d| d.name.as_str())
        .to_string();
    let spec = models::GpuSpec::find_by_display_name(&name).ok_or_else(|| ProbeError::Parse {
        path: log.to_path_buf(),
        line: 1,
        problem: format!(
            "GPU `{name}` is not a known GPU ({}), so its memory is unknown and sim could not use the profile; a log with the `Device:`/`Rank` lines of a known GPU is needed",
            models::GpuSpec::preset_names().join(", ")
        ),
    })?;
    for d in p.devices.iter_mut().filter(|d| d.memory_bytes == 0) {
        d.memory_bytes = spec.memory_bytes;
    }
    p.provenance.notes.push(format!(
        "devices' memory_bytes: the {} datasheet's (the log does not print it)",
        spec.name
    ));
    p.gpu_preset = Some(spec.name);
    models::profile_check::check(p, log)?;
    Ok(())
}

/// Builds a profile from nccl-tests logs (one collective curve per log).
pub fn import_nccl_tests(logs: &[PathBuf]) -> Result<MachineProfile> {
    let names: Vec<String> = logs.iter().map(|p| p.display().to_string()).collect();
    let mut p = empty_profile(
        "probe import nccl-tests",
        format!("nccl-tests logs: {}", names.join(", ")),
    );
    // A set keeps the merge linear in the number of rank lines, however many there are.
    let mut seen = std::collections::HashSet::new();
    for path in logs {
        let log = nccl_tests::parse(&read(path)?, path)?;
        p.provenance.nccl_version = p
            .provenance
            .nccl_version
            .clone()
            .or(log.nccl_version.clone());
        for d in log.devices {
            if seen.insert(d.index) {
                p.devices.push(d);
            }
        }
        p.collectives.push(log.curve);
    }
    p.devices.sort_by_key(|d| d.index);
    p.provenance.notes.push("nccl-tests: out-of-place columns; time is nccl-tests' average over its iterations (samples = 1)".into());
    if let Some(first) = logs.first() {
        finish_import(&mut p, first)?;
    }
    Ok(p)
}

/// Builds a profile from p2pBandwidthLatencyTest output.
pub fn import_p2p(log: &Path) -> Result<MachineProfile> {
    let parsed = p2p_test::parse(&read(log)?, log)?;
    let mut p = empty_profile(
        "probe import p2p",
        format!("p2pBandwidthLatencyTest: {}", log.display()),
    );
    p.devices = parsed.devices;
    p.links = parsed.links;
    p.device_memory = parsed.device_memory;
    p.provenance.notes.push("p2pBandwidthLatencyTest: P2P=Disabled figures are the driver's staging through host memory; 40 MB per copy".into());
    finish_import(&mut p, log)?;
    Ok(p)
}

fn finish(p: &MachineProfile, out: &Path, format: Format) -> Result<()> {
    p.save_atomic(out)?;
    format.print(p, || {
        print!("{}", crate::summary::render(p));
        println!("profile written to {}", out.display());
    });
    Ok(())
}

/// `probe import …`.
pub fn run(cmd: ImportCmd) -> Result<()> {
    match cmd {
        ImportCmd::NcclTests { logs, out, format } => {
            let out = crate::out_path::resolve(out)?;
            finish(&import_nccl_tests(&logs)?, &out, format)
        }
        ImportCmd::P2p { log, out, format } => {
            let out = crate::out_path::resolve(out)?;
            finish(&import_p2p(&log)?, &out, format)
        }
    }
}
