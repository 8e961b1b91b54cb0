#!/usr/bin/env bash
# Smoke run after a change to a measuring step (2 GPUs, release binary at .devbin/probe):
# `--quick` on two GPUs and a full one-GPU run beside torch_reference.py. One tarball in $OUT.
set -o pipefail
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
N=$(nvidia-smi -L | wc -l); name=h200-x$N; W=$(mktemp -d); P=.devbin/probe
step() { echo "=== $(date -u +%T) $*"; }
step quick; timeout 60 $P run --quick --out "$W/$name-quick.json" | tail -n 25; echo rc $?
step one GPU; CUDA_VISIBLE_DEVICES=0 timeout 120 $P run --out "$W/h200-x1.json" > /dev/null; echo rc $?
step torch one GPU; CUDA_VISIBLE_DEVICES=0 timeout 90 python3 probe/bench/torch_reference.py "$W/h200-x1.json" --out "$W/h200-x1.torch-reference.json" | tail -n 7
for f in "$W"/*.json; do
  python3 -c "import json,sys;p=json.load(open(sys.argv[1]));print(sys.argv[1]);[print(' ',n) for n in p.get('provenance',{}).get('notes',[]) if 'took' in n or 'host' in n]" "$f"
done
tar czf "$OUT/smoke.tgz" -C "$W" .
step done
