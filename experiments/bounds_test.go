package experiments

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestBoundsKeysExist: every key of the bounds table names a key of the
// spec, so a renamed key cannot leave its bound behind unnoticed.
func TestBoundsKeysExist(t *testing.T) {
	valid := map[string]bool{}
	for _, k := range leafKeys(reflect.TypeOf(Spec{}), "") {
		valid[k] = true
	}
	for _, b := range bounds() {
		if !valid[b.key] {
			t.Errorf("bounds: %q is not a key of the spec", b.key)
		}
	}
}

// TestValuesThatCannotWork (issue 43, case 4): a number that is not
// finite, a negative value where the key takes none, a size past any
// machine and a key that differs from a real one only in case are each
// refused with the key named, before any work.
func TestValuesThatCannotWork(t *testing.T) {
	type tc struct{ name, doc, want string }
	cases := []tc{
		{"steps 0 with infinite epochs", "[train]\nsteps = 0\nepochs = inf\n", "x.toml:4: train.epochs = +Inf: must be a finite number"},
		{"threads past the machine", "[train]\nthreads = 1_000_000_000_000\n", fmt.Sprintf("train.threads = 1000000000000: must be in [0, %d]", 64*runtime.NumCPU())},
		{"batch past any machine", "[train]\nbatch_size = 1_000_000_000_000\n", "train.batch_size = 1000000000000: must be <= 1048576"},
		{"epochs past the step count", "[train]\nsteps = 0\nepochs = 1e300\n", "train.epochs = 1e+300: must be in [0, 1000000]"},
		// 2^63 steps started a run whose ETA wrapped to a negative.
		{"steps past any run", "[train]\nsteps = 9223372036854775807\n", "x.toml:3: train.steps = 9223372036854775807: must be in [0, 1000000000]"},
		// One range: a bound said >= 0 and then Validate > 0.
		{"eps 0", "[train]\neps = 0\n", "train.eps = 0: must be > 0"},
		{"eps below 0", "[train]\neps = -1\n", "train.eps = -1: must be > 0"},
		// The key named is the one set: a probe's head_dim = -1 blamed model.heads.
		{"head_dim below 0", "[model]\nhead_dim = -1\n", "model.head_dim = -1: must be > 0 and even for rotary embeddings"},
		{"head_dim odd", "[model]\nhead_dim = 3\n", "model.head_dim = 3: must be > 0 and even"},
		{"a negative original context without scaling", "[model]\nrope_original_context = -1\n", "model.rope_original_context = -1: must be >= 0"},
		{"a BPE past its bound", "[data]\ntokenizer = \"bpe:10000000\"\n", `"bpe:10000000": want "bpe:N" (260 <= N <= 1048576)`},
		{"an odd head from dim / heads", "[model]\npreset = \"\"\nvocab = 300\ndim = 60\nheads = 4\nlayers = 1\nffn = 64\ncontext = 64\n", "model.heads = 4: head size 15 must be even"},
		{"Train.lr", "[Train]\nlr = 1e-3\n", `unknown key "Train" at the top level; did you mean "train"?`},
		{"train.LR", "[train]\nLR = 1e-3\n", `x.toml:3: train.LR: unknown key "LR" in [train]; did you mean "lr"?`},
		// Every wrong key at once, in line order, the table's by its
		// header: a review saw only the case-folded one (a random one
		// of two), the others left for the next run.
		{"case and other unknown keys", "[train]\nWarmup_Steps = 2\nlearning_rate = 2\nLR = 1\n[model]\nn_layer = 3\n",
			`x.toml:3: train.Warmup_Steps: unknown key "Warmup_Steps" in [train]; did you mean "warmup_steps"? see ` + "`memo config --defaults`" + ` for the valid keys; also unknown: train.learning_rate (line 4), train.LR (line 5), model.n_layer (line 7)`},
		{"Train.lr with its line", "[Train]\nlr = 1e-3\n", `x.toml:2: Train: unknown key "Train"`},
		{"dotted Model.dim", "Model.dim = 64\n", `unknown key "Model" at the top level; did you mean "model"?`},
		{"dedup window below 1", "[data]\ndedup_tokens = -1\n", "x.toml:3: data.dedup_tokens = -1: must be in [0, 65536] (0: off;"},
		{"dedup window past any document", "[data]\ndedup_tokens = 100_000\n", "data.dedup_tokens = 100000: must be in [0, 65536]"},
		{"an exempt id below 0", "[goldfish]\nstrategy = \"rolling\"\nexempt_ids = [-1]\n", "goldfish.exempt_ids = [..., -1, ...]: token ids are >= 0"},
		{"an exempt id past the vocabulary", "[data]\ntokenizer = \"bpe:300\"\n[goldfish]\nstrategy = \"rolling\"\nexempt_ids = [5, 99999999]\n", "goldfish.exempt_ids = [..., 99999999, ...]: not a token id of the vocabulary of 300"},
		// Past 2^31 the stream's count wrapped: each target trained once.
		{"repetitions past int32", "[data]\nrepetitions = 4294967297\n", "x.toml:3: data.repetitions = 4294967297: must be <= 1048576 (appearances of each target"},
		{"a repetition group past the bound", "[data]\nrepetition_groups = [1, 2, 9000000000000000000]\n", "data.repetition_groups = [..., 9000000000000000000, ...]: every value must be <= 1048576"},
		{"background passes", "[data]\nbackground = 4\nbackground_passes = 9000000000000000000\n", "data.background_passes = 9000000000000000000: must be <= 1048576"},
		{"pretraining passes", "[data]\nbackground = 4\npretrain_passes = 9000000000000000000\n", "data.pretrain_passes = 9000000000000000000: must be <= 1048576"},
	}
	for _, key := range []string{"model.norm_eps", "model.rope_theta", "model.rope_factor", "model.rope_low_freq_factor",
		"model.rope_high_freq_factor", "model.attn_softcap", "model.final_softcap", "model.query_scalar", "model.qkv_clip",
		"train.weight_decay", "train.clip", "train.eps", "train.min_lr", "train.epochs",
		"plots.width_in", "plots.height_in", "plots.font_size"} {
		table, k, _ := strings.Cut(key, ".")
		for _, v := range []string{"nan", "inf", "-inf"} {
			cases = append(cases, tc{key + " = " + v, fmt.Sprintf("[%s]\n%s = %s\n", table, k, v), key + " = "})
		}
		if table != "plots" { // plots.Validate holds its ranges
			cases = append(cases, tc{key + " = -1", fmt.Sprintf("[%s]\n%s = -1\n", table, k), key + " = -1: must be "})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantRefused(t, c.doc, c.want) })
	}
}

// wantRefused parses a spec of name x and doc and wants it refused by
// one ConfigError line (exit 2) containing want.
func wantRefused(t *testing.T, doc, want string) {
	t.Helper()
	_, err := ParseBytes("x.toml", []byte("name = \"x\"\n"+doc))
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v; want one line containing %q", err, want)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("err %T is not a ConfigError", err)
	}
}
