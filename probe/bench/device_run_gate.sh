#!/usr/bin/env bash
# Issue 3's open points in one device call on a 2-GPU machine (release binary at .devbin/probe):
#  1. `probe run --quick` wall time, twice (the first pays cold library loads), with per-step
#     seconds in the profile notes — the evidence behind the 8-GPU --quick estimate;
#  2. NCCL timing with the gate: a quick NCCL-only run ungated for the same-call contrast, the
#     full profiles with and without P2P, and torch.distributed references (eager and CUDA
#     graph) under both environments, compared size by size;
#  3. the one-GPU acceptance again (probe full run on GPU 0 beside torch_reference.py), since
#     the host, device and GEMM steps changed how they stage data.
# Writes everything under $OUT. Every step has its own time limit and runs even if one failed.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
N=$(nvidia-smi -L | wc -l)
name=h200-x$N
P=.devbin/probe
ref=probe/bench/torch_dist_reference.py
cmp=probe/bench/compare_collectives.py
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
step() { echo "=== $(date -u +%T) $*"; }
wall() { local t0; t0=$(date +%s%N); "$@"; local rc=$?; echo "wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (rc $rc)"; }
for i in 1 2; do
  step "probe quick $i"; wall timeout 90 $P run --quick --format json --out "$OUT/$name-quick$i.json" > /dev/null
done
step probe quick nccl ungated; wall timeout 90 $P run --quick --only nccl --nccl-ungated --format json --out "$OUT/$name-quick-ungated.json" > /dev/null
step probe full; wall timeout 200 $P run --out "$OUT/$name.json" > "$OUT/$name.summary.txt"
step torch graph; timeout 120 python3 -m torch.distributed.run --standalone --nproc_per_node="$N" $ref --graph --out "$OUT/$name.torch-dist-graph.json" > "$OUT/torch-graph.log" 2>&1; echo rc $?
step one GPU; CUDA_VISIBLE_DEVICES=0 wall timeout 120 $P run --out "$OUT/h200-x1.json" > /dev/null
step torch one GPU; CUDA_VISIBLE_DEVICES=0 timeout 90 python3 probe/bench/torch_reference.py "$OUT/h200-x1.json" --out "$OUT/h200-x1.torch-reference.json"
step torch eager; timeout 100 python3 -m torch.distributed.run --standalone --nproc_per_node="$N" $ref --out "$OUT/$name.torch-dist-reference.json" > "$OUT/torch-eager.log" 2>&1; echo rc $?
step probe nop2p; NCCL_P2P_DISABLE=1 wall timeout 170 $P run --no-peer-access --out "$OUT/$name-nop2p.json" > /dev/null
step torch graph nop2p; NCCL_P2P_DISABLE=1 timeout 120 python3 -m torch.distributed.run --standalone --nproc_per_node="$N" $ref --graph --out "$OUT/$name-nop2p.torch-dist-graph.json" > "$OUT/torch-graph-nop2p.log" 2>&1; echo rc $?
step compare
for f in "$OUT/$name.torch-dist-graph.json" "$OUT/$name.torch-dist-reference.json"; do
  [ -f "$f" ] && python3 $cmp "$OUT/$name.json" "$f" --min-bytes 1024
done
[ -f "$OUT/$name-nop2p.torch-dist-graph.json" ] && python3 $cmp "$OUT/$name-nop2p.json" "$OUT/$name-nop2p.torch-dist-graph.json" --min-bytes 1024
[ -f "$OUT/$name-nop2p.torch-dist-graph.json" ] && python3 $cmp "$OUT/$name.json" "$OUT/$name-nop2p.torch-dist-graph.json" --nccl-env NCCL_P2P_DISABLE=1 --min-bytes 1024
for f in "$OUT"/*quick*.json; do
  python3 -c "import json,sys;p=json.load(open(sys.argv[1]));print(sys.argv[1]);[print(' ',n) for n in p['provenance']['notes'] if 'took' in n or 'NCCL group' in n or 'worker start' in n or 'P2P timing' in n or 'NCCL timing' in n]" "$f"
done
step done
