//! Parent side of the NCCL measurements: one `probe nccl-worker` child per NCCL environment
//! for all groups (restarted for the groups left after one aborts), its spec passed as JSON on
//! the command line and one report per group read from stdout as it finishes. A child that
//! outlives its budget is killed and the group it was on recorded as `hang`.

use super::child::{ChildRun, run_child};
use super::protocol::{GroupReport, GroupSpec, WorkerSpec, curve, empty_points};
use super::worst_class;
use crate::error::Result;
use crate::plan::RunPlan;
use models::profile::{CollectiveCurve, CollectiveStatus, PairLink};
use std::collections::BTreeMap;
use std::time::Duration;

/// Everything the NCCL step produced.
#[derive(Debug, Default)]
pub struct NcclOutcome {
    /// All curves, defaults first, then each environment variant.
    pub curves: Vec<CollectiveCurve>,
    /// NCCL version reported by the library.
    pub version: Option<String>,
    /// The libnccl file the workers loaded.
    pub library_path: Option<String>,
    /// Remarks from the workers and the watchdog.
    pub notes: Vec<String>,
    /// The transport NCCL picked per peer, from its channel lines.
    pub transports: Vec<models::profile::NcclPeerTransport>,
}

/// Builds the worker spec for all groups under one environment.
pub fn worker_spec(
    plan: &RunPlan,
    groups: &[Vec<u32>],
    links: &[PairLink],
    env: &[(String, String)],
) -> WorkerSpec {
    WorkerSpec {
        groups: groups
            .iter()
            .map(|g| GroupSpec {
                devices: g.clone(),
                link_class: worst_class(g, links),
                cross: None,
            })
            .collect(),
        sizes: plan.nccl_sizes.clone(),
        warmup: plan.repeats.warmup,
        samples: plan.repeats.samples,
        min_bytes_per_sample: plan.repeats.min_bytes_per_sample,
        max_reps: plan.repeats.max_reps,
        timeout_s: plan.nccl_timeout_s,
        gated: plan.nccl_gated,
        nccl_env: env.iter().cloned().collect::<BTreeMap<_, _>>(),
    }
}

/// Curves for a group that never reported: every point `status` (`hang` or `error`).
pub fn missing_curves(
    spec: &WorkerSpec,
    group: &GroupSpec,
    status: CollectiveStatus,
) -> Vec<CollectiveCurve> {
    group
        .ops()
        .into_iter()
        .map(|op| {
            let pts = empty_points(&spec.sizes, op, group.nranks(), status);
            curve(spec, group, op, pts)
        })
        .collect()
}

/// Runs workers until every group of `spec` has a report or a reason it has none. `spawn`
/// runs one worker over the groups given. A worker that dies or is killed costs the group it
/// was on (the first unreported one, recorded with the reason); one that stops after an
/// aborted group is simply restarted for the rest — a fresh process for a possibly wedged
/// GPU, but one start for all groups in the usual case.
pub fn collect_groups(
    spec: &WorkerSpec,
    mut spawn: impl FnMut(&WorkerSpec) -> Result<ChildRun>,
) -> Result<Vec<(GroupSpec, std::result::Result<GroupReport, String>)>> {
    let mut done: Vec<(GroupSpec, std::result::Result<GroupReport, String>)> = Vec::new();
    let mut left: Vec<GroupSpec> = spec.groups.clone();
    while !left.is_empty() {
        let sub = WorkerSpec {
            groups: left.clone(),
            ..spec.clone()
        };
        let run = spawn(&sub)?;
        let before = left.len();
        for rep in run.reports {
            if let Some(i) = left.iter().position(|g| g.devices == rep.devices) {
                done.push((left.remove(i), Ok(rep)));
            }
        }
        match run.died {
            Some(why) if !left.is_empty() => done.push((left.remove(0), Err(why))),
            // Exited cleanly without reporting the group it was on: never loop on it.
            None if left.len() == before => {
                done.push((left.remove(0), Err("worker exited without a report".into())))
            }
            _ => {}
        }
    }
    // Back in the order asked for.
    done.sort_by_key(|(g, _)| spec.groups.iter().position(|s| s == g));
    Ok(done)
}

/// Whether every variable of `env` already has its value in the run's environment (`get`).
fn in_force(env: &[(String, String)], get: impl Fn(&str) -> Option<String>) -> bool {
    !env.is_empty()
        && env
            .iter()
            .all(|(k, v)| get(k).as_deref() == Some(v.as_str()))
}

/// Runs every group under the default environment and each variant.
pub fn measure_nccl(
    plan: &RunPlan,
    groups: &[Vec<u32>],
    links: &[PairLink],
    tick: &mut dyn FnMut(String),
) -> Result<NcclOutcome> {
    let mut out = NcclOutcome::default();
    let mut variants: Vec<Vec<(String, String)>> = vec![Vec::new()];
    let mut asked = plan.nccl_env_variants.clone();
    if plan.nccl_p2p_level_variant && crosses_root_complex(groups, links) {
        asked.push(vec![("NCCL_P2P_LEVEL".to_string(), "SYS".to_string())]);
        out.notes.push("NCCL_P2P_LEVEL=SYS variant added: a group crosses PHB/NODE/SYS links, where NCCL's default uses P2P only up to PXB and stages through host memory instead; the variant forces P2P there (a VM whose P2P writes land in a private mirror shows wrong results under it)".into());
    }
    for v in &asked {
        if in_force(v, |k| std::env::var(k).ok()) {
            // e.g. NCCL_P2P_DISABLE=1 exported around the whole run: the defaults already are
            // this variant, and running it again would only repeat them.
            out.notes.push(format!(
                "NCCL variant {} skipped: already set in the environment of the run (see provenance.env)",
                super::env_label(v.iter().map(|(k, v)| (k, v)))
            ));
        } else {
            variants.push(v.clone());
        }
    }
    for env in &variants {
        // A one-rank group has no transport to switch: variants would repeat the defaults.
        let groups: Vec<Vec<u32>> = groups
            .iter()
            .filter(|g| env.is_empty() || g.len() > 1)
            .cloned()
            .collect();
        if groups.is_empty() {
            continue;
        }
        tick(format!(
            "nccl groups {groups:?} {}",
            super::env_label(env.iter().map(|(k, v)| (k, v)))
        ));
        let spec = worker_spec(plan, &groups, links, env);
        // Per group: the per-wait timeout for every op, plus time to run all points.
        let per_group = Duration::from_secs_f64(plan.nccl_timeout_s * 2.0 + 600.0);
        let mut channel_lines = Vec::new();
        let results = collect_groups(&spec, |s| {
            let mut r = run_child(s, per_group, None, &[])?;
            channel_lines.append(&mut r.channel_lines);
            Ok(r)
        })?;
        out.transports
            .extend(super::transport::summarize(&channel_lines, &spec.nccl_env));
        for (group, res) in results {
            match res {
                Ok(rep) => {
                    out.version = out.version.or(rep.nccl_version);
                    out.library_path = out.library_path.or(rep.library_path);
                    out.notes.extend(rep.notes);
                    out.curves.extend(rep.curves);
                }
                Err(why) => {
                    out.notes.push(format!(
                        "NCCL group {:?}: {why}; its points are recorded as hang",
                        group.devices
                    ));
                    out.curves
                        .extend(missing_curves(&spec, &group, CollectiveStatus::Hang));
                }
            }
        }
    }
    out.notes
        .extend(super::verdict::compare_variants(&out.curves));
    out.notes.sort();
    out.notes.dedup();
    Ok(out)
}

/// Whether any multi-GPU group has a pair joined through a host bridge or the CPU (PHB, NODE,
/// SYS), where NCCL's default P2P level (PXB) does not reach.
fn crosses_root_complex(groups: &[Vec<u32>], links: &[PairLink]) -> bool {
    use models::profile::LinkClass;
    groups.iter().filter(|g| g.len() > 1).any(|g| {
        matches!(
            worst_class(g, links),
            Some(LinkClass::PHB | LinkClass::NODE | LinkClass::SYS)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(groups: &[&[u32]]) -> WorkerSpec {
        WorkerSpec {
            groups: groups
                .iter()
                .map(|g| GroupSpec {
                    devices: g.to_vec(),
                    link_class: None,
                    cross: None,
                })
                .collect(),
            sizes: vec![8, 1 << 20],
            warmup: 1,
            samples: 1,
            min_bytes_per_sample: 1,
            max_reps: 1,
            timeout_s: 1.0,
            gated: true,
            nccl_env: BTreeMap::new(),
        }
    }

    fn report(devices: &[u32], aborted: bool) -> GroupReport {
        GroupReport {
            devices: devices.to_vec(),
            nccl_version: None,
            library_path: None,
            curves: Vec::new(),
            notes: Vec::new(),
            aborted,
            cross_group: None,
            samples_us: Vec::new(),
        }
    }

    /// A scripted worker: each call reports the first `k` groups it is given (aborting after
    /// the last of them when `abort`), then ends as `died` says.
    fn scripted(
        script: Vec<(usize, bool, Option<&'static str>)>,
    ) -> impl FnMut(&WorkerSpec) -> Result<ChildRun> {
        let mut calls = script.into_iter();
        move |s: &WorkerSpec| {
            let (k, abort, died) = calls.next().expect("no more workers expected");
            let n = k.min(s.groups.len());
            let reports = s.groups[..n]
                .iter()
                .enumerate()
                .map(|(i, g)| report(&g.devices, abort && i + 1 == n))
                .collect();
            Ok(ChildRun {
                reports,
                died: died.map(String::from),
                net_lines: Vec::new(),
                channel_lines: Vec::new(),
            })
        }
    }

    #[test]
    fn one_worker_reports_every_group() {
        let s = spec(&[&[0, 1], &[0, 1, 2, 3], &[0, 1, 2, 3, 4, 5, 6, 7]]);
        let out = collect_groups(&s, scripted(vec![(3, false, None)])).unwrap();
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|(_, r)| r.is_ok()));
        assert_eq!(out[2].0.devices.len(), 8);
    }

    #[test]
    fn a_killed_worker_costs_only_the_group_it_was_on() {
        let s = spec(&[&[0, 1], &[0, 1, 2, 3], &[0, 1, 2, 3, 4, 5, 6, 7]]);
        // First worker reports [0,1] then is killed on [0..4); the second does the rest.
        let out = collect_groups(
            &s,
            scripted(vec![(1, false, Some("worker killed")), (1, false, None)]),
        )
        .unwrap();
        let verdicts: Vec<bool> = out.iter().map(|(_, r)| r.is_ok()).collect();
        assert_eq!(verdicts, vec![true, false, true]);
        assert_eq!(out[1].1.as_ref().unwrap_err(), "worker killed");
    }

    #[test]
    fn an_aborted_group_restarts_the_worker_for_the_rest() {
        let s = spec(&[&[0, 1], &[0, 1, 2, 3]]);
        let out = collect_groups(&s, scripted(vec![(1, true, None), (1, false, None)])).unwrap();
        assert!(out[0].1.as_ref().unwrap().aborted);
        assert!(out[1].1.is_ok());
    }

    #[test]
    fn a_silent_worker_cannot_loop_forever() {
        let s = spec(&[&[0, 1], &[2, 3]]);
        let out = collect_groups(&s, scripted(vec![(0, false, None), (0, false, None)])).unwrap();
        assert!(out.iter().all(|(_, r)| r.is_err()));
        let curves = missing_curves(&s, &out[0].0, CollectiveStatus::Hang);
        assert_eq!(curves.len(), super::super::OPS.len());
        assert!(curves.iter().all(|c| c.points.len() == 2));
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn variant_in_force_only_when_every_value_matches() {
        let v = env(&[("NCCL_P2P_DISABLE", "1")]);
        let set = |k: &str| (k == "NCCL_P2P_DISABLE").then(|| "1".to_string());
        let zero = |k: &str| (k == "NCCL_P2P_DISABLE").then(|| "0".to_string());
        assert!(in_force(&v, set));
        assert!(!in_force(&v, zero));
        assert!(!in_force(&v, |_| None));
        // The defaults (no variables) are never "a variant in force".
        assert!(!in_force(&[], set));
    }
}
