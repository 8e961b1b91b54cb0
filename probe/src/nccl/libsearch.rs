//! Finding GPU libraries that the CUDA bindings cannot find by themselves.
//!
//! cudarc 0.19 `dlopen`s a fixed list of names built from the library stem (`nccl` →
//! `libnccl.so`, `libnccl64.so`, `libnccl.so.13`, `.12`, `.11`, `.10`, `.9`, `.1`, …) and relies on
//! the loader's search path. A plain `libnccl.so.2` — pip's `nvidia-nccl-cu12/13` under
//! `site-packages/nvidia/nccl/lib`, Debian's `libnccl2` — matches none of them, and a wheel's
//! folder is not on the loader path either. So the probe searches the usual places itself and,
//! when needed, makes a private folder of symlinks under names cudarc does try, puts it first on
//! `LD_LIBRARY_PATH` and re-executes itself once (the loader reads that variable only at start).

use std::path::{Path, PathBuf};

/// A library the probe may need, and how to find it.
#[derive(Debug, Clone, Copy)]
pub struct LibSpec {
    /// cudarc's stem (`nccl`, `cublasLt`, `nvrtc`).
    pub stem: &'static str,
    /// File-name prefix on disk (`libnccl.so`).
    pub file_prefix: &'static str,
    /// Folders under `site-packages` where pip wheels put it.
    pub wheel_dirs: &'static [&'static str],
}

/// The libraries the probe loads besides the driver.
pub const LIBS: [LibSpec; 3] = [
    LibSpec {
        stem: "nccl",
        file_prefix: "libnccl.so",
        wheel_dirs: &["nvidia/nccl/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"],
    },
    LibSpec {
        stem: "cublasLt",
        file_prefix: "libcublasLt.so",
        wheel_dirs: &["nvidia/cublas/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"],
    },
    LibSpec {
        stem: "nvrtc",
        file_prefix: "libnvrtc.so",
        wheel_dirs: &[
            "nvidia/cuda_nvrtc/lib",
            "nvidia/cu13/lib",
            "nvidia/cu12/lib",
        ],
    },
];

/// Environment variable naming the shim folder after a re-exec (also stops a second re-exec).
pub const SHIM_ENV: &str = "PROBE_LIB_SHIM";

/// Expands a path pattern whose components may contain one `*` (e.g.
/// `/opt/*/.venv/lib/python3*/site-packages`) against the file system.
pub fn expand(pattern: &str) -> Vec<PathBuf> {
    let mut cur = vec![PathBuf::from(if pattern.starts_with('/') {
        "/"
    } else {
        "."
    })];
    for comp in pattern.split('/').filter(|c| !c.is_empty()) {
        let mut next = Vec::new();
        for base in &cur {
            if let Some((pre, post)) = comp.split_once('*') {
                if let Ok(rd) = std::fs::read_dir(base) {
                    let mut names: Vec<String> = rd
                        .filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| {
                            n.starts_with(pre)
                                && n.ends_with(post)
                                && n.len() >= pre.len() + post.len()
                        })
                        .collect();
                    names.sort();
                    next.extend(names.into_iter().map(|n| base.join(n)));
                }
            } else {
                let p = base.join(comp);
                if p.exists() {
                    next.push(p);
                }
            }
        }
        cur = next;
    }
    cur
}

/// Folders to search for `spec`, most specific first: `$NCCL_HOME/lib` (for NCCL),
/// `$CUDA_HOME/lib64`, each `LD_LIBRARY_PATH` entry, active virtualenv / conda, the system
/// library folders, then every Python `site-packages` found under `/usr`, `/usr/local`, `/opt`
/// and `~/.local`. `root` prefixes the fixed system paths (tests pass a temp dir; real use `/`).
pub fn candidate_dirs(
    spec: &LibSpec,
    env: &dyn Fn(&str) -> Option<String>,
    root: &Path,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let r = |p: &str| root.join(p.trim_start_matches('/'));
    if spec.stem == "nccl"
        && let Some(h) = env("NCCL_HOME")
    {
        dirs.push(PathBuf::from(&h).join("lib"));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = env(var) {
            dirs.push(PathBuf::from(&h).join("lib64"));
            dirs.push(PathBuf::from(&h).join("lib"));
        }
    }
    if let Some(p) = env("LD_LIBRARY_PATH") {
        dirs.extend(p.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    let mut site_roots: Vec<String> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(h) = env(var) {
            site_roots.push(format!("{h}/lib/python3*/site-packages"));
        }
    }
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/local/nccl/lib",
    ] {
        dirs.push(r(d));
    }
    for pat in [
        "/usr/lib/python3*/site-packages",
        "/usr/lib/python3*/dist-packages",
        "/usr/local/lib/python3*/site-packages",
        "/usr/local/lib/python3*/dist-packages",
        "/opt/*/lib/python3*/site-packages",
        "/opt/*/.venv/lib/python3*/site-packages",
        "/opt/conda/lib/python3*/site-packages",
    ] {
        site_roots.push(r(pat).to_string_lossy().into_owned());
    }
    if let Some(h) = env("HOME") {
        site_roots.push(format!("{h}/.local/lib/python3*/site-packages"));
    }
    for pat in site_roots {
        for site in expand(&pat) {
            for w in spec.wheel_dirs {
                dirs.push(site.join(w));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| d.is_dir() && seen.insert(d.clone()));
    dirs
}

/// The best file for `spec` in one folder: the plain `.so` name, else the highest versioned
/// `.so.N[.M…]` (by numeric comparison, so `.so.2.28.3` beats `.so.2.9.1`).
pub fn find_in_dir(spec: &LibSpec, dir: &Path) -> Option<PathBuf> {
    let rd = std::fs::read_dir(dir).ok()?;
    let mut best: Option<(Vec<u64>, PathBuf)> = None;
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(spec.file_prefix) else {
            continue;
        };
        let version: Option<Vec<u64>> = if rest.is_empty() {
            Some(vec![u64::MAX])
        } else {
            rest.strip_prefix('.')
                .and_then(|v| v.split('.').map(|x| x.parse().ok()).collect())
        };
        if let Some(v) = version
            && best.as_ref().is_none_or(|(bv, _)| v > *bv)
        {
            best = Some((v, e.path()));
        }
    }
    best.map(|(_, p)| p)
}

/// The first folder in `dirs` that holds the library, and the file.
pub fn search(spec: &LibSpec, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().find_map(|d| find_in_dir(spec, d))
}

/// Whether cudarc would find `spec` by itself (tries its own names with the system loader).
pub fn cudarc_can_load(spec: &LibSpec) -> bool {
    cudarc::get_lib_name_candidates(spec.stem)
        .iter()
        .any(|name| unsafe { libloading::Library::new(name) }.is_ok())
}

/// Creates `shim/<name>` symlinks to the found libraries, under the first name cudarc tries.
pub fn make_shim(shim: &Path, found: &[(LibSpec, PathBuf)]) -> std::io::Result<()> {
    std::fs::create_dir_all(shim)?;
    for (spec, target) in found {
        let link = shim.join(spec.file_prefix);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(target, &link)?;
    }
    Ok(())
}

/// Libraries cudarc cannot load by itself, with where the search found them. Libraries found
/// nowhere are left out: their absence is reported where they are needed.
pub fn missing_but_found() -> Vec<(LibSpec, PathBuf)> {
    let env = |k: &str| std::env::var(k).ok();
    LIBS.iter()
        .filter(|s| !cudarc_can_load(s))
        .filter_map(|s| search(s, &candidate_dirs(s, &env, Path::new("/"))).map(|p| (*s, p)))
        .collect()
}

/// If some library needs the shim and this process has not been re-executed yet, builds the
/// shim and replaces this process with itself (same arguments) under the new
/// `LD_LIBRARY_PATH`. Returns normally when nothing is needed or after a re-exec.
pub fn reexec_with_shim_if_needed() -> std::io::Result<()> {
    if std::env::var_os(SHIM_ENV).is_some() {
        return Ok(());
    }
    let found = missing_but_found();
    if found.is_empty() {
        return Ok(());
    }
    let shim = std::env::temp_dir().join(format!("probe-libshim-{}", std::process::id()));
    make_shim(&shim, &found)?;
    let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let new = if old.is_empty() {
        shim.display().to_string()
    } else {
        format!("{}:{old}", shim.display())
    };
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("LD_LIBRARY_PATH", new)
        .env(SHIM_ENV, &shim)
        .exec();
    Err(err)
}

/// Path of the loaded shared object whose file name starts with `prefix`, from
/// /proc/self/maps (what was actually loaded, after every search and symlink).
pub fn loaded_library_path(prefix: &str) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(prefix))
        })
        .map(|p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"").unwrap();
    }

    #[test]
    fn finds_pip_wheel_nccl_with_only_so_2() {
        let t = tempfile::tempdir().unwrap();
        let lib = t
            .path()
            .join("opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2");
        touch(&lib);
        let env = |_: &str| None;
        let dirs = candidate_dirs(&LIBS[0], &env, t.path());
        assert_eq!(search(&LIBS[0], &dirs), Some(lib));
    }

    #[test]
    fn finds_debian_libnccl2_and_prefers_highest_version() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("usr/lib/x86_64-linux-gnu");
        touch(&d.join("libnccl.so.2"));
        touch(&d.join("libnccl.so.2.9.1"));
        touch(&d.join("libnccl.so.2.28.3"));
        touch(&d.join("libnccl-net.so"));
        let env = |_: &str| None;
        let dirs = candidate_dirs(&LIBS[0], &env, t.path());
        assert_eq!(search(&LIBS[0], &dirs), Some(d.join("libnccl.so.2.28.3")));
    }

    #[test]
    fn nccl_home_and_ld_library_path_come_first() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("nccl");
        touch(&home.join("lib/libnccl.so.2"));
        let ld = t.path().join("ld");
        touch(&ld.join("libnccl.so"));
        touch(&t.path().join("usr/lib/libnccl.so.2"));
        let home_s = home.display().to_string();
        let ld_s = ld.display().to_string();
        let env = move |k: &str| match k {
            "NCCL_HOME" => Some(home_s.clone()),
            "LD_LIBRARY_PATH" => Some(ld_s.clone()),
            _ => None,
        };
        let dirs = candidate_dirs(&LIBS[0], &env, t.path());
        assert_eq!(dirs[0], home.join("lib"));
        assert_eq!(dirs[1], ld);
        assert_eq!(search(&LIBS[0], &dirs), Some(home.join("lib/libnccl.so.2")));
    }

    #[test]
    fn nothing_found_is_none() {
        let t = tempfile::tempdir().unwrap();
        let env = |_: &str| None;
        assert_eq!(
            search(&LIBS[0], &candidate_dirs(&LIBS[0], &env, t.path())),
            None
        );
    }

    #[test]
    fn shim_links_under_a_name_cudarc_tries() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("real/libnccl.so.2");
        touch(&target);
        let shim = t.path().join("shim");
        make_shim(&shim, &[(LIBS[0], target.clone())]).unwrap();
        let link = shim.join("libnccl.so");
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        assert!(cudarc::get_lib_name_candidates("nccl").contains(&"libnccl.so".to_string()));
    }

    #[test]
    fn glob_expands_one_star_per_component() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/python3.11/x")).unwrap();
        std::fs::create_dir_all(t.path().join("a/python3.12/x")).unwrap();
        std::fs::create_dir_all(t.path().join("a/perl5/x")).unwrap();
        let pat = format!("{}/a/python3*/x", t.path().display());
        assert_eq!(expand(&pat).len(), 2);
    }
}
