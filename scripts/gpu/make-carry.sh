#!/bin/bash
# make-carry.sh fills gpucarry/ (git-ignored) with what scripts/gpu/*.sh run on
# a lent GPU machine that has no Go, in one command on this build machine:
#   memo.xz         memo built against the GPU machine's PyTorch 2.11.0+cu130
#                   with -tags cuda (../shared/gpu/build-for-gpu.sh), stripped
#   NAME.test.xz    the test binaries of TESTS (default: internal/torchx,
#                   precision and engine, which issue41-next.sh's part b runs,
#                   and dist, part g's; device-session.sh also runs train and
#                   model), built the same way
#   cache/corpora/  memo's cache entries kjv and llama2-tokenizer (part d's
#                   attack and gpu-check's), from MEMO_CACHE or ~/.cache/memo
# It builds a fresh clone of HEAD, so what is not committed is not carried, and
# stops when the folder would pass the device tool's 64 MiB a call.
#
# usage: bash scripts/gpu/make-carry.sh [SHARED_GPU_DIR]   (default ../shared/gpu)
# env: WORK   build-for-gpu.sh's headers and stubs (default /tmp/memo-gpu-libtorch;
#             reused, so a second run takes about the Go build alone)
#      CLONE  the clone built (default /tmp/memo-gpu-clone; replaced)
#      TESTS  the packages whose test binaries are carried
#      GLOO_INCLUDE  Gloo's headers (default /usr/include/gloo, Debian's
#             libgloo-dev, which scripts/setup.sh installs; "" for none):
#             pip's torch ships none, and without them the build has no
#             Gloo and cannot put two ranks on one GPU. Only ProcessGroupGloo's
#             declarations are read; its members hold Gloo objects by
#             pointer, so the layout memo compiles against is that of the
#             Gloo inside the machine's libtorch (docs/GPU.md)
# Then, on the lent machine: run(command="bash scripts/gpu/issue41-next.sh",
# carry=["gpucarry"]).
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
shared=${1:-$repo/../shared/gpu}
work=${WORK:-/tmp/memo-gpu-libtorch}
clone=${CLONE:-/tmp/memo-gpu-clone}
tests=${TESTS:-internal/torchx precision engine dist}
gloo=${GLOO_INCLUDE-/usr/include/gloo}
cache=${MEMO_CACHE:-$HOME/.cache/memo}
out=$repo/gpucarry
limit=$((64 << 20))
say() { echo "make-carry: $*"; }
[[ -f $shared/build-for-gpu.sh ]] || { echo "make-carry: no $shared/build-for-gpu.sh (give the shared gpu/ folder)" >&2; exit 2; }

say "cloning $(git -C "$repo" rev-parse --short HEAD) into $clone"
rm -rf "$clone"
git clone -q "$repo" "$clone"
# build-for-gpu.sh unpacks torch's headers beside the link, and scripts/
# gotchgen compiles Gloo in when include/gloo/config.h is there.
mkdir -p "$work/libtorch/include"
if [[ -n $gloo && -f $gloo/config.h ]]; then
	ln -sfn "$gloo" "$work/libtorch/include/gloo"
else
	rm -f "$work/libtorch/include/gloo"
	say "no Gloo headers${gloo:+ in $gloo}: the build has no Gloo (two ranks cannot share a GPU; part g fails)"
fi
bash "$shared/build-for-gpu.sh" "$clone" "$work"

# Written beside, then moved in, so a failed run leaves no half-made file.
mkdir -p "$out"
tmp=$(mktemp -d "$out/.make-carry.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
strip -o "$tmp/memo" "$clone/bin/memo-gpu"
xz -T0 -c "$tmp/memo" >"$tmp/memo.xz"
rm "$tmp/memo"
for p in $tests; do
	n=$(basename "$p")
	say "test binary of $p"
	(cd "$clone" && CGO_CPPFLAGS="-I$work/cudainc" CGO_LDFLAGS=-Wl,--no-as-needed \
		go test -c -tags cuda -o "$tmp/$n.test" "./$p")
	strip "$tmp/$n.test"
	xz -T0 -c "$tmp/$n.test" >"$tmp/$n.test.xz"
	rm "$tmp/$n.test"
done
for e in kjv llama2-tokenizer; do
	if [[ -d $cache/corpora/$e ]]; then
		mkdir -p "$tmp/cache/corpora"
		cp -r "$cache/corpora/$e" "$tmp/cache/corpora/"
	else
		say "no $cache/corpora/$e: part d and gpu-check's attack will lack it (scripts/fetch-corpora.sh kjv llama2-tokenizer fills the cache)"
	fi
done
size=$(du -sb "$tmp" | cut -f1)
if ((size > limit)); then
	echo "make-carry: $((size >> 20)) MiB, past the device tool's 64 MiB a call; carry fewer TESTS" >&2
	exit 1
fi
rm -rf "$out/memo.xz" "$out"/*.test.xz "$out/cache"
mv "$tmp"/* "$out/"
say "gpucarry/ holds $((size >> 20)) MiB:"
(cd "$out" && ls -l --block-size=K memo.xz ./*.test.xz 2>/dev/null | awk '{print "  " $5, $NF}')
