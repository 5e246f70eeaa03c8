package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLatestOutsideTheRun: a latest file that names a path instead of a
// checkpoint directory beside it is refused, never followed out of the run;
// the run's own newest checkpoint that verifies is used.
func TestLatestOutsideTheRun(t *testing.T) {
	run := copyRun(t)
	good := filepath.Join(run, DirName, StepName(2))
	// Outside the run, a checkpoint that verifies: following latest to it
	// would attack or resume another run's model.
	elsewhere := filepath.Join(t.TempDir(), "other", DirName)
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", good, filepath.Join(elsewhere, StepName(9))).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rel, err := filepath.Rel(filepath.Join(run, DirName), filepath.Join(elsewhere, StepName(9)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{rel, filepath.Join(elsewhere, StepName(9)), "..", "."} {
		if err := os.WriteFile(filepath.Join(run, DirName, LatestFile), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _, err := LatestGood(run)
		if err != nil || got != good {
			t.Errorf("latest = %q: LatestGood = %s, %v; want %s", name, got, err, good)
		}
	}
	// With no checkpoint of its own, the run has none: the error says why.
	if err := os.RemoveAll(good); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LatestGood(run); err == nil || !strings.Contains(err.Error(), "not a checkpoint directory of") {
		t.Errorf("only an outside latest: err = %v, want it refused by name", err)
	}
}
