#!/usr/bin/env bash
# Peak memory of inference in each precision, through the binary a user
# runs: writes a random Hugging Face Llama of TinyLlama-1.1B's shape (or
# with -s llama2-7b Llama-2-7B's) in BF16 (scripts/mkhf; 2.2 GB, or 13.5 GB,
# once) to DIR, then, for fp32 and bf16, scores 4
# rows of 128 token ids (`memo score --precision P`) and continues them by 8
# greedy tokens (`memo generate`, the attack's decoding) under
# /usr/bin/time -v, printing one line each (peak RSS, wall time), and checks
# that each output is the same as the last time the script wrote it in DIR
# (run it twice, or with -m naming another memo, to compare). fp32 holds the
# weights in float32 (4.4 GB; 27 GB for 7B, which memo refuses on a machine
# with less memory: the script prints the refusal); bf16 reads each linear
# weight straight into bfloat16.
#   scripts/bench-inference-memory.sh [-m MEMO] [-d DEVICE] [-s tinyllama|llama2-7b] DIR
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
memo=bin/memo device=cpu shape=tinyllama
usage="usage: $0 [-m MEMO] [-d DEVICE] [-s tinyllama|llama2-7b] DIR"
while getopts m:d:s: o; do
	case $o in
	m) memo=$OPTARG ;;
	d) device=$OPTARG ;;
	s) shape=$OPTARG ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }
dir=$1
[ -x /usr/bin/time ] || { echo "$0: needs GNU time (apt-get install time)" >&2; exit 2; }
model=$dir/model
[ "$shape" = tinyllama ] || model=$dir/model-$shape
[ -f "$model/model.safetensors" ] || go run ./scripts/mkhf -shape "$shape" "$model"
# 4 rows of 128 ids, fixed: row r, position j holds (r*7919 + j*104729) mod 32000.
awk 'BEGIN { printf "["; for (r = 0; r < 4; r++) { printf "%s[", r ? "," : ""; for (j = 0; j < 128; j++) printf "%s%d", j ? "," : "", (r*7919 + j*104729) % 32000; printf "]" } print "]" }' > "$dir/ids.json"
for p in fp32 bf16; do
	for cmd in score generate; do
		extra=()
		[ $cmd = generate ] && extra=(--max-new 8)
		out=$dir/$cmd-$shape-$p.json
		if ! /usr/bin/time -v "$memo" --log-level warn $cmd --model "$model" --ids-json "$dir/ids.json" --device "$device" --precision $p "${extra[@]}" > "$out.new" 2> "$dir/time-$cmd-$p.txt"; then
			echo "memo $cmd --precision $p on $device ($shape): refused or failed: $(grep -m1 '^memo:' "$dir/time-$cmd-$p.txt" || grep -v '^\s' "$dir/time-$cmd-$p.txt" | tail -1)"
			rm -f "$out.new"
			continue
		fi
		rss=$(awk -F': ' '/Maximum resident/ { printf "%.2f GB", $2 / 1048576 }' "$dir/time-$cmd-$p.txt")
		wall=$(awk -F': ' '/Elapsed \(wall/ { print $2 }' "$dir/time-$cmd-$p.txt")
		same="first run in $dir"
		if [ -f "$out" ]; then
			cmp -s "$out" "$out.new" && same="output as last time" || same="OUTPUT DIFFERS from last time"
		fi
		mv "$out.new" "$out"
		echo "memo $cmd --precision $p on $device ($shape): peak RSS $rss, wall $wall; $same"
	done
done
