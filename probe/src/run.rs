//! `probe run`: drives a backend through the plan's steps and assembles the machine profile.

use crate::backend::Backend;
use crate::error::Result;
use crate::plan::{RunPlan, Step};
use models::profile::{MachineProfile, Provenance};

/// Runs `plan` on `backend`, reporting each unit of work to `progress`.
pub fn run_probe(
    backend: &mut dyn Backend,
    plan: &RunPlan,
    progress: &mut dyn FnMut(String),
) -> Result<MachineProfile> {
    let started = std::time::Instant::now();
    let selected = backend.select(plan.gpus.as_deref())?;
    progress(format!("inventory of GPUs {selected:?}"));
    // The inventory is always taken: every other step needs the devices and pairs.
    let inv = backend.inventory()?;
    let mut notes = inv.notes.clone();
    let mut links = inv.links.clone();
    let mut virt = backend.virtualization(&inv.devices);
    let mut profile = MachineProfile {
        provenance: provenance(&inv, virt.hypervisor.name.clone()),
        gpu_preset: inv
            .devices
            .first()
            .and_then(|d| models::GpuSpec::find_by_display_name(&d.name))
            .map(|s| s.name),
        devices: inv.devices,
        ..MachineProfile::empty(Provenance::default())
    };
    if plan.quick {
        notes.push("--quick: fewer sizes and samples than a full run".into());
    }
    // Seconds per step, kept in the notes: the evidence behind the --quick budget.
    let mut step_s: Vec<String> = vec![format!("inventory {:.1}", started.elapsed().as_secs_f64())];
    let mut clock = std::time::Instant::now();
    let mut lap = |name: &str, clock: &mut std::time::Instant| {
        step_s.push(format!("{name} {:.1}", clock.elapsed().as_secs_f64()));
        *clock = std::time::Instant::now();
    };
    if plan.has(Step::Host) {
        profile.host_device = backend.host(plan, &mut notes, progress)?;
        let staging = backend.host_staging(plan, &mut notes, progress)?;
        profile.host_staging = staging.curves;
        profile.pageable_variants = staging.pageable;
        profile.host_round_trips = staging.round_trips;
        lap("host", &mut clock);
    }
    if plan.has(Step::Device) {
        profile.device_memory = backend.device_memory(plan, &mut notes, progress)?;
        lap("device", &mut clock);
    }
    if plan.has(Step::P2p) {
        p2p_step(backend, plan, &profile, &mut links, &mut notes, progress)?;
        lap("p2p", &mut clock);
    }
    if plan.has(Step::Nccl) {
        nccl_step(backend, plan, &mut profile, &links, &mut notes, progress)?;
        lap("nccl", &mut clock);
    }
    if plan.has(Step::Gemm) {
        profile.compute = backend.gemm(plan, &mut notes, progress)?;
        lap("gemm", &mut clock);
    }
    if plan.has(Step::Launch) {
        profile.launch = backend.launch(plan, &mut notes, progress)?;
        lap("launch", &mut clock);
    }
    virt.peers = crate::classify::peer_checks(&links);
    (virt.p2p_state, virt.p2p_evidence) = crate::classify::machine_state(&links);
    profile.virtualization = Some(virt);
    profile.links = links;
    notes.push(format!(
        "probe run took {:.1} s{} (seconds per step: {})",
        started.elapsed().as_secs_f64(),
        if plan.quick { " (--quick)" } else { "" },
        step_s.join(", ")
    ));
    notes.dedup();
    profile.provenance.notes = notes;
    Ok(profile)
}

/// Who made the profile, when, on which driver, and the environment that shapes NCCL.
fn provenance(inv: &crate::inventory::Inventory, hypervisor: Option<String>) -> Provenance {
    Provenance {
        tool: "probe run".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        created_utc: rfc3339_now(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_string()),
        driver_version: inv.driver_version.clone(),
        cuda_version: inv.cuda_version.clone(),
        hypervisor,
        env: std::env::vars()
            // NCCL_VERSION is set by NVIDIA's container images and shapes nothing.
            .filter(|(k, _)| {
                (k.starts_with("NCCL_") && k != "NCCL_VERSION") || k == "CUDA_VISIBLE_DEVICES"
            })
            .collect(),
        ..Default::default()
    }
}

/// The P2P step: every pair (or a sample of them) measured, then classified.
fn p2p_step(
    backend: &mut dyn Backend,
    plan: &RunPlan,
    profile: &MachineProfile,
    links: &mut Vec<models::profile::PairLink>,
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(String),
) -> Result<()> {
    if plan.no_peer_access {
        notes.push("--no-peer-access: peer access was never enabled; every GPU pair was measured only as host-staged copies (D2H into pinned memory, then H2D)".into());
    }
    let sampled = if plan.p2p_sample_pairs {
        crate::p2p_sample::sampled_pairs(&profile.devices, links)
    } else {
        vec![true; links.len()]
    };
    backend.p2p(plan, links, &sampled, notes, progress)?;
    if sampled.contains(&false) {
        notes.push(crate::p2p_sample::annotate(
            &profile.devices,
            links,
            &sampled,
        ));
    }
    for l in links.iter_mut() {
        crate::classify::classify(l);
    }
    Ok(())
}

/// The NCCL step: collectives per group and environment, NCCL's version and the transport it
/// picked per peer.
fn nccl_step(
    backend: &mut dyn Backend,
    plan: &RunPlan,
    profile: &mut MachineProfile,
    links: &[models::profile::PairLink],
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(String),
) -> Result<()> {
    let groups = crate::nccl::choose_groups(&profile.devices, links);
    let out = backend.nccl(plan, &groups, links, progress)?;
    profile.provenance.nccl_version = out.version;
    profile.provenance.nccl_library_path = out.library_path;
    profile.collectives = out.curves;
    if out.transports.is_empty() {
        notes.push(if groups.iter().all(|g| g.len() < 2) {
            "nccl_transports: empty: every NCCL group has one rank, which has no peer to pick a transport for".into()
        } else {
            "nccl_transports: NCCL printed no channel lines (NCCL_DEBUG set by the user to less than INFO?)".into()
        });
    }
    profile.nccl_transports = out.transports;
    notes.extend(out.notes);
    Ok(())
}

/// The current UTC time as RFC 3339 (`2026-11-29T15:04:05Z`).
pub fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC (civil-from-days, proleptic Gregorian).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_764_430_000), "2025-11-29T15:26:40Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
