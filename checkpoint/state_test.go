package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadState is what every reader of state.json shares: a missing file is
// fs.ErrNotExist (a Hugging Face directory), a damaged one is named, and
// ReadLoRAState says no to both and to a full checkpoint.
func TestReadState(t *testing.T) {
	for _, tc := range []struct {
		name, state string // "" writes no state.json
		wantErr     string
		missing     bool
		step        int
		lora        bool
	}{
		{name: "hugging face directory", missing: true, wantErr: "no such file"},
		{name: "corrupt", state: `{"step": 3`, wantErr: "state.json is corrupt"},
		{name: "full checkpoint", state: `{"step": 3, "sha256": {"model.safetensors": "ab"}}`, step: 3},
		{name: "lora checkpoint", state: `{"step": 5, "lora_base": {"source": "base"}}`, step: 5, lora: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.state != "" {
				if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(tc.state), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st, err := ReadState(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("err %v, want one naming %s and %q", err, dir, tc.wantErr)
				}
				if got := errors.Is(err, fs.ErrNotExist); got != tc.missing {
					t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tc.missing)
				}
			} else if err != nil || st.Step != tc.step {
				t.Fatalf("step %d, err %v; want step %d", st.Step, err, tc.step)
			}
			if _, ok := ReadLoRAState(dir); ok != tc.lora {
				t.Errorf("ReadLoRAState ok = %v, want %v", ok, tc.lora)
			}
		})
	}
}
