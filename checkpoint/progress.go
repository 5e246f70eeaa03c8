package checkpoint

import (
	"fmt"
	"os"
	"time"

	"github.com/memo-research/memo/internal/progress"
)

// progressBytes is the smallest file whose save or load reports progress:
// below it (every CPU-scale model) the line would only be noise.
const progressBytes = 256 << 20

// byteProgress reports a file's bytes done and the rate, in MB, through
// a progress bar (redrawn on a terminal, a log line every 5 s otherwise).
type byteProgress struct {
	bar   *progress.Bar
	start time.Time
}

func newByteProgress(label string, total int64) *byteProgress {
	tty := false
	if st, err := os.Stderr.Stat(); err == nil {
		tty = st.Mode()&os.ModeCharDevice != 0
	}
	return &byteProgress{bar: progress.NewTo(os.Stderr, tty, label+" (MB)", int(total>>20), 5*time.Second), start: time.Now()}
}

func (p *byteProgress) update(done, total int64) {
	rate := float64(done) / 1e6 / max(time.Since(p.start).Seconds(), 1e-9)
	mb := done >> 20
	if done < total && mb >= total>>20 {
		mb = total>>20 - 1 // the bar prints "complete" once, at the end
	}
	p.bar.Update(int(mb), fmt.Sprintf("%.0f MB/s", rate))
}

func (p *byteProgress) done() { p.bar.Done() }
