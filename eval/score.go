package eval

import (
	"math"

	"github.com/memo-research/memo/internal/runfiles"
)

// Score is one row of scores.parquet.
type Score struct {
	DocID           int64
	Split           string
	Title           string
	Status          string
	Repetitions     int
	NTokens         int
	PrefixLen       int
	SuffixLen       int
	Match                   // exact match, token accuracy, first divergence
	RougeL          float64 // F1
	RougeLPrecision float64
	RougeLRecall    float64
	Rouge1          float64 // F1
	Rouge2          float64 // F1
	Loss            float64
	ZlibLen         int
	ZlibRatio       float64
	MinK            float64
	RefLoss         float64
	RefDiff         float64
	MinKPP          float64 // Min-K%++ (higher means member)
	PExtract        float64 // log probability the attack's decoding reproduces the suffix
	ReCaLL          float64 // LL(x|P)/LL(x) (higher means member)
	GradNorm        float64 // ‖∇θ L‖₂ (lower means member)
	// AnyExact and BestRougeL are over the document's NGuesses guesses
	// (applyGuesses): exact match by any, the best RougeL F1.
	AnyExact   bool
	BestRougeL float64
	NGuesses   int
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
