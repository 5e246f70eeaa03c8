package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/runlock"
)

// TestRunLocksItsDirectory: a run directory held by a live process on this
// host is refused before any stage runs, naming the holder; one held by a
// process that is gone is taken over; the lock is gone after the run, also
// after --force moved the old run aside.
func TestRunLocksItsDirectory(t *testing.T) {
	host, _ := os.Hostname()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	for _, tc := range []struct {
		name    string
		holder  *runlock.Holder
		force   bool
		refused bool
	}{
		{"live holder", &runlock.Holder{PID: os.Getppid(), Host: host}, false, true},
		{"live holder, --force", &runlock.Holder{PID: os.Getppid(), Host: host}, true, true},
		{"stale holder", &runlock.Holder{PID: gone.Process.Pid, Host: host}, false, false},
		{"no holder, --force over another spec", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			none := ""
			fakeStages(t, &calls, &none)
			root := t.TempDir()
			dir := filepath.Join(root, "mini")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.force {
				other, _ := ParseBytes("mini.toml", []byte(strings.Replace(miniSpec, "k = 4", "k = 8", 1)))
				if _, err := Run(context.Background(), other, root, Options{}); err != nil {
					t.Fatal(err)
				}
				calls = nil
			}
			if tc.holder != nil {
				raw, _ := json.Marshal(tc.holder)
				if err := os.WriteFile(filepath.Join(dir, runlock.FileName), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spec, _ := ParseBytes("mini.toml", []byte(miniSpec))
			_, err := Run(context.Background(), spec, root, Options{Force: tc.force})
			if tc.refused {
				var held *runlock.HeldError
				if !errors.As(err, &held) || !strings.Contains(err.Error(), "in use by memo process") {
					t.Fatalf("err = %v, want the run refused naming the holder", err)
				}
				if len(calls) != 0 {
					t.Fatalf("a refused run called %v", calls)
				}
				if old, _ := filepath.Glob(filepath.Join(root, "mini.old-*")); len(old) != 0 {
					t.Fatalf("a refused --force moved the held run aside: %v", old)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Without reference models the references stage calls nothing.
			want := slices.DeleteFunc(slices.Clone(Stages), func(s string) bool { return s == "references" })
			if !reflect.DeepEqual(calls, want) {
				t.Fatalf("calls = %v, want %v", calls, want)
			}
			left, _ := filepath.Glob(filepath.Join(root, "*", runlock.FileName+"*"))
			if len(left) != 0 {
				t.Fatalf("lock files left after the run: %v", left)
			}
		})
	}
}
