//! Parent side of the NCCL measurements: one `probe nccl-worker` child per (group, NCCL
//! environment), its spec passed as JSON on the command line and its report read as JSON from
//! stdout. A child that outlives its budget is killed and its missing points recorded as `hang`.

use super::worker::{WorkerReport, WorkerSpec};
use super::{OPS, counts, worst_class};
use crate::error::{ProbeError, Result};
use crate::plan::RunPlan;
use models::profile::{CollectiveCurve, CollectivePoint, CollectiveStatus, PairLink};
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
}

/// Builds the worker spec for one group and environment.
pub fn worker_spec(
    plan: &RunPlan,
    group: &[u32],
    links: &[PairLink],
    env: &[(String, String)],
) -> WorkerSpec {
    WorkerSpec {
        devices: group.to_vec(),
        sizes: plan.nccl_sizes.clone(),
        warmup: plan.repeats.warmup,
        samples: plan.repeats.samples,
        min_bytes_per_sample: plan.repeats.min_bytes_per_sample,
        max_reps: plan.repeats.max_reps,
        timeout_s: plan.nccl_timeout_s,
        link_class: worst_class(group, links),
        nccl_env: env.iter().cloned().collect::<BTreeMap<_, _>>(),
    }
}

/// Curves for a worker that never reported: every point `hang` (or `error`).
pub fn missing_report(spec: &WorkerSpec, status: CollectiveStatus) -> Vec<CollectiveCurve> {
    let n = spec.devices.len();
    OPS.iter()
        .map(|&op| CollectiveCurve {
            op,
            devices: spec.devices.clone(),
            link_class: spec.link_class,
            nccl_env: spec.nccl_env.clone(),
            points: spec
                .sizes
                .iter()
                .map(|&s| CollectivePoint {
                    bytes: counts(op, s, n).bytes,
                    time_us: crate::stats::missing(),
                    algbw_gb_per_s: 0.0,
                    busbw_gb_per_s: 0.0,
                    status,
                })
                .collect(),
        })
        .collect()
}

/// Runs one worker child with a wall-clock budget; `None` when it was killed or died.
pub fn run_child(
    spec: &WorkerSpec,
    budget: Duration,
) -> Result<std::result::Result<WorkerReport, String>> {
    let exe = std::env::current_exe().map_err(|e| ProbeError::Io {
        path: "current_exe".into(),
        source: e,
    })?;
    let json = serde_json::to_string(spec).expect("spec serializes");
    let mut cmd = Command::new(exe);
    cmd.arg("nccl-worker").arg("--spec").arg(json);
    for (k, v) in &spec.nccl_env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ProbeError::Io {
            path: "probe nccl-worker".into(),
            source: e,
        })?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + budget;
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| ProbeError::Io {
            path: "probe nccl-worker".into(),
            source: e,
        })? {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = out_t.join().unwrap_or_default();
    let err = err_t.join().unwrap_or_default();
    let Some(status) = status else {
        return Ok(Err(format!(
            "worker killed after {:.0} s",
            budget.as_secs_f64()
        )));
    };
    let last = out.lines().rev().find(|l| l.starts_with('{'));
    match (status.success(), last) {
        (true, Some(line)) => serde_json::from_str(line)
            .map(Ok)
            .map_err(|e| ProbeError::Cuda {
                what: "reading the NCCL worker's report".into(),
                message: e.to_string(),
            }),
        _ => {
            let msg = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output")
                .trim()
                .to_string();
            // A missing library or GPU is the environment's fault: surface it as such.
            if msg.contains("libnccl not found") {
                return Err(ProbeError::MissingLibrary {
                    library: "libnccl".into(),
                    hint: msg,
                });
            }
            Ok(Err(format!("worker exited with {status}: {msg}")))
        }
    }
}

/// `K=V K2=V2`: an environment variant as a shell would write it.
fn env_label(env: &[(String, String)]) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
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
    for v in &plan.nccl_env_variants {
        if in_force(v, |k| std::env::var(k).ok()) {
            // e.g. NCCL_P2P_DISABLE=1 exported around the whole run: the defaults already are
            // this variant, and running it again would only repeat them.
            out.notes.push(format!(
                "NCCL variant {} skipped: already set in the environment of the run (see provenance.env)",
                env_label(v)
            ));
        } else {
            variants.push(v.clone());
        }
    }
    for env in &variants {
        for g in groups {
            // A one-rank group has no transport to switch: variants would repeat the defaults.
            if g.len() == 1 && !env.is_empty() {
                continue;
            }
            tick(format!("nccl group {g:?} {}", env_label(env)));
            let spec = worker_spec(plan, g, links, env);
            // Budget: the per-wait timeout for every op, plus time to run all points.
            let budget = Duration::from_secs_f64(plan.nccl_timeout_s * 2.0 + 600.0);
            match run_child(&spec, budget)? {
                Ok(rep) => {
                    out.version = out.version.or(rep.nccl_version);
                    out.library_path = out.library_path.or(rep.library_path);
                    out.notes.extend(rep.notes);
                    out.curves.extend(rep.curves);
                }
                Err(why) => {
                    out.notes.push(format!(
                        "NCCL group {g:?}: {why}; its points are recorded as hang"
                    ));
                    out.curves
                        .extend(missing_report(&spec, CollectiveStatus::Hang));
                }
            }
        }
    }
    out.notes.sort();
    out.notes.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::in_force;

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
