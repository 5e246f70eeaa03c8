package runfiles

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/memo-research/memo/internal/goldenfile"
)

// TestWriteCompletionsGolden: completions.arrow stays byte for byte what
// extract wrote before the row type moved here (testdata/*.arrow were
// written by extract.WriteCompletions at 6971714 from goldenRows).
func TestWriteCompletionsGolden(t *testing.T) {
	meta := map[string]string{"memo.checkpoint": "step-000010", "memo.extract": `{"top_k":0}`}
	for _, tc := range []struct {
		name string
		rows []Completion
		meta map[string]string
	}{
		{"plain.arrow", goldenRows(false), meta},
		{"approx.arrow", goldenRows(true), meta},
		{"nometa.arrow", goldenRows(false), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			if err := WriteCompletions(path, tc.rows, tc.meta); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, path, "completions-"+tc.name)
		})
	}
}

// What extract writes, eval reads back unchanged, over several record
// batches, with and without the approximate-attack columns.
func TestCompletionsRoundTrip(t *testing.T) {
	for _, withApprox := range []bool{false, true} {
		var rows []Completion
		for len(rows) < 3*completionsBatchRows {
			rows = append(rows, goldenRows(withApprox)...)
		}
		for i := range rows {
			rows[i].DocID = int64(i)
		}
		path := filepath.Join(t.TempDir(), "completions.arrow")
		if err := WriteCompletions(path, rows, map[string]string{"memo.checkpoint": "ck"}); err != nil {
			t.Fatal(err)
		}
		got, meta, err := ReadCompletions(path)
		if err != nil {
			t.Fatal(err)
		}
		if meta["memo.checkpoint"] != "ck" {
			t.Errorf("metadata read back as %v", meta)
		}
		if len(got) != len(rows) {
			t.Fatalf("read %d rows, wrote %d", len(got), len(rows))
		}
		for i := range rows {
			if !sameCompletion(got[i], rows[i]) {
				t.Fatalf("approx %v: row %d read back as\n%+v\nwrote\n%+v", withApprox, i, got[i], rows[i])
			}
		}
	}
}

// sameCompletion is reflect.DeepEqual with NaN equal to NaN and a nil
// token-loss list equal to an empty one (Arrow stores both as empty).
func sameCompletion(a, b Completion) bool {
	norm := func(c Completion) Completion {
		if c.TokenLosses == nil {
			c.TokenLosses = []float32{}
		}
		for _, f := range []*float64{&c.Loss, &c.MinK, &c.RefLoss, &c.MinKPP, &c.PExtract, &c.ReCaLL, &c.GradNorm} {
			if math.IsNaN(*f) {
				*f = -12345
			}
		}
		if c.Approx != nil {
			ap := *c.Approx
			for _, f := range []*float64{&ap.AttnMassKept, &ap.KVBytesPerToken, &ap.SpecAccept} {
				if math.IsNaN(*f) {
					*f = -12345
				}
			}
			c.Approx = &ap
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// A file written before the optional columns existed reads with their
// defaults: status ok, NaN statistics, no approximate-attack columns.
func TestReadCompletionsOlderFile(t *testing.T) {
	var fields []arrow.Field
	for _, c := range Completions.cols {
		if c.required {
			fields = append(fields, c.field)
		}
	}
	path := filepath.Join(t.TempDir(), "completions.arrow")
	rows := goldenRows(true)
	if err := WriteCompletionsAs(path, arrow.NewSchema(fields, nil), rows); err != nil {
		t.Fatal(err)
	}
	got, _, err := ReadCompletions(path)
	if err != nil {
		t.Fatal(err)
	}
	g := got[1]
	if g.Status != StatusOK || g.Title != "" || g.Prefix != nil || g.TokenLosses != nil || g.Approx != nil ||
		!math.IsNaN(g.MinKPP) || !math.IsNaN(g.GradNorm) || g.Text != "x" {
		t.Errorf("older row read back as %+v", g)
	}
	if got[0].Loss != 1.25 || !reflect.DeepEqual(got[0].Generated, []int32{4, 9}) {
		t.Errorf("row 0 read back as %+v", got[0])
	}
}

func TestCompletionsErrors(t *testing.T) {
	dir := t.TempDir()
	bad := arrow.NewSchema([]arrow.Field{{Name: "doc_id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if err := WriteCompletionsAs(filepath.Join(dir, "a.arrow"), bad, nil); err == nil || !strings.Contains(err.Error(), "doc_id") {
		t.Errorf("doc_id as int32: %v", err)
	}
	unknown := arrow.NewSchema([]arrow.Field{{Name: "nope", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if err := WriteCompletionsAs(filepath.Join(dir, "b.arrow"), unknown, nil); err == nil {
		t.Error("an unknown column was written")
	}
	noLoss := arrow.NewSchema(CompletionsSchema.Fields()[:12], nil)
	path := filepath.Join(dir, "c.arrow")
	if err := WriteCompletionsAs(path, noLoss, goldenRows(false)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCompletions(path); err == nil || !strings.Contains(err.Error(), `"loss"`) || !strings.Contains(err.Error(), path) {
		t.Errorf("a file without loss: %v", err)
	}
	if _, _, err := ReadCompletions(filepath.Join(dir, "none.arrow")); err == nil {
		t.Error("reading a missing file did not fail")
	}
}

func goldenRows(withApprox bool) []Completion {
	nan := math.NaN()
	rows := []Completion{
		{DocID: 7, Split: "target", Title: "A title", Status: "ok", Repetitions: 4,
			Prefix: []int32{1, 2, 3}, Suffix: []int32{4, 5}, Generated: []int32{4, 9},
			PrefixText: "a b c", SuffixText: " d e", GeneratedText: " d z", Text: "a b c d e f", WindowText: "a b c d e",
			NTokens: 6, Loss: 1.25, MinK: 2.5, RefLoss: nan, TokenLosses: []float32{1, 1.5, 0.25, 2},
			MinKPP: -0.5, PExtract: math.Inf(-1), ReCaLL: 0.75, GradNorm: nan},
		{DocID: 8, Split: "control", Status: "too_short", Repetitions: 0,
			Prefix: []int32{}, Suffix: []int32{}, Generated: []int32{}, Text: "x", NTokens: 1,
			Loss: nan, MinK: nan, RefLoss: nan, TokenLosses: nil, MinKPP: nan, PExtract: nan, ReCaLL: nan, GradNorm: nan},
	}
	if withApprox {
		rows[0].Approx = &CompletionApprox{ExactAgree: 1, AttnMassKept: 0.875, KVBytesPerToken: 1536, SpecAccept: nan}
		rows[1].Approx = &NoApprox
	}
	return rows
}
