#!/bin/bash
# Where a GPU training step's time goes, in one call on a lent GPU machine
# (carried binaries as device-session.sh prepares them): memo bench train on
# TinyLlama-1.1B's shape in bf16-mixed with a Go CPU profile (--cpu-profile),
# with and without q, k, v kept in bf16 (MEMO_KEEP_QKV=off), beside
# scripts/bench_train.py; then a host-bound shape (16 narrow layers, tiny
# kernels: a step is the host's time) in both. Results under $OUT.
set -u
OUT=${OUT:-/tmp/memo-train-profile}
mkdir -p "$OUT"
. "$(dirname "${BASH_SOURCE[0]}")/carried.sh"
big=(--dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --untied --seq 256 --batch 8)
small=(--dim 256 --layers 16 --heads 8 --vocab 4096 --seq 64 --batch 8)
summary() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], "tokens/s %.0f step_ms %.2f" % (d["tokens_per_s"], 1e3*d["step_s"]), " ".join("%s %.2f" % (k[:-2]+"_ms", 1e3*d[k]) for k in ("model_s","optimizer_s","collect_s") if k in d))' "$1" "$2" 2>&1; }
memo() { # name, env, args...
	local n=$1 e=$2; shift 2
	env $e "$T/memo" --cpu-profile "$OUT/$n.prof" bench train --precision bf16-mixed --device cuda --json "$@" >"$OUT/$n.json" 2>"$OUT/$n.err"
	summary "$OUT/$n.json" "$n"
}
torch() { # name, args...
	local n=$1; shift
	python3 scripts/bench_train.py --device cuda --autocast bf16 --fused "$@" >"$OUT/$n.json" 2>"$OUT/$n.err"
	summary "$OUT/$n.json" "$n"
}
{
	date -u
	nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
	lscpu | grep -E 'Model name|^CPU\(s\)|MHz' | head -4
	command -v nsys ncu || echo "no nsys/ncu"
	(cd precision && timeout 60 "$T/precision.test" -test.run 'TestPrecision' -test.v 2>&1 | grep -E '^(--- |PASS|FAIL|ok)|_test.go' | tail -8)
	memo big-keep "" "${big[@]}" --steps 10
	memo big-off MEMO_KEEP_QKV=off "${big[@]}" --steps 10
	torch big-torch "${big[@]}" --steps 10
	memo small-keep "" "${small[@]}" --steps 200
	torch small-torch "${small[@]}" --steps 200
	memo small-off MEMO_KEEP_QKV=off "${small[@]}" --steps 200
	date -u
} 2>&1 | tee "$OUT/summary.txt"
