package runfiles

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// Completion is one row of completions.arrow, extract's output: one row
// per document attacked. extract writes it (WriteCompletions), eval reads
// it (ReadCompletions); its fields are the file's columns, in order
// (Table).
//
// Loss, MinK and TokenLosses are over the document's first context
// tokens, its window (MinK with extract.Config.MinKFraction); WindowText
// is the decoded window, the text whose zlib length divides the loss in
// eval's zlib ratio (Text is the whole document). Rows with status other
// than "ok" have empty prefix, suffix and generation. The schema's
// metadata names the model and the attack (see the keys of
// internal/provenance). Columns not required read as their missing
// values, so files written before a column existed still read.
type Completion struct {
	DocID         int64     `arrow:"doc_id,required"`
	Split         string    `arrow:"split,required"`
	Title         string    `arrow:"title"`
	Status        string    `arrow:"status,absent=ok"` // StatusOK, or why the document could not be attacked
	Repetitions   int       `arrow:"repetitions"`
	Prefix        []int32   `arrow:"prefix_ids"`
	Suffix        []int32   `arrow:"suffix_ids,required"`
	Generated     []int32   `arrow:"generated_ids,required"`
	PrefixText    string    `arrow:"prefix_text"`
	SuffixText    string    `arrow:"suffix_text,required"`
	GeneratedText string    `arrow:"generated_text,required"`
	Text          string    `arrow:"text,required"`
	NTokens       int       `arrow:"n_tokens"`
	Loss          float64   `arrow:"loss,required"`
	MinK          float64   `arrow:"mink,required"`
	RefLoss       float64   `arrow:"ref_loss,required"` // NaN when no reference model was given
	TokenLosses   []float32 `arrow:"token_losses"`
	// WindowText is empty in files written before extract recorded it;
	// Text stands in then.
	WindowText string `arrow:"window_text"`
	// Membership statistics over the window, NaN when undefined or turned
	// off: Min-K%++, the natural log of the probability that the attack's
	// decoding reproduces the suffix (extract's decoder.suffixLogProb),
	// ReCaLL and the gradient norm (model.GradNorm).
	MinKPP   float64 `arrow:"mink_pp"`
	PExtract float64 `arrow:"p_extract"`
	ReCaLL   float64 `arrow:"recall"`
	GradNorm float64 `arrow:"grad_norm"`
	// Approx is nil when the attack was exact: the file has none of its
	// columns then.
	Approx *CompletionApprox
}

// CompletionApprox are the columns completions.arrow gains when the
// attack decoded under an approximation (extract.kv_bits,
// extract.attention or extract.speculative not at their defaults) or
// named one in extract.approximation (even "exact"). Rows not attacked
// hold NoApprox.
type CompletionApprox struct {
	// ExactAgree counts the generated tokens equal to exact decoding's
	// (same decoding, same seed) before the first that differs; the suffix
	// length when all agree.
	ExactAgree int `arrow:"exact_agree"`
	// AttnMassKept is the mean over decode steps, layers, heads of the
	// exact attention probability on the tokens attended (1 unless sparse).
	AttnMassKept float64 `arrow:"attn_mass_kept"`
	// KVBytesPerToken is the mean key and value bytes read per decode
	// step, all layers (approx.Stats of package engine/approx; NaN for quantspec, whose two
	// models read differently sized caches).
	KVBytesPerToken float64 `arrow:"kv_bytes_per_token"`
	// SpecAccept is QuantSpec's accepted / proposed draft tokens (NaN
	// without speculation).
	SpecAccept float64 `arrow:"spec_accept"`
}

// Completions is completions.arrow's codec.
var Completions = NewTable[Completion](CompletionsFile)

// CompletionsSchema is the schema of completions.arrow with every column;
// an exact attack's file has all but CompletionApprox's.
var CompletionsSchema = Completions.Schema()

// StatusOK is the status of a document that was attacked; any other
// status says why it was not (extract's StatusTooShort, …).
const StatusOK = "ok"

// NoApprox is what an approximate attack writes for a document it did
// not attack: a nil Approx's missing values.
var NoApprox = CompletionApprox{AttnMassKept: math.NaN(), KVBytesPerToken: math.NaN(), SpecAccept: math.NaN()}

// completionsBatchRows is the number of rows per record batch.
const completionsBatchRows = 256

// WriteCompletions writes rows to path atomically (temporary name,
// rename), with CompletionApprox's columns when any row has Approx. meta
// goes into the schema's metadata (extract records the attack, the
// checkpoint and its training loss under the keys of internal/provenance).
func WriteCompletions(path string, rows []Completion, meta map[string]string) error {
	return Completions.WriteIPC(path, rows, completionsBatchRows, meta)
}

// WriteCompletionsAs writes rows with schema, whose fields are columns of
// completions.arrow in any order and subset: tests write files as older
// versions of memo did, before some columns existed. WriteCompletions is
// the writer of record.
func WriteCompletionsAs(path string, schema *arrow.Schema, rows []Completion) error {
	return Completions.WriteIPCAs(path, schema, rows, completionsBatchRows)
}

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

// CheckCompletionsFile reads the schema of the Arrow file at path, and no
// row, and says whether it is a completions file: one with none of the
// attack's columns (a dataset's tokens.arrow, a run's metrics.arrow) is
// named as another kind of file, not as completions to extract again.
func CheckCompletionsFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read completions: %w", err)
	}
	defer f.Close()
	r, err := arrowsafe.NewFileReader(path, f, nil, 1)
	if err != nil {
		return fmt.Errorf("%w (run `memo extract` again to rewrite it)", err)
	}
	defer r.Close()
	schema := r.Schema()
	if len(schema.FieldIndices("generated_ids")) == 0 && len(schema.FieldIndices("suffix_ids")) == 0 {
		names := make([]string, len(schema.Fields()))
		for i, fd := range schema.Fields() {
			names[i] = fd.Name
		}
		return fmt.Errorf("%s is not a completions file (its columns: %s): want the completions.arrow memo extract writes, or its run directory", path, strings.Join(names, ", "))
	}
	if err := Completions.Check(schema); err != nil {
		return fmt.Errorf("read %s: %w (run `memo extract` again to rewrite it)", path, err)
	}
	return nil
}

// ReadCompletionsFrom reads a completions file from src; every batch is
// validated (arrowsafe) before a value is read, so a corrupt file is an
// error naming path, never a panic.
func ReadCompletionsFrom(path string, src arrowsafe.Source) ([]Completion, map[string]string, error) {
	rows, meta, err := Completions.ReadIPC(path, src)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (run `memo extract` again to rewrite it)", err)
	}
	return rows, meta, nil
}
