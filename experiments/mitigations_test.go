package experiments

import (
	"strings"
	"testing"
)

// TestMitigationChecks: memo config refuses each value of [train.dp] and
// [train.lora] that cannot work (issue 40's bad-input list) with one line
// naming the key, and accepts settings that can.
func TestMitigationChecks(t *testing.T) {
	const data = "[data]\ntargets = 100\n"
	for _, c := range []struct{ name, doc, want string }{
		{"negative noise", "[train.dp]\nenabled = true\nnoise_multiplier = -1\n", "train.dp.noise_multiplier = -1: must be >= 0"},
		{"zero clipping norm", "[train.dp]\nenabled = true\nnoise_multiplier = 1\nmax_grad_norm = 0\n", "train.dp.max_grad_norm = 0: must be > 0"},
		{"negative clipping norm", "[train.dp]\nenabled = true\nmax_grad_norm = -1\n", "train.dp.max_grad_norm = -1: must be > 0"},
		{"q above one", "[train.dp]\nenabled = true\nsample_rate = 1.5\n", "train.dp.sample_rate = 1.5: must be in [0, 1]"},
		{"q negative", "[train.dp]\nenabled = true\nsample_rate = -0.1\n", "train.dp.sample_rate = -0.1: must be in [0, 1]"},
		{"delta one", "[train.dp]\nenabled = true\ndelta = 1\n", "train.dp.delta = 1: must be in (0, 1)"},
		{"delta at least 1/N", data + "[train.dp]\nenabled = true\nnoise_multiplier = 1\ndelta = 0.01\n", "train.dp.delta = 0.01: must be below 1/N"},
		{"unreachable target", data + "[train.dp]\nenabled = true\ntarget_epsilon = 0.05\n", "train.dp.target_epsilon = 0.05: no noise multiplier"},
		{"noise and target", "[train.dp]\nenabled = true\nnoise_multiplier = 1\ntarget_epsilon = 8\n", "give one"},
		{"pretraining passes", "[data]\nbackground = 16\npretrain_passes = 2\n[train.dp]\nenabled = true\nnoise_multiplier = 1\n", "data.pretrain_passes = 2 with train.dp.enabled = true"},
		{"shuffle sampling", "[train.dp]\nenabled = true\nsampling = \"shuffle\"\n", `train.dp.sampling = "shuffle"`},
		{"target llama lacks", "[train.lora]\nenabled = true\ntargets = [\"c_attn\"]\n", `"c_attn": model.arch llama has no such linear layer; it has down_proj, gate_proj, k_proj, o_proj, q_proj, up_proj, v_proj`},
		{"target gpt2 lacks", "[model]\narch = \"gpt2\"\n[train.lora]\nenabled = true\ntargets = [\"q_proj\"]\n", `"q_proj": model.arch gpt2 has no such linear layer; it has c_attn, c_fc, c_proj`},
		{"rank above a side", "[train.lora]\nenabled = true\nrank = 100000\n", "train.lora.rank = 100000: larger than"},
		{"rank 0", "[train.lora]\nenabled = true\nrank = 0\n", "train.lora.rank = 0: must be >= 1"},
		{"dropout 1", "[train.lora]\nenabled = true\ndropout = 1\n", "train.lora.dropout = 1: must be in [0, 1)"},
		{"dropout 0.1", "[train.lora]\nenabled = true\ndropout = 0.1\n", "train.lora.dropout = 0.1: must be 0 for now"},
		// Off, a value no point could use is refused all the same.
		{"rank 0, off", "[train.lora]\nrank = 0\n", "train.lora.rank = 0: must be >= 1"},
		{"noise and target, off", "[train.dp]\nnoise_multiplier = 1\ntarget_epsilon = 8\n", "give one"},
		{"shuffle sampling, off", "[train.dp]\nsampling = \"shuffle\"\n", `train.dp.sampling = "shuffle"`},
	} {
		t.Run(c.name, func(t *testing.T) { wantRefused(t, c.doc, c.want) })
	}
	for _, ok := range []string{
		data + "[train.dp]\nenabled = true\nnoise_multiplier = 1.1\ndelta = 1e-5\n",
		data + "[train.dp]\nenabled = true\ntarget_epsilon = 8\n",
		"[model]\narch = \"gpt2\"\n[train.lora]\nenabled = true\nrank = 4\ntargets = [\"c_attn\", \"c_proj\"]\n",
		"[train.lora]\nenabled = true\n",
	} {
		if _, err := ParseBytes("x.toml", []byte("name = \"x\"\n"+ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestMitigationsOffLeaveConfigAlone: with DP and LoRA off (the default)
// a run's config.toml has neither table, so every spec written before
// them keeps its hash; on, the table is there.
func TestMitigationsOffLeaveConfigAlone(t *testing.T) {
	off, err := ParseBytes("x.toml", []byte("name = \"x\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := off.TOML()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "train.dp") || strings.Contains(s, "train.lora") || strings.Contains(s, "noise_multiplier") {
		t.Errorf("config.toml with DP and LoRA off names them:\n%s", s)
	}
	on, err := ParseBytes("x.toml", []byte("name = \"x\"\n[train.dp]\nenabled = true\nnoise_multiplier = 1\n[train.lora]\nenabled = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err = on.TOML()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "\n[train.dp]\n") || !strings.Contains(s, "\n[train.lora]\n") {
		t.Errorf("config.toml with DP and LoRA on lacks their tables:\n%s", s)
	}
	h1, _ := off.Hash()
	h2, _ := on.Hash()
	if h1 == h2 {
		t.Error("turning DP and LoRA on does not change the hash")
	}
}

// TestLoRAShardRefusedOnParse: the spec check refuses LoRA under ZeRO.
func TestLoRAShardRefusedOnParse(t *testing.T) {
	_, err := ParseBytes("x.toml", []byte("name = \"x\"\n[train]\nshard = \"optimizer\"\n[train.lora]\nenabled = true\n"))
	if err == nil || !strings.Contains(err.Error(), "train.lora with train.shard other than none") {
		t.Errorf("ParseBytes: %v; want the LoRA-with-ZeRO refusal", err)
	}
}

// IdleMitigationKeys names the keys of [train.dp] and [train.lora] a run
// sets while the table is off, which memo run warns of; a sweep's base
// table holds what its points turn on, and names none.
func TestIdleMitigationKeys(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want string
	}{
		{"[train.dp]\nnoise_multiplier = 1\ndelta = 1e-6\n[train.lora]\nrank = 4\n", "train.dp.delta,train.dp.noise_multiplier,train.lora.rank"},
		{"[train.dp]\nenabled = false\n", ""},
		{"[data]\ntargets = 100\n[train.dp]\nenabled = true\nnoise_multiplier = 1\n[train.lora]\nrank = 4\n", "train.lora.rank"},
		{"[train.lora]\nrank = 4\n[sweep]\n\"train.lora.enabled\" = [false, true]\n", ""},
	} {
		s, err := ParseBytes("x.toml", []byte("name = \"x\"\n"+c.doc))
		if err != nil {
			t.Fatalf("%q: %v", c.doc, err)
		}
		if got := strings.Join(s.IdleMitigationKeys(), ","); got != c.want {
			t.Errorf("%q: idle keys %q, want %q", c.doc, got, c.want)
		}
	}
}
