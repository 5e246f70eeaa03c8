package eval

import (
	"sync"

	"github.com/memo-research/memo/internal/runfiles"
)

// Score is one row of scores.parquet, one per document; its fields are
// the file's columns, in order (runfiles.Table). Undefined values (no
// reference model, a document too short to attack) are NaN;
// FirstDivergence is -1 for a document not attacked.
//
// The membership statistics are registered (MIAStatistic, one stat_*.go
// file each): those whose columns come before p_extract have a field here
// (loss, zlib_ratio, mink, ref_diff, mink_pp, with their side columns
// zlib_len and ref_loss), every later one is a column of Stats. A new
// statistic is a new stat_*.go file, not a field.
type Score struct {
	DocID           int64   `arrow:"doc_id"`
	Split           string  `arrow:"split,required"`
	Title           string  `arrow:"title"`
	Status          string  `arrow:"status,absent=ok"`
	Repetitions     int     `arrow:"repetitions"`
	NTokens         int     `arrow:"n_tokens"`
	PrefixLen       int     `arrow:"prefix_len"`
	SuffixLen       int     `arrow:"suffix_len"`
	Match                   // exact match, token accuracy, first divergence
	RougeL          float64 `arrow:"rougeL,required"` // F1
	RougeLPrecision float64 `arrow:"rougeL_precision"`
	RougeLRecall    float64 `arrow:"rougeL_recall"`
	Rouge1          float64 `arrow:"rouge1"` // F1
	Rouge2          float64 `arrow:"rouge2"` // F1
	Loss            float64 `arrow:"loss"`
	ZlibLen         int     `arrow:"zlib_len"`
	ZlibRatio       float64 `arrow:"zlib_ratio"`
	MinK            float64 `arrow:"mink"`
	RefLoss         float64 `arrow:"ref_loss"`
	RefDiff         float64 `arrow:"ref_diff"`
	MinKPP          float64 `arrow:"mink_pp"` // Min-K%++ (higher means member)
	// PExtract is the log probability the attack's decoding reproduces
	// the suffix (−Inf: it cannot), copied from completions.arrow.
	PExtract float64 `arrow:"p_extract"`
	// Stats holds the registered statistics without a field, by name,
	// each a column (recall, grad_norm, the calibrated attacks, …): see
	// MIAStatistic. A row read from a file without a column lacks its key.
	Stats map[string]float64 `arrow:",columns"`
	// AnyExact and BestRougeL are over the document's NGuesses guesses
	// (applyGuesses; with one guess, Exact and RougeL); NGuesses is 0 for
	// a document not attacked.
	AnyExact   bool    `arrow:"any_exact_match"`
	BestRougeL float64 `arrow:"best_rougeL"`
	NGuesses   int     `arrow:"n_guesses"`
}

// scoresTable is scores.parquet's codec, built on first use, once every
// statistic has registered: Stats' columns are the registry's.
var scoresTable = sync.OnceValue(func() *runfiles.Table[Score] {
	return runfiles.NewTable[Score](runfiles.ScoresFile, statColumns()...)
})

// Scores is scores.parquet's codec.
func Scores() *runfiles.Table[Score] { return scoresTable() }

// ReadScores reads a scores.parquet that Run wrote; a file written before
// some columns existed reads them as missing (runfiles.Table).
func ReadScores(path string) ([]Score, error) {
	return Scores().ReadParquet(path)
}

// ScoreCompletion computes every per-document measure of one completion.
// minK is Min-K%'s fraction; refLoss (NaN for none) overrides c.RefLoss
// when it is a number. Documents that were not attacked (status other than
// "ok") get NaN extraction scores but keep their membership statistics.
func ScoreCompletion(c runfiles.Completion, minK float64, refLoss float64) Score {
	s := Score{
		DocID: c.DocID, Split: c.Split, Title: c.Title, Status: c.Status, Repetitions: c.Repetitions,
		NTokens: c.NTokens, PrefixLen: len(c.Prefix), SuffixLen: len(c.Suffix),
		PExtract: c.PExtract, Stats: map[string]float64{},
	}
	in := DocInput{MinKFraction: minK, RefLoss: refLoss}
	for _, x := range statistics() {
		v := nan() // the calibrated attacks: applyCalibrated fills them
		if x.PerDoc != nil {
			v = x.PerDoc(&c, &s, in)
		}
		x.set(&s, v)
	}
	if c.Status != StatusOK {
		s.Match = Match{TokenAccuracy: nan(), FirstDivergence: -1}
		s.RougeL, s.RougeLPrecision, s.RougeLRecall, s.Rouge1, s.Rouge2 = nan(), nan(), nan(), nan(), nan()
		s.BestRougeL = nan()
		return s
	}
	s.Match = CompareTokens(c.Suffix, c.Generated)
	target, pred := RougeTokens(c.SuffixText), RougeTokens(c.GeneratedText)
	rl := RougeL(target, pred)
	s.RougeL, s.RougeLPrecision, s.RougeLRecall = rl.F1, rl.Precision, rl.Recall
	s.Rouge1 = RougeN(target, pred, 1).F1
	s.Rouge2 = RougeN(target, pred, 2).F1
	// One guess until applyGuesses counts the document's guesses.
	s.AnyExact, s.BestRougeL, s.NGuesses = s.Exact, s.RougeL, 1
	return s
}
