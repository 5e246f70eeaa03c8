package progress

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestETA(t *testing.T) {
	cases := []struct {
		elapsed     time.Duration
		done, total int
		want        time.Duration
	}{
		{10 * time.Second, 1, 4, 30 * time.Second},
		{10 * time.Second, 0, 4, 0},
		{10 * time.Second, 4, 4, 0},
		{10 * time.Second, 1, math.MaxInt64, math.MaxInt64}, // no wrap to a negative
	}
	for _, c := range cases {
		if got := ETA(c.elapsed, c.done, c.total); got != c.want {
			t.Errorf("ETA(%v, %d, %d) = %v, want %v", c.elapsed, c.done, c.total, got, c.want)
		}
	}
}

func TestTerminalBarRedrawsInPlace(t *testing.T) {
	var buf bytes.Buffer
	b := NewTo(&buf, true, "train", 10, 0)
	clock := b.start
	b.now = func() time.Time { return clock }
	clock = clock.Add(time.Second)
	b.Update(5, "loss=1.0")
	clock = clock.Add(time.Second)
	b.Update(10, "loss=0.5")
	b.Done()
	out := buf.String()
	if strings.Count(out, "\r") != 2 || !strings.Contains(out, "10/10") || !strings.HasSuffix(out, "\n") {
		t.Errorf("terminal output %q: want two in-place redraws ending 10/10 and a newline", out)
	}
	if !strings.Contains(out, "5/10") || !strings.Contains(out, "eta 1s") {
		t.Errorf("terminal output %q: want 5/10 with eta 1s", out)
	}
}

func TestPlainModeThrottles(t *testing.T) {
	var buf bytes.Buffer
	b := NewTo(&buf, false, "train", 100, time.Minute)
	clock := b.start
	b.now = func() time.Time { return clock }
	b.Update(1, "")
	b.Update(2, "") // within the interval: no line
	if buf.Len() != 0 {
		t.Errorf("plain mode wrote to the terminal writer: %q", buf.String())
	}
	if !b.last.Equal(clock) {
		t.Errorf("first update was not reported")
	}
}

// An unknown total (a stream) is throttled like work in progress, not
// reported on every update as finished work would be.
func TestUnknownTotalThrottles(t *testing.T) {
	var buf bytes.Buffer
	b := NewTo(&buf, true, "read", 0, time.Minute)
	clock := b.start.Add(time.Second)
	b.now = func() time.Time { return clock }
	b.Update(1, "")
	first := buf.Len()
	b.Update(2, "") // same instant: throttled
	if first == 0 || buf.Len() != first {
		t.Errorf("unknown total: first update wrote %d bytes, second %d more (want >0, 0)", first, buf.Len()-first)
	}
}
