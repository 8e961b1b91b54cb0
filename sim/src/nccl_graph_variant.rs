//! The 16-GPU switch box running NCCL with the rtx6kpro community's 8-rank graph file
//! (`NCCL_GRAPH_FILE=/mnt/nccl_graph_opt.xml`), built at load time as the preset
//! `rtx-pro-6000-x16-pcie-switch-nccl-graph`.
//!
//! What the file is (rtx6kpro wiki `optimization/nccl-tuning.md` @ e2c2b95, "NCCL Graph XML Fix
//! for AMD Turin"): a ring graph, `pattern="4"` `nchannels="2"` at `speedintra="24"` GB/s a
//! channel, `typeintra="PHB" typeinter="PIX"`. NCCL loads it instead of searching
//! (NVIDIA/nccl `src/graph/search.cc` @ 5067397, `ncclTopoCompute`: `NCCL_GRAPH_FILE` returns
//! before the search). It was written for the dual-socket Turin box, where the search takes the
//! inter-CPU link at `AMD_BW` = 16 GB/s (`src/graph/topo.h`) and settles on a 15 GB/s SYS ring.
//!
//! On this box's GPUs 0–7 (one socket, two switches) there is no inter-CPU link on the path, and
//! NCCL's own search finds the file's ring. Every GPU and switch uplink is Gen5 x16, 48 GB/s to
//! NCCL (`topo.cc`: width × 240 / 80); the sm100+ speed list (`search.cc`
//! `sm100SpeedArrayIntra`, compute capability 12.0) starts at the first speed under that, 45: one
//! ring fits (each switch entered and left once, one edge on each x16 link), a second at 45 does
//! not. The search then steps down while the next speed is above 0.49 of the found one and keeps
//! the larger `nChannels × bw`: two rings at 24 (48) beat one at 45; 24 < 25 leaves
//! `ncclTopoDupChannels` idle (our reading of the source: no NCCL_DEBUG log of this box is
//! published). So both ways NCCL runs two 24 GB/s PHB rings, and its tuner
//! (`tuning.cc`, bus bandwidth `nChannels × bwIntra`) picks the same protocols: the file changes
//! nothing NCCL does here. GPUs 0–7 keep the base preset's curves, measured without a file on a
//! one-socket rig with the same two switches (`data/observations/nccl-rtx-pro-6000-cpayne-switch-8gpu.csv`).
//! The file names 8 ranks: a 16-GPU group cannot run it, and keeps the base preset's modelled
//! curve.

use models::profile::MachineProfile;

/// Ranks the community's graph file lays rings over.
pub const GRAPH_FILE_RANKS: usize = 8;

/// `base` (the switch box) with a note saying what the graph file changes there: nothing in its
/// curves (see the module comment).
pub fn with_graph_file(base: &MachineProfile) -> MachineProfile {
    let mut p = base.clone();
    p.provenance.notes.push(format!(
        "NCCL_GRAPH_FILE (the rtx6kpro {GRAPH_FILE_RANKS}-rank graph: 2 rings at 24 GB/s, PHB/PIX): \
         on one socket NCCL's own search finds the same two rings (Gen5 x16 = 48 GB/s, sm100 speed \
         list, src/graph/search.cc), so GPUs 0-7 keep this box's curves, measured without a file \
         on two of the same switches under one socket; 16-GPU groups cannot use an 8-rank file"
    ));
    p
}
