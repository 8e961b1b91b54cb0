#!/usr/bin/env bash
# Regenerates probe/profiles/h200-x2.nccl-compare.txt: probe's NCCL busbw beside every
# reference committed next to it (run from the repository root).
P=probe/profiles
C="python3 probe/bench/compare_collectives.py"
{
  echo "# probe NCCL busbw vs references, 2x H200 (NV18). Ratio = probe / reference; * = outside 5%."
  echo "# Same device call: profiles vs nccl_ctypes_reference.py --graph (one process per GPU, same libnccl 2.28.3)."
  echo "# nccl-reference/: a probe NCCL-only run vs the ctypes reference gated (--gate) and graphed, same call."
  echo "# torch-dist-graph: torch.distributed + its own NCCL 2.28.9, CUDA graphs, an earlier call (torch's per-op plumbing)."
  for args in \
    "$P/h200-x2.json $P/h200-x2.nccl-ctypes-graph.json" \
    "$P/h200-x2-nop2p.json $P/h200-x2-nop2p.nccl-ctypes-graph.json" \
    "$P/h200-x2.json $P/h200-x2-nop2p.nccl-ctypes-graph.json --nccl-env NCCL_P2P_DISABLE=1" \
    "$P/nccl-reference/h200-x2-nccl.json $P/nccl-reference/h200-x2.nccl-ctypes-gate.json" \
    "$P/nccl-reference/h200-x2-nccl.json $P/nccl-reference/h200-x2-nop2p.nccl-ctypes-gate.json --nccl-env NCCL_P2P_DISABLE=1" \
    "$P/nccl-reference/h200-x2-nccl.json $P/nccl-reference/h200-x2.nccl-ctypes-graph.json" \
    "$P/nccl-reference/h200-x2-nccl.json $P/nccl-reference/h200-x2-nop2p.nccl-ctypes-graph.json --nccl-env NCCL_P2P_DISABLE=1" \
    "$P/h200-x2.json $P/h200-x2.torch-dist-graph.json" \
    "$P/h200-x2-nop2p.json $P/h200-x2-nop2p.torch-dist-graph.json"; do
    echo
    # shellcheck disable=SC2086
    $C $args --min-bytes 8
  done
} > $P/h200-x2.nccl-compare.txt
grep -E "^(probe|torch) |within" $P/h200-x2.nccl-compare.txt
