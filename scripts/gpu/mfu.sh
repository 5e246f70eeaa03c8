#!/bin/bash
# Training throughput against the card's datasheet peak (issue 41), in one
# call on a lent GPU machine (carried binaries as device-session.sh prepares
# them): TinyLlama-1.1B's shape at batch 8 x 2048 and 8 x 256, memo bench
# train (bf16-mixed) alternating with scripts/bench_train.py's peers: eager
# bf16 autocast + fused AdamW, bf16 weights + float32 masters, and
# torch.compile; then a kernel profile of the eager peer. One JSON a run and
# summary.txt under $OUT. PAIRS (default 2) alternating memo/eager pairs at
# 8 x 2048, STEPS (default 30) measured steps each; MEMO_ENV_B, when set,
# adds a memo run with those variables (an A/B of one change in one call).
# MFU_STAGE=main runs the pairs and the bf16-master peer, extra the
# torch.compile peer and the profile, all (the default) both; pairs256 only
# PAIRS alternating memo/eager pairs at 8 x 256; pairs2048 only PAIRS
# alternating pairs of memo and the bf16-master peer (the stronger eager
# one there) at 8 x 2048; compile only the torch.compile peer at 8 x 2048;
# compilepairs PAIRS alternating pairs of memo and that peer: on a GPU of
# 120 GB or more (both sides' memory at once) one peer process compiles once
# and measures a block after each memo run (COMPILE_ONCE=on/off forces the
# choice); otherwise each peer run compiles again (inductor's cache on the
# machine shortens the later ones' compiling, which the measured steps
# exclude). PEER_PYTHON replaces python3 for that peer. MFU_SHAPE replaces the
# model's shape flags (a CPU dry run of the plumbing: a small --dim ...),
# MFU_DEVICE (default cuda) the device of both sides.
set -u
OUT=${OUT:-/tmp/memo-mfu}
mkdir -p "$OUT"
. "$(dirname "${BASH_SOURCE[0]}")/carried.sh"
pairs=${PAIRS:-2}
steps=${STEPS:-30}
shape=(--dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --untied --batch 8)
[[ -n ${MFU_SHAPE:-} ]] && read -r -a shape <<<"$MFU_SHAPE"
dev=${MFU_DEVICE:-cuda}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# Dense bf16 tensor-core peaks from NVIDIA's datasheets (TFLOP/s, without sparsity).
case $gpu in
*H100*PCIe*) peak=756 ;;
*H100*NVL*) peak=835 ;;
*H200*NVL*) peak=835 ;;
*H100* | *H200*) peak=989.4 ;;
*A100*) peak=312 ;;
*) peak=0 ;;
esac
summary() { # file, name: tokens/s, MFU by the datasheet peak, CUDA-event step times
	python3 - "$1" "$2" "$peak" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1])); name = sys.argv[2]; peak = float(sys.argv[3])
# 6N + 12·L·s·d, N every weight but the input embedding (a lookup), on both sides
fpt = 6 * (d["params"] - d["vocab"] * 2048) + 12 * 22 * d["seq"] * 2048
if "steps_s" in d:  # memo: host-timed steps
    st = sorted(1e3 * x for x in d["steps_s"])
    d.update(step_ms_median=st[len(st) // 2], step_ms_min=st[0], step_ms_max=st[-1])
mfu = d["tokens_per_s"] * fpt / (peak * 1e12) if peak else float("nan")
extra = " ".join("%s=%.1f" % (k, (1e3 * d[k] if k.endswith("_s") and k != "compile_s" else d[k]))
                 for k in ("step_ms_median", "step_ms_min", "step_ms_max", "model_s", "optimizer_s", "compile_s") if k in d)
mem = d.get("peak_memory_bytes") or d.get("gpu_peak_bytes") or 0
print("%-16s seq %4d tokens/s %8.0f  MFU %5.1f%%  %s  mem %.1f GB  loss %.4f->%.4f" % (
    name, d["seq"], d["tokens_per_s"], 100 * mfu, extra, mem / 1e9, d["first_loss"], d["last_loss"]))
PY
}
memo() { # name, env, args...
	local n=$1 e=$2; shift 2
	env $e timeout 200 "$T/memo" bench train --precision bf16-mixed --device "$dev" --json "${shape[@]}" "$@" >"$OUT/$n.json" 2>"$OUT/$n.err" &&
		summary "$OUT/$n.json" "$n" || { echo "$n FAILED"; tail -3 "$OUT/$n.err"; }
}
peer() { # name, args...
	local n=$1; shift
	timeout 200 python3 scripts/bench_train.py --device "$dev" --fused --peak-tflops "$peak" "${shape[@]}" "$@" >"$OUT/$n.json" 2>"$OUT/$n.err" &&
		summary "$OUT/$n.json" "$n" || { echo "$n FAILED"; tail -3 "$OUT/$n.err"; }
}
# compilepairs_once: one torch.compile peer process measuring a block after
# each memo run, compiled once before the first (its JSON lines in
# compile-blocks.jsonl, each block also as compile-2048-I.json).
compilepairs_once() {
	local fifo=$OUT/compile-go lines=$OUT/compile-blocks.jsonl pid i
	rm -f "$fifo" "$lines"
	mkfifo "$fifo"
	timeout $((200 + 60 * pairs)) ${PEER_PYTHON:-python3} scripts/bench_train.py --device "$dev" --fused --peak-tflops "$peak" "${shape[@]}" \
		--seq 2048 --steps "$steps" --autocast bf16 --compile --warmup 3 --blocks "$pairs" --go "$fifo" >"$lines" 2>"$OUT/compile-blocks.err" &
	pid=$!
	exec 9<>"$fifo" # read-write: opening does not wait for the peer, and it never sees an end while held
	waitlines() { while (($(wc -l <"$lines") < $1)) && kill -0 "$pid" 2>/dev/null; do sleep 0.2; done; (($(wc -l <"$lines") >= $1)); }
	if ! waitlines 1; then
		echo "compile peer FAILED before it was ready"; tail -3 "$OUT/compile-blocks.err"
	else
		echo "compile peer ready: $(head -1 "$lines")"
		for i in $(seq "$pairs"); do
			memo "memo-2048-$i" "" --seq 2048 --steps "$steps"
			echo go >&9
			if waitlines $((i + 1)); then
				sed -n "$((i + 1))p" "$lines" >"$OUT/compile-2048-$i.json"
				summary "$OUT/compile-2048-$i.json" "compile-2048-$i"
			else
				echo "compile-2048-$i FAILED"; tail -3 "$OUT/compile-blocks.err"; break
			fi
		done
	fi
	exec 9>&-
	wait "$pid"
	rm -f "$fifo"
}
{
	date -u
	echo "gpu: $gpu, dense bf16 peak $peak TFLOP/s"
	if [[ ${MFU_STAGE:-all} == pairs256 ]]; then
		for i in $(seq "$pairs"); do
			memo "memo-256-$i" "" --seq 256 --steps "$steps"
			peer "eager-256-$i" --seq 256 --steps "$steps" --autocast bf16
		done
		[[ -n ${MEMO_ENV_B:-} ]] && memo "memoB-256" "$MEMO_ENV_B" --seq 256 --steps "$steps"
	fi
	if [[ ${MFU_STAGE:-all} == pairs2048 ]]; then
		for i in $(seq "$pairs"); do
			memo "memo-2048-$i" "" --seq 2048 --steps "$steps"
			peer "master-2048-$i" --seq 2048 --steps "$steps" --master
		done
		[[ -n ${MEMO_ENV_B:-} ]] && memo "memoB-2048" "$MEMO_ENV_B" --seq 2048 --steps "$steps"
	fi
	if [[ ${MFU_STAGE:-all} == compile ]]; then
		peer "compile-2048" --seq 2048 --steps "$steps" --autocast bf16 --compile --warmup 3
	fi
	if [[ ${MFU_STAGE:-all} == compilepairs ]]; then
		# The compiled peer stays up between its blocks (bench_train.py
		# --blocks --go) where the GPU holds both sides at once: compiled
		# once, idle while memo runs. Elsewhere each peer run compiles.
		mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1)
		if [[ ${COMPILE_ONCE:-auto} == on || (${COMPILE_ONCE:-auto} == auto && ${mib:-0} -ge 120000) ]]; then
			compilepairs_once
		else
			for i in $(seq "$pairs"); do
				memo "memo-2048-$i" "" --seq 2048 --steps "$steps"
				peer "compile-2048-$i" --seq 2048 --steps "$steps" --autocast bf16 --compile --warmup 3
			done
		fi
	fi
	if [[ ${MFU_STAGE:-all} == all || ${MFU_STAGE:-all} == main ]]; then
		nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
		for i in $(seq "$pairs"); do
			memo "memo-2048-$i" "" --seq 2048 --steps "$steps"
			peer "eager-2048-$i" --seq 2048 --steps "$steps" --autocast bf16
		done
		[[ -n ${MEMO_ENV_B:-} ]] && memo "memoB-2048" "$MEMO_ENV_B" --seq 2048 --steps "$steps"
		peer "master-2048" --seq 2048 --steps "$steps" --master
		memo "memo-256" "" --seq 256 --steps "$steps"
		peer "eager-256" --seq 256 --steps "$steps" --autocast bf16
		peer "master-256" --seq 256 --steps "$steps" --master
		[[ -n ${MEMO_ENV_B:-} ]] && memo "memoB-256" "$MEMO_ENV_B" --seq 256 --steps "$steps"
	fi
	if [[ ${MFU_STAGE:-all} == all || ${MFU_STAGE:-all} == extra ]]; then
		peer "compile-2048" --seq 2048 --steps "$steps" --autocast bf16 --compile --warmup 3
		peer "profile-2048" --seq 2048 --steps 2 --autocast bf16 --profile 30
		sed -n '/Name/,$p' "$OUT/profile-2048.err" | cut -c1-60,100-200 | head -40
	fi
	date -u
} 2>&1 | tee -a "$OUT/summary.txt"
