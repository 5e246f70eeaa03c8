// Package runlock is an advisory lock on a run directory, so that a second
// `memo run` on the same directory refuses instead of doing all the work a
// second time beside the first.
//
// The lock is a file, dir/memo.lock, holding the holder's PID, host and start
// time as JSON. It is created with a hard link from a private temporary
// file, which is atomic on local file systems and on NFS alike (flock is not
// reliable on the network file systems clusters use, and would not say who
// holds the lock). A lock whose holder ran on this host and no longer exists
// is stale: the next Acquire takes it over and logs that it did; one whose
// holder lives is never taken over. A lock held from another host, whose
// PID cannot be checked from here, is taken over only by AcquireStaleAfter,
// once its holder's heartbeat (Heartbeat or Touch, which keep the file's
// modification time fresh) has been silent for the stated staleness.
package runlock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/memo-research/memo/internal/atomicfile"
)

// FileName is the lock file in a run directory.
const FileName = "memo.lock"

// Holder is what the lock file records.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// HeldError is returned by Acquire when another process holds the lock.
type HeldError struct {
	Path   string
	Holder Holder
	// StaleAfter, when > 0, is the heartbeat silence after which another
	// host's lock is taken over; Beat is the holder's last heartbeat.
	StaleAfter time.Duration
	Beat       time.Time
	Remote     bool // the holder is on another host
}

func (e *HeldError) Error() string {
	if e.StaleAfter > 0 && e.Remote {
		return fmt.Sprintf("%s is in use by memo process %d on %s since %s, last heartbeat %s ago (taken over after %v without one; remove %s if that process is gone)",
			filepath.Dir(e.Path), e.Holder.PID, e.Holder.Host, e.Holder.Started.Format(time.RFC3339),
			time.Since(e.Beat).Truncate(time.Second), e.StaleAfter, e.Path)
	}
	return fmt.Sprintf("%s is in use by memo process %d on %s since %s (remove %s if that process is gone)",
		filepath.Dir(e.Path), e.Holder.PID, e.Holder.Host, e.Holder.Started.Format(time.RFC3339), e.Path)
}

// IsLeftover reports whether name, a file beside a lock file, is one that
// taking the lock writes for an instant (the file linked into place, or a
// stale lock moved aside): one that outlives that instant was left by a
// process that died then.
func IsLeftover(name string) bool {
	for _, infix := range []string{tempInfix, staleInfix} {
		if rest, ok := strings.CutPrefix(name, FileName+infix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

// The names IsLeftover knows: FileName+tempInfix+random digits
// (os.CreateTemp) and FileName+staleInfix+PID.
const (
	tempInfix  = ".tmp-"
	staleInfix = ".stale-"
)

// Lock is a held lock; Release gives it up.
type Lock struct {
	path string
	raw  []byte
}

// hostname is the host recorded in and compared with lock files.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}

// alive reports whether process pid exists on this host. EPERM means it
// exists under another user.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Acquire takes the lock of dir (which must exist) for this process.
func Acquire(dir string) (*Lock, error) {
	return acquire(dir, Holder{PID: os.Getpid(), Host: hostname(), Started: time.Now().UTC().Truncate(time.Second)}, 0)
}

// AcquireStaleAfter is Acquire for locks whose holder keeps the lock file's
// modification time fresh with Heartbeat or Touch: a lock held from another
// host and untouched for longer than staleAfter is stale too. This is what
// lets array jobs on a shared file system take over from a node that died,
// whose PID cannot be checked from here. On this host the holder's PID
// decides, whatever its heartbeat: a live holder keeps its lock.
func AcquireStaleAfter(dir string, staleAfter time.Duration) (*Lock, error) {
	return acquire(dir, Holder{PID: os.Getpid(), Host: hostname(), Started: time.Now().UTC().Truncate(time.Second)}, staleAfter)
}

// errChangedHands is acquire's answer when another process took a stale
// lock over at the same moment: trying again settles who holds it.
var errChangedHands = errors.New("the lock changed hands while being taken; try again")

// Wait is AcquireStaleAfter that waits while another live process holds
// the lock, polling five times a second and logging waiting (with the
// holder) every 30 seconds, until it takes the lock or ctx ends (ctx's
// error, unwrapped). It is for work two processes may both need done
// once, a dataset or a reference model: the second waits and then finds
// it done, rather than refusing.
func Wait(ctx context.Context, dir string, staleAfter time.Duration, waiting string) (*Lock, error) {
	var lastSaid time.Time
	for {
		lock, err := AcquireStaleAfter(dir, staleAfter)
		var held *HeldError
		switch {
		case errors.Is(err, errChangedHands): // try again
		case !errors.As(err, &held):
			return lock, err
		case time.Since(lastSaid) > 30*time.Second:
			slog.Info(waiting, "lock", held.Path, "pid", held.Holder.PID, "host", held.Holder.Host, "since", held.Holder.Started)
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Touch marks the lock as alive now (see AcquireStaleAfter).
func (l *Lock) Touch() error {
	now := time.Now()
	return os.Chtimes(l.path, now, now)
}

// Heartbeat touches the lock every interval until stop is called, so that
// other hosts see its holder alive (AcquireStaleAfter).
func (l *Lock) Heartbeat(every time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := l.Touch(); err != nil {
					slog.Warn("run directory lock: heartbeat", "err", err)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done); <-finished })
	}
}

// untouchedFor is how long ago the lock file at path was last touched.
func untouchedFor(path string) time.Duration {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return time.Since(fi.ModTime())
}

func acquire(dir string, me Holder, staleAfter time.Duration) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	raw, err := json.Marshal(me)
	if err != nil {
		return nil, err
	}
	raw = append(raw, '\n')
	tmp, err := os.CreateTemp(dir, FileName+tempInfix+"*")
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	// Readable by the others sharing the directory (os.CreateTemp's 0600
	// kept a group sharing a dataset cache from reading who holds it).
	if err = tmp.Chmod(atomicfile.Mode); err == nil {
		_, err = tmp.Write(raw)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	// Two attempts: the second after taking over a stale lock.
	for attempt := 0; attempt < 2; attempt++ {
		if err := os.Link(tmp.Name(), path); err == nil {
			return &Lock{path: path, raw: raw}, nil
		} else if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		old, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		var h Holder
		if err := json.Unmarshal(old, &h); err != nil {
			// A lock file cut short (its writer died mid-write cannot
			// happen with the link, but a user may have edited it): say so
			// rather than take over a lock that may be live.
			return nil, fmt.Errorf("lock %s: %s is not a memo lock file (%v); remove it if no memo process uses %s", dir, path, err, dir)
		}
		silent := untouchedFor(path)
		var stale bool
		if h.Host == me.Host {
			stale = !alive(h.PID)
		} else {
			stale = staleAfter > 0 && silent > staleAfter
		}
		if attempt > 0 || !stale {
			return nil, &HeldError{Path: path, Holder: h, StaleAfter: staleAfter, Beat: time.Now().Add(-silent), Remote: h.Host != me.Host}
		}
		// Stale: move it aside under a name of our own, and check that what
		// moved is the lock we judged stale (another process may have taken
		// it over between the read and the rename).
		aside := fmt.Sprintf("%s%s%d", path, staleInfix, me.PID)
		if err := os.Rename(path, aside); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("lock %s: take over a stale lock: %w", dir, err)
		}
		moved, _ := os.ReadFile(aside)
		if !bytes.Equal(moved, old) {
			_ = os.Link(aside, path) // put the live lock back
			_ = os.Remove(aside)
			var live Holder
			_ = json.Unmarshal(moved, &live)
			return nil, &HeldError{Path: path, Holder: live}
		}
		_ = os.Remove(aside)
		if h.Host == me.Host {
			slog.Warn("run directory lock: taking over a stale lock; its process is gone", "dir", dir, "pid", h.PID, "host", h.Host, "since", h.Started)
		} else {
			slog.Warn("run directory lock: taking over a lock from another host whose heartbeat stopped", "dir", dir, "pid", h.PID, "host", h.Host, "since", h.Started,
				"silent", silent.Truncate(time.Second).String(), "stale_after", staleAfter.String())
		}
	}
	return nil, fmt.Errorf("lock %s: %w", dir, errChangedHands)
}

// Release removes the lock file if it is still this lock's.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	cur, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, l.raw) {
		return fmt.Errorf("release %s: the lock is no longer ours", l.path)
	}
	return os.Remove(l.path)
}
