//! Importers: other tools' logs into the machine-profile format, so measurements taken with
//! nccl-tests or CUDA samples feed `sim` the same way a `probe run` does.

pub mod nccl_tests;
pub mod p2p_test;

use crate::cli::{Format, ImportCmd};
use crate::error::{ProbeError, Result};
use models::profile::{MachineProfile, Provenance};
use std::path::{Path, PathBuf};

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| ProbeError::Io {
        path: path.to_path_buf(),
        source,
    })
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

fn preset_of(p: &mut MachineProfile) {
    p.gpu_preset = p
        .devices
        .first()
        .and_then(|d| models::GpuSpec::find_by_display_name(&d.name))
        .map(|s| s.name);
}

/// Builds a profile from nccl-tests logs (one collective curve per log).
pub fn import_nccl_tests(logs: &[PathBuf]) -> Result<MachineProfile> {
    let names: Vec<String> = logs.iter().map(|p| p.display().to_string()).collect();
    let mut p = empty_profile(
        "probe import nccl-tests",
        format!("nccl-tests logs: {}", names.join(", ")),
    );
    for path in logs {
        let log = nccl_tests::parse(&read(path)?, path)?;
        p.provenance.nccl_version = p
            .provenance
            .nccl_version
            .clone()
            .or(log.nccl_version.clone());
        for d in log.devices {
            if !p.devices.iter().any(|x| x.index == d.index) {
                p.devices.push(d);
            }
        }
        p.collectives.push(log.curve);
    }
    p.devices.sort_by_key(|d| d.index);
    p.provenance.notes.push("nccl-tests: out-of-place columns; time is nccl-tests' average over its iterations (samples = 1)".into());
    preset_of(&mut p);
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
    preset_of(&mut p);
    Ok(p)
}

fn finish(p: &MachineProfile, out: &Path, format: Format) -> Result<()> {
    p.save_atomic(out)?;
    match format {
        Format::Table => {
            print!("{}", crate::summary::render(p));
            println!("profile written to {}", out.display());
        }
        Format::Json => println!("{}", serde_json::to_string_pretty(p).expect("serializes")),
    }
    Ok(())
}

/// `probe import …`.
pub fn run(cmd: ImportCmd) -> Result<()> {
    match cmd {
        ImportCmd::NcclTests { logs, out, format } => {
            finish(&import_nccl_tests(&logs)?, &out, format)
        }
        ImportCmd::P2p { log, out, format } => finish(&import_p2p(&log)?, &out, format),
    }
}
