//! Which node this is and where node 0 listens: from SGLang's flags (`--nnodes N --node-rank R
//! --dist-init-addr HOST:PORT`) or, when they are absent, from the environment the user's
//! launcher set — torchrun (`RANK`, `WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`), Open MPI
//! (`OMPI_COMM_WORLD_RANK` / `_SIZE`), MPICH's Hydra (`PMI_RANK` / `PMI_SIZE` with
//! `MPI_LOCALNRANKS`), another PMI launcher (`PMI_RANK` / `PMI_SIZE`), Slurm's `srun`
//! (`SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_NODELIST`). MPI launchers are checked before Slurm:
//! inside an allocation `mpirun` starts tasks that still carry the batch step's `SLURM_PROCID`.

use super::auth::{JoinKey, TOKEN_ENV};
use crate::error::{ProbeError, Result};

/// Where rank and world size came from (written as `NodeInfo::launcher`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    Flags,
    Torchrun,
    OpenMpi,
    Mpich,
    Pmi,
    Slurm,
}

impl Launcher {
    /// The spelling in the profile.
    pub fn name(&self) -> &'static str {
        match self {
            Launcher::Flags => "flags",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "openmpi",
            Launcher::Mpich => "mpich",
            Launcher::Pmi => "pmi",
            Launcher::Slurm => "slurm",
        }
    }
}

/// The `--nnodes / --node-rank / --dist-init-addr / --dist-token` flags as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DistFlags {
    pub nnodes: Option<u32>,
    pub node_rank: Option<u32>,
    pub dist_init_addr: Option<String>,
    pub dist_token: Option<String>,
}

/// Node 0's rendezvous address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitAddr {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for InitAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A multi-node run: this node's rank, the node count, node 0's address, who said so.
#[derive(Debug, Clone, PartialEq)]
pub struct DistSpec {
    pub nnodes: u32,
    pub node_rank: u32,
    pub init_addr: InitAddr,
    pub launcher: Launcher,
    /// The job's join key (`--dist-token` / `PROBE_DIST_TOKEN`, the launcher's job, or drawn).
    pub key: JoinKey,
    /// Facts worth a line in the profile (several probes on one host, an address guessed).
    pub notes: Vec<String>,
}

/// Parses `HOST:PORT` or `[IPv6]:PORT`.
pub fn parse_init_addr(s: &str) -> Result<InitAddr> {
    let bad = |why: &str| {
        ProbeError::Invalid(format!(
            "--dist-init-addr `{s}`: {why} (e.g. --dist-init-addr 10.0.0.1:29500)"
        ))
    };
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest
            .split_once("]:")
            .ok_or_else(|| bad("expected [IPv6]:PORT"))?;
        (h, p)
    } else {
        s.rsplit_once(':')
            .ok_or_else(|| bad("expected HOST:PORT"))?
    };
    if host.is_empty() || host.contains(':') && !s.starts_with('[') {
        return Err(bad("expected HOST:PORT"));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| bad("the port must be a number from 1 to 65535"))?;
    Ok(InitAddr {
        host: host.to_string(),
        port,
    })
}

/// The first host of a Slurm node list (`gpu[03-04,07],login1` → `gpu03`), where rank 0 runs
/// under `srun`'s default block distribution.
pub fn slurm_first_host(list: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = list.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            ',' => break,
            '[' => {
                let inner: String = chars.by_ref().take_while(|&c| c != ']').collect();
                let first = inner.split(',').next().unwrap_or("");
                out.push_str(first.split('-').next().unwrap_or("").trim());
            }
            c => out.push(c),
        }
    }
    let out = out.trim().to_string();
    (!out.is_empty()).then_some(out)
}

fn num(env: &dyn Fn(&str) -> Option<String>, key: &str) -> Result<Option<u32>> {
    match env(key) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| {
            ProbeError::Invalid(format!("{key}={v} is not a number; unset it or fix it"))
        }),
    }
}

/// Rank and world size from the first launcher whose variables are all set.
fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<(Launcher, u32, u32)>> {
    let candidates: [(Launcher, &str, &str, Option<&str>); 5] = [
        (
            Launcher::Torchrun,
            "RANK",
            "WORLD_SIZE",
            Some("MASTER_ADDR"),
        ),
        (
            Launcher::OpenMpi,
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            None,
        ),
        (
            Launcher::Mpich,
            "PMI_RANK",
            "PMI_SIZE",
            Some("MPI_LOCALNRANKS"),
        ),
        (Launcher::Pmi, "PMI_RANK", "PMI_SIZE", None),
        (Launcher::Slurm, "SLURM_PROCID", "SLURM_NTASKS", None),
    ];
    for (launcher, rank, size, marker) in candidates {
        if marker.is_some_and(|m| env(m).is_none()) {
            continue;
        }
        if let (Some(r), Some(n)) = (num(env, rank)?, num(env, size)?) {
            return Ok(Some((launcher, r, n)));
        }
    }
    Ok(None)
}

/// What the launcher gave every task of this job alike, or `None`. Values that differ between
/// the tasks (ranks, local ports) are never used: the key must come out the same on every node.
pub fn job_of(launcher: Launcher, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let set = |k: &str| {
        env(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    match launcher {
        Launcher::Slurm => {
            let job = set("SLURM_JOB_ID")?;
            Some(match set("SLURM_STEP_ID") {
                Some(step) => format!("slurm job {job} step {step}"),
                None => format!("slurm job {job}"),
            })
        }
        Launcher::OpenMpi | Launcher::Mpich | Launcher::Pmi => set("PMIX_NAMESPACE")
            .map(|ns| format!("pmix namespace {ns}"))
            .or_else(|| set("OMPI_MCA_ess_base_jobid").map(|j| format!("open mpi job {j}"))),
        // torchrun's default run id is the literal `none`: not a job.
        Launcher::Torchrun => set("TORCHELASTIC_RUN_ID")
            .filter(|id| id != "none")
            .map(|id| format!("torchrun run {id}")),
        Launcher::Flags => None,
    }
}

/// Node 0's address when no flag gives it: `MASTER_ADDR` / `MASTER_PORT`, else for Slurm the
/// first host of the node list and a port from the job id.
fn addr_from_env(
    (launcher, rank, nnodes): (Launcher, u32, u32),
    env: &dyn Fn(&str) -> Option<String>,
    notes: &mut Vec<String>,
) -> Result<InitAddr> {
    let port = num(env, "MASTER_PORT")?;
    if let (Some(host), Some(port)) = (env("MASTER_ADDR"), port) {
        return parse_init_addr(&format!("{host}:{port}"));
    }
    if launcher == Launcher::Slurm {
        let list = env("SLURM_JOB_NODELIST").or_else(|| env("SLURM_NODELIST"));
        if let Some(host) = list.as_deref().and_then(slurm_first_host) {
            // One port per job, so two jobs sharing a node do not collide.
            let port = port.unwrap_or_else(|| {
                20_000 + num(env, "SLURM_JOB_ID").ok().flatten().unwrap_or(0) % 20_000
            });
            notes.push(format!(
                "rendezvous at {host}:{port}: the first host of the Slurm node list{}",
                if env("MASTER_PORT").is_some() {
                    ", MASTER_PORT"
                } else {
                    ", port 20000 + SLURM_JOB_ID mod 20000"
                }
            ));
            return Ok(InitAddr {
                host,
                port: port as u16,
            });
        }
    }
    Err(ProbeError::Invalid(format!(
        "{} set node rank {rank} of {nnodes} but no address for node 0: pass --dist-init-addr HOST:PORT (or set MASTER_ADDR and MASTER_PORT)",
        launcher.name()
    )))
}

/// Resolves this node's place in a multi-node run; `None` for a one-node run.
pub fn resolve(
    flags: &DistFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<DistSpec>> {
    let mut notes = Vec::new();
    let (launcher, rank, nnodes) = match flags.nnodes {
        Some(n) => (Launcher::Flags, flags.node_rank.unwrap_or(0), n),
        None if flags.node_rank.is_some() => {
            return Err(ProbeError::Invalid(
                "--node-rank needs --nnodes (e.g. --nnodes 2 --node-rank 1 --dist-init-addr HOST:PORT)"
                    .into(),
            ));
        }
        None => match from_env(env)? {
            Some(found) => found,
            None if flags.dist_init_addr.is_some() => {
                return Err(ProbeError::Invalid(
                    "--dist-init-addr needs --nnodes and --node-rank (or a launcher that sets the rank: srun, mpirun, torchrun)".into(),
                ));
            }
            None => return Ok(None),
        },
    };
    if nnodes == 0 {
        return Err(ProbeError::Invalid("--nnodes must be at least 1".into()));
    }
    if rank >= nnodes {
        return Err(ProbeError::Invalid(format!(
            "node rank {rank} is outside 0..{nnodes} ({}): ranks count from 0",
            launcher.name()
        )));
    }
    if nnodes == 1 {
        return Ok(None);
    }
    if launcher == Launcher::Flags && flags.node_rank.is_none() {
        return Err(ProbeError::Invalid(format!(
            "--nnodes {nnodes} needs --node-rank (0 on the node that collects the profile)"
        )));
    }
    let init_addr = match &flags.dist_init_addr {
        Some(a) => parse_init_addr(a)?,
        None if launcher == Launcher::Flags => {
            return Err(ProbeError::Invalid(format!(
                "--nnodes {nnodes} needs --dist-init-addr HOST:PORT (node 0's address, as SGLang's flag)"
            )));
        }
        None => addr_from_env((launcher, rank, nnodes), env, &mut notes)?,
    };
    for key in [
        "LOCAL_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "MPI_LOCALNRANKS",
        "SLURM_NTASKS_PER_NODE",
    ] {
        if let Some(k) = num(env, key)?.filter(|&k| k > 1) {
            notes.push(format!(
                "{key}={k}: several probes share this host; each must see other GPUs (CUDA_VISIBLE_DEVICES), and NCCL may then use shared memory or P2P between them rather than the network"
            ));
        }
    }
    // An empty variable is an unset one (a job script's `export PROBE_DIST_TOKEN=` default).
    let token = flags
        .dist_token
        .clone()
        .or_else(|| env(TOKEN_ENV).filter(|t| !t.trim().is_empty()));
    let key = JoinKey::resolve(token.as_deref(), job_of(launcher, env), rank)?;
    Ok(Some(DistSpec {
        nnodes,
        node_rank: rank,
        init_addr,
        launcher,
        key,
        notes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn flags(n: Option<u32>, r: Option<u32>, a: Option<&str>) -> DistFlags {
        DistFlags {
            nnodes: n,
            node_rank: r,
            dist_init_addr: a.map(String::from),
            dist_token: None,
        }
    }

    #[test]
    fn flags_win_and_name_themselves() {
        let s = resolve(
            &flags(Some(2), Some(1), Some("10.0.0.1:29500")),
            &env(&[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "4"),
                (TOKEN_ENV, "0123456789abcdef"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!((s.nnodes, s.node_rank, s.launcher), (2, 1, Launcher::Flags));
        assert_eq!(s.init_addr.to_string(), "10.0.0.1:29500");
        assert!(
            resolve(&flags(Some(1), Some(0), None), &env(&[]))
                .unwrap()
                .is_none()
        );
        for (f, why) in [
            (flags(Some(2), None, Some("h:1")), "needs --node-rank"),
            (flags(Some(2), Some(0), None), "needs --dist-init-addr"),
            (flags(None, Some(1), None), "needs --nnodes"),
            (flags(Some(2), Some(2), Some("h:1")), "outside 0..2"),
            (flags(None, None, Some("h:1")), "needs --nnodes"),
        ] {
            let e = resolve(&f, &env(&[])).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn launchers_from_their_environment() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Launcher, u32, &'a str);
        let cases: [Case; 5] = [
            (
                &[
                    ("RANK", "1"),
                    ("WORLD_SIZE", "2"),
                    ("MASTER_ADDR", "n0"),
                    ("MASTER_PORT", "29500"),
                ],
                Launcher::Torchrun,
                1,
                "n0:29500",
            ),
            (
                &[
                    ("OMPI_COMM_WORLD_RANK", "3"),
                    ("OMPI_COMM_WORLD_SIZE", "4"),
                    ("SLURM_PROCID", "0"),
                    ("SLURM_NTASKS", "1"),
                    ("MASTER_ADDR", "10.1.1.1"),
                    ("MASTER_PORT", "7000"),
                ],
                Launcher::OpenMpi,
                3,
                "10.1.1.1:7000",
            ),
            (
                &[
                    ("PMI_RANK", "1"),
                    ("PMI_SIZE", "2"),
                    ("MPI_LOCALNRANKS", "1"),
                    ("MASTER_ADDR", "h"),
                    ("MASTER_PORT", "1"),
                ],
                Launcher::Mpich,
                1,
                "h:1",
            ),
            (
                &[
                    ("PMI_RANK", "1"),
                    ("PMI_SIZE", "2"),
                    ("MASTER_ADDR", "h"),
                    ("MASTER_PORT", "1"),
                ],
                Launcher::Pmi,
                1,
                "h:1",
            ),
            (
                &[
                    ("SLURM_PROCID", "2"),
                    ("SLURM_NTASKS", "4"),
                    ("SLURM_JOB_NODELIST", "gpu[07-08,11],cpu1"),
                    ("SLURM_JOB_ID", "123456"),
                ],
                Launcher::Slurm,
                2,
                "gpu07:23456",
            ),
        ];
        for (vars, launcher, rank, addr) in cases {
            let e = env(vars);
            let with_token = |k: &str| match k {
                TOKEN_ENV => Some("0123456789abcdef".to_string()),
                k => e(k),
            };
            let s = resolve(&DistFlags::default(), &with_token)
                .unwrap()
                .unwrap();
            assert_eq!((s.launcher, s.node_rank), (launcher, rank), "{vars:?}");
            assert_eq!(s.init_addr.to_string(), addr);
        }
        // One task, or no launcher at all: a one-node run.
        let one = env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")]);
        assert!(resolve(&DistFlags::default(), &one).unwrap().is_none());
        assert!(resolve(&DistFlags::default(), &env(&[])).unwrap().is_none());
        // MPI without an address: say what to pass.
        let e = resolve(
            &DistFlags::default(),
            &env(&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("--dist-init-addr"), "{e}");
        // The flag gives the address for a launcher that set only the rank.
        let s = resolve(
            &flags(None, None, Some("[::1]:9000")),
            &env(&[
                ("OMPI_COMM_WORLD_RANK", "0"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.init_addr.host, "::1");
        assert!(s.notes[0].contains("several probes share this host"));
    }

    #[test]
    fn jobs_are_what_every_task_shares() {
        let slurm = env(&[("SLURM_JOB_ID", "42"), ("SLURM_STEP_ID", "0")]);
        assert_eq!(
            job_of(Launcher::Slurm, &slurm).as_deref(),
            Some("slurm job 42 step 0")
        );
        let ompi = env(&[("PMIX_NAMESPACE", "prterun-n0-1234@1")]);
        assert_eq!(
            job_of(Launcher::OpenMpi, &ompi).as_deref(),
            Some("pmix namespace prterun-n0-1234@1")
        );
        let tr = env(&[("TORCHELASTIC_RUN_ID", "none")]);
        assert_eq!(job_of(Launcher::Torchrun, &tr), None);
        let tr = env(&[("TORCHELASTIC_RUN_ID", "exp7")]);
        assert_eq!(
            job_of(Launcher::Torchrun, &tr).as_deref(),
            Some("torchrun run exp7")
        );
        assert_eq!(job_of(Launcher::Flags, &slurm), None);
    }

    #[test]
    fn init_addr_forms() {
        assert_eq!(parse_init_addr("h:80").unwrap().port, 80);
        assert_eq!(parse_init_addr("[fe80::1]:80").unwrap().host, "fe80::1");
        for bad in ["h", ":80", "h:0", "h:x", "fe80::1:80", "[::1]80"] {
            assert!(parse_init_addr(bad).is_err(), "{bad}");
        }
        assert_eq!(slurm_first_host("node1").as_deref(), Some("node1"));
        assert_eq!(
            slurm_first_host("rack[1-2]-n[3-4]").as_deref(),
            Some("rack1-n3")
        );
        assert_eq!(slurm_first_host(""), None);
    }

    proptest! {
        #[test]
        fn node_lists_and_addresses_never_panic(s in "\\PC*") {
            let _ = slurm_first_host(&s);
            let _ = parse_init_addr(&s);
        }
    }
}
