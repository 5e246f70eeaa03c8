package eval

import (
	"os"
	"path/filepath"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
)

// StatusOK marks a document that was attacked.
const StatusOK = runfiles.StatusOK

// ReadCompletions reads every row of a completions.arrow file.
func ReadCompletions(path string) ([]runfiles.Completion, error) {
	rows, _, err := readCompletions(path)
	return rows, err
}

// readCompletions also returns the schema metadata (extract's config). A
// completions file that is missing or cannot be read is bad input (exit 2
// in the CLI).
func readCompletions(path string) ([]runfiles.Completion, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, badinput.Errorf("read completions: %w (run `memo extract` first)", err)
	}
	defer f.Close()
	rows, meta, err := runfiles.ReadCompletionsFrom(path, f)
	return rows, meta, badinput.Wrap(err)
}

// CompletionsPath is the completions file of p, a run directory or the
// file itself.
func CompletionsPath(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return filepath.Join(p, runfiles.CompletionsFile)
	}
	return p
}

// CompletionsRun is the run directory extract recorded in the completions
// file at path (the run whose model it attacked; "" when none, as for an
// imported model), read from the file's metadata without its rows.
func CompletionsRun(path string) (string, error) {
	meta, err := runfiles.Completions.ReadIPCMeta(path)
	if err != nil {
		return "", badinput.Wrap(err)
	}
	return meta[provenance.Run], nil
}
