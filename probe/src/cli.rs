//! Command line: raw clap flags (stage one) turned into validated configs (stage two), and the
//! dispatch. Exit codes: 0 success; 1 a measurement failed on the machine (a CUDA, cuBLAS or
//! NCCL call errored, data came back wrong); 2 bad input or unusable environment (bad flags,
//! malformed file, no GPU, no driver or library, too few GPUs, out of memory).

use crate::backend::{Backend, RealBackend};
use crate::error::{ProbeError, Result};
use crate::fake::FakeBackend;
use crate::format::Format;
use crate::plan::{RunPlan, Step, parse_gpu_list};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Measures a GPU box's interconnect, collectives and compute ceilings into a machine profile.
#[derive(Debug, Parser)]
#[command(name = "probe", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure this machine and write a profile.
    Run(RunArgs),
    /// Draw a profile's charts (SVG + index.html) into a folder.
    Charts(crate::charts::ChartsArgs),
    /// Convert another tool's log into a profile.
    Import {
        #[command(subcommand)]
        what: crate::import::ImportCmd,
    },
    /// Compare two profiles side by side (ratios B / A).
    Diff(crate::diff::DiffArgs),
    /// Internal: one NCCL group in a child process.
    #[command(hide = true)]
    NcclWorker {
        /// The worker spec as JSON.
        #[arg(long)]
        spec: String,
    },
}

/// `probe run` flags.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// GPUs to measure, CUDA indices (e.g. 0,1,2,3); default all visible.
    #[arg(long)]
    pub gpus: Option<String>,
    /// Fewer sizes and samples (under 30 s on 8 GPUs).
    #[arg(long)]
    pub quick: bool,
    /// Only these steps: inventory,host,device,p2p,nccl,gemm,launch.
    #[arg(long)]
    pub only: Option<String>,
    /// Where to write the profile JSON (default ./profile.json, refused when that exists; on a
    /// node other than 0 of a multi-node run, its own part, written only when given).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Terminal output.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Number of nodes of a multi-node run (one probe per node; SGLang's flag). Without it,
    /// rank and node count come from srun, mpirun or torchrun when they started the probe.
    #[arg(long, value_name = "N")]
    pub nnodes: Option<u32>,
    /// This node's rank, 0 .. N-1; node 0 writes the merged profile.
    #[arg(long, value_name = "R")]
    pub node_rank: Option<u32>,
    /// Node 0's address for the rendezvous, HOST:PORT (node 0 listens on PORT).
    #[arg(long, value_name = "HOST:PORT")]
    pub dist_init_addr: Option<String>,
    /// The job's join secret, the same on every node (also `PROBE_DIST_TOKEN`, which other
    /// users cannot read in `ps`): only nodes proving it get in. Without it node 0 prints one for
    /// the others, or under srun / mpirun / torchrun the launcher's job id is the key.
    #[arg(long, value_name = "TOKEN")]
    pub dist_token: Option<String>,
    /// Seconds every node has to join (and node 0 to answer); a node silent this long later
    /// is taken for dead.
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    pub dist_timeout: f64,
    /// A fake machine (profile JSON) to run against instead of the GPUs (tests); also
    /// `PROBE_FAKE_MACHINE`.
    #[arg(long, hide = true)]
    pub fake_machine: Option<PathBuf>,
    /// Also draw the profile's charts (SVG + index.html) into this folder.
    #[arg(long, value_name = "DIR")]
    pub charts: Option<PathBuf>,
    /// Never enable peer access in the P2P step: pairs are measured only through pinned host
    /// memory and classified host-bounce (a VM without P2P, on real hardware). Pair it with
    /// `NCCL_P2P_DISABLE=1` to make NCCL take the same path.
    #[arg(long)]
    pub no_peer_access: bool,
    /// Time NCCL batches as the one worker thread enqueues them instead of releasing them
    /// behind a gate (a diagnostic: shows the host launch cost the gate removes).
    #[arg(long, hide = true)]
    pub nccl_ungated: bool,
}

/// Validated `probe run` configuration.
#[derive(Debug)]
pub struct RunConfig {
    pub plan: RunPlan,
    /// Where the profile goes: always on one node and node 0; on another node only when given.
    pub out: Option<PathBuf>,
    /// A multi-node run, and its join timeout.
    pub dist: Option<(crate::dist::launcher::DistSpec, std::time::Duration)>,
    pub format: Format,
    pub fake_machine: Option<PathBuf>,
    /// Folder for the run's charts (`--charts`).
    pub charts: Option<PathBuf>,
}

impl RunArgs {
    /// Stage two: checks and converts the flags.
    pub fn validate(self) -> Result<RunConfig> {
        let gpus = self.gpus.as_deref().map(parse_gpu_list).transpose()?;
        let only = self
            .only
            .as_deref()
            .map(|s| {
                s.split(',')
                    .filter(|x| !x.trim().is_empty())
                    .map(Step::parse)
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()?;
        if only.as_ref().is_some_and(|o| o.is_empty()) {
            return Err(ProbeError::Invalid("--only: empty list".into()));
        }
        if let Some(out) = self.out.as_ref().filter(|o| o.is_dir()) {
            return Err(ProbeError::Invalid(format!(
                "--out {} is a directory; give a file name",
                out.display()
            )));
        }
        let flags = crate::dist::launcher::DistFlags {
            nnodes: self.nnodes,
            node_rank: self.node_rank,
            dist_init_addr: self.dist_init_addr.clone(),
            dist_token: self.dist_token.clone(),
        };
        let dist = crate::dist::launcher::resolve(&flags, &|k| std::env::var(k).ok())?;
        if !(self.dist_timeout.is_finite() && self.dist_timeout > 0.0) {
            return Err(ProbeError::Invalid(format!(
                "--dist-timeout {}: give a number of seconds above 0",
                self.dist_timeout
            )));
        }
        // Checked before anything is measured: a whole run is not lost to an existing file.
        let out = match (&dist, self.out) {
            (Some(d), out) if d.node_rank > 0 => out,
            (_, out) => Some(crate::out_path::resolve(out)?),
        };
        let dist = dist.map(|d| (d, std::time::Duration::from_secs_f64(self.dist_timeout)));
        if let Some(dir) = &self.charts {
            crate::charts::check_dir(dir)?;
        }
        let mut plan = RunPlan::new(gpus, only, self.quick);
        plan.no_peer_access = self.no_peer_access;
        plan.nccl_gated = !self.nccl_ungated;
        Ok(RunConfig {
            charts: self.charts,
            plan,
            out,
            dist,
            format: self.format,
            fake_machine: self
                .fake_machine
                .or_else(|| std::env::var_os("PROBE_FAKE_MACHINE").map(PathBuf::from)),
        })
    }
}

/// Exit code for an error (see the module docs).
pub fn exit_code(e: &ProbeError) -> i32 {
    match e {
        ProbeError::Cuda { .. } => 1,
        _ => crate::error::EXIT_BAD_INPUT,
    }
}

/// `probe run`.
pub fn run(cfg: RunConfig) -> Result<()> {
    let mut backend: Box<dyn Backend> = match &cfg.fake_machine {
        Some(p) => Box::new(FakeBackend::load(p)?),
        None => {
            // Libraries under names cudarc does not try (libnccl.so.2 in a pip wheel, …):
            // re-run this process with a shim folder first on LD_LIBRARY_PATH.
            if let Err(e) = crate::nccl::libsearch::reexec_with_shim_if_needed() {
                eprintln!("warning: could not prepare library search path: {e}");
            }
            Box::new(RealBackend::new())
        }
    };
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
            .expect("template"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let mut progress = |m: String| bar.set_message(m);
    let outcome = match &cfg.dist {
        None => crate::run::run_probe(backend.as_mut(), &cfg.plan, &mut progress)
            .and_then(|p| write_profile(&cfg, &p).map(|_| p))
            .map(|p| (p, None)),
        Some((dist, join)) => {
            let t = crate::dist::rendezvous::Timeouts::from_join(*join);
            let mut write = |p: &models::MachineProfile| -> Result<String> {
                write_profile(&cfg, p)?;
                let out = cfg.out.as_ref().expect("node 0 always has --out");
                Ok(std::fs::canonicalize(out)
                    .unwrap_or_else(|_| out.clone())
                    .display()
                    .to_string())
            };
            // Lines that stay (a connection turned away, a drawn token): above the spinner on a
            // terminal, plain stderr lines otherwise (indicatif prints nothing when hidden).
            let mut log = |m: String| {
                if bar.is_hidden() {
                    eprintln!("{m}");
                } else {
                    bar.println(m);
                }
            };
            let out = crate::dist::node::Output {
                progress: &mut progress,
                log: &mut log,
            };
            crate::dist::node::run_node(backend.as_mut(), &cfg.plan, dist, t, out, &mut write)
                .and_then(|o| match o {
                    crate::dist::node::NodeOutcome::Merged(p) => Ok((p, None)),
                    crate::dist::node::NodeOutcome::Part {
                        profile,
                        merged_path,
                    } => {
                        write_profile(&cfg, &profile)?;
                        Ok((profile, Some(merged_path)))
                    }
                })
        }
    };
    bar.finish_and_clear();
    if let Some(shim) = std::env::var_os(crate::nccl::libsearch::SHIM_ENV) {
        let _ = std::fs::remove_dir_all(shim);
    }
    let (profile, merged_elsewhere) = outcome?;
    cfg.format.print(&profile, || {
        print!("{}", crate::summary::render(&profile));
        if let Some(out) = &cfg.out {
            println!("profile written to {}", out.display());
        }
        if let Some(path) = merged_elsewhere {
            println!("node 0 wrote the merged profile to {path} (on node 0's host)");
        }
    });
    Ok(())
}

/// Writes `profile` to `--out` (if any) and its charts to `--charts` (if asked).
fn write_profile(cfg: &RunConfig, profile: &models::MachineProfile) -> Result<()> {
    let Some(out) = &cfg.out else {
        return Ok(());
    };
    profile.save_atomic(out)?;
    if let Some(dir) = &cfg.charts {
        let label = crate::charts::label(profile, out);
        crate::charts::write_profile_charts(profile, &label, dir)?;
        eprintln!("charts written to {}", dir.display());
    }
    Ok(())
}

/// `probe nccl-worker`: prints one prefixed JSON line per group as each finishes.
pub fn nccl_worker(spec: &str) -> Result<()> {
    use std::io::Write;
    let spec: crate::nccl::protocol::WorkerSpec = serde_json::from_str(spec)
        .map_err(|e| ProbeError::Invalid(format!("bad worker spec: {e}")))?;
    crate::nccl::worker::run_worker(&spec, &mut |rep| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{}{}",
            crate::nccl::protocol::REPORT_PREFIX,
            serde_json::to_string(rep).expect("serializes")
        );
        let _ = out.flush();
    })
}

/// Runs the parsed command line.
pub fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run(a) => run(a.validate()?),
        Command::NcclWorker { spec } => nccl_worker(&spec),
        Command::Import { what } => crate::import::run(what),
        Command::Diff(a) => crate::diff::run(a),
        Command::Charts(a) => crate::charts::run(a),
    }
}
