#!/usr/bin/env bash
# Install Hugging Face's tokenizers library (Rust 0.22.2) through its Node
# binding, the npm packages @anush008/tokenizers@0.6.0 and its prebuilt
# binary for this platform, into the memo cache ($MEMO_CACHE or
# ~/.cache/memo) as node_modules/@anush008/. The tests that compare memo's
# ids with the library's (internal/hflib) run it from there and skip when
# it is missing; nothing in `make test` downloads it. `npm pack` plus a
# pinned sha256 per tarball, no install scripts; about 2 MB once, silent
# afterwards (-v says so). scripts/setup.sh runs it.
#   scripts/fetch-hf-tokenizers.sh [-v]
set -euo pipefail

verbose=0
[ "${1:-}" = "-v" ] && verbose=1

cache="${MEMO_CACHE:-$HOME/.cache/memo}"
dest="$cache/node_modules/@anush008"

case "$(uname -s)-$(uname -m)" in
Linux-x86_64) binary=tokenizers-linux-x64-gnu ;;
*)
	echo "fetch-hf-tokenizers: no pinned binary of @anush008/tokenizers for $(uname -s)-$(uname -m); the checks against Hugging Face's library will skip" >&2
	exit 0
	;;
esac

# package  tarball  sha256
pins="tokenizers anush008-tokenizers-0.6.0.tgz 99adb724530009f5b9926ab2a8e4fbd8db0fa89ecc4504e1dd086b3e4c66afed
$binary anush008-$binary-0.6.0.tgz f8db409cd5b52a2fac2fd963eacf5c33b3d5841c2520ca168c447b2f5cb4a281"

want=$(printf '%s\n' "$pins" | awk '{print $3}' | tr '\n' ' ')
if [ -f "$dest/.complete" ] && [ "$(cat "$dest/.complete")" = "$want" ]; then
	[ $verbose = 1 ] && echo "fetch-hf-tokenizers: already installed in $dest"
	exit 0
fi
command -v npm >/dev/null || {
	echo "fetch-hf-tokenizers: needs npm: apt-get install npm" >&2
	exit 1
}

mkdir -p "$dest"
tmp=$(mktemp -d "$dest/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rm -f "$dest/.complete"
while read -r name file sum; do
	if ! out=$(cd "$tmp" && npm pack --silent "@anush008/$name@0.6.0" 2>&1); then
		echo "fetch-hf-tokenizers: npm pack @anush008/$name@0.6.0 failed: $out" >&2
		exit 1
	fi
	got=$(sha256sum "$tmp/$file" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "fetch-hf-tokenizers: $file has sha256 $got, pinned $sum" >&2
		exit 1
	fi
	mkdir "$tmp/$name"
	tar -xzf "$tmp/$file" -C "$tmp/$name"
	rm -rf "${dest:?}/$name"
	mv "$tmp/$name/package" "$dest/$name"
done <<<"$pins"
echo "$want" >"$dest/.complete"
echo "fetch-hf-tokenizers: installed @anush008/tokenizers@0.6.0 ($binary) in $dest"
