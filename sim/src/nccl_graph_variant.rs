//! The 16-GPU switch box running NCCL with the rtx6kpro community's 8-rank graph file
//! (`NCCL_GRAPH_FILE=/mnt/nccl_graph_opt.xml`), built at load time as the preset
//! `rtx-pro-6000-x16-pcie-switch-nccl-graph`.
//!
//! What the file changes (rtx6kpro wiki `optimization/nccl-tuning.md` @ e2c2b95, "NCCL Graph XML
//! Fix for AMD Turin"): NCCL skips its own topology search and runs the file's graph, `pattern="4"`
//! (ring) `nchannels="2"` (duplicated to 4 channels, the page's NCCL debug: "4 total channels")
//! at `speedintra="24"` GB/s a channel, `typeintra="PHB" typeinter="PIX"`, which makes NCCL's
//! tuner (`src/graph/tuning.cc`, `crate::machine::nccl_model`) pick LL for small messages. Without
//! it, on the dual-socket Turin box the file was written for, NCCL's search takes AMD's inter-CPU
//! link at `AMD_BW` = 16 GB/s (`src/graph/topo.cc` `ncclTopoGetInterCpuBw`) and settles on 2
//! channels and Simple (48 µs at 32 KiB vs 26 µs with the file, the same page).
//!
//! The file's layout was measured: the `-nccl-tuned` preset's 4- and 8-GPU curves are the
//! dual-Turin box's published all-reduce with it in force (their 23 µs at 32–64 KiB is the page's
//! with-file 25.6–26.2 µs, not the without-file 48 µs). On the switch box the same rings run on
//! GPUs 0–7 (switches 1 and 2, four GPUs contiguous on each), each switch left and entered once
//! per direction per channel through its own x16 uplink, and the cross-switch hop goes through
//! one CPU's root ports instead of across sockets: no slower a hop, the same links (56.3 GB/s a
//! pair on both boxes). So GPUs 0–7's all-reduce, all-gather and reduce-scatter are those measured
//! curves; everything else stays the switch box's (its default 8-GPU curves on GPUs 8–15). The
//! file names 8 ranks: a 16-GPU group cannot run it, and keeps the base preset's modelled curve.

use models::profile::{CollectiveOp, LinkClass, MachineProfile};

/// The ops whose 8-GPU curves the graph file's measured layout replaces.
const RING_OPS: [CollectiveOp; 3] = [
    CollectiveOp::AllReduce,
    CollectiveOp::AllGather,
    CollectiveOp::ReduceScatter,
];

/// Ranks the community's graph file lays rings over.
pub const GRAPH_FILE_RANKS: usize = 8;

/// `base` (the switch box) with its first eight GPUs' ring collectives replaced by `measured`'s
/// 8-GPU curves timed with the graph file (`-nccl-tuned`), put on GPUs 0–7 of `base` with the
/// link class of that group there, and a note saying so.
pub fn with_graph_file(base: &MachineProfile, measured: &MachineProfile) -> MachineProfile {
    let mut p = base.clone();
    let group: Vec<u32> = (0..GRAPH_FILE_RANKS as u32).collect();
    // the class the base box gives that group (NODE: two switches through the CPU's root ports)
    let class = p
        .collectives
        .iter()
        .find(|c| c.devices == group)
        .and_then(|c| c.link_class)
        .unwrap_or(LinkClass::NODE);
    // the default-NCCL 8-GPU curves move to GPUs 8-15 (two other switches, the same class): a
    // group there runs without the file, and the 16-GPU ring model still reads them
    let rest: Vec<u32> = (GRAPH_FILE_RANKS as u32..2 * GRAPH_FILE_RANKS as u32).collect();
    for c in p
        .collectives
        .iter_mut()
        .filter(|c| RING_OPS.contains(&c.op) && c.devices == group)
    {
        c.devices = rest.clone();
    }
    let mut added = 0;
    for c in measured.collectives.iter().filter(|c| {
        RING_OPS.contains(&c.op) && c.devices.len() == GRAPH_FILE_RANKS && !c.nccl_env.is_empty()
    }) {
        let mut c = c.clone();
        c.devices = group.clone();
        c.link_class = Some(class);
        c.nccl_env
            .insert("NCCL_GRAPH_FILE".into(), "8-rank ring graph".into());
        p.collectives.push(c);
        added += 1;
    }
    p.provenance.notes.push(format!(
        "NCCL_GRAPH_FILE (the rtx6kpro 8-rank graph: 2 rings duplicated to 4 channels at 24 GB/s, \
         PHB/PIX, LL for small messages): GPUs 0-7's all-reduce, all-gather and reduce-scatter \
         ({added} curves) are the dual-Turin box's measured with that file (`rtx-pro-6000-x8-baremetal-nccl-tuned`), \
         the same rings here over one CPU's root ports; 16-GPU groups cannot use an 8-rank file"
    ));
    p
}
