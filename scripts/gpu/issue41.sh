#!/bin/bash
# Issue 41's checks in one call on a lent GPU machine with no Go (carried
# binaries as device-session.sh prepares them, plus gpucarry/torchx.test.xz):
# the GPU-only tests of the fused RMSNorm and native grouped-query attention,
# scripts/gpu/mfu.sh (memo beside the eager, bf16-master and torch.compile
# peers at 8 x 2048 and 8 x 256, and memo with both changes switched off:
# MEMO_FUSED_NORM=off MEMO_GQA=off), then scoring a random TinyLlama-shaped
# checkpoint beside PyTorch with bf16 weights on the same rows, NLLs compared.
# $OUT gets summary.txt and all.tgz (every run's JSON and stderr).
set -u
OUT=${OUT:-/tmp/memo-issue41}
W=/tmp/issue41
mkdir -p "$OUT" "$W"
. "$(dirname "${BASH_SOURCE[0]}")/carried.sh"
export PYTHONUNBUFFERED=1
tests='^(--- |PASS|FAIL|ok|panic)|_test.go|differ'
{
	date -u
	nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
	"$T/memo" devices 2>&1 | grep -i -E 'sku|peak|name' | head -8
	(cd internal/torchx && timeout 60 "$T/torchx.test" -test.run 'RMSNorm|Rope' -test.v 2>&1 | grep -E "$tests" | grep -v '^    --- PASS' | tail -12)
	(cd precision && timeout 90 "$T/precision.test" -test.run 'NativeGQA|PrecisionKept|ReducedAttention' -test.v 2>&1 | grep -E "$tests|logits differ" | tail -12)
} 2>&1 | tee "$OUT/summary.txt"
mfu() { # stage
	OUT=$W MFU_STAGE=$1 PAIRS=${PAIRS:-2} STEPS=${STEPS:-30} MEMO_ENV_B="MEMO_FUSED_NORM=off MEMO_GQA=off" \
		bash "$(dirname "${BASH_SOURCE[0]}")/mfu.sh" 2>&1 | grep -v '^$' | tee -a "$OUT/summary.txt"
}
mfu main
{
	echo "--- scoring: random TinyLlama-shaped checkpoint, 4 x 1,024 tokens, the same rows"
	timeout 120 python3 scripts/gpu/make_tinyllama.py "$W/tl" >"$W/mk.txt" 2>&1 || tail -3 "$W/mk.txt"
	sc() { # name, memo|torch, args...
		local n=$1 who=$2; shift 2
		if [[ $who == memo ]]; then
			timeout 120 "$T/memo" bench score --model "$W/tl" --seq 1024 --batch 4 --device cuda --json "$@" >"$W/$n.json" 2>"$W/$n.err"
		else
			timeout 120 python3 scripts/bench_score.py --model "$W/tl" --rows "$W/rows.json" --device cuda "$@" >"$W/$n.json" 2>"$W/$n.err"
		fi
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%-14s tokens/s %8.0f  mean NLL %.5f  peak %.2f GB" % (sys.argv[2], d["tokens_per_s"], d["mean_nll"], d.get("device_peak_bytes", 0)/1e9))' "$W/$n.json" "$n" 2>&1 | tail -1
	}
	sc memo-bf16-1 memo --precision bf16 --rows-out "$W/rows.json"
	sc torch-bf16-1 torch --dtype bf16
	sc memo-bf16-2 memo --precision bf16
	sc torch-bf16-2 torch --dtype bf16
	sc torch-autocast torch --autocast bf16
	sc memo-fp32 memo
	sc torch-fp32 torch
	date -u
} 2>&1 | tee -a "$OUT/summary.txt"
(cd "$W" && tar czf "$OUT/all.tgz" --exclude=tl --exclude=rows.json .)
mfu extra
(cd "$W" && tar czf "$OUT/all.tgz" --exclude=tl --exclude=rows.json .)
