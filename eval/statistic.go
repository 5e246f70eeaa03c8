package eval

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/memo-research/memo/internal/runfiles"
)

// Need says what a membership statistic needs from the model pass, for
// the docs and for a reader deciding which extract settings it takes.
type Need string

// What statistics need.
const (
	NeedTokenLosses  Need = "token losses"             // the window's per-token losses (every run has them)
	NeedReference    Need = "reference model"          // eval.reference, another model's completions
	NeedDistribution Need = "next-token distributions" // the mean and variance of log p at each position
	NeedPrefixedPass Need = "prefixed pass"            // a second pass with a non-member prefix (ReCaLL)
	NeedGradient     Need = "gradient"                 // extract.grad_norm
	NeedSignals      Need = "signals file"             // mia_signals.parquet of reference models (mia.references)
	NeedLowercase    Need = "lowercased pass"          // a second pass over the lowercased text (memo audit)
	NeedFrequency    Need = "token frequencies"        // a reference corpus's token counts (memo audit --frequency-corpus)
)

// MIAStatistic is a membership statistic eval scores: one descriptor,
// registered from the statistic's own file (stat_*.go) with
// RegisterMIAStatistic, that gives its scores.parquet column, its
// summary.json object mia.<Name>, its figure curve and its line in
// memo eval's output.
type MIAStatistic struct {
	// Name is the statistic's summary.json key and, unless Field says
	// otherwise, its scores.parquet column (a key of Score.Stats).
	Name string
	// Label is how figures and memo eval name it.
	Label string
	// HigherMember says a higher value means member; the others are
	// losses, where lower means member.
	HigherMember bool
	// Needs says what the statistic needs from the model pass.
	Needs Need
	// Order places the statistic among the others: in summary.json's mia
	// object, in the figures, and (for those in Score.Stats) among
	// scores.parquet's columns; ties go by name.
	Order int
	// Field is the fixed field of Score that holds the value, for the
	// statistics whose columns come before p_extract in scores.parquet
	// (loss, zlib, mink, ref, mink_pp); nil for the others, whose value is
	// Score.Stats[Name].
	Field func(*Score) *float64
	// PerDoc computes one document's value from its completion; s holds
	// the values of the statistics ordered before this one, and PerDoc may
	// set the fixed side columns its statistic owns (zlib_len, ref_loss).
	PerDoc func(c *runfiles.Completion, s *Score, in DocInput) float64
	// Signals computes every candidate's value at once from
	// mia_signals.parquet (the calibrated attacks, eval/calibrated.go);
	// documents without signals are NaN. Exactly one of PerDoc and
	// Signals is set.
	Signals func(x calibratedInput) ([]float64, error)
	// AuditOnly says only memo audit scores the statistic: it needs what
	// an attack's pass does not make (a lowercased pass, a corpus's token
	// frequencies), so it is no column of an attack's scores.parquet and
	// no key of its summary.json, whose bytes stay as they were.
	AuditOnly bool
}

// DocInput is what PerDoc sees besides the completion: eval's settings
// and the reference model's loss of the document (NaN without one).
type DocInput struct {
	MinKFraction float64
	RefLoss      float64
	// The audit's extras (memo audit; zero in an attack): Tokens are the
	// predicted tokens, TokenLosses' ids one for one; LowercaseLosses the
	// token losses of the lowercased text; Frequency DC-PDD's reference
	// and DCPDDCap its clipping bound a (nil, 0: DC-PDD is NaN).
	Tokens          []int32
	LowercaseLosses []float32
	Frequency       *TokenFrequency
	DCPDDCap        float64
}

// Value is the statistic's value in a row of scores.parquet; NaN when
// the row has none.
func (x MIAStatistic) Value(s *Score) float64 {
	if x.Field != nil {
		return *x.Field(s)
	}
	if v, ok := s.Stats[x.Name]; ok {
		return v
	}
	return math.NaN()
}

// set stores v as the statistic's value in s.
func (x MIAStatistic) set(s *Score, v float64) {
	if x.Field != nil {
		*x.Field(s) = v
		return
	}
	if s.Stats == nil {
		s.Stats = map[string]float64{}
	}
	s.Stats[x.Name] = v
}

var registry struct {
	sync.Mutex
	stats  []MIAStatistic
	frozen bool
}

// RegisterMIAStatistic adds a statistic; each stat_*.go file registers
// its own from init. Registering after the statistics were first used
// (a table built, a summary written) panics: the columns are fixed by then.
func RegisterMIAStatistic(x MIAStatistic) {
	registry.Lock()
	defer registry.Unlock()
	switch {
	case registry.frozen:
		panic(fmt.Sprintf("eval: statistic %q registered after the statistics were used", x.Name))
	case x.Name == "" || x.Label == "":
		panic(fmt.Sprintf("eval: statistic %q without a name or label", x.Name))
	case (x.PerDoc == nil) == (x.Signals == nil):
		panic(fmt.Sprintf("eval: statistic %q: want exactly one of PerDoc and Signals", x.Name))
	case slices.ContainsFunc(registry.stats, func(y MIAStatistic) bool { return y.Name == x.Name }):
		panic(fmt.Sprintf("eval: statistic %q registered twice", x.Name))
	}
	registry.stats = append(registry.stats, x)
}

// statistics are the statistics an attack scores, in order: every
// registered one but the audit's own.
var statistics = sync.OnceValue(func() []MIAStatistic {
	return slices.DeleteFunc(slices.Clone(allStatistics()), func(x MIAStatistic) bool { return x.AuditOnly })
})

// allStatistics freezes the registry on first use and orders it.
var allStatistics = sync.OnceValue(func() []MIAStatistic {
	registry.Lock()
	defer registry.Unlock()
	registry.frozen = true
	out := slices.Clone(registry.stats)
	slices.SortStableFunc(out, func(a, b MIAStatistic) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Name, b.Name))
	})
	return out
})

// MIAStatistics lists every membership statistic eval scores, in order.
// Figures and memo eval read this list, so that a curve is drawn with
// eval's direction and label.
func MIAStatistics() []MIAStatistic { return slices.Clone(statistics()) }

// AuditStatistics lists, in order, the statistics memo audit scores on
// whole labelled texts: those computed from one pass's token losses and
// next-token distributions, and the audit's own (AuditOnly). The others
// need what an audit has not got (a reference model, a prefixed pass,
// gradients, reference models' signals).
func AuditStatistics() []MIAStatistic {
	var out []MIAStatistic
	for _, x := range allStatistics() {
		if x.AuditOnly || (x.PerDoc != nil && (x.Needs == NeedTokenLosses || x.Needs == NeedDistribution)) {
			out = append(out, x)
		}
	}
	return out
}

// LookupMIAStatistic is the statistic named name.
func LookupMIAStatistic(name string) (MIAStatistic, bool) {
	i := slices.IndexFunc(allStatistics(), func(x MIAStatistic) bool { return x.Name == name })
	if i < 0 {
		return MIAStatistic{}, false
	}
	return allStatistics()[i], true
}

// statColumns are the columns of Score.Stats: the statistics without a
// fixed field, in order.
func statColumns() []string {
	var out []string
	for _, x := range statistics() {
		if x.Field == nil {
			out = append(out, x.Name)
		}
	}
	return out
}
