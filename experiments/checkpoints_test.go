package experiments

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
)

// smokeWith is exp/smoke.toml with its [train] and [extract] tables
// extended by the lines given.
func smokeWith(t *testing.T, trainLines, extractLines string) (*Spec, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "exp", "smoke.toml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), "checkpoint_every = 0\n", trainLines, 1)
	doc = strings.Replace(doc, "[extract]\n", "[extract]\n"+extractLines, 1)
	return ParseBytes("smoke-checkpoints.toml", []byte(doc))
}

// TestCheckpointsAllWritesMemorization: a short run with extract.checkpoints
// = "all" attacks and scores its checkpoints at steps 10 and 20 and writes
// memorization.parquet with one row group per step, each value eval's.
func TestCheckpointsAllWritesMemorization(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	spec, err := smokeWith(t, "checkpoint_every = 10\nkeep_checkpoints = 0\n", "checkpoints = \"all\"\ndecoding = \"sample\"\nsamples = 2\n")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Run(context.Background(), spec, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	attacks, err := checkpointAttacks(spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(attacks) != 2 || attacks[0].Step != 10 || attacks[0].Own || attacks[1].Step != 20 || !attacks[1].Own {
		t.Fatalf("attacks %+v: want step 10 beside its checkpoint, step 20 the run's own", attacks)
	}
	_, summary := eval.OutputPaths(attacks[0].Completions)
	early, err := eval.ReadSummary(summary)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, runfiles.MemorizationFile)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if pf.NumRowGroups() != 2 {
		t.Fatalf("%s: %d row groups, want one per step (2)", path, pf.NumRowGroups())
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
	if tbl.NumRows() != 4 || tbl.NumCols() != int64(eval.Memorizations.Schema().NumFields()) {
		t.Fatalf("%d rows × %d columns, want 4 × %d", tbl.NumRows(), tbl.NumCols(), eval.Memorizations.Schema().NumFields())
	}
	steps := tbl.Column(0).Data().Chunk(0).(*array.Int64).Int64Values()
	rouge := tbl.Column(eval.Memorizations.Schema().FieldIndices("rougeL")[0]).Data().Chunk(0).(*array.Float64).Float64Values()
	anyExact := tbl.Column(eval.Memorizations.Schema().FieldIndices("any_exact_match")[0]).Data().Chunk(0).(*array.Float64).Float64Values()
	if steps[0] != 10 || steps[1] != 10 || rouge[0] != float64(early.Members.RougeL) || math.IsNaN(anyExact[0]) {
		t.Errorf("first step rows: step %v, rougeL %v (summary %v), any_exact %v", steps[:2], rouge[0], early.Members.RougeL, anyExact[0])
	}
	if _, err := os.Stat(filepath.Join(dir, "figures", "memorization-over-training.png")); err != nil {
		t.Errorf("no figure: %v", err)
	}
}

// TestCheckpointsNeedKeptCheckpoints: attacking more than the newest
// checkpoint with checkpoints pruned, or never saved, is refused by key.
func TestCheckpointsNeedKeptCheckpoints(t *testing.T) {
	for _, c := range []struct{ train, extract, want string }{
		{"checkpoint_every = 10\nkeep_checkpoints = 2\n", "checkpoints = \"all\"\n", "needs train.keep_checkpoints = 0"},
		{"checkpoint_every = 0\nkeep_checkpoints = 0\n", "checkpoints = \"all\"\n", "saves only the final checkpoint"},
		{"checkpoint_every = 10\nkeep_checkpoints = 0\n", "checkpoints = [5, 20]\n", "step 5 is never saved"},
		{"checkpoint_every = 10\nkeep_checkpoints = 0\n", "checkpoints = \"some\"\n", `extract.checkpoints = some: unknown value`},
	} {
		_, err := smokeWith(t, c.train, c.extract)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "extract.checkpoints") {
			t.Errorf("%q %q: %v, want an error naming extract.checkpoints: %q", c.train, c.extract, err, c.want)
		}
	}
	if _, err := smokeWith(t, "checkpoint_every = 10\nkeep_checkpoints = 0\n", "checkpoints = [10, 20]\n"); err != nil {
		t.Errorf("steps 10 and 20 of 20 saved every 10: %v", err)
	}
}
