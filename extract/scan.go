package extract

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/engine/approx"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/progress"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// CheckScan refuses settings a scan cannot honour: it decides greedy
// decoding's exact match and matched length of the exact model, so
// sampling, beam search, several guesses and the approximate attacks
// (whose tokens are not greedy's of the exact model) need generation,
// `memo extract` without --scan.
func (c Config) CheckScan() error {
	r, err := c.Resolved()
	if err != nil {
		return err
	}
	switch {
	case r.Decoding != DecodeGreedy:
		return badinput.Errorf("extract --scan: extract.decoding = %q: a scan decides greedy decoding's exact match; %s decoding needs generation (memo extract without --scan)", r.Decoding, r.Decoding)
	case r.Samples > 1:
		return badinput.Errorf("extract --scan: extract.samples = %d: a scan has one guess, greedy's", r.Samples)
	case r.KVBits != 16 || r.Attention != approx.AttnExact:
		// QuantSpec alone is exact greedy decoding, sped up: allowed.
		return badinput.Errorf("extract --scan: extract.approximation %q changes the decoded tokens; a scan decides the exact model's greedy decoding", r.approxName())
	}
	return nil
}

// Scan is `memo extract --scan`: for every document of cfg.Splits (the
// prompts an attack with cfg would build), whether greedy decoding
// reproduces its suffix and how many leading suffix tokens it reproduces,
// decided by one teacher-forced forward pass per batch (engine.GreedyMatch)
// instead of len(suffix) decode steps. The rows go to out (Parquet,
// runfiles.Scans). It writes nothing else: no texts, losses or
// generations, which is what makes it cheap.
func Scan(ctx context.Context, cfg Config, checkpointDir string, ds *data.Dataset, out string) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := cfg.CheckScan(); err != nil {
		return err
	}
	cfg, _ = cfg.Resolved()
	runtime.LockOSThread() // grad mode is per OS thread
	defer runtime.UnlockOSThread()
	start := time.Now()
	a, err := loadAttack(cfg, checkpointDir, ds)
	if err != nil {
		return err
	}
	g, cfg, prompts := a.g, a.cfg, a.prompts
	mc := g.Config()
	slog.Info("extract: scanning", "checkpoint", a.ckpt, "documents", len(prompts), "mode", cfg.Mode,
		"window", a.window, "batch_size", cfg.BatchSize, "model", mc.String())
	matched, err := scanAll(ctx, g, cfg, prompts)
	if err != nil {
		return fmt.Errorf("extract: scan: %w", err)
	}
	rows := scanRows(prompts, matched)
	if err := atomicfile.Write(out, func(w io.Writer) error { return runfiles.Scans.WriteParquet(w, rows) }); err != nil {
		return fmt.Errorf("extract: write %s: %w", out, err)
	}
	exact := 0
	for _, r := range rows {
		if r.ExactMatch {
			exact++
		}
	}
	el := time.Since(start)
	slog.Info("extract: scan done", "out", out, "rows", len(rows), "exact", exact, "ties", TiedVerdicts(rows),
		"elapsed", el.Round(time.Millisecond).String(), "sequences_per_s", fmt.Sprintf("%.1f", float64(len(rows))/el.Seconds()))
	return nil
}

// scanAll is what greedy decoding reproduces of each prompt's suffix
// (engine.GreedyMatch over its prefix + suffix; Len −1 for a prompt not
// attacked), cfg.BatchSize windows a pass, ordered by length so that a
// batch pads little.
func scanAll(ctx context.Context, g *model.GPT, cfg Config, prompts []Prompt) ([]engine.Match, error) {
	var todo []int
	for i, p := range prompts {
		if p.Status == StatusOK {
			todo = append(todo, i)
		}
	}
	// Prefix and suffix are consecutive tokens of the document.
	win := func(p Prompt) []int32 { return p.Doc.IDs[:len(p.Prefix)+len(p.Suffix)] }
	order := byLength(len(todo), func(k int) int { return len(prompts[todo[k]].Prefix) + len(prompts[todo[k]].Suffix) })
	out := make([]engine.Match, len(prompts))
	for i := range out {
		out[i] = engine.Match{Len: -1, Margin: float32(math.NaN())}
	}
	batch := max(cfg.BatchSize, 1)
	bar := progress.New("extract: scanning", len(order))
	defer bar.Done()
	for lo := 0; lo < len(order); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ks := order[lo:min(lo+batch, len(order))]
		ws := make([][]int32, len(ks))
		pre := make([]int, len(ks))
		for j, k := range ks {
			p := prompts[todo[k]]
			ws[j], pre[j] = win(p), len(p.Prefix)
		}
		m, err := engine.GreedyMatch(g, ws, pre)
		if err != nil {
			return nil, err
		}
		for j, k := range ks {
			out[todo[k]] = m[j]
		}
		torchx.Collect()
		bar.Update(lo+len(ks), "")
	}
	return out, nil
}

// scanRows are the scan file's rows, in the prompts' order.
func scanRows(prompts []Prompt, matched []engine.Match) []runfiles.ScanRow {
	rows := make([]runfiles.ScanRow, len(prompts))
	for i, p := range prompts {
		r := runfiles.ScanRow{DocID: p.Doc.ID, Split: p.Doc.Split, Status: p.Status, Repetitions: p.Doc.Repetitions, Margin: float32(math.NaN())}
		if p.Status == StatusOK {
			r.PrefixLen, r.SuffixLen, r.MatchedLen = len(p.Prefix), len(p.Suffix), matched[i].Len
			r.ExactMatch = matched[i].Len == len(p.Suffix)
			r.Margin = matched[i].Margin
		}
		rows[i] = r
	}
	return rows
}

// TiedVerdicts counts the scanned rows whose verdict was decided at a tie
// (margin 0: the two leading logits equal at the deciding position). There
// the token greedy decoding picks depends on the order of the arithmetic
// that made the logits, so generation, whose logits come from its cache,
// may decide otherwise; on a GPU in bf16 a few per thousand (docs/DECODING.md).
func TiedVerdicts(rows []runfiles.ScanRow) int {
	n := 0
	for _, r := range rows {
		if r.Status == StatusOK && r.Margin == 0 {
			n++
		}
	}
	return n
}

// ScanPath is where a scan of the attack whose completions would be
// written at completions goes: the same name with .scan.parquet for
// .completions.arrow (a run's completions.arrow: scan.parquet).
func ScanPath(completions string) string {
	dir, base := filepath.Split(completions)
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".arrow"), "completions")
	if base = strings.TrimSuffix(base, "."); base == "" {
		return filepath.Join(dir, "scan.parquet")
	}
	return filepath.Join(dir, base+runfiles.ScanSuffix)
}

// CheckScanOut refuses, before any work, a scan output that would replace
// a file a scan did not write: a directory, a name not ending in
// .parquet, a place outguard forbids (a checkpoint's directory, a run's
// data/), or an existing file that is not a scan.
func CheckScanOut(out string) error {
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return badinput.Errorf("extract --scan: --out %s is a directory: want a FILE ending in %s", out, runfiles.ScanSuffix)
	}
	if !strings.HasSuffix(out, ".parquet") {
		return badinput.Errorf("extract --scan: --out %s: want a FILE ending in %s (a scan is Parquet)", out, runfiles.ScanSuffix)
	}
	if err := outguard.Place("extract --scan: --out "+out, filepath.Dir(out)); err != nil {
		return err
	}
	if outguard.Exists(out) {
		if _, err := runfiles.Scans.ReadParquet(out); err != nil {
			return badinput.Errorf("extract --scan: --out %s exists and is not a scan memo extract --scan wrote: name another file", out)
		}
	}
	return nil
}
