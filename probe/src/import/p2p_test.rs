//! CUDA samples' `p2pBandwidthLatencyTest` output into pair links and device copy figures.
//!
//! Matrices read (titles as the sample prints them):
//! `Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)` → host-staged, one direction (the
//! driver stages through host memory when P2P is off); `Unidirectional P2P=Enabled Bandwidth
//! (P2P Writes) Matrix (GB/s)` → copy engine, one direction; the two `Bidirectional …` matrices
//! likewise for both directions; `P2P=Disabled Latency Matrix (us)` and `P2P=Enabled Latency
//! (P2P Writes) Matrix (us)` (their `GPU` block) → latency; `P2P Connectivity Matrix` →
//! `cuDeviceCanAccessPeer`. Diagonals (a GPU with itself) become device-copy figures. The
//! sample copies 10 M ints (40 MB) per transfer; `(P2P Reads)` matrices and the `CPU` latency
//! blocks are not used.

use crate::error::{ProbeError, Result};
use models::profile::{
    DeviceInfo, DeviceMemoryMeasurement, Direction, LinkClass, PairLink, SizePoint, Stat,
    TransferCurve, TransferMode,
};
use std::collections::BTreeMap;
use std::path::Path;

/// Bytes per transfer in p2pBandwidthLatencyTest (numElems = 10,000,000 ints).
pub const SAMPLE_BYTES: u64 = 40_000_000;

/// What the log says.
#[derive(Debug, Clone, PartialEq)]
pub struct P2pTestLog {
    /// Devices from the `Device: N, NAME, pciBusID: …` lines.
    pub devices: Vec<DeviceInfo>,
    /// Every ordered pair i ≠ j.
    pub links: Vec<PairLink>,
    /// Diagonal of the unidirectional P2P=Disabled matrix.
    pub device_memory: Vec<DeviceMemoryMeasurement>,
}

type Matrix = Vec<Vec<f64>>;

fn read_matrix(lines: &[&str], start: usize, path: &Path) -> Result<(Matrix, usize)> {
    // Header line ("   D\D     0      1" or "   GPU     0      1"), then one row per device.
    let header = lines.get(start).ok_or_else(|| ProbeError::Parse {
        path: path.to_path_buf(),
        line: start + 1,
        problem: "matrix title without a matrix".into(),
    })?;
    let n = header.split_whitespace().skip(1).count();
    let mut m = Vec::with_capacity(n);
    for r in 0..n {
        let ln = start + 1 + r;
        let line = lines.get(ln).copied().unwrap_or("");
        let vals: Vec<f64> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| ProbeError::Parse {
                path: path.to_path_buf(),
                line: ln + 1,
                problem: format!("matrix row `{}` is not numbers", line.trim()),
            })?;
        if vals.len() != n {
            return Err(ProbeError::Parse {
                path: path.to_path_buf(),
                line: ln + 1,
                problem: format!(
                    "matrix row has {} values, header has {n} devices",
                    vals.len()
                ),
            });
        }
        m.push(vals);
    }
    Ok((m, start + 1 + n))
}

/// Parses the sample's output.
pub fn parse(text: &str, path: &Path) -> Result<P2pTestLog> {
    let lines: Vec<&str> = text.lines().collect();
    let (devices, mats) = read_sections(&lines, path)?;
    let n = matrix_size(&mats, path)?;
    let devices = one_device_per_row(devices, n);
    let mut links = Vec::new();
    for s in 0..n {
        for d in (0..n).filter(|&d| d != s) {
            links.push(pair_link(&mats, &devices, s, d));
        }
    }
    let device_memory = mats["uni_off"]
        .iter()
        .enumerate()
        .map(|(k, row)| DeviceMemoryMeasurement {
            device: devices.get(k).map(|x| x.index).unwrap_or(k as u32),
            bytes: SAMPLE_BYTES,
            copy_gb_per_s: Stat::exact(row[k]),
        })
        .collect();
    Ok(P2pTestLog {
        devices,
        links,
        device_memory,
    })
}

/// The matrices the log prints, by their title's start, and the key each is kept under.
const TITLES: [(&str, &str); 7] = [
    ("P2P Connectivity Matrix", "conn"),
    ("Unidirectional P2P=Disabled Bandwidth Matrix", "uni_off"),
    (
        "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix",
        "uni_on",
    ),
    ("Bidirectional P2P=Disabled Bandwidth Matrix", "bi_off"),
    ("Bidirectional P2P=Enabled Bandwidth Matrix", "bi_on"),
    ("P2P=Disabled Latency Matrix", "lat_off"),
    ("P2P=Enabled Latency (P2P Writes) Matrix", "lat_on"),
];

/// The `Device:` lines and the matrices of the log, in the order printed.
fn read_sections(
    lines: &[&str],
    path: &Path,
) -> Result<(Vec<DeviceInfo>, BTreeMap<&'static str, Matrix>)> {
    let mut devices = Vec::new();
    let mut mats: BTreeMap<&'static str, Matrix> = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if let Some(rest) = t.strip_prefix("Device: ") {
            devices.extend(device_line(rest));
        } else if let Some((_, key)) = TITLES.iter().find(|(title, _)| t.starts_with(title)) {
            let (m, next) = read_matrix(lines, i + 1, path)?;
            mats.insert(key, m);
            i = next;
            continue;
        }
        i += 1;
    }
    Ok((devices, mats))
}

/// One GPU from the rest of its `Device:` line: "0, NVIDIA H100 80GB HBM3, pciBusID: 18,
/// pciDeviceID: 0, pciDomainID:0".
fn device_line(rest: &str) -> Option<DeviceInfo> {
    let parts: Vec<&str> = rest.split(", ").collect();
    let idx = parts.first().and_then(|x| x.trim().parse::<u32>().ok())?;
    let name = parts.get(1)?;
    let field = |k: &str| {
        parts
            .iter()
            .find_map(|p| p.trim().strip_prefix(k))
            .map(|v| v.trim().to_string())
    };
    let bus = match (
        field("pciDomainID:"),
        field("pciBusID:"),
        field("pciDeviceID:"),
    ) {
        (Some(dom), Some(b), Some(d)) => Some(format!(
            "{:04x}:{:02x}:{:02x}.0",
            u32::from_str_radix(&dom, 16).unwrap_or(0),
            u32::from_str_radix(&b, 16).unwrap_or(0),
            u32::from_str_radix(&d, 16).unwrap_or(0)
        )),
        _ => None,
    };
    Some(DeviceInfo {
        index: idx,
        name: name.trim().to_string(),
        pci_bus_id: bus,
        ..Default::default()
    })
}

/// The GPU count: the P2P=Disabled bandwidth matrix's, which every other matrix must share (a
/// truncated or spliced log may not).
fn matrix_size(mats: &BTreeMap<&'static str, Matrix>, path: &Path) -> Result<usize> {
    let n = mats.get("uni_off").map(|m| m.len()).ok_or_else(|| ProbeError::Parse {
        path: path.to_path_buf(),
        line: 1,
        problem: "no `Unidirectional P2P=Disabled Bandwidth Matrix`: is this p2pBandwidthLatencyTest output?".into(),
    })?;
    if let Some((title, m)) = TITLES
        .iter()
        .find_map(|(title, key)| mats.get(key).filter(|m| m.len() != n).map(|m| (title, m)))
    {
        return Err(ProbeError::Parse {
            path: path.to_path_buf(),
            line: 1,
            problem: format!(
                "`{title}` has {} GPUs but the P2P=Disabled bandwidth matrix has {n}; is the log complete?",
                m.len()
            ),
        });
    }
    Ok(n)
}

/// One device per matrix row, in order: the `Device:` lines where they are complete, numbered
/// by row when their indices repeat.
fn one_device_per_row(mut devices: Vec<DeviceInfo>, n: usize) -> Vec<DeviceInfo> {
    devices.truncate(n);
    for k in devices.len()..n {
        devices.push(DeviceInfo {
            index: k as u32,
            name: devices.first().map_or("unknown".into(), |d| d.name.clone()),
            ..Default::default()
        });
    }
    let mut seen = std::collections::HashSet::new();
    if !devices.iter().all(|d| seen.insert(d.index)) {
        for (k, d) in devices.iter_mut().enumerate() {
            d.index = k as u32;
        }
    }
    devices
}

/// The pair `s → d` (matrix rows): its curves with P2P on and off, latencies, peer access and
/// class.
fn pair_link(
    mats: &BTreeMap<&'static str, Matrix>,
    devices: &[DeviceInfo],
    s: usize,
    d: usize,
) -> PairLink {
    let point = |gbps: f64, bytes: u64| SizePoint {
        bytes: SAMPLE_BYTES,
        time_us: Stat::exact(bytes as f64 / (gbps * 1e9) * 1e6),
        gb_per_s: Stat::exact(gbps),
    };
    let mut curves = Vec::new();
    for (key, mode, dir) in [
        (
            "uni_off",
            TransferMode::HostStaged,
            Direction::Unidirectional,
        ),
        (
            "uni_on",
            TransferMode::CopyEngine,
            Direction::Unidirectional,
        ),
        ("bi_off", TransferMode::HostStaged, Direction::Bidirectional),
        ("bi_on", TransferMode::CopyEngine, Direction::Bidirectional),
    ] {
        if let Some(m) = mats.get(key) {
            let moved = if dir == Direction::Bidirectional {
                2 * SAMPLE_BYTES
            } else {
                SAMPLE_BYTES
            };
            curves.push(TransferCurve {
                mode,
                direction: dir,
                points: vec![point(m[s][d], moved)],
                data_verified: None,
            });
        }
    }
    let mut latency_us = BTreeMap::new();
    if let Some(m) = mats.get("lat_off") {
        latency_us.insert("host-staged".to_string(), Stat::exact(m[s][d]));
    }
    if let Some(m) = mats.get("lat_on") {
        latency_us.insert("copy-engine".to_string(), Stat::exact(m[s][d]));
    }
    let can = mats.get("conn").map(|m| m[s][d] != 0.0);
    // Without peer access the "P2P=Enabled" runs fall back to staged copies too.
    if can == Some(false) {
        curves.retain(|c| c.mode == TransferMode::HostStaged);
        latency_us.remove("copy-engine");
    }
    let mut link = PairLink {
        src: devices.get(s).map(|x| x.index).unwrap_or(s as u32),
        dst: devices.get(d).map(|x| x.index).unwrap_or(d as u32),
        topology: LinkClass::Unknown,
        nvml_p2p_status: None,
        can_access_peer: can,
        classification: None,
        evidence: vec![
            "imported from p2pBandwidthLatencyTest (40 MB copies, data not checked)".into(),
        ],
        latency_us,
        curves,
    };
    crate::classify::classify(&mut link);
    link
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::profile::PairClass;

    const LOG: &str = include_str!("../../tests/fixtures/p2pBandwidthLatencyTest_vm.txt");

    #[test]
    fn reads_all_matrices_of_a_vm_without_p2p() {
        let l = parse(LOG, Path::new("p2p.txt")).unwrap();
        assert_eq!(l.devices.len(), 4);
        assert_eq!(l.devices[1].pci_bus_id.as_deref(), Some("0000:2a:00.0"));
        assert_eq!(l.links.len(), 12);
        let l01 = l.links.iter().find(|x| x.src == 0 && x.dst == 1).unwrap();
        assert_eq!(l01.can_access_peer, Some(false));
        assert_eq!(l01.classification, Some(PairClass::HostBounce));
        let staged = l01
            .curves
            .iter()
            .find(|c| {
                c.mode == TransferMode::HostStaged && c.direction == Direction::Unidirectional
            })
            .unwrap();
        assert_eq!(staged.points[0].gb_per_s.median, 21.42);
        assert_eq!(l01.latency_us["host-staged"].median, 14.33);
        assert_eq!(l.device_memory[0].copy_gb_per_s.median, 1480.06);
        // GPUs 2 and 3 do have P2P in this log.
        let l23 = l.links.iter().find(|x| x.src == 2 && x.dst == 3).unwrap();
        assert_eq!(l23.classification, Some(PairClass::P2p));
    }

    #[test]
    fn truncated_matrix_is_a_line_numbered_error() {
        let cut: String = LOG.lines().take(22).collect::<Vec<_>>().join("\n");
        let e = parse(&cut, Path::new("cut.txt")).unwrap_err().to_string();
        assert!(e.starts_with("cut.txt:"), "{e}");
    }
}
