//! A node's network interfaces and which of them NCCL used: `/sys/class/net/*` (kind, link
//! speed) and `/sys/class/infiniband/*/ports/*` (InfiniBand or RoCE, rate), then NCCL's own
//! `NCCL_DEBUG=INFO` lines from the cross-node worker — `NET/Socket : Using [0]eth0:…`,
//! `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE …`, `Using network IB`, and the channels'
//! `via NET/IB/0/GDRDMA` — for the transport and the devices actually carrying traffic.

use crate::sysfs::attribute as read;
use models::profile::NicInfo;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What NCCL's INFO lines said about the network of one node's cross-node communicators.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NetObservation {
    /// `IB`, `RoCE` or `Socket` (or a net plugin's name); `None` when no line said.
    pub transport: Option<String>,
    /// Names of the devices NCCL's channels went through (`eth0`, `mlx5_0`).
    pub used: Vec<String>,
    /// The `NET/…` lines seen (at most a few, for the notes).
    pub lines: Vec<String>,
}

/// Virtual interfaces no cross-node traffic should take (container bridges, veth pairs).
fn is_virtual(name: &str) -> bool {
    ["veth", "docker", "br-", "virbr", "cni", "flannel", "cali"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The interfaces under `root` (`/sys` on a real node): IP interfaces then HCA ports.
pub fn sysfs_nics(root: &Path) -> Vec<NicInfo> {
    let mut out = Vec::new();
    let names = crate::sysfs::entry_names;
    let net = root.join("class/net");
    for name in names(&net).into_iter().filter(|n| !is_virtual(n)) {
        let dir = net.join(&name);
        let kind = match read(&dir.join("type")).as_deref() {
            Some("772") => "loopback",
            Some("32") => "infiniband",
            Some("1") => "ethernet",
            _ => "other",
        };
        // Mb/s; virtual and down links report -1 or refuse the read.
        let speed = read(&dir.join("speed"))
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|&s| s > 0.0)
            .map(|s| s / 1000.0);
        out.push(NicInfo {
            name,
            kind: Some(kind.into()),
            speed_gbit_per_s: speed,
            used_by_nccl: false,
        });
    }
    let ib = root.join("class/infiniband");
    for hca in names(&ib) {
        let ports = names(&ib.join(&hca).join("ports"));
        for port in &ports {
            let dir = ib.join(&hca).join("ports").join(port);
            let kind = match read(&dir.join("link_layer")).as_deref() {
                Some("InfiniBand") => "infiniband",
                Some("Ethernet") => "roce",
                _ => "other",
            };
            // `400 Gb/sec (4X NDR)`.
            let speed = read(&dir.join("rate")).and_then(|r| {
                r.split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<f64>().ok())
            });
            out.push(NicInfo {
                name: if ports.len() > 1 {
                    format!("{hca}:{port}")
                } else {
                    hca.clone()
                },
                kind: Some(kind.into()),
                speed_gbit_per_s: speed,
                used_by_nccl: false,
            });
        }
    }
    out
}

/// One device of NCCL's `Using` list: its index, name and (IB) link layer.
type Listed = (u32, String, Option<String>);

/// `[0]eth0:10.0.0.1<0> [1]…` or `[0]mlx5_0:1/IB …` → (index, device name, link layer).
fn listed_devices(list: &str) -> Vec<Listed> {
    let mut out = Vec::new();
    for item in list.split_whitespace() {
        let Some(rest) = item.strip_prefix('[') else {
            continue;
        };
        let Some((idx, dev)) = rest.split_once(']') else {
            continue;
        };
        let Ok(idx) = idx.parse::<u32>() else {
            continue;
        };
        let (dev, link) = match dev.rsplit_once('/') {
            Some((d, l)) => (d, Some(l.trim_end_matches(';').to_string())),
            None => (dev, None),
        };
        let name = dev.split(':').next().unwrap_or("").to_string();
        if !name.is_empty() {
            out.push((idx, name, link));
        }
    }
    out
}

/// Reads NCCL's `NCCL_DEBUG=INFO` output (any lines; only NCCL's net lines count).
pub fn parse_nccl_net(lines: &[String]) -> NetObservation {
    let mut obs = NetObservation::default();
    let mut network: Option<String> = None;
    let mut listed: Vec<(String, Vec<Listed>)> = Vec::new();
    let mut used: Vec<(String, u32)> = Vec::new();
    for line in lines {
        let Some(at) = line.find("NCCL INFO ") else {
            continue;
        };
        let info = &line[at + "NCCL INFO ".len()..];
        if let Some(n) = info.strip_prefix("Using network ") {
            network = Some(n.trim().to_string());
        } else if let Some((net, list)) = info
            .strip_prefix("NET/")
            .and_then(|rest| rest.split_once(" : Using"))
        {
            listed.push((
                net.to_string(),
                listed_devices(list.split(';').next().unwrap_or("")),
            ));
        }
        // `… via NET/IB/0/GDRDMA`, `… via NET/Socket/1`, `… via NET/IB/0(1)/GDRDMA`.
        if let Some(pos) = info.find("via NET/") {
            let mut parts = info[pos + "via NET/".len()..].split('/');
            if let (Some(net), Some(dev)) = (parts.next(), parts.next()) {
                let digits: String = dev.chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(i) = digits.parse::<u32>()
                    && !used.contains(&(net.to_string(), i))
                {
                    used.push((net.to_string(), i));
                }
            }
        }
        if (info.starts_with("NET/") || info.starts_with("Using network")) && obs.lines.len() < 8 {
            obs.lines.push(info.trim().to_string());
        }
    }
    let net = network.or_else(|| used.first().map(|(n, _)| n.clone()));
    let Some(net) = net else { return obs };
    let devices = listed
        .iter()
        .find(|(n, _)| *n == net)
        .map(|(_, d)| d.clone())
        .unwrap_or_default();
    let used_idx: Vec<u32> = used
        .iter()
        .filter(|(n, _)| *n == net)
        .map(|(_, i)| *i)
        .collect();
    let chosen: Vec<&Listed> = devices
        .iter()
        .filter(|(i, _, _)| used_idx.is_empty() || used_idx.contains(i))
        .collect();
    for (_, name, _) in &chosen {
        if !obs.used.contains(name) {
            obs.used.push(name.clone());
        }
    }
    obs.transport = Some(
        if net == "IB"
            && chosen.iter().all(|(_, _, l)| l.as_deref() == Some("RoCE"))
            && !chosen.is_empty()
        {
            "RoCE".into()
        } else {
            net
        },
    );
    obs
}

/// Marks the NICs NCCL used; ones NCCL named but sysfs did not list are added.
pub fn mark_used(nics: &mut Vec<NicInfo>, obs: &NetObservation) {
    for name in &obs.used {
        match nics
            .iter_mut()
            .find(|n| n.name == *name || n.name.split(':').next() == Some(name))
        {
            Some(n) => n.used_by_nccl = true,
            None => nics.push(NicInfo {
                name: name.clone(),
                kind: obs.transport.as_ref().map(|t| t.to_lowercase()),
                speed_gbit_per_s: None,
                used_by_nccl: true,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn socket_lines_name_the_interface() {
        let obs = parse_nccl_net(&lines(&[
            "host:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.",
            "host:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:10.0.0.2<0>",
            "host:1:1 [0] NCCL INFO Using network Socket",
            "host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/1",
            "host:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/1",
            "unrelated output",
        ]));
        assert_eq!(obs.transport.as_deref(), Some("Socket"));
        assert_eq!(obs.used, vec!["eth0".to_string()]);
        assert!(
            obs.lines
                .iter()
                .any(|l| l.starts_with("NET/Socket : Using"))
        );
    }

    #[test]
    fn ib_and_roce_devices_by_link_layer() {
        let ib = parse_nccl_net(&lines(&[
            "h:2:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.1.0.1<0>",
            "h:2:2 [0] NCCL INFO Using network IB",
            "h:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
            "h:2:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1(0)/GDRDMA",
        ]));
        assert_eq!(ib.transport.as_deref(), Some("IB"));
        assert_eq!(ib.used, vec!["mlx5_0".to_string(), "mlx5_1".to_string()]);
        let roce = parse_nccl_net(&lines(&[
            "h:2:2 [0] NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE [RO]; OOB eth0:10.0.0.1<0>",
            "h:2:2 [0] NCCL INFO Using network IB",
        ]));
        assert_eq!(roce.transport.as_deref(), Some("RoCE"));
        assert_eq!(roce.used, vec!["mlx5_2".to_string()]);
        assert_eq!(parse_nccl_net(&[]), NetObservation::default());
    }

    #[test]
    fn sysfs_tree_reads_kinds_and_speeds() {
        let root = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let f = root.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, s).unwrap();
        };
        w("class/net/lo/type", "772\n");
        w("class/net/eth0/type", "1\n");
        w("class/net/eth0/speed", "100000\n");
        w("class/net/ib0/type", "32\n");
        w("class/net/ib0/speed", "-1\n");
        w("class/net/veth12/type", "1\n");
        w("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
        w(
            "class/infiniband/mlx5_0/ports/1/rate",
            "400 Gb/sec (4X NDR)\n",
        );
        w("class/infiniband/mlx5_1/ports/1/link_layer", "Ethernet\n");
        w(
            "class/infiniband/mlx5_1/ports/1/rate",
            "200 Gb/sec (4X HDR)\n",
        );
        let mut nics = sysfs_nics(root.path());
        let brief: Vec<(String, String, Option<f64>)> = nics
            .iter()
            .map(|n| (n.name.clone(), n.kind.clone().unwrap(), n.speed_gbit_per_s))
            .collect();
        assert_eq!(
            brief,
            vec![
                ("eth0".into(), "ethernet".into(), Some(100.0)),
                ("ib0".into(), "infiniband".into(), None),
                ("lo".into(), "loopback".into(), None),
                ("mlx5_0".into(), "infiniband".into(), Some(400.0)),
                ("mlx5_1".into(), "roce".into(), Some(200.0)),
            ]
        );
        let obs = NetObservation {
            transport: Some("IB".into()),
            used: vec!["mlx5_0".into(), "mlx9".into()],
            lines: vec![],
        };
        mark_used(&mut nics, &obs);
        assert!(
            nics.iter()
                .find(|n| n.name == "mlx5_0")
                .unwrap()
                .used_by_nccl
        );
        assert!(nics.iter().any(|n| n.name == "mlx9" && n.used_by_nccl));
        assert!(!nics.iter().find(|n| n.name == "eth0").unwrap().used_by_nccl);
    }

    proptest! {
        #[test]
        fn nccl_output_of_any_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..400)) {
            let text = String::from_utf8_lossy(&b).into_owned();
            let mut v: Vec<String> = text.split('\n').map(String::from).collect();
            v.push(format!("x NCCL INFO {text}"));
            v.push(format!("x NCCL INFO NET/IB : Using {text}"));
            let _ = parse_nccl_net(&v);
        }
    }
}
