#!/usr/bin/env bash
# Measure the dataset build through the real binary (issue 27): peak RSS and
# MB/s of `memo data build` and of `memo run --stages data` on generated
# JSONL corpora of documents of several sizes.
#   scripts/bench-data.sh [-m MEMO] [-c build|run|both] [-d WORDS] [-t TOKENS] DIR CORPUS:DOC ...
# e.g. scripts/bench-data.sh /work/bigdata 1G:1K 1G:23K 1G:1M 10G:23K
# Each corpus is written once to DIR/cCORPUS-DOC.jsonl by `memo bench corpus`
# (paragraphs of the fetched corpora with an [n.j.i] marker every 20 words;
# `memo data fetch` or scripts/fetch-corpora.sh first) and built with the
# GPT-2 tokenizer, whole documents, 2,000 targets x 50 repetitions, 2,000
# controls, 100 validation, the rest background (50 + 50 + 10 for 1 MB
# documents: a 1 GB corpus has only 1,000), no word dedup unless -d WORDS
# sets data.dedup_words (the marker every 20 words makes every passage of
# 20 words or more unique: the dedup's set fills), no exact-substring dedup
# unless -t TOKENS sets data.dedup_tokens (a window of 50 GPT-2 tokens holds
# a marker, so none repeats; one of 16 often lies between two), caching into DIR/cache (whose
# datasets are removed after each build, so that every build builds). Prints
# one line per build: peak RSS (time -v) and the Go heap's largest live size
# after a collection (GODEBUG=gctrace=1, set here), which over the number
# of documents bounds what the build keeps per document; the build's own
# "data: build timing" line (where the time went) is in DIR/logs/. Needs about 5x the corpus free on DIR's disk
# while a build runs (spool, then docs.arrow and tokens.arrow).
set -euo pipefail

memo=memo
cmds=build
dedup=0
dtokens=0
while getopts "m:c:d:t:" o; do
	case $o in
	m) memo=$OPTARG ;;
	c) cmds=$OPTARG ;;
	d) dedup=$OPTARG ;;
	t) dtokens=$OPTARG ;;
	*) echo "usage: $0 [-m MEMO] [-c build|run|both] [-d WORDS] [-t TOKENS] DIR CORPUS:DOC ..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -lt 2 ]; then
	echo "usage: $0 [-m MEMO] [-c build|run|both] [-d WORDS] [-t TOKENS] DIR CORPUS:DOC ..." >&2
	exit 2
fi
dir=$(realpath -m "$1")
shift
[ "$cmds" = both ] && cmds="build run"
cache="${MEMO_CACHE:-$HOME/.cache/memo}"
mkdir -p "$dir/cache" "$dir/logs" "$dir/runs"
ln -sfn "$cache/corpora" "$dir/cache/corpora"

export GODEBUG=gctrace=1
printf '%-7s %-4s %-5s %9s %9s %10s %8s %9s %12s %8s %s\n' corpus doc cmd documents wall_s cpu_s "MB/s" MB/cpu_s peak_rss_MiB live_MB load
for spec in "$@"; do
	size=${spec%%:*}
	doc=${spec##*:}
	corpus="$dir/c$size-$doc.jsonl"
	if [ ! -f "$corpus" ]; then
		GODEBUG= "$memo" bench corpus --bytes "$size" --doc-bytes "$doc" --out "$corpus" --cache "$cache" >/dev/null
	fi
	targets=2000 validation=100
	if [ "$doc" = 1M ]; then targets=50 validation=10; fi
	name="bench-$size-$doc"
	[ "$dedup" = 0 ] || name="$name-dedup$dedup"
	[ "$dtokens" = 0 ] || name="$name-tokens$dtokens"
	toml="$dir/$name.toml"
	cat >"$toml" <<EOF
name = "$name"
[data]
sources = ["jsonl:$corpus"]
tokenizer = "gpt2"
targets = $targets
controls = $targets
validation = $validation
background = -1
repetitions = 50
chunk_tokens = 0
min_tokens = 100
dedup_words = $dedup
dedup_tokens = $dtokens
cache_dir = "$dir/cache"
EOF
	bytes=$(stat -L -c %s "$corpus")
	for cmd in $cmds; do
		log="$dir/logs/$name-$cmd.log"
		rm -rf "$dir/cache/datasets" "$dir/runs/$name-$cmd" "$dir/runs/$name"
		load=$(cut -d' ' -f1 /proc/loadavg)
		if [ "$cmd" = build ]; then
			/usr/bin/time -v "$memo" data build "$toml" --out "$dir/runs/$name-$cmd" >"$log" 2>&1
		else
			/usr/bin/time -v "$memo" run "$toml" --runs "$dir/runs" --stages data >"$log" 2>&1
		fi
		load="$load-$(cut -d' ' -f1 /proc/loadavg)"
		rm -rf "$dir/cache/datasets" "$dir/runs/$name-$cmd" "$dir/runs/$name"
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$log")
		cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$log")
		rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$log")
		docs=$(grep -o 'documents=[0-9]*' "$log" | head -1 | cut -d= -f2)
		# gctrace's "A->B->C MB": C is the heap live after the collection.
		live=$(awk '/^gc [0-9]+ @/ {split($0, a, "->"); split(a[3], b, " "); if (b[1] + 0 > m) m = b[1] + 0} END {print m + 0}' "$log")
		awk -v c="$size" -v d="$doc" -v m="$cmd" -v n="$docs" -v w="$wall" -v u="$cpu" -v b="$bytes" -v r="$rss" -v v="$live" -v l="$load" \
			'BEGIN {printf "%-7s %-4s %-5s %9d %9.1f %10.1f %8.1f %9.1f %12d %8d %s\n", c, d, m, n, w, u, b / 1e6 / w, b / 1e6 / u, r, v, l}'
	done
done
