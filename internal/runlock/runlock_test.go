package runlock

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// deadPID is the PID of a process that has exited (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	return cmd.Process.Pid
}

func writeHolder(t *testing.T, dir string, h Holder) {
	t.Helper()
	raw, _ := json.Marshal(h)
	if err := os.WriteFile(filepath.Join(dir, FileName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLock(t *testing.T) {
	host := hostname()
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		existing func(t *testing.T) *Holder // nil: no lock file
		wantHeld string                     // "" when Acquire must succeed
	}{
		{"free", func(*testing.T) *Holder { return nil }, ""},
		{"live holder on this host", func(*testing.T) *Holder {
			// The parent of this test process: alive, and not us.
			return &Holder{PID: os.Getppid(), Host: host, Started: since}
		}, "in use by memo process"},
		{"stale holder on this host", func(t *testing.T) *Holder {
			return &Holder{PID: deadPID(t), Host: host, Started: since}
		}, ""},
		{"holder on another host", func(t *testing.T) *Holder {
			return &Holder{PID: deadPID(t), Host: "node-elsewhere", Started: since}
		}, "on node-elsewhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if h := tc.existing(t); h != nil {
				writeHolder(t, dir, *h)
			}
			l, err := Acquire(dir)
			if tc.wantHeld != "" {
				var held *HeldError
				if !errors.As(err, &held) {
					t.Fatalf("Acquire: %v, want a HeldError", err)
				}
				if !strings.Contains(err.Error(), tc.wantHeld) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("message %q does not say %q and name %s", err, tc.wantHeld, dir)
				}
				return
			}
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, FileName))
			if err != nil {
				t.Fatal(err)
			}
			var h Holder
			if err := json.Unmarshal(raw, &h); err != nil || h.PID != os.Getpid() || h.Host != host {
				t.Fatalf("lock file %s (%v): want PID %d on %s", raw, err, os.Getpid(), host)
			}
			// A second Acquire by this same (live) process is refused.
			if _, err := Acquire(dir); err == nil {
				t.Fatal("second Acquire of a held lock succeeded")
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName)); !os.IsNotExist(err) {
				t.Fatalf("lock file after Release: %v", err)
			}
			left, _ := filepath.Glob(filepath.Join(dir, FileName+"*"))
			if len(left) > 0 {
				t.Fatalf("files left behind: %v", left)
			}
		})
	}
}

// TestReleaseKeepsAnotherLock: a lock that changed hands is not removed by
// the old holder's Release.
func TestReleaseKeepsAnotherLock(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeHolder(t, dir, Holder{PID: os.Getppid(), Host: hostname()})
	if err := l.Release(); err == nil {
		t.Fatal("Release removed a lock it no longer held")
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Fatalf("the other holder's lock is gone: %v", err)
	}
}

// TestStaleAfter: with AcquireStaleAfter, a lock held from another host is
// taken over once its file has not been touched for the given time, and
// refused while it is fresh; Touch keeps it fresh.
func TestStaleAfter(t *testing.T) {
	dir := t.TempDir()
	other := Holder{PID: os.Getpid(), Host: "another-node", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	writeHolder(t, dir, other)
	path := filepath.Join(dir, FileName)
	old := time.Now().Add(-10 * time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if _, err := AcquireStaleAfter(dir, time.Hour); !errors.As(err, &held) || held.Holder.Host != "another-node" {
		t.Fatalf("lock untouched for 10 min, stale after 1 h: %v, want held by another-node", err)
	}
	l, err := AcquireStaleAfter(dir, 5*time.Minute)
	if err != nil {
		t.Fatalf("lock untouched for 10 min, stale after 5 min: %v, want it taken over", err)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := l.Touch(); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireStaleAfter(dir, 5*time.Minute); !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Errorf("touched lock: %v, want held by this process", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A live holder on this host keeps its lock however old its heartbeat (a
// stopped process is not a dead one); a dead one loses it at once.
func TestStaleAfterSameHostByPID(t *testing.T) {
	dir := t.TempDir()
	writeHolder(t, dir, Holder{PID: os.Getppid(), Host: hostname()})
	path := filepath.Join(dir, FileName)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if _, err := AcquireStaleAfter(dir, time.Minute); !errors.As(err, &held) {
		t.Fatalf("live holder on this host, heartbeat an hour old: %v, want it held", err)
	}
	writeHolder(t, dir, Holder{PID: deadPID(t), Host: hostname()})
	l, err := AcquireStaleAfter(dir, time.Hour)
	if err != nil {
		t.Fatalf("dead holder on this host, fresh heartbeat: %v, want it taken over", err)
	}
	_ = l.Release()
}

// Heartbeat keeps a held lock fresh for other hosts, and the refusal states
// the staleness after which they would take it.
func TestHeartbeat(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	stop := l.Heartbeat(10 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for untouchedFor(path) > time.Minute && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if d := untouchedFor(path); d > time.Minute {
		t.Fatalf("heartbeat did not touch the lock: untouched for %v", d)
	}
	// Seen from another host: fresh, so held, and the message says when
	// it would not be.
	raw, _ := os.ReadFile(path)
	var h Holder
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	_, err = acquire(dir, Holder{PID: 1, Host: "another-node"}, 5*time.Minute)
	var held *HeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "taken over after 5m0s without one") {
		t.Fatalf("fresh lock from another host: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestWait: Wait waits while a live process holds the lock, takes it once
// the holder lets go, and gives up with ctx's error when ctx ends first.
func TestWait(t *testing.T) {
	dir := t.TempDir()
	live := Holder{PID: os.Getpid(), Host: hostname(), Started: time.Now().UTC()}
	writeHolder(t, dir, live)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if l, err := Wait(ctx, dir, time.Minute, "waiting"); !errors.Is(err, context.DeadlineExceeded) || l != nil {
		t.Fatalf("held lock: Wait = %v, %v; want context.DeadlineExceeded", l, err)
	}

	var released atomic.Bool
	go func() {
		time.Sleep(300 * time.Millisecond)
		released.Store(true) // before the removal Wait may see at once
		_ = os.Remove(filepath.Join(dir, FileName))
	}()
	start := time.Now()
	l, err := Wait(context.Background(), dir, time.Minute, "waiting")
	if err != nil {
		t.Fatal(err)
	}
	if !released.Load() {
		t.Fatalf("Wait took the lock after %v, before its holder let go", time.Since(start))
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestIsLeftover(t *testing.T) {
	for name, want := range map[string]bool{
		"memo.lock.tmp-1234567": true,
		"memo.lock.stale-42":    true,
		"memo.lock":             false,
		"memo.lock.tmp-":        false,
		"memo.lock.tmp-12a":     false,
		"other.lock.tmp-1":      false,
		".memo.lock.tmp-1":      false,
	} {
		if got := IsLeftover(name); got != want {
			t.Errorf("IsLeftover(%q) = %v, want %v", name, got, want)
		}
	}
}
