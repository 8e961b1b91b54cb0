#!/usr/bin/env bash
# Second device call of the gate work (2 GPUs, release binary at .devbin/probe): the NCCL
# references without torch's plumbing (nccl_ctypes_reference.py, CUDA graph, one process per
# GPU, on the system libnccl the probe loads) with and without P2P, torch.distributed's CUDA
# graph reference, a full NCCL-only probe run to compare against them in the same call, and
# `--quick` on one and on two GPUs for the per-GPU step costs. Everything lands in one tarball
# ($OUT/refs.tgz) plus the log.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
N=$(nvidia-smi -L | wc -l)
name=h200-x$N
P=.devbin/probe
W=$(mktemp -d)
step() { echo "=== $(date -u +%T) $*"; }
wall() { local t0; t0=$(date +%s%N); "$@"; local rc=$?; echo "wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (rc $rc)"; }
step quick 1 GPU; CUDA_VISIBLE_DEVICES=0 wall timeout 60 $P run --quick --format json --out "$W/h200-x1-quick.json" > /dev/null
step quick $N GPUs; wall timeout 60 $P run --quick --format json --out "$W/$name-quick.json" > /dev/null
step probe nccl; wall timeout 120 $P run --only nccl --format json --out "$W/$name-nccl.json" > /dev/null
step ctypes graph; wall timeout 150 python3 probe/bench/nccl_ctypes_reference.py --graph --out "$W/$name.nccl-ctypes-graph.json" > "$W/ctypes-graph.log" 2>&1; tail -3 "$W/ctypes-graph.log"
step ctypes graph nop2p; NCCL_P2P_DISABLE=1 wall timeout 150 python3 probe/bench/nccl_ctypes_reference.py --graph --out "$W/$name-nop2p.nccl-ctypes-graph.json" > "$W/ctypes-graph-nop2p.log" 2>&1; tail -3 "$W/ctypes-graph-nop2p.log"
step torch graph; timeout 120 python3 -m torch.distributed.run --standalone --nproc_per_node="$N" probe/bench/torch_dist_reference.py --graph --out "$W/$name.torch-dist-graph.json" > "$W/torch-graph.log" 2>&1; echo rc $?
step compare
cmp=probe/bench/compare_collectives.py
for r in "$W/$name.nccl-ctypes-graph.json" "$W/$name.torch-dist-graph.json"; do
  [ -f "$r" ] && python3 $cmp "$W/$name-nccl.json" "$r" --min-bytes 8 | tail -n 1
done
[ -f "$W/$name-nop2p.nccl-ctypes-graph.json" ] && python3 $cmp "$W/$name-nccl.json" "$W/$name-nop2p.nccl-ctypes-graph.json" --nccl-env NCCL_P2P_DISABLE=1 --min-bytes 8 | tail -n 1
for f in "$W"/*quick*.json; do
  python3 -c "import json,sys;p=json.load(open(sys.argv[1]));print(sys.argv[1]);[print(' ',n) for n in p['provenance']['notes'] if 'took' in n or 'NCCL group' in n or 'worker start' in n or 'timing:' in n]" "$f"
done
tar czf "$OUT/refs.tgz" -C "$W" .
step done
