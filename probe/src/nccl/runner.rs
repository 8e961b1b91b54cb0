//! Parent side of the NCCL measurements: one `probe nccl-worker` child per NCCL environment
//! for all groups (restarted for the groups left after one aborts), its spec passed as JSON on
//! the command line and one report per group read from stdout as it finishes. A child that
//! outlives its budget is killed and the group it was on recorded as `hang`.

use super::cross::{CrossHooks, READY_PREFIX};
use super::worker::{GroupReport, GroupSpec, REPORT_PREFIX, WorkerSpec, curve, empty_points};
use super::worst_class;
use crate::error::{ProbeError, Result};
use crate::plan::RunPlan;
use models::profile::{CollectiveCurve, CollectiveStatus, PairLink};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
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

/// What one worker child did: the groups it reported and how it ended.
pub struct ChildRun {
    /// Reports in the order printed.
    pub reports: Vec<GroupReport>,
    /// `None` when it exited successfully; otherwise why it died or was killed.
    pub died: Option<String>,
    /// NCCL's `NCCL_DEBUG=INFO` net lines it printed (cross-node workers run with them on).
    pub net_lines: Vec<String>,
    /// NCCL's channel lines (`Channel 00/0 : 0[0] -> 1[1] via …`), from its debug files.
    pub channel_lines: Vec<String>,
}

/// What the worker's stdout carries besides NCCL's own output.
enum Line {
    Report(String),
    Ready(u32),
    Net(String),
}

/// NCCL net lines kept per worker (they repeat per channel).
const NET_LINES_KEPT: usize = 200;

/// Whether a line of NCCL's debug output is one of its net lines.
fn is_net_line(line: &str) -> bool {
    line.contains("NCCL INFO") && (line.contains("NET/") || line.contains("Using network"))
}

/// The lines of NCCL's debug files under `dir` that `keep` accepts.
fn debug_lines_in(dir: &std::path::Path, keep: fn(&str) -> bool) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| {
            text.lines()
                .filter(|l| keep(l))
                .map(String::from)
                .collect::<Vec<_>>()
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

/// Runs one worker child. The clock restarts at every group report: a worker may take
/// `per_group` for each group, and is killed when one takes longer. With `hooks` (cross-node
/// groups) the worker's stdin is piped: at each "ready" line the hooks hold the rendezvous and
/// their directive goes to the worker (the clock restarts after it too); `extra_env` is set on
/// the child besides the spec's NCCL environment.
pub fn run_child(
    spec: &WorkerSpec,
    per_group: Duration,
    mut hooks: Option<&mut dyn CrossHooks>,
    extra_env: &[(String, String)],
) -> Result<ChildRun> {
    let exe = std::env::current_exe().map_err(|e| ProbeError::Io {
        path: "current_exe".into(),
        source: e,
    })?;
    let json = serde_json::to_string(spec).expect("spec serializes");
    let mut cmd = Command::new(exe);
    cmd.arg("nccl-worker").arg("--spec").arg(json);
    for (k, v) in spec
        .nccl_env
        .iter()
        .chain(extra_env.iter().map(|(k, v)| (k, v)))
    {
        cmd.env(k, v);
    }
    // NCCL writes its debug output to stdout through a block buffer, which can end mid-line
    // just before one of our report or ready lines: it goes to a file instead (the parent
    // reads NCCL's net lines from there), unless the user chose one.
    let debug_dir = tempfile::tempdir().ok();
    if std::env::var_os("NCCL_DEBUG_FILE").is_none()
        && let Some(d) = &debug_dir
    {
        cmd.env("NCCL_DEBUG_FILE", d.path().join("nccl.%h.%p.log"));
        // INFO for the channel lines that say which transport NCCL picked per peer (INIT is
        // their subsystem); the user's own NCCL_DEBUG wins.
        if std::env::var_os("NCCL_DEBUG").is_none() && !spec.nccl_env.contains_key("NCCL_DEBUG") {
            cmd.env("NCCL_DEBUG", "INFO");
            if std::env::var_os("NCCL_DEBUG_SUBSYS").is_none() {
                cmd.env("NCCL_DEBUG_SUBSYS", "INIT,NET");
            }
        }
    }
    let mut child = cmd
        .stdin(if hooks.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ProbeError::Io {
            path: "probe nccl-worker".into(),
            source: e,
        })?;
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel::<Line>();
    let out_t = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            // Found anywhere in the line: other output may precede ours on it.
            let after = |prefix: &str| line.find(prefix).map(|i| &line[i + prefix.len()..]);
            let item = if let Some(json) = after(REPORT_PREFIX) {
                Line::Report(json.to_string())
            } else if let Some(id) = after(READY_PREFIX) {
                match id.trim().parse() {
                    Ok(id) => Line::Ready(id),
                    Err(_) => continue,
                }
            } else if is_net_line(&line) {
                Line::Net(line)
            } else {
                continue;
            };
            if tx.send(item).is_err() {
                break;
            }
        }
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut run = ChildRun {
        reports: Vec::new(),
        died: None,
        net_lines: Vec::new(),
        channel_lines: Vec::new(),
    };
    let mut deadline = Instant::now() + per_group;
    let mut bad_line = None;
    let mut take = |item: Line,
                    run: &mut ChildRun,
                    hooks: &mut Option<&mut dyn CrossHooks>,
                    stdin: &mut Option<std::process::ChildStdin>|
     -> Result<()> {
        match item {
            Line::Report(json) => match serde_json::from_str::<GroupReport>(&json) {
                Ok(r) => {
                    if let (Some(h), Some(id)) = (hooks.as_deref_mut(), r.cross_group) {
                        h.report(id, r.clone())?;
                    }
                    run.reports.push(r);
                }
                Err(e) => bad_line = Some(e.to_string()),
            },
            Line::Ready(id) => {
                let Some(h) = hooks.as_deref_mut() else {
                    return Ok(());
                };
                let line = h.ready(id)?.line();
                if let Some(w) = stdin.as_mut() {
                    // A worker that died meanwhile shows in its exit status.
                    let _ = w.write_all(line.as_bytes()).and_then(|_| w.flush());
                }
            }
            Line::Net(l) => {
                if run.net_lines.len() < NET_LINES_KEPT {
                    run.net_lines.push(l);
                }
            }
        }
        Ok(())
    };
    let status = loop {
        while let Ok(item) = rx.try_recv() {
            if let Err(e) = take(item, &mut run, &mut hooks, &mut stdin) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
            deadline = Instant::now() + per_group;
        }
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
        std::thread::sleep(Duration::from_millis(2));
    };
    drop(stdin.take());
    let _ = out_t.join();
    // Lines that arrived between the last poll and the exit.
    for item in rx.try_iter() {
        // The worker is gone: a ready line now can only be answered by its absence.
        if !matches!(item, Line::Ready(_)) {
            take(item, &mut run, &mut hooks, &mut None)?;
        }
    }
    let err = err_t.join().unwrap_or_default();
    if let Some(d) = &debug_dir {
        run.net_lines.extend(
            debug_lines_in(d.path(), is_net_line)
                .into_iter()
                .take(NET_LINES_KEPT.saturating_sub(run.net_lines.len())),
        );
        run.channel_lines = debug_lines_in(d.path(), super::transport::is_channel_line);
    }
    let Some(status) = status else {
        run.died = Some(format!(
            "worker killed after {:.0} s without finishing the group",
            per_group.as_secs_f64()
        ));
        return Ok(run);
    };
    if let Some(e) = bad_line {
        return Err(ProbeError::Cuda {
            what: "reading the NCCL worker's report".into(),
            message: e,
        });
    }
    if status.success() {
        return Ok(run);
    }
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
    run.died = Some(format!("worker exited with {status}: {msg}"));
    Ok(run)
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
    fn net_lines_are_read_from_nccls_debug_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("nccl.h.1.log"),
            "h:1:1 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>\nh:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\nh:1:1 [0] NCCL INFO Using network Socket\n",
        )
        .unwrap();
        let lines = debug_lines_in(d.path(), is_net_line);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[1].ends_with("Using network Socket"));
        assert!(debug_lines_in(&d.path().join("missing"), is_net_line).is_empty());
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
