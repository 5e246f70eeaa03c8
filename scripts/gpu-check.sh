#!/usr/bin/env bash
# gpu-check.sh: acceptance checks of memo on a CUDA machine. Prints one line
# per check (PASS, FAIL or SKIP, the check, what it saw) and exits 1 if any
# check failed, 2 on bad usage.
#
#   scripts/gpu-check.sh [--device cuda|cuda:N|cpu] [--memo PATH] [--quick] [--large] [--keep]
#
# Checks, on --device (default cuda):
#   devices        memo devices sees the GPU named by --device
#   forward-back   memo bench train, same seed, on the CPU and on the device: the
#                  first step's loss (forward) within 1e-4, the loss after 3 AdamW
#                  steps (backward + update) within 1e-3, the last gradient norm
#                  within 1e-3 relative
#   hf-goldens     memo score and memo generate on the device over testdata/hf's
#                  transformers-written checkpoints: NLL within each case's
#                  tolerance (expected.json), greedy continuations identical
#   hf-golden-script  scripts/hf-goldens.py check: transformers recomputes
#                  testdata/hf-transformers/*/expected.json from the stored
#                  weights (SKIP when python3 lacks torch and transformers)
#   default-exp    exp/goldfish-vs-standard.toml (--quick: exp/smoke.toml) on the
#                  CPU and on the device: report/*.md identical (the tables as the
#                  README prints them; table.csv keeps every float's digits, which
#                  a GPU's rounding moves in the last places)
#   bench          memo bench train and bench decode on the device, beside
#                  scripts/bench_train.py (plain PyTorch; fp32, and bf16 autocast
#                  with fused AdamW on a GPU) when python3 imports torch. Figures
#                  only: it fails when a command fails, not on a ratio.
# With --large, also the issue's 1.1B checks (a GPU with 40 GB or more, python3
# with torch and transformers, the kjv corpus and the Llama 2 tokenizer in
# memo's cache: `memo data fetch kjv llama2-tokenizer`):
#   large-train    memo bench train on TinyLlama-1.1B's shape (batch 8 x 256,
#                  bf16-mixed) beside scripts/bench_train.py (bf16 autocast, fused
#                  AdamW), two alternating rounds: PASS when memo's better run is
#                  at 0.9x or more of PyTorch's better run
#   large-score    a random TinyLlama-shaped transformers checkpoint
#                  (scripts/gpu/make_tinyllama.py), memo bench score --precision
#                  bf16 (4 x 1,024 tokens) beside scripts/bench_score.py with bf16
#                  weights on the same rows (--rows-out/--rows): PASS at 0.9x or
#                  more, with the bf16 weights under 0.6x of fp32's bytes (peak GPU
#                  memory printed beside PyTorch's) and the mean NLLs of the same
#                  weights and rows within 0.02 (bf16) and 2e-4 (fp32) of PyTorch's
#   large-attack   memo run scripts/gpu/attack-1b.toml on that checkpoint: a bf16
#                  fine-tune on 2,000 targets, then the attack on 2,000 + 2,000
#                  documents; its wall time (PASS when it finishes)
# --device cpu runs everything on the CPU (both sides of each comparison): a dry
# run of the script itself on a machine without a GPU. Run it from a checkout
# (it reads testdata/hf, exp/ and scripts/); it needs python3 for JSON.
# --memo names the binary (default: bin/memo-gpu, bin/memo, then memo on PATH);
# --keep keeps the work directory (runs, logs) and prints its path.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

dev=cuda
memo=""
quick=0
large=0
keep=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--device) dev=${2:-}; shift 2 ;;
	--memo) memo=${2:-}; shift 2 ;;
	--quick) quick=1; shift ;;
	--large) large=1; shift ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
if [[ -z $memo ]]; then
	for m in bin/memo-gpu bin/memo "$(command -v memo || true)"; do
		[[ -n $m && -x $m ]] && { memo=$m; break; }
	done
fi
[[ -n $memo && -x $memo ]] || { echo "gpu-check: no memo binary (build one, or pass --memo PATH)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "gpu-check: python3 is needed to read memo's JSON" >&2; exit 2; }
case $dev in cpu | cuda | cuda:[0-9]*) ;; *) echo "gpu-check: --device $dev: want cpu, cuda or cuda:N" >&2; exit 2 ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/memo-gpu-check.XXXXXX")
if ((keep)); then
	echo "gpu-check: work directory $work"
else
	trap 'rm -rf "$work"' EXIT
fi
failed=0
line() { # STATUS CHECK DETAIL
	printf '%-4s %-13s %s\n' "$1" "$2" "$3"
	[[ $1 == FAIL ]] && failed=1
	return 0
}
# run NAME CMD...: runs memo's command, output in $work/NAME.out/.err.
run() {
	local name=$1
	shift
	"$@" >"$work/$name.out" 2>"$work/$name.err"
}
lasterr() { tail -n 1 "$work/$1.err" | cut -c1-200; }

# 1. devices
if run devices "$memo" devices; then
	python3 - "$work/devices.out" "$dev" >"$work/devices.line" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); dev = sys.argv[2]
k = m.get("kernels", {})
what = f"{m['gpus']} GPU(s); CPU {m.get('cpu_model', '?')}, ATen {k.get('cpu_capability', '?')}, BLAS {k.get('blas', '?')} {k.get('blas_core', '')}".strip()
idx = 0 if dev == "cuda" else int(dev.split(":")[1]) if dev.startswith("cuda:") else -1
ok = idx < m["gpus"]
print(("PASS" if ok else "FAIL") + "\tdevices\t" + what + ("" if ok else f"; --device {dev} is not among them"))
PY
else
	printf 'FAIL\tdevices\tmemo devices: %s\n' "$(lasterr devices)" >"$work/devices.line"
fi
IFS=$'\t' read -r s c d <"$work/devices.line"
line "$s" "$c" "$d"

# 2. forward and backward, CPU against the device
bench=(bench train --preset tiny --vocab 512 --seq 64 --batch 4 --steps 3 --threads 1 --seed 7 --json)
if run fb-cpu "$memo" "${bench[@]}" --device cpu && run fb-dev "$memo" "${bench[@]}" --device "$dev"; then
	python3 - "$work/fb-cpu.out" "$work/fb-dev.out" >"$work/fb.line" <<'PY'
import json, sys
c, d = (json.load(open(p)) for p in sys.argv[1:3])
e1, e2 = abs(c["first_loss"] - d["first_loss"]), abs(c["last_loss"] - d["last_loss"])
eg = abs(c["last_grad_norm"] - d["last_grad_norm"]) / max(abs(c["last_grad_norm"]), 1e-12)
ok = e1 <= 1e-4 and e2 <= 1e-3 and eg <= 1e-3
print(("PASS" if ok else "FAIL") + "\tforward-back\t" +
      f"loss {c['first_loss']:.6f} -> {c['last_loss']:.6f} on the CPU, |diff| {e1:.1e} (<= 1e-4) and {e2:.1e} (<= 1e-3); grad norm rel. diff {eg:.1e} (<= 1e-3)")
PY
else
	printf 'FAIL\tforward-back\tmemo bench train: %s %s\n' "$(lasterr fb-cpu)" "$(lasterr fb-dev 2>/dev/null)" >"$work/fb.line"
fi
IFS=$'\t' read -r s c d <"$work/fb.line"
line "$s" "$c" "$d"

# 3. Hugging Face goldens on the device
gold_fail=""
gold_ok=()
for case in testdata/hf/*/; do
	name=$(basename "$case")
	[[ -f $case/expected.json ]] || continue
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); json.dump({"ids": d["ids"]}, open(sys.argv[2], "w")); json.dump({"ids": d["greedy_prompts"]}, open(sys.argv[3], "w")); print(len(d["greedy_continuations"][0]))' \
		"$case/expected.json" "$work/$name.ids.json" "$work/$name.prompts.json" >"$work/$name.n" || { gold_fail+=" $name: bad expected.json"; continue; }
	if ! run "$name.score" "$memo" score --model "$case" --ids-json "$work/$name.ids.json" --device "$dev"; then
		gold_fail+=" $name: score: $(lasterr "$name.score")"
		continue
	fi
	if ! run "$name.gen" "$memo" generate --model "$case" --ids-json "$work/$name.prompts.json" --max-new "$(cat "$work/$name.n")" --device "$dev"; then
		gold_fail+=" $name: generate: $(lasterr "$name.gen")"
		continue
	fi
	verdict=$(python3 - "$case/expected.json" "$work/$name.score.out" "$work/$name.gen.out" <<'PY'
import json, sys
exp = json.load(open(sys.argv[1])); got = json.load(open(sys.argv[2])); gen = json.load(open(sys.argv[3]))
tol = exp["tolerance"]["nll_abs"]
err = max(abs(a - b) for ra, rb in zip(exp["nll"], got["nll"]) for a, b in zip(ra, rb))
same = gen["ids"] == exp["greedy_continuations"]
print(f"{'ok' if err <= tol and same else 'bad'} NLL max |diff| {err:.1e} (<= {tol:g}), greedy {'identical' if same else 'DIFFERENT'}")
PY
)
	[[ $verdict == ok* ]] && gold_ok+=("$name ${verdict#ok }") || gold_fail+=" $name: ${verdict#bad }"
done
if [[ -n $gold_fail ]]; then
	line FAIL hf-goldens "${gold_fail# }"
elif ((${#gold_ok[@]} == 0)); then
	line FAIL hf-goldens "no testdata/hf/*/expected.json found (run from a memo checkout)"
else
	line PASS hf-goldens "$(IFS=';'; echo "${gold_ok[*]}")"
fi

# 3b. the transformers-written goldens recomputed by transformers itself
if python3 -c 'import torch, transformers' 2>/dev/null; then
	if run goldpy python3 scripts/hf-goldens.py check; then
		line PASS hf-golden-script "scripts/hf-goldens.py check: $(grep -c PASS "$work/goldpy.out") of testdata/hf-transformers agree"
	else
		line FAIL hf-golden-script "$(grep -v '^PASS' "$work/goldpy.out" | head -3 | tr '\n' ';') $(lasterr goldpy)"
	fi
else
	line SKIP hf-golden-script "python3 here has no torch and transformers"
fi

# 4. the default experiment: the device's table is the CPU's
spec=exp/goldfish-vs-standard.toml
((quick)) && spec=exp/smoke.toml
t0=$(date +%s)
if run exp-cpu "$memo" run --runs "$work/runs-cpu" --set device=cpu "$spec" &&
	t1=$(date +%s) && run exp-dev "$memo" run --runs "$work/runs-dev" --set "device=$dev" "$spec"; then
	t2=$(date +%s)
	name=$(basename "$spec" .toml)
	tables=("$work/runs-cpu/$name/report/"*.md)
	if [[ ! -f ${tables[0]} ]]; then
		line FAIL default-exp "$spec: no report/*.md under $work/runs-cpu/$name"
	elif diff -r -x '*.png' -x '*.pdf' -x '*.svg' -x '*.csv' -x '*.tex' "$work/runs-cpu/$name/report" "$work/runs-dev/$name/report" >"$work/exp.diff" 2>&1; then
		line PASS default-exp "$spec: report tables identical ($((t1 - t0)) s on the CPU, $((t2 - t1)) s on $dev)"
	else
		line FAIL default-exp "$spec: tables differ between the CPU and $dev: $(grep -m1 '^[<>]' "$work/exp.diff" | cut -c1-160)"
	fi
else
	line FAIL default-exp "memo run $spec: $(lasterr exp-cpu) $(lasterr exp-dev 2>/dev/null)"
fi

# 5. bench figures, beside PyTorch when it is here
# jf FILE KEY FORMAT: one number of a JSON object, formatted.
jf() { python3 -c 'import json, sys; print(format(json.load(open(sys.argv[1]))[sys.argv[2]], sys.argv[3]))' "$@"; }
tb=(--preset small --vocab 4096 --seq 256 --batch 16 --steps 10)
((quick)) && tb=(--preset tiny --vocab 512 --seq 64 --batch 4 --steps 3)
if run bt "$memo" bench train "${tb[@]}" --device "$dev" --json && run bd "$memo" bench decode --preset small --device "$dev" --json &&
	fig="memo train $(jf "$work/bt.out" tokens_per_s .0f) tokens/s (MFU $(jf "$work/bt.out" mfu .2f)), decode $(jf "$work/bd.out" tokens_per_s .0f) tokens/s"; then
	if python3 -c 'import torch' 2>/dev/null; then
		pt=("${tb[@]}" --device "$dev")
		if run pt python3 scripts/bench_train.py "${pt[@]}"; then
			fig+="; PyTorch fp32 $(jf "$work/pt.out" tokens_per_s .0f) tokens/s"
			if [[ $dev == cuda* ]] && run ptbf python3 scripts/bench_train.py "${pt[@]}" --autocast bf16 --fused; then
				fig+=", bf16 autocast + fused AdamW $(jf "$work/ptbf.out" tokens_per_s .0f) tokens/s"
			fi
		else
			fig+="; scripts/bench_train.py failed: $(lasterr pt)"
		fi
	else
		fig+="; no PyTorch in python3 to compare with"
	fi
	line PASS bench "$fig"
else
	line FAIL bench "memo bench: $(lasterr bt) $(lasterr bd 2>/dev/null)"
fi

# 6. the 1.1B checks
# ratio A B: A/B to two decimals, and whether it is at least 0.9.
ratio() { python3 -c 'import sys; r = float(sys.argv[1]) / float(sys.argv[2]); print(f"{r:.2f}", "ok" if r >= 0.9 else "low")' "$1" "$2"; }
# spread F: the fastest and slowest measured step of a memo bench train --json F.
spread() { python3 -c 'import json, sys; s = json.load(open(sys.argv[1])).get("steps_s") or [0]; print(f"steps {min(s):.3f} to {max(s):.3f} s")' "$1"; }
if ((large)); then
	cache=${MEMO_CACHE:-$HOME/.cache/memo}
	tok=$cache/corpora/llama2-tokenizer/package/models
	shape=(--dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --untied --seq 256 --batch 8 --steps 10)
	# Two rounds, memo and PyTorch alternating, each side's better run compared:
	# one run on a lent GPU moves by about 10 %, the size of the margin checked.
	if run lt "$memo" bench train "${shape[@]}" --precision bf16-mixed --device "$dev" --json &&
		run ltpt python3 scripts/bench_train.py "${shape[@]}" --device "$dev" --autocast bf16 --fused &&
		run lt2 "$memo" bench train "${shape[@]}" --precision bf16-mixed --device "$dev" --json &&
		run ltpt2 python3 scripts/bench_train.py "${shape[@]}" --device "$dev" --autocast bf16 --fused; then
		m1=$(jf "$work/lt.out" tokens_per_s .0f) m2=$(jf "$work/lt2.out" tokens_per_s .0f)
		p1=$(jf "$work/ltpt.out" tokens_per_s .0f) p2=$(jf "$work/ltpt2.out" tokens_per_s .0f)
		best=lt
		((m2 > m1)) && best=lt2
		m=$((m1 > m2 ? m1 : m2)) p=$((p1 > p2 ? p1 : p2))
		read -r r v < <(ratio "$m" "$p")
		line "$([[ $v == ok ]] && echo PASS || echo FAIL)" large-train \
			"1.1B bf16: memo $m tokens/s (runs $m1, $m2; step $(jf "$work/$best.out" step_s .3f) s, $(spread "$work/$best.out"): model $(jf "$work/$best.out" model_s .3f), optimizer $(jf "$work/$best.out" optimizer_s .3f), collect $(jf "$work/$best.out" collect_s .3f)), PyTorch bf16 autocast + fused AdamW $p (runs $p1, $p2): ${r}x (>= 0.9)"
	else
		line FAIL large-train "$(lasterr lt) $(lasterr ltpt 2>/dev/null) $(lasterr lt2 2>/dev/null) $(lasterr ltpt2 2>/dev/null)"
	fi
	model=$work/tinyllama
	if run mk python3 scripts/gpu/make_tinyllama.py "$model" "$tok/tokenizer.json"; then
		rm -f "$work/rows.json"
		if run ls "$memo" bench score --model "$model" --precision bf16 --seq 1024 --batch 4 --device "$dev" --json --rows-out "$work/rows.json" &&
			run lspt python3 scripts/bench_score.py --model "$model" --rows "$work/rows.json" --device "$dev" --autocast bf16 &&
			run lspb python3 scripts/bench_score.py --model "$model" --rows "$work/rows.json" --device "$dev" --dtype bf16; then
			# The bar is PyTorch with bf16 weights (issue 41); autocast is printed beside it.
			m=$(jf "$work/ls.out" tokens_per_s .0f) p=$(jf "$work/lspb.out" tokens_per_s .0f)
			read -r r v < <(ratio "$m" "$p")
			# The same weights and rows: memo's mean NLL must be PyTorch's within
			# bf16's tolerance (0.02 nats: bf16 keeps 8 bits of mantissa, and the
			# two sides round their products differently), and within 2e-4 in fp32.
			extra=""
			# memo draws the same rows from the same seed in every precision.
			run ls32 "$memo" bench score --model "$model" --seq 1024 --batch 4 --device "$dev" --json &&
				extra="; memo fp32 $(jf "$work/ls32.out" tokens_per_s .0f) (mean NLL $(jf "$work/ls32.out" mean_nll .5f))"
			run lsp32 python3 scripts/bench_score.py --model "$model" --rows "$work/rows.json" --device "$dev"
			nll=$(python3 - "$work/ls.out" "$work/lspb.out" "$work/ls32.out" "$work/lsp32.out" <<'PY'
import json, sys
def nll(path):
    try:
        return json.load(open(path))["mean_nll"]
    except (OSError, ValueError, KeyError):
        return None
mb, pb, m32, p32 = (nll(p) for p in sys.argv[1:5])
ok, out = True, []
for name, a, b, tol in (("bf16", mb, pb, 0.02), ("fp32", m32, p32, 2e-4)):
    if a is None or b is None:
        ok = False
        out.append(f"{name}: missing")
        continue
    d = abs(a - b)
    ok = ok and d <= tol
    out.append(f"{name} NLL memo {a:.5f} PyTorch {b:.5f} |diff| {d:.2g} (<= {tol:g})")
print("ok" if ok else "far", "; ".join(out))
PY
)
			# Memory: bf16 must hold the weights at half their float32 size
			# on the device; its peak is printed beside PyTorch's with bf16
			# weights (the same weights and rows).
			mem=$(python3 - "$work/ls.out" "$work/lspb.out" "$work/ls32.out" <<'PY'
import json, sys
def get(path, key):
    try:
        return json.load(open(path)).get(key, 0)
    except (OSError, ValueError):
        return 0
gb = lambda b: f"{b / 1e9:.2f} GB"
memo, torch_bf16, memo32 = (get(p, "device_peak_bytes") or get(p, "weight_bytes") for p in sys.argv[1:4])
w, w32 = get(sys.argv[1], "weight_bytes"), get(sys.argv[3], "weight_bytes")
ok = w > 0 and (w32 == 0 or w < 0.6 * w32)
print("ok" if ok else "low", f"weights {gb(w)} in bf16 ({gb(w32)} in fp32); peak {gb(memo)} (fp32 {gb(memo32)}), PyTorch bf16 weights peak {gb(torch_bf16)}")
PY
)
			read -r mv mem <<<"$mem"
			[[ $mv == ok ]] || v=low
			read -r nv nll <<<"$nll"
			[[ $nv == ok ]] || v=low
			line "$([[ $v == ok ]] && echo PASS || echo FAIL)" large-score \
				"1.1B, 4 x 1,024 tokens: memo bf16 $m tokens/s, PyTorch bf16 weights $p: ${r}x (>= 0.9); PyTorch bf16 autocast $(jf "$work/lspt.out" tokens_per_s .0f)$extra; $nll; memory: $mem"
		else
			line FAIL large-score "$(lasterr ls) $(lasterr lspt 2>/dev/null) $(lasterr lspb 2>/dev/null)"
		fi
		t0=$(date +%s)
		if run la "$memo" run --runs "$work/runs-1b" --set "device=$dev" --set "model.init_from=hf:$model" --set "data.tokenizer=hf:$tok" scripts/gpu/attack-1b.toml; then
			t1=$(date +%s)
			line PASS large-attack "1.1B fine-tune + attack on 2,000 + 2,000 documents: $((t1 - t0)) s wall; the table's row: $(grep -m1 '^| attack-1b' "$work/runs-1b/attack-1b/report/"*.md 2>/dev/null | cut -c1-200)"
		else
			line FAIL large-attack "memo run scripts/gpu/attack-1b.toml: $(lasterr la)"
		fi
	else
		line FAIL large-score "scripts/gpu/make_tinyllama.py: $(lasterr mk)"
	fi
fi

exit "$failed"
