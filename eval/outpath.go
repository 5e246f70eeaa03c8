package eval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
)

// CheckOut refuses, before any scoring, output paths that would replace
// files this scoring does not own. A run's own scores.parquet and
// summary.json (beside its config.toml) describe its completions.arrow
// scored under its config.toml [eval] settings (runCfg): only that scoring
// replaces them. Any other existing summary must be eval's scoring of the
// same attack (checkpoint and extract settings as completions records
// them); nothing goes into a checkpoint's directory or a run's data/.
func CheckOut(scores, summary, completions string, cfg, runCfg Config) error {
	dir := filepath.Dir(summary)
	if err := outguard.Place("eval: output", dir); err != nil {
		return err
	}
	for _, p := range []string{scores, summary} {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return badinput.Errorf("eval: output %s is a directory", p)
		}
	}
	if filepath.Base(summary) == runfiles.SummaryFile && outguard.IsRunDir(dir) {
		own := filepath.Join(dir, runfiles.CompletionsFile)
		if !outguard.Same(CompletionsPath(completions), own) {
			return badinput.Errorf("eval: %s is the run's own summary, of %s; these are other completions: give --out DIR outside the run", summary, own)
		}
		if cfg != runCfg {
			return badinput.Errorf("eval: %s is the run's own summary, scored with its config.toml [eval] settings; these differ: give --out DIR outside the run for them", summary)
		}
		return nil
	}
	if outguard.Exists(summary) {
		return sameScoring(summary, completions)
	}
	if outguard.Exists(scores) && !isParquet(scores) {
		return badinput.Errorf("eval: %s exists and is not scores memo eval wrote: give --out DIR", scores)
	}
	return nil
}

// sameScoring checks that the summary at path scored the attack the
// completions record (the same checkpoint and extract settings).
func sameScoring(path, completions string) error {
	b, err := os.ReadFile(path)
	var s Summary
	if err != nil || json.Unmarshal(b, &s) != nil || s.Completions == "" {
		return badinput.Errorf("eval: %s exists and is not a summary memo eval wrote: give --out DIR", path)
	}
	_, meta, err := readCompletions(CompletionsPath(completions))
	if err != nil {
		return err
	}
	if s.Checkpoint != meta[provenance.Checkpoint] || !sameJSON(s.Extract, []byte(meta[provenance.Extract])) {
		return badinput.Errorf("eval: %s scores another attack than %s (another checkpoint or other extract settings): give --out DIR", path, completions)
	}
	return nil
}

// sameJSON compares two JSON texts ignoring layout; empty equals empty.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// isParquet reports whether the file at path starts with Parquet's magic.
func isParquet(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = f.Read(magic[:])
	return err == nil && string(magic[:]) == "PAR1"
}
