package plots

import (
	"path/filepath"
	"testing"
)

// BenchmarkReport measures a two-run sweep report: three tables and five
// figures in three formats each.
func BenchmarkReport(b *testing.B) {
	t := &testing.T{}
	dir := b.TempDir()
	writeSynthRun(t, filepath.Join(dir, "k=0"), synthRun{name: "k=0", preset: "tiny", targets: 32, exact: 28, rouge: 0.9, steps: 2000}, 1)
	writeSynthRun(t, filepath.Join(dir, "k=4"), synthRun{name: "k=4", k: 4, preset: "tiny", targets: 32, rouge: 0.45, steps: 2000}, 2)
	writeSweepIndex(t, dir, "b", []string{"goldfish.k"}, []synthPoint{{"k=0", "k=0", map[string]any{"goldfish.k": 0}}, {"k=4", "k=4", map[string]any{"goldfish.k": 4}}})
	cfg := DefaultConfig()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Report(dir, cfg, readSynthSpec); err != nil {
			b.Fatal(err)
		}
	}
}
