package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWhole: a LoRA checkpoint (adapters only) is refused as weights
// to start from, by its state.json alone; a whole checkpoint, a Hugging
// Face directory and a directory that is no checkpoint (left to the reads
// that follow) pass.
func TestCheckWhole(t *testing.T) {
	dir := func(state string) string {
		d := t.TempDir()
		if state != "" {
			if err := os.WriteFile(filepath.Join(d, StateFile), []byte(state), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	tests := []struct {
		name, dir, want string
	}{
		{"lora checkpoint", dir(`{"step": 6, "lora_base": {"source": ""}}`), "is a LoRA checkpoint (adapters only)"},
		{"whole checkpoint", dir(`{"step": 6}`), ""},
		{"hugging face directory", filepath.Join("..", "testdata", "hf", "llama-gqa-tied"), ""},
		{"no state.json", dir(""), ""},
	}
	for _, tt := range tests {
		err := CheckWhole(tt.dir)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: CheckWhole = %v, want %q", tt.name, err, tt.want)
		}
	}
}
