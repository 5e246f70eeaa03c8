package eval

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/badinput"
)

// Completion is one row of completions.arrow as extract writes it.
type Completion struct {
	DocID         int64
	Split         string
	Title         string
	Status        string // "ok", or why the document could not be attacked
	Repetitions   int
	Prefix        []int32
	Suffix        []int32
	Generated     []int32
	SuffixText    string
	GeneratedText string
	Text          string
	// WindowText is the decoded window the losses cover (the document's
	// first context tokens): the text of the zlib ratio. Empty in files
	// written before extract recorded it; Text stands in then.
	WindowText  string
	NTokens     int
	Loss        float64
	MinK        float64
	RefLoss     float64 // NaN when no reference model was given
	TokenLosses []float32
	// Approx holds the columns of an approximate attack (extract's
	// CompletionsApproxFields, in internal/runfiles); nil when the file has none.
	Approx *ApproxColumns
	// MinKPP, PExtract, ReCaLL and GradNorm are extract's mink_pp,
	// p_extract (natural log), recall and grad_norm columns; NaN when
	// undefined, turned off, or absent from an older file.
	MinKPP, PExtract, ReCaLL, GradNorm float64
}

// StatusOK marks a document that was attacked.
const StatusOK = "ok"

// requiredColumns are the columns eval cannot work without; the others
// (title, status, repetitions, prefix_ids, n_tokens, token_losses,
// window_text, mink_pp, p_extract, recall, grad_norm) are read when present.
var requiredColumns = []string{"doc_id", "split", "suffix_ids", "generated_ids", "suffix_text", "generated_text", "text", "loss", "mink", "ref_loss"}

// ReadCompletions reads every row of a completions.arrow file.
func ReadCompletions(path string) ([]Completion, error) {
	rows, _, err := readCompletions(path)
	return rows, err
}

// readCompletions also returns the schema metadata (extract's config).
func readCompletions(path string) ([]Completion, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, badinput.Errorf("read completions: %w (run `memo extract` first)", err)
	}
	defer f.Close()
	rows, meta, err := readCompletionsFrom(path, f)
	// A completions file that cannot be read is bad input (exit 2 in the CLI).
	return rows, meta, badinput.Wrap(err)
}

// readCompletionsFrom reads a completions file from src; every batch is
// validated (arrowsafe) before a value is read, so a corrupt file is an
// error naming it, never a panic.
func readCompletionsFrom(path string, src arrowsafe.Source) ([]Completion, map[string]string, error) {
	r, err := arrowsafe.NewFileReader(path, src, nil, 1)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (not an Arrow IPC file written by `memo extract`)", err)
	}
	defer r.Close()
	schema := r.Schema()
	for _, name := range requiredColumns {
		if len(schema.FieldIndices(name)) == 0 {
			return nil, nil, fmt.Errorf("read %s: no column %q (written by an older memo? run `memo extract` again)", path, name)
		}
	}
	meta := map[string]string{}
	md := schema.Metadata()
	for i, k := range md.Keys() {
		meta[k] = md.Values()[i]
	}
	var out []Completion
	for b := 0; b < r.NumRecords(); b++ {
		rec, err := r.Record(b)
		if err != nil {
			return nil, nil, err
		}
		rows, err := readBatch(rec)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: record batch %d: %w", path, b, err)
		}
		out = append(out, rows...)
	}
	return out, meta, nil
}

// column fetches a column by name as type T; a missing optional column is nil.
func column[T arrow.Array](rec arrow.Record, name string, required bool) (T, error) {
	var zero T
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		if required {
			return zero, fmt.Errorf("no column %q", name)
		}
		return zero, nil
	}
	col, ok := rec.Column(idx[0]).(T)
	if !ok {
		return zero, fmt.Errorf("column %q has type %s, want %T", name, rec.Column(idx[0]).DataType(), zero)
	}
	return col, nil
}

func readBatch(rec arrow.Record) ([]Completion, error) {
	docID, err1 := column[*array.Int64](rec, "doc_id", true)
	split, err2 := column[*array.String](rec, "split", true)
	suffix, err3 := column[*array.List](rec, "suffix_ids", true)
	gen, err4 := column[*array.List](rec, "generated_ids", true)
	suffixText, err5 := column[*array.String](rec, "suffix_text", true)
	genText, err6 := column[*array.String](rec, "generated_text", true)
	text, err7 := column[*array.String](rec, "text", true)
	lossCol, err8 := column[*array.Float64](rec, "loss", true)
	minkCol, err9 := column[*array.Float64](rec, "mink", true)
	refCol, err10 := column[*array.Float64](rec, "ref_loss", true)
	title, err11 := column[*array.String](rec, "title", false)
	status, err12 := column[*array.String](rec, "status", false)
	reps, err13 := column[*array.Int32](rec, "repetitions", false)
	prefix, err14 := column[*array.List](rec, "prefix_ids", false)
	ntok, err15 := column[*array.Int32](rec, "n_tokens", false)
	tl, err16 := column[*array.List](rec, "token_losses", false)
	win, err17 := column[*array.String](rec, "window_text", false)
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8, err9, err10, err11, err12, err13, err14, err15, err16, err17} {
		if err != nil {
			return nil, err
		}
	}
	var optional [4]*array.Float64
	for k, name := range []string{"mink_pp", "p_extract", "recall", "grad_norm"} {
		var err error
		if optional[k], err = column[*array.Float64](rec, name, false); err != nil {
			return nil, err
		}
	}
	ap, err := approxColumnsOf(rec)
	if err != nil {
		return nil, err
	}
	n := int(rec.NumRows())
	rows := make([]Completion, n)
	for i := range rows {
		c := &rows[i]
		c.Approx = ap.at(i)
		c.DocID, c.Split = docID.Value(i), split.Value(i)
		c.SuffixText, c.GeneratedText, c.Text = suffixText.Value(i), genText.Value(i), text.Value(i)
		c.Loss, c.MinK, c.RefLoss = floatOrNaN(lossCol, i), floatOrNaN(minkCol, i), floatOrNaN(refCol, i)
		for k, dst := range []*float64{&c.MinKPP, &c.PExtract, &c.ReCaLL, &c.GradNorm} {
			*dst = nan()
			if optional[k] != nil {
				*dst = floatOrNaN(optional[k], i)
			}
		}
		var err error
		if c.Suffix, err = int32List(suffix, i); err != nil {
			return nil, fmt.Errorf("suffix_ids: %w", err)
		}
		if c.Generated, err = int32List(gen, i); err != nil {
			return nil, fmt.Errorf("generated_ids: %w", err)
		}
		c.Status = StatusOK
		if status != nil {
			c.Status = status.Value(i)
		}
		if title != nil {
			c.Title = title.Value(i)
		}
		if win != nil {
			c.WindowText = win.Value(i)
		}
		if reps != nil {
			c.Repetitions = int(reps.Value(i))
		}
		if prefix != nil {
			if c.Prefix, err = int32List(prefix, i); err != nil {
				return nil, fmt.Errorf("prefix_ids: %w", err)
			}
		}
		if ntok != nil {
			c.NTokens = int(ntok.Value(i))
		}
		if tl != nil {
			if c.TokenLosses, err = float32List(tl, i); err != nil {
				return nil, fmt.Errorf("token_losses: %w", err)
			}
		}
	}
	return rows, nil
}

func floatOrNaN(a *array.Float64, i int) float64 {
	if a.IsNull(i) {
		return nan()
	}
	return a.Value(i)
}

func int32List(l *array.List, i int) ([]int32, error) {
	vals, ok := l.ListValues().(*array.Int32)
	if !ok {
		return nil, fmt.Errorf("list of %s, want list<int32>", l.ListValues().DataType())
	}
	start, end := l.ValueOffsets(i)
	return append([]int32{}, vals.Int32Values()[start:end]...), nil
}

func float32List(l *array.List, i int) ([]float32, error) {
	vals, ok := l.ListValues().(*array.Float32)
	if !ok {
		return nil, fmt.Errorf("list of %s, want list<float>", l.ListValues().DataType())
	}
	start, end := l.ValueOffsets(i)
	return append([]float32{}, vals.Float32Values()[start:end]...), nil
}

// completionsPath accepts a run directory or a completions file.
func completionsPath(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return filepath.Join(p, "completions.arrow")
	}
	return p
}
