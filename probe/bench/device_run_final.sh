#!/usr/bin/env bash
# Issue 3's closing measurements in one device call (2 GPUs, release binary at .devbin/probe):
# `--quick` on one GPU and (twice) on two for the per-step costs behind the 8-GPU estimate
# (probe/src/plan.rs); the full profiles with and without P2P; the NCCL references without
# torch (nccl_ctypes_reference.py, CUDA graph, one process per GPU, same libnccl) under both
# environments; and the one-GPU acceptance run beside torch_reference.py. One tarball in $OUT.
# The torch.distributed references committed beside them came from earlier calls:
#   torchrun --standalone --nproc_per_node=2 probe/bench/torch_dist_reference.py [--graph] --out F
# (with NCCL_P2P_DISABLE=1 for the -nop2p files); bench/device_run_gatecheck.sh made
# profiles/nccl-reference/.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
N=$(nvidia-smi -L | wc -l)
name=h200-x$N
P=.devbin/probe
W=$(mktemp -d)
step() { echo "=== $(date -u +%T) $*"; }
wall() { local t0; t0=$(date +%s%N); "$@"; local rc=$?; echo "wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (rc $rc)"; }
nvidia-smi topo -m > "$W/topo.txt" 2>&1
step quick 1 GPU; CUDA_VISIBLE_DEVICES=0 wall timeout 60 $P run --quick --format json --out "$W/h200-x1-quick.json" > /dev/null
for i in 1 2; do
  step quick $N GPUs $i; wall timeout 60 $P run --quick --format json --out "$W/$name-quick$i.json" > /dev/null
done
step probe full; wall timeout 200 $P run --out "$W/$name.json" > "$W/$name.summary.txt"
step probe nop2p; NCCL_P2P_DISABLE=1 wall timeout 170 $P run --no-peer-access --out "$W/$name-nop2p.json" > /dev/null
step ctypes graph; wall timeout 100 python3 probe/bench/nccl_ctypes_reference.py --graph --out "$W/$name.nccl-ctypes-graph.json" > "$W/ctypes-graph.log" 2>&1
step ctypes graph nop2p; NCCL_P2P_DISABLE=1 wall timeout 100 python3 probe/bench/nccl_ctypes_reference.py --graph --out "$W/$name-nop2p.nccl-ctypes-graph.json" > "$W/ctypes-graph-nop2p.log" 2>&1
step one GPU; CUDA_VISIBLE_DEVICES=0 wall timeout 120 $P run --out "$W/h200-x1.json" > /dev/null
step torch one GPU; CUDA_VISIBLE_DEVICES=0 timeout 90 python3 probe/bench/torch_reference.py "$W/h200-x1.json" --out "$W/h200-x1.torch-reference.json"
step compare
cmp=probe/bench/compare_collectives.py
python3 $cmp "$W/$name.json" "$W/$name.nccl-ctypes-graph.json" --min-bytes 8 | tail -n 1
python3 $cmp "$W/$name-nop2p.json" "$W/$name-nop2p.nccl-ctypes-graph.json" --min-bytes 8 | tail -n 1
for f in "$W"/*.json; do
  python3 -c "import json,sys;p=json.load(open(sys.argv[1]));print(sys.argv[1]);[print(' ',n) for n in p.get('provenance',{}).get('notes',[]) if 'took' in n or 'NCCL group' in n or 'worker start' in n or 'timing:' in n]" "$f"
done
tar czf "$OUT/final.tgz" -C "$W" .
step done
