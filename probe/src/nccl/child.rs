//! One `probe nccl-worker` child process: started with its spec, its stdout read line by line
//! (group reports, "ready" lines, NCCL's net lines), its stdin answering ready lines through the
//! cross-node hooks, and killed when a group outlives its budget. Each step is its own function:
//! the command, the readers, the polling loop and the verdict on how the child ended.

use super::protocol::{CrossHooks, GroupReport, READY_PREFIX, REPORT_PREFIX, WorkerSpec};
use crate::error::{ProbeError, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
pub(super) fn is_net_line(line: &str) -> bool {
    line.contains("NCCL INFO") && (line.contains("NET/") || line.contains("Using network"))
}

/// The lines of NCCL's debug files under `dir` that `keep` accepts.
pub(super) fn debug_lines_in(dir: &std::path::Path, keep: fn(&str) -> bool) -> Vec<String> {
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

/// Runs one worker child. The clock restarts at every group report: a worker may take
/// `per_group` for each group, and is killed when one takes longer. With `hooks` (cross-node
/// groups) the worker's stdin is piped: at each "ready" line the hooks hold the rendezvous and
/// their directive goes to the worker (the clock restarts after it too); `extra_env` is set on
/// the child besides the spec's NCCL environment.
pub fn run_child(
    spec: &WorkerSpec,
    per_group: Duration,
    hooks: Option<&mut dyn CrossHooks>,
    extra_env: &[(String, String)],
) -> Result<ChildRun> {
    let (mut cmd, debug_dir) = worker_command(spec, extra_env)?;
    let mut child = spawn(&mut cmd, hooks.is_some())?;
    let readers = Readers::attach(&mut child);
    let mut c = Collector {
        run: ChildRun {
            reports: Vec::new(),
            died: None,
            net_lines: Vec::new(),
            channel_lines: Vec::new(),
        },
        hooks,
        stdin: child.stdin.take(),
        bad_report: None,
    };
    let status = match c.poll(&mut child, &readers.lines, per_group) {
        Ok(s) => s,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    drop(c.stdin.take());
    let stderr = readers.finish(&mut c)?;
    if let Some(d) = &debug_dir {
        c.add_debug_lines(d.path());
    }
    verdict(c, status, &stderr, per_group)
}

/// The `probe nccl-worker` command for `spec`, and the folder NCCL's debug files go to.
fn worker_command(
    spec: &WorkerSpec,
    extra_env: &[(String, String)],
) -> Result<(Command, Option<tempfile::TempDir>)> {
    let exe = std::env::current_exe().map_err(|e| ProbeError::Io {
        path: "current_exe".into(),
        source: e,
    })?;
    let json = serde_json::to_string(spec).map_err(|e| ProbeError::WorkerProtocol {
        what: "writing the NCCL worker's spec".into(),
        message: e.to_string(),
    })?;
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
    Ok((cmd, debug_dir))
}

/// Starts the child, its stdin piped only when hooks answer its ready lines.
fn spawn(cmd: &mut Command, answers_ready: bool) -> Result<Child> {
    cmd.stdin(if answers_ready {
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
    })
}

/// One of our lines in the worker's stdout, or `None` for NCCL's other output. Found anywhere
/// in the line: other output may precede ours on it.
fn classify(line: String) -> Option<Line> {
    let after = |prefix: &str| line.find(prefix).map(|i| &line[i + prefix.len()..]);
    if let Some(json) = after(REPORT_PREFIX) {
        Some(Line::Report(json.to_string()))
    } else if let Some(id) = after(READY_PREFIX) {
        id.trim().parse().ok().map(Line::Ready)
    } else if is_net_line(&line) {
        Some(Line::Net(line))
    } else {
        None
    }
}

/// The threads reading the child's stdout (into `lines`) and stderr (kept whole).
struct Readers {
    lines: Receiver<Line>,
    stdout: JoinHandle<()>,
    stderr: JoinHandle<String>,
}

impl Readers {
    fn attach(child: &mut Child) -> Readers {
        let stdout = child.stdout.take().expect("stdout is piped by spawn");
        let mut stderr = child.stderr.take().expect("stderr is piped by spawn");
        let (tx, lines) = std::sync::mpsc::channel::<Line>();
        let stdout = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if let Some(item) = classify(line)
                    && tx.send(item).is_err()
                {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Readers {
            lines,
            stdout,
            stderr,
        }
    }

    /// After the child ended: the lines that arrived between the last poll and the exit go to
    /// `c`, and the child's stderr is returned.
    fn finish(self, c: &mut Collector<'_>) -> Result<String> {
        let _ = self.stdout.join();
        for item in self.lines.try_iter() {
            // The worker is gone: a ready line now can only be answered by its absence.
            if !matches!(item, Line::Ready(_)) {
                c.take(item)?;
            }
        }
        Ok(self.stderr.join().unwrap_or_default())
    }
}

/// What has been read from the child so far, and the hooks its ready lines go to.
struct Collector<'h> {
    run: ChildRun,
    hooks: Option<&'h mut dyn CrossHooks>,
    stdin: Option<ChildStdin>,
    /// The first report line that was not a report (a worker bug, said after it ends).
    bad_report: Option<String>,
}

impl Collector<'_> {
    fn take(&mut self, item: Line) -> Result<()> {
        match item {
            Line::Report(json) => match serde_json::from_str::<GroupReport>(&json) {
                Ok(r) => {
                    if let (Some(h), Some(id)) = (self.hooks.as_deref_mut(), r.cross_group) {
                        h.report(id, r.clone())?;
                    }
                    self.run.reports.push(r);
                }
                Err(e) => {
                    self.bad_report.get_or_insert(e.to_string());
                }
            },
            Line::Ready(id) => {
                let Some(h) = self.hooks.as_deref_mut() else {
                    return Ok(());
                };
                let line = h.ready(id)?.line();
                if let Some(w) = self.stdin.as_mut() {
                    // A worker that died meanwhile shows in its exit status.
                    let _ = w.write_all(line.as_bytes()).and_then(|_| w.flush());
                }
            }
            Line::Net(l) => {
                if self.run.net_lines.len() < NET_LINES_KEPT {
                    self.run.net_lines.push(l);
                }
            }
        }
        Ok(())
    }

    /// Reads lines until the child exits (its status) or a group outlives `per_group` (the
    /// child is killed: `None`). An error from the hooks is returned at once.
    fn poll(
        &mut self,
        child: &mut Child,
        lines: &Receiver<Line>,
        per_group: Duration,
    ) -> Result<Option<ExitStatus>> {
        let mut deadline = Instant::now() + per_group;
        loop {
            while let Ok(item) = lines.try_recv() {
                self.take(item)?;
                deadline = Instant::now() + per_group;
            }
            if let Some(st) = child.try_wait().map_err(|e| ProbeError::Io {
                path: "probe nccl-worker".into(),
                source: e,
            })? {
                return Ok(Some(st));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// NCCL's net and channel lines from its debug files in `dir`.
    fn add_debug_lines(&mut self, dir: &std::path::Path) {
        let room = NET_LINES_KEPT.saturating_sub(self.run.net_lines.len());
        self.run
            .net_lines
            .extend(debug_lines_in(dir, is_net_line).into_iter().take(room));
        self.run.channel_lines = debug_lines_in(dir, super::transport::is_channel_line);
    }
}

/// How the child ended: killed on a group, a report it could not have printed, a clean exit, a
/// missing library, or a death with its last stderr line.
fn verdict(
    c: Collector<'_>,
    status: Option<ExitStatus>,
    stderr: &str,
    per_group: Duration,
) -> Result<ChildRun> {
    let mut run = c.run;
    let Some(status) = status else {
        run.died = Some(format!(
            "worker killed after {:.0} s without finishing the group",
            per_group.as_secs_f64()
        ));
        return Ok(run);
    };
    if let Some(e) = c.bad_report {
        return Err(ProbeError::WorkerProtocol {
            what: "reading the NCCL worker's group report".into(),
            message: e,
        });
    }
    if status.success() {
        return Ok(run);
    }
    let msg = stderr
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn our_lines_are_found_after_nccls_output_on_the_same_line() {
        let r = classify(format!("NCCL INFO partial{REPORT_PREFIX}{{\"x\":1}}"));
        assert!(matches!(r, Some(Line::Report(j)) if j == "{\"x\":1}"));
        assert!(matches!(
            classify(format!("{READY_PREFIX}7")),
            Some(Line::Ready(7))
        ));
        assert!(classify(format!("{READY_PREFIX}seven")).is_none());
        assert!(classify("unrelated".into()).is_none());
    }
}
