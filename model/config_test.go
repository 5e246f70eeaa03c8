package model

import (
	"math"
	"strings"
	"testing"
)

func TestPresets(t *testing.T) {
	cases := []struct {
		preset                  string
		dim, layers, heads, ffn int
	}{
		{"nano", 64, 2, 4, 176},
		{"tiny", 128, 2, 4, 344},
		{"small", 256, 4, 8, 688},
		{"medium", 512, 6, 8, 1368},
		{"base", 768, 12, 12, 2048},
	}
	for _, c := range cases {
		r, err := Config{Preset: c.preset, Vocab: 100}.Resolve()
		if err != nil {
			t.Fatalf("%s: %v", c.preset, err)
		}
		if r.Dim != c.dim || r.Layers != c.layers || r.Heads != c.heads || r.FFN != c.ffn {
			t.Errorf("%s resolved to d=%d L=%d h=%d ffn=%d, want %d %d %d %d", c.preset, r.Dim, r.Layers, r.Heads, r.FFN, c.dim, c.layers, c.heads, c.ffn)
		}
	}
}

func TestOverridesAndErrors(t *testing.T) {
	r, err := Config{Preset: "small", Vocab: 50, Dim: 96, Layers: 1}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if r.Dim != 96 || r.Layers != 1 || r.Heads != 8 || r.FFN != 256 {
		t.Errorf("overrides: got %+v, want dim 96, layers 1, heads 8 (preset), ffn 256 (8·96/3)", r)
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Preset: "huge", Vocab: 10}, "model.preset"},
		{Config{Preset: "nano"}, "model.vocab"},
		{Config{Preset: "nano", Vocab: 10, Heads: 3}, "model.heads"},
		{Config{Preset: "nano", Vocab: 10, Heads: 64}, "head size 1"},
		{Config{Vocab: 10}, "model.dim"},
		// Each family option names itself and its value.
		{Config{Preset: "nano", Vocab: 10, AttnSoftcap: -50}, "model.attn_softcap = -50: must be >= 0"},
		{Config{Preset: "nano", Vocab: 10, QKVClip: math.NaN()}, "model.qkv_clip = NaN: must be >= 0"},
		{Config{Preset: "nano", Vocab: 10, LocalRopeTheta: -1}, "model.local_rope_theta = -1"},
	}
	for _, b := range bad {
		_, err := b.cfg.Resolve()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Resolve(%+v) = %v, want an error naming %q", b.cfg, err, b.want)
		}
	}
}

func TestParamsFormula(t *testing.T) {
	c, _ := Config{Preset: "small", Vocab: 4096}.Resolve()
	// 4096·256 + 4·(4·256² + 3·256·688 + 2·256) + 256
	if got, want := c.Params(), int64(4096*256+4*(4*256*256+3*256*688+2*256)+256); got != want {
		t.Errorf("Params = %d, want %d", got, want)
	}
	c.Untied = true
	if got, want := c.Params(), int64(2*4096*256+4*(4*256*256+3*256*688+2*256)+256); got != want {
		t.Errorf("untied Params = %d, want %d", got, want)
	}
	// The untied embedding is a gather: it adds no FLOPs.
	tied := c
	tied.Untied = false
	if c.FLOPsPerTokenAt(256) != tied.FLOPsPerTokenAt(256) {
		t.Errorf("untied FLOPs %g != tied %g", c.FLOPsPerTokenAt(256), tied.FLOPsPerTokenAt(256))
	}
}
