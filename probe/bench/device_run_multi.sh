#!/usr/bin/env bash
# Issue 7 in one device call: probe (full), probe with P2P off (NCCL_P2P_DISABLE=1 and
# --no-peer-access), and the torch.distributed reference under both environments, then the
# side-by-side busbw tables; last a `probe run --quick` for its wall time. Runs from the repo
# root on a multi-GPU machine with the release binary at .devbin/probe; writes everything under
# $OUT (7 files). Each step runs even if an
# earlier one failed, and has its own time limit so one hang cannot eat the call.
set -o pipefail
# NVLink multicast stays off (shared host's safety; see the device notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
N=$(nvidia-smi -L | wc -l)
name=h200-x$N
P=.devbin/probe
ref=probe/bench/torch_dist_reference.py
cmp=probe/bench/compare_collectives.py
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
step() { echo "=== $(date -u +%T) $*"; }
step probe run; timeout 170 $P run --out "$OUT/$name.json"
step probe nop2p; NCCL_P2P_DISABLE=1 timeout 140 $P run --no-peer-access --out "$OUT/$name-nop2p.json"
step torch default; timeout 90 python3 -m torch.distributed.run --standalone --nproc_per_node="$N" $ref --out "$OUT/$name.torch-dist-reference.json"
step torch nop2p; NCCL_P2P_DISABLE=1 timeout 90 python3 -m torch.distributed.run --standalone --nproc_per_node="$N" $ref --out "$OUT/$name-nop2p.torch-dist-reference.json"
step probe quick; t0=$(date +%s%N); timeout 60 $P run --quick --out "$OUT/$name-quick.json" > /dev/null
echo "probe run --quick wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
step compare
python3 $cmp "$OUT/$name.json" "$OUT/$name.torch-dist-reference.json"
python3 $cmp "$OUT/$name-nop2p.json" "$OUT/$name-nop2p.torch-dist-reference.json"
python3 $cmp "$OUT/$name.json" "$OUT/$name-nop2p.torch-dist-reference.json" --nccl-env NCCL_P2P_DISABLE=1
step done
