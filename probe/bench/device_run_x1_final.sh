#!/usr/bin/env bash
# The 1x H200 profiles re-measured with the final code (schema 2, launch step included), in one
# device call: the full run and PyTorch's reference figures for it (torch_reference.py), the
# launch floors' CuPy/PyTorch reference against the full run's launch step, and `--quick`.
# Release binary and scripts in .device-bin/; everything lands in $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
B=.device-bin
step() { echo "=== $(date -u +%T) $*"; }
wall() { local t0; t0=$(date +%s%N); "$@"; local rc=$?; echo "wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (rc $rc)"; }
nvidia-smi -L
step full; wall timeout 120 $B/probe run --out "$OUT/h200-x1.json" > "$OUT/h200-x1.summary.txt" 2>&1; tail -n 14 "$OUT/h200-x1.summary.txt"
step torch reference; wall timeout 120 python3 $B/torch_reference.py "$OUT/h200-x1.json" --out "$OUT/h200-x1.torch-reference.json"
step launch reference; wall timeout 120 python3 $B/launch_reference.py "$OUT/h200-x1.json" --out "$OUT/h200-x1.launch-reference.json" | tail -n 8
step quick; wall timeout 60 $B/probe run --quick --out "$OUT/h200-x1-quick.json" > /dev/null
for f in "$OUT"/h200-x1.json "$OUT"/h200-x1-quick.json; do
  python3 -c "import json,sys;[print(n) for n in json.load(open(sys.argv[1]))['provenance']['notes'] if 'took' in n or 'NCCL group' in n or 'worker start' in n]" "$f"
done
step done
