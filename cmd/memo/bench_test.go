package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memo-research/memo/train"
)

// TestBenchDecodeCLI runs `memo bench decode --json` on a tiny model in each
// decoding mode and checks the JSON it prints describes what was asked.
func TestBenchDecodeCLI(t *testing.T) {
	exe := buildMemo(t)
	tiny := []string{"bench", "decode", "--preset", "tiny", "--vocab", "64", "--prefix", "8", "--suffix", "3",
		"--batch", "2", "--threads", "1", "--reps", "1", "--json"}
	tests := []struct {
		name     string
		extra    []string
		wantRows int
	}{
		{"greedy", nil, 2},
		{"sample", []string{"--decoding", "sample", "--samples", "3", "--temperature", "0.8", "--top-k", "5", "--top-p", "0.9"}, 6},
		{"beam", []string{"--decoding", "beam", "--beams", "2"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := execMemo(t, exe, t.TempDir(), append(append([]string(nil), tiny...), tt.extra...)...)
			if r.code != 0 {
				t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
			}
			var got struct {
				Decoding   string   `json:"decoding"`
				Rows       int      `json:"rows"`
				Suffix     int      `json:"suffix"`
				Threads    int      `json:"threads"`
				TokensPerS *float64 `json:"tokens_per_s"`
				PrefillS   *float64 `json:"prefill_s"`
				DecodeS    *float64 `json:"decode_s"`
				Temp       float64  `json:"temperature"`
				TopK       int      `json:"top_k"`
				TopP       float64  `json:"top_p"`
				HostProcs  int      `json:"host_procs"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
			}
			if got.TokensPerS == nil || got.PrefillS == nil || got.DecodeS == nil {
				t.Fatalf("missing tokens_per_s, prefill_s or decode_s in %s", r.stdout)
			}
			if *got.TokensPerS <= 0 || *got.PrefillS <= 0 || *got.DecodeS <= 0 {
				t.Errorf("tokens_per_s %v, prefill_s %v, decode_s %v: want all > 0", *got.TokensPerS, *got.PrefillS, *got.DecodeS)
			}
			if want := tt.name; got.Decoding != want || got.Rows != tt.wantRows || got.Suffix != 3 || got.Threads != 1 {
				t.Errorf("decoding %q, rows %d, suffix %d, threads %d; want %q, %d, 3, 1",
					got.Decoding, got.Rows, got.Suffix, got.Threads, want, tt.wantRows)
			}
			if got.HostProcs < 1 {
				t.Errorf("host_procs %d, want the host's cores (>= 1)", got.HostProcs)
			}
			wantT, wantK, wantP := 1.0, 0, 1.0 // extract's defaults
			if tt.name == "sample" {
				wantT, wantK, wantP = 0.8, 5, 0.9
			}
			if got.Temp != wantT || got.TopK != wantK || got.TopP != wantP {
				t.Errorf("temperature %v, top_k %d, top_p %v; want %v, %d, %v", got.Temp, got.TopK, got.TopP, wantT, wantK, wantP)
			}
		})
	}
}

// TestBenchDecodeBadInput checks that bad flags are usage errors.
func TestBenchDecodeBadInput(t *testing.T) {
	exe := buildMemo(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--decoding", "nucleus"}, `--decoding "nucleus": must be one of greedy, sample, beam`},
		{[]string{"--suffix", "0"}, "--suffix 0: must be >= 1"},
		{[]string{"--beams", "65"}, "--beams 65: must be between 1 and 64"},
		{[]string{"--top-k", "-1"}, "--top-k -1: must be >= 0"},
		{[]string{"--top-p", "0"}, "--top-p 0: must be in (0, 1]"},
		{[]string{"--temperature", "-2"}, "--temperature -2: must be a finite number > 0"},
		{[]string{"--preset", "huge-ish"}, "bench decode:"},
		// Refused inside extract.Bench, as bad input (not by the text).
		{[]string{"--precision", "fp8"}, `bench decode: --precision: precision "fp8": inference takes fp32, bf16 or fp16`},
		{[]string{"--approximation", "kv3"}, `bench decode: --approximation: extract.approximation = "kv3"`},
		{[]string{"--cuda-graphs"}, "--cuda-graphs: captured token steps are greedy decoding's on --device cuda"},
		{[]string{"--cuda-graphs", "--decoding", "beam"}, "(got --decoding beam --device cpu)"},
		// An 80 GB causal mask: refused, not Go's fatal out of memory.
		{[]string{"--prefix", "100000"}, "--prefix 100000 --suffix 50 --batch 8: a model of"},
		// A stray word was ignored and the bench ran.
		{[]string{"extra"}, `bench decode: unexpected argument "extra": it takes flags alone`},
	}
	for _, tt := range tests {
		r := execMemo(t, exe, t.TempDir(), append([]string{"bench", "decode", "--preset", "tiny"}, tt.args...)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit code %d, stderr %q; want 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// --model decodes with trained weights: the Hugging Face golden's
// parameter count (112,960, as its safetensors hold) and its directory come
// back; a model too short for the prompt, a --preset beside --model and a
// directory that holds no model are one line and exit 2.
func TestBenchDecodeModelDir(t *testing.T) {
	exe := buildMemo(t)
	dir, err := filepath.Abs("../../testdata/hf/llama-gqa-tied")
	if err != nil {
		t.Fatal(err)
	}
	r := execMemo(t, exe, t.TempDir(), "bench", "decode", "--model", dir, "--prefix", "8", "--suffix", "3",
		"--batch", "2", "--threads", "1", "--reps", "1", "--approximation", "kv8", "--json")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
	}
	var got struct {
		ModelDir string  `json:"model_dir"`
		Params   int64   `json:"params"`
		Vocab    int     `json:"vocab"`
		KVBytes  float64 `json:"kv_bytes_per_token"`
		Weights  int64   `json:"weight_bytes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if got.ModelDir != dir || got.Params != 112960 || got.Vocab != 320 || got.KVBytes <= 0 || got.Weights != 4*112960 {
		t.Errorf("got %+v; want model_dir %s, 112960 params, vocab 320, KV bytes measured, 4 bytes a weight", got, dir)
	}
	// The table's approx line says what was measured: KV bytes for a
	// cache approximation, QuantSpec's acceptance (and not a 0 for bytes
	// it does not count) for QuantSpec.
	for approx, want := range map[string]string{"kv8": "KV bytes read per token\n", "quantspec-g4": "QuantSpec acceptance"} {
		r := execMemo(t, exe, t.TempDir(), "bench", "decode", "--model", dir, "--prefix", "8", "--suffix", "3",
			"--batch", "2", "--threads", "1", "--reps", "1", "--approximation", approx)
		line := regexp.MustCompile(`(?m)^approx .*\n`).FindString(r.stdout)
		if r.code != 0 || !strings.Contains(line, want) || strings.Contains(line, ": 0 KV") || (approx == "kv8") == strings.Contains(line, "acceptance") {
			t.Errorf("--approximation %s: exit %d, approx line %q; want it to say %q", approx, r.code, line, want)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", dir, "--prefix", "250", "--suffix", "50"}, "holds 256 positions; --prefix 250 + --suffix 50 need 300"},
		{[]string{"--model", dir, "--preset", "tiny"}, "leave --preset and --vocab unset"},
		{[]string{"--model", t.TempDir()}, "not a Hugging Face directory"},
	} {
		r := execMemo(t, exe, t.TempDir(), append([]string{"bench", "decode", "--reps", "1"}, tt.args...)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit code %d, stderr %q; want 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	// bench score names itself and its own flag.
	r = execMemo(t, exe, t.TempDir(), "bench", "score", "--reps", "1", "--model", dir, "--seq", "256")
	if want := "bench score: --model " + dir + " holds 256 positions; --seq 256 needs 257"; r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("bench score --seq 256: exit code %d, stderr %q; want 2 and %q", r.code, r.stderr, want)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1000", 1000, true}, {"23K", 23_000, true}, {"1m", 1_000_000, true}, {"10G", 10_000_000_000, true},
		{"", 0, false}, {"G", 0, false}, {"1.5G", 0, false}, {"1T", 0, false}, {"K1", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestBenchCorpusBadSize: a size that is not one is one line, exit 2.
func TestBenchCorpusBadSize(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	r := execMemo(t, exe, dir, "bench", "corpus", "--bytes", "lots", "--out", filepath.Join(dir, "c.jsonl"))
	if r.code != 2 || !strings.Contains(r.stderr, `--bytes "lots"`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want 2 and one line naming --bytes", r.code, r.stderr)
	}
}

// TestBenchTrainShard runs `memo bench train --nproc 2 --shard S --json`:
// rank 0's AdamW state is its S = ceil(P/2) elements of each moment (P
// the parameters' elements, padding 2S - P), the weights are all-gathered
// once a step ((N-1)·S elements sent), and under "gradients" the
// gradients are reduce-scattered, leaving the all-reduce only the step's
// loss and count statistics.
func TestBenchTrainShard(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on two processes (-short)")
	}
	exe := buildMemo(t)
	for _, shard := range []string{"optimizer", "gradients"} {
		t.Run(shard, func(t *testing.T) {
			r := execMemo(t, exe, t.TempDir(), "bench", "train", "--preset", "tiny", "--vocab", "64", "--seq", "8",
				"--batch", "4", "--steps", "2", "--threads", "1", "--nproc", "2", "--shard", shard, "--json")
			if r.code != 0 {
				t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
			}
			var got train.BenchResult
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
			}
			p := got.State.Params / 4 // float32 elements
			per := (p + 1) / 2
			if got.Nproc != 2 || got.Shard != shard || got.State.Optimizer != 2*per*4 || got.Unsharded.Optimizer != 2*p*4 || got.State.Padding != 2*per-p {
				t.Errorf("nproc %d shard %q, state %+v, unsharded %+v; want 2, %q, optimizer %d B of %d, padding %d",
					got.Nproc, got.Shard, got.State, got.Unsharded, shard, 2*per*4, 2*p*4, 2*per-p)
			}
			ops := map[string]train.Traffic{}
			for _, c := range got.Collectives {
				ops[c.Op] = c
			}
			if ag := ops["all-gather"]; ag.Calls != 1 || ag.SentBytes != float64(per*4) {
				t.Errorf("all-gather per step %+v; want 1 call sending %d B", ag, per*4)
			}
			rs, ar := ops["reduce-scatter"], ops["all-reduce"]
			switch {
			case shard == "gradients" && (rs.Calls != 1 || rs.SentBytes != float64(per*4) || ar.PayloadBytes >= 1000):
				t.Errorf("reduce-scatter %+v, all-reduce %+v; want the gradients reduce-scattered (%d B sent), not all-reduced", rs, ar, per*4)
			case shard == "optimizer" && (rs.Calls != 0 || ar.PayloadBytes < p*4):
				t.Errorf("reduce-scatter %+v, all-reduce %+v; want the gradients all-reduced", rs, ar)
			}
			t.Logf("%s: state %+v of %+v; collectives %+v", shard, got.State, got.Unsharded, got.Collectives)
		})
	}
}

// TestBenchTrainShardFull runs `memo bench train --nproc 4 --shard full
// [--shard-group 2] --json` on a model of 2 blocks (4 units: embedding,
// 2 blocks, head): rank 0 keeps 1/4 of the weights, gradients and moments
// (to within the padding it reports); every stage is all-gathered for its
// forward and again for its backward (the tied head gathers the embedding
// too: 8 all-gathers a step), and each unit's gradients are
// reduce-scattered once (5: the embedding twice). In groups of 2 those
// all-gathers run within the group, and what crosses groups is the
// gradients' reduce-scatter and, once a step, the updated weights'
// all-gather, each one range of every unit: the bytes of rank 0's state.
func TestBenchTrainShardFull(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on four processes (-short)")
	}
	exe := buildMemo(t)
	for _, group := range []int{0, 2} {
		t.Run(fmt.Sprintf("groups of %d", group), func(t *testing.T) {
			r := execMemo(t, exe, t.TempDir(), "bench", "train", "--preset", "tiny", "--vocab", "64", "--seq", "8",
				"--batch", "4", "--steps", "2", "--threads", "1", "--nproc", "4", "--shard", "full",
				"--shard-group", strconv.Itoa(group), "--json")
			if r.code != 0 {
				t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
			}
			var got train.BenchResult
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
			}
			st, un := got.State, got.Unsharded
			if got.Shard != "full" || got.ShardGroup != group || 4*st.Params != un.Params+4*st.Padding || st.Grads != st.Params ||
				st.Optimizer != 2*st.Params || st.Padding < 0 || st.Padding >= 4*4 {
				t.Errorf("state %+v of %+v: want a quarter of each, to within the padding", st, un)
			}
			if want := int64(0); group == 2 {
				want = st.Params * 2 // half of the weights: this rank's range of every unit, times N/K
				if st.Secondary != want {
					t.Errorf("secondary copy %d B, want %d", st.Secondary, want)
				}
			}
			ops := map[string]train.Traffic{}
			for _, c := range got.Collectives {
				ops[c.Op+"/"+c.Scope] = c
			}
			if group == 0 {
				if ag, rs := ops["all-gather/"], ops["reduce-scatter/"]; ag.Calls != 8 || rs.Calls != 5 {
					t.Errorf("all-gather %+v, reduce-scatter %+v; want 8 and 5 calls a step", ag, rs)
				}
				return
			}
			if _, ok := ops["all-gather/"]; ok {
				t.Errorf("an all-gather over all ranks under groups: %+v", got.Collectives)
			}
			in, across := ops["all-gather/"+train.ScopeGroup], ops["all-gather/"+train.ScopeAcross]
			rsIn, rsAcross := ops["reduce-scatter/"+train.ScopeGroup], ops["reduce-scatter/"+train.ScopeAcross]
			// Across groups each call sends one range: (N/K - 1) = 1 of them.
			if in.Calls != 8 || across.Calls != 4 || rsIn.Calls != 5 || rsAcross.Calls != 5 {
				t.Errorf("calls within/across groups: all-gather %d/%d, reduce-scatter %d/%d; want 8/4, 5/5", in.Calls, across.Calls, rsIn.Calls, rsAcross.Calls)
			}
			if across.SentBytes != float64(st.Params) {
				t.Errorf("updated weights sent across groups %.0f B, want rank 0's range of every unit, %d B", across.SentBytes, st.Params)
			}
			// The tied embedding's gradient is reduce-scattered twice.
			if rsAcross.SentBytes <= float64(st.Params) || rsAcross.SentBytes >= 2*float64(st.Params) {
				t.Errorf("gradients sent across groups %.0f B, want one range of every unit and the embedding's again (between %d and %d B)", rsAcross.SentBytes, st.Params, 2*st.Params)
			}
			t.Logf("state %+v of %+v; collectives %+v", st, un, got.Collectives)
		})
	}
}

// bench score scores with the Hugging Face golden's weights (its parameter
// count and vocabulary come back, and a mean NLL near ln 320 for random
// rows under a random model), and bench train takes an explicit shape
// (grouped-query heads, untied head) whose parameter count is the
// formula's; bad flags are one line and exit 2.
func TestBenchScoreAndShape(t *testing.T) {
	exe := buildMemo(t)
	dir, err := filepath.Abs("../../testdata/hf/llama-gqa-tied")
	if err != nil {
		t.Fatal(err)
	}
	rowsOut := filepath.Join(t.TempDir(), "rows.json")
	r := execMemo(t, exe, t.TempDir(), "bench", "score", "--model", dir, "--seq", "32", "--batch", "2", "--reps", "1",
		"--threads", "1", "--json", "--rows-out", rowsOut)
	if r.code != 0 {
		t.Fatalf("bench score: exit code %d; stderr %s", r.code, r.stderr)
	}
	// The scored rows, for scripts/bench_score.py --rows: 2 of 33 ids below the vocabulary.
	var rows [][]int
	if b, err := os.ReadFile(rowsOut); err != nil || json.Unmarshal(b, &rows) != nil {
		t.Fatalf("--rows-out: %v: %s", err, b)
	}
	if len(rows) != 2 || len(rows[0]) != 33 || len(rows[1]) != 33 || slices.Max(rows[0]) >= 320 || slices.Min(rows[1]) < 0 {
		t.Errorf("--rows-out wrote %d rows (%v...): want 2 of 33 ids in [0, 320)", len(rows), rows)
	}
	if r := execMemo(t, exe, t.TempDir(), "bench", "score", "--model", dir, "--seq", "8", "--batch", "1", "--reps", "1",
		"--rows-out", rowsOut); r.code != 2 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("--rows-out over an existing file: exit %d, stderr %q; want 2 and a line saying it exists", r.code, r.stderr)
	}
	var sc struct {
		Params     int64   `json:"params"`
		Vocab      int     `json:"vocab"`
		Seq        int     `json:"seq"`
		TokensPerS float64 `json:"tokens_per_s"`
		MeanNLL    float64 `json:"mean_nll"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sc); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if sc.Params != 112960 || sc.Vocab != 320 || sc.Seq != 32 || sc.TokensPerS <= 0 || math.Abs(sc.MeanNLL-math.Log(320)) > 1 {
		t.Errorf("bench score: %+v; want 112960 params, vocab 320, seq 32, a rate, mean NLL near ln 320 = 5.77", sc)
	}
	prof := filepath.Join(t.TempDir(), "train.prof")
	r = execMemo(t, exe, t.TempDir(), "--cpu-profile", prof, "bench", "train", "--dim", "64", "--layers", "1", "--heads", "4", "--kv-heads", "2",
		"--ffn", "96", "--untied", "--vocab", "50", "--seq", "8", "--batch", "2", "--steps", "3", "--threads", "1", "--json")
	if r.code != 0 {
		t.Fatalf("bench train --dim: exit code %d; stderr %s", r.code, r.stderr)
	}
	var tr struct {
		Params int64     `json:"params"`
		StepS  float64   `json:"step_s"`
		StepsS []float64 `json:"steps_s"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if sum := 0.0; len(tr.StepsS) == 3 {
		for _, s := range tr.StepsS {
			sum += s
		}
		if math.Abs(sum/3-tr.StepS) > 1e-9 {
			t.Errorf("steps_s %v average %g, step_s %g: want the same", tr.StepsS, sum/3, tr.StepS)
		}
	} else {
		t.Errorf("steps_s %v: want the 3 measured steps", tr.StepsS)
	}
	// A profile is gzip-compressed protobuf, written when the command ends.
	if b, err := os.ReadFile(prof); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpu-profile %s: %d bytes, %v; want a gzip-compressed profile", prof, len(b), err)
	}
	// embedding and head 2·50·64; q, o 2·64·64; k, v 2·64·32; gate, up,
	// down 3·64·96; two norms in the block and the final one, 3·64.
	if want := int64(2*50*64 + 2*64*64 + 2*64*32 + 3*64*96 + 3*64); tr.Params != want {
		t.Errorf("bench train --dim 64 ...: %d params, want %d", tr.Params, want)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"score", "--model", dir, "--preset", "tiny"}, "leave --preset unset"},
		{[]string{"score", "--seq", "0"}, "--seq 0: must be >= 1"},
		{[]string{"score", "--batch-size", "0"}, "--batch-size 0: must be >= 1"}, // the alias typed, not --batch
		{[]string{"score", "--batch", "0"}, "--batch 0: must be >= 1"},
		{[]string{"score", "--precision", "bf16-mixed"}, "bench score: --precision"},
		{[]string{"train", "--layers", "2"}, "need --dim"},
		{[]string{"train", "--preset", "nano", "--seq", "100000"}, "needs at least"},
		{[]string{"score", "--seq", "100000"}, "--seq 100000 --batch 4: a model of"},
	} {
		r := execMemo(t, exe, t.TempDir(), append([]string{"bench"}, tt.args...)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit code %d, stderr %q; want 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestBenchCountOps: --count-ops adds the measured work's libtorch
// operator calls to bench train's and bench decode's output; a second
// layer adds calls a step, decoding runs no autograd node, and without
// the flag nothing is counted.
func TestBenchCountOps(t *testing.T) {
	exe := buildMemo(t)
	type counts struct {
		Steps    int `json:"steps"`
		OpCounts *struct {
			Ops []struct {
				Name  string `json:"name"`
				Calls int64  `json:"calls"`
				Outer int64  `json:"outer"`
			} `json:"ops"`
			Nodes []struct {
				Calls int64 `json:"calls"`
			} `json:"autograd_nodes"`
		} `json:"op_counts"`
	}
	run := func(args ...string) (calls, outer, nodes int64, present bool) {
		t.Helper()
		r := execMemo(t, exe, t.TempDir(), args...)
		if r.code != 0 {
			t.Fatalf("%v: exit code %d; stderr %s", args, r.code, r.stderr)
		}
		var c counts
		if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
			t.Fatalf("%v: %v: %s", args, err, r.stdout)
		}
		if c.OpCounts == nil {
			return 0, 0, 0, false
		}
		for _, o := range c.OpCounts.Ops {
			calls += o.Calls
			outer += o.Outer
		}
		for _, n := range c.OpCounts.Nodes {
			nodes += n.Calls
		}
		return calls, outer, nodes, true
	}
	train := func(layers string, extra ...string) []string {
		return append([]string{"bench", "train", "--dim", "32", "--layers", layers, "--heads", "2", "--vocab", "50",
			"--seq", "8", "--batch", "2", "--steps", "2", "--threads", "1", "--json"}, extra...)
	}
	c1, o1, n1, ok := run(train("1", "--count-ops")...)
	if !ok || c1 <= o1 || o1 <= 0 || n1 <= 0 {
		t.Fatalf("bench train --count-ops, 1 layer: present %v, %d calls, %d outer, %d autograd nodes: want calls > outer > 0 and nodes > 0", ok, c1, o1, n1)
	}
	if _, o2, n2, _ := run(train("2", "--count-ops")...); o2 <= o1 || n2 <= n1 {
		t.Errorf("a second layer: %d outer calls and %d nodes for 2 steps, one layer's %d and %d: want more", o2, n2, o1, n1)
	}
	if _, _, _, ok := run(train("1")...); ok {
		t.Error("bench train without --count-ops reported op_counts")
	}
	c, o, n, ok := run("bench", "decode", "--preset", "tiny", "--vocab", "64", "--prefix", "8", "--suffix", "3",
		"--batch", "2", "--threads", "1", "--reps", "1", "--json", "--count-ops")
	if !ok || c <= o || o <= 0 || n != 0 {
		t.Errorf("bench decode --count-ops: present %v, %d calls, %d outer, %d autograd nodes: want calls > outer > 0 and no nodes", ok, c, o, n)
	}
	table := slices.DeleteFunc(train("1", "--count-ops"), func(a string) bool { return a == "--json" })
	r := execMemo(t, exe, t.TempDir(), table...)
	if r.code != 0 || !strings.Contains(r.stdout, "libtorch ops ") || !strings.Contains(r.stdout, "most called ") {
		t.Errorf("bench train --count-ops as a table: exit %d, stdout %s: want the libtorch ops and most called lines", r.code, r.stdout)
	}
}

// TestBenchProfileKernels: --profile-kernels adds the measured steps'
// costliest kernels to bench train's output; on the CPU these are
// libtorch's operators, the forward's products among them once a step or
// more, and without the flag nothing is recorded.
func TestBenchProfileKernels(t *testing.T) {
	exe := buildMemo(t)
	args := []string{"bench", "train", "--dim", "32", "--layers", "1", "--heads", "2", "--vocab", "50",
		"--seq", "8", "--batch", "2", "--steps", "2", "--threads", "1"}
	type result struct {
		Steps   int `json:"steps"`
		Kernels []struct {
			Device string  `json:"device"`
			Name   string  `json:"name"`
			Calls  int64   `json:"calls"`
			Secs   float64 `json:"seconds"`
		} `json:"kernels"`
		KernelSPerStep float64 `json:"kernel_s_per_step"`
	}
	run := func(extra ...string) result {
		t.Helper()
		r := execMemo(t, exe, t.TempDir(), append(append(slices.Clone(args), "--json"), extra...)...)
		if r.code != 0 {
			t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
		}
		var res result
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		return res
	}
	res := run("--profile-kernels")
	if len(res.Kernels) == 0 || len(res.Kernels) > 40 {
		t.Fatalf("--profile-kernels: %d kernels, want 1 to 40", len(res.Kernels))
	}
	products := int64(0)
	for i, k := range res.Kernels {
		if k.Device != "cpu" || !(k.Secs >= 0) {
			t.Errorf("kernel %d: %+v: want device cpu and a time", i, k)
		}
		if i > 0 && res.Kernels[i-1].Secs < k.Secs {
			t.Errorf("kernel %d (%s) costs more than the one before it", i, k.Name)
		}
		if k.Name == "aten::mm" || k.Name == "aten::addmm" || k.Name == "aten::matmul" {
			products += k.Calls
		}
	}
	if products < int64(res.Steps) {
		t.Errorf("%d matrix products recorded over %d steps, want one a step at least: %+v", products, res.Steps, res.Kernels)
	}
	if res.KernelSPerStep != 0 {
		t.Errorf("kernel_s_per_step %g on the CPU, want 0 (nested operators)", res.KernelSPerStep)
	}
	if res := run(); len(res.Kernels) != 0 {
		t.Errorf("without --profile-kernels: %d kernels reported", len(res.Kernels))
	}
	r := execMemo(t, exe, t.TempDir(), append(slices.Clone(args), "--profile-kernels")...)
	if r.code != 0 || !strings.Contains(r.stdout, "operators    the costliest") {
		t.Errorf("as a table: exit %d, stdout %s: want the operators line", r.code, r.stdout)
	}
}
