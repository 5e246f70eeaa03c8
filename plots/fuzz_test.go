package plots

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// mutants adds raw and copies of it with one byte changed at a few places.
func mutants(f *testing.F, raw []byte) {
	f.Add(raw)
	for _, i := range []int{8, 16, 100, len(raw) / 3, len(raw) / 2, len(raw) - 100, len(raw) - 12} {
		c := append([]byte(nil), raw...)
		c[i%len(c)] ^= 0x41
		f.Add(c)
	}
}

// fuzzFile writes raw to a file named name and returns its path.
func fuzzFile(t testing.TB, name string, raw []byte) string {
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// FuzzReadScores: no scores.parquet, however corrupt, makes the report
// panic; an error names the file.
func FuzzReadScores(f *testing.F) {
	dir := f.TempDir()
	var rows []eval.Score
	nan := math.NaN()
	for i := 0; i < 12; i++ {
		split := map[bool]string{true: "target", false: "control"}[i%2 == 0]
		rows = append(rows, eval.Score{DocID: int64(i), Split: split, Title: "doc", Status: eval.StatusOK, Repetitions: i % 3,
			Match: eval.Match{Exact: i%4 == 0, TokenAccuracy: 0.5}, RougeL: float64(i) / 12, RougeLPrecision: nan, RougeLRecall: nan,
			Rouge1: nan, Rouge2: nan, Loss: 2 + float64(i)/10, ZlibRatio: 0.01, MinK: nan, RefLoss: nan, RefDiff: nan})
	}
	sum := eval.Summarize(rows, eval.DefaultConfig(), loss.Config{})
	if err := eval.WriteResults(rows, sum, filepath.Join(dir, "scores.parquet"), filepath.Join(dir, "summary.json")); err != nil {
		f.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "scores.parquet"))
	if err != nil {
		f.Fatal(err)
	}
	mutants(f, raw)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := readScores(fuzzFile(t, "scores.parquet", raw)); err != nil && !strings.Contains(err.Error(), "scores.parquet") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// FuzzReadMetricsArrow: no metrics.arrow, as an IPC file or stream, makes
// the figures' reader panic.
func FuzzReadMetricsArrow(f *testing.F) {
	dir := f.TempDir()
	s := synthRun{name: "fuzz", preset: "tiny", k: 4, targets: 4, steps: 30}
	writeSynthRun(&testing.T{}, dir, s, 1)
	raw, err := os.ReadFile(filepath.Join(dir, "metrics.arrow"))
	if err != nil {
		f.Fatal(err)
	}
	mutants(f, raw)
	// The same rows in the stream format, which runfiles.ReadMetrics falls back to.
	stream := streamOf(f, raw)
	if ms, err := runfiles.ReadMetrics(fuzzFile(f, "metrics.arrow", stream)); err != nil || len(ms) != s.steps {
		f.Fatalf("the stream seed reads as %d rows, %v; want %d rows", len(ms), err, s.steps)
	}
	mutants(f, stream)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := runfiles.ReadMetrics(fuzzFile(t, "metrics.arrow", raw)); err != nil && !strings.Contains(err.Error(), "metrics.arrow") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// streamOf rewrites the IPC file in raw in the IPC stream format.
func streamOf(f *testing.F, raw []byte) []byte {
	r, err := ipc.NewFileReader(bytes.NewReader(raw))
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(r.Schema()))
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			f.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			f.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}
