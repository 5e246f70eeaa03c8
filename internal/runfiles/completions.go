package runfiles

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// CompletionsSchema is the schema of completions.arrow, extract's output:
// one row per document attacked. loss, mink and token_losses are over the
// document's first context tokens, its window (mink with
// extract.Config.MinKFraction); window_text is the decoded window, the
// text whose zlib length divides the loss in eval's zlib ratio (text is
// the whole document). ref_loss is NaN without a reference model. Rows
// with status other than "ok" have empty prefix, suffix and generation.
// mink_pp (Min-K%++), recall (ReCaLL) and grad_norm (model.GradNorm) are
// membership statistics over the window; p_extract is the natural log of
// the probability that the attack's decoding reproduces the suffix
// (extract's decoder.suffixLogProb). Each is NaN where undefined or turned
// off. The schema's metadata names the model and the attack (see the keys
// of internal/provenance). eval reads it by column name, so files written
// before a column existed still read.
var CompletionsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "doc_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "split", Type: arrow.BinaryTypes.String},
	{Name: "title", Type: arrow.BinaryTypes.String},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "repetitions", Type: arrow.PrimitiveTypes.Int32},
	{Name: "prefix_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "suffix_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "generated_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "prefix_text", Type: arrow.BinaryTypes.String},
	{Name: "suffix_text", Type: arrow.BinaryTypes.String},
	{Name: "generated_text", Type: arrow.BinaryTypes.String},
	{Name: "text", Type: arrow.BinaryTypes.String},
	{Name: "n_tokens", Type: arrow.PrimitiveTypes.Int32},
	{Name: "loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "mink", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ref_loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "token_losses", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
	{Name: "window_text", Type: arrow.BinaryTypes.String},
	{Name: "mink_pp", Type: arrow.PrimitiveTypes.Float64},
	{Name: "p_extract", Type: arrow.PrimitiveTypes.Float64},
	{Name: "recall", Type: arrow.PrimitiveTypes.Float64},
	{Name: "grad_norm", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// CompletionsApproxFields are the columns completions.arrow gains after
// CompletionsSchema's when
// the attack decoded under an approximation (extract.kv_bits,
// extract.attention or extract.speculative not at their defaults) or
// named one in extract.approximation (even "exact"); other attacks write
// CompletionsSchema alone, as before these keys existed.
//
//   - exact_agree: generated tokens equal to exact decoding's (same
//     decoding, same seed) before the first that differs; the suffix
//     length when all agree;
//   - attn_mass_kept: the mean over decode steps, layers, heads of the
//     exact attention probability on the tokens attended (1 unless sparse);
//   - kv_bytes_per_token: mean key and value bytes read per decode step,
//     all layers (model.ApproxStats; NaN for quantspec, whose two models
//     read differently sized caches);
//   - spec_accept: QuantSpec's accepted / proposed draft tokens (NaN
//     without speculation).
//
// Rows not attacked hold 0, NaN, NaN, NaN.
var CompletionsApproxFields = []arrow.Field{
	{Name: "exact_agree", Type: arrow.PrimitiveTypes.Int32},
	{Name: "attn_mass_kept", Type: arrow.PrimitiveTypes.Float64},
	{Name: "kv_bytes_per_token", Type: arrow.PrimitiveTypes.Float64},
	{Name: "spec_accept", Type: arrow.PrimitiveTypes.Float64},
}

// StatusOK is the status of a document that was attacked; any other
// status says why it was not (extract's StatusTooShort, …).
const StatusOK = "ok"

// Completion is one row of completions.arrow: extract writes it
// (WriteCompletions), eval reads it (ReadCompletions).
type Completion struct {
	DocID                                       int64
	Split, Title                                string
	Status                                      string // StatusOK, or why the document could not be attacked
	Repetitions                                 int
	Prefix, Suffix, Generated                   []int32
	PrefixText, SuffixText, GeneratedText, Text string
	// WindowText is the decoded window the losses cover (the document's
	// first context tokens): the text of eval's zlib ratio. Empty in files
	// written before extract recorded it; Text stands in then.
	WindowText          string
	NTokens             int
	Loss, MinK, RefLoss float64 // RefLoss is NaN when no reference model was given
	TokenLosses         []float32
	// MinKPP, PExtract, ReCaLL and GradNorm are the mink_pp, p_extract
	// (natural log), recall and grad_norm columns; NaN when undefined,
	// turned off, or absent from an older file.
	MinKPP, PExtract, ReCaLL, GradNorm float64
	// Approx holds the CompletionsApproxFields of an approximate attack;
	// nil when the attack was exact (the file has none of those columns).
	Approx *CompletionApprox
}

// CompletionApprox is one row's CompletionsApproxFields.
type CompletionApprox struct {
	ExactAgree      int     // generated tokens equal to exact decoding's before the first difference
	AttnMassKept    float64 // mean exact attention probability on the tokens attended
	KVBytesPerToken float64 // mean key/value bytes read per decode step (NaN: not measured)
	SpecAccept      float64 // QuantSpec's accepted / proposed draft tokens (NaN: no speculation)
}

// NoApprox is what an approximate attack writes for a document it did
// not attack.
var NoApprox = CompletionApprox{AttnMassKept: math.NaN(), KVBytesPerToken: math.NaN(), SpecAccept: math.NaN()}

// completionsBatchRows is the number of rows per record batch.
const completionsBatchRows = 256

// WriteCompletions writes rows to path atomically (temporary name,
// rename) with CompletionsSchema, followed by CompletionsApproxFields when
// any row has Approx (NoApprox stands in for rows without). meta goes into
// the schema's metadata (extract records the attack, the checkpoint and
// its training loss under the keys of internal/provenance).
func WriteCompletions(path string, rows []Completion, meta map[string]string) error {
	fields := CompletionsSchema.Fields()
	for _, r := range rows {
		if r.Approx != nil {
			fields = append(fields, CompletionsApproxFields...)
			break
		}
	}
	var md *arrow.Metadata
	if len(meta) > 0 {
		m := arrow.MetadataFrom(meta)
		md = &m
	}
	return WriteCompletionsAs(path, arrow.NewSchema(fields, md), rows)
}

// WriteCompletionsAs writes rows with schema, whose fields are columns of
// CompletionsSchema or CompletionsApproxFields in any order and subset:
// tests write files as older versions of memo did, before some columns
// existed. WriteCompletions is the writer of record.
func WriteCompletionsAs(path string, schema *arrow.Schema, rows []Completion) error {
	fill := make([]func(array.Builder, *Completion), schema.NumFields())
	for i, f := range schema.Fields() {
		col, ok := completionColumns[f.Name]
		if !ok || !arrow.TypeEqual(col.typ, f.Type) {
			return fmt.Errorf("write %s: column %q %s is not one of completions.arrow's", path, f.Name, f.Type)
		}
		fill[i] = col.fill
	}
	return arrowsafe.WriteFile(path, schema, len(rows), completionsBatchRows, func(b *array.RecordBuilder, i int) {
		for j, f := range fill {
			f(b.Field(j), &rows[i])
		}
	})
}

// completionColumn appends one row's value of a column.
type completionColumn struct {
	typ  arrow.DataType
	fill func(array.Builder, *Completion)
}

// completionColumns are the writers of CompletionsSchema's and
// CompletionsApproxFields' columns, by name.
var completionColumns = func() map[string]completionColumn {
	str := func(v func(*Completion) string) func(array.Builder, *Completion) {
		return func(b array.Builder, c *Completion) { b.(*array.StringBuilder).Append(v(c)) }
	}
	f64 := func(v func(*Completion) float64) func(array.Builder, *Completion) {
		return func(b array.Builder, c *Completion) { b.(*array.Float64Builder).Append(v(c)) }
	}
	i32 := func(v func(*Completion) int) func(array.Builder, *Completion) {
		return func(b array.Builder, c *Completion) { b.(*array.Int32Builder).Append(int32(v(c))) }
	}
	ids := func(v func(*Completion) []int32) func(array.Builder, *Completion) {
		return func(b array.Builder, c *Completion) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int32Builder).AppendValues(v(c), nil)
		}
	}
	approx := func(c *Completion) *CompletionApprox {
		if c.Approx == nil {
			return &NoApprox
		}
		return c.Approx
	}
	fills := map[string]func(array.Builder, *Completion){
		"doc_id":         func(b array.Builder, c *Completion) { b.(*array.Int64Builder).Append(c.DocID) },
		"split":          str(func(c *Completion) string { return c.Split }),
		"title":          str(func(c *Completion) string { return c.Title }),
		"status":         str(func(c *Completion) string { return c.Status }),
		"repetitions":    i32(func(c *Completion) int { return c.Repetitions }),
		"prefix_ids":     ids(func(c *Completion) []int32 { return c.Prefix }),
		"suffix_ids":     ids(func(c *Completion) []int32 { return c.Suffix }),
		"generated_ids":  ids(func(c *Completion) []int32 { return c.Generated }),
		"prefix_text":    str(func(c *Completion) string { return c.PrefixText }),
		"suffix_text":    str(func(c *Completion) string { return c.SuffixText }),
		"generated_text": str(func(c *Completion) string { return c.GeneratedText }),
		"text":           str(func(c *Completion) string { return c.Text }),
		"n_tokens":       i32(func(c *Completion) int { return c.NTokens }),
		"loss":           f64(func(c *Completion) float64 { return c.Loss }),
		"mink":           f64(func(c *Completion) float64 { return c.MinK }),
		"ref_loss":       f64(func(c *Completion) float64 { return c.RefLoss }),
		"token_losses": func(b array.Builder, c *Completion) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Float32Builder).AppendValues(c.TokenLosses, nil)
		},
		"window_text":        str(func(c *Completion) string { return c.WindowText }),
		"mink_pp":            f64(func(c *Completion) float64 { return c.MinKPP }),
		"p_extract":          f64(func(c *Completion) float64 { return c.PExtract }),
		"recall":             f64(func(c *Completion) float64 { return c.ReCaLL }),
		"grad_norm":          f64(func(c *Completion) float64 { return c.GradNorm }),
		"exact_agree":        i32(func(c *Completion) int { return approx(c).ExactAgree }),
		"attn_mass_kept":     f64(func(c *Completion) float64 { return approx(c).AttnMassKept }),
		"kv_bytes_per_token": f64(func(c *Completion) float64 { return approx(c).KVBytesPerToken }),
		"spec_accept":        f64(func(c *Completion) float64 { return approx(c).SpecAccept }),
	}
	cols := map[string]completionColumn{}
	for _, f := range append(CompletionsSchema.Fields(), CompletionsApproxFields...) {
		fill, ok := fills[f.Name]
		if !ok {
			panic("runfiles: no writer for completions column " + f.Name)
		}
		cols[f.Name] = completionColumn{f.Type, fill}
	}
	if len(cols) != len(fills) {
		panic("runfiles: a completions writer names no column of the schema")
	}
	return cols
}()

// requiredCompletionColumns are the columns a reader cannot work without;
// the others (title, status, repetitions, prefix_ids, prefix_text,
// n_tokens, token_losses, window_text, mink_pp, p_extract, recall,
// grad_norm, the approximate-attack columns) are read when present, so
// files written before they existed still read.
var requiredCompletionColumns = []string{"doc_id", "split", "suffix_ids", "generated_ids", "suffix_text", "generated_text", "text", "loss", "mink", "ref_loss"}

// ReadCompletions reads every row of a completions.arrow file, and its
// schema metadata (the provenance WriteCompletions recorded).
func ReadCompletions(path string) ([]Completion, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read completions: %w", err)
	}
	defer f.Close()
	return ReadCompletionsFrom(path, f)
}

// ReadCompletionsFrom reads a completions file from src; every batch is
// validated (arrowsafe) before a value is read, so a corrupt file is an
// error naming path, never a panic.
func ReadCompletionsFrom(path string, src arrowsafe.Source) ([]Completion, map[string]string, error) {
	r, err := arrowsafe.NewFileReader(path, src, nil, 1)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (not an Arrow IPC file written by `memo extract`)", err)
	}
	defer r.Close()
	schema := r.Schema()
	for _, name := range requiredCompletionColumns {
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
		rows, err := readCompletionsBatch(rec)
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

// completionsBatch are a record batch's columns; optional ones absent
// from the file are nil.
type completionsBatch struct {
	docID                                     *array.Int64
	split, suffixText, genText, text          *array.String
	title, status, prefixText, window         *array.String
	suffix, gen, prefix, tokenLosses          *array.List
	reps, nTokens, exactAgree                 *array.Int32
	loss, mink, refLoss                       *array.Float64
	minKPP, pExtract, recall, gradNorm        *array.Float64
	attnMassKept, kvBytesPerToken, specAccept *array.Float64
}

func completionsBatchOf(rec arrow.Record) (completionsBatch, error) {
	var c completionsBatch
	var errs []error
	str := func(dst **array.String, name string, required bool) {
		var err error
		*dst, err = column[*array.String](rec, name, required)
		errs = append(errs, err)
	}
	list := func(dst **array.List, name string, required bool) {
		var err error
		*dst, err = column[*array.List](rec, name, required)
		errs = append(errs, err)
	}
	f64 := func(dst **array.Float64, name string, required bool) {
		var err error
		*dst, err = column[*array.Float64](rec, name, required)
		errs = append(errs, err)
	}
	i32 := func(dst **array.Int32, name string, required bool) {
		var err error
		*dst, err = column[*array.Int32](rec, name, required)
		errs = append(errs, err)
	}
	var err error
	c.docID, err = column[*array.Int64](rec, "doc_id", true)
	errs = append(errs, err)
	str(&c.split, "split", true)
	str(&c.suffixText, "suffix_text", true)
	str(&c.genText, "generated_text", true)
	str(&c.text, "text", true)
	list(&c.suffix, "suffix_ids", true)
	list(&c.gen, "generated_ids", true)
	f64(&c.loss, "loss", true)
	f64(&c.mink, "mink", true)
	f64(&c.refLoss, "ref_loss", true)
	str(&c.title, "title", false)
	str(&c.status, "status", false)
	str(&c.prefixText, "prefix_text", false)
	str(&c.window, "window_text", false)
	list(&c.prefix, "prefix_ids", false)
	list(&c.tokenLosses, "token_losses", false)
	i32(&c.reps, "repetitions", false)
	i32(&c.nTokens, "n_tokens", false)
	f64(&c.minKPP, "mink_pp", false)
	f64(&c.pExtract, "p_extract", false)
	f64(&c.recall, "recall", false)
	f64(&c.gradNorm, "grad_norm", false)
	i32(&c.exactAgree, "exact_agree", false)
	f64(&c.attnMassKept, "attn_mass_kept", false)
	f64(&c.kvBytesPerToken, "kv_bytes_per_token", false)
	f64(&c.specAccept, "spec_accept", false)
	return c, errors.Join(errs...)
}

func readCompletionsBatch(rec arrow.Record) ([]Completion, error) {
	c, err := completionsBatchOf(rec)
	if err != nil {
		return nil, err
	}
	// Optional columns absent from the file read as these.
	str := func(a *array.String, i int) string {
		if a == nil {
			return ""
		}
		return a.Value(i)
	}
	i32 := func(a *array.Int32, i int) int {
		if a == nil {
			return 0
		}
		return int(a.Value(i))
	}
	withApprox := c.exactAgree != nil && c.attnMassKept != nil && c.kvBytesPerToken != nil && c.specAccept != nil
	rows := make([]Completion, rec.NumRows())
	for i := range rows {
		r := &rows[i]
		r.DocID, r.Split, r.Title = c.docID.Value(i), c.split.Value(i), str(c.title, i)
		r.Status = StatusOK
		if c.status != nil {
			r.Status = c.status.Value(i)
		}
		r.Repetitions, r.NTokens = i32(c.reps, i), i32(c.nTokens, i)
		r.PrefixText, r.SuffixText, r.GeneratedText = str(c.prefixText, i), c.suffixText.Value(i), c.genText.Value(i)
		r.Text, r.WindowText = c.text.Value(i), str(c.window, i)
		r.Loss, r.MinK, r.RefLoss = floatOrNaN(c.loss, i), floatOrNaN(c.mink, i), floatOrNaN(c.refLoss, i)
		r.MinKPP, r.PExtract = floatOrNaN(c.minKPP, i), floatOrNaN(c.pExtract, i)
		r.ReCaLL, r.GradNorm = floatOrNaN(c.recall, i), floatOrNaN(c.gradNorm, i)
		if withApprox {
			r.Approx = &CompletionApprox{ExactAgree: int(c.exactAgree.Value(i)), AttnMassKept: floatOrNaN(c.attnMassKept, i),
				KVBytesPerToken: floatOrNaN(c.kvBytesPerToken, i), SpecAccept: floatOrNaN(c.specAccept, i)}
		}
		var err error
		if r.Suffix, err = int32List(c.suffix, i); err != nil {
			return nil, fmt.Errorf("suffix_ids: %w", err)
		}
		if r.Generated, err = int32List(c.gen, i); err != nil {
			return nil, fmt.Errorf("generated_ids: %w", err)
		}
		if c.prefix != nil {
			if r.Prefix, err = int32List(c.prefix, i); err != nil {
				return nil, fmt.Errorf("prefix_ids: %w", err)
			}
		}
		if c.tokenLosses != nil {
			if r.TokenLosses, err = float32List(c.tokenLosses, i); err != nil {
				return nil, fmt.Errorf("token_losses: %w", err)
			}
		}
	}
	return rows, nil
}

// floatOrNaN is a[i], NaN when null or when the column is absent (nil).
func floatOrNaN(a *array.Float64, i int) float64 {
	if a == nil || a.IsNull(i) {
		return math.NaN()
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
