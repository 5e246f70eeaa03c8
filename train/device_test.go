package train

import (
	"context"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

func TestParseDevice(t *testing.T) {
	cases := []struct {
		name  string
		ok    bool
		cuda  bool
		index int
	}{
		{"", true, false, 0},
		{"cpu", true, false, 0},
		{"CPU", true, false, 0},
		{"cuda", true, true, 0},
		{"cuda:0", true, true, 0},
		{"cuda:3", true, true, 3},
		{" CUDA:1 ", true, true, 1},
		{"gpu", false, false, 0},
		{"mps", false, false, 0},
		{"cuda:", false, false, 0},
		{"cuda:-1", false, false, 0},
		{"cuda:x", false, false, 0},
		{"cuda:0:1", false, false, 0},
		{"cuda0", false, false, 0},
	}
	for _, c := range cases {
		cuda, index, err := torchx.ParseDevice(c.name)
		if (err == nil) != c.ok || cuda != c.cuda || index != c.index {
			t.Errorf("torchx.ParseDevice(%q) = %v, %d, %v; want cuda %v, index %d, ok %v", c.name, cuda, index, err, c.cuda, c.index, c.ok)
		}
		cfg := DefaultConfig()
		cfg.Device = c.name
		if err := cfg.Validate(); (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "train.device") {
			t.Errorf("Validate with train.device = %q: %v", c.name, err)
		}
	}
	if DefaultConfig().Device != "cpu" {
		t.Errorf("default train.device = %q, want cpu", DefaultConfig().Device)
	}
}

// This machine's libtorch is a CPU build: asking for CUDA must fail
// clearly, before any training, in Run, checkpoint.Load and Bench alike.
func TestCUDAUnavailableIsAClearError(t *testing.T) {
	if dev, err := torchx.ResolveDevice("cpu"); err != nil || dev != gotch.CPU {
		t.Fatalf(`torchx.ResolveDevice("cpu") = %v, %v`, dev, err)
	}
	if gotch.CUDA.IsAvailable() {
		t.Skip("CUDA is available here")
	}
	for _, name := range []string{"cuda", "cuda:1"} {
		_, err := torchx.ResolveDevice(name)
		if err == nil || !strings.Contains(err.Error(), "CUDA is not available") || !strings.Contains(err.Error(), name) {
			t.Errorf("torchx.ResolveDevice(%q) = %v, want a CUDA-unavailable error naming it", name, err)
		}
	}
	cfg, mcfg, lcfg := smallRun()
	cfg.Device = "cuda"
	dir := t.TempDir()
	err := Run(context.Background(), cfg, mcfg, lcfg, textSource{ids: opticks(t, 2000), rows: 24}, dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "CUDA is not available") {
		t.Errorf("Run with train.device = cuda: %v, want a CUDA-unavailable error", err)
	}
	if _, _, _, err := checkpoint.Load(dir, "cuda:0"); err == nil || !strings.Contains(err.Error(), "CUDA is not available") {
		t.Errorf("checkpoint.Load(cuda:0): %v, want a CUDA-unavailable error", err)
	}
	_, err = Bench(BenchConfig{Model: model.Config{Preset: "nano", Vocab: 64}, Seq: 8, Batch: 1, Steps: 1, Device: "cuda"})
	if err == nil || !strings.Contains(err.Error(), "CUDA is not available") {
		t.Errorf("Bench on cuda: %v, want a CUDA-unavailable error", err)
	}
}
