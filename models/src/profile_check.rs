//! Reading a machine profile ([`MachineProfile::load`]: the schema version, then the values) and
//! the plausibility checks of a parsed one: every measured number is finite, not negative,
//! and within physical bounds (a time of 1e300 µs, a negative busbw or `memory_bytes: 0` is a
//! corrupt or hand-edited file, not a measurement). The first bad value is reported with its JSON
//! path, e.g. `collectives[2].points[5].time_us.median`, so the user can find it.
//!
//! The bounds are generous: two to three orders of magnitude beyond any GPU or link that exists
//! (NVLink 5 moves 1.8 TB/s per GPU, an HBM3e GPU ~8 TB/s, a B200 ~10 PFLOP/s in FP4).

use crate::error::{ModelsError, Result};
use crate::profile::{
    CollectiveStatus, MachineProfile, PROFILE_SCHEMA_VERSION, PROFILE_SCHEMA_VERSIONS_READ, Stat,
};
use serde::Deserialize;
use std::path::Path;

/// Most bytes of memory one GPU can plausibly have (64 TiB).
const MAX_DEVICE_MEMORY_BYTES: u64 = 1 << 46;
/// Longest plausible single transfer, collective or GEMM: 1000 s, in µs.
const MAX_TIME_US: f64 = 1e9;
/// Fastest plausible link or memory: 1 PB/s, in GB/s.
const MAX_GB_PER_S: f64 = 1e6;
/// Fastest plausible GEMM: 1 EFLOP/s, in TFLOP/s.
const MAX_TFLOPS: f64 = 1e6;

/// `v` as a reader expects it: plain in everyday ranges, scientific beyond them.
fn shown(v: f64) -> String {
    if v == 0.0 || (1e-3..1e7).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

struct Checker<'a> {
    path: &'a Path,
    /// The GPUs the profile's `devices` list: every other section may name only these.
    known: std::collections::HashSet<u32>,
}

impl Checker<'_> {
    /// `d` is one of the profile's listed GPUs.
    fn device(&self, field: String, d: u32) -> Result<()> {
        if self.known.contains(&d) {
            Ok(())
        } else {
            Err(self.bad(
                field,
                format!("GPU {d} is not listed in `devices`; the file is inconsistent"),
            ))
        }
    }

    fn bad(&self, field: String, problem: String) -> ModelsError {
        ModelsError::Field {
            path: self.path.to_path_buf(),
            field,
            problem,
        }
    }

    /// `v` is finite and in `[min, max]` (`strict_min`: above `min`).
    fn number(&self, field: &str, v: f64, min: f64, strict_min: bool, max: f64) -> Result<()> {
        let low = if strict_min { v <= min } else { v < min };
        if !v.is_finite() || low || v > max {
            let want = if strict_min {
                format!("above {min}")
            } else {
                format!("at least {min}")
            };
            return Err(self.bad(
                field.to_string(),
                format!("{} is not a plausible value (must be finite, {want} and at most {max:e}); re-measure or fix the file", shown(v)),
            ));
        }
        Ok(())
    }

    /// A summary of samples: each quantile plausible, p10 ≤ median ≤ p90.
    fn stat(&self, field: &str, s: &Stat, strict_min: bool, max: f64) -> Result<()> {
        for (name, v) in [("median", s.median), ("p10", s.p10), ("p90", s.p90)] {
            self.number(&format!("{field}.{name}"), v, 0.0, strict_min, max)?;
        }
        // Quantiles of one sample set are ordered; allow rounding in the last printed digit.
        let tol = 1e-6 * s.median.abs().max(1e-12);
        if s.p10 > s.median + tol || s.median > s.p90 + tol {
            return Err(self.bad(
                field.to_string(),
                format!(
                    "quantiles out of order (p10 {} / median {} / p90 {}); re-measure or fix the file",
                    s.p10, s.median, s.p90
                ),
            ));
        }
        Ok(())
    }
}

/// Checks every measured value of `p`; `path` names the file in the error.
pub fn check(p: &MachineProfile, path: &Path) -> Result<()> {
    let c = Checker {
        path,
        known: p.devices.iter().map(|d| d.index).collect(),
    };
    check_devices(&c, p)?;
    check_links(&c, p)?;
    check_host_paths(&c, p)?;
    check_collectives(&c, p)?;
    check_compute_and_launch(&c, p)
}

/// Each GPU's memory size is plausible.
fn check_devices(c: &Checker<'_>, p: &MachineProfile) -> Result<()> {
    for (i, d) in p.devices.iter().enumerate() {
        if d.memory_bytes == 0 || d.memory_bytes > MAX_DEVICE_MEMORY_BYTES {
            return Err(c.bad(
                format!("devices[{i}].memory_bytes"),
                format!(
                    "{} is not a plausible GPU memory size (1 byte … 64 TiB); re-run `probe run` or fix the file",
                    d.memory_bytes
                ),
            ));
        }
    }
    Ok(())
}

/// P2P links: both ends listed, latencies and curves plausible.
fn check_links(c: &Checker<'_>, p: &MachineProfile) -> Result<()> {
    for (i, l) in p.links.iter().enumerate() {
        let f = |s: &str| format!("links[{i}].{s}");
        c.device(f("src"), l.src)?;
        c.device(f("dst"), l.dst)?;
        for (mode, s) in &l.latency_us {
            c.stat(&f(&format!("latency_us.{mode}")), s, false, MAX_TIME_US)?;
        }
        for (j, curve) in l.curves.iter().enumerate() {
            for (k, pt) in curve.points.iter().enumerate() {
                let at = f(&format!("curves[{j}].points[{k}]"));
                c.stat(&format!("{at}.time_us"), &pt.time_us, true, MAX_TIME_US)?;
                c.stat(&format!("{at}.gb_per_s"), &pt.gb_per_s, false, MAX_GB_PER_S)?;
            }
        }
    }
    Ok(())
}

/// Host↔device and device-memory copies: listed GPUs, plausible bandwidths.
fn check_host_paths(c: &Checker<'_>, p: &MachineProfile) -> Result<()> {
    for (i, h) in p.host_device.iter().enumerate() {
        for (j, &d) in h.devices.iter().enumerate() {
            c.device(format!("host_device[{i}].devices[{j}]"), d)?;
        }
        c.stat(
            &format!("host_device[{i}].gb_per_s"),
            &h.gb_per_s,
            false,
            MAX_GB_PER_S,
        )?;
    }
    for (i, m) in p.device_memory.iter().enumerate() {
        c.device(format!("device_memory[{i}].device"), m.device)?;
        c.stat(
            &format!("device_memory[{i}].copy_gb_per_s"),
            &m.copy_gb_per_s,
            false,
            MAX_GB_PER_S,
        )?;
    }
    Ok(())
}

/// NCCL curves: listed GPUs; times of the sizes that returned a result, and both bandwidths.
fn check_collectives(c: &Checker<'_>, p: &MachineProfile) -> Result<()> {
    for (i, curve) in p.collectives.iter().enumerate() {
        for (j, &d) in curve.devices.iter().enumerate() {
            c.device(format!("collectives[{i}].devices[{j}]"), d)?;
        }
        for (k, pt) in curve.points.iter().enumerate() {
            let at = format!("collectives[{i}].points[{k}]");
            // Hung or failed sizes carry whatever the watchdog saw; only results are checked.
            if pt.status == CollectiveStatus::Ok {
                c.stat(&format!("{at}.time_us"), &pt.time_us, true, MAX_TIME_US)?;
            }
            c.number(
                &format!("{at}.algbw_gb_per_s"),
                pt.algbw_gb_per_s,
                0.0,
                false,
                MAX_GB_PER_S,
            )?;
            c.number(
                &format!("{at}.busbw_gb_per_s"),
                pt.busbw_gb_per_s,
                0.0,
                false,
                MAX_GB_PER_S,
            )?;
        }
    }
    Ok(())
}

/// GEMM ceilings and launch floors: listed GPUs, plausible times and rates.
fn check_compute_and_launch(c: &Checker<'_>, p: &MachineProfile) -> Result<()> {
    for (i, g) in p.compute.iter().enumerate() {
        c.device(format!("compute[{i}].device"), g.device)?;
        c.stat(
            &format!("compute[{i}].time_us"),
            &g.time_us,
            true,
            MAX_TIME_US,
        )?;
        c.stat(
            &format!("compute[{i}].tflops"),
            &g.tflops,
            false,
            MAX_TFLOPS,
        )?;
    }
    for (i, l) in p.launch.iter().enumerate() {
        c.device(format!("launch[{i}].device"), l.device)?;
        c.stat(
            &format!("launch[{i}].per_kernel_us"),
            &l.per_kernel_us,
            false,
            MAX_TIME_US,
        )?;
        if let Some(g) = &l.gpu_per_kernel_us {
            c.stat(
                &format!("launch[{i}].gpu_per_kernel_us"),
                g,
                false,
                MAX_TIME_US,
            )?;
        }
    }
    Ok(())
}

/// Reading a profile file is reading it and checking it: the reader lives beside the checks, so
/// the schema ([`crate::profile`]) stands on nothing above it.
impl MachineProfile {
    /// Reads a profile (at most [`crate::io::PROFILE_LIMIT_BYTES`]), checking its schema
    /// version and values.
    pub fn load(path: &std::path::Path) -> crate::error::Result<MachineProfile> {
        let text = crate::io::read_text_limited(path, crate::io::PROFILE_LIMIT_BYTES)?;
        Self::from_json_str(&text, path)
    }

    /// Parses a profile from JSON text and checks every measured value is plausible
    /// ([`check`]); `path` only names the source in errors.
    pub fn from_json_str(
        text: &str,
        path: &std::path::Path,
    ) -> crate::error::Result<MachineProfile> {
        #[derive(Deserialize)]
        struct VersionOnly {
            schema_version: Option<u32>,
        }
        let json_err = |e: serde_json::Error| crate::ModelsError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let v: VersionOnly = serde_json::from_str(text).map_err(json_err)?;
        match v.schema_version {
            Some(v) if PROFILE_SCHEMA_VERSIONS_READ.contains(&v) => {
                let p: MachineProfile = serde_json::from_str(text).map_err(json_err)?;
                check(&p, path)?;
                Ok(p)
            }
            Some(found) => Err(crate::ModelsError::SchemaVersion {
                path: path.to_path_buf(),
                found,
                supported: PROFILE_SCHEMA_VERSION,
            }),
            None => Err(crate::ModelsError::Field {
                path: path.to_path_buf(),
                field: "schema_version".into(),
                problem: "missing: this is not a shardwise machine profile".into(),
            }),
        }
    }
}
