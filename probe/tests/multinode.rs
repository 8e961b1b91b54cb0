//! `probe run` on several fake nodes over loopback: one process per node, the rendezvous, each
//! node measuring itself, the cross-node step, node 0's merged profile; and the ways a run ends
//! early — a node that never joins, one with another probe version, one whose own measurement
//! fails — each with one line on stderr, exit 2, within the timeout, and no profile.

use crate::common;
use models::profile::{CollectiveOp, CollectiveStatus, LinkClass, MachineProfile};

use common::{TOKEN, free_port, knock, read_line, send_hello};
use probe::dist::wire::Hello;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Seconds every test node has to join: generous, since CI runs tests side by side; the tests
/// of a node that never comes wait `SHORT_S`.
const JOIN_S: &str = "5";
const SHORT_S: &str = "2";

/// Starts node `rank` of `nnodes` against the fake machine `machine`, joining within `JOIN_S`.
fn node(
    rank: u32,
    nnodes: u32,
    port: u16,
    machine: &Path,
    out: Option<&Path>,
    extra: &[&str],
) -> Child {
    node_within(JOIN_S, rank, nnodes, port, machine, out, extra)
}

/// [`node`] with its own join timeout (seconds).
fn node_within(
    join_s: &str,
    rank: u32,
    nnodes: u32,
    port: u16,
    machine: &Path,
    out: Option<&Path>,
    extra: &[&str],
) -> Child {
    node_command(join_s, rank, nnodes, port, machine, out, extra)
        .spawn()
        .unwrap()
}

/// The command of [`node_within`], given the test token in `PROBE_DIST_TOKEN`.
fn node_command(
    join_s: &str,
    rank: u32,
    nnodes: u32,
    port: u16,
    machine: &Path,
    out: Option<&Path>,
    extra: &[&str],
) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_probe"));
    c.env_remove("PROBE_FAKE_MACHINE")
        .env("PROBE_DIST_TOKEN", TOKEN)
        .args(["run", "--quick", "--fake-machine"])
        .arg(machine)
        .args([
            "--nnodes",
            &nnodes.to_string(),
            "--node-rank",
            &rank.to_string(),
        ])
        .args([
            "--dist-init-addr",
            &format!("127.0.0.1:{port}"),
            "--dist-timeout",
            join_s,
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(o) = out {
        c.arg("--out").arg(o);
    }
    c
}

fn finish(c: Child) -> Output {
    c.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `n` fake nodes of `machine`; node 0's merged profile and every node's output.
fn run_nodes(n: u32, machine: &Path, dir: &Path) -> (MachineProfile, Vec<Output>) {
    let port = free_port();
    let merged = dir.join("merged.json");
    // The peers first: they retry until node 0 listens.
    let mut kids: Vec<Child> = (1..n)
        .map(|r| {
            node(
                r,
                n,
                port,
                machine,
                Some(&dir.join(format!("node{r}.json"))),
                &[],
            )
        })
        .collect();
    kids.insert(0, node(0, n, port, machine, Some(&merged), &[]));
    let outs: Vec<Output> = kids.into_iter().map(finish).collect();
    for (r, o) in outs.iter().enumerate() {
        assert!(o.status.success(), "node {r}: {}", stderr(o));
    }
    (MachineProfile::load(&merged).unwrap(), outs)
}

#[test]
fn two_nodes_merge_into_one_profile() {
    let dir = tempfile::tempdir().unwrap();
    let h200 = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x1.json");
    let (p, outs) = run_nodes(2, &h200, dir.path());
    common::assert_merged_as_golden(&dir.path().join("merged.json"));
    assert_eq!(p.schema_version, models::profile::PROFILE_SCHEMA_VERSION);
    assert_eq!(p.nodes.len(), 2);
    let placed: Vec<(u32, u32)> = p.devices.iter().map(|d| (d.index, d.node)).collect();
    assert_eq!(placed, vec![(0, 0), (1, 1)]);
    assert_eq!(p.nodes[1].devices, vec![1]);
    assert!(
        p.nodes
            .iter()
            .all(|n| n.launcher.as_deref() == Some("flags"))
    );
    assert!(
        p.nodes
            .iter()
            .all(|n| n.net_transport.as_deref() == Some("Socket"))
    );
    assert!(
        p.nodes
            .iter()
            .all(|n| n.nics.iter().any(|x| x.name == "lo" && x.used_by_nccl))
    );
    // Each node's own measurements, renumbered: node 1's launch floors are on GPU 1.
    assert!(p.launch.iter().any(|m| m.device == 1));
    assert!(
        p.collectives
            .iter()
            .any(|c| c.devices == vec![1] && c.link_class == Some(LinkClass::X))
    );
    // The cross-node group: every op over both nodes, NET, nccl-tests' busbw.
    let net: Vec<_> = p
        .collectives
        .iter()
        .filter(|c| c.link_class == Some(LinkClass::NET))
        .collect();
    assert_eq!(net.len(), 5);
    for c in &net {
        assert_eq!(c.devices, vec![0, 1]);
        assert_eq!(c.points.len(), 6, "--quick sizes");
        for pt in &c.points {
            assert_eq!(pt.status, CollectiveStatus::Ok);
            let want = pt.algbw_gb_per_s * c.op.busbw_factor(2);
            assert!((pt.busbw_gb_per_s - want).abs() < 1e-9);
        }
    }
    // The fake node 1 is 2 % slower; per sample the slowest node counts (the fake's five
    // samples are 1, 1.01, 1.02, 1, 1.01 × its figure: median 1.01).
    let ar = net
        .iter()
        .find(|c| c.op == CollectiveOp::AllReduce)
        .unwrap();
    let mib = ar.points.iter().find(|p| p.bytes == 1 << 20).unwrap();
    let node0_us = 25.0 + (1u64 << 20) as f64 / 12e9 * 1e6;
    let ratio = mib.time_us.median / node0_us;
    assert!((ratio - 1.02 * 1.01).abs() < 1e-9, "{ratio}");
    assert!(
        p.links
            .iter()
            .any(|l| (l.src, l.dst, l.topology) == (0, 1, LinkClass::NET))
    );
    // Node 1 wrote its own part (it asked with --out), node 0 the merged profile.
    let own = MachineProfile::load(&dir.path().join("node1.json")).unwrap();
    assert_eq!((own.devices[0].index, own.devices[0].node), (1, 1));
    assert_eq!(own.nodes.len(), 1);
    let out0 = String::from_utf8_lossy(&outs[0].stdout);
    assert!(out0.contains("Nodes") && out0.contains("NET"), "{out0}");
    assert!(String::from_utf8_lossy(&outs[1].stdout).contains("node 0 wrote the merged profile"));
}

#[test]
fn four_nodes_measure_every_pair_and_the_spanning_groups() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = run_nodes(4, &fixture("fake-4gpu-vm.json"), dir.path());
    assert_eq!(p.devices.len(), 16);
    assert_eq!(p.nodes[3].devices, vec![12, 13, 14, 15]);
    let net: Vec<_> = p
        .collectives
        .iter()
        .filter(|c| c.link_class == Some(LinkClass::NET))
        .collect();
    let pairs: Vec<Vec<u32>> = net
        .iter()
        .filter(|c| c.op == CollectiveOp::SendRecv && c.devices.len() == 2)
        .map(|c| c.devices.clone())
        .collect();
    assert_eq!(
        pairs,
        vec![
            vec![0, 4],
            vec![0, 8],
            vec![0, 12],
            vec![4, 8],
            vec![4, 12],
            vec![8, 12]
        ]
    );
    let spanning: Vec<usize> = net
        .iter()
        .filter(|c| c.op == CollectiveOp::AllReduce)
        .map(|c| c.devices.len())
        .collect();
    // One GPU per node, a TP2 group per node × 4, all 16.
    assert_eq!(spanning, vec![4, 8, 16]);
    assert!(
        net.iter()
            .all(|c| c.points.iter().all(|p| p.status == CollectiveStatus::Ok))
    );
    // Node-local curves stay with their node: node 2's TP4 group is GPUs 8..12.
    assert!(
        p.collectives
            .iter()
            .any(|c| c.devices == vec![8, 9, 10, 11])
    );
    // A node's own part is written only when it asks: nodes 1-3 did.
    assert!(dir.path().join("node3.json").exists());
}

#[test]
fn a_token_node_0_draws_is_printed_and_taken_by_flag() {
    let dir = tempfile::tempdir().unwrap();
    let (port, merged) = (free_port(), dir.path().join("merged.json"));
    let h200 = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/h200-x1.json");
    let mut head = node_command(JOIN_S, 0, 2, port, &h200, Some(&merged), &[]);
    let mut head = head.env_remove("PROBE_DIST_TOKEN").spawn().unwrap();
    let mut err = std::io::BufReader::new(head.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    let token = line
        .strip_prefix("node 0: join token ")
        .and_then(|l| l.split(':').next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    assert_eq!(token.len(), 32, "{line}");
    assert!(line.contains(&format!("--dist-token {token}")), "{line}");
    // A peer with no token at all is told what to pass, before it measures anything.
    let mut bare = node_command(JOIN_S, 1, 2, port, &h200, None, &[]);
    let o = bare.env_remove("PROBE_DIST_TOKEN").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("node 1 has no join token"),
        "{}",
        stderr(&o)
    );
    let mut peer = node_command(JOIN_S, 1, 2, port, &h200, None, &["--dist-token", &token]);
    let peer = peer.env_remove("PROBE_DIST_TOKEN").output().unwrap();
    assert!(peer.status.success(), "{}", stderr(&peer));
    assert!(head.wait().unwrap().success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(rest, "", "node 0 said only the token");
    common::assert_merged_as_golden(&merged);
}

#[test]
fn a_node_that_never_joins_is_named_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let started = Instant::now();
    let o = finish(node_within(
        SHORT_S,
        0,
        3,
        free_port(),
        &fixture("fake-4gpu-vm.json"),
        Some(&out),
        &[],
    ));
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("nodes 1, 2 of 3 did not join") && e.contains("within 2 s"),
        "{e}"
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(6),
        "{took:?}"
    );
    assert!(!out.exists());
    // And a peer whose node 0 never comes.
    let o = finish(node_within(
        SHORT_S,
        1,
        2,
        free_port(),
        &fixture("fake-4gpu-vm.json"),
        None,
        &[],
    ));
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("node 0 at 127.0.0.1:") && e.contains("did not answer within 2 s"),
        "{e}"
    );
}

/// Speaks the rendezvous by hand: a hello for rank 1 of 2 with `edit` applied, signed with the
/// test token; node 0's answer line.
fn hello(port: u16, edit: impl FnOnce(&mut Hello)) -> String {
    let (mut r, nonce) = knock(port);
    let mut h = common::hello(1, 2, "x");
    edit(&mut h);
    send_hello(&mut r, &common::key(TOKEN), &nonce, h)
}

#[test]
fn a_node_with_another_probe_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let port = free_port();
    let head = node(0, 2, port, &fixture("fake-4gpu-vm.json"), Some(&out), &[]);
    let answer = hello(port, |h| h.probe_version = "0.0.1-other".into());
    assert!(
        answer.contains("\"kind\":\"refuse\"") && answer.contains("0.0.1-other"),
        "{answer}"
    );
    let o = finish(head);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("node 1 (b) runs probe 0.0.1-other") && e.contains("same probe build"),
        "{e}"
    );
    assert!(!out.exists());
    // Another rendezvous protocol altogether cannot prove the key: it is turned away with a
    // line, and named again when node 0 gives up waiting.
    let port = free_port();
    let head = node_within(
        SHORT_S,
        0,
        2,
        port,
        &fixture("fake-4gpu-vm.json"),
        None,
        &[],
    );
    let (mut r, _) = knock(port);
    writeln!(
        r.get_mut(),
        r#"{{"protocol":9,"kind":"hello","probe_version":"9.0.0"}}"#
    )
    .unwrap();
    let answer = read_line(&mut r);
    assert!(answer.contains("refuse"), "{answer}");
    let o = finish(head);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(
        lines[0].starts_with("node 0: turned away 127.0.0.1:")
            && lines[0].contains("speaks rendezvous protocol 9 (probe 9.0.0)"),
        "{e}"
    );
    assert!(
        lines[1].starts_with("error: node 1 of 2 did not join")
            && lines[1].contains("turned away meanwhile (1)"),
        "{e}"
    );
}

#[test]
fn a_refused_peer_and_a_mismatched_plan_say_why() {
    // A real peer against a node 0 started without --quick: the plans differ.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let m = fixture("fake-4gpu-vm.json");
    let mut c = Command::new(env!("CARGO_BIN_EXE_probe"));
    let head = c
        .env("PROBE_DIST_TOKEN", TOKEN)
        .args(["run", "--fake-machine"])
        .arg(&m)
        .args([
            "--nnodes",
            "2",
            "--node-rank",
            "0",
            "--dist-init-addr",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--dist-timeout", "5", "--out"])
        .arg(dir.path().join("m.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let peer = finish(node(1, 2, port, &m, None, &[]));
    let head = finish(head);
    for o in [&peer, &head] {
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(stderr(o).lines().count(), 1, "{}", stderr(o));
    }
    assert!(
        stderr(&peer).starts_with("error: node 0 refused this node:"),
        "{}",
        stderr(&peer)
    );
    assert!(stderr(&head).contains("--quick"), "{}", stderr(&head));
}

#[test]
fn a_node_whose_own_run_fails_stops_every_node() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let m = fixture("fake-4gpu-vm.json");
    let out = dir.path().join("m.json");
    let peer = node(1, 2, port, &m, None, &["--gpus", "0,7"]);
    let head = finish(node(0, 2, port, &m, Some(&out), &[]));
    let peer = finish(peer);
    assert_eq!(peer.status.code(), Some(2));
    assert!(
        stderr(&peer).contains("GPU 7 requested"),
        "{}",
        stderr(&peer)
    );
    assert_eq!(head.status.code(), Some(2));
    let e = stderr(&head);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("node 1") && e.contains("stopped") && e.contains("GPU 7 requested"),
        "{e}"
    );
    assert!(!out.exists());
}

#[test]
fn launcher_environments_are_read_and_bad_flags_refused() {
    // torchrun's variables alone make a two-node run (node 0 of 2 here, no peer: times out).
    let o = Command::new(env!("CARGO_BIN_EXE_probe"))
        .env_remove("PROBE_FAKE_MACHINE")
        .args(["run", "--quick", "--dist-timeout", "1", "--fake-machine"])
        .arg(fixture("fake-4gpu-vm.json"))
        .args(["--out", "/dev/null/never"])
        .env("RANK", "0")
        .env("WORLD_SIZE", "2")
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", free_port().to_string())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("node 1 of 2 did not join"),
        "{}",
        stderr(&o)
    );
    for (args, why) in [
        (
            vec!["--nnodes", "2", "--node-rank", "0"],
            "needs --dist-init-addr",
        ),
        (vec!["--node-rank", "1"], "needs --nnodes"),
        (
            vec![
                "--nnodes",
                "2",
                "--node-rank",
                "0",
                "--dist-init-addr",
                "nohost",
            ],
            "HOST:PORT",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_probe"))
            .env_remove("PROBE_FAKE_MACHINE")
            .args(["run", "--fake-machine"])
            .arg(fixture("fake-4gpu-vm.json"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(why), "{args:?}: {}", stderr(&o));
    }
}
