package eval

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// TestWriteMemorization: one row group per step, in step order, members
// then controls, every value copied from that step's summary.
func TestWriteMemorization(t *testing.T) {
	step := func(n int) *int { return &n }
	lossOnly := func(st MIAStat) (m MIASummary) {
		m.SetStat("loss", st)
		return m
	}
	late := &Summary{Step: step(20), Checkpoint: "c/step-000020",
		Members:  SplitSummary{N: 4, ExactMatch: 0.75, ExactMatchCI: [2]Num{0.5, 1}, ExactMatchWilsonCI: [2]Num{0.3, 0.95}, RougeL: 0.9, RougeLCI: [2]Num{0.8, 1}, Loss: 0.2},
		Controls: SplitSummary{N: 4, ExactMatch: 0, RougeL: 0.1, Loss: 3},
		MIA:      lossOnly(MIAStat{AUC: 0.95, AUCCI: [2]Num{0.9, 1}}),
		Guesses:  &GuessSummary{Members: GuessSplit{AnyExact: 1, AnyExactCI: [2]Num{0.6, 1}}}}
	early := &Summary{Step: step(10), Checkpoint: "c/step-000010",
		Members:  SplitSummary{N: 4, ExactMatch: 0.25, RougeL: 0.4, Loss: 1.5},
		Controls: SplitSummary{N: 4, RougeL: 0.1, Loss: 3.1},
		MIA:      lossOnly(MIAStat{AUC: 0.6})}
	path := filepath.Join(t.TempDir(), "memorization.parquet")
	if err := WriteMemorization(path, []*Summary{late, early}); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if pf.NumRowGroups() != 2 || pf.RowGroup(0).NumRows() != 2 || pf.RowGroup(1).NumRows() != 2 {
		t.Fatalf("%d row groups, want 2 of 2 rows", pf.NumRowGroups())
	}
	rd, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := rd.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	col := func(name string) []float64 {
		var out []float64
		for _, ch := range tbl.Column(Memorizations.Schema().FieldIndices(name)[0]).Data().Chunks() {
			switch a := ch.(type) {
			case *array.Float64:
				out = append(out, a.Float64Values()...)
			case *array.Int64:
				for _, v := range a.Int64Values() {
					out = append(out, float64(v))
				}
			}
		}
		return out
	}
	for name, want := range map[string][]float64{
		"step": {10, 10, 20, 20}, "exact_match": {0.25, 0, 0.75, 0}, "exact_match_hi": {0, 0, 0.95, 0}, // Wilson's, not the bootstrap's
		"rougeL": {0.4, 0.1, 0.9, 0.1}, "loss_auc": {0.6, 0.6, 0.95, 0.95}, "loss": {1.5, 3.1, 0.2, 3},
	} {
		got := col(name)
		for i := range want {
			if i >= len(got) || !near(got[i], want[i]) {
				t.Errorf("%s = %v, want %v", name, got, want)
				break
			}
		}
	}
	if any := col("any_exact_match"); !(any[0] != any[0]) || any[2] != 1 {
		t.Errorf("any_exact_match = %v, want NaN at step 10 (one guess), 1 at step 20", any)
	}
	if err := WriteMemorization(path, []*Summary{early, early}); err == nil {
		t.Error("a step twice was accepted")
	}
	if err := WriteMemorization(path, []*Summary{{}}); err == nil {
		t.Error("a summary without a step was accepted")
	}
}
