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
    out.push_str(&host_path_lines(p));
    for t in &p.host_round_trips {
        out.push_str(&format!(
            "host round trips GPU {}: dependent load {} µs, store-to-poll hop {} µs (one NCCL SHM ring step)\n",
            t.device,
            crate::stats::fmt_stat(&t.load_us),
            crate::stats::fmt_stat(&t.hop_us)
        ));
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

/// The `host path:` lines: the two figures per path that `sim advise --question p2p` indexes its
/// host-path sweep by and costs P2P off / routed from ([`models::profile::host_path`], the same
/// functions), so this output alone says which row of that sweep the machine is.
fn host_path_lines(p: &MachineProfile) -> String {
    use models::profile::P2pState;
    use models::profile::host_path::{shm_path, slowest_peer_copy};
    let mut out = String::new();
    if let Some(f) = shm_path(p, &[]) {
        out.push_str(&format!(
            "host path: SHM (mapped host memory, NCCL without P2P) {:.1} µs one-shot latency, {:.1} GB/s\n",
            f.latency_us, f.gb_per_s
        ));
    }
    let state = |s| move |l: &models::profile::PairLink| P2pState::of_link(l) == Some(s);
    let (which, f) = match slowest_peer_copy(p, &state(P2pState::Routed)) {
        Some(f) => ("routed pairs", Some(f)),
        None => (
            "pairs with P2P",
            slowest_peer_copy(p, &state(P2pState::Real)),
        ),
    };
    if let Some(f) = f {
        out.push_str(&format!(
            "host path: peer copy ({which}, slowest) {:.1} µs small copy, {:.1} GB/s\n",
            f.latency_us, f.gb_per_s
        ));
    }
    out
}
