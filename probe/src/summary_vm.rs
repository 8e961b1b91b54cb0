//! The summary's lines for the schema-3 sections: IOMMU, P2P reported vs working, the transport
//! NCCL picked per peer, the host-staged paths and pageable buffer kinds. Split from `summary`
//! to keep it short.

use models::profile::{HostStagedCurve, MachineProfile};

fn peak(c: &HostStagedCurve) -> f64 {
    c.points
        .iter()
        .map(|p| p.gb_per_s.median)
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
}

/// The lines, empty when the profile has none of these sections.
pub fn render(p: &MachineProfile) -> String {
    let mut out = String::new();
    if let Some(v) = &p.virtualization {
        let io = &v.iommu;
        let pages: Vec<String> = io
            .page_sizes_bytes
            .iter()
            .map(|b| models::units::fmt_bytes(*b))
            .collect();
        out.push_str(&format!(
            "IOMMU: {:?} ({} unit(s), {} group(s){}{})\n",
            io.mode,
            io.units.len(),
            io.groups,
            if pages.is_empty() {
                String::new()
            } else {
                format!(", pages {}", pages.join("/"))
            },
            if io.cmdline.is_empty() {
                String::new()
            } else {
                format!(", cmdline {}", io.cmdline.join(" "))
            },
        ));
        let reported = v
            .peers
            .iter()
            .filter(|c| c.reported_by_driver == Some(true))
            .count();
        let works = v
            .peers
            .iter()
            .filter(|c| c.copy_works == Some(true))
            .count();
        if !v.peers.is_empty() {
            out.push_str(&format!(
                "P2P: reported by the driver on {reported} of {} ordered pairs, a verified peer copy on {works}\n",
                v.peers.len()
            ));
        }
        match v.p2p_state {
            Some(s) => {
                out.push_str(&format!("P2P state: {s}\n"));
                for e in &v.p2p_evidence {
                    out.push_str(&format!("  {e}\n"));
                }
            }
            None => out.push_str(
                "P2P state: not classified (no GPU pair measured: one GPU, or --only without p2p)\n",
            ),
        }
    }
    if !p.nccl_transports.is_empty() {
        let mut picks: Vec<String> = p
            .nccl_transports
            .iter()
            .map(|t| {
                let d = |x: Option<u32>| x.map_or("?".to_string(), |x| x.to_string());
                format!(
                    "{}->{} {} ({} ch)",
                    d(t.from_device),
                    d(t.to_device),
                    t.via,
                    t.channels
                )
            })
            .collect();
        picks.dedup();
        out.push_str(&format!("NCCL transport per peer: {}\n", picks.join(", ")));
    }
    for c in &p.host_staging {
        out.push_str(&format!(
            "host staging GPU {} {:?} {:?}: peak {:.1} GB/s\n",
            c.device,
            c.path,
            c.direction,
            peak(c)
        ));
    }
    for v in &p.pageable_variants {
        out.push_str(&format!(
            "pageable H2D from {}: {} GB/s\n",
            v.buffer,
            crate::stats::fmt_stat(&v.gb_per_s)
        ));
    }
    out
}
