package runfiles

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadMetrics: no metrics.arrow, however corrupt, makes the reader
// panic; an error names the file. A resumed run reads this file, so a panic
// here would lose the run.
func FuzzReadMetrics(f *testing.F) {
	path := filepath.Join(f.TempDir(), MetricsFile)
	var rows []Metric
	for i := int64(1); i <= 20; i++ {
		rows = append(rows, Metric{Step: i, LossKept: 5 / float64(i), LossAll: 5 / float64(i), LossDropped: math.NaN(), LR: 1e-3, ValLoss: math.NaN()})
	}
	if err := WriteMetrics(path, rows); err != nil {
		f.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	for _, i := range []int{16, 100, len(raw) / 2, len(raw) - 100, len(raw) - 12} {
		c := append([]byte(nil), raw...)
		c[i] ^= 0x41
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := readMetricsFrom(MetricsFile, bytes.NewReader(raw)); err != nil && !strings.Contains(err.Error(), MetricsFile) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
