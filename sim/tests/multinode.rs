//! Machines of several boxes: the two-box presets, a two-node probe profile (round trip and
//! reading), layouts and placement on 2 × 8 GPUs, layouts of one box on a bigger machine, and the
//! scale question on a preset.

use models::profile::{CollectiveOp, LinkClass, MachineProfile};
use models::{Layout, ModelSpec};
use sim::cost::{CostModel, IterationModel, Knobs};
use sim::layout::enumerate_layouts;
use sim::machine::Machine;
use sim::options::ServerOptions;
use sim::scale::{ScaleChoice, ScaleQuestion, scale_question};
use sim::workload::Workload;
use std::path::Path;

const RTX2: &str = "rtx-pro-6000-x8x2-400gbe";
const H200X2: &str = "h200-x8x2-ib-ndr";
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/two-node-h200x2-profile.json"
);

fn layout(tp: u32, pp: u32, ep: u32, dp_attention: bool) -> Layout {
    Layout {
        tp,
        pp,
        ep,
        dp_attention,
    }
}

fn fixture() -> MachineProfile {
    MachineProfile::load(Path::new(FIXTURE)).expect("the fixture reads")
}

#[test]
fn two_box_presets_are_two_nodes_of_eight() {
    for name in [RTX2, H200X2] {
        let m = Machine::resolve(name).unwrap();
        assert_eq!((m.node_count(), m.gpus_per_node(), m.gpu_count), (2, 8, 16));
        assert_eq!(m.link_class(0, 8), LinkClass::NET, "{name}");
        assert_eq!(m.link_class(7, 15), LinkClass::NET, "{name}");
        assert_ne!(m.link_class(8, 9), LinkClass::NET, "{name}");
        assert_eq!(
            m.link_class(8, 9),
            m.link_class(0, 1),
            "{name}: node 1 is node 0's twin"
        );
        assert_eq!(m.topology().node_of(12), Some(1));
        assert!(
            m.notes().iter().any(|n| n.contains("not measured")),
            "{name}: {:?}",
            m.notes()
        );
    }
}

#[test]
fn sixteen_gpu_layouts_as_sglang_runs_them() {
    let spec = ModelSpec::preset("kimi-k2.5-nvfp4").unwrap();
    let all = enumerate_layouts(16, &spec);
    let names: Vec<String> = all.iter().map(|c| c.layout.short_name()).collect();
    assert_eq!(&names[..3], &["TP16", "TP8xPP2", "EP16"]);
    for want in [
        "TP16+DPA",
        "TP16+EP16+DPA",
        "TP4xPP4",
        "TP2xPP8",
        "TP1xPP16",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    let m = Machine::resolve(RTX2).unwrap();
    for c in &all {
        let p = m.place(&c.layout).unwrap();
        assert_eq!(p.gpus_used(), 16);
        assert_eq!((p.nodes, p.idle_gpus), (2, 0), "{}", c.layout);
        assert!(
            p.sglang_flags(&c.layout).ends_with("--nnodes 2"),
            "{}",
            p.sglang_flags(&c.layout)
        );
        // TP groups that fit a box stay inside one; only a TP16 group spans the boxes.
        for stage in &p.stages {
            let spanned = m.topology().nodes_spanned(stage);
            assert_eq!(spanned, if c.layout.tp > 8 { 2 } else { 1 }, "{}", c.layout);
        }
    }
    let p = m.place(&layout(8, 2, 1, false)).unwrap();
    assert_eq!(
        p.stages,
        vec![(0..8).collect::<Vec<u32>>(), (8..16).collect()]
    );
    assert_eq!(p.hop_pairs(0).next(), Some((0, 8)));
    let p = m.place(&layout(4, 4, 1, false)).unwrap();
    let nodes: Vec<u32> = p
        .stages
        .iter()
        .map(|s| m.topology().node_of(s[0]).unwrap())
        .collect();
    assert_eq!(
        nodes,
        vec![0, 0, 1, 1],
        "PP stages fill a box before the next"
    );
    assert_eq!(
        p.sglang_flags(&layout(16, 1, 16, false)),
        "--tp 16 --ep-size 16 --nnodes 2"
    );
}

#[test]
fn a_layout_of_fewer_gpus_runs_as_one_replica() {
    let m = Machine::resolve(RTX2).unwrap();
    let p = m.place(&Layout::tp(8)).unwrap();
    assert_eq!(p.stages, vec![(0..8).collect::<Vec<u32>>()]);
    assert_eq!((p.nodes, p.idle_gpus), (1, 8));
    assert_eq!(p.sglang_flags(&Layout::tp(8)), "--tp 8");
    let p = m.place(&layout(4, 2, 1, false)).unwrap();
    assert_eq!(p.stages, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    // On one box: TP4 takes a socket's four GPUs, not two of each.
    let one = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let p = one.place(&Layout::tp(4)).unwrap();
    assert_eq!((p.stages[0].clone(), p.idle_gpus), (vec![0, 1, 2, 3], 4));
    assert_eq!(one.worst_link_class(&p.stages[0]), LinkClass::NODE);
    let spec = ModelSpec::preset("qwen3-235b-a22b-nvfp4").unwrap();
    let opts = ServerOptions::default();
    let cm = CostModel::new(&one, &spec, Layout::tp(4), &opts, Knobs::default())
        .expect("TP4 on 8 GPUs is costed, not refused");
    assert_eq!(cm.placement().idle_gpus, 4);
    assert!(one.place(&Layout::tp(16)).is_err());
}

#[test]
fn groups_across_boxes_use_the_network_curves() {
    let m = Machine::resolve(RTX2).unwrap();
    let all: Vec<u32> = (0..16).collect();
    let ar16 = m.collective(CollectiveOp::AllReduce, &all);
    assert!(ar16.source.starts_with("hierarchical"), "{}", ar16.source);
    assert!(ar16.source.contains("over 1 NIC"), "{}", ar16.source);
    let ar8 = m.collective(CollectiveOp::AllReduce, &all[..8]);
    assert!(
        ar8.source
            .starts_with("measured all_reduce on GPUs 0,1,2,3,4,5,6,7")
    );
    let ar8b = m.collective(CollectiveOp::AllReduce, &all[8..]);
    assert_eq!(
        ar8b.time_s(1e6),
        ar8.time_s(1e6),
        "node 1 costs like node 0"
    );
    for bytes in [1e3, 1e6, 1e8] {
        assert!(ar16.time_s(bytes) > ar8.time_s(bytes), "{bytes} B");
    }
    let sr = m.collective(CollectiveOp::SendRecv, &[0, 8]);
    assert!(
        sr.source.starts_with("measured send_recv on GPUs 0,8"),
        "{}",
        sr.source
    );
    let other_rail = m.collective(CollectiveOp::AllReduce, &[3, 11]);
    assert!(
        other_rail.source.contains("standing in"),
        "{}",
        other_rail.source
    );
    // Eight TP ranks hand over a stage through one NIC: each gets an eighth of it.
    let hop = m.stage_hop(&all[..8], &all[8..]);
    assert!((hop.time_s(64e3) - sr.time_s(8.0 * 64e3)).abs() < 1e-9);
    assert!(
        !m.p2p_ok(&all),
        "no P2P (so no custom all-reduce) across boxes"
    );
    assert!(m.p2p_ok(&all[..8]));
    // With a NIC per GPU the ranks do not share one.
    let h = Machine::resolve(H200X2).unwrap();
    let sr = h.collective(CollectiveOp::SendRecv, &[0, 8]);
    let hop = h.stage_hop(&all[..8], &all[8..]);
    assert_eq!(hop.time_s(64e3), sr.time_s(64e3));
    let ar16 = h.collective(CollectiveOp::AllReduce, &all);
    assert!(ar16.source.contains("over 8 NICs"), "{}", ar16.source);
}

#[test]
fn a_two_node_profile_round_trips() {
    let p = fixture();
    assert_eq!(p.schema_version, 2);
    assert_eq!(p.nodes.len(), 2);
    assert_eq!(p.nodes[1].devices, vec![2, 3]);
    assert_eq!(p.nodes[0].launcher.as_deref(), Some("slurm"));
    let text = serde_json::to_string_pretty(&p).unwrap();
    let back = MachineProfile::from_json_str(&text, Path::new("round-trip.json")).unwrap();
    assert_eq!(back, p);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two-node.json");
    p.save_atomic(&path).unwrap();
    assert_eq!(MachineProfile::load(&path).unwrap(), p);
}

#[test]
fn a_two_node_profile_is_read_as_two_boxes() {
    let m = Machine::from_profile("two-node", fixture()).unwrap();
    assert_eq!((m.node_count(), m.gpus_per_node(), m.gpu_count), (2, 2, 4));
    let all = [0, 1, 2, 3];
    let ar = m.collective(CollectiveOp::AllReduce, &all);
    assert_eq!(
        ar.source,
        "measured all_reduce on GPUs 0,1,2,3 (2 nodes, NET)"
    );
    // the largest size hung: the curve extends from the sizes that finished
    assert!(ar.time_s(1e9).is_finite() && ar.time_s(1e9) > ar.time_s(1e8));
    let rs = m.collective(CollectiveOp::ReduceScatter, &all);
    assert!(rs.source.starts_with("hierarchical"), "{}", rs.source);
    assert!(
        rs.source
            .contains("measured reduce_scatter on GPUs 0,2 (NET)"),
        "{}",
        rs.source
    );
    // only mlx5_0 carried NCCL's traffic (eth0 is listed but unused)
    assert!(rs.source.contains("over 1 NIC"), "{}", rs.source);
    let rail = m.collective(CollectiveOp::AllGather, &[1, 3]);
    assert!(rail.source.contains("standing in"), "{}", rail.source);
    let intra = m.collective(CollectiveOp::AllReduce, &[2, 3]);
    assert!(intra.source.contains("measured all_reduce on GPUs 0,1"));
    let spec = ModelSpec::preset("qwen3-30b-a3b").unwrap();
    let cm = CostModel::new(
        &m,
        &spec,
        Layout::tp(4),
        &ServerOptions::default(),
        Knobs::default(),
    )
    .unwrap();
    assert_eq!(cm.placement().nodes, 2);
    assert!(
        cm.comm_notes()
            .iter()
            .any(|n| n.contains("measured all_reduce on GPUs 0,1,2,3")),
        "{:?}",
        cm.comm_notes()
    );
}

#[test]
fn inconsistent_node_lists_are_refused_naming_the_field() {
    let err = |p: MachineProfile| Machine::from_profile("bad", p).unwrap_err().to_string();
    let mut p = fixture();
    p.nodes[1].devices.push(7);
    let e = err(p);
    assert!(e.contains("nodes[1].devices") && e.contains("GPU 7"), "{e}");
    let mut p = fixture();
    p.devices[2].node = 0;
    let e = err(p);
    assert!(e.contains("devices[2].node"), "{e}");
    let mut p = fixture();
    p.nodes[1].devices.pop();
    let e = err(p);
    assert!(
        e.contains("GPU 3") && e.contains("no entry of `nodes`"),
        "{e}"
    );
    let mut p = fixture();
    p.nodes[0].devices.push(2);
    let e = err(p);
    assert!(
        e.contains("devices[2].node") && e.contains("lists GPU 2"),
        "{e}"
    );
    let mut p = fixture();
    p.nodes[1].rank = 0;
    let e = err(p);
    assert!(e.contains("nodes[1].rank"), "{e}");
}

#[test]
fn the_scale_question_answers_on_a_two_box_preset() {
    let m = Machine::resolve(RTX2).unwrap();
    let spec = ModelSpec::preset("kimi-k2.5-nvfp4").unwrap();
    let opts = ServerOptions::default();
    let workload = Workload {
        num_prompts: 48,
        random_input_len: 512,
        random_output_len: 128,
        max_concurrency: Some(16),
        ..Workload::default()
    };
    let feasible = |g: u32| -> Vec<Layout> {
        enumerate_layouts(g, &spec)
            .into_iter()
            .filter(|c| c.is_feasible())
            .map(|c| c.layout)
            .collect()
    };
    let opts_for = |_: Layout| opts.clone();
    let q = ScaleQuestion {
        spec: &spec,
        opts_for: &opts_for,
        workload: &workload,
        knobs: Knobs::default(),
        nodes: m.node_count(),
        gpus_per_node: m.gpus_per_node(),
        one_box: feasible(8),
        all_boxes: feasible(16),
        comm_spread: 0.3,
        draws: 6,
        seed: 7,
        notes: Vec::new(),
        extra_flags: &|_: &Layout| Vec::new(),
    };
    let build = |l: Layout, k: Knobs| {
        CostModel::new(&m, &spec, l, &opts, k)
            .map(|c| Box::new(c) as Box<dyn IterationModel>)
            .map_err(|e| e.to_string())
    };
    let a = scale_question(&q, &build).unwrap();
    let one = a
        .one_box
        .as_ref()
        .expect("Kimi fits one 8x RTX PRO 6000 box");
    let rep = a.replicas.as_ref().expect("so it fits one per box");
    assert_eq!((one.gpus, one.servers), (8, 1));
    assert!(!one.flags.contains("--nnodes"));
    assert_eq!((a.all_boxes.gpus, a.all_boxes.servers), (16, 1));
    assert!(a.all_boxes.flags.ends_with("--nnodes 2"));
    assert_eq!((rep.gpus, rep.servers), (16, 2));
    assert_eq!(rep.concurrency_per_server, vec![8, 8]);
    let top = [one, &a.all_boxes, rep]
        .into_iter()
        .max_by(|x, y| x.output_throughput.total_cmp(&y.output_throughput))
        .unwrap();
    assert_eq!(a.best, top.choice);
    assert!(a.by_concurrency.len() >= 8);
    for p in &a.by_concurrency {
        assert!(p.one_box_tok_s > 0.0 && p.all_boxes_tok_s > 0.0 && p.replicas_tok_s > 0.0);
        // Two servers, each with half the requests, never lose to one of them with all of them.
        assert!(p.replicas_tok_s >= p.one_box_tok_s * 0.999, "{p:?}");
    }
    assert!((0.0..=1.0).contains(&a.confidence) && a.draws == 6);
    assert!(a.sentence.contains("×"), "{}", a.sentence);
    match a.best {
        ScaleChoice::AllBoxes => assert_eq!(a.flags_to_try.len(), 2),
        _ => assert_eq!(a.flags_to_try.len(), 1),
    }
}

/// The hierarchical all-reduce over two HGX H200 boxes against the one published figure for such
/// a pair: ~470 GB/s busbw with 8 NDR NICs per box (NVIDIA/nccl-tests#309, H100 boxes, whose
/// NVLink and NICs the H200's match).
#[test]
fn two_hgx_boxes_all_reduce_near_the_published_busbw() {
    let h = Machine::resolve(H200X2).unwrap();
    let all: Vec<u32> = (0..16).collect();
    let ar = h.collective(CollectiveOp::AllReduce, &all);
    let bytes = (512u64 << 20) as f64;
    let busbw = bytes / ar.time_s(bytes) * CollectiveOp::AllReduce.busbw_factor(16) / 1e9;
    eprintln!("2 x HGX H200 all_reduce busbw at 512 MiB: {busbw:.0} GB/s (published ~470)");
    assert!(
        (busbw / 470.0 - 1.0).abs() < 0.15,
        "busbw {busbw:.0} GB/s vs 470 published"
    );
}

/// What `probe run --nnodes 2` itself merged (two fake 4-GPU nodes over loopback): read as two
/// boxes, its all-GPU curve used for TP8, its "TP group per node × nodes" curve (GPUs 0,1,4,5)
/// standing in for any 2 + 2 group, the loopback NIC NCCL used counted as the one NIC.
#[test]
fn the_probes_own_merged_profile_reads() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/probe-fake-2node-merged.json"
    );
    let m = Machine::resolve(path).unwrap();
    assert_eq!((m.node_count(), m.gpus_per_node()), (2, 4));
    assert_eq!(m.link_class(3, 4), LinkClass::NET);
    let all: Vec<u32> = (0..8).collect();
    let ar = m.collective(CollectiveOp::AllReduce, &all);
    assert_eq!(
        ar.source,
        "measured all_reduce on GPUs 0,1,2,3,4,5,6,7 (2 nodes, NET)"
    );
    let ag = m.collective(CollectiveOp::AllGather, &[2, 3, 6, 7]);
    assert!(
        ag.source
            .starts_with("measured all_gather on GPUs 0,1,4,5 standing in"),
        "{}",
        ag.source
    );
    let hop = m.stage_hop(&all[..4], &all[4..]);
    assert!(
        hop.source.contains("4 TP ranks send at once over 1 NIC"),
        "{}",
        hop.source
    );
    let spec = ModelSpec::preset("qwen3-235b-a22b-nvfp4").unwrap();
    let cm = CostModel::new(
        &m,
        &spec,
        layout(4, 2, 1, false),
        &ServerOptions::default(),
        Knobs::default(),
    )
    .unwrap();
    assert_eq!(
        cm.placement().stages,
        vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
    );
}
