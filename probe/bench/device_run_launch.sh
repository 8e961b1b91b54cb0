#!/usr/bin/env bash
# Issue 12's launch floors on the lent 1x H200 in one device call (release binary and scripts in
# .device-bin/): `probe run --only launch`, then bench/launch_reference.py (CuPy + PyTorch, same
# chain length and repeats, read from the profile), then the probe again (run-to-run spread), then
# a `--quick` run for the launch step's share of its seconds. Everything lands in $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
B=.device-bin
step() { echo "=== $(date -u +%T) $*"; }
wall() { local t0; t0=$(date +%s%N); "$@"; local rc=$?; echo "wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (rc $rc)"; }
nvidia-smi -L
nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv
step probe launch; wall timeout 60 $B/probe run --only launch --out "$OUT/h200-x1-launch.json" | tee "$OUT/launch.summary.txt"
step reference; wall timeout 120 python3 $B/launch_reference.py "$OUT/h200-x1-launch.json" --out "$OUT/h200-x1-launch.reference.json"
step probe launch again; wall timeout 60 $B/probe run --only launch --out "$OUT/h200-x1-launch-2.json" | tail -n 8
step quick; wall timeout 60 $B/probe run --quick --out "$OUT/h200-x1-quick.json" | tail -n 12
python3 -c "import json,sys;[print(n) for n in json.load(open(sys.argv[1]))['provenance']['notes'] if 'took' in n or 'launch' in n]" "$OUT/h200-x1-quick.json"
step done
