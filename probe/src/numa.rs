//! NUMA placement of host buffers. Host ↔ device bandwidth depends on which socket's memory the
//! pinned pages sit on — on a two-socket box a copy from the far socket crosses the CPU
//! interconnect — and pinned pages are placed where the allocating thread runs (first touch).
//! So host buffers for a GPU are allocated, and its copies issued, by a thread bound to the CPUs
//! of that GPU's NUMA node, as `numactl --cpunodebind` would; unknown nodes (a VM that hides its
//! topology, sysfs reporting −1) are left where the OS puts them, and the profile says which.

/// CPUs of NUMA node `node` from sysfs (`/sys/devices/system/node/nodeN/cpulist`).
pub fn node_cpus(node: i32) -> Option<Vec<usize>> {
    if node < 0 {
        return None;
    }
    let path = format!("/sys/devices/system/node/node{node}/cpulist");
    parse_cpulist(std::fs::read_to_string(path).ok()?.trim()).ok()
}

/// Parses a kernel CPU list (`0-15,32-47`, `3`, empty) into CPU numbers.
pub fn parse_cpulist(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("bad CPU number `{x}` in cpulist `{s}`"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("descending range `{part}` in cpulist `{s}`"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    Ok(out)
}

/// While alive, the calling thread runs only on one NUMA node's CPUs; dropping it restores the
/// thread's previous affinity.
pub struct NodeBinding {
    previous: libc::cpu_set_t,
}

impl NodeBinding {
    /// Binds the calling thread to `node`'s CPUs; `None` when the node or its CPUs are unknown
    /// or the kernel refuses (the caller then allocates unbound and says so).
    pub fn bind(node: Option<i32>) -> Option<NodeBinding> {
        let cpus = node_cpus(node?)?;
        // SAFETY: cpu_set_t is plain bits; the CPU_* helpers stay inside it (checked bounds).
        unsafe {
            let mut previous: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut previous)
                != 0
            {
                return None;
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
            for &c in cpus.iter().filter(|&&c| c < max) {
                libc::CPU_SET(c, &mut set);
            }
            if libc::CPU_COUNT(&set) == 0
                || libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            {
                return None;
            }
            Some(NodeBinding { previous })
        }
    }
}

impl Drop for NodeBinding {
    fn drop(&mut self) {
        // SAFETY: restores the set read in `bind`.
        unsafe {
            let _ =
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_parse_like_the_kernel_writes_them() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert!(parse_cpulist("3-1").is_err());
        assert!(parse_cpulist("a").is_err());
        assert_eq!(node_cpus(-1), None);
    }

    #[test]
    fn binding_to_an_unknown_node_is_refused_and_a_real_one_restores() {
        assert!(NodeBinding::bind(None).is_none());
        assert!(NodeBinding::bind(Some(-1)).is_none());
        // Node 0 exists on any Linux box with sysfs; where it does, binding works and undoes.
        if node_cpus(0).is_some_and(|c| !c.is_empty()) {
            let before = std::thread::available_parallelism().map(|n| n.get()).ok();
            {
                let _b = NodeBinding::bind(Some(0)).expect("bind to node 0");
            }
            assert_eq!(
                std::thread::available_parallelism().map(|n| n.get()).ok(),
                before
            );
        }
    }
}
