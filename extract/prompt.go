package extract

import (
	"fmt"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/runfiles"
)

// Statuses of a completion row.
const (
	StatusOK       = runfiles.StatusOK
	StatusTooShort = "too_short"
)

// Prompt is one document's attack.
type Prompt struct {
	Doc    data.Doc
	Prefix []int32 // fed to the model
	Suffix []int32 // the true continuation
	// Window is the part of the document the attack uses (its first
	// AttackWindow tokens: one trained row, at most the model context),
	// over which the membership losses are taken.
	Window []int32
	Status string // StatusOK or StatusTooShort
	Reason string // why it was not attacked
}

// BuildPrompts cuts each document into prefix and suffix as cfg.Mode says,
// within its first window tokens (AttackWindow: the trained row, or the
// model context). Documents too short get StatusTooShort and empty prefix
// and suffix; none is left out.
func BuildPrompts(cfg Config, docs []data.Doc, window int) []Prompt {
	out := make([]Prompt, len(docs))
	for i, d := range docs {
		ids := d.IDs[:min(len(d.IDs), window)]
		p := Prompt{Doc: d, Window: ids, Status: StatusOK}
		pre, suf := cfg.Lengths()
		if cfg.Mode == ModeReference {
			pre = len(ids) - suf
		}
		if pre < 1 || pre+suf > len(d.IDs) {
			p.Status = StatusTooShort
			p.Reason = fmt.Sprintf("%d tokens, need %d", len(d.IDs), max(pre, 1)+suf)
		} else {
			p.Prefix, p.Suffix = d.IDs[:pre], d.IDs[pre:pre+suf]
		}
		out[i] = p
	}
	return out
}
