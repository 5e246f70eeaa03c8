package experiments

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Point result statuses.
const (
	PointDone    = "done"
	PointSkipped = "skipped" // finished before this sweep started
	PointFailed  = "failed"
	// PointInterrupted is a run stopped by SIGINT or SIGTERM: it resumes.
	PointInterrupted = "interrupted"
	// PointNotStarted is a run the sweep was stopped before starting.
	PointNotStarted = "not started"
)

// PointResult is how one grid point of a local sweep ended.
type PointResult struct {
	Name    string
	Dir     string
	Log     string
	Status  string
	Err     error
	Seconds float64
}

// SweepOptions adjust RunSweep.
type SweepOptions struct {
	// Jobs is how many runs go at once (>= 1).
	Jobs int
	// Exe is the memo binary each run executes (`Exe run --runs DIR SPEC`).
	Exe string
	// Args are extra arguments after `run`, e.g. --threads 1.
	Args []string
	// Force is passed on as --force.
	Force bool
	// Progress, when set, gets one line per started and finished run.
	Progress io.Writer
}

// RunSweep runs every grid point of a sweep as a subprocess of the memo
// binary, Jobs at a time. A failing run does not stop the others; runs that
// already finished are skipped. Each run's output goes to logs/<point>.log.
func RunSweep(ctx context.Context, spec *Spec, runsRoot string, opt SweepOptions) (string, []PointResult, error) {
	dir, pts, err := PrepareSweep(spec, runsRoot, opt.Force)
	if err != nil {
		return "", nil, err
	}
	if opt.Jobs < 1 {
		opt.Jobs = 1
	}
	if opt.Exe == "" {
		if opt.Exe, err = os.Executable(); err != nil {
			return dir, nil, fmt.Errorf("find the memo binary: %w", err)
		}
	}
	progress := opt.Progress
	if progress == nil {
		progress = io.Discard
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(progress, format+"\n", args...)
	}
	results := make([]PointResult, len(pts))
	sem := make(chan struct{}, opt.Jobs)
	// trained[name] closes when point name has ended: the points that
	// reuse its training wait for it, before taking a job slot.
	trained := map[string]chan struct{}{}
	for _, p := range pts {
		trained[p.Name] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for i, p := range pts {
		res := &results[i]
		res.Name, res.Dir = p.Name, filepath.Join(dir, p.Name)
		res.Log = filepath.Join(dir, "logs", p.Name+".log")
		// Skipped only whole: a point whose outputs were deleted or
		// changed since is run again, and its stages redo what is broken
		// (its own report had left it out as unfinished).
		if finishedIntact(p.Spec, res.Dir) {
			res.Status = PointSkipped
			close(trained[p.Name])
			say("[%d/%d] %s: already finished", i+1, len(pts), p.Name)
			continue
		}
		wg.Add(1)
		go func(i int, p Point) {
			defer wg.Done()
			defer close(trained[p.Name])
			args := opt.Args
			if p.Reuses != "" {
				select {
				case <-trained[p.Reuses]:
				case <-ctx.Done():
					res.Status = PointNotStarted
					return
				}
				// Whether that run got as far as a trained model (it may
				// have failed later, in its own attack) is for the linking
				// to check, against its manifest.
				args = append(append([]string(nil), args...), "--reuse-train", filepath.Join(dir, p.Reuses))
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res.Status = PointNotStarted
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				// Both cases of the select were ready (a slot freed as the
				// sweep stopped) and Go picked the slot.
				res.Status = PointNotStarted
				return
			}
			say("[%d/%d] %s: started (log %s)", i+1, len(pts), p.Name, res.Log)
			if p.Reuses != "" {
				say("[%d/%d] %s: attacks the model %s trained (only extract, eval, plots or mia settings differ)", i+1, len(pts), p.Name, p.Reuses)
			}
			start := time.Now()
			res.Err = runPoint(ctx, opt, args, dir, filepath.Join(dir, "specs", p.Name+".toml"), res.Log)
			res.Seconds = time.Since(start).Seconds()
			if res.Err != nil && ctx.Err() != nil {
				res.Status = PointInterrupted
				say("[%d/%d] %s: interrupted after %.0f s: %v (see %s)", i+1, len(pts), p.Name, res.Seconds, res.Err, res.Log)
				return
			}
			if res.Err != nil {
				res.Status = PointFailed
				say("[%d/%d] %s: FAILED after %.0f s: %v (see %s)", i+1, len(pts), p.Name, res.Seconds, res.Err, res.Log)
				return
			}
			res.Status = PointDone
			say("[%d/%d] %s: done in %.0f s", i+1, len(pts), p.Name, res.Seconds)
		}(i, p)
	}
	wg.Wait()
	return dir, results, nil
}

func runPoint(ctx context.Context, opt SweepOptions, extra []string, sweepDir, spec, logPath string) error {
	// Appended to, not truncated: a failed attempt's log stays above the
	// next one's, each under a line saying when it started.
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append([]string{"run", "--runs", sweepDir}, extra...)
	if opt.Force {
		args = append(args, "--force")
	}
	args = append(args, spec)
	cmd := exec.CommandContext(ctx, opt.Exe, args...)
	if _, err := fmt.Fprintf(logf, "== memo sweep, %s: %s\n", time.Now().UTC().Format(time.RFC3339), cmd.String()); err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// A sweep killed outright (SIGKILL, an out-of-memory kill) cannot
	// forward a signal; the kernel sends its runs SIGINT instead, so that
	// none trains on unseen, holding its run's lock.
	cmd.SysProcAttr = interruptWhenParentDies()
	// Let a cancelled sweep stop its runs cleanly: SIGINT first, so training
	// can finish its step, then SIGKILL after a grace period.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	slog.Debug("sweep point", "cmd", cmd.String())
	if err := cmd.Run(); err != nil {
		if last := lastErrorLine(logPath); last != "" {
			return fmt.Errorf("%w: %s", err, last)
		}
		return err
	}
	return nil
}

// lastErrorLine finds the one-line error memo printed last in a run's log,
// so the sweep summary says why a run failed without opening the log.
func lastErrorLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-20; i-- {
		if strings.HasPrefix(lines[i], "memo: ") || strings.HasPrefix(lines[i], "panic: ") {
			return strings.TrimPrefix(lines[i], "memo: ")
		}
	}
	return ""
}

// Summary is a one-line-per-point account of a sweep for the terminal.
func Summary(results []PointResult) string {
	var done, skipped, failed, interrupted, notStarted int
	out := ""
	for _, r := range results {
		switch r.Status {
		case PointDone:
			done++
		case PointSkipped:
			skipped++
		case PointInterrupted:
			interrupted++
		case PointNotStarted:
			notStarted++
		default:
			failed++
		}
		line := fmt.Sprintf("  %-11s %s", r.Status, r.Name)
		if r.Seconds > 0 {
			line += fmt.Sprintf(" (%.0f s)", r.Seconds)
		}
		if r.Err != nil {
			line += ": " + r.Err.Error() + " (log: " + r.Log + ")"
		}
		out += line + "\n"
	}
	head := fmt.Sprintf("sweep: %d done, %d already finished, %d failed", done, skipped, failed)
	if interrupted > 0 {
		head += fmt.Sprintf(", %d interrupted (the same command resumes them)", interrupted)
	}
	if notStarted > 0 {
		head += fmt.Sprintf(", %d not started", notStarted)
	}
	return head + "\n" + out
}
