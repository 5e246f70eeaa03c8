package experiments

import (
	"os"
	"path/filepath"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := newManifest("x", "abc")
	m.Stage("data").Status = StatusDone
	m.Stage("train")
	if err := m.write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.ConfigHash != "abc" || back.Stage("data").Status != StatusDone || back.Stage("train").Status != StatusPending {
		t.Errorf("manifest round trip = %+v", back)
	}
	if back.Done([]string{"data"}) != true || back.Done([]string{"data", "train"}) {
		t.Error("Done disagrees with the stage statuses")
	}
	if back.Machine.Cores < 1 || back.Versions.Go == "" {
		t.Errorf("machine/versions not recorded: %+v %+v", back.Machine, back.Versions)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if _, err := ReadManifest(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Errorf("missing manifest: err = %v", err)
	}
}
