// Package progress reports a long loop's progress: a bar with ETA redrawn
// in place on a terminal, plain periodic log lines otherwise (CI, Slurm
// logs), so logs stay readable.
package progress

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar tracks done out of total units of work; a total <= 0 is unknown
// (a streamed input): the bar counts, throttled, and shows no ETA.
type Bar struct {
	mu       sync.Mutex
	label    string
	total    int
	start    time.Time
	out      io.Writer
	tty      bool
	every    time.Duration
	last     time.Time
	lastLine int
	now      func() time.Time
}

// New starts a bar for total units on stderr. On a terminal it redraws at
// most 10 times a second; elsewhere it logs a line every 30 seconds.
func New(label string, total int) *Bar {
	return NewTo(os.Stderr, isTerminal(os.Stderr), label, total, 30*time.Second)
}

// NewTo is New with the writer, the terminal choice and the log interval
// given (for tests and callers with their own output).
func NewTo(out io.Writer, tty bool, label string, total int, every time.Duration) *Bar {
	b := &Bar{label: label, total: total, out: out, tty: tty, every: every, now: time.Now}
	b.start = b.now()
	if tty {
		b.every = 100 * time.Millisecond
	}
	return b
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Update reports done units and a short status ("loss=2.31"); it draws or
// logs only when the interval has passed or the work is complete.
func (b *Bar) Update(done int, status string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if (b.total <= 0 || done < b.total) && now.Sub(b.last) < b.every {
		return
	}
	b.last = now
	elapsed := now.Sub(b.start)
	eta := ETA(elapsed, done, b.total)
	if !b.tty {
		slog.Info(b.label, "done", done, "total", b.total, "elapsed", elapsed.Round(time.Second).String(),
			"eta", eta.Round(time.Second).String(), "status", status)
		return
	}
	const width = 30
	filled := 0
	if b.total > 0 {
		filled = min(width, width*done/b.total)
	}
	line := fmt.Sprintf("%s [%s%s] %d/%d %s eta %s %s", b.label, strings.Repeat("=", filled),
		strings.Repeat(" ", width-filled), done, b.total, elapsed.Round(time.Second), eta.Round(time.Second), status)
	pad := ""
	if n := b.lastLine - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	b.lastLine = len(line)
	fmt.Fprintf(b.out, "\r%s%s", line, pad)
}

// Done ends the bar's line on a terminal.
func (b *Bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty && b.lastLine > 0 {
		fmt.Fprintln(b.out)
		b.lastLine = 0
	}
}

// ETA extrapolates the remaining time from the rate so far; 0 when nothing
// is done yet or everything is. An ETA past what a Duration holds (292
// years) is that, not the negative the conversion wrapped to.
func ETA(elapsed time.Duration, done, total int) time.Duration {
	if done <= 0 || done >= total {
		return 0
	}
	eta := float64(elapsed) * float64(total-done) / float64(done)
	if eta >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(eta)
}
