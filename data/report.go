package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// Report is report.json: what Build made and what it left out, and why.
type Report struct {
	Config    Config `json:"config"`
	Tokenizer string `json:"tokenizer"`
	VocabSize int    `json:"vocab_size"`
	EOS       int32  `json:"eos"`
	Layout    string `json:"layout"`
	// MemberSeparation is Config.MemberSeparation: how targets and
	// controls are kept apart beyond shared token windows.
	MemberSeparation string                  `json:"member_separation"`
	Sources          map[string]*SourceCount `json:"sources"`
	Splits           map[string]int          `json:"splits"`
	SplitTokens      map[string]int          `json:"split_tokens"`
	Repetitions      map[string]int          `json:"repetition_counts"` // count -> number of targets
	Unused           int                     `json:"unused"`            // eligible documents in no split (background limited)
	TrainTokens      int                     `json:"train_tokens"`      // tokens in the stream, repetitions included
	// DedupSample, when not 0, says data.dedup_words's passage set filled
	// up: from then on it checked 1 passage in DedupSample (dedupWords).
	DedupSample int `json:"dedup_sample,omitempty"`
	// DedupTokens is what data.dedup_tokens removed; absent when it is off.
	DedupTokens  *DedupTokensReport `json:"dedup_tokens,omitempty"`
	Rejected     []Rejected         `json:"rejected"`
	RejectedBy   map[string]int     `json:"rejected_by_reason"`
	TokenizerHit bool               `json:"tokenizer_cache_hit"`
	Seconds      float64            `json:"seconds"`
	// Files are the sizes and sha256 of the dataset's files, verified
	// whenever the dataset is opened.
	Files map[string]FileSum `json:"files,omitempty"`
}

// SourceCount counts one source's documents through the pipeline.
type SourceCount struct {
	Documents int `json:"documents"` // as read
	Chunks    int `json:"chunks"`    // after cutting into chunks
	Kept      int `json:"kept"`      // eligible for splits
	Rejected  int `json:"rejected"`
	Tokens    int `json:"tokens"` // of kept documents
}

// ReadReport reads dir/report.json (dir: a run's data/ or a dataset cache
// entry). A report that is not JSON is arrowsafe.ErrCorrupt; a missing
// one is the read's own error (fs.ErrNotExist).
func ReadReport(dir string) (Report, error) {
	var rep Report
	p := filepath.Join(dir, "report.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, fmt.Errorf("%s: %w: %v", p, arrowsafe.ErrCorrupt, err)
	}
	return rep, nil
}
