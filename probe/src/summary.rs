//! The terminal summary of a profile: devices, host↔device, device copy, the P2P matrix with
//! each pair's verdict, NCCL busbw at 1 MiB and 256 MiB per group, GEMM ceilings, launch floors.

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use models::profile::{
    CollectiveCurve, CollectiveStatus, Direction, LaunchKind, LaunchMeasurement, MachineProfile,
    PairLink, Stat, TransferMode,
};

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    t
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

use crate::stats::fmt_stat;
use models::units::fmt_bytes;

/// The best unidirectional peak over modes, and which mode gave it.
fn best_peak(l: &PairLink) -> Option<(f64, TransferMode)> {
    l.curves
        .iter()
        .filter(|c| c.direction == Direction::Unidirectional)
        .filter_map(|c| {
            c.points
                .iter()
                .map(|p| p.gb_per_s.median)
                .filter(|x| x.is_finite())
                .reduce(f64::max)
                .map(|bw| (bw, c.mode))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

fn mode_short(m: TransferMode) -> &'static str {
    match m {
        TransferMode::CopyEngine => "ce",
        TransferMode::SmKernel => "sm",
        TransferMode::HostStaged => "host",
    }
}

fn busbw_at(c: &CollectiveCurve, bytes: u64) -> String {
    match c.points.iter().find(|p| p.bytes == bytes) {
        Some(p) if p.status == CollectiveStatus::Ok => format!("{:.2}", p.busbw_gb_per_s),
        Some(p) => format!("{:?}", p.status).to_lowercase(),
        None => "-".into(),
    }
}

fn algbw_at(c: &CollectiveCurve, bytes: u64) -> String {
    match c.points.iter().find(|p| p.bytes == bytes) {
        Some(p) if p.status == CollectiveStatus::Ok => format!("{:.2}", p.algbw_gb_per_s),
        _ => "-".into(),
    }
}

/// Renders the whole summary.
pub fn render(p: &MachineProfile) -> String {
    let pv = &p.provenance;
    let mut out = format!(
        "driver {} · CUDA {} · NCCL {} ({}) · hypervisor: {}\n",
        pv.driver_version.as_deref().unwrap_or("?"),
        pv.cuda_version.as_deref().unwrap_or("?"),
        pv.nccl_version.as_deref().unwrap_or("-"),
        pv.nccl_library_path.as_deref().unwrap_or("-"),
        pv.hypervisor.as_deref().unwrap_or("none"),
    );
    out.push_str(&devices_table(p));
    out.push_str(&crate::summary_vm::render(p));
    if !p.nodes.is_empty() {
        out.push_str(&nodes_table(p));
    }
    out.push_str(&host_device_table(p));
    out.push_str(&device_memory_table(p));
    out.push_str(&p2p_tables(p));
    out.push_str(&collectives_table(p));
    out.push_str(&compute_table(p));
    if !p.launch.is_empty() {
        out.push_str(&launch_table(&p.launch));
    }
    out
}

/// The GPUs: name, bus, NUMA node, PCIe link now and at most, memory, compute capability.
fn devices_table(p: &MachineProfile) -> String {
    let mut out = String::new();
    let mut t = table(&[
        "GPU",
        "name",
        "PCI bus",
        "NUMA",
        "PCIe now/max",
        "memory",
        "CC",
    ]);
    for d in &p.devices {
        let link = |g: Option<u32>, w: Option<u32>| match (g, w) {
            (Some(g), Some(w)) => format!("Gen{g} x{w}"),
            _ => "?".into(),
        };
        t.add_row(vec![
            d.index.to_string(),
            d.name.clone(),
            d.pci_bus_id.clone().unwrap_or_default(),
            d.numa_node
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into()),
            format!(
                "{} / {}",
                link(d.pcie_gen_current, d.pcie_width_current),
                link(d.pcie_gen_max, d.pcie_width_max)
            ),
            gib(d.memory_bytes),
            d.compute_capability
                .map(|c| format!("{}.{}", c[0], c[1]))
                .unwrap_or_default(),
        ]);
    }
    out.push_str(&format!("{t}\n"));
    out
}

/// Host ↔ device copies by memory kind, direction and size.
fn host_device_table(p: &MachineProfile) -> String {
    let mut out = String::new();
    if p.host_device.is_empty() {
        return out;
    }
    let mut t = table(&[
        "GPUs",
        "host memory",
        "direction",
        "size",
        "GB/s median (p10–p90)",
    ]);
    for h in &p.host_device {
        t.add_row(vec![
            format!("{:?}", h.devices),
            format!("{:?}", h.memory).to_lowercase(),
            format!("{:?}", h.direction),
            fmt_bytes(h.bytes),
            fmt_stat(&h.gb_per_s),
        ]);
    }
    out.push_str(&format!("Host ↔ device\n{t}\n"));
    out
}

/// Device memory copy bandwidth by size.
fn device_memory_table(p: &MachineProfile) -> String {
    let mut out = String::new();
    if p.device_memory.is_empty() {
        return out;
    }
    let mut t = table(&[
        "GPU",
        "size",
        "copy GB/s (bytes copied once)",
        "DRAM traffic GB/s (read + write)",
    ]);
    for d in &p.device_memory {
        t.add_row(vec![
            d.device.to_string(),
            fmt_bytes(d.bytes),
            fmt_stat(&d.copy_gb_per_s),
            format!("{:.1}", 2.0 * d.copy_gb_per_s.median),
        ]);
    }
    out.push_str(&format!("Device memory\n{t}\n"));
    out
}

/// The P2P peak matrix and the per-pair table (topology, class, latencies, evidence).
fn p2p_tables(p: &MachineProfile) -> String {
    let mut out = String::new();
    if p.links.is_empty() {
        return out;
    }
    let ids: Vec<u32> = p.devices.iter().map(|d| d.index).collect();
    let mut header = vec!["src \\ dst".to_string()];
    header.extend(ids.iter().map(|i| i.to_string()));
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).set_header(header);
    for &s in &ids {
        let mut row = vec![s.to_string()];
        for &d in &ids {
            let cell = p
                .links
                .iter()
                .find(|l| l.src == s && l.dst == d)
                .and_then(best_peak)
                .map(|(bw, m)| format!("{bw:.1} {}", mode_short(m)))
                .unwrap_or_else(|| if s == d { "X".into() } else { "-".into() });
            row.push(cell);
        }
        t.add_row(row);
    }
    out.push_str(&format!("P2P peak GB/s, one direction (ce = copy engine, sm = SM kernel, host = staged through host)\n{t}\n"));
    let mut t = table(&[
        "pair",
        "topology",
        "class",
        "latency µs (ce / sm / host)",
        "evidence",
    ]);
    for l in &p.links {
        let lat = |k: &str| {
            l.latency_us
                .get(k)
                .map(|s| format!("{:.2}", s.median))
                .unwrap_or_else(|| "-".into())
        };
        t.add_row(vec![
            format!("{} → {}", l.src, l.dst),
            format!("{:?}", l.topology),
            l.classification
                .map(|c| format!("{c:?}"))
                .unwrap_or_else(|| "-".into()),
            format!(
                "{} / {} / {}",
                lat("copy-engine"),
                lat("sm-kernel"),
                lat("host-staged")
            ),
            l.evidence.join("; "),
        ]);
    }
    out.push_str(&format!("{t}\n"));
    out
}

/// NCCL collectives at 1 MiB and the largest size, and which NCCL environment wins by size.
fn collectives_table(p: &MachineProfile) -> String {
    let mut out = String::new();
    if p.collectives.is_empty() {
        return out;
    }
    // 256 MiB, or the largest size measured where that is smaller (--quick stops at 64 MiB).
    let large = p
        .collectives
        .iter()
        .flat_map(|c| c.points.iter().map(|x| x.bytes))
        .filter(|&b| b <= 256 << 20)
        .max()
        .unwrap_or(256 << 20);
    let (bus_large, alg_large) = (
        format!("busbw {}", fmt_bytes(large)),
        format!("algbw {}", fmt_bytes(large)),
    );
    let mut t = table(&[
        "op",
        "GPUs",
        "worst link",
        "NCCL env",
        "busbw 1 MiB",
        &bus_large,
        "algbw 1 MiB",
        &alg_large,
        "not ok",
    ]);
    for c in &p.collectives {
        let bad = c
            .points
            .iter()
            .filter(|p| p.status != CollectiveStatus::Ok)
            .count();
        t.add_row(vec![
            format!("{:?}", c.op),
            format!("{:?}", c.devices),
            c.link_class.map(|l| format!("{l:?}")).unwrap_or_default(),
            crate::nccl::env_label(&c.nccl_env),
            busbw_at(c, 1 << 20),
            busbw_at(c, large),
            algbw_at(c, 1 << 20),
            algbw_at(c, large),
            bad.to_string(),
        ]);
    }
    out.push_str(&format!("NCCL (GB/s, nccl-tests formulas)\n{t}\n"));
    let verdicts = crate::nccl::verdict::compare_variants(&p.collectives);
    if !verdicts.is_empty() {
        out.push_str("NCCL environments, faster side by size (ratio of algbw):\n");
        for v in verdicts {
            out.push_str(&format!("  {v}\n"));
        }
    }
    out
}

/// GEMM ceilings (cuBLASLt).
fn compute_table(p: &MachineProfile) -> String {
    let mut out = String::new();
    if p.compute.is_empty() {
        return out;
    }
    let mut t = table(&[
        "GPU",
        "dtype",
        "M (tokens)",
        "N",
        "K",
        "time µs",
        "TFLOP/s median (p10–p90)",
    ]);
    for g in &p.compute {
        t.add_row(vec![
            g.device.to_string(),
            g.dtype.clone(),
            g.m.to_string(),
            g.n.to_string(),
            g.k.to_string(),
            format!("{:.1}", g.time_us.median),
            fmt_stat(&g.tflops),
        ]);
    }
    out.push_str(&format!("GEMM (cuBLASLt)\n{t}\n"));
    out
}

/// A multi-node profile's nodes: host, GPUs (global indices), launcher, NCCL's transport and
/// the NICs it used.
fn nodes_table(p: &MachineProfile) -> String {
    let mut t = table(&[
        "node",
        "host",
        "GPUs",
        "launcher",
        "NCCL net",
        "NICs (* = used by NCCL)",
    ]);
    for n in &p.nodes {
        let nics: Vec<String> = n
            .nics
            .iter()
            .map(|x| {
                let speed = x
                    .speed_gbit_per_s
                    .map_or(String::new(), |s| format!(" {s:.0} Gb/s"));
                format!("{}{}{speed}", if x.used_by_nccl { "*" } else { "" }, x.name)
            })
            .collect();
        t.add_row(vec![
            n.rank.to_string(),
            n.hostname.clone().unwrap_or_default(),
            format!("{:?}", n.devices),
            n.launcher.clone().unwrap_or_default(),
            n.net_transport.clone().unwrap_or_else(|| "-".into()),
            nics.join(", "),
        ]);
    }
    format!("Nodes\n{t}\n")
}

/// One row per GPU and kernel: the graph figure beside the eager pair.
fn launch_table(launch: &[LaunchMeasurement]) -> String {
    let mut t = table(&[
        "GPU",
        "kernel",
        "chain",
        "graph µs/node",
        "eager host µs/launch",
        "eager GPU µs/kernel",
    ]);
    let mut keys: Vec<(u32, models::profile::LaunchKernel)> = Vec::new();
    for m in launch {
        if !keys.contains(&(m.device, m.kernel)) {
            keys.push((m.device, m.kernel));
        }
    }
    for (device, kernel) in keys {
        let find = |kind| {
            launch
                .iter()
                .find(|m| m.device == device && m.kernel == kernel && m.kind == kind)
        };
        let (graph, eager) = (find(LaunchKind::GraphNode), find(LaunchKind::EagerLaunch));
        let any = graph.or(eager).expect("a key comes from a measurement");
        let name = match &any.shape {
            Some(shape) => format!("{:?} ({shape})", kernel),
            None => format!("{kernel:?}"),
        };
        t.add_row(vec![
            device.to_string(),
            name,
            any.chain_length.to_string(),
            graph.map_or("-".into(), |m| fmt_stat_2(&m.per_kernel_us)),
            eager.map_or("-".into(), |m| fmt_stat_2(&m.per_kernel_us)),
            eager
                .and_then(|m| m.gpu_per_kernel_us.as_ref())
                .map_or("-".into(), fmt_stat_2),
        ]);
    }
    format!("Launch floors, median (p10–p90)\n{t}\n")
}

/// Like [`fmt_stat`] with two decimals: launch floors are a few µs.
fn fmt_stat_2(s: &Stat) -> String {
    if s.samples == 0 || !s.median.is_finite() {
        return "-".into();
    }
    format!("{:.2} ({:.2}–{:.2})", s.median, s.p10, s.p90)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_in_binary_units() {
        assert_eq!(fmt_bytes(1 << 20), "1 MiB");
        assert_eq!(fmt_bytes(256 << 20), "256 MiB");
        assert_eq!(fmt_bytes(8), "8 B");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn missing_stats_print_a_dash() {
        assert_eq!(fmt_stat(&crate::stats::missing()), "-");
        assert_eq!(fmt_stat(&Stat::exact(2.0)), "2.0");
    }
}
