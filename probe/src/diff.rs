//! `probe diff A B`: the same figures of two profiles side by side with the ratio B / A — a VM
//! against bare metal, one driver against another. Rows pair up by what was measured, not by GPU
//! index where that would be accidental: collectives by op, group size and NCCL environment;
//! pairs by (src, dst); host copies by memory kind, direction and GPU count.

use crate::error::Result;
use crate::format::Format;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use models::profile::{CollectiveStatus, Direction, LinkClass, MachineProfile};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `probe diff` flags.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// Baseline profile (e.g. bare metal).
    pub a: PathBuf,
    /// Profile compared with it (e.g. the VM).
    pub b: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// Schema version of the `--format json` diff output.
pub const DIFF_SCHEMA_VERSION: u32 = 1;

/// One compared figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffRow {
    /// `host`, `device`, `staging`, `p2p`, `nccl`, `gemm`, `launch`.
    pub section: String,
    /// What was measured (e.g. `all_reduce n=8 1 MiB`).
    pub item: String,
    /// Unit of `a` and `b` (`GB/s`, `us`, `TFLOP/s`).
    pub unit: String,
    /// Figure in profile A.
    pub a: f64,
    /// Figure in profile B.
    pub b: f64,
    /// b / a.
    pub ratio: f64,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffReport {
    /// [`DIFF_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Path of A.
    pub a: String,
    /// Path of B.
    pub b: String,
    /// Figures present in both.
    pub rows: Vec<DiffRow>,
}

/// Sizes compared for collectives: latency-bound, middle, bandwidth-bound.
const NCCL_SIZES: [u64; 4] = [8, 1 << 20, 16 << 20, 256 << 20];

/// Compares two profiles.
pub fn diff(a: &MachineProfile, b: &MachineProfile) -> Vec<DiffRow> {
    let mut rows = Rows(Vec::new());
    for section in [
        host_rows,
        device_rows,
        p2p_rows,
        staging_rows,
        nccl_rows,
        gemm_rows,
        launch_rows,
    ] {
        section(a, b, &mut rows);
    }
    rows.0
}

/// The rows found so far; a pair with a missing or zero baseline is left out (no ratio).
struct Rows(Vec<DiffRow>);

impl Rows {
    fn push(&mut self, section: &str, item: String, unit: &str, x: f64, y: f64) {
        if x.is_finite() && y.is_finite() && x > 0.0 {
            self.0.push(DiffRow {
                section: section.into(),
                item,
                unit: unit.into(),
                a: x,
                b: y,
                ratio: y / x,
            });
        }
    }
}

/// The highest median bandwidth of a curve's points.
fn peak_gb_per_s<'a>(points: impl Iterator<Item = &'a models::profile::Stat>) -> f64 {
    points.map(|s| s.median).fold(0.0, f64::max)
}

/// Host ↔ device copies of the same memory kind, direction, GPU count and size.
fn host_rows(a: &MachineProfile, b: &MachineProfile, rows: &mut Rows) {
    for ha in &a.host_device {
        if let Some(hb) = b.host_device.iter().find(|h| {
            h.memory == ha.memory
                && h.direction == ha.direction
                && h.devices.len() == ha.devices.len()
                && h.bytes == ha.bytes
                && (ha.devices.len() > 1 || h.devices == ha.devices)
        }) {
            rows.push(
                "host",
                format!(
                    "{:?} {:?} {} {}",
                    ha.memory,
                    ha.direction,
                    gpus(&ha.devices, &hb.devices),
                    models::units::fmt_bytes(ha.bytes)
                ),
                "GB/s",
                ha.gb_per_s.median,
                hb.gb_per_s.median,
            );
        }
    }
}

/// Device memory copy bandwidth, GPU by GPU.
fn device_rows(a: &MachineProfile, b: &MachineProfile, rows: &mut Rows) {
    for da in &a.device_memory {
        if let Some(db) = b.device_memory.iter().find(|d| d.device == da.device) {
            rows.push(
                "device",
                format!("GPU {} copy", da.device),
                "GB/s",
                da.copy_gb_per_s.median,
                db.copy_gb_per_s.median,
            );
        }
    }
}

/// P2P peaks by mode and direction and latencies, ordered pair by ordered pair.
fn p2p_rows(a: &MachineProfile, b: &MachineProfile, rows: &mut Rows) {
    for la in &a.links {
        let Some(lb) = b.links.iter().find(|l| l.src == la.src && l.dst == la.dst) else {
            continue;
        };
        for ca in &la.curves {
            let Some(cb) = lb
                .curves
                .iter()
                .find(|c| c.mode == ca.mode && c.direction == ca.direction)
            else {
                continue;
            };
            let dir = if ca.direction == Direction::Bidirectional {
                "both"
            } else {
                "one-way"
            };
            rows.push(
                "p2p",
                format!("{} {:?} {dir} peak", pair(la.src, la.dst), ca.mode),
                "GB/s",
                peak_gb_per_s(ca.points.iter().map(|p| &p.gb_per_s)),
                peak_gb_per_s(cb.points.iter().map(|p| &p.gb_per_s)),
            );
        }
        for (k, sa) in &la.latency_us {
            if let Some(sb) = lb.latency_us.get(k) {
                rows.push(
                    "p2p",
                    format!("{} {k} latency", pair(la.src, la.dst)),
                    "us",
                    sa.median,
                    sb.median,
                );
            }
        }
    }
}

/// Host-staged (no P2P) peaks by GPU, path and direction.
fn staging_rows(a: &MachineProfile, b: &MachineProfile, rows: &mut Rows) {
    for sa in &a.host_staging {
        let same = |c: &&models::profile::HostStagedCurve| {
            c.device == sa.device && c.path == sa.path && c.direction == sa.direction
        };
        if let Some(sb) = b.host_staging.iter().find(same) {
            rows.push(
                "staging",
                format!("GPU {} {:?} {:?} peak", sa.device, sa.path, sa.direction),
                "GB/s",
                peak_gb_per_s(sa.points.iter().map(|p| &p.gb_per_s)),
                peak_gb_per_s(sb.points.iter().map(|p| &p.gb_per_s)),
            );
        }
    }
}

/// NCCL collectives of the same op, group size and environment: small sizes by time, large by busbw.
fn nccl_rows(a: &MachineProfile, b: &MachineProfile, rows: &mut Rows) {
    for ca in &a.collectives {
        let n = ca.devices.len();
        // A curve across nodes (NET) is only ever compared with another one across nodes.
        let net = |c: &models::profile::CollectiveCurve| c.link_class == Some(LinkClass::NET);
        let Some(cb) = b.collectives.iter().find(|c| {
            c.op == ca.op && c.devices.len() == n && c.nccl_env == ca.nccl_env && net(c) == net(ca)
        }) else {
            continue;
        };
        for size in NCCL_SIZES {
            let pa = ca
                .points
                .iter()
                .find(|p| p.bytes == size && p.status == CollectiveStatus::Ok);
            let pb = cb
                .points
                .iter()
                .find(|p| p.bytes == size && p.status == CollectiveStatus::Ok);
            if let (Some(pa), Some(pb)) = (pa, pb) {
                let what = format!(
                    "{:?} {}{} {}",
                    ca.op,
                    gpus(&ca.devices, &cb.devices),
                    if net(ca) { " across nodes" } else { "" },
                    models::units::fmt_bytes(size)
                );
                if size <= 1 << 20 {
                    rows.push(
                        "nccl",
                        format!("{what} time"),
                        "us",
                        pa.time_us.median,
                        pb.time_us.median,
                    );
                }
                if n > 1 && size >= 1 << 20 {
                    rows.push(
                        "nccl",
                        format!("{what} busbw"),
                        "GB/s",
                        pa.busbw_gb_per_s,
                        pb.busbw_gb_per_s,
                    );
                }
            }
        }
    }
}

/// GEMM ceilings of the same dtype and shape.
fn gemm_rows(a: &MachineProfile, b: &MachineProfile, rows: &mut Rows) {
    for ga in &a.compute {
        if let Some(gb) = b
            .compute
            .iter()
            .find(|g| g.dtype == ga.dtype && g.m == ga.m && g.n == ga.n && g.k == ga.k)
        {
            rows.push(
                "gemm",
                format!("{} {}x{}x{}", ga.dtype, ga.m, ga.n, ga.k),
                "TFLOP/s",
                ga.tflops.median,
                gb.tflops.median,
            );
        }
    }
}

/// Launch costs of the same GPU, kernel and kind.
fn launch_rows(a: &MachineProfile, b: &MachineProfile, rows: &mut Rows) {
    for la in &a.launch {
        if let Some(lb) = b
            .launch
            .iter()
            .find(|l| l.device == la.device && l.kind == la.kind && l.kernel == la.kernel)
        {
            let what = format!("GPU {} {:?} {:?}", la.device, la.kernel, la.kind);
            rows.push(
                "launch",
                format!("{what} per kernel"),
                "us",
                la.per_kernel_us.median,
                lb.per_kernel_us.median,
            );
            if let (Some(ga), Some(gb)) = (&la.gpu_per_kernel_us, &lb.gpu_per_kernel_us) {
                rows.push(
                    "launch",
                    format!("{what} GPU per kernel"),
                    "us",
                    ga.median,
                    gb.median,
                );
            }
        }
    }
}

/// A GPU pair as a row names it: `GPU 0 -> GPU 1` (the same ordered pair in both profiles).
fn pair(src: u32, dst: u32) -> String {
    format!("GPU {src} -> GPU {dst}")
}

/// The GPUs of a row: `GPU 0`, `GPUs 0,1`, or both profiles' when they differ
/// (`GPUs 0,1 vs 2,3`): groups pair up by size, not by index.
fn gpus(a: &[u32], b: &[u32]) -> String {
    let list = |d: &[u32]| {
        d.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let noun = if a.len() == 1 { "GPU" } else { "GPUs" };
    if a == b {
        format!("{noun} {}", list(a))
    } else {
        format!("{noun} {} vs {}", list(a), list(b))
    }
}

/// Renders the rows as a terminal table.
pub fn render_table(r: &DiffReport) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_header(vec!["section", "figure", "unit", "A", "B", "B / A"]);
    for row in &r.rows {
        t.add_row(vec![
            row.section.clone(),
            row.item.clone(),
            row.unit.clone(),
            format!("{:.2}", row.a),
            format!("{:.2}", row.b),
            format!("{:.3}", row.ratio),
        ]);
    }
    format!("A = {}\nB = {}\n{t}\n", r.a, r.b)
}

/// `probe diff A B`.
pub fn run(args: DiffArgs) -> Result<()> {
    let a = MachineProfile::load(&args.a)?;
    let b = MachineProfile::load(&args.b)?;
    let report = DiffReport {
        schema_version: DIFF_SCHEMA_VERSION,
        a: args.a.display().to_string(),
        b: args.b.display().to_string(),
        rows: diff(&a, &b),
    };
    args.format.print(&report, || {
        if report.rows.is_empty() {
            println!("no figure appears in both profiles");
        }
        print!("{}", render_table(&report));
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> MachineProfile {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/h200-x1.json");
        MachineProfile::load(std::path::Path::new(path)).unwrap()
    }

    #[test]
    fn a_profile_against_itself_is_all_ones() {
        let p = profile();
        let rows = diff(&p, &p);
        assert!(rows.len() > 20);
        assert!(rows.iter().all(|r| (r.ratio - 1.0).abs() < 1e-12));
        assert!(rows.iter().any(|r| r.section == "gemm"));
        assert!(rows.iter().any(|r| r.section == "nccl"));
    }

    #[test]
    fn rows_name_their_gpus() {
        assert_eq!(pair(0, 3), "GPU 0 -> GPU 3");
        assert_eq!(gpus(&[0], &[0]), "GPU 0");
        assert_eq!(gpus(&[0, 1], &[2, 3]), "GPUs 0,1 vs 2,3");
    }

    #[test]
    fn halved_bandwidth_shows_as_half() {
        let a = profile();
        let mut b = a.clone();
        for h in &mut b.host_device {
            h.gb_per_s.median /= 2.0;
        }
        let rows = diff(&a, &b);
        let host: Vec<&DiffRow> = rows.iter().filter(|r| r.section == "host").collect();
        assert!(!host.is_empty());
        assert!(host.iter().all(|r| (r.ratio - 0.5).abs() < 1e-12));
    }
}
