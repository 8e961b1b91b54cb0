#!/usr/bin/env bash
# Where probe's remaining small-size gap to the CUDA-graph reference comes from: the same
# one-process-per-GPU ctypes reference timed three ways (graph, eager behind a shared gate)
# beside a probe NCCL-only run, default and with P2P off. One tarball in $OUT.
set -o pipefail
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
N=$(nvidia-smi -L | wc -l); name=h200-x$N; W=$(mktemp -d)
R=probe/bench/nccl_ctypes_reference.py
step() { echo "=== $(date -u +%T) $*"; }
step probe nccl; timeout 120 .devbin/probe run --only nccl --format json --out "$W/$name-nccl.json" > /dev/null; echo rc $?
for env in "" "NCCL_P2P_DISABLE=1"; do
  tag=${env:+-nop2p}
  for mode in graph gate; do
    step ctypes $mode $env; env $env timeout 100 python3 $R --$mode --out "$W/$name$tag.nccl-ctypes-$mode.json" > "$W/ctypes-$mode$tag.log" 2>&1; echo rc $?; tail -2 "$W/ctypes-$mode$tag.log"
  done
done
tar czf "$OUT/gatecheck.tgz" -C "$W" .
step done
