package eval

import (
	"math"

	"github.com/memo-research/memo/internal/runfiles"
)

// Score is one row of scores.parquet, one per document; its fields are
// the file's columns, in order (runfiles.Table). Undefined values (no
// reference model, a document too short to attack) are NaN;
// FirstDivergence is -1 for a document not attacked. To add a score, add
// its field here and compute it in ScoreCompletion.
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
	// Copied from completions.arrow (runfiles.Completion).
	MinKPP   float64 `arrow:"mink_pp"`   // Min-K%++ (higher means member)
	PExtract float64 `arrow:"p_extract"` // log probability the attack's decoding reproduces the suffix (−Inf: it cannot)
	ReCaLL   float64 `arrow:"recall"`    // LL(x|P)/LL(x) (higher means member)
	GradNorm float64 `arrow:"grad_norm"` // ‖∇θ L‖₂ (lower means member)
	// The calibrated attacks (eval/calibrated.go), from the run's
	// mia_signals.parquet; NaN without one. Higher means member.
	LiRAOnline        float64 `arrow:"lira_online"`
	LiRAOffline       float64 `arrow:"lira_offline"`
	RMIA              float64 `arrow:"rmia"`
	RMIAOffline       float64 `arrow:"rmia_offline"`
	CounterfactualMem float64 `arrow:"counterfactual_mem"`
	// AnyExact and BestRougeL are over the document's NGuesses guesses
	// (applyGuesses; with one guess, Exact and RougeL); NGuesses is 0 for
	// a document not attacked.
	AnyExact   bool    `arrow:"any_exact_match"`
	BestRougeL float64 `arrow:"best_rougeL"`
	NGuesses   int     `arrow:"n_guesses"`
}

// Scores is scores.parquet's codec.
var Scores = runfiles.NewTable[Score]("scores.parquet")

// ReadScores reads a scores.parquet that Run wrote; a file written before
// some columns existed reads them as missing (runfiles.Table).
func ReadScores(path string) ([]Score, error) {
	return Scores.ReadParquet(path)
}

// ScoreCompletion computes every per-document measure of one completion.
// minK is Min-K%'s fraction; refLoss (NaN for none) overrides c.RefLoss
// when it is a number. Documents that were not attacked (status other than
// "ok") get NaN extraction scores but keep their membership statistics.
func ScoreCompletion(c runfiles.Completion, minK float64, refLoss float64) Score {
	s := Score{
		DocID: c.DocID, Split: c.Split, Title: c.Title, Status: c.Status, Repetitions: c.Repetitions,
		NTokens: c.NTokens, PrefixLen: len(c.Prefix), SuffixLen: len(c.Suffix),
		Loss: c.Loss, MinK: c.MinK, RefLoss: c.RefLoss,
		MinKPP: c.MinKPP, PExtract: c.PExtract, ReCaLL: c.ReCaLL, GradNorm: c.GradNorm,
		LiRAOnline: nan(), LiRAOffline: nan(), RMIA: nan(), RMIAOffline: nan(), CounterfactualMem: nan(),
	}
	if len(c.TokenLosses) > 0 {
		s.Loss = MeanLoss(c.TokenLosses)
		s.MinK = MinK(c.TokenLosses, minK)
	}
	if !math.IsNaN(refLoss) {
		s.RefLoss = refLoss
	}
	s.RefDiff = s.Loss - s.RefLoss
	// The zlib ratio compares the loss and the compressed length of the
	// same span: the window the losses were taken over.
	zt := c.WindowText
	if zt == "" {
		zt = c.Text
	}
	s.ZlibLen = ZlibLen(zt)
	s.ZlibRatio = s.Loss / float64(s.ZlibLen)
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
