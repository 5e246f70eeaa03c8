package checkpoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/filehash"
	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/model"
)

// TestSourceDigestCoversShards: the digest of a sharded Hugging Face base
// (a reference model's cache key, a LoRA checkpoint's base record) moves
// when a shard is rewritten in place; it named the index alone before,
// which a shard's new contents leave as it was. A single-file directory
// keeps the file's own digest, and a LoRA record of the index alone (a
// checkpoint written before) still checks.
func TestSourceDigestCoversShards(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"model_type": "llama", "vocab_size": 64, "hidden_size": 16, "intermediate_size": 32,
		"num_hidden_layers": 2, "num_attention_heads": 2, "max_position_embeddings": 32})
	cfg, err := model.FromHF(raw)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeRandomShards(t, dir, cfg, raw)
	before, err := SourceDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := filehash.SHA256(filepath.Join(dir, safetensors.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if before == legacy {
		t.Fatal("the digest is the index's alone")
	}

	// Rewrite the last weight of the second shard, keeping its size.
	shard := filepath.Join(dir, "model-00002-of-00002.safetensors")
	b, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x40
	if err := os.WriteFile(shard, b, 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := SourceDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("a rewritten shard left the digest at %s", after)
	}

	for _, tt := range []struct {
		name, sum, want string
	}{
		{"current digest", after, ""},
		{"digest before the rewrite", before, "the base changed"},
		{"index-only record of an older checkpoint", legacy, ""},
		{"no digest recorded", "", "the base changed"},
	} {
		err := (&LoRABase{Source: dir, SHA256: tt.sum}).Check()
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check = %v, want %q", tt.name, err, tt.want)
		}
	}

	single := filepath.Join("..", "testdata", "hf", "llama-gqa-tied")
	got, err := SourceDigest(single)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filehash.SHA256(filepath.Join(single, ModelFile)); got != want {
		t.Errorf("single-file digest %s, want the file's own %s", got, want)
	}
	if err := (&LoRABase{Source: single}).Check(); err == nil {
		t.Error("a single-file base with no digest recorded passed its check")
	}
	if got := LegacySourceDigests(dir); len(got) != 1 || got[0] != legacy {
		t.Errorf("LegacySourceDigests(sharded) = %v, want the index's %s", got, legacy)
	}
	if got := LegacySourceDigests(single); got != nil {
		t.Errorf("LegacySourceDigests(single file) = %v, want none", got)
	}
}

// TestWeightsDigest: what an audit records of the weights it scored is a
// Hugging Face directory's digest (as a LoRA base's), a memo checkpoint's
// recorded one, and a LoRA checkpoint's adapters' with its base's.
func TestWeightsDigest(t *testing.T) {
	single := filepath.Join("..", "testdata", "hf", "llama-gqa-tied")
	want, err := SourceDigest(single)
	if err != nil {
		t.Fatal(err)
	}
	memo := t.TempDir()
	writeState := func(st State) {
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(memo, StateFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name          string
		dir           string
		state         *State
		weights, base string
	}{
		{"Hugging Face directory", single, nil, want, ""},
		{"memo checkpoint", memo, &State{SHA256: map[string]string{ModelFile: "aa", OptimizerFile: "bb"}}, "aa", ""},
		{"LoRA checkpoint", memo, &State{SHA256: map[string]string{PEFTWeightsFile: "cc"}, LoRABase: &LoRABase{SHA256: "dd"}}, "cc", "dd"},
	} {
		if tt.state != nil {
			writeState(*tt.state)
		}
		weights, base, err := WeightsDigest(tt.dir)
		if err != nil || weights != tt.weights || base != tt.base {
			t.Errorf("%s: WeightsDigest = %q, %q, %v; want %q, %q", tt.name, weights, base, err, tt.weights, tt.base)
		}
	}
}
