#!/bin/bash
# One session on a lent GPU machine with no Go (as this project's device tool
# lends one): unpack carried binaries, run the Go tests that need libtorch 2.x
# kernels, then scripts/gpu-check.sh --quick --large. Results go under $OUT
# (tests.txt, gpu-check.txt, work.tgz with every check's JSON, attack-report.tgz).
#
# Prepare the carried folder (default gpucarry/, git-ignored) on the build machine with
# `TESTS="train model precision engine internal/torchx" bash scripts/gpu/make-carry.sh`, which runs:
#   bash ../shared/gpu/build-for-gpu.sh . && strip bin/memo-gpu && xz -c bin/memo-gpu >gpucarry/memo.xz
#   for p in train model precision engine internal/torchx; do n=$(basename $p); CGO_CPPFLAGS=-I$WORK/cudainc CGO_LDFLAGS=-Wl,--no-as-needed \
#     go test -c -tags cuda -o bin/$n.test ./$p && strip bin/$n.test && xz -c bin/$n.test >gpucarry/$n.test.xz; done
#   ($WORK: build-for-gpu.sh's work directory), and copy memo's cache entries corpora/kjv and
#   corpora/llama2-tokenizer (with its .complete) to gpucarry/cache/corpora/.
# Then run `bash scripts/gpu/device-session.sh` there (GPU_CHECK_S bounds gpu-check's seconds).
set -u
OUT=${OUT:-/tmp/memo-device-out}
mkdir -p "$OUT"
. "$(dirname "${BASH_SOURCE[0]}")/carried.sh"
export MEMO_CACHE=$PWD/$C/cache
{
	date -u
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
	python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
	"$T/memo" devices | head -c 600
	echo
	(cd train && timeout 150 "$T/train.test" -test.run 'Fused|AdamW|Clip|GradAccum' -test.v 2>&1 | grep -E '^(--- |PASS|FAIL|ok)|_test.go' | tail -20)
	(cd model && timeout 150 "$T/model.test" -test.run 'Precision|MaskedAttention' -test.v 2>&1 | grep -E '^(--- |PASS|FAIL|ok)|_test.go' | tail -20)
	# The reduced precisions' backend and GPU policy live in package precision.
	(cd precision && timeout 150 "$T/precision.test" -test.run 'ReducedAttention|Precision|NativeGQA|Policy|ElementwiseKernels' -test.v 2>&1 | grep -E '^(--- |PASS|FAIL|ok)|_test.go' | tail -20)
	# The fused RMSNorm and rotary, and memo's own elementwise kernels
	# (compiled by NVRTC, checked against libtorch's compositions).
	(cd internal/torchx && timeout 150 "$T/torchx.test" -test.run 'RMSNorm|Rope|Elementwise|SwiGLU|CastCopies|CrossEntropy' -test.v 2>&1 | grep -E '^(--- |PASS|FAIL|ok)|_test.go' | grep -v '^    --- PASS' | tail -20)
	# The cached and scoring passes live in package engine.
	(cd engine && timeout 150 "$T/engine.test" -test.run 'Cached|ScoreWindows' -test.v 2>&1 | grep -E '^(--- |PASS|FAIL|ok)|_test.go' | tail -20)
	date -u
} >"$OUT/tests.txt" 2>&1
cat "$OUT/tests.txt"
timeout "${GPU_CHECK_S:-400}" scripts/gpu-check.sh --memo "$T/memo" --quick --large --keep 2>&1 | tee "$OUT/gpu-check.txt"
w=$(ls -dt /tmp/memo-gpu-check.* 2>/dev/null | head -1)
# extract.batch_size = 0 sizes the batch from the GPU's memory: attack the
# fine-tuned 1.1B model again with it, beside the spec's 250 rows
# (AUTO_BATCH_S=0 skips it).
auto_batch_s=${AUTO_BATCH_S:-120}
if [[ $auto_batch_s != 0 && -n $w && -d $w/runs-1b/attack-1b ]]; then
	t0=$(date +%s)
	timeout "$auto_batch_s" "$T/memo" extract "$w/runs-1b/attack-1b" --batch-size 0 \
		--out "$w/auto-batch.arrow" >"$OUT/auto-batch.txt" 2>&1
	echo "rc=$? wall=$(($(date +%s) - t0)) s" >>"$OUT/auto-batch.txt"
	grep -E 'automatic batch size|rc=' "$OUT/auto-batch.txt"
fi
if [[ -n $w ]]; then
	(cd "$w" && tar czf "$OUT/work.tgz" --exclude=tinyllama --exclude='runs-*' . &&
		tar czf "$OUT/attack-report.tgz" runs-1b/attack-1b/report runs-1b/attack-1b/*.json 2>/dev/null)
fi
date -u >>"$OUT/gpu-check.txt"
