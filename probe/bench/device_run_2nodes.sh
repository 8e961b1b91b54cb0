#!/usr/bin/env bash
# Issue 16 in one device call on nvidia-h200-x2 (NOT RUN YET: that kind was not lent while the
# multi-node probe was written). Two one-GPU "nodes" of one host: with P2P and shared memory off,
# NCCL between the two processes must take its network transport (sockets over loopback), the
# code path of two boxes. Release binary and scripts in .device-bin/; everything lands in $OUT.
#   1. by hand: `probe run --nnodes 2 --node-rank R --dist-init-addr 127.0.0.1:PORT`, one process
#      per GPU (CUDA_VISIBLE_DEVICES=R); node 0 writes h200-x2-2nodes-socket.json;
#   2. through `mpirun -np 2` if Open MPI is there (rank from OMPI_COMM_WORLD_RANK, --quick);
#   3. the reference: torch.distributed, two processes, same variables, every op incl. send/recv,
#      the same sizes; compare_collectives.py prints probe vs reference busbw from 1 MiB up.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 PYTHONUNBUFFERED=1
# The join secret every node of the run must hold (rendezvous protocol 2, issue 39).
export PROBE_DIST_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
B=.device-bin
step() { echo "=== $(date -u +%T) $*"; }
nvidia-smi -L; nvidia-smi topo -m
step by hand
CUDA_VISIBLE_DEVICES=1 timeout 400 $B/probe run --nnodes 2 --node-rank 1 --dist-init-addr 127.0.0.1:29517 \
  --out "$OUT/node1-part.json" > "$OUT/node1.log" 2>&1 &
CUDA_VISIBLE_DEVICES=0 timeout 400 $B/probe run --nnodes 2 --node-rank 0 --dist-init-addr 127.0.0.1:29517 \
  --out "$OUT/h200-x2-2nodes-socket.json" > "$OUT/node0.summary.txt" 2>&1
echo "node 0 rc $?"; wait; echo "node 1: $(tail -n 2 "$OUT/node1.log")"
step mpirun
if command -v mpirun >/dev/null; then
  timeout 200 mpirun --allow-run-as-root -np 2 -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE -x NCCL_NVLS_ENABLE -x PROBE_DIST_TOKEN \
    bash -c 'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_RANK exec '"$B"'/probe run --quick --dist-init-addr 127.0.0.1:29518 --out '"$OUT"'/mpirun-quick-$OMPI_COMM_WORLD_RANK.json' \
    > "$OUT/mpirun.log" 2>&1; echo "mpirun rc $?"
else
  echo "no mpirun on this machine"
fi
step torch reference
timeout 400 torchrun --standalone --nproc_per_node=2 $B/torch_dist_reference.py \
  --out "$OUT/h200-x2-2nodes-socket.torch-dist-reference.json" > "$OUT/torch.log" 2>&1; echo "torch rc $?"
step compare
python3 $B/compare_collectives.py "$OUT/h200-x2-2nodes-socket.json" \
  "$OUT/h200-x2-2nodes-socket.torch-dist-reference.json" --min-bytes 1048576 --tolerance 0.10
step done
