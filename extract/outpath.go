package extract

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
)

// CheckOut refuses, before any work, an --out that would replace a file
// this attack does not own: a directory, a file not named .arrow, anything
// in a checkpoint's directory or a run's data/, and an existing file (or
// its guesses.arrow) that is not completions of the same checkpoint under
// the same settings. runOwn says out is a run's own completions.arrow and
// this attack is the run's own (its newest checkpoint, its settings).
func CheckOut(out, ckpt string, cfg Config, runOwn bool) error {
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return badinput.Errorf("extract: --out %s is a directory: want a FILE ending in .arrow (NAME.completions.arrow by convention)", out)
	}
	if !strings.HasSuffix(out, ".arrow") {
		return badinput.Errorf("extract: --out %s: want a FILE ending in .arrow (completions are Arrow IPC; NAME.completions.arrow by convention)", out)
	}
	dir := filepath.Dir(out)
	if err := outguard.Place("extract: --out "+out, dir); err != nil {
		return err
	}
	if runOwn {
		return nil // the run's own attack owns the run's own file
	}
	if filepath.Base(out) == runfiles.CompletionsFile && outguard.IsRunDir(dir) {
		return badinput.Errorf("extract: --out %s is the run's own completions (its newest checkpoint under its config.toml settings); this attack is another: name another file", out)
	}
	if outguard.Exists(out) {
		if err := sameAttack(out, ckpt, cfg); err != nil {
			return err
		}
	} else if g := runfiles.GuessesPath(out); outguard.Exists(g) {
		if _, err := runfiles.ReadGuesses(g); err != nil {
			return badinput.Errorf("extract: --out %s would replace %s, which is not guesses memo extract wrote: name another file", out, g)
		}
	}
	return nil
}

// sameAttack checks that the completions at path are of checkpoint ckpt
// under cfg, so that writing them again replaces nothing else.
func sameAttack(path, ckpt string, cfg Config) error {
	_, meta, err := runfiles.ReadCompletions(path)
	if err != nil {
		return badinput.Errorf("extract: --out %s exists and is not completions memo extract wrote: name another file", path)
	}
	abs, err := filepath.Abs(ckpt)
	if err != nil {
		abs = ckpt
	}
	if got := meta[provenance.Checkpoint]; got != abs {
		return badinput.Errorf("extract: --out %s holds the attack of checkpoint %s, not %s: name another file or delete it", path, got, abs)
	}
	want, err := settingsJSON(cfg)
	if err != nil {
		return err
	}
	var stored Config
	if err := json.Unmarshal([]byte(meta[provenance.Extract]), &stored); err != nil {
		return badinput.Errorf("extract: --out %s records no readable attack settings: name another file", path)
	}
	// As recorded now: an older memo recorded the warpers of sampling
	// under greedy decoding too.
	stored = stored.recorded()
	stored.BatchSize = 0
	got, _ := json.Marshal(stored) // a Config always encodes
	if !bytes.Equal(got, want) {
		return badinput.Errorf("extract: --out %s holds an attack of %s with other settings: name another file or delete it", path, abs)
	}
	return nil
}

// settingsJSON is cfg as extract records it in the completions, without
// the batch size (which does not change them), round-tripped through
// Config so that it compares equal to a recorded copy.
func settingsJSON(cfg Config) ([]byte, error) {
	r, err := cfg.Resolved()
	if err != nil {
		return nil, badinput.Errorf("extract: %w", err)
	}
	b, err := json.Marshal(r.recorded())
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	c.BatchSize = 0
	return json.Marshal(c)
}
